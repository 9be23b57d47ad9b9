package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/pgutil"
)

// TaskStoreTable is the table a PGTaskStore keeps objects in, one row per
// object, in the first schema of the connection's search_path (set
// search_path in the URL to choose another):
//
//	tidemark_checkpoints(
//	  pipeline   text COLLATE "C" NOT NULL,
//	  task       text COLLATE "C" NOT NULL,
//	  name       text COLLATE "C" NOT NULL,
//	  data       bytea NOT NULL,            -- STORAGE EXTERNAL
//	  bytes      bigint NOT NULL,           -- octet_length(data)
//	  created_at timestamptz NOT NULL DEFAULT now(),
//	  PRIMARY KEY (pipeline, task, name))
//
// The store creates it when absent and records it in tidemark_tables
// beside it (pgutil.TablesTable, as the PostgreSQL sink records its
// tables, with its oid), in one transaction serialized by an advisory
// lock, so that instances starting together create it once. A table of
// that name that tidemark_tables does not record with its oid is someone
// else's: the store refuses to open rather than write into it.
//
// The names are byte-ordered (COLLATE "C"), as List's sort is. data is
// stored uncompressed (STORAGE EXTERNAL) so that a ranged Get reads only
// the TOAST chunks of its range: segments of key-group sections are read
// a section at a time.
const TaskStoreTable = "tidemark_checkpoints"

// maxBytea is the largest value a bytea holds (1 GB).
const maxBytea = 1 << 30

// PGTaskStore is a TaskStore in PostgreSQL (TaskStoreTable), for the
// objects of one pipeline: every instance of a group opens it with the
// same URL and pipeline name. Put is one INSERT, so an object is durable
// and whole once Put returns (the server's synchronous_commit decides how
// durable; the default waits for the WAL flush); a second Put of a name
// fails on the primary key. Get reads substring(data from off+1 for n),
// so a section read does not ship the whole segment.
//
// Task and object names are text: non-empty, valid UTF-8, without NUL
// (PostgreSQL's text cannot hold the others); the engine's names are
// ASCII. Each call is one statement on a connection of a pool (pgxpool);
// one that fails for a transient reason (pgutil.Transient: connection
// lost or refused, server shutting down, serialization failure) is tried
// again with exponential backoff — 250 ms doubling to 8 s, 6 retries,
// about 16 s — before its error is returned. A retried Put whose earlier
// attempt reached the database (its reply was lost) finds its own object
// (same length and SHA-256) and succeeds. Methods are safe for concurrent
// use.
type PGTaskStore struct {
	pool     *pgxpool.Pool
	pipeline string
	table    string // quoted, schema-qualified
	name     string // schema.table as written in messages
	where    string // the URL without its password
	retry    pgutil.Retry
	// hook, when set, runs after each statement that succeeded, with the
	// operation's name ("put", "get", "list", "delete"); an error it
	// returns fails that attempt as if the reply had been lost (tests).
	hook func(op string) error
	// sleep waits d or until ctx is done (tests shorten it).
	sleep func(ctx context.Context, d time.Duration) error
}

var _ TaskStore = (*PGTaskStore)(nil)

// OpenPGTaskStore connects a pool to the PostgreSQL database at url (a
// postgres:// URL or key=value DSN, as pgx parses it) and returns the
// store of pipeline's objects, creating TaskStoreTable and
// tidemark_tables in the connection's first schema if absent. Errors
// name the URL without its password: an unparsable URL; the database
// unreachable after the retries; a table tidemark_checkpoints that
// tidemark did not create, or of another layout; an empty pipeline name.
func OpenPGTaskStore(ctx context.Context, url, pipeline string) (*PGTaskStore, error) {
	return openPGTaskStore(ctx, url, pipeline, pgutil.Retry{}, nil)
}

func openPGTaskStore(ctx context.Context, dsn, pipeline string, retry pgutil.Retry, sleep func(context.Context, time.Duration) error) (*PGTaskStore, error) {
	where := RedactURL(dsn)
	if err := checkText("pipeline", pipeline); err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", where, err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message can quote the DSN, password included.
		return nil, fmt.Errorf("checkpoint store %s: not a PostgreSQL URL or DSN", where)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "tidemark checkpoints"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", where, err)
	}
	s := &PGTaskStore{pool: pool, pipeline: pipeline, where: where, retry: retry, sleep: sleep}
	if err := s.setup(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("checkpoint store %s: %w", where, err)
	}
	return s, nil
}

