package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
)

// busyTimeout is how long a statement waits for another connection's lock
// (a reader checkpointing the WAL, another writer) before failing.
const busyTimeout = 5 * time.Second

// Results keeps a stage's result rows in an upsert table (see the package
// documentation for the table and the write rules).
type Results struct {
	db    *sql.DB
	path  string
	table string
	nCol  int
	nKey  int
	batch int // most rows per upsert statement

	enc      encoder
	ops      []pendingRow // buffered rows, in order
	args     []any        // their arguments, nCol per row
	scratch  []any
	segments []segment

	upserts    []*sql.Stmt // upserts[n]: an upsert of n rows, prepared on first use
	nullUpdate *sql.Stmt
	nullInsert *sql.Stmt
	del        *sql.Stmt
	closed     bool
	// replace: the table's existing rows are deleted in the transaction of
	// the first Flush (a run that recomputes the result from the start).
	replace bool

	// Exactly-once mode (commit.go).
	exactlyOnce    bool
	pipeline, name string // the commit marker's identity
	prepared       *preparedRows
}

// pendingRow is a buffered row waiting for Flush.
type pendingRow struct {
	op      changelog.Op // Insert, UpdateAfter or Delete
	nullKey bool         // a key value is NULL
}

var _ sink.Results = (*Results)(nil)

// New opens or creates the SQLite database at path (creating its parent
// directories), creates the result table for d if it is absent and
// prepares the sink's statements.
//
// It returns a *SchemaError when the table exists with other columns, and
// an error when d.Timezone is not a known IANA zone ("" is UTC), when two
// columns share a name, or when the database cannot be opened.
func New(ctx context.Context, path, table string, d changelog.Desc) (*Results, error) {
	return NewWithOptions(ctx, path, table, d, Options{})
}

// Options adjusts a sink.
type Options struct {
	// Replace deletes the table's existing rows in the transaction of the
	// first Flush, so that a run recomputing the result from the start
	// replaces the previous run's rows instead of being held back by their
	// versions. Readers see the old contents until that commit. A table of
	// another layout is dropped and created anew when the sink opens.
	// Default false: rows are upserted over whatever the table holds.
	Replace bool
	// ExactlyOnce makes the sink a sink.Committer: rows wait for the
	// checkpoint that covers them and are written in one transaction with
	// the commit marker (Pipeline, Sink, checkpoint id) in the table
	// tidemark_commits; Flush writes nothing.
	ExactlyOnce bool
	// Pipeline and Sink name the commit marker (ExactlyOnce only).
	Pipeline, Sink string
}

// NewWithOptions is New with options.
func NewWithOptions(ctx context.Context, path, table string, d changelog.Desc, o Options) (*Results, error) {
	r, err := open(ctx, path, table, d, o.Replace)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	r.replace = o.Replace
	r.exactlyOnce, r.pipeline, r.name = o.ExactlyOnce, o.Pipeline, o.Sink
	if o.ExactlyOnce {
		if _, err := r.db.ExecContext(ctx, createCommitsSQL); err != nil {
			r.closeStatements()
			r.db.Close()
			return nil, fmt.Errorf("sqlite %s: create table tidemark_commits: %w", path, err)
		}
	}
	return r, nil
}

func open(ctx context.Context, path, table string, d changelog.Desc, replace ...bool) (*Results, error) {
	if table == "" {
		return nil, errors.New("empty table name")
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	cols, err := tableColumns(&d)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", table, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, err
	}
	// One connection: statements prepared on the DB are then reused by
	// every transaction, and SQLite has one writer anyway.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	r := &Results{
		db: db, path: path, table: table,
		nCol: len(cols), nKey: len(d.Key),
		batch: min(defaultBatch, maxVariables/len(cols)),
		enc:   encoder{cols: cols, nKey: len(d.Key), loc: loc},
	}
	if err := r.init(ctx, cols, len(replace) > 0 && replace[0]); err != nil {
		r.closeStatements()
		db.Close()
		return nil, err
	}
	return r, nil
}

