package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// querier is what the catalog queries need: a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// tableInfo is an existing table as the catalog describes it.
type tableInfo struct {
	oid     uint32
	cols    []tableCol
	uniques []uniqueIndex
}

// tableCol is one column of an existing table.
type tableCol struct {
	name string
	typ  string // format_type: "numeric(18,2)", "character varying(20)", "timestamp with time zone"
	base string // the type's name in pg_type (a domain's base type): "numeric", "varchar", "int4", "timestamptz" …
	// prec and scale of a numeric(p,s) (prec 0: unconstrained numeric);
	// maxChars of a varchar(n) or char(n) (0: unbounded).
	prec, scale, maxChars int
	notNull               bool
	hasDefault            bool // a DEFAULT, an identity or a generated column: an INSERT may leave it out
	generated             bool // GENERATED ALWAYS AS (…) STORED: an INSERT must leave it out
}

// uniqueIndex is a unique index (or primary key) on plain columns, without
// a predicate.
type uniqueIndex struct {
	cols       []string
	primary    bool
	nullsEqual bool // NULLS NOT DISTINCT
}

// col returns the table's column called name, nil when there is none.
// PostgreSQL compares quoted names exactly.
func (ti *tableInfo) col(name string) *tableCol {
	for i := range ti.cols {
		if ti.cols[i].name == name {
			return &ti.cols[i]
		}
	}
	return nil
}

// uniqueOn returns a unique index whose key columns are exactly the set
// key (ON CONFLICT (key) infers such an index whatever its column order),
// preferring one that treats NULLs as equal; nil when there is none.
func (ti *tableInfo) uniqueOn(key []string) *uniqueIndex {
	var found *uniqueIndex
	for i := range ti.uniques {
		u := &ti.uniques[i]
		if len(u.cols) != len(key) {
			continue
		}
		same := true
		for _, k := range key {
			same = same && slices.Contains(u.cols, k)
		}
		if same && (found == nil || u.nullsEqual && !found.nullsEqual) {
			found = u
		}
	}
	return found
}

// errNotTable is returned (wrapped) by inspect for a name that is not a
// table (a view, a sequence …).
var errNotTable = errors.New("is not a table")

// inspect returns what the catalog says about table t, nil when no
// relation of that name exists (in the search_path, for an unqualified
// name). A view or another kind of relation is an error wrapping
// errNotTable.
func inspect(ctx context.Context, q querier, t tableName) (*tableInfo, error) {
	var oid *uint32
	var kind string
	err := q.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, t.sql()).Scan(&oid, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up table %s: %w", t, err)
	}
	switch kind {
	case "r", "p":
	case "v", "m":
		return nil, fmt.Errorf("%s %w but a view: point the sink at a table (a serving view is written through its version tables)", t, errNotTable)
	default:
		return nil, fmt.Errorf("%s %w (relkind %s)", t, errNotTable, kind)
	}
	ti := &tableInfo{oid: *oid}
	rows, err := q.Query(ctx, `SELECT a.attname::text, format_type(a.atttypid, a.atttypmod),
  CASE WHEN t.typtype = 'd' THEN b.typname ELSE t.typname END::text,
  coalesce(information_schema._pg_numeric_precision(coalesce(nullif(t.typbasetype, 0), a.atttypid), coalesce(nullif(t.typtypmod, -1), a.atttypmod)), 0),
  coalesce(information_schema._pg_numeric_scale(coalesce(nullif(t.typbasetype, 0), a.atttypid), coalesce(nullif(t.typtypmod, -1), a.atttypmod)), 0),
  coalesce(information_schema._pg_char_max_length(coalesce(nullif(t.typbasetype, 0), a.atttypid), coalesce(nullif(t.typtypmod, -1), a.atttypmod)), 0),
  a.attnotnull OR t.typnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' OR t.typdefault IS NOT NULL, a.attgenerated <> ''
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_type b ON b.oid = t.typbasetype
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, *oid)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t, err)
	}
	for rows.Next() {
		var c tableCol
		if err := rows.Scan(&c.name, &c.typ, &c.base, &c.prec, &c.scale, &c.maxChars, &c.notNull, &c.hasDefault, &c.generated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the columns of %s: %w", t, err)
		}
		if c.base == "numeric" && c.typ == typNum {
			c.prec, c.scale = 0, 0 // unconstrained
		}
		ti.cols = append(ti.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t, err)
	}
	rows, err = q.Query(ctx, `SELECT i.indisprimary, i.indnullsnotdistinct,
  ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE k.n <= i.indnkeyatts ORDER BY k.n)
FROM pg_index i
WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL`, *oid)
	if err != nil {
		return nil, fmt.Errorf("read the indexes of %s: %w", t, err)
	}
	for rows.Next() {
		var u uniqueIndex
		if err := rows.Scan(&u.primary, &u.nullsEqual, &u.cols); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the indexes of %s: %w", t, err)
		}
		ti.uniques = append(ti.uniques, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the indexes of %s: %w", t, err)
	}
	return ti, nil
}

// dependentViews returns the views (and materialized views) that select
// from the table oid, schema-qualified, sorted.
func dependentViews(ctx context.Context, q querier, oid uint32) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT v.oid::regclass::text
FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
  AND d.refobjid = $1 AND v.oid <> $1
ORDER BY 1`, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// countRows returns the number of rows of t (where, if not empty, is a
// condition on them), counting at most limit+1.
func countRows(ctx context.Context, q querier, t tableName, where string, limit int64, args ...any) (int64, error) {
	if where != "" {
		where = " WHERE " + where
	}
	var n int64
	err := q.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM %s%s LIMIT %d) x", t.sql(), where, limit+1), args...).Scan(&n)
	return n, err
}
