package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// column is one column of the result table (name, typ, null and kind as
// in sink/postgres's column; the affinities and checks are SQLite's).
type column struct {
	name string
	typ  string // "TEXT" or "INTEGER"
	null bool   // nullable
	kind row.Kind
	// notNull: the existing table's column is NOT NULL, though the sink
	// would create it nullable (a table of the user's; Write checks).
	notNull bool
	// asNumber: a decimal column of a table of the user's whose affinity
	// (NUMERIC, REAL) stores it as a binary number: Write checks that the
	// value survives that exactly (at most 15 significant digits) and fits
	// the declared NUMERIC(prec, scale), if any (prec 0: none).
	asNumber    bool
	prec, scale int
	decl        string // the existing table's declared type
}

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
		{name: sink.ColWindowStart, typ: "TEXT", kind: row.KindTime},
		{name: sink.ColWindowEnd, typ: "TEXT", kind: row.KindTime},
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
		column{name: sink.ColVersion, typ: "INTEGER", kind: row.KindInt},
		column{name: sink.ColIsFinal, typ: "INTEGER", kind: row.KindBool},
		column{name: sink.ColWatermarkAt, typ: "TEXT", null: true, kind: row.KindTime},
		column{name: sink.ColUpdatedAt, typ: "TEXT", kind: row.KindTime},
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

// SchemaError is returned by New and NewRecords when an existing table
// cannot take what the sink writes. Each field lists one kind of problem;
// at least one is set.
//
// A table tidemark created (Owned) must have exactly the layout the sink
// creates: Missing, Extra, Types and PrimaryKey/WantKey list the
// differences, and Options.ReplaceLayout (sink key replace) lets a fresh
// run replace it. Another table must have the columns the sink writes,
// with declared types whose affinity keeps the values exactly, other
// columns nullable or with a default, and a primary key or unique index on
// the key (Key); it is never dropped.
type SchemaError struct {
	Table   string
	Owned   bool     // tidemark created the table (tidemark_tables records it)
	Missing []string // columns the sink writes that the table lacks
	Extra   []string // owned tables: columns of the table the sink does not write
	// Types: "name: table has X, sink needs Y" (owned), or a sentence per
	// column whose declared type does not keep the values (another table).
	Types    []string
	Problems []string // other obstacles, a sentence each
	// PrimaryKey is the table's primary key when it differs from WantKey
	// (owned tables); Key is set when another table has no primary key or
	// unique index on exactly the columns of WantKey.
	PrimaryKey []string
	Key        bool
	WantKey    []string
}

// parts lists the problems, one clause each (as sink/postgres's, whose
// SchemaError, also public, has an exact-layout flag this one lacks).
func (e *SchemaError) parts() []string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing columns "+strings.Join(e.Missing, ", "))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, "extra columns "+strings.Join(e.Extra, ", "))
	}
	if len(e.Types) > 0 {
		if e.Owned {
			parts = append(parts, "column types differ ("+strings.Join(e.Types, "; ")+")")
		} else {
			parts = append(parts, e.Types...)
		}
	}
	parts = append(parts, e.Problems...)
	if e.Owned && e.WantKey != nil {
		parts = append(parts, fmt.Sprintf("primary key is (%s), sink needs (%s)",
			strings.Join(e.PrimaryKey, ", "), strings.Join(e.WantKey, ", ")))
	}
	if e.Key {
		parts = append(parts, fmt.Sprintf("no primary key or unique index on (%s): the upsert needs one (CREATE UNIQUE INDEX ... ON %s (%s))",
			strings.Join(e.WantKey, ", "), quote(e.Table), strings.Join(quoteAll(e.WantKey), ", ")))
	}
	return parts
}

// differences is the problems in one phrase.
func (e *SchemaError) differences() string { return strings.Join(e.parts(), "; ") }

// Error implements error, naming the table and every problem.
func (e *SchemaError) Error() string {
	if e.Owned {
		return fmt.Sprintf("table %q, which tidemark created, has another layout than the pipeline writes: %s "+
			"(set replace: true on the sink to drop it and create it anew at a fresh start, or write to another table)",
			e.Table, e.differences())
	}
	return fmt.Sprintf("table %q cannot take the pipeline's rows (tidemark did not create it, so it uses it as it is and never drops or empties it): %s. "+
		"Change the table, or write to another one (tidemark creates a table that does not exist)",
		e.Table, e.differences())
}

func (e *SchemaError) empty() bool {
	return e.Missing == nil && e.Extra == nil && e.Types == nil && e.Problems == nil && e.WantKey == nil && !e.Key
}

// tableCol is a column of an existing table (pragma_table_xinfo).
type tableCol struct {
	name, typ  string
	notNull    bool
	hasDefault bool
	pk         int // position in the primary key, 0 when not in it
	generated  bool
}