// dsn returns the data source name for path: a file: URI (so that '?' or
// '#' in the path are escaped) with the connection settings.
func dsn(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Path: filepath.ToSlash(path)}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// init creates or checks the table and prepares the statements.
func (r *Results) init(ctx context.Context, cols []column, replace bool) error {
	if _, err := r.db.ExecContext(ctx, createTable(r.table, cols, r.nKey)); err != nil {
		return fmt.Errorf("create table %q: %w", r.table, err)
	}
	if err := checkTable(ctx, r.db, r.table, cols, r.nKey); err != nil {
		var se *SchemaError
		if !replace || !errors.As(err, &se) {
			return err
		}
		// A run that replaces the table's rows replaces a table of another
		// layout too (an older tidemark, changed aggregates).
		if _, err := r.db.ExecContext(ctx, "DROP TABLE "+quote(r.table)); err != nil {
			return fmt.Errorf("drop table %q: %w", r.table, err)
		}
		if _, err := r.db.ExecContext(ctx, createTable(r.table, cols, r.nKey)); err != nil {
			return fmt.Errorf("create table %q: %w", r.table, err)
		}
	}
	r.upserts = make([]*sql.Stmt, r.batch+1)
	var err error
	prepare := func(query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = r.db.PrepareContext(ctx, query)
		if err != nil {
			err = fmt.Errorf("table %q: prepare %s: %w", r.table, query, err)
		}
		return s
	}
	r.upserts[1] = prepare(upsertSQL(r.table, cols, r.nKey, 1))
	r.nullUpdate = prepare(nullUpdateSQL(r.table, cols, r.nKey))
	r.nullInsert = prepare(nullInsertSQL(r.table, cols, r.nKey))
	r.del = prepare(deleteSQL(r.table, cols, r.nKey))
	return err
}

// Write buffers rows for the next Flush; update_before rows are skipped.
// It buffers nothing and returns an error when a row does not fit the
// table (wrong number of columns, a value of the wrong kind), after Close
// (wrapping sql.ErrConnDone), or when ctx is done.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	nOps, nArgs := len(r.ops), len(r.args)
	for i := range rows {
		row := &rows[i]
		if row.Op == changelog.UpdateBefore {
			continue
		}
		if row.Op > changelog.Delete {
			r.ops, r.args = r.ops[:nOps], r.args[:nArgs]
			return fmt.Errorf("sqlite %s: table %q: unknown op %s", r.path, r.table, row.Op)
		}
		var err error
		if r.args, err = r.enc.encode(r.args, row); err != nil {
			r.ops, r.args = r.ops[:nOps], r.args[:nArgs]
			return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
		}
		p := pendingRow{op: row.Op}
		for _, v := range row.Key {
			p.nullKey = p.nullKey || v.IsNull()
		}
		r.ops = append(r.ops, p)
	}
	return nil
}

// Flush applies the buffered rows in one transaction and commits it. On
// error the transaction is rolled back and the rows stay buffered, so a
// later Flush retries them (the version guard makes that safe). It returns
// an error after Close (wrapping sql.ErrConnDone).
func (r *Results) Flush(ctx context.Context) error {
	if r.closed {
		return fmt.Errorf("sqlite %s: %w", r.path, sql.ErrConnDone)
	}
	if r.exactlyOnce || len(r.ops) == 0 && !r.replace {
		return nil
	}
	if err := r.apply(ctx); err != nil {
		return fmt.Errorf("sqlite %s: table %q: %w", r.path, r.table, err)
	}
	clear(r.args) // drop references to the rows' strings
	r.ops, r.args = r.ops[:0], r.args[:0]
	return nil
}

// apply writes every buffered row in one transaction.
func (r *Results) apply(ctx context.Context) error {
	return r.applyRows(ctx, r.ops, r.args, nil)
}