// Table returns the store's table as schema.table.
func (s *PGTaskStore) Table() string { return s.name }

// Pipeline returns the pipeline whose objects the store holds.
func (s *PGTaskStore) Pipeline() string { return s.pipeline }

// setup finds the schema, then creates the table or checks that it is
// tidemark's, retrying transient failures and the races of concurrent
// CREATE TABLE IF NOT EXISTS (PostgreSQL may report a duplicate type or
// table to the loser).
func (s *PGTaskStore) setup(ctx context.Context) error {
	return s.do(ctx, "", func(ctx context.Context, attempt int) error {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.setupTx(ctx, tx) })
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") && attempt == 0 {
			return &retryable{err}
		}
		return err
	})
}

// retryable marks an error worth one more attempt although not transient.
type retryable struct{ error }

func (r *retryable) Unwrap() error { return r.error }

// answer marks an error that is the database's answer (no such object, a
// short one, a name taken), never retried although it may wrap
// io.ErrUnexpectedEOF, which Transient takes for a lost connection.
type answer struct{ error }

func (a *answer) Unwrap() error { return a.error }

func (s *PGTaskStore) setupTx(ctx context.Context, tx pgx.Tx) error {
	var schema *string
	if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if schema == nil {
		return errors.New("no schema of the connection's search_path exists: create one, or set search_path in the URL")
	}
	qs := quoteIdent(*schema)
	s.table = qs + "." + quoteIdent(TaskStoreTable)
	s.name = *schema + "." + TaskStoreTable
	tables := qs + "." + quoteIdent(pgutil.TablesTable)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "tidemark "+s.name); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, pgutil.CreateTablesSQL(tables)); err != nil {
		return fmt.Errorf("create table %s.%s: %w", *schema, pgutil.TablesTable, err)
	}
	var oid *int64
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1)::oid::bigint", s.table).Scan(&oid); err != nil {
		return err
	}
	if oid == nil {
		if _, err := tx.Exec(ctx, "CREATE TABLE "+s.table+` (
  pipeline text COLLATE "C" NOT NULL,
  task text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  data bytea NOT NULL,
  bytes bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pipeline, task, name))`); err != nil {
			return fmt.Errorf("create table %s: %w", s.name, err)
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE "+s.table+" ALTER COLUMN data SET STORAGE EXTERNAL"); err != nil {
			return fmt.Errorf("create table %s: %w", s.name, err)
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+tables+` (table_name, table_oid, pipeline, created_at)
VALUES ($1, to_regclass($2)::oid::bigint, $3, now())
ON CONFLICT (table_name) DO UPDATE SET table_oid = excluded.table_oid, pipeline = excluded.pipeline, created_at = excluded.created_at`,
			TaskStoreTable, s.table, s.pipeline)
		if err != nil {
			return fmt.Errorf("record table %s in %s.%s: %w", s.name, *schema, pgutil.TablesTable, err)
		}
		return nil
	}
	var rec *int64
	err := tx.QueryRow(ctx, "SELECT table_oid FROM "+tables+" WHERE table_name = $1", TaskStoreTable).Scan(&rec)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read %s.%s: %w", *schema, pgutil.TablesTable, err)
	}
	if rec == nil || *rec != *oid {
		return fmt.Errorf("table %s exists but tidemark did not create it (%s.%s does not record it): "+
			"tidemark keeps checkpoints only in a table of its own and never writes into, alters or drops another; "+
			"rename that table, or choose another schema with search_path in the URL", s.name, *schema, pgutil.TablesTable)
	}
	return s.checkLayout(ctx, tx)
}

// taskStoreColumns is the layout setup creates: name, type, NOT NULL.
var taskStoreColumns = []string{
	"pipeline text NOT NULL", "task text NOT NULL", "name text NOT NULL",
	"data bytea NOT NULL", "bytes bigint NOT NULL", "created_at timestamp with time zone NOT NULL",
}

// checkLayout compares an existing tidemark_checkpoints with the layout
// this build writes (a table of a later or earlier build could differ).
func (s *PGTaskStore) checkLayout(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, s.table)
	if err != nil {
		return err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var key []string
	rows, err = tx.Query(ctx, `SELECT a.attname FROM pg_index i
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.n`, s.table)
	if err != nil {
		return err
	}
	if key, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	if strings.Join(cols, ", ") != strings.Join(taskStoreColumns, ", ") || strings.Join(key, ",") != "pipeline,task,name" {
		return fmt.Errorf("table %s has the columns (%s) and primary key (%s); tidemark writes (%s) with primary key (pipeline, task, name): "+
			"it was changed since tidemark created it; restore that layout or drop the table (its checkpoints are lost)",
			s.name, strings.Join(cols, ", "), strings.Join(key, ", "), strings.Join(taskStoreColumns, ", "))
	}
	return nil
}

