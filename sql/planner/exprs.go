package planner

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sql/parser"
)

// ectx is what an expression is translated in: the relation its columns
// come from and, after a GROUP BY, the grouping (group keys and the
// aggregates found so far).
type ectx struct {
	rel *rel
	// where names the clause, for messages ("WHERE", "ON").
	where string
	// group is set for the SELECT list and HAVING of an aggregation.
	group *grouping
	// allowWindow lets window TVF columns through unplanned (join
	// conditions and GROUP BY keys read them).
	allowWindow bool
}

// konstText reports whether an expr-lang text is a literal.
func litVal(text string, t typ) val { return val{text: text, t: t} }

// expr translates e into expr-lang text over the producer of cx.rel.
func (pl *planner) expr(e parser.Expr, cx *ectx) (val, error) {
	if cx.group != nil {
		if v, handled, err := pl.groupedLeaf(e, cx); handled || err != nil {
			return v, err
		}
	}
	switch e := e.(type) {
	case *parser.ColumnRef:
		c, err := pl.resolve(cx.rel, e)
		if err != nil {
			return val{}, err
		}
		if name, ok := strings.CutPrefix(c.v.text, "\x00computed:"); ok {
			return val{}, pl.errAt(e.Position(), "%s is computed on a side of the join before it, and a join carries its sides' columns as they are: compute it after the join", name)
		}
		if src, ok := strings.CutPrefix(c.v.text, "\x00shadowed:"); ok {
			return val{}, pl.errAt(e.Position(), "%s is read as the event time %s (its TO_TIMESTAMP column): use %s", e.String(), src, src)
		}
		if c.fields != nil {
			return val{}, pl.errAt(e.Position(), "%s is a ROW: name one of its fields (%s.%s)", e.String(), e.String(), c.fields[0].name)
		}
		if c.v.win != "" && !cx.allowWindow {
			return val{}, pl.errAt(e.Position(), "%s of a window table function is known once the rows are grouped: GROUP BY window_start, window_end (an aggregation) or join on them (a window join)", c.name)
		}
		return c.v, nil
	case *parser.Literal:
		return pl.literal(e)
	case *parser.TypedLiteral:
		return val{}, pl.errAt(e.At, "%s literals are not supported yet", e.Type)
	case *parser.IntervalLit:
		return val{}, pl.errAt(e.At, "an INTERVAL is only supported in a WATERMARK, a window table function, a join's time bounds and TIMESTAMPADD")
	case *parser.Unary:
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		switch e.Op {
		case "NOT":
			if err := pl.want(e.X, x, row.KindBool, "NOT"); err != nil {
				return val{}, err
			}
			return val{text: "not " + x.paren(), t: tBool}, nil
		case "-":
			if !x.t.numeric() && x.t.kind != row.KindNull {
				return val{}, pl.errAt(e.At, "- needs a number, not %s", x.t)
			}
			return val{text: "-" + x.paren(), t: x.t}, nil
		}
		return x, nil
	case *parser.Binary:
		return pl.binary(e, cx)
	case *parser.IsTest:
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		switch e.What {
		case "NULL":
			if e.Not {
				return val{text: x.paren() + " != nil", t: tBool}, nil
			}
			return val{text: x.paren() + " == nil", t: tBool}, nil
		case "TRUE", "FALSE", "UNKNOWN":
			if err := pl.want(e.X, x, row.KindBool, "IS "+e.What); err != nil {
				return val{}, err
			}
			var s string
			switch e.What {
			case "TRUE":
				s = "(" + x.paren() + " ?? false)"
			case "FALSE":
				s = "not (" + x.paren() + " ?? true)"
			default:
				s = x.paren() + " == nil"
			}
			if e.Not {
				s = "not (" + s + ")"
			}
			return val{text: s, t: tBool}, nil
		}
		return val{}, pl.errAt(e.At, "IS %s is not supported", e.What)
	case *parser.Between:
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		lo, err := pl.expr(e.Lo, cx)
		if err != nil {
			return val{}, err
		}
		hi, err := pl.expr(e.Hi, cx)
		if err != nil {
			return val{}, err
		}
		if err := pl.comparable(e.At, x, lo); err != nil {
			return val{}, err
		}
		if err := pl.comparable(e.At, x, hi); err != nil {
			return val{}, err
		}
		if e.Not {
			return val{text: x.paren() + " < " + lo.paren() + " or " + x.paren() + " > " + hi.paren(), t: tBool}, nil
		}
		return val{text: x.paren() + " >= " + lo.paren() + " and " + x.paren() + " <= " + hi.paren(), t: tBool}, nil
	case *parser.InList:
		if e.Query != nil {
			return val{}, pl.errAt(e.At, "IN (subquery) is not supported: join the subquery instead")
		}
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		var items []string
		allLit := true
		var vals []val
		for _, it := range e.List {
			v, err := pl.expr(it, cx)
			if err != nil {
				return val{}, err
			}
			if err := pl.comparable(it.Position(), x, v); err != nil {
				return val{}, err
			}
			if v.t.kind == row.KindNull {
				return val{}, pl.errAt(it.Position(), "NULL in an IN list never matches: test IS NULL apart")
			}
			if _, ok := it.(*parser.Literal); !ok {
				allLit = false
			}
			items = append(items, v.paren())
			vals = append(vals, v)
		}
		if allLit {
			op := " in "
			if e.Not {
				op = " not in "
			}
			return val{text: x.paren() + op + "[" + strings.Join(items, ", ") + "]", t: tBool}, nil
		}
		var parts []string
		for _, v := range vals {
			if e.Not {
				parts = append(parts, x.paren()+" != "+v.paren())
			} else {
				parts = append(parts, x.paren()+" == "+v.paren())
			}
		}
		join := " or "
		if e.Not {
			join = " and "
		}
		return val{text: strings.Join(parts, join), t: tBool}, nil
	case *parser.Like:
		return pl.like(e, cx)
	case *parser.Case:
		return pl.caseExpr(e, cx)
	case *parser.Cast:
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		to, err := pl.sqlTypeOf(e.Type)
		if err != nil {
			return val{}, err
		}
		return pl.cast(e.At, x, to, e.Try)
	case *parser.FuncCall:
		return pl.call(e, cx)
	case *parser.Extract:
		x, err := pl.expr(e.X, cx)
		if err != nil {
			return val{}, err
		}
		return pl.timePart(e.At, e.Unit, x)
	case *parser.SubqueryExpr:
		return val{}, pl.errAt(e.At, "a subquery as a value is not supported: join it instead")
	case *parser.Index:
		return val{}, pl.errAt(e.At, "indexing [ ] is not supported: tidemark rows have no arrays or maps")
	case *parser.TableArg, *parser.Descriptor:
		return val{}, pl.errAt(e.Position(), "TABLE and DESCRIPTOR arguments belong to a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL …))")
	case *parser.NamedArg:
		return val{}, pl.errAt(e.At, "named arguments (=>) are supported for window table functions only")
	case *parser.TimeUnit:
		return val{}, pl.errAt(e.At, "a time unit here is not an expression")
	case *parser.Star:
		return val{}, pl.errAt(e.At, "* is not an expression here")
	}
	return val{}, pl.errAt(e.Position(), "unsupported expression %s", parser.Format(e))
}

