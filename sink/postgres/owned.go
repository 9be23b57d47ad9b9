package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/pgutil"
)

// TablesTable is the name of the table recording which tables tidemark
// created, one row per table, in the schema of the sink's table (beside
// CommitsTable; pgutil.TablesTable, shared with the PostgreSQL checkpoint
// store). A sink drops, replaces or empties only a table it records.
const TablesTable = pgutil.TablesTable

// createTablesSQL creates the ownership table beside t.
func createTablesSQL(t tableName) string { return pgutil.CreateTablesSQL(t.sql()) }

// createBookkeeping creates tidemark_commits and tidemark_tables beside t
// when they are absent. It first takes a transaction-scoped advisory lock
// on t's schema, so that the sinks of several processes that start at
// once (the instances of a group, each task with its own sink) create
// and inspect the tables one after the other: PostgreSQL's CREATE TABLE
// IF NOT EXISTS is not safe against a concurrent one (the second fails
// with "duplicate key value violates unique constraint
// pg_type_typname_nsp_index", SQLSTATE 23505). q must be a transaction:
// the lock is held until it ends.
func createBookkeeping(ctx context.Context, q querier, t tableName) error {
	if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "tidemark tables "+t.schema); err != nil {
		return fmt.Errorf("lock the tables of schema %s: %w", t.schema, err)
	}
	for _, s := range []struct {
		name string
		sql  string
	}{{CommitsTable, createCommitsSQL(t.sibling(CommitsTable))}, {TablesTable, createTablesSQL(t.sibling(TablesTable))}} {
		if _, err := q.Exec(ctx, s.sql); err != nil {
			return fmt.Errorf("create table %s: %w", t.sibling(s.name), err)
		}
	}
	return nil
}

// owned reports whether tidemark created the table t, whose oid is oid.
func owned(ctx context.Context, q querier, t tableName, oid uint32) (bool, error) {
	var rec int64
	err := q.QueryRow(ctx, "SELECT table_oid FROM "+t.sibling(TablesTable).sql()+" WHERE table_name = $1", t.name).Scan(&rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", t.sibling(TablesTable), err)
	}
	return rec == int64(oid), nil
}

// createOwned creates table t with the statement create and records it as
// tidemark's, in transaction tx. With replace, it first drops the table
// (which must be tidemark's).
func createOwned(ctx context.Context, tx pgx.Tx, t tableName, create, pipeline string, replace bool) error {
	if replace {
		if _, err := tx.Exec(ctx, "DROP TABLE "+t.sql()); err != nil {
			return fmt.Errorf("drop table %s: %w", t, err)
		}
	}
	if _, err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("create table %s: %w", t, err)
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+t.sibling(TablesTable).sql()+` AS o (table_name, table_oid, pipeline, created_at)
VALUES ($1, to_regclass($2)::oid::bigint, $3, now())
ON CONFLICT (table_name) DO UPDATE SET table_oid = excluded.table_oid, pipeline = excluded.pipeline, created_at = excluded.created_at`,
		t.name, t.sql(), pipeline)
	if err != nil {
		return fmt.Errorf("record table %s in %s: %w", t, t.sibling(TablesTable), err)
	}
	return nil
}

// abortConn is a sink's Abort after its own state is let go: it drops
// table t when this run created it (made), then closes x. The errors name
// t; a failed close comes first.
func abortConn(ctx context.Context, x *txRunner, t tableName, made bool) error {
	var derr error
	if made {
		derr = dropNew(ctx, x, t)
	}
	if err := x.close(ctx); err != nil {
		return fmt.Errorf("postgres %s: %w", t, err)
	}
	if derr != nil {
		return fmt.Errorf("postgres %s: drop the table this run created: %w", t, derr)
	}
	return nil
}

// closeConn is a sink's Close after its flush (err, returned first) and
// its own state let go: it closes x, naming table t in a close's error.
func closeConn(ctx context.Context, x *txRunner, t tableName, err error) error {
	if cerr := x.close(ctx); err == nil && cerr != nil {
		err = fmt.Errorf("postgres %s: %w", t, cerr)
	}
	return err
}

