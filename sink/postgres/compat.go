package postgres

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// target is how an existing table's column stores what the sink writes:
// the limits a value must fit so that nothing is rounded, cut or refused
// by the server half-way through a commit.
type target struct {
	typ      string // format_type
	base     string // pg_type name: numeric, int4, varchar …
	notNull  bool
	prec     int // numeric(p,s); 0: unconstrained
	scale    int
	maxChars int // varchar(n); 0: unbounded
}

// accepts lists, per kind, the column types (pg_type names) an existing
// table may store it in, and how to say so.
var accepts = map[row.Kind]struct {
	bases []string
	want  string
}{
	row.KindBool:    {[]string{"bool"}, "boolean"},
	row.KindInt:     {[]string{"int8", "int4", "int2", "numeric"}, "bigint (or integer, smallint, numeric)"},
	row.KindDecimal: {[]string{"numeric"}, "numeric or numeric(p,s)"},
	row.KindString:  {[]string{"text", "varchar"}, "text or varchar"},
	row.KindTime:    {[]string{"timestamptz"}, "timestamptz"},
}

// kindJSON is the pseudo-kind of a records table's record column.
const kindJSON row.Kind = 250

func init() {
	accepts[kindJSON] = struct {
		bases []string
		want  string
	}{[]string{"json", "jsonb", "text"}, "json (or jsonb, text)"}
}

// kindName is how the messages name a kind of value.
func kindName(k row.Kind) string {
	switch k {
	case row.KindDecimal:
		return "decimal"
	case row.KindTime:
		return "timestamp"
	case kindJSON:
		return "JSON"
	}
	return k.String()
}

// SchemaError is returned by New, NewRecords and NewLedger when an existing
// table cannot take what the sink writes. Each field lists one kind of
// problem; at least one is set.
//
// For a table tidemark created (Owned), the table must have exactly the
// layout the sink would create: Missing, Extra and Types list the
// differences, and Options.ReplaceLayout (sink key replace) lets a fresh
// run replace it. For a table tidemark did not create, it must have the
// columns the sink writes with compatible types, and a primary key or
// unique constraint on the key; Problems say what else is in the way
// (a NOT NULL column without a default that the sink does not write, a
// generated column). Such a table is never dropped.
type SchemaError struct {
	Table string // the table, as given ("schema.table" or "table")
	// Owned: tidemark created the table (tidemark_tables records it).
	Owned   bool
	Missing []string // columns the sink writes that the table lacks, "name (type)"
	Extra   []string // owned tables: columns the sink does not write
	// Types: "name: table has X, sink needs Y" (owned), or "column name is
	// X; the pipeline writes K values (needs Y)".
	Types    []string
	Problems []string // other obstacles, each a sentence
	// Key is set when the table has no unique constraint (a primary key,
	// UNIQUE, or for a table tidemark created UNIQUE NULLS NOT DISTINCT)
	// on exactly the columns of WantKey.
	Key     bool
	WantKey []string
	// exact: a ledger table, which must have exactly the sink's layout.
	exact bool
}

// Error implements error, naming the table and every problem.
func (e *SchemaError) Error() string {
	parts := e.parts()
	if e.exact {
		return fmt.Sprintf("table %q exists with other columns than the sink writes: %s (drop or rename the table, or write to another one)",
			e.Table, strings.Join(parts, "; "))
	}
	if e.Owned {
		return fmt.Sprintf("table %q, which tidemark created, has another layout than the pipeline writes: %s "+
			"(set replace: true on the sink to drop it and create it anew at a fresh start, or write to another table)",
			e.Table, strings.Join(parts, "; "))
	}
	return fmt.Sprintf("table %q cannot take the pipeline's rows (tidemark did not create it, so it uses it as it is and never drops or empties it): %s. "+
		"Change the table, or write to another one (tidemark creates a table that does not exist)",
		e.Table, strings.Join(parts, "; "))
}

