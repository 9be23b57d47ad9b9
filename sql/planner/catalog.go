package planner

import (
	"strings"
	"unicode"

	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/nexschema"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sql/parser"
)

// table is a CREATE TABLE: its connector, options and columns. Whether it
// is a source (read in FROM) or a sink (INSERT INTO) is decided by use.
type table struct {
	def       *parser.CreateTable
	name      string
	connector string
	connAt    parser.Pos
	opts      *optSet
	// cols are the table's columns (qualifier: the table's name), their
	// values naming the source fields they read.
	cols []*col
	// phys are the physical columns in order (a sink's output columns).
	phys []*physCol
	// timeField is the source field read as the event time, with the
	// event-time format from its column (TO_TIMESTAMP's pattern, epoch ms);
	// wmDelay the watermark's delay. wm is nil without a WATERMARK.
	wm *watermark
	// shadowed are physical columns a TO_TIMESTAMP computed column reads
	// as the event time: the field is a timestamp, not the column's type.
	shadowed map[string]string
	// role is "" until used, then "source", "input" or "sink".
	role string
	// used marks columns read by some query (for the source schema).
	used map[string]bool
	// lookup marks a bounded file table without a WATERMARK joined FOR
	// SYSTEM_TIME AS OF a processing time (a lookup table): its rows are
	// versions numbered by their line (lookupField), all before any
	// event (checkAsOf).
	lookup bool
}

// physCol is a physical column (a ROW's fields flattened: person.id).
type physCol struct {
	name  string // as declared (nested: dotted)
	field string // the source field
	t     typ
	at    parser.Pos
}

// watermark is a table's WATERMARK FOR column AS column - INTERVAL.
type watermark struct {
	at      parser.Pos
	column  string
	field   string
	delayMs int64
	// format is the event-time format of the field: "" (rfc3339 or the
	// generator's times), "layout" (Layout), "epoch_ms", "epoch_s".
	format, layout string
}

// createTable checks a CREATE TABLE and records it.
func (pl *planner) createTable(ct *parser.CreateTable) error {
	name := ct.Name.Last().Name
	if err := pl.checkQualified(ct.Name); err != nil {
		return err
	}
	if _, ok := pl.tables[name]; ok && !ct.IfNotExists {
		return pl.errAt(ct.Name.Position(), "table %s is declared twice", name)
	}
	if _, ok := pl.views[name]; ok {
		return pl.errAt(ct.Name.Position(), "%s is already a view", name)
	}
	if ct.Like != nil {
		return pl.errAt(ct.Like.Position(), "CREATE TABLE … LIKE is not supported: list the columns and options")
	}
	opts, err := pl.newOptSet(ct.With)
	if err != nil {
		return err
	}
	t := &table{def: ct, name: name, opts: opts, shadowed: map[string]string{}, used: map[string]bool{}}
	if o, ok := opts.first("connector", "connector.type"); ok {
		t.connector, t.connAt = o.Value, o.ValueAt
	} else {
		for _, o := range opts.list {
			if h := suggest.Hint(o.Key, []string{"connector"}); h != "" {
				return pl.errAt(o.KeyAt, "unknown option '%s' for table %s%s: a table names its connector with 'connector'", o.Key, name, h)
			}
		}
		return pl.errAt(ct.At, "table %s has no 'connector' option: WITH ('connector' = 'nexmark' | 'filesystem' | 'kafka' | 'blackhole' | 'print' | 'sqlite' | 'jdbc' | 'upsert-kafka')", name)
	}
	if !knownConnector[t.connector] {
		return pl.errAt(t.connAt, "unknown connector '%s'%s (connectors: %s)", t.connector, hintOf(t.connector, connectorNames()), strings.Join(connectorNames(), ", "))
	}
	if err := pl.tableColumns(t); err != nil {
		return err
	}
	pl.tables[name] = t
	pl.tableOrder = append(pl.tableOrder, t)
	return nil
}

