package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Dialect names a database kind.
type Dialect string

// The supported databases.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// busyTimeout is how long a SQLite statement waits for another
// connection's lock (a sink flushing) before failing.
const busyTimeout = 5 * time.Second

// DB is a connection to the database holding a result's versions: a
// SQLite file or a PostgreSQL database. It is safe for use by one
// goroutine at a time.
type DB struct {
	sdb     *sql.DB   // SQLite
	pg      *pgx.Conn // PostgreSQL
	dialect Dialect
	// schema is PostgreSQL's current_schema() when the DB was opened:
	// unqualified names resolve to it.
	schema string
	// loc is the zone in which PostgreSQL timestamps are shown: the
	// session's TimeZone setting.
	loc *time.Location
}

// Open connects to target: a PostgreSQL URL (postgres:// or
// postgresql://), or a SQLite database file given as a path or as
// sqlite://PATH (sqlite:///abs/path for an absolute path). A SQLite file
// must exist: Open does not create one. Errors do not print a PostgreSQL
// DSN, which may hold a password.
func Open(ctx context.Context, target string) (*DB, error) {
	switch {
	case strings.HasPrefix(target, "postgres://"), strings.HasPrefix(target, "postgresql://"):
		return openPostgres(ctx, target)
	case strings.HasPrefix(target, "sqlite://"):
		return openSQLite(ctx, strings.TrimPrefix(target, "sqlite://"))
	case target == "":
		return nil, errors.New("no database: give a SQLite file, sqlite://PATH or a postgres:// URL")
	}
	return openSQLite(ctx, target)
}

// OpenPostgres connects to a PostgreSQL database given by any connection
// string pgx accepts (a URL or key=value pairs), as the postgres sink's
// dsn key does.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) { return openPostgres(ctx, dsn) }

func openSQLite(ctx context.Context, path string) (*DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("sqlite %s: is a directory", path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	u := url.URL{Path: filepath.ToSlash(path)}
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+u.EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return &DB{sdb: db, dialect: SQLite, loc: time.UTC}, nil
}

func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("postgres: invalid connection URL")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d := &DB{pg: conn, dialect: Postgres, loc: time.UTC}
	var zone string
	if err := conn.QueryRow(ctx, "SELECT current_schema(), current_setting('TimeZone')").Scan(&d.schema, &zone); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if loc, err := time.LoadLocation(zone); err == nil {
		d.loc = loc
	}
	return d, nil
}

// Close closes the connection.
func (d *DB) Close() error {
	if d.pg != nil {
		return d.pg.Close(context.Background())
	}
	return d.sdb.Close()
}

// q returns the database outside a transaction.
func (d *DB) q() querier {
	if d.pg != nil {
		return pgQuerier{d.pg}
	}
	return sqlQuerier{d.sdb}
}

// Dialect returns the kind of database.
func (d *DB) Dialect() Dialect { return d.dialect }

