package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// TablesTable records the tables tidemark created in a database file, one
// row per table, beside tidemark_commits:
//
//	tidemark_tables(table_name TEXT PRIMARY KEY COLLATE NOCASE,
//	                created_sql TEXT NOT NULL, pipeline TEXT NOT NULL,
//	                created_at TEXT NOT NULL)
//
// A table is tidemark's when its row names it and its CREATE statement
// (sqlite_schema.sql) is still the one recorded: a table dropped and
// created again by someone else, or altered (ALTER TABLE changes the
// statement), is not. A sink drops, replaces or empties only such a table.
const TablesTable = "tidemark_tables"

const createTablesSQL = `CREATE TABLE IF NOT EXISTS tidemark_tables (
  table_name TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
  created_sql TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  created_at TEXT NOT NULL
)`

// isOwned reports whether tidemark created the table ti describes.
func isOwned(ctx context.Context, q queryer, table string, ti *tableInfo) (bool, error) {
	var rec string
	err := q.QueryRowContext(ctx, `SELECT created_sql FROM tidemark_tables WHERE table_name = ?`, table).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read tidemark_tables: %w", err)
	}
	return rec == ti.sql, nil
}

// createOwned creates a table with the statement create and records it as
// tidemark's (inside a transaction); with replace it drops it first.
func createOwned(ctx context.Context, tx *sql.Tx, table, create, pipeline string, replace bool) error {
	if replace {
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+quote(table)); err != nil {
			return fmt.Errorf("drop table %q: %w", table, err)
		}
	}
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("create table %q: %w", table, err)
	}
	var text string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`, table).Scan(&text); err != nil {
		return fmt.Errorf("read back table %q: %w", table, err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO tidemark_tables (table_name, created_sql, pipeline, created_at) VALUES (?, ?, ?, ?)
ON CONFLICT (table_name) DO UPDATE SET created_sql = excluded.created_sql, pipeline = excluded.pipeline, created_at = excluded.created_at`,
		table, text, pipeline, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("record table %q in tidemark_tables: %w", table, err)
	}
	return nil
}

// forgetOwned drops a table the sink created empty, and its record.
func forgetOwned(ctx context.Context, tx *sql.Tx, table string) error {
	if _, err := tx.ExecContext(ctx, "DROP TABLE "+quote(table)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM tidemark_tables WHERE table_name = ?`, table)
	return err
}

// dependentViews returns the views whose statement names table.
func dependentViews(ctx context.Context, q queryer, table string) ([]string, error) {
	re := regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_$])("` + regexp.QuoteMeta(strings.ReplaceAll(table, `"`, `""`)) + `"|` +
		"`" + regexp.QuoteMeta(table) + "`|\\[" + regexp.QuoteMeta(table) + `\]|` + regexp.QuoteMeta(table) + `)($|[^A-Za-z0-9_$])`)
	rows, err := q.QueryContext(ctx, `SELECT name, coalesce(sql, '') FROM sqlite_schema WHERE type = 'view' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, text string
		if err := rows.Scan(&name, &text); err != nil {
			return nil, err
		}
		if re.MatchString(text) {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// readMarker returns the checkpoint id of the marker (pipeline, sink), 0
// when there is none.
func readMarker(ctx context.Context, q queryer, pipeline, sink string) int64 {
	var id int64
	if err := q.QueryRowContext(ctx, `SELECT checkpoint_id FROM tidemark_commits WHERE pipeline = ? AND sink = ?`, pipeline, sink).Scan(&id); err != nil {
		return 0
	}
	return id
}

// MissingTableError is returned by New, NewRecords and Recover when a run
// resumes from a checkpoint but the table its rows were committed to does
// not exist any more (dropped or renamed while the pipeline was down). The
// sink does not create it anew, which would hide the loss.
type MissingTableError struct {
	Path, Table string
	// NoFile is true when the database file itself does not exist: the
	// sink then refuses before opening it, so that no new empty database
	// is left at Path (and no directory made for it).
	NoFile bool
	// Checkpoint is the checkpoint the run resumes from (0: not known
	// yet), Marker the one the sink's commit marker records (0: none).
	Checkpoint, Marker int64
}

// Error implements error.
func (e *MissingTableError) Error() string {
	from := "the run resumes from a checkpoint"
	if e.Checkpoint > 0 {
		from = fmt.Sprintf("the run resumes from checkpoint %d", e.Checkpoint)
	}
	mark := "its commit marker in tidemark_commits is gone too"
	if e.NoFile {
		return fmt.Sprintf("the database %s does not exist, but %s whose rows were committed to its table %q: it was deleted or moved while the pipeline was down. "+
			"Restore the file, or recompute from the start of the input with an empty checkpoint directory; tidemark does not create it anew empty (nothing was created)",
			e.Path, from, e.Table)
	}
	if e.Marker > 0 {
		mark = fmt.Sprintf("its commit marker in tidemark_commits records checkpoint %d", e.Marker)
	}
	return fmt.Sprintf("table %q does not exist in %s, but %s whose rows were committed to it (%s): it was dropped or renamed while the pipeline was down (or the database file was replaced). "+
		"Restore the table (or the file), or recompute from the start of the input with an empty checkpoint directory; tidemark does not create it anew empty",
		e.Table, e.Path, from, mark)
}

// ViewDependsError is returned when a table tidemark would replace is
// named by views (a serving view made by tidemark promote, or another).
type ViewDependsError struct {
	Table string
	Views []string
}

// Error implements error, naming the views and what to do.
func (e *ViewDependsError) Error() string {
	what := "the view " + strings.Join(e.Views, ", ") + " reads it"
	if len(e.Views) > 1 {
		what = "the views " + strings.Join(e.Views, ", ") + " read it"
	}
	serving := e.Table
	if i := strings.LastIndex(serving, "__"); i > 0 {
		serving = serving[:i]
	}
	return fmt.Sprintf("table %q cannot be replaced: %s (a serving view made by tidemark promote, or another), and a table of another layout would break it. "+
		"Drop the view (DROP VIEW %s), run again, and promote the new table (tidemark promote --db … TABLE VERSION); "+
		"or keep the view and write the new layout to another table (another version, e.g. %s__v2)",
		e.Table, what, quote(e.Views[0]), serving)
}