// do runs fn, again after a transient failure (or a *retryable one) with
// the store's backoff; what names the object in the error returned ("" for
// none).
func (s *PGTaskStore) do(ctx context.Context, what string, fn func(ctx context.Context, attempt int) error) error {
	r := s.retry.WithDefaults()
	sleep := s.sleep
	if sleep == nil {
		sleep = pgutil.Sleep
	}
	var waited time.Duration
	d := r.Backoff
	for n := 0; ; n++ {
		err := fn(ctx, n)
		var again *retryable
		var final *answer
		if err == nil {
			return nil
		}
		transient := !errors.As(err, &final) && (pgutil.Transient(err) || errors.As(err, &again))
		if !transient || n >= r.Retries {
			if transient && n > 0 {
				err = fmt.Errorf("failed %d times in %s, for a transient reason each time: %w", n+1, waited.Round(time.Millisecond), err)
			}
			if what != "" {
				err = fmt.Errorf("%s: %w", what, err)
			}
			return err
		}
		if serr := sleep(ctx, d); serr != nil {
			return fmt.Errorf("%w (while waiting to retry after: %v)", serr, err)
		}
		waited += d
		d = min(2*d, r.MaxBackoff)
	}
}

// object names an object in errors.
func (s *PGTaskStore) object(task, name string) string {
	return fmt.Sprintf("checkpoint object %q of task %q in table %s (pipeline %q, %s)", name, task, s.name, s.pipeline, s.where)
}

// after runs the test hook.
func (s *PGTaskStore) after(op string) error {
	if s.hook != nil {
		return s.hook(op)
	}
	return nil
}

// Put inserts the object. Errors: os.ErrExist (wrapped) when it exists;
// names that text cannot hold; data over 1 GB (bytea's limit); the
// database's, after the retries; each names the object, table and URL.
func (s *PGTaskStore) Put(ctx context.Context, task, name string, data []byte) error {
	if err := checkNames(task, name); err != nil {
		return fmt.Errorf("%s: %w", s.object(task, name), err)
	}
	if len(data) > maxBytea-1 {
		return fmt.Errorf("%s: %d bytes: PostgreSQL's bytea holds less than 1 GB", s.object(task, name), len(data))
	}
	if data == nil {
		data = []byte{} // an empty object, not NULL
	}
	var sum [sha256.Size]byte
	summed := false
	return s.do(ctx, s.object(task, name), func(ctx context.Context, attempt int) error {
		_, err := s.pool.Exec(ctx, "INSERT INTO "+s.table+" (pipeline, task, name, data, bytes) VALUES ($1, $2, $3, $4, $5)",
			s.pipeline, task, name, data, int64(len(data)))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			if attempt > 0 {
				// An earlier attempt may have committed before its reply
				// was lost: then the object is ours.
				if !summed {
					sum, summed = sha256.Sum256(data), true
				}
				var n int64
				var got []byte
				err := s.pool.QueryRow(ctx, "SELECT bytes, sha256(data) FROM "+s.table+" WHERE pipeline = $1 AND task = $2 AND name = $3",
					s.pipeline, task, name).Scan(&n, &got)
				if err == nil && n == int64(len(data)) && string(got) == string(sum[:]) {
					return nil
				}
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			return &answer{fmt.Errorf("it exists, and objects are never replaced: %w", os.ErrExist)}
		}
		if err != nil {
			return err
		}
		return s.after("put")
	})
}