// checkQualified refuses a catalog or database other than the defaults.
func (pl *planner) checkQualified(n *parser.Name) error {
	switch len(n.Parts) {
	case 1:
		return nil
	case 2:
		if n.Parts[0].Name == "default_database" {
			return nil
		}
	case 3:
		if n.Parts[0].Name == "default_catalog" && n.Parts[1].Name == "default_database" {
			return nil
		}
	}
	return pl.errAt(n.Position(), "%s: tidemark has one catalog; name tables without a catalog or database", n.String())
}

// tableColumns builds t's columns: physical ones (a nexmark table's
// mapped onto the generator's fields), computed ones, the watermark.
func (pl *planner) tableColumns(t *table) error {
	ct := t.def
	nex := t.connector == "nexmark"
	var nexFields map[string]row.Kind
	if nex {
		nexFields = map[string]row.Kind{}
		for _, f := range nexschema.Fields() {
			nexFields[f.Name] = f.Kind
		}
	}
	seen := map[string]bool{}
	var computed []*parser.ColumnDef
	for _, c := range ct.Columns {
		if seen[c.Name.Name] {
			return pl.errAt(c.Name.At, "column %s is declared twice", c.Name.Name)
		}
		seen[c.Name.Name] = true
		if c.MetadataSet {
			return pl.errAt(c.At, "METADATA columns are not supported: tidemark's record metadata (partition, offset, arrival time) is read with 'tidemark.' options (docs/sql.md)")
		}
		if c.Computed != nil {
			computed = append(computed, c)
			continue
		}
		cl := &col{qual: t.name, name: c.Name.Name}
		if c.Type.Name == "ROW" {
			if t.formatFlat() {
				return pl.errAt(c.Type.At, "a ROW column needs nested records (JSON or Avro); CSV rows are flat")
			}
			for _, fd := range c.Type.Fields {
				ft, err := pl.sqlTypeOf(fd.Type)
				if err != nil {
					return err
				}
				field := c.Name.Name + "." + fd.Name.Name
				if nex {
					field = snake(c.Name.Name) + "." + snake(fd.Name.Name)
					k, ok := nexFields[field]
					if !ok {
						return pl.errAt(fd.Name.At, "%s.%s is not a field of the Nexmark generator (%s)", c.Name.Name, fd.Name.Name, nexmarkSQLNames(c.Name.Name))
					}
					if k != ft.kind {
						return pl.errAt(fd.Type.At, "%s.%s is %s in the generator, not %s", c.Name.Name, fd.Name.Name, sqlKind(k), ft)
					}
				}
				cl.fields = append(cl.fields, &col{qual: t.name, name: fd.Name.Name, v: val{text: field, field: field, t: ft}})
				t.phys = append(t.phys, &physCol{name: c.Name.Name + "." + fd.Name.Name, field: field, t: ft, at: fd.Name.At})
			}
			t.cols = append(t.cols, cl)
			continue
		}
		ct, err := pl.sqlTypeOf(c.Type)
		if err != nil {
			return err
		}
		field := c.Name.Name
		if nex {
			field = snake(field)
			k, ok := nexFields[field]
			if !ok {
				return pl.errAt(c.Name.At, "%s is not a column of the Nexmark generator (columns: event_type, person, auction, bid, and dateTime computed from them)", c.Name.Name)
			}
			if k != ct.kind {
				return pl.errAt(c.Type.At, "%s is %s in the generator, not %s", c.Name.Name, sqlKind(k), ct)
			}
		}
		cl.v = val{text: field, field: field, t: ct}
		t.cols = append(t.cols, cl)
		t.phys = append(t.phys, &physCol{name: c.Name.Name, field: field, t: ct, at: c.Name.At})
	}
	// Computed columns, in order: each may use the physical columns.
	r := &rel{cols: t.cols}
	for _, c := range computed {
		v, err := pl.computedColumn(t, r, c)
		if err != nil {
			return err
		}
		cl := &col{qual: t.name, name: c.Name.Name, v: v}
		t.cols = append(t.cols, cl)
		r.cols = t.cols
	}
	if w := ct.Watermark; w != nil {
		if err := pl.watermarkOf(t, w); err != nil {
			return err
		}
	}
	if pk := ct.PrimaryKey; pk != nil {
		for _, k := range pk.Columns {
			if !seen[k.Name] {
				return pl.errAt(k.At, "primary key column %s is not a column of %s", k.Name, t.name)
			}
		}
	}
	return nil
}

