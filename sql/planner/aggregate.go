package planner

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// windowTVF is a window table function not yet planned: the windows its
// rows are assigned to (ms), over the time column of its input.
type windowTVF struct {
	at    parser.Pos
	fn    string // TUMBLE, HOP, SESSION, CUMULATE
	w     spec.Window
	time  val
	parts []val // SESSION's PARTITION BY
	in    *rel
}

// grouping is an aggregation being planned: its input, group keys and
// aggregates; the SELECT list and HAVING are translated against it.
type grouping struct {
	in       *rel
	b        *stageBuilder
	keys     []*groupKey
	aggs     []*aggCall
	windowed bool // window_start / window_end are output columns
	// size is the windows' length for the time offsets of window_start
	// (0: not fixed); upstream marks a grouping of the upstream's windows.
	size     int64
	upstream bool
	// winCols maps an input window column (window_start, window_end of a
	// TVF, or the upstream's when grouping by them) to its output field.
	winCols map[string]string
	// names are the stage's output names so far.
	names map[string]bool
}

type groupKey struct {
	text  string // over the input
	field string // the stage's key field (derived when not an input field)
	name  string // the output column
	t     typ
	// hasOff, off: the key is the input's time + off (kept by a grouping
	// of the upstream's windows, whose rows keep the input's time).
	hasOff bool
	off    int64
}

type aggCall struct {
	sig  string // fn(args) over the input: equal calls share a column
	name string
	expr string // the spec's aggregate call text
	t    typ
	// avgInt is AVG of a BIGINT: sum and count columns, whose quotient
	// (truncated, Flink's BIGINT AVG) a select stage computes.
	avgInt     bool
	sum, count string
	hidden     bool
}

func (g *grouping) keyFor(v val) *groupKey {
	for _, k := range g.keys {
		if k.text == v.text {
			return k
		}
	}
	return nil
}