// literal translates a literal.
func (pl *planner) literal(e *parser.Literal) (val, error) {
	switch e.Kind {
	case parser.LitNull:
		return val{text: "nil", t: tNull}, nil
	case parser.LitBool:
		return litVal(strings.ToLower(e.Text), tBool), nil
	case parser.LitString:
		return litVal(strconv.Quote(e.Text), tString), nil
	}
	text := e.Text
	if strings.ContainsAny(text, "eE") {
		// 1.5e3: exact, written out as a decimal.
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return val{}, pl.errAt(e.At, "bad number %s", text)
		}
		if r.IsInt() {
			text = r.Num().String() + ".0"
		} else {
			text = r.FloatString(19)
			text = strings.TrimRight(text, "0")
		}
		return litVal(text, tDecimal), nil
	}
	if strings.Contains(text, ".") {
		return litVal(text, typ{row.KindDecimal, fmt.Sprintf("DECIMAL(%d, %d)", len(strings.Replace(strings.TrimLeft(text, "-"), ".", "", 1)), len(text)-strings.Index(text, ".")-1)}), nil
	}
	if _, err := strconv.ParseInt(text, 10, 64); err != nil {
		return val{}, pl.errAt(e.At, "%s does not fit BIGINT; write it with a decimal point for a DECIMAL", text)
	}
	return litVal(text, tInt), nil
}

