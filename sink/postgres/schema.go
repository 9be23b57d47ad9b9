package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// column is one column of a table the package writes (name, typ, null
// and kind as in sink/sqlite's column; the types and bindings are
// PostgreSQL's).
type column struct {
	name string
	typ  string // PostgreSQL type as format_type spells it: "bigint", "numeric", …
	null bool   // nullable
	kind row.Kind
	def  string // DEFAULT expression, "" for none
	// to is the existing table's column (New binds it), nil until bound.
	to *target
}

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
		{name: sink.ColWindowStart, typ: typTime, kind: row.KindTime},
		{name: sink.ColWindowEnd, typ: typTime, kind: row.KindTime},
	}
	cols = append(cols, user...)
	cols = append(cols,
		column{name: sink.ColVersion, typ: typInt, kind: row.KindInt},
		column{name: sink.ColIsFinal, typ: typBool, kind: row.KindBool},
		column{name: sink.ColWatermarkAt, typ: typTime, null: true, kind: row.KindTime},
		column{name: sink.ColUpdatedAt, typ: typTime, kind: row.KindTime},
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

// checkTable compares the existing table t, if there is one, with exactly
// cols and the unique key key (a ledger's tables), returning a
// *SchemaError naming every difference.
func checkTable(ctx context.Context, q querier, t tableName, cols []column, key []string) error {
	ti, err := inspect(ctx, q, t)
	if err != nil || ti == nil {
		return err
	}
	return checkExact(ti, t, cols, key, false)
}