// aggregate plans GROUP BY (or DISTINCT, or aggregates without GROUP BY)
// over in: an aggregation stage, and the relation of the SELECT list over
// its rows.
func (pl *planner) aggregate(sel *parser.Select, in *rel) (*rel, error) {
	if in.prod.kind == prodInput {
		return nil, pl.errAt(in.at, "table %s is an input beside the source: it can only be joined", in.prod.name)
	}
	if in.prod.kind == prodStage && in.prod.stage.kind == stageSelect {
		return nil, pl.errAt(in.at, "a select stage's rows are read by no other stage")
	}
	g := &grouping{in: in, b: pl.newBuilder(in.prod), winCols: map[string]string{}, names: map[string]bool{}}
	st := spec.Stage{}
	groupBy := sel.GroupBy
	if sel.Distinct {
		if len(groupBy) > 0 {
			return nil, pl.errAt(sel.At, "SELECT DISTINCT with GROUP BY: group by the selected columns instead")
		}
		for _, it := range sel.Items {
			if it.Star {
				return nil, pl.errAt(it.At, "SELECT DISTINCT *: list the columns")
			}
			if containsAgg(it.Expr) {
				return nil, pl.errAt(it.At, "SELECT DISTINCT with aggregates: use GROUP BY")
			}
			groupBy = append(groupBy, it.Expr)
		}
	}
	// Which window: a window TVF's, a legacy group window function's, the
	// upstream's windows (GROUP BY its window_start, window_end), or one
	// window over all time.
	var win *spec.Window
	var timeV val
	winAt := sel.At
	hasStart, hasEnd := false, false
	var keyExprs []parser.Expr
	for _, ge := range groupBy {
		if fc, ok := ge.(*parser.FuncCall); ok && windowGroupFuncs[fc.FuncName()] && !strings.Contains(fc.FuncName(), "_") {
			if win != nil {
				return nil, pl.errAt(fc.At, "a second group window: GROUP BY one of TUMBLE, HOP, SESSION")
			}
			w, tv, err := pl.groupWindow(fc, in)
			if err != nil {
				return nil, err
			}
			win, timeV, winAt = &w, tv, fc.At
			g.windowed = true
			continue
		}
		if ref, ok := ge.(*parser.ColumnRef); ok {
			c, err := pl.resolve(in, ref)
			if err != nil {
				return nil, err
			}
			switch c.v.win {
			case "window_start":
				hasStart = true
				continue
			case "window_end":
				hasEnd = true
				continue
			case "window_time":
				continue
			}
		}
		keyExprs = append(keyExprs, ge)
	}
	if (hasStart || hasEnd) && in.win == nil {
		return nil, pl.errAt(sel.At, "internal: window columns without a window table function")
	}
	if in.win != nil {
		if !hasStart || !hasEnd {
			return nil, pl.errAt(in.win.at, "a window table function's rows are grouped by window_start and window_end (GROUP BY window_start, window_end, …)")
		}
		if win != nil {
			return nil, pl.errAt(winAt, "GROUP BY a group window over a window table function's rows")
		}
		w := in.win.w
		win, timeV, winAt = &w, in.win.time, in.win.at
		g.windowed = true
	}
	// outName names item i: its alias; for the INSERT's own SELECT the
	// sink's column (its name in the table written); else its own name.
	outName := func(it *parser.SelectItem, i int) string {
		if it.Alias == nil && pl.ins != nil && pl.ins.top == sel && i < len(pl.ins.names) {
			return pl.ins.names[i]
		}
		return outputName(it, i)
	}
	// The group keys.
	aliasOf := map[string]string{} // key text → the select alias naming it
	for i, it := range sel.Items {
		if it.Expr == nil || containsAgg(it.Expr) {
			continue
		}
		v, err := pl.expr(it.Expr, &ectx{rel: in, allowWindow: true})
		if err == nil && v.win == "" {
			if _, ok := aliasOf[v.text]; !ok {
				aliasOf[v.text] = outName(it, i)
			}
		}
	}
	upstreamWindow := in.prod.kind == prodStage && in.prod.stage.windowed
	var upStart, upEnd bool
	for i, ke := range keyExprs {
		v, err := pl.expr(ke, &ectx{rel: in, where: "GROUP BY"})
		if err != nil {
			return nil, err
		}
		if v.t.kind == row.KindNull {
			return nil, pl.errAt(ke.Position(), "GROUP BY NULL")
		}
		if g.keyFor(v) != nil {
			continue
		}
		name := aliasOf[v.text]
		if name == "" {
			if ref, ok := ke.(*parser.ColumnRef); ok {
				name = ref.Parts[len(ref.Parts)-1].Name
			} else {
				name = fmt.Sprintf("EXPR$%d", i)
			}
		}
		if upstreamWindow && win == nil && in.win == nil {
			switch v.field {
			case "window_start":
				upStart = true
			case "window_end":
				upEnd = true
			}
		}
		k := &groupKey{text: v.text, name: name, t: v.t, hasOff: v.hasOff, off: v.off}
		k.field = g.b.named(v, name)
		if k.field != name {
			// The output column keeps the key field's name; the SELECT
			// list renames it.
			k.name = k.field
		}
		if g.names[k.field] {
			return nil, pl.errAt(ke.Position(), "two group keys named %s: alias one", k.field)
		}
		g.names[k.field] = true
		g.keys = append(g.keys, k)
		st.Key = append(st.Key, k.field)
	}
	// The event time and the windows.
	var eventTime *spec.EventTime
	switch {
	case win != nil:
		et, err := pl.stageEventTime(timeV, in, winAt)
		if err != nil {
			return nil, err
		}
		eventTime = et
		st.Window = *win
		if in.win != nil && len(in.win.parts) > 0 {
			for _, p := range in.win.parts {
				if g.keyFor(p) == nil {
					return nil, pl.errAt(in.win.at, "SESSION's PARTITION BY columns are group keys too: GROUP BY them")
				}
			}
		}
	case upStart && upEnd:
		// The upstream's windows: all the rows of one upstream window come
		// at once, with the time window_end − 1 ms; a window of 1 ms there
		// holds exactly them (and closes at the same watermark).
		st.Window = spec.Window{Type: "tumbling", Size: durationOf(1)}
		g.windowed = false
		g.upstream = true
		st.AllowedLateness = in.prod.stage.st.AllowedLateness
	default:
		st.Window = spec.Window{Type: "global"}
	}
	if tz := pl.localZone(); tz != "UTC" && st.Window.Type != "" {
		st.Window.Timezone = tz
	}
	if g.windowed && (st.Window.Type == "tumbling" || st.Window.Type == "sliding") {
		g.size = st.Window.Size.Ms()
	}
	if g.windowed {
		g.names["window_start"], g.names["window_end"] = true, true
		if in.win != nil {
			for _, c := range in.cols {
				if c.v.win != "" {
					g.winCols[c.v.win] = c.v.win
				}
			}
		} else {
			g.winCols["window_start"], g.winCols["window_end"] = "window_start", "window_end"
		}
	}
	// Pre-name the aggregates the SELECT list aliases.
	aggAlias := map[string]string{}
	for i, it := range sel.Items {
		if fc, ok := it.Expr.(*parser.FuncCall); ok && fc.Over == nil && aggregateFuncs[fc.FuncName()] {
			sig, err := pl.aggSig(fc, in)
			if err != nil {
				return nil, err
			}
			if _, ok := aggAlias[sig]; !ok {
				aggAlias[sig] = outName(it, i)
			}
		}
	}
	cx := &ectx{rel: in, group: g, where: "the SELECT list"}
	g.names["version"], g.names["is_final"] = true, true
	pl.curAggAlias = aggAlias
	defer func() { pl.curAggAlias = nil }()
	var having val
	var err error
	if sel.Having != nil {
		hx := &ectx{rel: in, group: g, where: "HAVING"}
		if having, err = pl.expr(sel.Having, hx); err != nil {
			return nil, err
		}
		if err := pl.want(sel.Having, having, row.KindBool, "HAVING"); err != nil {
			return nil, err
		}
	}
	type item struct {
		name string
		v    val
		at   parser.Pos
	}
	var items []item
	for i, it := range sel.Items {
		if it.Star {
			return nil, pl.errAt(it.At, "SELECT * with GROUP BY: list the group keys and aggregates")
		}
		v, err := pl.expr(it.Expr, cx)
		if err != nil {
			return nil, err
		}
		items = append(items, item{outName(it, i), v, it.At})
	}
	if len(in.filter) > 0 {
		st.Filter = filterText(in.filter)
	}
	st.Fields = g.b.fields
	st.EventTime = eventTime
	for _, a := range g.aggs {
		if a.avgInt {
			st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: a.sum, Expr: "sum(" + a.expr + ")"}, spec.NamedExpr{Name: a.count, Expr: "count(" + a.expr + ")"})
			continue
		}
		st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: a.name, Expr: a.expr})
	}
	if len(st.Aggregates) == 0 {
		// GROUP BY without aggregates (DISTINCT): the rows' count, unread.
		st.Aggregates = spec.NamedExprs{{Name: "__rows", Expr: "count()"}}
	}
	mode := "final"
	if err := pl.stageSettings(&st, mode); err != nil {
		return nil, err
	}
	if in.prod.kind == prodStage && in.prod.stage.updating && in.prod.stage.st.Emit.Mode == "update" {
		return nil, pl.errAt(sel.At, "this aggregation reads the rows of a stage in emit mode update (an upsert stream without update_before: a replaced row cannot be taken back); SET 'tidemark.emit.mode' = 'retract' before the INSERT")
	}
	if in.prod.kind == prodStage && in.prod.stage.updating {
		for _, a := range g.aggs {
			if strings.HasPrefix(a.expr, "arg_") {
				return nil, pl.errAt(sel.At, "this aggregation reads an updating result: its aggregates take rows back (count, sum, avg, min, max, count distinct)")
			}
		}
	}
	var input *stageDef
	if in.prod.kind == prodStage {
		input = in.prod.stage
	}
	sd := &stageDef{kind: stageAgg, st: st, input: input, windowed: g.windowed, updating: st.Emit.Mode != "final", out: map[string]typ{}}
	if g.windowed {
		sd.out["window_start"], sd.out["window_end"] = tTime, tTime
	}
	for _, k := range g.keys {
		sd.out[k.field] = k.t
	}
	for _, a := range g.aggs {
		if a.avgInt {
			sd.out[a.sum], sd.out[a.count] = tInt, tInt
		} else {
			sd.out[a.name] = a.t
		}
	}
	sd = pl.addStage(sd)
	out := &rel{prod: &producer{kind: prodStage, stage: sd}, at: sel.At}
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.name] {
			return nil, pl.errAt(it.at, "column %s is selected twice: give one an alias", it.name)
		}
		seen[it.name] = true
		out.cols = append(out.cols, &col{name: it.name, v: it.v})
	}
	if g.windowed || g.upstream {
		// window_time: the rows' time attribute for a later window.
		out.cols = append(out.cols, &col{name: "window_time", hidden: true, v: val{text: "timestamp_add(window_end, -1)", t: tTime, rowtime: true}})
	}
	if sel.Having != nil {
		out.filter = append(out.filter, having.text)
	}
	return out, nil
}