// want checks that v (from e) is of kind k (or NULL).
func (pl *planner) want(e parser.Expr, v val, k row.Kind, what string) error {
	if v.t.kind == k || v.t.kind == row.KindNull {
		return nil
	}
	return pl.errAt(e.Position(), "%s needs %s, not %s", what, kindName(k), v.t)
}

func kindName(k row.Kind) string {
	switch k {
	case row.KindBool:
		return "a BOOLEAN"
	case row.KindInt:
		return "a BIGINT"
	case row.KindDecimal:
		return "a DECIMAL"
	case row.KindString:
		return "a STRING"
	case row.KindTime:
		return "a TIMESTAMP"
	}
	return k.String()
}

// comparable checks that two values can be compared.
func (pl *planner) comparable(at parser.Pos, a, b val) error {
	switch {
	case a.t.kind == row.KindNull || b.t.kind == row.KindNull:
		return nil
	case a.t.kind == b.t.kind:
		return nil
	case a.t.numeric() && b.t.numeric():
		return nil
	}
	return pl.errAt(at, "cannot compare %s with %s", a.t, b.t)
}

func (pl *planner) binary(e *parser.Binary, cx *ectx) (val, error) {
	l, err := pl.expr(e.L, cx)
	if err != nil {
		return val{}, err
	}
	r, err := pl.expr(e.R, cx)
	if err != nil {
		return val{}, err
	}
	switch e.Op {
	case "AND", "OR":
		if err := pl.want(e.L, l, row.KindBool, e.Op); err != nil {
			return val{}, err
		}
		if err := pl.want(e.R, r, row.KindBool, e.Op); err != nil {
			return val{}, err
		}
		return val{text: l.paren() + " " + strings.ToLower(e.Op) + " " + r.paren(), t: tBool}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		if err := pl.comparable(e.At, l, r); err != nil {
			return val{}, err
		}
		if l.t.kind == row.KindBool && e.Op != "=" && e.Op != "<>" {
			return val{}, pl.errAt(e.At, "BOOLEAN values compare with = and <> only")
		}
		op := map[string]string{"=": "==", "<>": "!="}[e.Op]
		if op == "" {
			op = e.Op
		}
		if l.t.kind == row.KindNull || r.t.kind == row.KindNull {
			// x = NULL is NULL in SQL (not a null test).
			return val{text: "nil", t: tBool}, nil
		}
		return val{text: l.paren() + " " + op + " " + r.paren(), t: tBool}, nil
	case "||":
		for i, v := range []val{l, r} {
			if v.t.kind != row.KindString && v.t.kind != row.KindNull {
				return val{}, pl.errAt([]parser.Expr{e.L, e.R}[i].Position(), "|| joins strings; %s is %s (CAST it AS STRING)", parser.Format([]parser.Expr{e.L, e.R}[i]), v.t)
			}
		}
		return val{text: l.paren() + " + " + r.paren(), t: tString}, nil
	case "+", "-", "*", "/", "%":
		if l.t.kind == row.KindTime || r.t.kind == row.KindTime {
			return val{}, pl.errAt(e.At, "arithmetic on a TIMESTAMP is not supported: use TIMESTAMPADD(unit, n, ts)")
		}
		for i, v := range []val{l, r} {
			if !v.t.numeric() && v.t.kind != row.KindNull {
				return val{}, pl.errAt([]parser.Expr{e.L, e.R}[i].Position(), "%s needs numbers; %s is %s", e.Op, parser.Format([]parser.Expr{e.L, e.R}[i]), v.t)
			}
		}
		t := tInt
		if l.t.kind == row.KindDecimal || r.t.kind == row.KindDecimal {
			t = tDecimal
		}
		if l.t.kind == row.KindNull && r.t.kind == row.KindNull {
			t = tNull
		}
		text := l.paren() + " " + e.Op + " " + r.paren()
		if e.Op == "/" && t.kind == row.KindInt {
			// BIGINT / BIGINT is a BIGINT in SQL, truncated toward zero
			// (Java's long division); tidemark's / is exact.
			text = "int(" + text + ")"
		}
		return val{text: text, t: t}, nil
	}
	return val{}, pl.errAt(e.At, "unsupported operator %s", e.Op)
}

