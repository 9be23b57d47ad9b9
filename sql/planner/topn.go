package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/aggregate"
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
// last row). ok is false when sel is not the pattern. N > 1 is refused.
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
	if n > 1 && (pl.ins == nil || pl.ins.top != sel) {
		return nil, true, pl.errAt(bound.Position(), "a Top-N of more than one row per key (%s <= %d) is supported as the whole query of an INSERT (INSERT INTO t SELECT … FROM (SELECT …, ROW_NUMBER() OVER (…) AS %s FROM …) WHERE %s <= %d); here it feeds another query", rnName, n, rnName, rnName, n)
	}
	if n > int64(aggregate.MaxNth) {
		return nil, true, pl.errAt(bound.Position(), "a Top-N of %d rows per key: at most %d", n, aggregate.MaxNth)
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
	if in.prod.kind == prodStage && (in.prod.stage.updating || in.prod.stage.kind == stageSelect) {
		return nil, true, pl.errAt(inner.At, "ROW_NUMBER() over the rows of an updating result (or a select stage) is not supported")
	}
	items := append(append([]*parser.SelectItem(nil), inner.Items[:rnItem]...), inner.Items[rnItem+1:]...)
	cols, err := pl.project(items, in, &ectx{rel: in, where: "the SELECT list"})
	if err != nil {
		return nil, true, err
	}
	b := pl.newBuilder(in.prod)
	st := spec.Stage{Window: spec.Window{Type: "global"}}
	if len(in.filter) > 0 {
		st.Filter = filterText(in.filter)
	}
	// The partition keys.
	keyOf := map[string]string{} // key text → key field
	names := map[string]bool{"window_start": true, "window_end": true, "version": true, "is_final": true}
	for i, pe := range o.PartitionBy {
		v, err := pl.expr(pe, &ectx{rel: in, where: "PARTITION BY"})
		if err != nil {
			return nil, true, err
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
		f := b.named(v, name)
		if names[f] {
			return nil, true, pl.errAt(pe.Position(), "two partition keys named %s", f)
		}
		names[f] = true
		keyOf[v.text] = f
		st.Key = append(st.Key, f)
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
	if n > 1 {
		// The n first rows of each key: nth_by(column, k, order) for
		// each rank k, the order by time descending as any other (ties:
		// the row added first).
		if lastByTime {
			order = []string{"desc(" + order[0] + ")"}
		}
		fn = "nth_by"
	}
	out := &rel{at: sel.At}
	sd := &stageDef{kind: stageAgg, out: map[string]typ{}}
	rankCol := map[int64][]*col{} // n > 1: rank k's columns (key columns too)
	for _, c := range cols.cols {
		if c.fields != nil {
			return nil, true, pl.errAt(inner.At, "%s is a ROW: select its fields", c.name)
		}
		if k, ok := keyOf[c.v.text]; ok {
			kc := &col{qual: c.qual, name: c.name, v: val{text: k, field: k, t: c.v.t}}
			out.cols = append(out.cols, kc)
			for r := int64(1); r <= n && n > 1; r++ {
				rankCol[r] = append(rankCol[r], kc)
			}
			sd.out[k] = c.v.t
			continue
		}
		if c.v.win != "" {
			return nil, true, pl.errAt(inner.At, "window columns need an aggregation: GROUP BY window_start, window_end")
		}
		if n > 1 {
			for k := int64(1); k <= n; k++ {
				name := uniqueName(names, fmt.Sprintf("__%s_%d", sanitize(c.name), k))
				names[name] = true
				st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: name, Expr: fmt.Sprintf("nth_by(%s, %d, %s)", c.v.text, k, strings.Join(order, ", "))})
				sd.out[name] = c.v.t
				rankCol[k] = append(rankCol[k], &col{qual: c.qual, name: c.name, v: val{text: name, field: name, t: c.v.t}})
			}
			out.cols = append(out.cols, rankCol[1][len(rankCol[1])-1])
			continue
		}
		name := c.name
		if names[name] || !fieldNameOK(name) {
			name = uniqueName(names, "__"+sanitize(name))
		}
		names[name] = true
		st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: name, Expr: fn + "(" + c.v.text + ", " + strings.Join(order, ", ") + ")"})
		sd.out[name] = c.v.t
		out.cols = append(out.cols, &col{qual: c.qual, name: c.name, v: val{text: name, field: name, t: c.v.t}})
	}
	rowsName := "__rows"
	if n > 1 {
		// The rows a key has: rank k exists when it has k.
		rowsName = uniqueName(names, "__rows")
		names[rowsName] = true
		st.Aggregates = append(st.Aggregates, spec.NamedExpr{Name: rowsName, Expr: "count()"})
		sd.out[rowsName] = tInt
	}
	if len(st.Aggregates) == 0 {
		st.Aggregates = spec.NamedExprs{{Name: "__rows", Expr: "count()"}}
	}
	st.Fields = b.fields
	if tz := pl.localZone(); tz != "UTC" {
		st.Window.Timezone = tz
	}
	if err := pl.stageSettings(&st, "final"); err != nil {
		return nil, true, err
	}
	if n > 1 && st.Emit.Mode != "final" {
		return nil, true, pl.errAt(bound.Position(), "a Top-N of more than one row per key gives its rows when the input ends (emit mode final, the ranks of each key as the whole input sorts them); emit mode %s is for Top-1 (%s <= 1)", st.Emit.Mode, rnName)
	}
	if in.prod.kind == prodStage {
		sd.input = in.prod.stage
	}
	sd.st = st
	sd.updating = st.Emit.Mode != "final"
	sd = pl.addStage(sd)
	out.prod = &producer{kind: prodStage, stage: sd}
	if n > 1 {
		return pl.topNRanks(sel, sub, where, bound, rnName, n, rankCol, rowsName, out.prod)
	}
	// rn: 1 on every row.
	out.cols = append(out.cols, &col{name: rnName, v: val{text: "1", t: tInt}})
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