// tableInfo is an existing table.
type tableInfo struct {
	sql     string // its CREATE statement (sqlite_schema.sql)
	cols    []tableCol
	uniques [][]string // primary key and unique indexes without a predicate or expression
}

func (ti *tableInfo) col(name string) *tableCol {
	for i := range ti.cols {
		if strings.EqualFold(ti.cols[i].name, name) {
			return &ti.cols[i]
		}
	}
	return nil
}

// hasUnique reports whether a unique index covers exactly the set key.
func (ti *tableInfo) hasUnique(key []string) bool {
	for _, u := range ti.uniques {
		if len(u) != len(key) {
			continue
		}
		same := true
		for _, k := range key {
			found := false
			for _, c := range u {
				found = found || strings.EqualFold(c, k)
			}
			same = same && found
		}
		if same {
			return true
		}
	}
	return false
}

// queryer is a database or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// inspect describes the table called table, nil when there is none. A
// view of that name is an error.
func inspect(ctx context.Context, q queryer, table string) (*tableInfo, error) {
	var typ, text string
	err := q.QueryRowContext(ctx, `SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')`, table).Scan(&typ, &text)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up table %q: %w", table, err)
	}
	if typ == "view" {
		return nil, fmt.Errorf("%q is a view, not a table: point the sink at a table (a serving view is written through its version tables)", table)
	}
	ti := &tableInfo{sql: text}
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value IS NOT NULL, pk, hidden FROM pragma_table_xinfo(?)`, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %q: %w", table, err)
	}
	var pk []string
	pkAt := map[int]string{}
	for rows.Next() {
		var c tableCol
		var hidden int
		if err := rows.Scan(&c.name, &c.typ, &c.notNull, &c.hasDefault, &c.pk, &hidden); err != nil {
			rows.Close()
			return nil, err
		}
		c.generated = hidden == 2 || hidden == 3
		c.hasDefault = c.hasDefault || c.generated
		if c.pk > 0 {
			pkAt[c.pk] = c.name
		}
		ti.cols = append(ti.cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := 1; i <= len(pkAt); i++ {
		pk = append(pk, pkAt[i])
	}
	if pk != nil {
		ti.uniques = append(ti.uniques, pk)
	}
	rows, err = q.QueryContext(ctx, `SELECT l.name, i.name, i.cid FROM pragma_index_list(?) l, pragma_index_info(l.name) i