// like translates LIKE with a constant pattern into a regular expression
// match (% any run, _ one character; ESCAPE c makes c quote the next).
func (pl *planner) like(e *parser.Like, cx *ectx) (val, error) {
	x, err := pl.expr(e.X, cx)
	if err != nil {
		return val{}, err
	}
	if err := pl.want(e.X, x, row.KindString, e.Op); err != nil {
		return val{}, err
	}
	lit, ok := e.Pattern.(*parser.Literal)
	if !ok || lit.Kind != parser.LitString {
		return val{}, pl.errAt(e.Pattern.Position(), "%s needs a constant pattern ('a%%')", e.Op)
	}
	if e.Op != "LIKE" {
		return val{}, pl.errAt(e.At, "SIMILAR TO is not supported: use LIKE or REGEXP(s, pattern)")
	}
	esc := rune(0)
	if e.Escape != nil {
		el, ok := e.Escape.(*parser.Literal)
		if !ok || el.Kind != parser.LitString || len([]rune(el.Text)) != 1 {
			return val{}, pl.errAt(e.Escape.Position(), "ESCAPE needs one character")
		}
		esc = []rune(el.Text)[0]
	}
	var b strings.Builder
	b.WriteString("^(?s:")
	rs := []rune(lit.Text)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case esc != 0 && c == esc && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(")$")
	text := x.paren() + " matches " + strconv.Quote(b.String())
	if e.Not {
		text = "not (" + text + ")"
	}
	return val{text: text, t: tBool}, nil
}

func (pl *planner) caseExpr(e *parser.Case, cx *ectx) (val, error) {
	var op val
	if e.Operand != nil {
		var err error
		if op, err = pl.expr(e.Operand, cx); err != nil {
			return val{}, err
		}
	}
	type arm struct{ cond, res val }
	var arms []arm
	t := tNull
	unify := func(at parser.Pos, v val) error {
		switch {
		case v.t.kind == row.KindNull:
		case t.kind == row.KindNull:
			t = v.t
		case t.kind == v.t.kind:
		case t.numeric() && v.t.numeric():
			t = tDecimal
		default:
			return pl.errAt(at, "CASE results must have one type: %s and %s", t, v.t)
		}
		return nil
	}
	for _, w := range e.Whens {
		c, err := pl.expr(w.Cond, cx)
		if err != nil {
			return val{}, err
		}
		if e.Operand != nil {
			if err := pl.comparable(w.Cond.Position(), op, c); err != nil {
				return val{}, err
			}
			c = val{text: op.paren() + " == " + c.paren(), t: tBool}
		} else if err := pl.want(w.Cond, c, row.KindBool, "WHEN"); err != nil {
			return val{}, err
		}
		r, err := pl.expr(w.Result, cx)
		if err != nil {
			return val{}, err
		}
		if err := unify(w.Result.Position(), r); err != nil {
			return val{}, err
		}
		arms = append(arms, arm{c, r})
	}
	els := val{text: "nil", t: tNull}
	if e.Else != nil {
		var err error
		if els, err = pl.expr(e.Else, cx); err != nil {
			return val{}, err
		}
		if err := unify(e.Else.Position(), els); err != nil {
			return val{}, err
		}
	}
	text := els.paren()
	for i := len(arms) - 1; i >= 0; i-- {
		text = arms[i].cond.paren() + " ? " + arms[i].res.paren() + " : " + text
		if i > 0 {
			text = "(" + text + ")"
		}
	}
	return val{text: text, t: t}, nil
}

// cast translates CAST(x AS to).
func (pl *planner) cast(at parser.Pos, x val, to typ, try bool) (val, error) {
	from := x.t.kind
	if from == to.kind || from == row.KindNull {
		v := x
		v.t = to
		return v, nil
	}
	switch to.kind {
	case row.KindDecimal:
		if from == row.KindInt || from == row.KindString {
			return val{text: "decimal(" + x.text + ")", t: to}, nil
		}
	case row.KindInt:
		switch from {
		case row.KindDecimal, row.KindString, row.KindBool:
			return val{text: "int(" + x.text + ")", t: to}, nil
		}
	case row.KindString:
		switch from {
		case row.KindInt, row.KindDecimal, row.KindBool:
			return val{text: "string(" + x.text + ")", t: to}, nil
		case row.KindTime:
			// Flink renders a TIMESTAMP(3) as 2015-07-15 00:00:00.000.
			return val{text: "date_format(" + x.text + `, "yyyy-MM-dd HH:mm:ss.SSS")`, t: to}, nil
		}
	}
	return val{}, pl.errAt(at, "cannot CAST %s AS %s", x.t, to)
}
