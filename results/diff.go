package results

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/row"
)

// The columns every result table has around its keys and values.
const (
	colWindowStart = "window_start"
	colWindowEnd   = "window_end"
)

// DiffOptions adjust Diff. The zero value compares every row exactly.
type DiffOptions struct {
	// Tolerance is the largest absolute difference between two numeric
	// values that still counts as equal for the verdict (Differs). Such
	// rows are listed, marked within tolerance. Default 0: exact.
	Tolerance Decimal
	// KeyColumns are the key columns besides window_start (which is
	// always part of the key). Default: the columns of the tables' unique
	// key on window_start (the sinks' primary key or unique constraint).
	KeyColumns []string
	// IgnoreColumns are left out of the comparison, in addition to the
	// bookkeeping and lineage columns (IsBookkeeping).
	IgnoreColumns []string
	// From and To restrict the comparison to windows with
	// From <= window_start < To; a zero time is unbounded.
	From, To time.Time
	// MaxRows bounds each list of the report (rows only in one version,
	// changed rows, totals); the counts are always complete. 0: no bound.
	MaxRows int
	// AllTotals lists the totals of every key value, not only of those
	// whose totals differ.
	AllTotals bool
	// Location is the zone in which PostgreSQL timestamps are shown.
	// Default: the session's TimeZone setting. SQLite timestamps are
	// shown as stored.
	Location *time.Location
}

// Field is a column and its value; Value is nil for NULL.
type Field struct {
	Column string
	Value  *string
}

// Fields are a row's columns in table order. They marshal to a JSON object
// whose keys keep that order; values are strings (exact) or null.
type Fields []Field