// stageEventTime checks that a window's time column is its input's time
// attribute and returns the stage's event_time override (nil: the
// default, the source's event time or the upstream's window_end − 1 ms).
func (pl *planner) stageEventTime(tv val, in *rel, at parser.Pos) (*spec.EventTime, error) {
	if tv.proctime {
		// Windows on processing time: the stage's own time, the field the
		// runner fills.
		if in.prod.kind != prodSource {
			return nil, pl.errAt(at, "windows on PROCTIME() read the pipeline's source")
		}
		return &spec.EventTime{Field: procField, Format: "rfc3339"}, nil
	}
	switch in.prod.kind {
	case prodSource:
		if pl.source.wm == nil {
			return nil, pl.errAt(at, "windows need an event time: %s has no WATERMARK (declare one in its CREATE TABLE: WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)", pl.source.name)
		}
		if !tv.rowtime || tv.field != pl.source.wm.field {
			return nil, pl.errAt(at, "the window's time column is not the event time of %s (the column of its WATERMARK, %s)", pl.source.name, pl.source.wm.column)
		}
		return nil, nil
	case prodStage:
		if tv.text == "timestamp_add(window_end, -1)" {
			return nil, nil // window_time: the default
		}
		if tv.field == "" || tv.t.kind != row.KindTime {
			return nil, pl.errAt(at, "the window's time column must be a TIMESTAMP column of the rows it windows")
		}
		if in.prod.stage.kind == stageJoin && tv.field == "event_time" {
			return nil, nil
		}
		return &spec.EventTime{Field: tv.field, Format: "rfc3339"}, nil
	}
	return nil, pl.errAt(at, "windows over an input beside the source are not supported")
}