// Get reads the range [off, off+n) of the object (n < 0: to the end) in
// one statement that returns nothing but the length when the object is
// shorter. Errors: os.ErrNotExist (wrapped) for a missing object,
// io.ErrUnexpectedEOF for a short one, a negative off.
func (s *PGTaskStore) Get(ctx context.Context, task, name string, off, n int64) ([]byte, error) {
	if err := checkNames(task, name); err != nil {
		return nil, fmt.Errorf("%s: %w", s.object(task, name), err)
	}
	if off < 0 {
		return nil, fmt.Errorf("%s: negative offset %d", s.object(task, name), off)
	}
	var out []byte
	err := s.do(ctx, s.object(task, name), func(ctx context.Context, _ int) error {
		var size int64
		var data []byte
		var err error
		where := " FROM " + s.table + " WHERE pipeline = $1 AND task = $2 AND name = $3"
		switch {
		case off > maxBytea || n > maxBytea:
			// Beyond any bytea: only whether the object exists matters.
			err = s.pool.QueryRow(ctx, "SELECT bytes"+where, s.pipeline, task, name).Scan(&size)
		case n < 0:
			err = s.pool.QueryRow(ctx, "SELECT bytes, CASE WHEN bytes >= $4::bigint THEN substring(data from $4::int + 1) END"+where,
				s.pipeline, task, name, off).Scan(&size, &data)
		default:
			err = s.pool.QueryRow(ctx, "SELECT bytes, CASE WHEN bytes >= $4::bigint + $5::bigint THEN substring(data from $4::int + 1 for $5::int) END"+where,
				s.pipeline, task, name, off, n).Scan(&size, &data)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return &answer{fmt.Errorf("no such object: %w", os.ErrNotExist)}
		}
		if err != nil {
			return err
		}
		if off > size {
			return &answer{fmt.Errorf("it is %d bytes, shorter than offset %d: %w", size, off, io.ErrUnexpectedEOF)}
		}
		want := n
		if n < 0 {
			want = size - off
		}
		if want > size-off {
			return &answer{fmt.Errorf("it is %d bytes, shorter than %d bytes from offset %d: %w", size, want, off, io.ErrUnexpectedEOF)}
		}
		if int64(len(data)) != want {
			return &answer{fmt.Errorf("read %d bytes from offset %d, want %d: %w", len(data), off, want, io.ErrUnexpectedEOF)}
		}
		if data == nil {
			data = []byte{}
		}
		if err := s.after("get"); err != nil {
			return err
		}
		out = data
		return nil
	})
	return out, err
}

// List returns the names of task's objects, sorted by bytes.
func (s *PGTaskStore) List(ctx context.Context, task string) ([]string, error) {
	if err := checkText("task", task); err != nil {
		return nil, fmt.Errorf("checkpoint store table %s (%s): %w", s.name, s.where, err)
	}
	var names []string
	err := s.do(ctx, fmt.Sprintf("list task %q in table %s (pipeline %q, %s)", task, s.name, s.pipeline, s.where), func(ctx context.Context, _ int) error {
		rows, err := s.pool.Query(ctx, "SELECT name FROM "+s.table+" WHERE pipeline = $1 AND task = $2 ORDER BY name", s.pipeline, task)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if err := s.after("list"); err != nil {
			return err
		}
		names = got
		return nil
	})
	return names, err
}

// Delete removes the named objects of task in one statement; missing
// ones are not an error.
func (s *PGTaskStore) Delete(ctx context.Context, task string, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	for _, name := range names {
		if err := checkNames(task, name); err != nil {
			return fmt.Errorf("%s: %w", s.object(task, name), err)
		}
	}
	return s.do(ctx, fmt.Sprintf("delete %d objects of task %q in table %s (pipeline %q, %s)", len(names), task, s.name, s.pipeline, s.where), func(ctx context.Context, _ int) error {
		if _, err := s.pool.Exec(ctx, "DELETE FROM "+s.table+" WHERE pipeline = $1 AND task = $2 AND name = ANY($3)", s.pipeline, task, names); err != nil {
			return err
		}
		return s.after("delete")
	})
}

// Close closes the pool's connections.
func (s *PGTaskStore) Close() error {
	s.pool.Close()
	return nil
}

func checkNames(task, name string) error {
	if err := checkText("task", task); err != nil {
		return err
	}
	return checkText("object", name)
}

// checkText refuses names PostgreSQL's text cannot hold, and empty ones.
func checkText(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s name", what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s name %q holds a NUL byte", what, s)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s name %q is not valid UTF-8", what, s)
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// dsnPassword matches password=VALUE in a key=value DSN (VALUE quoted or
// not).
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactURL returns a PostgreSQL URL or key=value DSN without its
// password, for messages: "postgres://app@db:5432/ck" for
// "postgres://app:secret@db:5432/ck"; a password query parameter or
// password=… key becomes "xxxxx".
func RedactURL(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	if strings.Contains(dsn, "://") {
		return "a URL that does not parse"
	}
	return dsnPassword.ReplaceAllString(dsn, "${1}xxxxx")
}
