package sqlite

import (
	"strings"

	"github.com/tidemark/tidemark/sink"
)

// The statements of a result table, built once from its columns. Every
// statement takes its arguments from a row's flat argument list (see
// args.go): the columns in table order.

// maxVariables is SQLite's default limit on parameters per statement.
const maxVariables = 32766

// defaultBatch is the most rows one upsert statement carries. Measured with
// BenchmarkFlush (100k upserts of a string key, a decimal and an int, one
// transaction, 2-core development machine): one prepared single-row
// statement per row ~80k rows/s; 10 rows ~120k; 100 rows ~150k; 200 rows
// no better than 100.
const defaultBatch = 100

// upsertSQL returns an INSERT of n rows that updates an existing row of
// the same primary key when the new version is higher. Rows of one
// statement are applied in order.
func upsertSQL(table string, cols []column, nKey, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quote(table))
	b.WriteString(" (")
	b.WriteString(columnList(cols))
	b.WriteString(") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + ")"
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	// As sink/postgres's statement tail, over this package's own columns.
	b.WriteString(" ON CONFLICT (")
	b.WriteString(strings.Join(quoteAll(primaryKey(cols, nKey)), ", "))
	b.WriteString(") DO UPDATE SET ")
	for i, c := range updatable(cols, nKey) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(c.name))
		b.WriteString(" = excluded.")
		b.WriteString(quote(c.name))
	}
	b.WriteString(" WHERE excluded.")
	b.WriteString(quote(sink.ColVersion))
	b.WriteString(" > ")
	b.WriteString(quote(table))
	b.WriteByte('.')
	b.WriteString(quote(sink.ColVersion))
	return b.String()
}

// nullUpdateSQL updates the row whose key matches with IS (NULL matches
// NULL) when its version is lower. Arguments: the updatable columns, then
// the primary key columns, then the version.
func nullUpdateSQL(table string, cols []column, nKey int) string {
	var b strings.Builder
	b.WriteString("UPDATE ")
	b.WriteString(quote(table))
	b.WriteString(" SET ")
	for i, c := range updatable(cols, nKey) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(c.name))
		b.WriteString(" = ?")
	}
	b.WriteString(" WHERE ")
	b.WriteString(keyMatch(cols, nKey))
	b.WriteString(" AND ")
	b.WriteString(quote(sink.ColVersion))
	b.WriteString(" < ?")
	return b.String()
}

// nullInsertSQL inserts a row unless one with the same key (compared with
// IS) exists. Arguments: all columns, then the primary key columns.
func nullInsertSQL(table string, cols []column, nKey int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quote(table))
	b.WriteString(" (")
	b.WriteString(columnList(cols))
	b.WriteString(") SELECT ")
	b.WriteString(strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
	b.WriteString(" WHERE NOT EXISTS (SELECT 1 FROM ")
	b.WriteString(quote(table))
	b.WriteString(" WHERE ")
	b.WriteString(keyMatch(cols, nKey))
	b.WriteString(")")
	return b.String()
}

// deleteSQL deletes the row of a key (compared with IS) when its version is
// lower than the delete's. Arguments: the primary key columns, then the
// version.
func deleteSQL(table string, cols []column, nKey int) string {
	return "DELETE FROM " + quote(table) + " WHERE " + keyMatch(cols, nKey) +
		" AND " + quote(sink.ColVersion) + " < ?"
}

// keyMatch is `"window_start" = ? AND "k1" IS ? AND ...`. window_start is
// never NULL; IS on the key columns matches NULL to NULL and still uses
// the primary key index.
func keyMatch(cols []column, nKey int) string {
	parts := []string{quote(cols[0].name) + " = ?"}
	for _, c := range cols[2 : 2+nKey] {
		parts = append(parts, quote(c.name)+" IS ?")
	}
	return strings.Join(parts, " AND ")
}

// updatable returns the columns outside the primary key.
func updatable(cols []column, nKey int) []column {
	out := []column{cols[1]}
	return append(out, cols[2+nKey:]...)
}

func columnList(cols []column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return strings.Join(quoteAll(names), ", ")
}
