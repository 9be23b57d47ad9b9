package planner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// stageKind is what a planned stage computes.
type stageKind uint8

const (
	stageAgg    stageKind = iota // a windowed (or global) aggregation
	stageSelect                  // a select stage: every kept row at once
	stageJoin                    // a join
	stageUnion                   // a union of stages' rows (UNION ALL)
)

// stageDef is a planned stage: its spec (without name, input and sinks,
// set when the pipeline is assembled), what its rows hold, its sinks.
type stageDef struct {
	kind  stageKind
	st    spec.Stage
	input *stageDef // nil: the source (or, for a join, its sides' inputs)
	// joinIn are a join's sides that read stages (nil: an input).
	joinIn [2]*stageDef
	// unionIn are a union's stages (UNION ALL's branches), in order.
	unionIn []*stageDef
	// out are the fields a reader of the stage sees (changelogSchema's
	// or joinSchema's), by name.
	out map[string]typ
	// windowed says the rows carry meaningful window_start/window_end
	// (false for a global window or a join or select stage).
	windowed bool
	// updating says readers get retractions (emit update or retract).
	updating bool
	// name is set when the pipeline is assembled; base and num name an
	// intermediate stage after its INSERT.
	name       string
	base       string
	num        int
	sinkTables []*table
}

// addStage records a stage, or returns an equal one planned before (a
// view read twice, the same query inserted into two sinks): one stage
// then feeds both.
func (pl *planner) addStage(sd *stageDef) *stageDef {
	for _, x := range pl.stages {
		a, b := x.st, sd.st
		a.Sinks, b.Sinks = nil, nil
		if x.kind == sd.kind && x.input == sd.input && x.joinIn == sd.joinIn && slices.Equal(x.unionIn, sd.unionIn) && reflect.DeepEqual(a, b) {
			return x
		}
	}
	if pl.ins != nil {
		pl.ins.count++
		sd.base, sd.num = pl.ins.sink.name, pl.ins.count
	}
	pl.stages = append(pl.stages, sd)
	return sd
}

// relOfStage is the relation of a stage's rows: its output fields as
// columns. For an aggregation, window_time (window_end − 1 ms, Flink's)
// is the time attribute.
func relOfStage(sd *stageDef, cols []*col) *rel {
	r := &rel{prod: &producer{kind: prodStage, stage: sd}}
	r.cols = cols
	return r
}

// reservedOut are output columns every result row has.
var reservedOut = map[string]bool{
	"window_start": true, "window_end": true, "version": true, "is_final": true, "op": true,
	"watermark_at": true, "updated_at": true, "lineage": true, "event_time": true,
}

// inputFields returns the names a stage reading producer p sees, with
// their types (for name clashes of derived fields).
func (p *producer) fields() map[string]typ {
	switch p.kind {
	case prodStage:
		return p.stage.out
	}
	out := map[string]typ{}
	for _, c := range p.table.phys {
		out[c.field] = c.t
	}
	return out
}

// stageBuilder collects a stage's derived fields over its input.
type stageBuilder struct {
	pl     *planner
	prod   *producer
	fields spec.NamedExprs
	in     map[string]typ  // the input's fields (prod.fields(); read only)
	names  map[string]bool // the derived fields' names
}

func (pl *planner) newBuilder(p *producer) *stageBuilder {
	return &stageBuilder{pl: pl, prod: p, in: p.fields(), names: map[string]bool{}}
}

// taken reports whether n names an input or derived field of the stage.
func (b *stageBuilder) taken(n string) bool {
	if b.names[n] {
		return true
	}
	_, ok := b.in[n]
	return ok
}

// field returns a field of the stage holding v: v's own field, or a
// derived field (named want when free) computing it.
func (b *stageBuilder) field(v val, want string) string {
	if v.field != "" {
		return v.field
	}
	return b.derive(v, want)
}

// named returns a field of the stage holding v named want: v's own field
// when it has that name, else a derived field (want when free).
func (b *stageBuilder) named(v val, want string) string {
	if v.field != "" && (v.field == want || b.taken(want) || !fieldNameOK(want)) {
		return v.field
	}
	return b.derive(v, want)
}