// applyRows writes ops (with their arguments, nCol per row) in one
// transaction, after deleting the table's rows when r.replace is set;
// before the commit it calls extra, which may write more in the
// transaction, or return errSkip to roll it back without an error.
func (r *Results) applyRows(ctx context.Context, ops []pendingRow, args []any, extra func(*sql.Tx) error) (err error) {
	r.segments = split(r.segments[:0], ops, r.batch)
	// Prepare missing statements before the transaction takes the
	// connection.
	for _, g := range r.segments {
		if g.kind == segUpsert && r.upserts[g.end-g.start] == nil {
			n := g.end - g.start
			if r.upserts[n], err = r.db.PrepareContext(ctx, upsertSQL(r.table, r.enc.cols, r.nKey, n)); err != nil {
				return err
			}
		}
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
			if errors.Is(err, errSkip) {
				err = nil
			}
		}
	}()
	if extra != nil {
		// The marker check first: a skipped commit writes nothing.
		if err = extra(tx); err != nil {
			return err
		}
	}
	if r.replace {
		if _, err = tx.ExecContext(ctx, "DELETE FROM "+quote(r.table)); err != nil {
			return err
		}
	}
	for _, g := range r.segments {
		a := args[g.start*r.nCol : g.end*r.nCol]
		switch g.kind {
		case segDelete:
			err = r.delete(ctx, tx, a)
		case segNullKey:
			err = r.upsertNullKey(ctx, tx, a)
		default:
			_, err = tx.StmtContext(ctx, r.upserts[g.end-g.start]).ExecContext(ctx, a...)
		}
		if err != nil {
			return err
		}
	}
	if err = tx.Commit(); err != nil {
		return err
	}
	r.replace = false
	return nil
}

// segment is a run of buffered rows [start, end) applied by one statement
// (two for a NULL key).
type segment struct {
	kind       int
	start, end int
}

// The kinds of segment.
const (
	segUpsert  = iota // up to r.batch plain upserts
	segNullKey        // one upsert with a NULL key value
	segDelete         // one delete
)

// split cuts rows into segments of at most batch upserts, in order.
func split(dst []segment, ops []pendingRow, batch int) []segment {
	for i := 0; i < len(ops); {
		p := ops[i]
		switch {
		case p.op == changelog.Delete:
			dst = append(dst, segment{segDelete, i, i + 1})
			i++
		case p.nullKey:
			dst = append(dst, segment{segNullKey, i, i + 1})
			i++
		default:
			j := i + 1
			for j < len(ops) && j-i < batch && !ops[j].nullKey && ops[j].op != changelog.Delete {
				j++
			}
			dst = append(dst, segment{segUpsert, i, j})
			i = j
		}
	}
	return dst
}

// upsertNullKey applies one upsert whose key holds a NULL: update a lower
// version, else insert when absent.
func (r *Results) upsertNullKey(ctx context.Context, tx *sql.Tx, args []any) error {
	a := append(r.scratch[:0], args[1]) // window_end
	a = append(a, args[2+r.nKey:]...)   // values and bookkeeping
	a = r.appendKey(a, args)            // WHERE key
	a = append(a, args[len(args)-4])    // version
	r.scratch = a
	res, err := tx.StmtContext(ctx, r.nullUpdate).ExecContext(ctx, a...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	a = append(a[:0], args...)
	a = r.appendKey(a, args)
	r.scratch = a
	_, err = tx.StmtContext(ctx, r.nullInsert).ExecContext(ctx, a...)
	return err
}

// delete removes a row whose version is lower than the delete's.
func (r *Results) delete(ctx context.Context, tx *sql.Tx, args []any) error {
	a := r.appendKey(r.scratch[:0], args)
	a = append(a, args[len(args)-4])
	r.scratch = a
	_, err := tx.StmtContext(ctx, r.del).ExecContext(ctx, a...)
	return err
}

// appendKey appends a row's primary key arguments: window_start and keys.
func (r *Results) appendKey(dst, args []any) []any {
	dst = append(dst, args[0])
	return append(dst, args[2:2+r.nKey]...)
}

// Close flushes (even when ctx is done, so buffered rows are not lost to a
// cancelled run) and closes the database. Closing twice is not an error.
func (r *Results) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	err := r.Flush(context.WithoutCancel(ctx))
	r.closed = true
	r.closeStatements()
	if cerr := r.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sqlite %s: %w", r.path, cerr)
	}
	return err
}

func (r *Results) closeStatements() {
	for _, s := range append(r.upserts, r.nullUpdate, r.nullInsert, r.del) {
		if s != nil {
			s.Close()
		}
	}
}
