package planner

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sql/parser"
)

// aggregateFuncs are the aggregate functions (in a GROUP BY's SELECT and
// HAVING).
var aggregateFuncs = map[string]bool{
	"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true,
	"FIRST_VALUE": true, "LAST_VALUE": true, "LISTAGG": true, "STDDEV_POP": true,
	"STDDEV_SAMP": true, "VAR_POP": true, "VAR_SAMP": true, "COLLECT": true,
}

// windowGroupFuncs are the legacy group window functions (GROUP BY
// TUMBLE(ts, i)) and their start/end companions.
var windowGroupFuncs = map[string]bool{
	"TUMBLE": true, "HOP": true, "SESSION": true, "CUMULATE": true,
	"TUMBLE_START": true, "TUMBLE_END": true, "HOP_START": true, "HOP_END": true,
	"SESSION_START": true, "SESSION_END": true, "TUMBLE_ROWTIME": true, "HOP_ROWTIME": true,
	"SESSION_ROWTIME": true, "TUMBLE_PROCTIME": true, "HOP_PROCTIME": true, "SESSION_PROCTIME": true,
}

// scalar is a built-in scalar function: it checks its arguments and
// renders its expr-lang text.
type scalar struct {
	min, max int // argument count (max −1: any)
	fn       func(pl *planner, e *parser.FuncCall, args []val) (val, error)
}

var scalars map[string]scalar

func init() {
	str1 := func(name string) scalar {
		return scalar{1, 1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindString, e.FuncName()); err != nil {
				return val{}, err
			}
			return val{text: name + "(" + a[0].text + ")", t: tString}, nil
		}}
	}
	timePart := func(unit string) scalar {
		return scalar{1, 1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			return pl.timePart(e.At, unit, a[0])
		}}
	}
	scalars = map[string]scalar{
		"MOD": {2, 2, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			for i := range a {
				if a[i].t.kind != row.KindInt && a[i].t.kind != row.KindDecimal && a[i].t.kind != row.KindNull {
					return val{}, pl.errAt(e.Args[i].Position(), "MOD needs numbers, not %s", a[i].t)
				}
			}
			t := tInt
			if a[0].t.kind == row.KindDecimal || a[1].t.kind == row.KindDecimal {
				t = tDecimal
			}
			return val{text: a[0].paren() + " % " + a[1].paren(), t: t}, nil
		}},
		"ABS": {1, 1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if !a[0].t.numeric() {
				return val{}, pl.errAt(e.Args[0].Position(), "ABS needs a number, not %s", a[0].t)
			}
			return val{text: "abs(" + a[0].text + ")", t: a[0].t}, nil
		}},
		"LOWER": str1("lower"),
		"UPPER": str1("upper"),
		"TRIM":  str1("trim"),
		"CHAR_LENGTH": {1, 1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindString, e.FuncName()); err != nil {
				return val{}, err
			}
			return val{text: "char_length(" + a[0].text + ")", t: tInt}, nil
		}},
		"CONCAT": {1, -1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			parts := make([]string, len(a))
			for i, v := range a {
				if v.t.kind != row.KindString && v.t.kind != row.KindNull {
					return val{}, pl.errAt(e.Args[i].Position(), "CONCAT joins strings; argument %d is %s (CAST it AS STRING)", i+1, v.t)
				}
				parts[i] = v.paren()
			}
			return val{text: strings.Join(parts, " + "), t: tString}, nil
		}},
		"COALESCE": {1, -1, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			t := tNull
			parts := make([]string, len(a))
			for i, v := range a {
				switch {
				case v.t.kind == row.KindNull:
				case t.kind == row.KindNull:
					t = v.t
				case t.kind == v.t.kind:
				case t.numeric() && v.t.numeric():
					t = tDecimal
				default:
					return val{}, pl.errAt(e.Args[i].Position(), "COALESCE's arguments need one type: %s and %s", t, v.t)
				}
				parts[i] = v.paren()
			}
			return val{text: strings.Join(parts, " ?? "), t: t}, nil
		}},
		"IF": {3, 3, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindBool, "IF"); err != nil {
				return val{}, err
			}
			t := a[1].t
			if t.kind == row.KindNull {
				t = a[2].t
			}
			return val{text: a[0].paren() + " ? " + a[1].paren() + " : " + a[2].paren(), t: t}, nil
		}},
		"NULLIF": {2, 2, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.comparable(e.At, a[0], a[1]); err != nil {
				return val{}, err
			}
			return val{text: a[0].paren() + " == " + a[1].paren() + " ? nil : " + a[0].paren(), t: a[0].t}, nil
		}},
		"ROUND": {1, 2, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if !a[0].t.numeric() {
				return val{}, pl.errAt(e.Args[0].Position(), "ROUND needs a number, not %s", a[0].t)
			}
			if len(a) == 1 {
				return val{text: "round(" + a[0].text + ")", t: tDecimal}, nil
			}
			return val{text: "round(" + a[0].text + ", " + a[1].text + ")", t: tDecimal}, nil
		}},
		"HOUR":       timePart("HOUR"),
		"MINUTE":     timePart("MINUTE"),
		"SECOND":     timePart("SECOND"),
		"YEAR":       timePart("YEAR"),
		"MONTH":      timePart("MONTH"),
		"DAYOFMONTH": timePart("DAY"),
		"SUBSTRING": {2, 3, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindString, e.FuncName()); err != nil {
				return val{}, err
			}
			for i := 1; i < len(a); i++ {
				if err := pl.want(e.Args[i], a[i], row.KindInt, e.FuncName()); err != nil {
					return val{}, err
				}
			}
			texts := make([]string, len(a))
			for i := range a {
				texts[i] = a[i].text
			}
			return val{text: "substr(" + strings.Join(texts, ", ") + ")", t: tString}, nil
		}},
		"REGEXP_EXTRACT": {2, 3, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindString, e.FuncName()); err != nil {
				return val{}, err
			}
			if err := pl.constString(e.Args[1], "REGEXP_EXTRACT's pattern"); err != nil {
				return val{}, err
			}
			idx := "1"
			if len(a) == 3 {
				if err := pl.constInt(e.Args[2], "REGEXP_EXTRACT's group"); err != nil {
					return val{}, err
				}
				idx = a[2].text
			}
			return val{text: "regexp_extract(" + a[0].text + ", " + a[1].text + ", " + idx + ")", t: tString}, nil
		}},
		"SPLIT_INDEX": {3, 3, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindString, e.FuncName()); err != nil {
				return val{}, err
			}
			if err := pl.constString(e.Args[1], "SPLIT_INDEX's separator"); err != nil {
				return val{}, err
			}
			if err := pl.want(e.Args[2], a[2], row.KindInt, e.FuncName()); err != nil {
				return val{}, err
			}
			return val{text: "split_index(" + a[0].text + ", " + a[1].text + ", " + a[2].text + ")", t: tString}, nil
		}},
		"DATE_FORMAT": {2, 2, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			if err := pl.want(e.Args[0], a[0], row.KindTime, e.FuncName()); err != nil {
				return val{}, err
			}
			if err := pl.constString(e.Args[1], "DATE_FORMAT's pattern"); err != nil {
				return val{}, err
			}
			return val{text: "date_format(" + a[0].text + ", " + a[1].text + ")", t: tString}, nil
		}},
		"TIMESTAMPADD": {3, 3, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
			u, ok := e.Args[0].(*parser.TimeUnit)
			if !ok {
				return val{}, pl.errAt(e.Args[0].Position(), "TIMESTAMPADD's first argument is a unit: SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER or YEAR")
			}
			if err := pl.want(e.Args[1], a[1], row.KindInt, "TIMESTAMPADD's count"); err != nil {
				return val{}, err
			}
			if err := pl.want(e.Args[2], a[2], row.KindTime, "TIMESTAMPADD"); err != nil {
				return val{}, err
			}
			return pl.timestampAdd(u, a[1], a[2])
		}},
	}
	scalars["CHARACTER_LENGTH"] = scalars["CHAR_LENGTH"]
	scalars["SUBSTR"] = scalars["SUBSTRING"]
	scalars["DAY"] = scalars["DAYOFMONTH"]
}