WHERE l."unique" AND NOT l.partial ORDER BY l.name, i.seqno`, table)
	if err != nil {
		return nil, fmt.Errorf("read the indexes of %q: %w", table, err)
	}
	byIndex := map[string][]string{}
	bad := map[string]bool{}
	var order []string
	for rows.Next() {
		var index string
		var name sql.NullString
		var cid int
		if err := rows.Scan(&index, &name, &cid); err != nil {
			rows.Close()
			return nil, err
		}
		if _, ok := byIndex[index]; !ok {
			order = append(order, index)
		}
		byIndex[index] = append(byIndex[index], name.String)
		bad[index] = bad[index] || cid < 0 // an expression
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, index := range order {
		if !bad[index] {
			ti.uniques = append(ti.uniques, byIndex[index])
		}
	}
	return ti, nil
}

// checkExact compares a table tidemark created with cols and the primary
// key the sink creates, returning a *SchemaError (Owned) for a
// difference.
func checkExact(ti *tableInfo, table string, cols []column, wantPK []string) error {
	e := &SchemaError{Table: table, Owned: true}
	want := map[string]bool{}
	for _, c := range cols {
		want[strings.ToLower(c.name)] = true
		tc := ti.col(c.name)
		switch {
		case tc == nil:
			e.Missing = append(e.Missing, c.name)
		case !strings.EqualFold(tc.typ, c.typ):
			e.Types = append(e.Types, fmt.Sprintf("%s: table has %s, sink needs %s", c.name, tc.typ, c.typ))
		}
	}
	var havePK []string
	pkAt := map[int]string{}
	for _, tc := range ti.cols {
		if !want[strings.ToLower(tc.name)] {
			e.Extra = append(e.Extra, tc.name)
		}
		if tc.pk > 0 {
			pkAt[tc.pk] = tc.name
		}
	}
	for i := 1; i <= len(pkAt); i++ {
		havePK = append(havePK, pkAt[i])
	}
	if !equalFold(havePK, wantPK) {
		e.PrimaryKey, e.WantKey = havePK, wantPK
	}
	if e.empty() {
		return nil
	}
	return e
}

// affinity is SQLite's type affinity of a declared column type (the rules
// of "Datatypes In SQLite", 3.1).
func affinity(decl string) string {
	d := strings.ToUpper(decl)
	switch {
	case strings.Contains(d, "INT"):
		return "INTEGER"
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return "TEXT"
	case d == "" || strings.Contains(d, "BLOB"):
		return "BLOB"
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

// keeps reports whether a column of affinity aff stores what the sink
// writes for kind k exactly, and if not why (for a message).
func keeps(k row.Kind, aff string) (bool, string) {
	switch k {
	case row.KindDecimal:
		// TEXT keeps the exact literal; NUMERIC and REAL store a binary
		// number, which Write accepts only for values it holds exactly.
		if aff != "INTEGER" {
			return true, ""
		}
		return false, "the pipeline writes decimals: declare it TEXT (or NUMERIC)"
	case row.KindInt, row.KindBool:
		if aff == "INTEGER" || aff == "NUMERIC" || aff == "BLOB" {
			return true, ""
		}
		return false, "the pipeline writes integers: declare it INTEGER"
	case row.KindTime:
		if aff == "TEXT" || aff == "NUMERIC" || aff == "BLOB" {
			return true, "" // RFC 3339 text never looks like a number
		}
		return false, "the pipeline writes RFC 3339 text: declare it TEXT"
	}
	if aff == "TEXT" || aff == "BLOB" {
		return true, ""
	}
	return false, "the pipeline writes text: declare it TEXT"
}

// bind checks that an existing table of the user's can take cols — each
// present, of a declared type whose affinity keeps the values, not
// generated; every other column nullable or with a default; a primary key
// or unique index on exactly key (nil: none needed) — and records which
// columns are NOT NULL. It returns a *SchemaError naming every problem.
func bind(ti *tableInfo, table string, cols []column, key []string) error {
	e := &SchemaError{Table: table}
	want := map[string]bool{}
	for i := range cols {
		c := &cols[i]
		want[strings.ToLower(c.name)] = true
		tc := ti.col(c.name)
		if tc == nil {
			e.Missing = append(e.Missing, fmt.Sprintf("%s (%s)", c.name, c.typ))
			continue
		}
		if tc.generated {
			e.Problems = append(e.Problems, fmt.Sprintf("column %s is generated, but the pipeline writes it", c.name))
			continue
		}
		if ok, why := keeps(c.kind, affinity(tc.typ)); !ok {
			decl := tc.typ
			if decl == "" {
				decl = "untyped"
			}
			e.Types = append(e.Types, fmt.Sprintf("column %s is %s: %s", c.name, decl, why))
			continue
		}
		c.notNull, c.decl = tc.notNull, tc.typ
		if a := affinity(tc.typ); c.kind == row.KindDecimal && (a == "NUMERIC" || a == "REAL") {
			c.asNumber = true
			c.prec, c.scale = declaredPrecision(tc.typ)
		}
	}
	for _, tc := range ti.cols {
		if !want[strings.ToLower(tc.name)] && tc.notNull && !tc.hasDefault && tc.pk == 0 {
			e.Problems = append(e.Problems, fmt.Sprintf("column %s is NOT NULL without a default, and the pipeline does not write it (give it a default, or drop NOT NULL)", tc.name))
		}
	}
	if key != nil && !ti.hasUnique(key) {
		e.Key, e.WantKey = true, key
	}
	if e.empty() {
		return nil
	}
	return e
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

// declaredPrecision reads the precision and scale of a declared type such
// as "numeric(18, 2)" or "DECIMAL(10)"; 0, 0 when there are none.
func declaredPrecision(decl string) (prec, scale int) {
	_, args, ok := strings.Cut(decl, "(")
	if !ok {
		return 0, 0
	}
	args, _, _ = strings.Cut(args, ")")
	p, s, _ := strings.Cut(args, ",")
	prec, err := strconv.Atoi(strings.TrimSpace(p))
	if err != nil || prec <= 0 {
		return 0, 0
	}
	if strings.TrimSpace(s) != "" {
		if scale, err = strconv.Atoi(strings.TrimSpace(s)); err != nil || scale < 0 || scale > prec {
			return 0, 0
		}
	}
	return prec, scale
}

// maxExactDigits is how many significant decimal digits SQLite keeps when
// it stores a decimal literal as a binary floating-point number.
const maxExactDigits = 15

// numberFit returns why the decimal literal s cannot be stored in a column
// with NUMERIC or REAL affinity without being rounded, "" when it can.
func (c *column) numberFit(s string) string {
	digits := strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	frac = strings.TrimRight(frac, "0")
	whole = strings.TrimLeft(whole, "0")
	if c.prec > 0 {
		if len(frac) > c.scale {
			return fmt.Sprintf("%s has %d decimal places and the column is declared with %d", s, len(frac), c.scale)
		}
		if len(whole) > c.prec-c.scale {
			return fmt.Sprintf("%s has %d digits before the decimal point and the column allows %d", s, len(whole), c.prec-c.scale)
		}
	}
	sig := strings.Trim(whole+frac, "0") // the significant digits
	if len(sig) > maxExactDigits {
		return fmt.Sprintf("%s has %d significant digits, and SQLite stores a NUMERIC or REAL column as binary floating point, exact to %d (declare the column TEXT to keep any decimal exactly)", s, len(sig), maxExactDigits)
	}
	return ""
}
