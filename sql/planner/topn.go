package planner

import (
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// topN plans Flink's Top-N and deduplication patterns:
//
//	SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY o) AS rn
//	               FROM t …) WHERE rn <= 1
//
// as an aggregation keyed by k over all time (a global window) whose
// columns are first_by(column, o…): each key's first row in the order
// (ties: the first to arrive, as Flink's Top-N keeps it), or, when the
// order is the event time descending, last_by(column, ts): the last row
// by time (ties: the last to arrive, as Flink's deduplication keeping the
// last row). N > 1, as the whole query of an INSERT, is a Top-N stage
// (spec.TopN): each key's N first rows in the order, with their columns
// and their rank as the column rn names. Over a window table function's
// rows (TUMBLE, HOP, CUMULATE; SESSION when the keys are its PARTITION
// BY columns) partitioned by window_start, window_end and keys it is
// Flink's window Top-N: the stage has the function's window instead of
// the global one and emits each window's ranks when the window closes
// (emit mode final only). Over a windowed aggregation's or a window
// join's rows it is keyed by their window bounds over a 1 ms window.
// ok is false when sel is not the pattern.
func (pl *planner) topN(sel *parser.Select, where []parser.Expr, ctes scopeCTE) (*rel, bool, error) {
	sub, ok := sel.From.(*parser.SubqueryRef)
	if !ok || sub.Lateral {
		return nil, false, nil
	}
	inner, ok := sub.Query.(*parser.Select)
	if !ok {
		return nil, false, nil
	}
	rnItem := -1
	var rnCall *parser.FuncCall
	for i, it := range inner.Items {
		if fc, ok := it.Expr.(*parser.FuncCall); ok && fc.Over != nil {
			if fc.FuncName() != "ROW_NUMBER" {
				return nil, true, pl.errAt(fc.At, "%s() OVER (…) is not supported: ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) with WHERE rn <= 1 is (Top-1, deduplication); for running aggregates use a window table function (TUMBLE, HOP, CUMULATE) and GROUP BY", fc.FuncName())
			}
			if rnItem >= 0 {
				return nil, true, pl.errAt(fc.At, "a second ROW_NUMBER(): one per query")
			}
			rnItem, rnCall = i, fc
		}
	}
	if rnItem < 0 {
		return nil, false, nil
	}
	rnName := outputName(inner.Items[rnItem], rnItem)
	o := rnCall.Over
	if o.Frame != "" {
		return nil, true, pl.errAt(o.FrameAt, "ROW_NUMBER() takes no window frame")
	}
	if len(o.OrderBy) == 0 {
		return nil, true, pl.errAt(o.At, "ROW_NUMBER() OVER (…) needs ORDER BY: which row is first")
	}
	if len(inner.GroupBy) > 0 || inner.Having != nil || inner.Distinct {
		return nil, true, pl.errAt(inner.At, "ROW_NUMBER() over an aggregation's rows is not supported")
	}
	// The bound: rn <= N, rn < N, rn = 1 in the outer WHERE.
	n := int64(-1)
	var bound parser.Expr
	for _, w := range where {
		b, ok := w.(*parser.Binary)
		if !ok {
			continue
		}
		ref, ok := b.L.(*parser.ColumnRef)
		lit, ok2 := b.R.(*parser.Literal)
		if !ok || !ok2 || lit.Kind != parser.LitNumber || ref.Parts[len(ref.Parts)-1].Name != rnName {
			continue
		}
		v, err := strconv.ParseInt(lit.Text, 10, 64)
		if err != nil {
			continue
		}
		switch b.Op {
		case "<=":
			n = v
		case "<":
			n = v - 1
		case "=":
			if v == 1 {
				n = 1
			}
		default:
			continue
		}
		bound = w
		break
	}
	if bound == nil {
		return nil, true, pl.errAt(rnCall.At, "ROW_NUMBER() is supported with the outer query's WHERE %s <= N (Top-N and deduplication)", rnName)
	}
	if n < 1 {
		return nil, true, pl.errAt(bound.Position(), "%s <= %d keeps no row", rnName, n)
	}
	if n > int64(spec.MaxTopN) {
		return nil, true, pl.errAt(bound.Position(), "a Top-N of %d rows per key: at most %d", n, spec.MaxTopN)
	}
	// The inner query's rows.
	var iw []parser.Expr
	if inner.Where != nil {
		iw = conjuncts(inner.Where)
	}
	in, rest, err := pl.from(inner.From, iw, ctes)
	if err != nil {
		return nil, true, err
	}
	for _, w := range rest {
		v, err := pl.expr(w, &ectx{rel: in, where: "WHERE"})
		if err != nil {
			return nil, true, err
		}
		if err := pl.want(w, v, row.KindBool, "WHERE"); err != nil {
			return nil, true, err
		}
		in = in.clone()
		in.filter = append(in.filter, v.text)
	}
	if in.prod.kind == prodInput {
		return nil, true, pl.errAt(in.at, "table %s is an input beside the source: it can only be joined", in.prod.name)
	}
	if in.prod.kind == prodStage && in.prod.stage.updating && in.prod.stage.windowed {
		return nil, true, pl.errAt(inner.At, "ROW_NUMBER() over a windowed aggregation that emits mode %s: a window Top-N of an aggregation's results ranks each window's final rows once, when the window closes (as Flink's, emit mode final only); leave 'tidemark.emit.mode' (and allowed lateness) unset for this INSERT", in.prod.stage.st.Emit.Mode)
	}
	if in.prod.kind == prodStage && (in.prod.stage.updating || in.prod.stage.kind == stageSelect) {
		return nil, true, pl.errAt(inner.At, "ROW_NUMBER() over the rows of an updating result (or a select stage) is not supported")
	}
	// A window Top-N of a windowed aggregation's results (Flink's "Window
	// Top-N follows after Window Aggregation"): the upstream writes all
	// the rows of one of its windows at once, each with the time
	// window_end − 1 ms, so a 1 ms tumbling window keyed by the upstream's
	// window_start and window_end (and the partition's other keys) holds
	// exactly one upstream window's rows, and closes at the watermark the
	// upstream window closed at — as an aggregation of the upstream's
	// windows is planned.
	// The same holds for the rows of a join of two aggregations' same
	// windows partitioned by their window_start and window_end (the
	// window_end the column at the offset 1 ms to the rows' time);
	// partitioned otherwise, a join's rows are ranked over all time.
	upAgg := in.win == nil && in.prod.kind == prodStage && in.prod.stage.windowed
	upJoin := in.win == nil && in.prod.kind == prodStage && in.prod.stage.kind == stageJoin
	// A window Top-N (Flink's WindowRank): over a window table function's
	// rows, partitioned by window_start and window_end, each window's
	// ranks once, when the window closes (emit mode final).
	win := in.win
	items := append(append([]*parser.SelectItem(nil), inner.Items[:rnItem]...), inner.Items[rnItem+1:]...)
	cols, err := pl.project(items, in, &ectx{rel: in, where: "the SELECT list"})
	if err != nil {
		return nil, true, err
	}
	b := pl.newBuilder(in.prod)
	st := spec.Stage{Window: spec.Window{Type: "global"}}
	winSize := int64(0)
	if win != nil {
		et, err := pl.stageEventTime(win.time, in, win.at)
		if err != nil {
			return nil, true, err
		}
		st.EventTime, st.Window = et, win.w
		if win.w.Type == "tumbling" || win.w.Type == "sliding" {
			winSize = win.w.Size.Ms()
		}
	}
	hasStart, hasEnd := false, false
	if len(in.filter) > 0 {
		st.Filter = filterText(in.filter)
	}
	// The partition keys.
	keyOf := map[string]string{} // key text → key field
	names := map[string]bool{"window_start": true, "window_end": true, "version": true, "is_final": true}
	for i, pe := range o.PartitionBy {
		v, err := pl.expr(pe, &ectx{rel: in, where: "PARTITION BY", allowWindow: win != nil})
		if err != nil {
			return nil, true, err
		}
		switch v.win {
		case "window_start":
			hasStart = true
			continue
		case "window_end":
			hasEnd = true
			continue
		case "window_time":
			return nil, true, pl.errAt(pe.Position(), "PARTITION BY window_time: a window Top-N is partitioned by window_start, window_end (and keys)")
		}
		name := ""
		if ref, ok := pe.(*parser.ColumnRef); ok {
			name = ref.Parts[len(ref.Parts)-1].Name
		} else {
			name = "EXPR$" + strconv.Itoa(i)
		}
		for _, c := range cols.cols {
			if c.v.text == v.text {
				name = c.name
				break
			}
		}
		var f string
		if upJoin {
			// A join's rows: its window_end is the column at the offset
			// 1 ms to the rows' time, its window_start a time column
			// named so (the planner names a join's columns after the
			// sides' own).
			switch {
			case v.hasOff && v.off == 1:
				hasEnd = true
			case v.t.kind == row.KindTime && strings.HasSuffix(name, "window_start"):
				hasStart = true
			}
			f = b.named(v, name)
		} else if upAgg && (v.field == "window_start" || v.field == "window_end") {
			// The upstream's window: a key field of its own (the names
			// window_start and window_end are this stage's window's).
			hasStart = hasStart || v.field == "window_start"
			hasEnd = hasEnd || v.field == "window_end"
			f = b.derive(v, name)
		} else {
			f = b.named(v, name)
		}
		if names[f] {
			return nil, true, pl.errAt(pe.Position(), "two partition keys named %s", f)
		}
		names[f] = true
		keyOf[v.text] = f
		st.Key = append(st.Key, f)
	}
	if win != nil && (!hasStart || !hasEnd) {
		return nil, true, pl.errAt(o.At, "ROW_NUMBER() over a window table function's rows ranks them per window: PARTITION BY window_start, window_end (and keys), as Flink's window Top-N")
	}
	if win != nil && win.fn == "SESSION" {
		// Sessions are per SESSION's PARTITION BY key: the stage's
		// session windows are per its key, so the Top-N's keys must be
		// exactly those columns (each session's rows ranked on their own).
		same := len(st.Key) == len(win.parts)
		for _, p := range win.parts {
			if _, ok := keyOf[p.text]; !ok {
				same = false
			}
		}
		if !same {
			return nil, true, pl.errAt(o.At, "a window Top-N over SESSION windows ranks each session's rows: PARTITION BY window_start, window_end and exactly the SESSION's PARTITION BY columns (sessions are per those columns; ranking sessions of several keys that share their bounds together, aggregate the sessions first and rank the aggregation's rows)")
		}
	}
	if upAgg && (!hasStart || !hasEnd) {
		return nil, true, pl.errAt(o.At, "ROW_NUMBER() over a windowed aggregation's rows ranks them per window: PARTITION BY window_start, window_end (and keys), as Flink's window Top-N after a window aggregation; without them it would rank every window's results together, over all time")
	}
	upWin := upAgg || upJoin && hasStart && hasEnd
	if upWin {
		st.Window = spec.Window{Type: "tumbling", Size: durationOf(1)}
		st.AllowedLateness = in.prod.stage.st.AllowedLateness
	}
	// The order: event time descending alone is the deduplication keeping
	// the last row.
	var order []string
	lastByTime := false
	if len(o.OrderBy) == 1 && o.OrderBy[0].Desc {
		v, err := pl.expr(o.OrderBy[0].Expr, &ectx{rel: in, where: "ORDER BY"})
		if err != nil {
			return nil, true, err
		}
		lastByTime = v.rowtime
		if lastByTime {
			order = []string{v.text}
		}
	}
	if !lastByTime {
		for _, it := range o.OrderBy {
			v, err := pl.expr(it.Expr, &ectx{rel: in, where: "ORDER BY"})
			if err != nil {
				return nil, true, err
			}
			if v.t.kind == row.KindNull {
				return nil, true, pl.errAt(it.Expr.Position(), "ORDER BY NULL")
			}
			if it.NullsSet && it.NullsFirst == it.Desc {
				return nil, true, pl.errAt(it.Expr.Position(), "nulls sort below every value here (NULLS FIRST ascending, NULLS LAST descending)")
			}
			if it.Desc {
				order = append(order, "desc("+v.text+")")
			} else {
				order = append(order, v.text)
			}
		}
	}
	fn := "first_by"
	if lastByTime {
		fn = "last_by"
	}
	out := &rel{at: sel.At}
	sd := &stageDef{kind: stageAgg, out: map[string]typ{}}
	var top *spec.TopN
	if n > 1 {
		// The n first rows of each key: a Top-N stage (top_n), the
		// order by time descending as any other (ties: the row that
		// came first).
		if lastByTime {
			order = []string{"desc(" + order[0] + ")"}
		}
		top = &spec.TopN{N: int(n), Order: order}
	}
	for _, c := range cols.cols {
		if c.fields != nil {
			return nil, true, pl.errAt(inner.At, "%s is a ROW: select its fields", c.name)
		}
		if k, ok := keyOf[c.v.text]; ok {
			// (An upstream window column keeps its offset to the rows'
			// time, which this stage's rows keep: window_end − 1 ms.)
			out.cols = append(out.cols, &col{qual: c.qual, name: c.name, v: val{text: k, field: k, t: c.v.t, hasOff: c.v.hasOff, off: c.v.off}})
			sd.out[k] = c.v.t
			continue
		}
		if c.v.win != "" {
			if win == nil {
				return nil, true, pl.errAt(inner.At, "window columns need an aggregation: GROUP BY window_start, window_end")
			}
			// The window of the ranks' rows: window_start and window_end
			// as an aggregation's (the row's window), window_time its
			// last instant.
			wv := val{text: c.v.win, field: c.v.win, t: tTime}
			switch {
			case c.v.win == "window_time":
				wv = val{text: "timestamp_add(window_end, -1)", t: tTime, rowtime: true}
			case c.v.win == "window_end":
				wv.hasOff, wv.off = true, 1
			case c.v.win == "window_start" && winSize > 0:
				wv.hasOff, wv.off = true, 1-winSize
			}
			out.cols = append(out.cols, &col{qual: c.qual, name: c.name, v: wv})
			continue
		}
		name := c.name
		if names[name] || !fieldNameOK(name) {
			name = uniqueName(names, "__"+sanitize(name))
		}
		names[name] = true
		if top != nil {
			// A column of the Top-N's rows: the field holding it, under
			// its name.
			f := b.field(c.v, name)
			item := f
			if f != name {
				item = f + " as " + name
			}
			top.Columns = append(top.Columns, item)
		} else {
			st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: name, Expr: fn + "(" + c.v.text + ", " + strings.Join(order, ", ") + ")"})
		}
		sd.out[name] = c.v.t
		out.cols = append(out.cols, &col{qual: c.qual, name: c.name, v: val{text: name, field: name, t: c.v.t}})
	}
	if top != nil {
		// The rank: the last key column of the Top-N's rows.
		top.Rank = rnName
		if names[rnName] || !fieldNameOK(rnName) {
			top.Rank = uniqueName(names, "__"+sanitize(rnName))
		}
		names[top.Rank] = true
		sd.out[top.Rank] = tInt
		st.TopN = top
	}
	if len(st.Aggregates) == 0 && top == nil {
		st.Aggregates = spec.NamedExprs{{Name: "__rows", Expr: "count()"}}
	}
	st.Fields = b.fields
	if tz := pl.localZone(); tz != "UTC" {
		st.Window.Timezone = tz
	}
	if err := pl.stageSettings(&st, "final"); err != nil {
		return nil, true, err
	}
	if in.prod.kind == prodStage {
		sd.input = in.prod.stage
	}
	sd.st = st
	sd.updating = st.Emit.Mode != "final"
	if (win != nil || upWin) && sd.updating {
		return nil, true, pl.errAt(rnCall.At, "a window Top-N emits each window's ranks once, when the window closes (emit mode final, as Flink's); emit mode %s is for a Top-N over all time (PARTITION BY without window_start, window_end, over a table)", st.Emit.Mode)
	}
	if win != nil {
		sd.windowed = true
	}
	sd = pl.addStage(sd)
	out.prod = &producer{kind: prodStage, stage: sd}
	if top != nil {
		// rn: the rank column of the rows.
		out.cols = append(out.cols, &col{name: rnName, v: val{text: top.Rank, field: top.Rank, t: tInt}})
	} else {
		// rn: 1 on every row.
		out.cols = append(out.cols, &col{name: rnName, v: val{text: "1", t: tInt}})
	}
	if sub.Alias != nil {
		out = requalify(out, sub.Alias.Name)
	}
	// The outer query over these rows, without the bound.
	var outerWhere []parser.Expr
	for _, w := range where {
		if w != bound {
			outerWhere = append(outerWhere, w)
		}
	}
	for _, w := range outerWhere {
		v, err := pl.expr(w, &ectx{rel: out, where: "WHERE"})
		if err != nil {
			return nil, true, err
		}
		out = out.clone()
		out.filter = append(out.filter, v.text)
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || sel.Distinct || pl.hasAggregates(sel) {
		r, err := pl.aggregate(sel, out)
		return r, true, err
	}
	r, err := pl.project(sel.Items, out, &ectx{rel: out, where: "the SELECT list"})
	return r, true, err
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