// builtinUDFs maps the Java classes of user-defined functions tidemark
// has a built-in of the same meaning for (CREATE FUNCTION name AS
// 'class') to the built-in's name.
var builtinUDFs = map[string]string{
	// Nexmark q14's CountChar(s, c): the number of c in s.
	"com.github.nexmark.flink.udf.CountChar": "count_char",
}

// udfs are the built-ins a CREATE FUNCTION can name.
var udfs = map[string]scalar{
	"count_char": {2, 2, func(pl *planner, e *parser.FuncCall, a []val) (val, error) {
		if err := pl.want(e.Args[0], a[0], row.KindString, e.Name.String()); err != nil {
			return val{}, err
		}
		if err := pl.constString(e.Args[1], e.Name.String()+"'s character"); err != nil {
			return val{}, err
		}
		return val{text: "count_char(" + a[0].text + ", " + a[1].text + ")", t: tInt}, nil
	}},
}

// constString checks that e is a string literal.
func (pl *planner) constString(e parser.Expr, what string) error {
	if l, ok := e.(*parser.Literal); ok && l.Kind == parser.LitString {
		return nil
	}
	return pl.errAt(e.Position(), "%s must be a constant string", what)
}

func (pl *planner) constInt(e parser.Expr, what string) error {
	if l, ok := e.(*parser.Literal); ok && l.Kind == parser.LitNumber && !strings.ContainsAny(l.Text, ".eE") {
		return nil
	}
	return pl.errAt(e.Position(), "%s must be a constant whole number", what)
}