// formatFlat reports whether the table's format has flat rows (CSV).
func (t *table) formatFlat() bool {
	for _, k := range []string{"format", "format.type", "value.format"} {
		for _, o := range t.def.With {
			if o.Key == k && strings.EqualFold(o.Value, "csv") {
				return true
			}
		}
	}
	return false
}

// nexmarkDateTime is the computed dateTime column of Flink's Nexmark DDL
// as translated here: the generator's date_time field holds exactly it.
const nexmarkDateTime = `(event_type == 0) ? person.date_time : ((event_type == 1) ? auction.date_time : bid.date_time)`

// computedColumn translates `name AS expr`. TO_TIMESTAMP(col, 'pattern')
// and TO_TIMESTAMP_LTZ(col, 3|0) read the column's source field as a
// timestamp (the event time's format: docs/sql.md).
func (pl *planner) computedColumn(t *table, r *rel, c *parser.ColumnDef) (val, error) {
	if fc, ok := c.Computed.(*parser.FuncCall); ok {
		switch fc.FuncName() {
		case "TO_TIMESTAMP", "TO_TIMESTAMP_LTZ":
			return pl.toTimestampColumn(t, r, c, fc)
		}
	}
	v, err := pl.expr(c.Computed, &ectx{rel: r, where: "a computed column"})
	if err != nil {
		return val{}, err
	}
	if t.connector == "nexmark" && v.text == nexmarkDateTime {
		return val{text: "date_time", field: "date_time", t: tTime}, nil
	}
	return v, nil
}

func (pl *planner) toTimestampColumn(t *table, r *rel, c *parser.ColumnDef, fc *parser.FuncCall) (val, error) {
	name := fc.FuncName()
	if len(fc.Args) < 1 || len(fc.Args) > 2 {
		return val{}, pl.errAt(fc.At, "%s takes a column and a pattern (or precision)", name)
	}
	ref, ok := fc.Args[0].(*parser.ColumnRef)
	if !ok {
		return val{}, pl.errAt(fc.Args[0].Position(), "%s in a computed column reads a physical column: %s(col, …)", name, name)
	}
	src, err := pl.resolve(r, ref)
	if err != nil {
		return val{}, err
	}
	if src.v.field == "" {
		return val{}, pl.errAt(ref.Position(), "%s reads a physical column; %s is computed", name, ref.String())
	}
	v := val{text: src.v.field, field: src.v.field, t: typ{row.KindTime, "TIMESTAMP(3)"}}
	conv := &timeConv{column: c.Name.Name, field: src.v.field}
	switch {
	case name == "TO_TIMESTAMP" && src.v.t.kind == row.KindString:
		pattern := "yyyy-MM-dd HH:mm:ss"
		if len(fc.Args) == 2 {
			lit, ok := fc.Args[1].(*parser.Literal)
			if !ok || lit.Kind != parser.LitString {
				return val{}, pl.errAt(fc.Args[1].Position(), "TO_TIMESTAMP's pattern must be a constant string")
			}
			pattern = lit.Text
		}
		layout, err := expr.JavaLayout(pattern)
		if err != nil {
			return val{}, pl.errAt(fc.Args[1].Position(), "TO_TIMESTAMP's pattern: %v", err)
		}
		conv.format, conv.layout = "layout", layout
	case name == "TO_TIMESTAMP_LTZ" && src.v.t.kind == row.KindInt:
		prec := "3"
		if len(fc.Args) == 2 {
			lit, ok := fc.Args[1].(*parser.Literal)
			if !ok || lit.Kind != parser.LitNumber || lit.Text != "0" && lit.Text != "3" {
				return val{}, pl.errAt(fc.Args[1].Position(), "TO_TIMESTAMP_LTZ's precision is 3 (epoch milliseconds) or 0 (epoch seconds)")
			}
			prec = lit.Text
		}
		conv.format = map[string]string{"3": "epoch_ms", "0": "epoch_s"}[prec]
	default:
		return val{}, pl.errAt(fc.At, "%s(%s) reads a STRING column with a pattern (TO_TIMESTAMP) or a BIGINT of epoch ms or s (TO_TIMESTAMP_LTZ); %s is %s", name, ref.String(), ref.String(), src.v.t)
	}
	if prev, ok := pl.conversions[t]; ok {
		return val{}, pl.errAt(c.At, "a second time conversion column (the first is %s): one column of a table can be its event time", prev.column)
	}
	pl.conversions[t] = conv
	t.shadowed[src.name] = c.Name.Name
	return v, nil
}

