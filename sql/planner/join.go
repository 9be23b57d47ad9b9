package planner

import (
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// The sides' aliases in a join stage's spec: fixed, so that renaming a
// query's aliases leaves the plan as it is.
const (
	leftAlias  = "L"
	rightAlias = "R"
)

// joinSide is one planned side of a join.
type joinSide struct {
	r  *rel
	te parser.TableExpr
}

// sideOf tells which side a condition reads: 1 left, 2 right, 3 both, 0
// neither. An unknown or ambiguous column is an error.
func (pl *planner) sideOf(e parser.Expr, l, r *rel) (int, error) {
	side := 0
	var err error
	walkExpr(e, func(x parser.Expr) bool {
		ref, ok := x.(*parser.ColumnRef)
		if !ok || err != nil {
			return err == nil
		}
		inL, inR := pl.has(l, ref), pl.has(r, ref)
		switch {
		case inL && inR:
			err = pl.errAt(ref.Position(), "column %s is on both sides of the join: qualify it (%s.%s)", ref.String(), firstQual(l), ref.String())
		case inL:
			side |= 1
		case inR:
			side |= 2
		default:
			both := &rel{cols: append(append([]*col(nil), l.cols...), r.cols...)}
			_, err = pl.resolve(both, ref)
			if err == nil {
				err = pl.errAt(ref.Position(), "column %s: not found on either side", ref.String())
			}
		}
		return err == nil
	})
	return side, err
}

func firstQual(r *rel) string {
	for _, c := range r.cols {
		if c.qual != "" {
			return c.qual
		}
	}
	return "t"
}

// join plans FROM a JOIN b ON … (and FROM a, b WHERE …): a join stage
// over the sides' producers. Conditions on one side become the side's
// filter; equalities between the sides its keys; conditions on the
// sides' event times its bounds (an interval join), window columns a
// window join, FOR SYSTEM_TIME AS OF a temporal join; the rest are
// conditions on the joined rows, returned (for WHERE) or kept as the
// relation's filter (for ON of an inner join).
func (pl *planner) join(j *parser.JoinExpr, where []parser.Expr, ctes scopeCTE) (*rel, []parser.Expr, error) {
	kind := j.Kind
	lte, rte := j.Left, j.Right
	switch kind {
	case "CROSS":
		return nil, nil, pl.errAt(j.At, "CROSS JOIN is not supported: a streaming join needs an equality key (JOIN … ON a.k = b.k)")
	case "RIGHT":
		kind, lte, rte = "LEFT", rte, lte
	}
	if len(j.Using) > 0 {
		return nil, nil, pl.errAt(j.At, "JOIN … USING is not supported: write ON l.col = r.col")
	}
	var asOf parser.Expr
	if tr, ok := rte.(*parser.TableRef); ok && tr.ForSystemTime != nil {
		asOf = tr.ForSystemTime
		cp := *tr
		cp.ForSystemTime = nil
		rte = &cp
	}
	if tr, ok := lte.(*parser.TableRef); ok && tr.ForSystemTime != nil {
		return nil, nil, pl.errAt(tr.ForSystemTime.Position(), "FOR SYSTEM_TIME AS OF belongs to the right side of a join (the versioned table)")
	}
	l, err := pl.joinInput(lte, ctes)
	if err != nil {
		return nil, nil, err
	}
	r, err := pl.joinInput(rte, ctes)
	if err != nil {
		return nil, nil, err
	}
	var conds, rest []parser.Expr
	if j.On != nil {
		conds = conjuncts(j.On)
	}
	inner := kind == "INNER" || kind == ","
	for _, w := range where {
		side, err := pl.sideOf(w, l, r)
		if err != nil {
			return nil, nil, err
		}
		if inner && side != 0 {
			conds = append(conds, w)
		} else {
			rest = append(rest, w)
		}
	}
	js := &spec.Join{Kind: map[string]string{"INNER": spec.JoinInner, ",": spec.JoinInner, "LEFT": spec.JoinLeft, "FULL": spec.JoinFull}[kind]}
	var keysL, keysR []val
	var filterL, filterR []string
	var residual []parser.Expr
	var bounds []parser.Expr
	var winEq []parser.Expr
	sameTime := false
	for _, c := range conds {
		side, err := pl.sideOf(c, l, r)
		if err != nil {
			return nil, nil, err
		}
		switch side {
		case 1, 2:
			sr := l
			if side == 2 {
				sr = r
			}
			if !inner && (side == 1 || kind == "FULL") {
				return nil, nil, pl.errAt(c.Position(), "a condition on the preserved side of a %s JOIN's ON is not supported: filter that side in a subquery", kind)
			}
			v, err := pl.expr(c, &ectx{rel: sr, where: "ON"})
			if err != nil {
				return nil, nil, err
			}
			if err := pl.want(c, v, row.KindBool, "ON"); err != nil {
				return nil, nil, err
			}
			if side == 1 {
				filterL = append(filterL, v.text)
			} else {
				filterR = append(filterR, v.text)
			}
			continue
		case 0:
			residual = append(residual, c)
			continue
		}
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			ls, err1 := pl.sideOf(b.L, l, r)
			rs, err2 := pl.sideOf(b.R, l, r)
			if err1 == nil && err2 == nil && (ls == 1 && rs == 2 || ls == 2 && rs == 1) {
				a, bb := b.L, b.R
				if ls == 2 {
					a, bb = bb, a
				}
				va, err := pl.expr(a, &ectx{rel: l, where: "ON", allowWindow: true})
				if err != nil {
					return nil, nil, err
				}
				vb, err := pl.expr(bb, &ectx{rel: r, where: "ON", allowWindow: true})
				if err != nil {
					return nil, nil, err
				}
				if va.win != "" || vb.win != "" {
					if va.win != vb.win || va.win == "window_time" {
						return nil, nil, pl.errAt(c.Position(), "a window join pairs window_start with window_start and window_end with window_end")
					}
					winEq = append(winEq, c)
					continue
				}
				if va.rowtime && vb.rowtime {
					bounds = append(bounds, c)
					continue
				}
				if va.hasOff && vb.hasOff && va.off == vb.off {
					// Both the sides' time plus one offset (window_end of
					// two aggregations): equal exactly when their rows'
					// times are, a bound of [0, 0] besides the key.
					sameTime = true
				}
				if err := pl.comparable(b.At, va, vb); err != nil {
					return nil, nil, err
				}
				if va.t.kind != vb.t.kind {
					return nil, nil, pl.errAt(b.At, "the join key's two sides have different types (%s and %s): CAST one", va.t, vb.t)
				}
				keysL, keysR = append(keysL, va), append(keysR, vb)
				continue
			}
		}
		if pl.isTimeBound(c, l, r) {
			bounds = append(bounds, c)
			continue
		}
		residual = append(residual, c)
	}
	if len(keysL) == 0 {
		return nil, nil, pl.errAt(j.At, "the join has no equality key between its sides (ON l.k = r.k): a streaming join pairs rows by key")
	}
	// The join's type.
	switch {
	case asOf != nil:
		js.Type = "temporal"
		if len(bounds) > 0 || len(winEq) > 0 {
			return nil, nil, pl.errAt(j.At, "a temporal join (FOR SYSTEM_TIME AS OF) takes no time bounds or windows")
		}
		if err := pl.checkAsOf(asOf, l, r); err != nil {
			return nil, nil, err
		}
		if kind == "FULL" {
			return nil, nil, pl.errAt(j.At, "a temporal join keeps the left rows: INNER or LEFT")
		}
	case len(winEq) > 0:
		js.Type = "window"
		if l.win == nil || r.win == nil {
			return nil, nil, pl.errAt(j.At, "a window join reads two window table functions' rows (FROM TABLE(TUMBLE(…)) on both sides)")
		}
		if len(winEq) != 2 {
			return nil, nil, pl.errAt(j.At, "a window join pairs both window_start and window_end of its sides")
		}
		if l.win.w != r.win.w {
			return nil, nil, pl.errAt(j.At, "a window join's sides need the same windows")
		}
		if l.win.w.Type != "tumbling" && l.win.w.Type != "sliding" {
			return nil, nil, pl.errAt(l.win.at, "a window join pairs tumbling or sliding (HOP) windows")
		}
		w := l.win.w
		js.Window = &w
		for _, s := range []*rel{l, r} {
			if err := pl.checkWindowTime(s); err != nil {
				return nil, nil, err
			}
		}
	case len(bounds) == 0 && sameTime:
		// Rows of two aggregations' same windows: their times are equal.
		js.Type = "interval"
		zero := spec.Duration(0)
		js.Between = &spec.JoinBounds{Upper: &zero}
	case len(bounds) > 0:
		js.Type = "interval"
		swap, b, err := pl.intervalBounds(bounds, l, r)
		if err != nil {
			return nil, nil, err
		}
		if swap {
			if kind == "LEFT" {
				return nil, nil, pl.errAt(j.At, "the bound given by a column belongs to the left side of a LEFT JOIN")
			}
			l, r = r, l
			keysL, keysR = keysR, keysL
			filterL, filterR = filterR, filterL
		}
		js.Between = b
	default:
		js.Type = "regular"
		o, ok := pl.setting("table.exec.state.ttl")
		if t2, ok2 := pl.setting("tidemark.join.ttl"); ok2 {
			o, ok = t2, true
		}
		if !ok {
			return nil, nil, pl.errAt(j.At, "a regular join (no time bounds or windows) keeps every row for ever in Flink; tidemark bounds it in event time: SET 'table.exec.state.ttl' = '1 h' before the INSERT (rows at most that far apart pair up)")
		}
		d, err := pl.durationOpt(o)
		if err != nil {
			return nil, nil, err
		}
		if d <= 0 {
			return nil, nil, pl.errAt(o.ValueAt, "'%s' must be positive for a regular join", o.Key)
		}
		js.TTL = d
	}
	if len(residual) > 0 && !inner {
		return nil, nil, pl.errAt(residual[0].Position(), "a condition between the sides of a %s JOIN that is not an equality key or time bound is not supported", kind)
	}
	// The sides and keys.
	sides := [2]*rel{l, r}
	names := [2]string{leftAlias, rightAlias}
	for i, s := range sides {
		sd := &js.Left
		if i == 1 {
			sd = &js.Right
		}
		sd.As = names[i]
		sd.Input = s.prod.name
		if s.prod.kind == prodStage {
			sd.Input = "" // named when the pipeline is assembled
		}
		conds := append([]string(nil), s.filter...)
		if i == 0 {
			conds = append(conds, filterL...)
		} else {
			conds = append(conds, filterR...)
		}
		if len(conds) > 0 {
			sd.Filter = filterText(conds)
		}
	}
	for k := range keysL {
		js.On = append(js.On, prefixFields(keysL[k].text, l, leftAlias)+" = "+prefixFields(keysR[k].text, r, rightAlias))
	}
	if js.Between != nil && js.Between.UpperField != "" {
		js.Between.UpperField = leftAlias + "." + js.Between.UpperField
	}
	// The output: every plain column of both sides (named after the
	// column, or qual_column where both sides have one), the windows of a
	// window join; columns computed before the join are not carried.
	out := &rel{at: j.At}
	count := map[string]int{}
	for _, s := range sides {
		for _, c := range s.cols {
			if c.fields == nil && c.v.field != "" {
				count[c.name]++
			}
		}
	}
	used := map[string]bool{"event_time": true}
	for _, n := range []string{"window_start", "window_end", "version", "is_final", "op", "watermark_at", "updated_at", "lineage"} {
		used[n] = true
	}
	sd := &stageDef{kind: stageJoin, out: map[string]typ{"event_time": tTime}}
	winNames := map[string]string{}
	for i, s := range sides {
		if s.prod.kind == prodStage {
			sd.joinIn[i] = s.prod.stage
		}
	}
	for i, s := range sides {
		for _, c := range s.cols {
			cc := &col{qual: c.qual, name: c.name, hidden: c.hidden}
			if c.fields != nil {
				for _, f := range c.fields {
					if f.v.field == "" {
						continue
					}
					name := uniqueName(used, c.name+"_"+f.name)
					js.Select = append(js.Select, spec.NamedExpr{Name: name, Expr: names[i] + "." + f.v.field})
					sd.out[name] = f.v.t
					cc.fields = append(cc.fields, &col{qual: c.qual, name: f.name, v: val{text: name, field: name, t: f.v.t}})
				}
				out.cols = append(out.cols, cc)
				continue
			}
			if c.v.win != "" {
				if c.v.win != "window_time" {
					// The window join's windows, under names of their own
					// (window_start and window_end are the rows' reserved
					// columns).
					name, ok := winNames[c.v.win]
					if !ok {
						name = uniqueName(used, c.v.win)
						winNames[c.v.win] = name
						js.Select = append(js.Select, spec.NamedExpr{Name: name, Expr: c.v.win})
						sd.out[name] = tTime
					}
					cc.v = val{text: name, field: name, t: tTime}
				} else {
					cc.v = val{text: "\x00computed:" + c.name, t: tTime}
				}
				out.cols = append(out.cols, cc)
				continue
			}
			if c.v.field == "" || strings.HasPrefix(c.v.text, "\x00") {
				cc.v = val{text: "\x00computed:" + c.name, t: c.v.t}
				out.cols = append(out.cols, cc)
				continue
			}
			want := c.name
			if count[c.name] > 1 || used[want] || !fieldNameOK(want) {
				// The side's letter, not the query's alias: renaming an
				// alias leaves the plan as it is.
				want = names[i] + "_" + c.name
			}
			name := uniqueName(used, want)
			js.Select = append(js.Select, spec.NamedExpr{Name: name, Expr: names[i] + "." + c.v.field})
			sd.out[name] = c.v.t
			cc.v = val{text: name, field: name, t: c.v.t}
			if c.v.hasOff && js.Type == "interval" && len(bounds) == 0 && sameTime {
				// Two aggregations' same windows: a joined row's time
				// (the later of its sides') is each side's, so a column
				// at an offset to a side's time (its window_end) keeps it.
				cc.v.hasOff, cc.v.off = true, c.v.off
			}
			out.cols = append(out.cols, cc)
		}
	}
	out.cols = append(out.cols, &col{name: "event_time", hidden: true, v: val{text: "event_time", field: "event_time", t: tTime, rowtime: true}})
	st := spec.Stage{Join: js}
	if err := pl.stageSettings(&st, "final"); err != nil {
		return nil, nil, err
	}
	sd.st = st
	sd.updating = st.Emit.Mode != "final" && !(js.Kind == spec.JoinInner && js.Type != "temporal")
	sd = pl.addStage(sd)
	out.prod = &producer{kind: prodStage, stage: sd}
	for _, c := range residual {
		v, err := pl.expr(c, &ectx{rel: out, where: "ON"})
		if err != nil {
			return nil, nil, err
		}
		out.filter = append(out.filter, v.text)
	}
	return out, rest, nil
}