// ph returns the placeholder of the i-th (from 1) statement argument.
func (d *DB) ph(i int) string {
	if d.dialect == Postgres {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// fold reports whether names compare without regard to case (SQLite).
func (d *DB) fold() bool { return d.dialect == SQLite }

// sameName compares two column or table names as the database does.
func (d *DB) sameName(a, b string) bool {
	if d.fold() {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// qname is a table or view name: the schema (PostgreSQL, resolved) and
// the name; shown is the name as the user wrote it.
type qname struct {
	schema, name, shown string
}

// name returns the qname of a possibly schema-qualified name.
func (d *DB) name(s string) qname {
	schema, table := splitSchema(s)
	if d.dialect == Postgres && schema == "" {
		schema = d.schema
	}
	if d.dialect == SQLite {
		// SQLite's "main." is the only schema the package handles.
		schema = ""
	}
	return qname{schema: schema, name: table, shown: s}
}

// sibling returns name in the same schema as q.
func (q qname) sibling(name string) qname {
	shown := name
	if s, _ := splitSchema(q.shown); s != "" && q.shown != q.name {
		shown = s + "." + name
	}
	return qname{schema: q.schema, name: name, shown: shown}
}

// version returns the qname of a version of the result table q.
func (q qname) version(v string) qname { return q.sibling(VersionTable(q.name, v)) }

// sql returns the quoted, qualified name.
func (q qname) sql() string {
	if q.schema == "" {
		return quote(q.name)
	}
	return quote(q.schema) + "." + quote(q.name)
}

func (q qname) String() string { return q.shown }

// quote returns s as an SQL identifier: "s", with '"' doubled.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// literal returns s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// querier runs statements on a connection or in a transaction of either
// database.
type querier interface {
	query(ctx context.Context, sql string, args ...any) (rows, error)
	queryRow(ctx context.Context, sql string, args ...any) scanner
	exec(ctx context.Context, sql string, args ...any) error
}

// rows is a result set (pgx.Rows, or *sql.Rows adapted).
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// scanner is one row (pgx.Row, *sql.Row).
type scanner interface{ Scan(dest ...any) error }

// isNoRows reports whether err says a query returned no row.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) }

// sqlQueryer is a *sql.DB, *sql.Conn or *sql.Tx.
type sqlQueryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type sqlQuerier struct{ q sqlQueryer }

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

func (s sqlQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (s sqlQuerier) queryRow(ctx context.Context, q string, args ...any) scanner {
	return s.q.QueryRowContext(ctx, q, args...)
}

func (s sqlQuerier) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.q.ExecContext(ctx, q, args...)
	return err
}

// pgxQueryer is a *pgx.Conn or a pgx.Tx.
type pgxQueryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

type pgQuerier struct{ q pgxQueryer }

func (p pgQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	return p.q.Query(ctx, q, args...)
}

func (p pgQuerier) queryRow(ctx context.Context, q string, args ...any) scanner {
	return p.q.QueryRow(ctx, q, args...)
}

func (p pgQuerier) exec(ctx context.Context, q string, args ...any) error {
	_, err := p.q.Exec(ctx, q, args...)
	return err
}

// tx is a transaction of either database.
type tx struct {
	querier
	commit   func(context.Context) error
	rollback func(context.Context) error
}

// begin starts a read-write transaction: BEGIN IMMEDIATE for SQLite (the
// write lock is taken at once), BEGIN for PostgreSQL.
func (d *DB) begin(ctx context.Context) (*tx, error) {
	if d.pg != nil {
		t, err := d.pg.Begin(ctx)
		if err != nil {
			return nil, err
		}
		return &tx{querier: pgQuerier{t}, commit: t.Commit, rollback: t.Rollback}, nil
	}
	t, err := d.sdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &tx{querier: sqlQuerier{t},
		commit:   func(context.Context) error { return t.Commit() },
		rollback: func(context.Context) error { return t.Rollback() }}, nil
}

// inTx runs fn in a transaction, committing when it returns nil.
func (d *DB) inTx(ctx context.Context, fn func(*tx) error) error {
	t, err := d.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		t.rollback(context.WithoutCancel(ctx))
		return err
	}
	return t.commit(ctx)
}

// relKind is what a name refers to.
type relKind int

const (
	relNone  relKind = iota // nothing
	relTable                // a table
	relView                 // a view
	relOther                // an index, sequence, …
)

// kindOf returns what q names.
func (d *DB) kindOf(ctx context.Context, q querier, n qname) (relKind, error) {
	var k string
	var err error
	if d.dialect == SQLite {
		err = q.queryRow(ctx, "SELECT type FROM sqlite_schema WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view', 'index', 'trigger')", n.name).Scan(&k)
	} else {
		err = q.queryRow(ctx, `SELECT c.relkind::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = $1 AND c.relname = $2`, n.schema, n.name).Scan(&k)
	}
	if isNoRows(err) {
		return relNone, nil
	}
	if err != nil {
		return relNone, err
	}
	switch k {
	case "table", "r", "p":
		return relTable, nil
	case "view", "v":
		return relView, nil
	}
	return relOther, nil
}

// column is a column of a table or view: its name and declared type
// (SQLite) or format_type (PostgreSQL).
type column struct {
	name, typ string
}

// columns returns n's columns in order.
func (d *DB) columns(ctx context.Context, q querier, n qname) ([]column, error) {
	var rows rows
	var err error
	if d.dialect == SQLite {
		rows, err = q.query(ctx, "SELECT name, type FROM pragma_table_info(?) ORDER BY cid", n.name)
	} else {
		rows, err = q.query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, n.sql())
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// uniqueKey returns the columns of n's unique key on window_start and the
// key columns: the primary key, or else a unique index whose first column
// is window_start. It returns nil when there is none.
func (d *DB) uniqueKey(ctx context.Context, q querier, n qname) ([]string, error) {
	var candidates [][]string
	if d.dialect == SQLite {
		pk, err := queryStrings(ctx, q, "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", n.name)
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, pk)
		idx, err := queryStrings(ctx, q, `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND partial = 0 ORDER BY name`, n.name)
		if err != nil {
			return nil, err
		}
		for _, i := range idx {
			cols, err := queryStrings(ctx, q, "SELECT name FROM pragma_index_info(?) ORDER BY seqno", i)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, cols)
		}
	} else {
		rows, err := q.query(ctx, `SELECT array_to_string(ARRAY(
    SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n), chr(1))
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
ORDER BY i.indisprimary DESC, i.indnullsnotdistinct DESC, c.relname`, n.sql())
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return nil, err
			}
			candidates = append(candidates, strings.Split(s, "\x01"))
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for _, c := range candidates {
		if len(c) > 0 && d.sameName(c[0], colWindowStart) {
			return c, nil
		}
	}
	return nil, nil
}

func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Versions returns the version labels of table present in the database
// (the tables named VersionTable(table, label)), sorted.
func (d *DB) Versions(ctx context.Context, table string) ([]string, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	return d.versions(ctx, d.q(), d.name(table))
}

func (d *DB) versions(ctx context.Context, q querier, n qname) ([]string, error) {
	var names []string
	var err error
	if d.dialect == SQLite {
		names, err = queryStrings(ctx, q, "SELECT name FROM sqlite_schema WHERE type = 'table'")
	} else {
		names, err = queryStrings(ctx, q, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = $1 AND c.relkind IN ('r', 'p') AND starts_with(c.relname, $2)`, n.schema, n.name+VersionSeparator)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		if t, v, ok := SplitVersion(name); ok && d.sameName(t, n.name) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out, nil
}

// NoTableError is returned when a version's table does not exist.
type NoTableError struct {
	Table    string   // the version's table, as named
	Version  string   // the version label
	Versions []string // the versions that exist
}

// Error implements error, listing the versions that exist.
func (e *NoTableError) Error() string {
	have := "none"
	if len(e.Versions) > 0 {
		have = strings.Join(e.Versions, ", ")
	}
	return fmt.Sprintf("no table %s (version %s); versions present: %s", e.Table, e.Version, have)
}

// versionTable checks that version v of result table n is a table and
// returns its name.
func (d *DB) versionTable(ctx context.Context, q querier, n qname, v string) (qname, error) {
	if err := CheckVersion(v); err != nil {
		return qname{}, err
	}
	if err := checkLength(n.name, v); err != nil {
		return qname{}, err
	}
	t := n.version(v)
	k, err := d.kindOf(ctx, q, t)
	if err != nil {
		return t, err
	}
	switch k {
	case relTable:
		return t, nil
	case relNone:
		vs, err := d.versions(ctx, q, n)
		if err != nil {
			return t, err
		}
		return t, &NoTableError{Table: t.String(), Version: v, Versions: vs}
	}
	return t, fmt.Errorf("%s is not a table", t)
}