// timeConv is a computed column converting a physical column into the
// event time.
type timeConv struct {
	column, field  string
	format, layout string
}

// watermarkOf reads WATERMARK FOR col AS col [- INTERVAL …].
func (pl *planner) watermarkOf(t *table, w *parser.WatermarkDef) error {
	var c *col
	for _, x := range t.cols {
		if x.name == w.Column.Name {
			c = x
		}
	}
	if c == nil {
		return pl.errAt(w.Column.At, "WATERMARK FOR %s: no such column%s", w.Column.Name, hintOf(w.Column.Name, colNames(&rel{cols: t.cols}, "")))
	}
	if c.v.t.kind != row.KindTime {
		return pl.errAt(w.Column.At, "WATERMARK FOR %s: the column is %s; the event time is a TIMESTAMP (for a string or epoch column, compute one: ts AS TO_TIMESTAMP(col, 'yyyy-MM-dd HH:mm:ss'))", w.Column.Name, c.v.t)
	}
	if c.v.field == "" {
		return pl.errAt(w.Column.At, "WATERMARK FOR %s: the event time is a column of the records (or TO_TIMESTAMP of one), not a computed expression", w.Column.Name)
	}
	wm := &watermark{at: w.At, column: c.name, field: c.v.field}
	if conv, ok := pl.conversions[t]; ok && conv.column == c.name {
		wm.format, wm.layout = conv.format, conv.layout
	}
	switch e := w.Expr.(type) {
	case *parser.ColumnRef:
		if e.String() != c.name {
			return pl.errAt(e.Position(), "WATERMARK FOR %s AS %s: the watermark is the column minus a delay (%s - INTERVAL '5' SECOND)", c.name, e.String(), c.name)
		}
	case *parser.Binary:
		ref, ok := e.L.(*parser.ColumnRef)
		iv, ok2 := e.R.(*parser.IntervalLit)
		if !ok || !ok2 || e.Op != "-" || ref.String() != c.name {
			return pl.errAt(e.At, "WATERMARK FOR %s: write AS %s - INTERVAL 'n' SECOND (a bounded out-of-orderness)", c.name, c.name)
		}
		ms, err := pl.intervalMs(iv)
		if err != nil {
			return err
		}
		if ms < 0 {
			return pl.errAt(iv.At, "a negative watermark delay: the watermark would run ahead of the event time")
		}
		wm.delayMs = ms
	default:
		return pl.errAt(w.Expr.Position(), "WATERMARK FOR %s: write AS %s - INTERVAL 'n' SECOND (a bounded out-of-orderness)", c.name, c.name)
	}
	t.wm = wm
	return nil
}

// snake turns a Flink Nexmark column name into the generator's field
// name: emailAddress → email_address, dateTime → date_time.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// nexmarkSQLNames lists the Flink names of a Nexmark ROW's fields.
func nexmarkSQLNames(row string) string {
	var out []string
	prefix := snake(row) + "."
	for _, f := range nexschema.Fields() {
		if n, ok := strings.CutPrefix(f.Name, prefix); ok {
			out = append(out, camel(n))
		}
	}
	return strings.Join(out, ", ")
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func sqlKind(k row.Kind) string {
	switch k {
	case row.KindInt:
		return "BIGINT"
	case row.KindDecimal:
		return "DECIMAL"
	case row.KindString:
		return "VARCHAR"
	case row.KindTime:
		return "TIMESTAMP(3)"
	case row.KindBool:
		return "BOOLEAN"
	}
	return k.String()
}