// parts lists the problems, one clause each (as sink/sqlite's, which has
// no exact-layout flag and its own SchemaError type: both are public).
func (e *SchemaError) parts() []string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing columns "+strings.Join(e.Missing, ", "))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, "extra columns "+strings.Join(e.Extra, ", "))
	}
	if len(e.Types) > 0 {
		if e.Owned || e.exact {
			parts = append(parts, "column types differ ("+strings.Join(e.Types, "; ")+")")
		} else {
			parts = append(parts, e.Types...)
		}
	}
	parts = append(parts, e.Problems...)
	if e.Key {
		if e.Owned || e.exact {
			parts = append(parts, fmt.Sprintf("no unique key on (%s)", strings.Join(e.WantKey, ", ")))
		} else {
			parts = append(parts, fmt.Sprintf("no primary key or unique constraint on (%s): the upsert needs one (ALTER TABLE %s ADD PRIMARY KEY (%s), or UNIQUE NULLS NOT DISTINCT when a key may be NULL)",
				strings.Join(e.WantKey, ", "), e.Table, strings.Join(quoteAll(e.WantKey), ", ")))
		}
	}
	return parts
}

// differences is the problems in one phrase.
func (e *SchemaError) differences() string { return strings.Join(e.parts(), "; ") }

func (e *SchemaError) empty() bool {
	return e.Missing == nil && e.Extra == nil && e.Types == nil && e.Problems == nil && !e.Key
}

// checkExact compares a table with the columns and key the sink would
// create it with: the same names and types, nothing else, and a unique
// index on exactly key that treats NULLs as equal (or a primary key). It
// returns a *SchemaError when they differ, Owned as given (a ledger's
// tables are checked this way whoever created them).
func checkExact(ti *tableInfo, t tableName, cols []column, key []string, isOwned bool) error {
	e := &SchemaError{Table: t.String(), Owned: isOwned, exact: !isOwned}
	want := map[string]bool{}
	for _, c := range cols {
		want[c.name] = true
		tc := ti.col(c.name)
		switch {
		case tc == nil:
			e.Missing = append(e.Missing, c.name)
		case tc.typ != c.typ:
			e.Types = append(e.Types, fmt.Sprintf("%s: table has %s, sink needs %s", c.name, tc.typ, c.typ))
		}
	}
	for _, tc := range ti.cols {
		if !want[tc.name] {
			e.Extra = append(e.Extra, tc.name)
		}
	}
	if u := ti.uniqueOn(key); u == nil || !(u.nullsEqual || u.primary) {
		e.Key, e.WantKey = true, key
	}
	if e.empty() {
		return nil
	}
	return e
}