// groupWindow reads a legacy group window: TUMBLE(ts, size), HOP(ts,
// slide, size), SESSION(ts, gap), CUMULATE(ts, step, size).
func (pl *planner) groupWindow(fc *parser.FuncCall, in *rel) (spec.Window, val, error) {
	name := fc.FuncName()
	want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2, "CUMULATE": 3}[name]
	if len(fc.Args) != want {
		return spec.Window{}, val{}, pl.errAt(fc.At, "%s takes %d arguments (the time column and its intervals)", name, want)
	}
	tv, err := pl.expr(fc.Args[0], &ectx{rel: in, where: "GROUP BY"})
	if err != nil {
		return spec.Window{}, val{}, err
	}
	var ms []int64
	for _, a := range fc.Args[1:] {
		iv, ok := a.(*parser.IntervalLit)
		if !ok {
			return spec.Window{}, val{}, pl.errAt(a.Position(), "%s's sizes are INTERVAL literals", name)
		}
		n, err := pl.intervalMs(iv)
		if err != nil {
			return spec.Window{}, val{}, err
		}
		if n <= 0 {
			return spec.Window{}, val{}, pl.errAt(iv.At, "a window's interval must be positive")
		}
		ms = append(ms, n)
	}
	var w spec.Window
	switch name {
	case "TUMBLE":
		w = spec.Window{Type: "tumbling", Size: durationOf(ms[0])}
	case "HOP":
		w = spec.Window{Type: "sliding", Slide: durationOf(ms[0]), Size: durationOf(ms[1])}
	case "SESSION":
		w = spec.Window{Type: "session", Gap: durationOf(ms[0])}
	case "CUMULATE":
		w = spec.Window{Type: "cumulate", Step: durationOf(ms[0]), Size: durationOf(ms[1])}
	}
	return w, tv, nil
}

// aggSig is an aggregate call's signature over the input (equal calls
// share a column).
func (pl *planner) aggSig(fc *parser.FuncCall, in *rel) (string, error) {
	a, err := pl.aggOf(fc, in)
	if err != nil {
		return "", err
	}
	return a.sig, nil
}

