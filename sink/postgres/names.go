package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// maxIdentifier is PostgreSQL's limit on an identifier's length in bytes
// (NAMEDATALEN − 1); longer names would be truncated silently.
const maxIdentifier = 63

// minServerVersion is the oldest PostgreSQL server the package supports:
// 15, the first with UNIQUE NULLS NOT DISTINCT.
const minServerVersion = 150000

// CommitsTable is the name of the table holding the commit markers, one row
// per (pipeline, sink), created in the schema of the sink's table:
//
//	tidemark_commits(pipeline text, sink text, checkpoint_id bigint,
//	                 committed_at timestamptz, PRIMARY KEY (pipeline, sink))
const CommitsTable = "tidemark_commits"

// ErrClosed is returned (wrapped) by the methods of a Results or Ledger
// called after Close.
var ErrClosed = errors.New("postgres sink is closed")

// tableName is a possibly schema-qualified table name.
type tableName struct {
	schema string // "" for the connection's search_path
	name   string
}

// parseTable splits "schema.table" at its first dot ("table" alone has no
// schema) and checks both parts.
func parseTable(s string) (tableName, error) {
	var t tableName
	if i := strings.IndexByte(s, '.'); i >= 0 {
		t.schema, t.name = s[:i], s[i+1:]
		if err := checkIdent("schema", t.schema); err != nil {
			return t, err
		}
	} else {
		t.name = s
	}
	return t, checkIdent("table", t.name)
}

// checkIdent rejects names PostgreSQL cannot keep as written: empty, longer
// than 63 bytes, or holding a NUL byte.
func checkIdent(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s name", what)
	case len(name) > maxIdentifier:
		return fmt.Errorf("%s name %q is longer than %d bytes", what, name, maxIdentifier)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("%s name %q holds a NUL byte", what, name)
	}
	return nil
}

// sql returns the quoted, possibly qualified name.
func (t tableName) sql() string {
	if t.schema == "" {
		return quote(t.name)
	}
	return quote(t.schema) + "." + quote(t.name)
}

// sibling returns the table name in the same schema as t.
func (t tableName) sibling(name string) tableName { return tableName{schema: t.schema, name: name} }

// String returns the name as given: "schema.table" or "table".
func (t tableName) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

// quote returns s as an SQL identifier: "s", with '"' doubled.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return q
}

// connect opens a connection, named app (application_name) unless the
// URL names it, and checks the server version.
func connect(ctx context.Context, dsn, app string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set && app != "" {
		cfg.RuntimeParams["application_name"] = app
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if version < minServerVersion {
		conn.Close(ctx)
		return nil, fmt.Errorf("PostgreSQL %d.%d is too old: the sink needs 15 or later (UNIQUE NULLS NOT DISTINCT)",
			version/10000, version%10000)
	}
	return conn, nil
}

// createCommitsSQL creates the commit marker table.
func createCommitsSQL(t tableName) string {
	return "CREATE TABLE IF NOT EXISTS " + t.sql() + ` (
  pipeline text NOT NULL,
  sink text NOT NULL,
  checkpoint_id bigint NOT NULL,
  committed_at timestamptz NOT NULL,
  PRIMARY KEY (pipeline, sink))`
}

// marker reads, locks and moves one commit marker inside a transaction.
type marker struct {
	table          tableName
	pipeline, sink string
}

// read returns the marker's checkpoint id (0 when there is no marker),
// locking its row until the transaction ends.
func (m *marker) read(ctx context.Context, tx pgx.Tx) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, "SELECT checkpoint_id FROM "+m.table.sql()+
		" WHERE pipeline = $1 AND sink = $2 FOR UPDATE", m.pipeline, m.sink).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// write sets the marker to id unless it records id or a later one; with
// force, also when it records a later one.
func (m *marker) write(ctx context.Context, tx pgx.Tx, id int64, force bool) error {
	q := "INSERT INTO " + m.table.sql() + ` AS m (pipeline, sink, checkpoint_id, committed_at)
VALUES ($1, $2, $3, now())
ON CONFLICT (pipeline, sink) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, committed_at = excluded.committed_at`
	if !force {
		q += "\nWHERE m.checkpoint_id < excluded.checkpoint_id"
	}
	_, err := tx.Exec(ctx, q, m.pipeline, m.sink, id)
	return err
}

// forget deletes the marker.
func (m *marker) forget(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "DELETE FROM "+m.table.sql()+" WHERE pipeline = $1 AND sink = $2", m.pipeline, m.sink)
	return err
}