// derive returns a derived field computing v (an equal one when there
// is), named want when free.
func (b *stageBuilder) derive(v val, want string) string {
	for _, f := range b.fields {
		if f.Expr == v.text {
			return f.Name
		}
	}
	name := want
	if name == "" || b.taken(name) || reservedOut[strings.ToLower(name)] || !fieldNameOK(name) {
		base := "__" + strings.Map(func(r rune) rune {
			if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, want)
		if base == "__" {
			base = "__f"
		}
		name = base
		for i := 2; b.taken(name); i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
	}
	b.names[name] = true
	b.fields = append(b.fields, spec.NamedExpr{Name: name, Expr: v.text})
	return name
}

// fieldNameOK reports whether a name can be an expr-lang field name.
func fieldNameOK(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	switch n {
	case "and", "or", "not", "in", "matches", "contains", "startsWith", "endsWith", "nil", "true", "false", "let", "if", "else":
		return false
	}
	return true
}

// filterText joins a relation's pending conditions.
func filterText(conds []string) string {
	if len(conds) == 1 {
		return conds[0]
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = "(" + c + ")"
	}
	return strings.Join(parts, " and ")
}

// insert plans INSERT INTO sink query.
func (pl *planner) insert(ins *parser.Insert) error {
	if ins.Overwrite {
		return pl.errAt(ins.At, "INSERT OVERWRITE is not supported: a stream inserts (tidemark's sinks upsert by key and version)")
	}
	if err := pl.checkQualified(ins.Table); err != nil {
		return err
	}
	name := ins.Table.Last().Name
	t, ok := pl.tables[name]
	if !ok {
		var names []string
		for n := range pl.tables {
			names = append(names, n)
		}
		return pl.errAt(ins.Table.Position(), "unknown table %s%s: declare it with CREATE TABLE … WITH ('connector' = …)", name, hintOf(name, names))
	}
	if t.role == "source" || t.role == "input" {
		return pl.errAt(ins.Table.Position(), "table %s is read by a query; a table is read or written, not both", name)
	}
	t.role = "sink"
	snap := make(map[string]*parser.Option, len(pl.sets))
	for k, v := range pl.sets {
		snap[k] = v
	}
	pl.ins = &insertCtx{sink: t, sets: snap, at: ins.At}
	pl.insertNum++
	defer func() { pl.ins = nil }()
	sink, err := pl.sinkOf(t)
	if err != nil {
		return err
	}
	// The sink's columns, in order (or the INSERT's column list).
	cols := t.phys
	if len(ins.Columns) > 0 {
		byName := map[string]*physCol{}
		for _, c := range t.phys {
			byName[c.name] = c
		}
		cols = nil
		for _, c := range ins.Columns {
			pc, ok := byName[c.Name]
			if !ok {
				return pl.errAt(c.At, "%s has no column %s%s", name, c.Name, hintOf(c.Name, physNames(t)))
			}
			cols = append(cols, pc)
		}
	}
	for _, c := range t.def.Columns {
		if c.Computed != nil {
			return pl.errAt(c.At, "a sink's columns are physical: %s is computed", c.Name.Name)
		}
		if c.Type != nil && c.Type.Name == "ROW" {
			return pl.errAt(c.Type.At, "a sink's columns are scalars: %s is a ROW", c.Name.Name)
		}
	}
	if so, ok := ins.Query.(*parser.SetOp); ok && so.Op == "UNION" && so.All {
		return pl.insertUnion(ins, so, t, sink, cols)
	}
	sd, err := pl.insertQuery(ins.Query, t, cols)
	if err != nil {
		return err
	}
	if sd.kind == stageSelect && sink != nil && (sink.Type == "sqlite" || sink.Type == "postgres") {
		return pl.errAt(ins.Query.Position(), "%s is a table rows are upserted into by their key (window and group keys), and this query's rows have none: each is an insert of its columns (a projection or filter without GROUP BY); write them to an appending sink (a filesystem, kafka, print table), or aggregate them with GROUP BY", name)
	}
	sd.sinkTables = append(sd.sinkTables, t)
	if sink != nil {
		sd.st.Sinks = append(sd.st.Sinks, *sink)
	}
	return nil
}

// insertUnion plans INSERT INTO sink q1 UNION ALL q2 …: each branch a
// stage whose rows have the sink's columns, and a union stage of them
// holding the sink (spec.Stage.Union).
func (pl *planner) insertUnion(ins *parser.Insert, so *parser.SetOp, t *table, sink *spec.Sink, cols []*physCol) error {
	var branches []parser.Query
	var flatten func(q parser.Query) error
	flatten = func(q parser.Query) error {
		if s, ok := q.(*parser.SetOp); ok {
			if s.Op != "UNION" || !s.All {
				return pl.errAt(s.At, "%s%s is not supported: UNION ALL is (every row of each branch)", s.Op, map[bool]string{true: " ALL", false: ""}[s.All])
			}
			if err := flatten(s.Left); err != nil {
				return err
			}
			return flatten(s.Right)
		}
		branches = append(branches, q)
		return nil
	}
	if err := flatten(so); err != nil {
		return err
	}
	if len(branches) > spec.MaxUnion {
		return pl.errAt(so.At, "UNION ALL of %d queries: at most %d", len(branches), spec.MaxUnion)
	}
	u := &stageDef{kind: stageUnion, out: map[string]typ{}}
	for _, q := range branches {
		sd, err := pl.insertQuery(q, t, cols)
		if err != nil {
			return err
		}
		if sd.kind == stageUnion {
			// A branch is a query of one SELECT (pl.query refuses a UNION ALL
			// inside one); a Top-N branch is a top_n stage, planned.
			return pl.errAt(q.Position(), "internal: a branch of UNION ALL planned as a union; UNION ALL is supported as the whole query of an INSERT, its branches SELECTs (a Top-N among them)")
		}
		for _, x := range u.unionIn {
			if x == sd {
				return pl.errAt(q.Position(), "this branch is the same query as an earlier one: UNION ALL of a query with itself is not supported (each row twice); write the query once")
			}
		}
		if len(u.unionIn) > 0 && sd.kind != u.unionIn[0].kind {
			return pl.errAt(q.Position(), "this branch's rows are %s and the first branch's %s: UNION ALL unites rows of one kind (all projections, all aggregations or all joins), which one sink takes alike", kindText(sd), kindText(u.unionIn[0]))
		}
		if len(u.unionIn) > 0 && sd.windowed != u.unionIn[0].windowed {
			return pl.errAt(q.Position(), "this branch's rows are windowed and the first branch's are not (or the other way): UNION ALL unites rows of one kind")
		}
		u.unionIn = append(u.unionIn, sd)
		u.updating = u.updating || sd.updating
		u.windowed = sd.windowed
		for k, v := range sd.out {
			u.out[k] = v
		}
	}
	if u.unionIn[0].kind == stageSelect && sink != nil && (sink.Type == "sqlite" || sink.Type == "postgres") {
		return pl.errAt(ins.Query.Position(), "%s is a table rows are upserted into by their key (window and group keys), and these queries' rows have none: each is an insert of its columns (a projection or filter without GROUP BY); write them to an appending sink (a filesystem, kafka, print table), or aggregate them with GROUP BY", t.name)
	}
	u = pl.addStage(u)
	u.sinkTables = append(u.sinkTables, t)
	if sink != nil {
		u.st.Sinks = append(u.st.Sinks, *sink)
	}
	return nil
}

// kindText names what a stage's rows are, for messages.
func kindText(sd *stageDef) string {
	switch sd.kind {
	case stageSelect:
		return "a projection's (inserts)"
	case stageJoin:
		return "a join's"
	case stageUnion:
		return "a union's"
	}
	return "an aggregation's"
}

// insertQuery plans query q, whose rows table t (a sink) takes as its
// columns cols, and returns the stage whose rows they are.
func (pl *planner) insertQuery(q parser.Query, t *table, cols []*physCol) (*stageDef, error) {
	name := t.name
	pl.ins.top, pl.ins.names = nil, nil
	if sel, ok := q.(*parser.Select); ok {
		pl.ins.top = sel
		for _, c := range cols {
			pl.ins.names = append(pl.ins.names, c.name)
		}
	}
	r, err := pl.query(q, nil)
	if err != nil {
		return nil, err
	}
	return pl.insertRel(r, q, name, cols)
}

// insertRel returns the stage whose rows are r's (the rows of query q),
// written into sink name as its columns cols.
func (pl *planner) insertRel(r *rel, q parser.Query, name string, cols []*physCol) (*stageDef, error) {
	vis := r.visible("")
	// at is where column i of the query is written (its SELECT item when
	// it has one of its own), for messages.
	at := func(i int) parser.Pos {
		if sel, ok := q.(*parser.Select); ok && len(sel.Items) == len(vis) {
			for _, it := range sel.Items {
				if it.Star {
					return q.Position()
				}
			}
			return sel.Items[i].At
		}
		return q.Position()
	}
	if len(vis) != len(cols) {
		return nil, pl.errAt(q.Position(), "the query gives %d columns and %s takes %d (%s): INSERT matches them by position", len(vis), name, len(cols), strings.Join(physNamesOf(cols), ", "))
	}
	for i, c := range vis {
		if c.fields != nil {
			return nil, pl.errAt(at(i), "column %d (%s) is a ROW: select its fields", i+1, c.name)
		}
		if c.v.win != "" {
			return nil, pl.errAt(at(i), "column %d (%s) of a window table function needs an aggregation (GROUP BY window_start, window_end)", i+1, c.name)
		}
		if err := pl.assignable(c.v.t, cols[i].t); err != nil {
			return nil, pl.errAt(at(i), "column %d (%s, %s) does not fit %s.%s (%s): %v", i+1, c.name, c.v.t, name, cols[i].name, cols[i].t, err)
		}
	}
	return pl.materialize(r, vis, cols)
}

func physNames(t *table) []string { return physNamesOf(t.phys) }

func physNamesOf(cs []*physCol) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// assignable checks that a value of type from fits a sink column of type
// to (Flink's implicit casts: a BIGINT into a DECIMAL).
func (pl *planner) assignable(from, to typ) error {
	switch {
	case from.kind == to.kind, from.kind == row.KindNull:
		return nil
	case from.kind == row.KindInt && to.kind == row.KindDecimal:
		return nil
	}
	return fmt.Errorf("CAST it AS %s", to)
}

// hasIntAvg reports whether aggregation sd holds a BIGINT AVG's sum and
// count columns (aggCall.avgInt).
func hasIntAvg(sd *stageDef) bool {
	for _, a := range sd.st.Aggregates {
		if strings.HasPrefix(a.Name, "__sum_") {
			return true
		}
	}
	return false
}

// materialize returns the stage whose rows are r's, with output columns
// named as the sink's: r's own stage when its columns are that stage's
// fields by the sink's names, else a select stage reading r's producer.
func (pl *planner) materialize(r *rel, vis []*col, cols []*physCol) (*stageDef, error) {
	if r.prod.kind == prodInput {
		return nil, pl.errAt(r.at, "table %s is an input beside the source: it can only be joined", r.prod.name)
	}
	if r.prod.kind == prodStage && len(r.filter) == 0 && r.prod.stage.kind == stageAgg {
		// The aggregation's own rows, when the sink's columns are its
		// columns by name: its window and key columns (written whether
		// selected or not: they name the row) and every aggregate.
		sd := r.prod.stage
		same := true
		selected := map[string]bool{}
		for i, c := range vis {
			if c.v.field == "" || c.v.field != cols[i].name || c.v.t.kind != cols[i].t.kind && !(c.v.t.kind == row.KindNull) {
				same = false
				break
			}
			selected[c.v.field] = true
		}
		for _, a := range sd.st.Aggregates {
			if !selected[a.Name] && !strings.HasPrefix(a.Name, "__rows") {
				same = false
			}
		}
		if t := sd.st.TopN; t != nil {
			// A Top-N's rows: each column, and the rank, selected.
			same = same && selected[t.Rank]
			for _, item := range t.Columns {
				if _, name := spec.SelectItem(item); !selected[name] {
					same = false
				}
			}
		}
		if same {
			return sd, nil
		}
	}
	// A select stage: the rows of r's producer that r's conditions keep,
	// each as an insert of the sink's columns.
	if r.prod.kind == prodStage && r.prod.stage.updating && r.prod.stage.st.TopN != nil {
		return nil, pl.errAt(r.at, "the rows come from a Top-N that updates its ranks (emit mode %s): its rows are written as they are (the partition keys, %s and the columns, named as the sink's columns), or read by a GROUP BY; a projection or filter of an updating result is not supported (a row without the Top-N's key cannot be taken back): select the columns as they are, or rank in emit mode final", r.prod.stage.st.Emit.Mode, r.prod.stage.st.TopN.Rank)
	}
	if r.prod.kind == prodStage && r.prod.stage.updating {
		return nil, pl.errAt(r.at, "the rows come from an aggregation that updates its results (emit mode %s): its output columns are written as they are (window_start, window_end, the group keys and the aggregates, named as the sink's columns); a projection or filter of an updating result is not supported", r.prod.stage.st.Emit.Mode)
	}
	if r.prod.kind == prodStage && r.prod.stage.kind == stageSelect {
		return nil, pl.errAt(r.at, "a select stage's rows are read by no other stage: select from its source directly (views and subqueries inline)")
	}
	// A select stage's rows are inserts of their columns alone: no
	// window_start, window_end or version of their own to write, and
	// these names are the engine's (reserved).
	for i := range vis {
		if !reservedOut[strings.ToLower(cols[i].name)] {
			continue
		}
		why := "these rows need a select stage after their producer (an expression of its columns, a filter, or columns other than its own)"
		if r.prod.kind == prodStage && r.prod.stage.kind == stageAgg && hasIntAvg(r.prod.stage) {
			why = "AVG of a BIGINT is Flink's truncated integer average, which a select stage computes from the aggregation's sum and count; average a DECIMAL instead (AVG(CAST(x AS DECIMAL(20, 2)))) and the aggregation's own rows are written"
		}
		return nil, pl.errAt(r.at, "column %d (%s) of the sink is a column only an aggregation's own rows have: %s; a select stage writes inserts of its columns, none named %s (name the sink column otherwise)", i+1, cols[i].name, why, cols[i].name)
	}
	b := pl.newBuilder(r.prod)
	st := spec.Stage{}
	if len(r.filter) > 0 {
		st.Filter = filterText(r.filter)
	}
	used := map[string]bool{}
	for i, c := range vis {
		v := c.v
		if v.t.kind != cols[i].t.kind && v.t.kind == row.KindInt && cols[i].t.kind == row.KindDecimal {
			v = val{text: "decimal(" + v.text + ")", t: cols[i].t}
		}
		if v.t.kind == row.KindNull {
			return nil, pl.errAt(r.at, "column %d (%s) is always NULL: a select stage's columns need a type (CAST(NULL AS %s))", i+1, c.name, cols[i].t)
		}
		f := b.field(v, cols[i].name)
		item := f
		if f != cols[i].name {
			item = f + " as " + cols[i].name
		}
		if used[cols[i].name] {
			return nil, pl.errAt(r.at, "column %s twice", cols[i].name)
		}
		used[cols[i].name] = true
		st.Select = append(st.Select, item)
	}
	st.Fields = b.fields
	if tz := pl.localZone(); tz != "UTC" {
		st.Window.Timezone = tz
	}
	var input *stageDef
	if r.prod.kind == prodStage {
		input = r.prod.stage
	}
	sd := &stageDef{kind: stageSelect, st: st, input: input, out: map[string]typ{}}
	for i := range vis {
		sd.out[cols[i].name] = cols[i].t
	}
	return pl.addStage(sd), nil
}