func uniqueName(used map[string]bool, want string) string {
	name := want
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s_%d", want, i)
	}
	used[name] = true
	return name
}

// joinInput plans one side of a join: a relation over the source or an
// input beside it.
func (pl *planner) joinInput(te parser.TableExpr, ctes scopeCTE) (*rel, error) {
	var r *rel
	var err error
	if tr, ok := te.(*parser.TableRef); ok {
		r, err = pl.tableRef(tr, ctes, true)
	} else {
		r, _, err = pl.from(te, nil, ctes)
	}
	if err != nil {
		return nil, err
	}
	if r.prod.kind == prodStage {
		sd := r.prod.stage
		switch {
		case sd.kind == stageSelect:
			return nil, pl.errAt(te.Position(), "a join side that reads a select stage is not supported: join the select's input with its conditions")
		case sd.updating:
			return nil, pl.errAt(te.Position(), "a join side reads rows that stay: this side's rows come from a stage that updates them (emit mode %s)", sd.st.Emit.Mode)
		case sd.st.TopN != nil:
			return nil, pl.errAt(te.Position(), "a join side that reads a Top-N of more than one row per key is not supported: its ranks are over all time (its rows come when the input ends, or as a changelog of the whole input's ranks), so they have no event time to bound the other side's state by; join first and rank the joined rows, or write the Top-N to a table of its own")
		case sd.kind == stageAgg && !sd.windowed && sd.st.Window.Type == "global":
			return nil, pl.errAt(te.Position(), "a join side that reads an aggregation without windows (its rows come when the input ends) is not supported: aggregate by a window")
		}
	}
	return r, nil
}