// aggOf translates an aggregate call's arguments over the input.
func (pl *planner) aggOf(fc *parser.FuncCall, in *rel) (*aggCall, error) {
	name := fc.FuncName()
	pre := &ectx{rel: in, where: "an aggregate's argument"}
	var cond *val
	if fc.Filter != nil {
		c, err := pl.expr(fc.Filter, &ectx{rel: in, where: "FILTER"})
		if err != nil {
			return nil, err
		}
		if err := pl.want(fc.Filter, c, row.KindBool, "FILTER (WHERE …)"); err != nil {
			return nil, err
		}
		cond = &c
	}
	for _, a := range fc.Args {
		if containsAgg(a) {
			return nil, pl.errAt(a.Position(), "an aggregate inside an aggregate")
		}
	}
	arg := func(i int) (val, error) { return pl.expr(fc.Args[i], pre) }
	guard := func(v val) string {
		if cond == nil {
			return v.text
		}
		return cond.paren() + " ? " + v.paren() + " : nil"
	}
	a := &aggCall{}
	switch name {
	case "COUNT":
		switch {
		case fc.Star || len(fc.Args) == 0:
			if fc.Distinct {
				return nil, pl.errAt(fc.At, "COUNT(DISTINCT *): name the column")
			}
			if cond == nil {
				a.expr, a.sig = "count()", "count()"
			} else {
				a.expr = "count(" + cond.paren() + " ? 1 : nil)"
				a.sig = a.expr
			}
		case len(fc.Args) == 1:
			v, err := arg(0)
			if err != nil {
				return nil, err
			}
			fn := "count"
			if fc.Distinct {
				fn = "count_distinct"
			}
			a.expr = fn + "(" + guard(v) + ")"
			a.sig = a.expr
		default:
			return nil, pl.errAt(fc.At, "COUNT takes one argument")
		}
		a.t = tInt
	case "SUM", "MIN", "MAX", "AVG":
		if len(fc.Args) != 1 || fc.Star {
			return nil, pl.errAt(fc.At, "%s takes one argument", name)
		}
		if fc.Distinct {
			return nil, pl.errAt(fc.At, "%s(DISTINCT …) is not supported (COUNT(DISTINCT …) is)", name)
		}
		v, err := arg(0)
		if err != nil {
			return nil, err
		}
		if name != "MIN" && name != "MAX" && !v.t.numeric() {
			return nil, pl.errAt(fc.Args[0].Position(), "%s needs numbers, not %s", name, v.t)
		}
		if v.t.kind == row.KindBool && name != "MIN" && name != "MAX" {
			return nil, pl.errAt(fc.Args[0].Position(), "%s of a BOOLEAN", name)
		}
		a.t = v.t
		fn := strings.ToLower(name)
		if name == "AVG" {
			if v.t.kind == row.KindInt {
				a.avgInt = true
			}
			a.t = tDecimal
		}
		// A column computed in the input: a derived field named after it
		// (as a pipeline file would write it), else the expression inline.
		text := guard(v)
		if ref, ok := fc.Args[0].(*parser.ColumnRef); ok && cond == nil && v.field == "" {
			if c, err := pl.lookup(in, ref, false); err == nil {
				text = c.name
				a.sig = fn + "(" + v.text + ")"
				a.expr = fn + "(\x00col:" + c.name + "\x00" + v.text + ")"
			}
		}
		if a.expr == "" {
			a.expr = fn + "(" + text + ")"
			a.sig = a.expr
		}
		if a.avgInt {
			a.t = tInt
		}
	default:
		return nil, pl.errAt(fc.At, "aggregate %s() is not supported (COUNT, COUNT(DISTINCT …), SUM, AVG, MIN, MAX, with FILTER (WHERE …))", name)
	}
	return a, nil
}