// dropNew drops t, which the sink created from nothing when it opened,
// while it is still empty, and its record in tidemark_tables: a run
// whose start is refused after the sink opened (Abort) leaves no table
// behind — nor one whose layout would then block the corrected pipeline.
// A table that holds rows, or that a view reads (the serving view the
// sink made), stays.
func dropNew(ctx context.Context, x *txRunner, t tableName) error {
	return x.inTx(ctx, func(tx pgx.Tx) error {
		var empty bool
		if err := tx.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM "+t.sql()+")").Scan(&empty); err != nil || !empty {
			return err
		}
		if _, err := tx.Exec(ctx, "SAVEPOINT drop_new"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DROP TABLE "+t.sql()); err != nil {
			_, rerr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT drop_new") // a view depends on it: it stays
			return rerr
		}
		_, err := tx.Exec(ctx, "DELETE FROM "+t.sibling(TablesTable).sql()+" WHERE table_name = $1", t.name)
		return err
	})
}

// MissingTableError is returned by New, NewRecords and Recover when a run
// resumes from a checkpoint but the table its rows were committed to does
// not exist any more: it was dropped or renamed while the pipeline was
// down. The sink does not create it anew, which would hide the loss.
type MissingTableError struct {
	Table string // as given
	// Checkpoint is the checkpoint the run resumes from (0 when not yet
	// known: the sink was opened to resume), Marker the checkpoint the
	// sink's commit marker records (0: no marker).
	Checkpoint, Marker int64
}

// Error implements error.
func (e *MissingTableError) Error() string {
	from := "the run resumes from a checkpoint"
	if e.Checkpoint > 0 {
		from = fmt.Sprintf("the run resumes from checkpoint %d", e.Checkpoint)
	}
	mark := "its commit marker in " + CommitsTable + " is gone too"
	if e.Marker > 0 {
		mark = fmt.Sprintf("its commit marker in %s records checkpoint %d", CommitsTable, e.Marker)
	}
	return fmt.Sprintf("table %s does not exist, but %s whose rows were committed to it (%s): it was dropped or renamed while the pipeline was down. "+
		"Restore the table (or rename it back), or recompute from the start of the input with an empty checkpoint directory; tidemark does not create it anew empty",
		e.Table, from, mark)
}

// readMarker returns the checkpoint id of the marker (pipeline, sink) in
// the commits table beside t, 0 when there is none or no commits table.
func readMarker(ctx context.Context, q querier, t tableName, pipeline, sink string) int64 {
	var id int64
	err := q.QueryRow(ctx, "SELECT checkpoint_id FROM "+t.sibling(CommitsTable).sql()+" WHERE pipeline = $1 AND sink = $2", pipeline, sink).Scan(&id)
	if err != nil {
		return 0
	}
	return id
}

// ViewDependsError is returned when a table tidemark would drop (replace)
// is read by views: a serving view made by tidemark promote, or another.
type ViewDependsError struct {
	Table string   // as given
	Views []string // schema-qualified
}

// Error implements error, naming the views and what to do.
func (e *ViewDependsError) Error() string {
	what := "the view " + joinNames(e.Views) + " depends"
	if len(e.Views) > 1 {
		what = "the views " + joinNames(e.Views) + " depend"
	}
	return fmt.Sprintf("table %s cannot be replaced: %s on it (a serving view made by tidemark promote, or another), and dropping the table would break it. "+
		"Drop the view (DROP VIEW %s), run again, and promote the new table (tidemark promote --db … TABLE VERSION); "+
		"or keep the view and write the new layout to another table (another version, e.g. %s__v2)",
		e.Table, what, e.Views[0], serving(e.Table))
}

// serving is the name without a version suffix ("x__live" → "x").
func serving(table string) string {
	if i := strings.LastIndex(table, "__"); i > 0 {
		return table[:i]
	}
	return table
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			s += " and "
		default:
			s += ", "
		}
		s += n
	}
	return s
}