// prefixFields writes text's references to the producer's fields as
// alias.field (a join key computed from one side).
func prefixFields(text string, r *rel, alias string) string {
	fields := r.prod.fields()
	var b strings.Builder
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(text) && text[j] != '"' {
				if text[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(text) {
				j++
			}
			b.WriteString(text[i:j])
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(text) && (text[j] == '_' || text[j] == '.' || text[j] >= 'a' && text[j] <= 'z' || text[j] >= 'A' && text[j] <= 'Z' || text[j] >= '0' && text[j] <= '9') {
				j++
			}
			tok := text[i:j]
			if _, ok := fields[tok]; ok && (j >= len(text) || text[j] != '(') {
				b.WriteString(alias + "." + tok)
			} else {
				b.WriteString(tok)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// checkAsOf checks a temporal join's AS OF: the left side's event time,
// or a processing time (PROCTIME()) when the right side r is a lookup
// table: a bounded file table without a WATERMARK, which a
// processing-time lookup (Flink's filesystem lookup source, Nexmark q13)
// sees whole. Such a table is read as versions numbered by line, the
// version of line n valid from n ms after the epoch (table.lookup), so
// each left row takes its key's last line; the join waits for the file's
// end (its watermark then passes every event), so the rows are those of a
// lookup of the whole file, whatever the order the two inputs are read
// in: replayable, where a lookup of a table that changes is not.
func (pl *planner) checkAsOf(e parser.Expr, l, r *rel) error {
	v, err := pl.expr(e, &ectx{rel: l, where: "FOR SYSTEM_TIME AS OF"})
	if err != nil {
		return err
	}
	if v.proctime {
		t := r.prod.table
		switch {
		case r.prod.kind != prodInput || t == nil:
			return pl.errAt(e.Position(), "FOR SYSTEM_TIME AS OF a processing time looks up a table read as a whole: the right side is a table (a filesystem table without a WATERMARK), not a query")
		case t.wm != nil:
			return pl.errAt(e.Position(), "FOR SYSTEM_TIME AS OF a processing time on table %s, which has a WATERMARK: a processing-time lookup of a versioned table is not replayable; join as of the left side's event time (FOR SYSTEM_TIME AS OF its WATERMARK column)", t.name)
		case t.connector != "filesystem":
			return pl.errAt(e.Position(), "FOR SYSTEM_TIME AS OF a processing time looks up a bounded file ('connector' = 'filesystem'); table %s is '%s', whose rows change as it is read: join as of the left side's event time (a WATERMARK on %s)", t.name, t.connector, t.name)
		}
		t.lookup = true
		return nil
	}
	if !v.rowtime {
		return pl.errAt(e.Position(), "FOR SYSTEM_TIME AS OF names the left side's event time (the column of its WATERMARK)")
	}
	return nil
}

// checkWindowTime checks that a window join side's windows are on its
// event time.
func (pl *planner) checkWindowTime(s *rel) error {
	if !s.win.time.rowtime {
		return pl.errAt(s.win.at, "a window join's windows are on each side's event time (DESCRIPTOR of the column of its WATERMARK)")
	}
	return nil
}

// isTimeBound reports whether a condition compares the sides' times.
func (pl *planner) isTimeBound(c parser.Expr, l, r *rel) bool {
	timeSide := func(e parser.Expr) bool {
		v, err := pl.expr(e, &ectx{rel: &rel{cols: append(append([]*col(nil), l.cols...), r.cols...)}})
		return err == nil && v.t.kind == row.KindTime
	}
	switch c := c.(type) {
	case *parser.Between:
		return timeSide(c.X)
	case *parser.Binary:
		switch c.Op {
		case "<", "<=", ">", ">=":
			return timeSide(c.L) && timeSide(c.R)
		}
	}
	return false
}

// timeTerm is one side of a time comparison: side's event time plus off
// ms, or (col set) a time column of the side.
type timeTerm struct {
	side int // 1 left, 2 right
	off  int64
	col  string // a time column (not the event time): its field
}

// timeTermOf reads ts, ts ± INTERVAL, or a time column.
func (pl *planner) timeTermOf(e parser.Expr, l, r *rel) (timeTerm, error) {
	var off int64
	if b, ok := e.(*parser.Binary); ok && (b.Op == "+" || b.Op == "-") {
		iv, ok := b.R.(*parser.IntervalLit)
		if !ok {
			return timeTerm{}, pl.errAt(b.At, "a join's time bound is a side's time plus or minus an INTERVAL")
		}
		ms, err := pl.intervalMs(iv)
		if err != nil {
			return timeTerm{}, err
		}
		if b.Op == "-" {
			ms = -ms
		}
		off = ms
		e = b.L
	}
	ref, ok := e.(*parser.ColumnRef)
	if !ok {
		return timeTerm{}, pl.errAt(e.Position(), "a join's time bound names a side's time column")
	}
	side, err := pl.sideOf(ref, l, r)
	if err != nil {
		return timeTerm{}, err
	}
	s := l
	if side == 2 {
		s = r
	}
	c, err := pl.resolve(s, ref)
	if err != nil {
		return timeTerm{}, err
	}
	if c.v.t.kind != row.KindTime || c.v.field == "" {
		return timeTerm{}, pl.errAt(ref.Position(), "%s is not a time column of its side", ref.String())
	}
	if c.v.rowtime {
		return timeTerm{side: side, off: off}, nil
	}
	if c.v.hasOff {
		// The side's time plus an offset (an aggregation's window_end).
		return timeTerm{side: side, off: off + c.v.off}, nil
	}
	if off != 0 {
		return timeTerm{}, pl.errAt(e.Position(), "a bound given by a column takes no INTERVAL")
	}
	return timeTerm{side: side, col: c.v.field}, nil
}

// intervalBounds turns time conditions into the interval join's bounds on
// r.ts − l.ts. swap is true when the left and right sides must trade
// places (a bound given by a column belongs to the left side).
func (pl *planner) intervalBounds(conds []parser.Expr, l, r *rel) (bool, *spec.JoinBounds, error) {
	type cmp struct {
		a, b   timeTerm // a ≤ b
		at     parser.Pos
		strict bool
	}
	var cs []cmp
	for _, c := range conds {
		switch c := c.(type) {
		case *parser.Between:
			if c.Not {
				return false, nil, pl.errAt(c.At, "NOT BETWEEN is not a join bound")
			}
			x, err := pl.timeTermOf(c.X, l, r)
			if err != nil {
				return false, nil, err
			}
			lo, err := pl.timeTermOf(c.Lo, l, r)
			if err != nil {
				return false, nil, err
			}
			hi, err := pl.timeTermOf(c.Hi, l, r)
			if err != nil {
				return false, nil, err
			}
			cs = append(cs, cmp{lo, x, c.At, false}, cmp{x, hi, c.At, false})
		case *parser.Binary:
			a, err := pl.timeTermOf(c.L, l, r)
			if err != nil {
				return false, nil, err
			}
			b, err := pl.timeTermOf(c.R, l, r)
			if err != nil {
				return false, nil, err
			}
			switch c.Op {
			case "<=", "<":
				cs = append(cs, cmp{a, b, c.At, c.Op == "<"})
			case ">=", ">":
				cs = append(cs, cmp{b, a, c.At, c.Op == ">"})
			case "=":
				cs = append(cs, cmp{a, b, c.At, false}, cmp{b, a, c.At, false})
			}
		}
	}
	// A column bound: x ≤ col with col on one side, x the other side's
	// event time. The column's side is the left one.
	colSide := 0
	for _, c := range cs {
		for _, t := range []timeTerm{c.a, c.b} {
			if t.col != "" {
				if colSide != 0 && colSide != t.side {
					return false, nil, pl.errAt(c.at, "bounds given by columns of both sides")
				}
				colSide = t.side
			}
		}
	}
	swap := colSide == 2
	lside := 1
	if swap {
		lside = 2
	}
	const none = int64(1) << 62
	lower, upper := -none, none
	upperField := ""
	for _, c := range cs {
		a, b := c.a, c.b
		if a.side == b.side {
			return false, nil, pl.errAt(c.at, "a join's time bound compares the two sides' times")
		}
		var strictMs int64
		if c.strict {
			strictMs = 1
		}
		switch {
		case b.col != "":
			// a.ts + off ≤ L.col: an upper bound by the column (a is R).
			if a.off != 0 || a.side == lside {
				return false, nil, pl.errAt(c.at, "a bound given by a column is the other side's event time ≤ the column")
			}
			if upperField != "" && upperField != b.col {
				return false, nil, pl.errAt(c.at, "two upper bounds given by columns")
			}
			upperField = b.col
		case a.col != "":
			return false, nil, pl.errAt(c.at, "a lower bound given by a column is not supported (the column bounds r.ts − l.ts from above: r.ts <= l.expires)")
		case a.side == lside:
			// L.ts + a.off ≤ R.ts + b.off  ⇒  R.ts − L.ts ≥ a.off − b.off
			lower = max(lower, a.off-b.off+strictMs)
		default:
			// R.ts + a.off ≤ L.ts + b.off  ⇒  R.ts − L.ts ≤ b.off − a.off
			upper = min(upper, b.off-a.off-strictMs)
		}
	}
	if lower == -none {
		return false, nil, pl.errAt(cs[0].at, "the join's time bounds have no lower bound on the other side's time (write both: r.ts BETWEEN l.ts - INTERVAL … AND l.ts + INTERVAL …)")
	}
	b := &spec.JoinBounds{Lower: durationOf(lower)}
	switch {
	case upperField != "":
		if upper != none {
			return false, nil, pl.errAt(cs[0].at, "an upper bound by a column and by an interval together")
		}
		b.UpperField = upperField
		o, ok := pl.setting("tidemark.join.max_span")
		if !ok {
			return false, nil, pl.errAt(cs[0].at, "a bound given by a column needs a stated maximum span, how long a row may wait for its match: SET 'tidemark.join.max_span' = '4s' before the INSERT (rows whose bound lies further are quarantined)")
		}
		d, err := pl.durationOpt(o)
		if err != nil {
			return false, nil, err
		}
		b.MaxSpan = d
	case upper == none:
		return false, nil, pl.errAt(cs[0].at, "the join's time bounds have no upper bound: an interval join without one keeps every row for ever")
	default:
		if upper < lower {
			return false, nil, pl.errAt(cs[0].at, "the join's time bounds are empty (upper %d ms below lower %d ms)", upper, lower)
		}
		u := durationOf(upper)
		b.Upper = &u
	}
	return swap, b, nil
}