// topNRanks plans the outer query of a Top-N of n > 1 rows per key over
// prod, an aggregation whose rank-k columns are rankCol[k] (nth_by) and
// whose rowsName counts the key's rows: for each rank k, the relation of
// the keys with at least k rows, their rank-k columns and rn = k, under
// the outer query (its WHERE without the bound, its SELECT list). The
// relation returned is rank 1's, with every rank's in ranks: the INSERT
// writes their union (insertQuery).
func (pl *planner) topNRanks(sel *parser.Select, sub *parser.SubqueryRef, where []parser.Expr, bound parser.Expr, rnName string, n int64, rankCol map[int64][]*col, rowsName string, prod *producer) (*rel, bool, error) {
	if len(sel.GroupBy) > 0 || sel.Having != nil || sel.Distinct || pl.hasAggregates(sel) {
		return nil, true, pl.errAt(sel.At, "a Top-N of more than one row per key is written as it is (its ranks' rows into the sink): aggregating its rows is not supported")
	}
	var ranks []*rel
	for k := int64(1); k <= n; k++ {
		out := &rel{at: sel.At, prod: prod}
		out.cols = append(append(out.cols, rankCol[k]...), &col{name: rnName, v: val{text: strconv.FormatInt(k, 10), t: tInt}})
		out.filter = []string{fmt.Sprintf("%s >= %d", rowsName, k)}
		if sub.Alias != nil {
			out = requalify(out, sub.Alias.Name)
		}
		for _, w := range where {
			if w == bound {
				continue
			}
			v, err := pl.expr(w, &ectx{rel: out, where: "WHERE"})
			if err != nil {
				return nil, true, err
			}
			out = out.clone()
			out.filter = append(out.filter, v.text)
		}
		r, err := pl.project(sel.Items, out, &ectx{rel: out, where: "the SELECT list"})
		if err != nil {
			return nil, true, err
		}
		ranks = append(ranks, r)
	}
	first := ranks[0].clone()
	first.ranks = ranks
	return first, true, nil
}