// timePart is EXTRACT(unit FROM t) and HOUR(t), MINUTE(t) …, in UTC.
func (pl *planner) timePart(at parser.Pos, unit string, x val) (val, error) {
	if x.t.kind != row.KindTime && x.t.kind != row.KindNull {
		return val{}, pl.errAt(at, "%s needs a TIMESTAMP, not %s", unit, x.t)
	}
	fn := map[string]string{"HOUR": "hour", "MINUTE": "minute", "SECOND": "second", "YEAR": "year", "MONTH": "month", "DAY": "day"}[unit]
	if fn == "" {
		return val{}, pl.errAt(at, "EXTRACT(%s FROM …) is not supported (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND are)", unit)
	}
	return val{text: fn + "(" + x.text + ")", t: tInt}, nil
}

// unitMs are the fixed-length units of TIMESTAMPADD, in ms.
var unitMs = map[string]int64{
	"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000,
	"DAY": 86_400_000, "WEEK": 7 * 86_400_000,
}

func (pl *planner) timestampAdd(u *parser.TimeUnit, n, t val) (val, error) {
	if ms, ok := unitMs[u.Unit]; ok {
		d := n.paren()
		if ms != 1 {
			d = n.paren() + " * " + strconv.FormatInt(ms, 10)
		}
		return val{text: "timestamp_add(" + t.text + ", " + d + ")", t: t.t}, nil
	}
	months := map[string]string{"MONTH": "", "QUARTER": " * 3", "YEAR": " * 12"}
	if m, ok := months[u.Unit]; ok {
		return val{text: "add_months(" + t.text + ", " + n.paren() + m + ")", t: t.t}, nil
	}
	return val{}, pl.errAt(u.At, "TIMESTAMPADD(%s, …) is not supported (MILLISECOND, SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, QUARTER, YEAR are)", u.Unit)
}

// call translates a function call outside aggregation.
func (pl *planner) call(e *parser.FuncCall, cx *ectx) (val, error) {
	name := e.FuncName()
	if e.Over != nil {
		return val{}, pl.errAt(e.At, "%s() OVER (…) is supported as ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) in a subquery filtered by rn <= N (Top-N and deduplication); other OVER aggregates are not supported: use a window table function (TUMBLE, HOP, SESSION, CUMULATE) and GROUP BY", name)
	}
	if aggregateFuncs[name] {
		where := cx.where
		if where == "" {
			where = "here"
		} else {
			where = "in " + where
		}
		return val{}, pl.errAt(e.At, "aggregate %s() is not allowed %s: aggregates belong in the SELECT list or HAVING of a query with GROUP BY", name, where)
	}
	if windowGroupFuncs[name] {
		return val{}, pl.errAt(e.At, "%s() belongs in GROUP BY (or, for TUMBLE_START and the like, in the SELECT list of that GROUP BY); the window table functions FROM TABLE(%s(TABLE t, DESCRIPTOR(ts), …)) are Flink's current form", name, strings.SplitN(name, "_", 2)[0])
	}
	if e.Filter != nil {
		return val{}, pl.errAt(e.At, "FILTER (WHERE …) belongs to an aggregate function")
	}
	if e.Distinct || e.Star {
		return val{}, pl.errAt(e.At, "%s() takes neither DISTINCT nor *", name)
	}
	switch name {
	case "PROCTIME":
		if len(e.Args) > 0 {
			return val{}, pl.errAt(e.At, "PROCTIME() takes no arguments")
		}
		return pl.proctime(e, cx)
	case "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIMESTAMP", "LOCALTIME", "NOW", "CURRENT_ROW_TIMESTAMP", "UNIX_TIMESTAMP", "RAND", "RAND_INTEGER", "UUID":
		return val{}, pl.errAt(e.At, "%s is not deterministic and is not supported: a replay must give the same rows (use the event time, or PROCTIME() on a source that records arrival times)", name)
	}
	sc, ok := scalars[name]
	if !ok {
		if f, found := pl.funcs[strings.ToLower(e.Name.Last().Name)]; found {
			sc, ok = udfs[f.builtin], true
		}
	}
	if !ok {
		return val{}, pl.errAt(e.At, "unknown function %s%s (functions: %s)", e.Name.String(), suggest.Hint(name, funcNames()), strings.Join(funcNames(), ", "))
	}
	if len(e.Args) < sc.min || sc.max >= 0 && len(e.Args) > sc.max {
		want := strconv.Itoa(sc.min)
		switch {
		case sc.max < 0:
			want = "at least " + want
		case sc.max != sc.min:
			want += " or " + strconv.Itoa(sc.max)
		}
		return val{}, pl.errAt(e.At, "%s takes %s argument(s), got %d", e.Name.String(), want, len(e.Args))
	}
	args := make([]val, len(e.Args))
	for i, a := range e.Args {
		if _, isUnit := a.(*parser.TimeUnit); isUnit {
			continue
		}
		v, err := pl.expr(a, cx)
		if err != nil {
			return val{}, err
		}
		args[i] = v
	}
	return sc.fn(pl, e, args)
}

func funcNames() []string {
	var out []string
	for n := range scalars {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
