package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// column is one column of the result table.
type column struct {
	name string
	typ  string // "TEXT" or "INTEGER"
	null bool   // nullable
	kind row.Kind
}

// The bookkeeping columns around the key and value columns.
const (
	colWindowStart = "window_start"
	colWindowEnd   = "window_end"
	colVersion     = "version"
	colIsFinal     = "is_final"
	colWatermarkAt = "watermark_at"
	colUpdatedAt   = "updated_at"
)

// sqlType returns the column type that stores kind k.
func sqlType(k row.Kind) string {
	if k == row.KindInt || k == row.KindBool {
		return "INTEGER"
	}
	return "TEXT"
}

// tableColumns returns the table's columns in order: window_start,
// window_end, keys, values, version, is_final, watermark_at, updated_at.
// It returns an error when two columns share a name (SQLite compares names
// case-insensitively) or a column has no storable kind.
func tableColumns(d *changelog.Desc) ([]column, error) {
	cols := []column{
		{name: colWindowStart, typ: "TEXT", kind: row.KindTime},
		{name: colWindowEnd, typ: "TEXT", kind: row.KindTime},
	}
	for _, group := range [][]changelog.Column{d.Key, d.Values} {
		for _, c := range group {
			if c.Kind == row.KindNull || c.Kind > row.KindTime {
				return nil, fmt.Errorf("column %q has kind %s", c.Name, c.Kind)
			}
			cols = append(cols, column{name: c.Name, typ: sqlType(c.Kind), null: true, kind: c.Kind})
		}
	}
	cols = append(cols,
		column{name: colVersion, typ: "INTEGER", kind: row.KindInt},
		column{name: colIsFinal, typ: "INTEGER", kind: row.KindBool},
		column{name: colWatermarkAt, typ: "TEXT", null: true, kind: row.KindTime},
		column{name: colUpdatedAt, typ: "TEXT", kind: row.KindTime},
	)
	seen := map[string]bool{}
	for _, c := range cols {
		if c.name == "" {
			return nil, fmt.Errorf("empty column name")
		}
		lower := strings.ToLower(c.name)
		if seen[lower] {
			return nil, fmt.Errorf("column %q appears twice (names are case-insensitive)", c.name)
		}
		seen[lower] = true
	}
	return cols, nil
}

// quote returns s as an SQL identifier: "s", with '"' doubled.
func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// createTable returns the CREATE TABLE IF NOT EXISTS statement.
func createTable(table string, cols []column, nKey int) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(quote(table))
	b.WriteString(" (")
	for _, c := range cols {
		b.WriteString(quote(c.name))
		b.WriteByte(' ')
		b.WriteString(c.typ)
		if !c.null {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(", ")
	}
	b.WriteString("PRIMARY KEY (")
	b.WriteString(strings.Join(quoteAll(primaryKey(cols, nKey)), ", "))
	b.WriteString("))")
	return b.String()
}

// primaryKey returns the primary key's column names: window_start and the
// key columns.
func primaryKey(cols []column, nKey int) []string {
	pk := []string{cols[0].name}
	for _, c := range cols[2 : 2+nKey] {
		pk = append(pk, c.name)
	}
	return pk
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return q
}

// SchemaError is returned by New when the table exists with columns other
// than the sink writes. Each field lists one kind of difference; at least
// one is set.
type SchemaError struct {
	Table      string
	Missing    []string // columns the sink writes that the table lacks
	Extra      []string // columns of the table the sink does not write
	Types      []string // "name: table has X, sink needs Y" for differing declared types
	PrimaryKey []string // the table's primary key, when it differs from WantKey
	WantKey    []string // the primary key the sink needs (set with PrimaryKey)
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
	if e.WantKey != nil {
		parts = append(parts, fmt.Sprintf("primary key is (%s), sink needs (%s)",
			strings.Join(e.PrimaryKey, ", "), strings.Join(e.WantKey, ", ")))
	}
	return fmt.Sprintf("table %q exists with other columns than the sink writes: %s (drop or rename the table, or write to another one)",
		e.Table, strings.Join(parts, "; "))
}

// checkTable compares the existing table's columns with cols and returns
// a *SchemaError when they differ.
func checkTable(ctx context.Context, db *sql.DB, table string, cols []column, nKey int) error {
	rows, err := db.QueryContext(ctx, "SELECT name, type, pk FROM pragma_table_info(?)", table)
	if err != nil {
		return err
	}
	defer rows.Close()
	have := map[string]string{} // lower-case name -> declared type
	var order []string
	pkAt := map[int]string{}
	for rows.Next() {
		var name, typ string
		var pk int
		if err := rows.Scan(&name, &typ, &pk); err != nil {
			return err
		}
		have[strings.ToLower(name)] = typ
		order = append(order, name)
		if pk > 0 {
			pkAt[pk] = name
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	e := &SchemaError{Table: table}
	want := map[string]bool{}
	for _, c := range cols {
		want[strings.ToLower(c.name)] = true
		typ, ok := have[strings.ToLower(c.name)]
		switch {
		case !ok:
			e.Missing = append(e.Missing, c.name)
		case !strings.EqualFold(typ, c.typ):
			e.Types = append(e.Types, fmt.Sprintf("%s: table has %s, sink needs %s", c.name, typ, c.typ))
		}
	}
	for _, name := range order {
		if !want[strings.ToLower(name)] {
			e.Extra = append(e.Extra, name)
		}
	}
	wantPK := primaryKey(cols, nKey)
	var havePK []string
	for i := 1; i <= len(pkAt); i++ {
		havePK = append(havePK, pkAt[i])
	}
	if !equalFold(havePK, wantPK) {
		e.PrimaryKey, e.WantKey = havePK, wantPK
	}
	if e.Missing != nil || e.Extra != nil || e.Types != nil || e.WantKey != nil {
		return e
	}
	return nil
}

func equalFold(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}
