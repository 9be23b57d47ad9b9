package planner

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sql/parser"
)

// scopeCTE is the WITH queries visible while planning a query.
type scopeCTE map[string]*parser.CTE

// query plans a query into a relation.
func (pl *planner) query(q parser.Query, ctes scopeCTE) (*rel, error) {
	switch q := q.(type) {
	case *parser.With:
		inner := scopeCTE{}
		for k, v := range ctes {
			inner[k] = v
		}
		for _, c := range q.CTEs {
			inner[c.Name.Name] = c
		}
		return pl.query(q.Body, inner)
	case *parser.SetOp:
		if q.Op == "UNION" && q.All {
			return nil, pl.errAt(q.At, "UNION ALL is supported as the whole query of an INSERT (each branch its own stage into the sink); here it feeds another query")
		}
		return nil, pl.errAt(q.At, "%s%s is not supported: UNION ALL of INSERT queries is", q.Op, map[bool]string{true: " ALL", false: ""}[q.All])
	case *parser.Values:
		return nil, pl.errAt(q.At, "VALUES is not supported: tidemark reads its rows from a source table")
	case *parser.Select:
		return pl.selectQuery(q, ctes)
	}
	return nil, pl.errAt(q.Position(), "unsupported query")
}

// selectQuery plans one SELECT.
func (pl *planner) selectQuery(sel *parser.Select, ctes scopeCTE) (*rel, error) {
	if sel.From == nil {
		return nil, pl.errAt(sel.At, "a SELECT without FROM has no rows to stream: read a table")
	}
	if len(sel.OrderBy) > 0 {
		return nil, pl.errAt(sel.OrderBy[0].Expr.Position(), "ORDER BY is not supported: rows come in event-time order per key; for the first N rows per group use ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) in a subquery with WHERE rn <= N")
	}
	if sel.Limit != nil {
		return nil, pl.errAt(sel.Limit.Position(), "LIMIT is not supported on a stream: use ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) with WHERE rn <= N")
	}
	if sel.GroupingSets != "" {
		return nil, pl.errAt(sel.At, "GROUP BY %s is not supported: write one GROUP BY per INSERT", sel.GroupingSets)
	}
	var where []parser.Expr
	if sel.Where != nil {
		where = conjuncts(sel.Where)
	}
	if r, ok, err := pl.topN(sel, where, ctes); ok || err != nil {
		return r, err
	}
	in, rest, err := pl.from(sel.From, where, ctes)
	if err != nil {
		return nil, err
	}
	for _, w := range rest {
		v, err := pl.expr(w, &ectx{rel: in, where: "WHERE"})
		if err != nil {
			return nil, err
		}
		if err := pl.want(w, v, row.KindBool, "WHERE"); err != nil {
			return nil, err
		}
		in = in.clone()
		in.filter = append(in.filter, v.text)
	}
	if len(sel.GroupBy) > 0 || sel.Having != nil || sel.Distinct || pl.hasAggregates(sel) {
		return pl.aggregate(sel, in)
	}
	for _, it := range sel.Items {
		if it.Expr != nil {
			if fc, ok := it.Expr.(*parser.FuncCall); ok && fc.Over != nil {
				return nil, pl.errAt(fc.At, "%s() OVER (…) is supported as ROW_NUMBER() in a subquery that an outer query filters with WHERE rn <= N (Top-N, deduplication)", fc.FuncName())
			}
		}
	}
	return pl.project(sel.Items, in, &ectx{rel: in, where: "the SELECT list"})
}