// bind checks that an existing table can take cols — each column present,
// of a type that stores its kind, not generated; every other column
// nullable or with a default; a unique constraint on exactly key — and
// sets each column's target. It returns a *SchemaError naming every
// problem, and whether the unique constraint treats NULL keys as equal
// (or no key column can be NULL). A nil key needs no constraint.
func bind(ti *tableInfo, t tableName, cols []column, key []string) (nullsEqual bool, err error) {
	e := &SchemaError{Table: t.String()}
	want := map[string]bool{}
	for i := range cols {
		c := &cols[i]
		want[c.name] = true
		tc := ti.col(c.name)
		acc := accepts[c.kind]
		switch {
		case tc == nil:
			e.Missing = append(e.Missing, fmt.Sprintf("%s (%s)", c.name, ddlType(c.typ)))
			continue
		case tc.generated:
			e.Problems = append(e.Problems, fmt.Sprintf("column %s is generated, but the pipeline writes it", c.name))
			continue
		case !contains(acc.bases, tc.base):
			e.Types = append(e.Types, fmt.Sprintf("column %s is %s; the pipeline writes %s values (needs %s)", c.name, tc.typ, kindName(c.kind), acc.want))
			continue
		case tc.base == "numeric" && tc.prec > 0 && (tc.scale < 0 || tc.scale > tc.prec):
			e.Types = append(e.Types, fmt.Sprintf("column %s is %s: a negative scale or a scale above the precision is not supported", c.name, tc.typ))
			continue
		}
		c.to = &target{typ: tc.typ, base: tc.base, notNull: tc.notNull, prec: tc.prec, scale: tc.scale, maxChars: tc.maxChars}
	}
	for _, tc := range ti.cols {
		if !want[tc.name] && tc.notNull && !tc.hasDefault {
			e.Problems = append(e.Problems, fmt.Sprintf("column %s is NOT NULL without a default, and the pipeline does not write it (give it a default, or drop NOT NULL)", tc.name))
		}
	}
	u := ti.uniqueOn(key)
	switch {
	case key == nil: // a table of records needs no key
	case u == nil:
		e.Key, e.WantKey = true, key
	default:
		nullsEqual = u.nullsEqual
		if !nullsEqual {
			nullsEqual = true
			for _, k := range key {
				if tc := ti.col(k); tc == nil || !tc.notNull {
					nullsEqual = false
				}
			}
		}
	}
	if e.empty() {
		return nullsEqual, nil
	}
	return nullsEqual, e
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fit returns why v cannot be stored in a column of target to as it is
// ("" when it can): NULL in a NOT NULL column, an integer outside the
// column's range, a number with more digits than numeric(p,s) keeps (which
// PostgreSQL would round, or refuse), a string longer than varchar(n).
func (to *target) fit(v row.Value, loc *time.Location) string {
	if to == nil {
		return ""
	}
	if v.Kind == row.KindNull {
		if to.notNull {
			return "the value is NULL and the column is NOT NULL"
		}
		return ""
	}
	switch to.base {
	case "int2", "int4":
		lo, hi := int64(math.MinInt16), int64(math.MaxInt16)
		if to.base == "int4" {
			lo, hi = math.MinInt32, math.MaxInt32
		}
		if v.I < lo || v.I > hi {
			return fmt.Sprintf("%d is outside the range of %s", v.I, to.typ)
		}
	case "numeric":
		if to.prec == 0 {
			return ""
		}
		var text []byte
		if v.Kind == row.KindInt {
			text = fmt.Appendf(nil, "%d", v.I)
		} else {
			text = row.FormatDecimal(nil, v.D)
		}
		return numericFit(string(text), to)
	case "varchar":
		if to.maxChars > 0 && v.Kind == row.KindString {
			if n := utf8.RuneCountInString(v.S); n > to.maxChars {
				return fmt.Sprintf("the value has %d characters, %s keeps %d", n, to.typ, to.maxChars)
			}
		}
	}
	return ""
}

// numericFit returns why the decimal literal s does not fit numeric(p,s)
// of to without rounding, or "".
func numericFit(s string, to *target) string {
	digits := strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	frac = strings.TrimRight(frac, "0") // 20.000 is 20.00 exactly
	whole = strings.TrimLeft(whole, "0")
	if len(frac) > to.scale {
		return fmt.Sprintf("%s has %d decimal places and %s keeps %d: PostgreSQL would round it", s, len(frac), to.typ, to.scale)
	}
	if len(whole) > to.prec-to.scale {
		return fmt.Sprintf("%s has %d digits before the decimal point and %s allows %d", s, len(whole), to.typ, to.prec-to.scale)
	}
	return ""
}

// describeRow names a result row by its window start and key:
// "window_start=2026-09-01T10:00:00+09:00 store_id=S1".
func describeRow(r *changelog.Row, keyNames []string, loc *time.Location) string {
	var b strings.Builder
	b.WriteString("window_start=")
	b.WriteString(row.FormatTime(r.WindowStart, loc))
	for i, v := range r.Key {
		b.WriteByte(' ')
		if i < len(keyNames) {
			b.WriteString(keyNames[i])
		}
		b.WriteByte('=')
		if v.Kind == row.KindNull {
			b.WriteString("NULL")
		} else {
			b.Write(v.AppendText(nil, loc))
		}
	}
	return b.String()
}