// groupedLeaf translates the parts of a SELECT-list or HAVING expression
// of an aggregation that are not plain operators: aggregate calls (a
// column of the stage), group keys and window columns (their output
// fields), constants. handled is false for an operator over them, which
// the caller translates part by part.
func (pl *planner) groupedLeaf(e parser.Expr, cx *ectx) (val, bool, error) {
	g := cx.group
	if fc, ok := e.(*parser.FuncCall); ok && fc.Over == nil && aggregateFuncs[fc.FuncName()] {
		v, err := pl.aggColumn(fc, g)
		return v, true, err
	}
	if fc, ok := e.(*parser.FuncCall); ok && windowGroupFuncs[fc.FuncName()] && strings.Contains(fc.FuncName(), "_") {
		part := fc.FuncName()[strings.Index(fc.FuncName(), "_")+1:]
		if !g.windowed {
			return val{}, true, pl.errAt(fc.At, "%s() needs GROUP BY %s(…)", fc.FuncName(), strings.SplitN(fc.FuncName(), "_", 2)[0])
		}
		switch part {
		case "START":
			v := val{text: "window_start", field: "window_start", t: tTime}
			if g.size > 0 {
				v.hasOff, v.off = true, 1-g.size
			}
			return v, true, nil
		case "END":
			return val{text: "window_end", field: "window_end", t: tTime, hasOff: true, off: 1}, true, nil
		case "ROWTIME":
			return val{text: "timestamp_add(window_end, -1)", t: tTime, rowtime: true}, true, nil
		}
		return val{}, true, pl.errAt(fc.At, "%s() is not supported", fc.FuncName())
	}
	if containsAgg(e) {
		return val{}, false, nil
	}
	v, err := pl.expr(e, &ectx{rel: g.in, where: cx.where, allowWindow: true})
	if err == nil {
		if v.win != "" {
			f, ok := g.winCols[v.win]
			if !ok {
				return val{}, true, pl.errAt(e.Position(), "%s is not grouped", v.win)
			}
			if v.win == "window_time" {
				return val{text: "timestamp_add(window_end, -1)", t: tTime, rowtime: true}, true, nil
			}
			out := val{text: f, field: f, t: tTime}
			switch {
			case v.win == "window_end":
				out.hasOff, out.off = true, 1
			case v.win == "window_start" && g.size > 0:
				out.hasOff, out.off = true, 1-g.size
			}
			return out, true, nil
		}
		if k := g.keyFor(v); k != nil {
			out := val{text: k.field, field: k.field, t: k.t}
			if g.upstream && k.hasOff {
				out.hasOff, out.off = true, k.off
			}
			return out, true, nil
		}
		if !hasColumns(e) {
			return v, true, nil
		}
	}
	if ref, ok := e.(*parser.ColumnRef); ok {
		if err != nil {
			return val{}, true, err
		}
		return val{}, true, pl.errAt(ref.Position(), "column %s is neither in GROUP BY nor in an aggregate", ref.String())
	}
	return val{}, false, nil
}

// aggColumn returns the stage column of an aggregate call, adding it.
func (pl *planner) aggColumn(fc *parser.FuncCall, g *grouping) (val, error) {
	a, err := pl.aggOf(fc, g.in)
	if err != nil {
		return val{}, err
	}
	for _, x := range g.aggs {
		if x.sig == a.sig {
			return x.value(), nil
		}
	}
	// Resolve a computed column argument into a derived field.
	if i := strings.Index(a.expr, "\x00col:"); i >= 0 {
		rest := a.expr[i+5:]
		j := strings.IndexByte(rest, 0)
		colName, text := rest[:j], rest[j+1:len(rest)-1]
		f := g.b.field(val{text: text}, colName)
		a.expr = a.expr[:i] + f + ")"
	}
	name := pl.curAggAlias[a.sig]
	if name == "" || g.names[name] || !fieldNameOK(name) && !a.avgInt {
		name = fmt.Sprintf("__agg%d", len(g.aggs)+1)
		a.hidden = true
	}
	g.names[name] = true
	a.name = name
	if a.avgInt {
		safe := strings.Map(func(r rune) rune {
			if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, name)
		a.sum, a.count = "__sum_"+safe, "__count_"+safe
		inner := strings.TrimSuffix(strings.TrimPrefix(a.expr, "avg("), ")")
		a.expr = inner
	}
	g.aggs = append(g.aggs, a)
	return a.value(), nil
}

// value is the aggregate's value over the stage's row.
func (a *aggCall) value() val {
	if a.avgInt {
		return val{text: "int(" + a.sum + " / " + a.count + ")", t: tInt}
	}
	return val{text: a.name, field: a.name, t: a.t}
}