// conjuncts splits e at its top-level ANDs.
func conjuncts(e parser.Expr) []parser.Expr {
	if b, ok := e.(*parser.Binary); ok && b.Op == "AND" {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []parser.Expr{e}
}

// hasAggregates reports whether the SELECT list has an aggregate call.
func (pl *planner) hasAggregates(sel *parser.Select) bool {
	for _, it := range sel.Items {
		if it.Expr != nil && containsAgg(it.Expr) {
			return true
		}
	}
	return false
}

// containsAgg reports whether e holds an aggregate call (not under OVER).
func containsAgg(e parser.Expr) bool {
	found := false
	walkExpr(e, func(x parser.Expr) bool {
		if fc, ok := x.(*parser.FuncCall); ok && fc.Over == nil && aggregateFuncs[fc.FuncName()] {
			found = true
			return false
		}
		return true
	})
	return found
}

// hasColumns reports whether e reads a column.
func hasColumns(e parser.Expr) bool {
	found := false
	walkExpr(e, func(x parser.Expr) bool {
		switch x.(type) {
		case *parser.ColumnRef:
			found = true
		case *parser.FuncCall:
			if fc := x.(*parser.FuncCall); fc.FuncName() == "PROCTIME" {
				found = true
			}
		}
		return !found
	})
	return found
}

// walkExpr calls f on e and its sub-expressions (pre-order) while f
// returns true.
func walkExpr(e parser.Expr, f func(parser.Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch e := e.(type) {
	case *parser.Binary:
		walkExpr(e.L, f)
		walkExpr(e.R, f)
	case *parser.Unary:
		walkExpr(e.X, f)
	case *parser.FuncCall:
		for _, a := range e.Args {
			walkExpr(a, f)
		}
		walkExpr(e.Filter, f)
	case *parser.Case:
		walkExpr(e.Operand, f)
		for _, w := range e.Whens {
			walkExpr(w.Cond, f)
			walkExpr(w.Result, f)
		}
		walkExpr(e.Else, f)
	case *parser.Cast:
		walkExpr(e.X, f)
	case *parser.Between:
		walkExpr(e.X, f)
		walkExpr(e.Lo, f)
		walkExpr(e.Hi, f)
	case *parser.InList:
		walkExpr(e.X, f)
		for _, x := range e.List {
			walkExpr(x, f)
		}
	case *parser.IsTest:
		walkExpr(e.X, f)
		walkExpr(e.Y, f)
	case *parser.Like:
		walkExpr(e.X, f)
		walkExpr(e.Pattern, f)
	case *parser.Extract:
		walkExpr(e.X, f)
	case *parser.NamedArg:
		walkExpr(e.Value, f)
	case *parser.Index:
		walkExpr(e.X, f)
		walkExpr(e.Index, f)
	}
}

// outputName is a SELECT item's column name: its alias, a column's own
// name, else EXPR$i (Calcite's).
func outputName(it *parser.SelectItem, i int) string {
	if it.Alias != nil {
		return it.Alias.Name
	}
	if ref, ok := it.Expr.(*parser.ColumnRef); ok {
		return ref.Parts[len(ref.Parts)-1].Name
	}
	return fmt.Sprintf("EXPR$%d", i)
}

// project plans a SELECT list without aggregation: a relation over the
// same producer whose columns are the items.
func (pl *planner) project(items []*parser.SelectItem, in *rel, cx *ectx) (*rel, error) {
	out := &rel{prod: in.prod, filter: in.filter, win: in.win, at: in.at}
	seen := map[string]bool{}
	add := func(c *col, at parser.Pos) error {
		if seen[c.name] {
			// Calcite's rule: a repeated name gets a number (dateTime0).
			for i := 0; ; i++ {
				if n := fmt.Sprintf("%s%d", c.name, i); !seen[n] {
					c.name = n
					break
				}
			}
		}
		seen[c.name] = true
		out.cols = append(out.cols, c)
		return nil
	}
	for i, it := range items {
		switch {
		case it.Star:
			qual := ""
			if it.Qualifier != nil {
				qual = it.Qualifier.Last().Name
				if !pl.hasQual(in, qual) {
					return nil, pl.errAt(it.At, "%s.*: no table or alias %s here%s", qual, qual, hintOf(qual, quals(in)))
				}
			}
			for _, c := range in.visible(qual) {
				cc := *c
				cc.qual = ""
				if err := add(&cc, it.At); err != nil {
					return nil, err
				}
			}
		default:
			name := outputName(it, i)
			if ref, ok := it.Expr.(*parser.ColumnRef); ok && cx.group == nil {
				c, err := pl.resolve(in, ref)
				if err != nil {
					return nil, err
				}
				if c.fields != nil {
					// A ROW column keeps its fields.
					cc := *c
					cc.qual, cc.name = "", name
					if err := add(&cc, it.At); err != nil {
						return nil, err
					}
					continue
				}
				if c.v.win != "" {
					cc := *c
					cc.qual, cc.name, cc.hidden = "", name, false
					if err := add(&cc, it.At); err != nil {
						return nil, err
					}
					continue
				}
			}
			v, err := pl.expr(it.Expr, cx)
			if err != nil {
				return nil, err
			}
			if err := add(&col{name: name, v: v}, it.At); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func quals(r *rel) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range r.cols {
		if c.qual != "" && !seen[c.qual] {
			seen[c.qual] = true
			out = append(out, c.qual)
		}
	}
	return out
}

// requalify returns r with every column qualified by q (a FROM alias).
func requalify(r *rel, q string) *rel {
	out := r.clone()
	for i, c := range out.cols {
		cc := *c
		cc.qual = q
		out.cols[i] = &cc
	}
	return out
}

// from plans a FROM item. where are the WHERE conjuncts: a join takes
// those it needs (its keys, bounds and the sides' own conditions) and
// returns the rest.
func (pl *planner) from(te parser.TableExpr, where []parser.Expr, ctes scopeCTE) (*rel, []parser.Expr, error) {
	switch te := te.(type) {
	case *parser.TableRef:
		if te.ForSystemTime != nil {
			return nil, nil, pl.errAt(te.ForSystemTime.Position(), "FOR SYSTEM_TIME AS OF belongs to the right side of a join (a temporal join): … JOIN %s FOR SYSTEM_TIME AS OF l.ts AS r ON …", te.Name.String())
		}
		r, err := pl.tableRef(te, ctes, false)
		return r, where, err
	case *parser.SubqueryRef:
		if te.Lateral {
			return nil, nil, pl.errAt(te.At, "LATERAL subqueries are not supported")
		}
		r, err := pl.query(te.Query, ctes)
		if err != nil {
			return nil, nil, err
		}
		q := ""
		if te.Alias != nil {
			q = te.Alias.Name
		}
		r = requalify(r, q)
		if len(te.ColumnAliases) > 0 {
			if r, err = pl.renameColumns(r, te.ColumnAliases, te.At); err != nil {
				return nil, nil, err
			}
		}
		return r, where, nil
	case *parser.TableFunc:
		r, err := pl.tableFunc(te, ctes)
		return r, where, err
	case *parser.JoinExpr:
		return pl.join(te, where, ctes)
	}
	return nil, nil, pl.errAt(te.Position(), "unsupported FROM item")
}

// renameColumns applies AS alias(c1, c2, …).
func (pl *planner) renameColumns(r *rel, names []*parser.Ident, at parser.Pos) (*rel, error) {
	vis := r.visible("")
	if len(vis) != len(names) {
		return nil, pl.errAt(at, "%d column names for %d columns", len(names), len(vis))
	}
	out := r.clone()
	out.cols = nil
	for i, c := range vis {
		cc := *c
		cc.name = names[i].Name
		out.cols = append(out.cols, &cc)
	}
	return out, nil
}

// tableRef plans a table or view by name. asInput allows a table other
// than the pipeline's source (a join side).
func (pl *planner) tableRef(te *parser.TableRef, ctes scopeCTE, asInput bool) (*rel, error) {
	if err := pl.checkQualified(te.Name); err != nil {
		return nil, err
	}
	name := te.Name.Last().Name
	qual := name
	if te.Alias != nil {
		qual = te.Alias.Name
	}
	if c, ok := ctes[name]; ok && len(te.Name.Parts) == 1 {
		if len(te.Options) > 0 {
			return nil, pl.errAt(te.At, "OPTIONS hints belong to tables, not to WITH queries")
		}
		r, err := pl.viewQuery(name, c.Query, ctes, te.At)
		if err != nil {
			return nil, err
		}
		if len(c.Columns) > 0 {
			if r, err = pl.renameColumns(r, c.Columns, te.At); err != nil {
				return nil, err
			}
		}
		return pl.aliased(requalify(r, qual), te)
	}
	if v, ok := pl.views[name]; ok {
		if len(te.Options) > 0 {
			return nil, pl.errAt(te.At, "OPTIONS hints belong to tables, not to views")
		}
		r, err := pl.viewQuery(name, v.Query, nil, te.At)
		if err != nil {
			return nil, err
		}
		if len(v.Columns) > 0 {
			if r, err = pl.renameColumns(r, v.Columns, te.At); err != nil {
				return nil, err
			}
		}
		return pl.aliased(requalify(r, qual), te)
	}
	t, ok := pl.tables[name]
	if !ok {
		var names []string
		for n := range pl.tables {
			names = append(names, n)
		}
		for n := range pl.views {
			names = append(names, n)
		}
		for n := range ctes {
			names = append(names, n)
		}
		return nil, pl.errAt(te.Name.Position(), "unknown table or view %s%s", name, hintOf(name, names))
	}
	if t.role == "sink" {
		return nil, pl.errAt(te.Name.Position(), "table %s is written by an INSERT; a table is read or written, not both (read the query that writes it instead: a view)", name)
	}
	if len(te.Options) > 0 {
		// OPTIONS hints override the table's WITH options.
		merged := map[string]*parser.Option{}
		var list []*parser.Option
		for _, o := range t.def.With {
			merged[o.Key] = o
			list = append(list, o)
		}
		for _, o := range te.Options {
			if prev, ok := merged[o.Key]; ok {
				*prev = *o
			} else {
				list = append(list, o)
			}
		}
		opts, err := pl.newOptSet(list)
		if err != nil {
			return nil, err
		}
		t.opts = opts
	}
	var prod *producer
	switch {
	case pl.source == nil || pl.source == t:
		if pl.source == nil {
			pl.source = t
			t.role = "source"
		}
		prod = &producer{kind: prodSource, name: "source", table: t}
	case t.role == "input" || asInput:
		if t.role != "input" {
			t.role = "input"
			pl.inputs = append(pl.inputs, t)
		}
		prod = &producer{kind: prodInput, name: t.name, table: t}
	default:
		return nil, pl.errAt(te.Name.Position(), "table %s is a second source: a pipeline reads one source (%s), and other tables only as the side of a join", name, pl.source.name)
	}
	r := &rel{prod: prod, at: te.At}
	for _, c := range t.cols {
		cc := *c
		cc.qual = qual
		if t.wm != nil && c.v.field == t.wm.field && c.name == t.wm.column {
			cc.v.rowtime = true
		}
		if src, ok := t.shadowed[c.name]; ok {
			cc.v = val{text: c.v.text, t: c.v.t, win: "", field: ""}
			cc.hidden = true
			cc.v.text = "\x00shadowed:" + src
		}
		r.cols = append(r.cols, &cc)
	}
	if te.Alias != nil && len(te.ColumnAliases) > 0 {
		return pl.renameColumns(r, te.ColumnAliases, te.At)
	}
	return r, nil
}

func (pl *planner) aliased(r *rel, te *parser.TableRef) (*rel, error) {
	if te.Alias != nil && len(te.ColumnAliases) > 0 {
		return pl.renameColumns(r, te.ColumnAliases, te.At)
	}
	return r, nil
}

// viewQuery plans a view's (or WITH query's) query, refusing a cycle.
func (pl *planner) viewQuery(name string, q parser.Query, ctes scopeCTE, at parser.Pos) (*rel, error) {
	for _, s := range pl.viewStack {
		if s == name {
			return nil, pl.errAt(at, "view %s reads itself (%s)", name, strings.Join(append(pl.viewStack, name), " → "))
		}
	}
	pl.viewStack = append(pl.viewStack, name)
	defer func() { pl.viewStack = pl.viewStack[:len(pl.viewStack)-1] }()
	return pl.query(q, ctes)
}