// MarshalJSON implements json.Marshaler.
func (f Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(x.Column)
		v, _ := json.Marshal(x.Value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DiffReport is what Diff finds. Its JSON form is the output of
// `tidemark diff --format json` (docs/reprocessing.md).
type DiffReport struct {
	Table string   `json:"table"` // the result table (serving name)
	Old   DiffSide `json:"old"`   // the first version given
	New   DiffSide `json:"new"`   // the second; differences are new − old
	// KeyColumns: window_start and the key columns. ValueColumns: the
	// columns compared. NumericColumns: the value columns summed in the
	// totals. IgnoredColumns: bookkeeping, lineage and --ignore-columns.
	KeyColumns     []string `json:"key_columns"`
	ValueColumns   []string `json:"value_columns"`
	NumericColumns []string `json:"numeric_columns"`
	IgnoredColumns []string `json:"ignored_columns"`
	// Columns present in one version only (not compared; a difference).
	ColumnsOnlyInOld []string `json:"columns_only_in_old"`
	ColumnsOnlyInNew []string `json:"columns_only_in_new"`
	Tolerance        Decimal  `json:"tolerance"`
	From             string   `json:"from,omitempty"` // the window_start range, when restricted
	To               string   `json:"to,omitempty"`

	OnlyInOld []DiffRow    `json:"only_in_old"`
	OnlyInNew []DiffRow    `json:"only_in_new"`
	Changed   []ChangedRow `json:"changed"`
	// Totals per value of each key column other than window_start (per
	// store, per region …): those that differ, or all with AllTotals.
	Totals  []KeyTotals `json:"totals"`
	Overall Totals      `json:"overall"` // over all rows compared
	Counts  DiffCounts  `json:"counts"`
	// Differs is the verdict: rows only in one version, a value differing
	// beyond the tolerance, or columns only in one version.
	Differs bool `json:"differs"`
}

// DiffSide names one of the two versions compared.
type DiffSide struct {
	Version string `json:"version"`
	Table   string `json:"table"`
	Rows    int64  `json:"rows"` // rows compared (within the range)
}

// DiffRow is a row present in one version only.
type DiffRow struct {
	Key    Fields `json:"key"`
	Values Fields `json:"values"`
}

// ChangedRow is a row whose values differ between the versions.
type ChangedRow struct {
	Key     Fields         `json:"key"`
	Columns []ColumnChange `json:"columns"` // the columns that differ
	// WithinTolerance: every difference is numeric and within the
	// tolerance, so the row does not make the versions differ.
	WithinTolerance bool `json:"within_tolerance"`
}

// ColumnChange is one value that differs.
type ColumnChange struct {
	Column string  `json:"column"`
	Old    *string `json:"old"`
	New    *string `json:"new"`
	// Difference is new − old, exact, for two numbers; nil otherwise.
	Difference      *Decimal `json:"difference"`
	WithinTolerance bool     `json:"within_tolerance"`
}

// KeyTotals are the totals of the rows with one value of one key column.
type KeyTotals struct {
	Column string  `json:"column"`
	Value  *string `json:"value"`
	Totals
	Differs bool `json:"differs"`
}

// Totals are row counts and sums of the numeric columns in both versions.
type Totals struct {
	OldRows int64 `json:"old_rows"`
	NewRows int64 `json:"new_rows"`
	Sums    []Sum `json:"sums"`
}

// Sum is the sum of one numeric column in both versions (NULLs add
// nothing), and new − old.
type Sum struct {
	Column     string  `json:"column"`
	Old        Decimal `json:"old"`
	New        Decimal `json:"new"`
	Difference Decimal `json:"difference"`
}

// DiffCounts count the rows by outcome, over all rows compared (the lists
// may be bounded by MaxRows).
type DiffCounts struct {
	Same            int64 `json:"same"`
	OnlyInOld       int64 `json:"only_in_old"`
	OnlyInNew       int64 `json:"only_in_new"`
	Changed         int64 `json:"changed"`          // beyond the tolerance
	WithinTolerance int64 `json:"within_tolerance"` // changed, within it
	// KeyTotals is how many key values' totals the report has to show
	// (those that differ, or all with AllTotals), over every key column;
	// Totals lists at most MaxRows per key column.
	KeyTotals int64 `json:"key_totals"`
	// Truncated: a list holds fewer entries than its count (MaxRows).
	Truncated bool `json:"truncated"`
}

// kind says how a column's values are compared.
type kind int

const (
	kText kind = iota // exact text
	kAuto             // SQLite TEXT: plain decimals compare as numbers, other text exactly
	kTime             // instants
	kInt              // integers
	kNum              // exact decimals (PostgreSQL numeric as text, floats)
	kBool             // false < true
)

func (k kind) numeric() bool { return k == kInt || k == kNum || k == kAuto }

// colSpec is a column as Diff reads it.
type colSpec struct {
	name string
	kind kind
	sel  string // the SELECT expression
	ord  string // the ORDER BY expression (keys)
}

// spec returns how to read and order column c.
func (d *DB) spec(c column) colSpec {
	q := quote(c.name)
	s := colSpec{name: c.name, sel: q, ord: q}
	t := strings.ToLower(c.typ)
	if d.dialect == SQLite {
		isTime := strings.EqualFold(c.name, colWindowStart) || strings.EqualFold(c.name, colWindowEnd)
		switch {
		case isTime && (t == "text" || t == ""):
			s.kind = kTime
			s.ord = sqliteMillis(q)
		case strings.Contains(t, "int"):
			s.kind = kInt
		case strings.Contains(t, "real"), strings.Contains(t, "floa"), strings.Contains(t, "doub"):
			s.kind = kNum
		default:
			s.kind = kAuto
			s.ord = q + " COLLATE BINARY"
		}
	} else {
		switch {
		case strings.HasPrefix(t, "timestamp"):
			s.kind = kTime
		case t == "bigint", t == "integer", t == "smallint":
			s.kind = kInt
		case strings.HasPrefix(t, "numeric"), t == "real", t == "double precision":
			s.kind = kNum
			s.sel = q + "::text"
		case t == "boolean":
			s.kind = kBool
		case t == "text", strings.HasPrefix(t, "character"):
			s.kind = kText
			s.ord = q + ` COLLATE "C"`
		default:
			s.kind = kText
			s.sel = q + "::text"
			s.ord = q + `::text COLLATE "C"`
		}
	}
	s.ord += " ASC NULLS FIRST"
	return s
}

// cell is a value read.
type cell struct {
	null bool
	s    string    // as shown
	t    time.Time // kTime
	i    int64     // kInt, kBool
}

func (c cell) ptr() *string {
	if c.null {
		return nil
	}
	s := c.s
	return &s
}

// toCell converts a value scanned from the database.
func toCell(k kind, v any, loc *time.Location) (cell, error) {
	var c cell
	switch x := v.(type) {
	case nil:
		c.null = true
		return c, nil
	case time.Time:
		c.t, c.s = x, formatInstant(x, loc)
		return c, nil
	case bool:
		c.s = strconv.FormatBool(x)
		if x {
			c.i = 1
		}
		return c, nil
	case int64:
		c.i, c.s = x, strconv.FormatInt(x, 10)
	case int32:
		c.i, c.s = int64(x), strconv.FormatInt(int64(x), 10)
	case int16:
		c.i, c.s = int64(x), strconv.FormatInt(int64(x), 10)
	case int:
		c.i, c.s = int64(x), strconv.Itoa(x)
	case float64:
		c.s = strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		c.s = strconv.FormatFloat(float64(x), 'f', -1, 32)
	case string:
		c.s = x
	case []byte:
		c.s = string(x)
	default:
		c.s = fmt.Sprint(x)
	}
	switch k {
	case kTime:
		t, err := time.Parse(time.RFC3339Nano, c.s)
		if err != nil {
			return c, fmt.Errorf("%q is not an RFC 3339 timestamp", c.s)
		}
		c.t = t
	case kInt:
		if _, ok := v.(string); ok {
			i, err := strconv.ParseInt(c.s, 10, 64)
			if err != nil {
				return c, fmt.Errorf("%q is not an integer", c.s)
			}
			c.i = i
		}
	}
	return c, nil
}

// formatInstant shows t in loc as RFC 3339, as the sinks write instants
// (milliseconds only when not zero; finer digits when present).
func formatInstant(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	if t.Nanosecond()%int(time.Millisecond) == 0 {
		return row.FormatTime(t.UnixMilli(), loc)
	}
	return t.In(loc).Format(time.RFC3339Nano)
}

// compareKey orders two key values as the ORDER BY of spec does: NULL
// first, then by kind.
func compareKey(k kind, a, b cell) int {
	if a.null || b.null {
		switch {
		case a.null && b.null:
			return 0
		case a.null:
			return -1
		}
		return 1
	}
	switch k {
	case kTime:
		return a.t.Compare(b.t)
	case kInt, kBool:
		return cmp.Compare(a.i, b.i)
	case kNum:
		x, err1 := ParseDecimal(a.s)
		y, err2 := ParseDecimal(b.s)
		if err1 == nil && err2 == nil {
			return x.Cmp(y)
		}
	}
	return strings.Compare(a.s, b.s)
}

// number returns a value of a numeric column as a Decimal; ok is false
// when it is not a number (kAuto: not a plain decimal literal).
func number(k kind, c cell) (Decimal, bool) {
	if k == kAuto && !isPlainDecimal(c.s) {
		return Decimal{}, false
	}
	if k == kInt {
		return DecimalFromInt(c.i), true
	}
	d, err := ParseDecimal(c.s)
	return d, err == nil
}

// compareValue compares an old and a new value: equal, and new − old when
// both are numbers.
func compareValue(k kind, a, b cell) (equal bool, diff *Decimal) {
	switch {
	case a.null && b.null:
		return true, nil
	case a.null || b.null:
		return false, nil
	}
	switch k {
	case kTime:
		return a.t.Equal(b.t), nil
	case kInt, kNum, kAuto:
		x, ok1 := number(k, a)
		y, ok2 := number(k, b)
		if ok1 && ok2 {
			dd := y.Sub(x)
			return dd.Sign() == 0, &dd
		}
	}
	return a.s == b.s, nil
}

// mergeKind is the kind to compare a column read as a (old) and b (new).
func mergeKind(a, b kind) kind {
	switch {
	case a == b:
		return a
	case a.numeric() && b.numeric():
		return kAuto
	}
	return kText
}

// tableSide is one version's table as Diff reads it.
type tableSide struct {
	version string
	name    qname
	cols    []column
	key     []string
}

// Diff compares versions oldVersion and newVersion of table (the tables
// VersionTable(table, version)) row by row on window_start and the key
// columns, and sums the numeric columns per key value. It returns a
// *NoTableError when a version's table does not exist, and an error when
// the two tables have different keys or their rows cannot be read in key
// order (a key that repeats).
//
// Rows are read in key order from both tables in one read transaction
// (SQLite) or one repeatable-read snapshot (PostgreSQL), so memory does
// not grow with the tables; only the totals per key value are kept.
func (d *DB) Diff(ctx context.Context, table, oldVersion, newVersion string, o DiffOptions) (*DiffReport, error) {
	if err := checkTableName(table); err != nil {
		return nil, err
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return nil, fmt.Errorf("the range is empty: from %s is not before to %s", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	if o.Tolerance.Sign() < 0 {
		return nil, fmt.Errorf("negative tolerance %s", o.Tolerance)
	}
	loc := o.Location
	if loc == nil {
		loc = d.loc
	}
	n := d.name(table)
	sides := [2]*tableSide{{version: oldVersion}, {version: newVersion}}
	for _, s := range sides {
		t, err := d.versionTable(ctx, d.q(), n, s.version)
		if err != nil {
			return nil, err
		}
		s.name = t
		if s.cols, err = d.columns(ctx, d.q(), t); err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if len(o.KeyColumns) == 0 {
			if s.key, err = d.uniqueKey(ctx, d.q(), t); err != nil {
				return nil, fmt.Errorf("%s: %w", t, err)
			}
			if s.key == nil {
				return nil, fmt.Errorf("%s has no primary key or unique index starting with window_start: name the key columns (--key-columns)", t)
			}
		}
	}
	plan, err := d.planDiff(sides, o)
	if err != nil {
		return nil, err
	}
	r := &DiffReport{
		Table:            table,
		Old:              DiffSide{Version: oldVersion, Table: sides[0].name.String()},
		New:              DiffSide{Version: newVersion, Table: sides[1].name.String()},
		KeyColumns:       names(plan.keys[0]),
		ValueColumns:     names(plan.vals[0]),
		IgnoredColumns:   plan.ignored,
		ColumnsOnlyInOld: plan.onlyOld,
		ColumnsOnlyInNew: plan.onlyNew,
		Tolerance:        o.Tolerance,
		NumericColumns:   []string{},
		OnlyInOld:        []DiffRow{},
		OnlyInNew:        []DiffRow{},
		Changed:          []ChangedRow{},
		Totals:           []KeyTotals{},
	}
	if !o.From.IsZero() {
		r.From = o.From.Format(time.RFC3339Nano)
	}
	if !o.To.IsZero() {
		r.To = o.To.Format(time.RFC3339Nano)
	}
	var queries [2]string
	for i, s := range sides {
		queries[i] = d.selectSQL(s.name, plan.keys[i], plan.vals[i], o.From, o.To)
	}
	m := newMerge(plan, o, loc, r)
	err = d.readBoth(ctx, queries, func(a, b *reader) error {
		a.name, b.name = sides[0].name.String(), sides[1].name.String()
		a.kinds, b.kinds = plan.kinds(0), plan.kinds(1)
		a.nKey, b.nKey = len(plan.keys[0]), len(plan.keys[1])
		a.keyKinds, b.keyKinds = plan.keyKinds, plan.keyKinds
		a.loc, b.loc = loc, loc
		return m.run(a, b)
	})
	if err != nil {
		return nil, err
	}
	m.finish()
	return r, nil
}

// diffPlan is what Diff reads from each table: the key columns (window_start
// first) and the value columns compared, in the same order for both.
type diffPlan struct {
	keys, vals       [2][]colSpec
	keyKinds         []kind // per key column, for ordering
	valKinds         []kind // per value column, for comparing
	ignored          []string
	onlyOld, onlyNew []string
}

func (p *diffPlan) kinds(side int) []kind {
	var ks []kind
	for _, c := range p.keys[side] {
		ks = append(ks, c.kind)
	}
	for _, c := range p.vals[side] {
		ks = append(ks, c.kind)
	}
	return ks
}

func names(cs []colSpec) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out
}

// planDiff matches the two tables' columns.
func (d *DB) planDiff(sides [2]*tableSide, o DiffOptions) (*diffPlan, error) {
	find := func(cols []column, name string) (column, bool) {
		for _, c := range cols {
			if d.sameName(c.name, name) {
				return c, true
			}
		}
		return column{}, false
	}
	// The key.
	var key []string
	if len(o.KeyColumns) > 0 {
		key = []string{colWindowStart}
		for _, k := range o.KeyColumns {
			if !d.sameName(k, colWindowStart) {
				key = append(key, k)
			}
		}
	} else {
		a, b := sides[0].key, sides[1].key
		if !slices.EqualFunc(a, b, d.sameName) {
			return nil, fmt.Errorf("%s is keyed on (%s) but %s on (%s): name the key columns (--key-columns)",
				sides[0].name, strings.Join(a, ", "), sides[1].name, strings.Join(b, ", "))
		}
		key = a
	}
	p := &diffPlan{}
	isKey := func(name string) bool {
		return slices.ContainsFunc(key, func(k string) bool { return d.sameName(k, name) })
	}
	for i, s := range sides {
		for _, k := range key {
			c, ok := find(s.cols, k)
			if !ok {
				return nil, fmt.Errorf("%s has no key column %q", s.name, k)
			}
			p.keys[i] = append(p.keys[i], d.spec(c))
		}
	}
	for j := range key {
		ka, kb := p.keys[0][j].kind, p.keys[1][j].kind
		if ka != kb {
			return nil, fmt.Errorf("key column %q has type %s in %s but %s in %s",
				key[j], typeOf(sides[0].cols, key[j], d), sides[0].name, typeOf(sides[1].cols, key[j], d), sides[1].name)
		}
		p.keyKinds = append(p.keyKinds, ka)
	}
	ignored := func(name string) bool {
		return IsBookkeeping(name) || slices.ContainsFunc(o.IgnoreColumns, func(x string) bool { return d.sameName(x, name) })
	}
	for _, c := range sides[0].cols {
		switch {
		case isKey(c.name):
		case ignored(c.name):
			p.ignored = append(p.ignored, c.name)
		default:
			nc, ok := find(sides[1].cols, c.name)
			if !ok {
				p.onlyOld = append(p.onlyOld, c.name)
				continue
			}
			a, b := d.spec(c), d.spec(nc)
			p.vals[0] = append(p.vals[0], a)
			p.vals[1] = append(p.vals[1], b)
			p.valKinds = append(p.valKinds, mergeKind(a.kind, b.kind))
		}
	}
	for _, c := range sides[1].cols {
		if _, ok := find(sides[0].cols, c.name); !ok && !isKey(c.name) && !ignored(c.name) {
			p.onlyNew = append(p.onlyNew, c.name)
		}
	}
	if p.ignored == nil {
		p.ignored = []string{}
	}
	if p.onlyOld == nil {
		p.onlyOld = []string{}
	}
	if p.onlyNew == nil {
		p.onlyNew = []string{}
	}
	return p, nil
}

func typeOf(cols []column, name string, d *DB) string {
	for _, c := range cols {
		if d.sameName(c.name, name) {
			return c.typ
		}
	}
	return "?"
}

// selectSQL reads a table's key and value columns in key order, within
// [from, to) on window_start. The bounds are literals: PostgreSQL reads
// the query through a cursor.
func (d *DB) selectSQL(t qname, keys, vals []colSpec, from, to time.Time) string {
	var sel, ord []string
	for _, c := range keys {
		sel = append(sel, c.sel)
		ord = append(ord, c.ord)
	}
	for _, c := range vals {
		sel = append(sel, c.sel)
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + t.sql()
	var where []string
	ws := keys[0]
	if !from.IsZero() {
		where = append(where, d.windowStartCmp(quote(ws.name), ">=", from))
	}
	if !to.IsZero() {
		where = append(where, d.windowStartCmp(quote(ws.name), "<", to))
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY " + strings.Join(ord, ", ")
}

// timeLiteral writes t as RFC 3339 with its offset, milliseconds when not
// zero.
func timeLiteral(t time.Time) string {
	if t.Nanosecond() == 0 {
		return t.Format(time.RFC3339)
	}
	return t.Format(time.RFC3339Nano)
}

// windowStartCmp returns the SQL condition "window_start op t", comparing
// instants: PostgreSQL compares timestamptz; SQLite compares the
// milliseconds since the epoch of the stored text and of t (sqliteMillis),
// so equal instants are equal whatever their offsets.
func (d *DB) windowStartCmp(col, op string, t time.Time) string {
	if d.dialect == SQLite {
		return sqliteMillis(col) + " " + op + " " + sqliteMillis(literal(timeLiteral(t)))
	}
	return col + " " + op + " " + literal(timeLiteral(t)) + "::timestamptz"
}

// source yields a query's rows as scanned values; nil at the end.
type source interface {
	next() ([]any, error)
}

// readBoth runs the two queries in one consistent read and hands fn a
// reader of each.
func (d *DB) readBoth(ctx context.Context, queries [2]string, fn func(a, b *reader) error) error {
	if d.dialect == SQLite {
		conn, err := d.sdb.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		// A deferred transaction: one snapshot for both reads, no lock
		// that would hold back a sink.
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		var srcs [2]*sqlSource
		for i, q := range queries {
			rs, err := conn.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rs.Close()
			cols, err := rs.Columns()
			if err != nil {
				return err
			}
			srcs[i] = &sqlSource{rows: rs, n: len(cols)}
		}
		return fn(&reader{src: srcs[0]}, &reader{src: srcs[1]})
	}
	t, err := d.pg.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer t.Rollback(context.WithoutCancel(ctx))
	names := [2]string{"tidemark_diff_old", "tidemark_diff_new"}
	for i, q := range queries {
		if _, err := t.Exec(ctx, "DECLARE "+names[i]+" NO SCROLL CURSOR FOR "+q); err != nil {
			return err
		}
	}
	return fn(&reader{src: &cursorSource{ctx: ctx, tx: t, name: names[0]}},
		&reader{src: &cursorSource{ctx: ctx, tx: t, name: names[1]}})
}

type sqlSource struct {
	rows interface {
		Next() bool
		Scan(...any) error
		Err() error
	}
	n int
}

func (s *sqlSource) next() ([]any, error) {
	if !s.rows.Next() {
		return nil, s.rows.Err()
	}
	vals := make([]any, s.n)
	ptrs := make([]any, s.n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := s.rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, nil
}

// cursorFetch is how many rows a FETCH reads.
const cursorFetch = 1000

// cursorSource reads a PostgreSQL cursor in batches.
type cursorSource struct {
	ctx  context.Context
	tx   pgx.Tx
	name string
	buf  [][]any
	done bool
}

func (c *cursorSource) next() ([]any, error) {
	if len(c.buf) == 0 && !c.done {
		rs, err := c.tx.Query(c.ctx, fmt.Sprintf("FETCH FORWARD %d FROM %s", cursorFetch, c.name))
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			v, err := rs.Values()
			if err != nil {
				rs.Close()
				return nil, err
			}
			c.buf = append(c.buf, v)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
		c.done = len(c.buf) < cursorFetch
	}
	if len(c.buf) == 0 {
		return nil, nil
	}
	v := c.buf[0]
	c.buf = c.buf[1:]
	return v, nil
}

// reader walks one table's rows in key order, checking the order.
type reader struct {
	src      source
	name     string
	kinds    []kind // per selected column
	keyKinds []kind // the key columns' ordering kinds
	nKey     int
	loc      *time.Location
	cur      []cell // nil at the end
	prev     []cell
	n        int64
}

func (r *reader) next() error {
	vals, err := r.src.next()
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	r.prev = r.cur
	if vals == nil {
		r.cur = nil
		return nil
	}
	cells := make([]cell, len(vals))
	for i, v := range vals {
		if cells[i], err = toCell(r.kinds[i], v, r.loc); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	if r.prev != nil && compareKeys(r.keyKinds, r.prev, cells) >= 0 {
		return fmt.Errorf("%s: key (%s) follows (%s): the key repeats or the rows are not in key order (is the key unique?)",
			r.name, keyText(cells[:r.nKey]), keyText(r.prev[:r.nKey]))
	}
	r.cur = cells
	r.n++
	return nil
}

func keyText(cells []cell) string {
	var parts []string
	for _, c := range cells {
		if c.null {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, c.s)
		}
	}
	return strings.Join(parts, ", ")
}

func compareKeys(kinds []kind, a, b []cell) int {
	for i, k := range kinds {
		if c := compareKey(k, a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// merge builds the report from the two readers.
type merge struct {
	p   *diffPlan
	o   DiffOptions
	r   *DiffReport
	loc *time.Location
	// numeric columns: index into vals, and whether every value so far was
	// a number.
	numCols []int
	isNum   []bool
	overall [2][]Decimal
	// totals per key column (1..) and value.
	totals []map[string]*keyAcc
}

type keyAcc struct {
	key  cell
	rows [2]int64
	sums [2][]Decimal
}

func newMerge(p *diffPlan, o DiffOptions, loc *time.Location, r *DiffReport) *merge {
	m := &merge{p: p, o: o, r: r, loc: loc}
	for j, k := range p.valKinds {
		if k.numeric() {
			m.numCols = append(m.numCols, j)
			m.isNum = append(m.isNum, true)
		}
	}
	for s := range m.overall {
		m.overall[s] = make([]Decimal, len(m.numCols))
	}
	m.totals = make([]map[string]*keyAcc, len(p.keyKinds))
	for i := 1; i < len(p.keyKinds); i++ {
		m.totals[i] = map[string]*keyAcc{}
	}
	return m
}

func (m *merge) run(a, b *reader) error {
	if err := a.next(); err != nil {
		return err
	}
	if err := b.next(); err != nil {
		return err
	}
	for a.cur != nil || b.cur != nil {
		c := 0
		switch {
		case a.cur == nil:
			c = 1
		case b.cur == nil:
			c = -1
		default:
			c = compareKeys(m.p.keyKinds, a.cur, b.cur)
		}
		switch {
		case c < 0:
			m.add(0, a.cur)
			m.only(0, a.cur)
			if err := a.next(); err != nil {
				return err
			}
		case c > 0:
			m.add(1, b.cur)
			m.only(1, b.cur)
			if err := b.next(); err != nil {
				return err
			}
		default:
			m.add(0, a.cur)
			m.add(1, b.cur)
			m.compare(a.cur, b.cur)
			if err := a.next(); err != nil {
				return err
			}
			if err := b.next(); err != nil {
				return err
			}
		}
	}
	m.r.Old.Rows, m.r.New.Rows = a.n, b.n
	return nil
}

func (m *merge) full(n int) bool {
	if m.o.MaxRows > 0 && n >= m.o.MaxRows {
		m.r.Counts.Truncated = true
		return true
	}
	return false
}

func (m *merge) fields(specs []colSpec, cells []cell) Fields {
	f := make(Fields, len(specs))
	for i, s := range specs {
		f[i] = Field{Column: s.name, Value: cells[i].ptr()}
	}
	return f
}

func (m *merge) only(side int, cells []cell) {
	nKey := len(m.p.keyKinds)
	list := &m.r.OnlyInOld
	count := &m.r.Counts.OnlyInOld
	if side == 1 {
		list, count = &m.r.OnlyInNew, &m.r.Counts.OnlyInNew
	}
	*count++
	if m.full(len(*list)) {
		return
	}
	*list = append(*list, DiffRow{
		Key:    m.fields(m.p.keys[side], cells[:nKey]),
		Values: m.fields(m.p.vals[side], cells[nKey:]),
	})
}

func (m *merge) compare(a, b []cell) {
	nKey := len(m.p.keyKinds)
	var changes []ColumnChange
	beyond := false
	for j, k := range m.p.valKinds {
		x, y := a[nKey+j], b[nKey+j]
		equal, diff := compareValue(k, x, y)
		if equal {
			continue
		}
		within := diff != nil && diff.Abs().Cmp(m.o.Tolerance) <= 0
		beyond = beyond || !within
		changes = append(changes, ColumnChange{
			Column: m.p.vals[0][j].name, Old: x.ptr(), New: y.ptr(), Difference: diff, WithinTolerance: within,
		})
	}
	if changes == nil {
		m.r.Counts.Same++
		return
	}
	if beyond {
		m.r.Counts.Changed++
	} else {
		m.r.Counts.WithinTolerance++
	}
	if m.full(len(m.r.Changed)) {
		return
	}
	m.r.Changed = append(m.r.Changed, ChangedRow{
		Key: m.fields(m.p.keys[0], a[:nKey]), Columns: changes, WithinTolerance: !beyond,
	})
}

// add adds a row's numeric values to the totals.
func (m *merge) add(side int, cells []cell) {
	nKey := len(m.p.keyKinds)
	vals := make([]Decimal, len(m.numCols))
	has := make([]bool, len(m.numCols))
	for i, j := range m.numCols {
		c := cells[nKey+j]
		if c.null || !m.isNum[i] {
			continue
		}
		d, ok := number(m.p.valKinds[j], c)
		if !ok {
			m.isNum[i] = false
			continue
		}
		vals[i], has[i] = d, true
		m.overall[side][i] = m.overall[side][i].Add(d)
	}
	for k := 1; k < nKey; k++ {
		c := cells[k]
		id := "\x00"
		if !c.null {
			id = "\x01" + c.s
		}
		acc := m.totals[k][id]
		if acc == nil {
			acc = &keyAcc{key: c}
			for s := range acc.sums {
				acc.sums[s] = make([]Decimal, len(m.numCols))
			}
			m.totals[k][id] = acc
		}
		acc.rows[side]++
		for i := range m.numCols {
			if has[i] {
				acc.sums[side][i] = acc.sums[side][i].Add(vals[i])
			}
		}
	}
}

// sums returns the Sums of the numeric columns.
func (m *merge) sums(old, new []Decimal) ([]Sum, bool) {
	out := []Sum{}
	differs := false
	for i, j := range m.numCols {
		if !m.isNum[i] {
			continue
		}
		d := new[i].Sub(old[i])
		differs = differs || d.Sign() != 0
		out = append(out, Sum{Column: m.p.vals[0][j].name, Old: old[i], New: new[i], Difference: d})
	}
	return out, differs
}

func (m *merge) finish() {
	for i, j := range m.numCols {
		if m.isNum[i] {
			m.r.NumericColumns = append(m.r.NumericColumns, m.p.vals[0][j].name)
		}
	}
	m.r.Overall.OldRows, m.r.Overall.NewRows = m.r.Old.Rows, m.r.New.Rows
	m.r.Overall.Sums, _ = m.sums(m.overall[0], m.overall[1])
	for k := 1; k < len(m.p.keyKinds); k++ {
		accs := make([]*keyAcc, 0, len(m.totals[k]))
		for _, a := range m.totals[k] {
			accs = append(accs, a)
		}
		kk := m.p.keyKinds[k]
		slices.SortFunc(accs, func(a, b *keyAcc) int { return compareKey(kk, a.key, b.key) })
		n := 0
		for _, a := range accs {
			sums, differs := m.sums(a.sums[0], a.sums[1])
			differs = differs || a.rows[0] != a.rows[1]
			if !differs && !m.o.AllTotals {
				continue
			}
			m.r.Counts.KeyTotals++
			if m.full(n) {
				continue // counted, not listed
			}
			n++
			m.r.Totals = append(m.r.Totals, KeyTotals{
				Column: m.p.keys[0][k].name, Value: a.key.ptr(),
				Totals:  Totals{OldRows: a.rows[0], NewRows: a.rows[1], Sums: sums},
				Differs: differs,
			})
		}
	}
	c := m.r.Counts
	m.r.Differs = c.OnlyInOld > 0 || c.OnlyInNew > 0 || c.Changed > 0 ||
		len(m.r.ColumnsOnlyInOld) > 0 || len(m.r.ColumnsOnlyInNew) > 0
}

// sqliteMillis is the SQLite expression of the milliseconds since the epoch
// of an RFC 3339 text expr (with its offset): whole seconds from
// strftime('%s') and the milliseconds from strftime('%f') ("SS.SSS"), both
// integers, so the comparison is exact. It avoids unixepoch(…, 'subsec'),
// which needs SQLite 3.42: a view built with it returns no row to an older
// reader (the sqlite3 shell of many distributions).
func sqliteMillis(expr string) string {
	return "(CAST(strftime('%s', " + expr + ") AS INTEGER) * 1000 + CAST(substr(strftime('%f', " + expr + "), 4, 3) AS INTEGER))"
}
