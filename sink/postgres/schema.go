package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// column is one column of a table the package writes.
type column struct {
	name string
	typ  string // PostgreSQL type as format_type spells it: "bigint", "numeric", …
	null bool   // nullable
	kind row.Kind
	def  string // DEFAULT expression, "" for none
}

// The bookkeeping columns of a result table around its key and value
// columns.
const (
	colWindowStart = "window_start"
	colWindowEnd   = "window_end"
	colVersion     = "version"
	colIsFinal     = "is_final"
	colWatermarkAt = "watermark_at"
	colUpdatedAt   = "updated_at"
)

// Column types by kind.
const (
	typBool   = "boolean"
	typInt    = "bigint"
	typNum    = "numeric"
	typText   = "text"
	typTime   = "timestamp with time zone"
	typTimeDB = "timestamptz" // the same type, as written in DDL
)

// sqlType returns the column type that stores kind k.
func sqlType(k row.Kind) string {
	switch k {
	case row.KindBool:
		return typBool
	case row.KindInt:
		return typInt
	case row.KindDecimal:
		return typNum
	case row.KindString:
		return typText
	}
	return typTime
}

// ddlType is typ as written in CREATE TABLE.
func ddlType(typ string) string {
	if typ == typTime {
		return typTimeDB
	}
	return typ
}

// userColumns returns the nullable columns of d's key and value groups,
// checking their kinds and names.
func userColumns(groups ...[]changelog.Column) ([]column, error) {
	var cols []column
	for _, group := range groups {
		for _, c := range group {
			if c.Kind == row.KindNull || c.Kind > row.KindTime {
				return nil, fmt.Errorf("column %q has kind %s", c.Name, c.Kind)
			}
			if err := checkIdent("column", c.Name); err != nil {
				return nil, err
			}
			cols = append(cols, column{name: c.Name, typ: sqlType(c.Kind), null: true, kind: c.Kind})
		}
	}
	return cols, nil
}

// resultColumns returns a result table's columns in order: window_start,
// window_end, keys, values, version, is_final, watermark_at, updated_at.
// It returns an error when two columns share a name or a column has no
// storable kind.
func resultColumns(d *changelog.Desc) ([]column, error) {
	user, err := userColumns(d.Key, d.Values)
	if err != nil {
		return nil, err
	}
	cols := []column{
		{name: colWindowStart, typ: typTime, kind: row.KindTime},
		{name: colWindowEnd, typ: typTime, kind: row.KindTime},
	}
	cols = append(cols, user...)
	cols = append(cols,
		column{name: colVersion, typ: typInt, kind: row.KindInt},
		column{name: colIsFinal, typ: typBool, kind: row.KindBool},
		column{name: colWatermarkAt, typ: typTime, null: true, kind: row.KindTime},
		column{name: colUpdatedAt, typ: typTime, kind: row.KindTime},
	)
	return cols, uniqueNames(cols)
}

// uniqueNames returns an error when two columns share a name. PostgreSQL
// compares quoted names exactly, so "n" and "N" are two columns.
func uniqueNames(cols []column) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.name] {
			return fmt.Errorf("column %q appears twice", c.name)
		}
		seen[c.name] = true
	}
	return nil
}

// createTableSQL returns the CREATE TABLE IF NOT EXISTS statement of a
// table with the constraint key (see uniqueKey).
func createTableSQL(t tableName, cols []column, key string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(t.sql())
	b.WriteString(" (\n")
	for _, c := range cols {
		b.WriteString("  ")
		b.WriteString(quote(c.name))
		b.WriteByte(' ')
		b.WriteString(ddlType(c.typ))
		if !c.null {
			b.WriteString(" NOT NULL")
		}
		if c.def != "" {
			b.WriteString(" DEFAULT " + c.def)
		}
		b.WriteString(",\n")
	}
	b.WriteString("  " + key + ")")
	return b.String()
}

// uniqueKey is the constraint of a unique key whose NULLs are equal: one
// row per window and key, NULL keys included.
func uniqueKey(names []string) string {
	return "UNIQUE NULLS NOT DISTINCT (" + strings.Join(quoteAll(names), ", ") + ")"
}

// resultKey returns a result table's unique key: window_start and the key
// columns.
func resultKey(cols []column, nKey int) []string {
	key := []string{cols[0].name}
	for _, c := range cols[2 : 2+nKey] {
		key = append(key, c.name)
	}
	return key
}

func columnList(cols []column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return strings.Join(quoteAll(names), ", ")
}

// SchemaError is returned by New and NewLedger when a table exists with
// other columns than the sink writes. Each field lists one kind of
// difference; at least one is set.
type SchemaError struct {
	Table   string   // the table, as given ("schema.table" or "table")
	Missing []string // columns the sink writes that the table lacks
	Extra   []string // columns of the table the sink does not write
	Types   []string // "name: table has X, sink needs Y" for differing types
	// Key is set when the table has no UNIQUE NULLS NOT DISTINCT constraint
	// (or primary key, for a ledger's event_id) on exactly WantKey, in order.
	Key     bool
	WantKey []string
}

// Error implements error, naming the table and every difference.
func (e *SchemaError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing columns "+strings.Join(e.Missing, ", "))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, "extra columns "+strings.Join(e.Extra, ", "))
	}
	if len(e.Types) > 0 {
		parts = append(parts, "column types differ ("+strings.Join(e.Types, "; ")+")")
	}
	if e.Key {
		parts = append(parts, fmt.Sprintf("no unique key on (%s)", strings.Join(e.WantKey, ", ")))
	}
	return fmt.Sprintf("table %q exists with other columns than the sink writes: %s (drop or rename the table, or write to another one)",
		e.Table, strings.Join(parts, "; "))
}

// checkTable compares the existing table t with cols and returns a
// *SchemaError when they differ. It looks for a unique index on exactly
// key (in order) that treats NULLs as equal (or whose columns are all NOT
// NULL, like a primary key).
func checkTable(ctx context.Context, conn *pgx.Conn, t tableName, cols []column, key []string) error {
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, t.sql())
	if err != nil {
		return err
	}
	have := map[string]string{}
	var order []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return err
		}
		have[name] = typ
		order = append(order, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	e := &SchemaError{Table: t.String()}
	want := map[string]bool{}
	for _, c := range cols {
		want[c.name] = true
		typ, ok := have[c.name]
		switch {
		case !ok:
			e.Missing = append(e.Missing, c.name)
		case typ != c.typ:
			e.Types = append(e.Types, fmt.Sprintf("%s: table has %s, sink needs %s", c.name, typ, c.typ))
		}
	}
	for _, name := range order {
		if !want[name] {
			e.Extra = append(e.Extra, name)
		}
	}
	var found bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (
  SELECT 1 FROM pg_index i
  WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
    AND (i.indnullsnotdistinct OR i.indisprimary)
    AND ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) = $2::text[])`,
		t.sql(), key).Scan(&found)
	if err != nil {
		return err
	}
	if !found {
		e.Key, e.WantKey = true, key
	}
	if e.Missing != nil || e.Extra != nil || e.Types != nil || e.Key {
		return e
	}
	return nil
}
