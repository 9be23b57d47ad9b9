package expr

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/expr-lang/expr/ast"
	"github.com/quagmt/udecimal"

	"github.com/tidemark/tidemark/row"
)

// funcSpec compiles one function call from its compiled arguments.
type funcSpec struct {
	arity   int // number of arguments; −n for n−1 or n (round: −2, substr: −3)
	compile func(c *compiler, args []*node, at int) (*node, error)
}

// funcs are the scalar functions expressions may call.
var funcs map[string]funcSpec

func init() {
	funcs = map[string]funcSpec{
		"lower":   {1, strFunc("lower", strings.ToLower)},
		"upper":   {1, strFunc("upper", strings.ToUpper)},
		"trim":    {1, strFunc("trim", strings.TrimSpace)},
		"len":     {1, lenFunc},
		"string":  {1, stringFunc},
		"int":     {1, intFunc},
		"decimal": {1, decimalFunc},
		"abs":     {1, absFunc},
		"round":   {-2, roundFunc},
		"hour":    {1, timePart("hour", 3_600_000, 24)},
		"minute":  {1, timePart("minute", 60_000, 60)},
	}
}

// aggregateNames are functions that belong under a stage's aggregates, not
// in a filter or derived field; naming them gives a better error.
var aggregateNames = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"count_distinct": true, "first": true, "last": true, "max_by": true, "min_by": true,
	"arg_max": true, "arg_min": true, "first_by": true, "last_by": true,
}

func funcNames() string {
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// call compiles a function call name(args...) at rune offset at.
func (c *compiler) call(name string, argNodes []ast.Node, at int) (*node, error) {
	// x | f() puts x first in f's arguments; its position gives it away.
	if len(argNodes) > 0 && argNodes[0] != nil && argNodes[0].Location().From < at {
		return nil, c.unsupported(at, "pipe (|)")
	}
	spec, ok := funcs[name]
	if !ok {
		if aggregateNames[strings.ToLower(name)] {
			return nil, c.errAt(at, "%s() is an aggregate function; use it under aggregates, not in a filter or field", name)
		}
		return nil, c.errAt(at, "unknown function %s() (functions: %s)", name, funcNames())
	}
	// arity −n takes n−1 or n arguments (round: 1 or 2; substr: 2 or 3).
	switch {
	case spec.arity >= 0 && len(argNodes) != spec.arity:
		return nil, c.errAt(at, "%s() takes %d argument(s), got %d", name, spec.arity, len(argNodes))
	case spec.arity < 0 && (len(argNodes) < -spec.arity-1 || len(argNodes) > -spec.arity):
		return nil, c.errAt(at, "%s() takes %d or %d arguments, got %d", name, -spec.arity-1, -spec.arity, len(argNodes))
	}
	args := make([]*node, len(argNodes))
	konst := true
	for i, an := range argNodes {
		a, err := c.compile(an)
		if err != nil {
			return nil, err
		}
		args[i] = a
		konst = konst && a.konst
	}
	n, err := spec.compile(c, args, at)
	if err != nil {
		return nil, err
	}
	n.at, n.konst = at, konst
	return n, nil
}

func (c *compiler) argKind(name string, a *node, want ...row.Kind) error {
	if a.kind == row.KindNull {
		return nil
	}
	for _, k := range want {
		if a.kind == k {
			return nil
		}
	}
	names := make([]string, len(want))
	for i, k := range want {
		names[i] = k.String()
	}
	return c.errAt(a.at, "%s() needs %s, not %s", name, strings.Join(names, " or "), a.kind)
}

func strFunc(name string, f func(string) string) func(*compiler, []*node, int) (*node, error) {
	return func(c *compiler, args []*node, _ int) (*node, error) {
		if err := c.argKind(name, args[0], row.KindString); err != nil {
			return nil, err
		}
		return &node{kind: row.KindString, s: un(c, args[0].strs(), func(s string) (string, error) { return f(s), nil })}, nil
	}
}

func lenFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("len", args[0], row.KindString); err != nil {
		return nil, err
	}
	return &node{kind: row.KindInt, i: un(c, args[0].strs(), func(s string) (int64, error) { return int64(len(s)), nil })}, nil
}

// stringFunc: string(x) formats int, decimal (with its scale), bool and
// timestamp (RFC 3339, UTC) as text.
func stringFunc(c *compiler, args []*node, _ int) (*node, error) {
	a := args[0]
	out := &node{kind: row.KindString}
	switch a.kind {
	case row.KindString, row.KindNull:
		out.s = a.strs()
	case row.KindInt:
		out.s = un(c, a.i, func(v int64) (string, error) { return strconv.FormatInt(v, 10), nil })
	case row.KindDecimal:
		out.s = un(c, a.d, func(v row.Decimal) (string, error) { return string(row.FormatDecimal(nil, v)), nil })
	case row.KindBool:
		out.s = un(c, a.b, func(v bool) (string, error) { return strconv.FormatBool(v), nil })
	case row.KindTime:
		out.s = un(c, a.i, func(v int64) (string, error) { return row.FormatTime(v, nil), nil })
	}
	return out, nil
}

// intFunc: int(x) parses a string (an error unless it is an integer),
// truncates a decimal toward zero, gives a timestamp's ms since the epoch
// and a bool's 0/1.
func intFunc(c *compiler, args []*node, _ int) (*node, error) {
	a := args[0]
	out := &node{kind: row.KindInt}
	switch a.kind {
	case row.KindInt, row.KindTime, row.KindBool, row.KindNull:
		out.i = a.ints()
	case row.KindString:
		out.i = un(c, a.s, func(s string) (int64, error) {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok {
					err = ne.Err
				}
				return 0, fmt.Errorf("%w %q to int: %w", ErrConversion, s, err)
			}
			return v, nil
		})
	case row.KindDecimal:
		out.i = un(c, a.d, func(d row.Decimal) (int64, error) {
			v, err := d.Int64()
			if err != nil {
				return 0, fmt.Errorf("%w: int(%s): %w", ErrOverflow, d, err)
			}
			return v, nil
		})
	}
	return out, nil
}

// decimalFunc: decimal(x) parses a string exactly with row.ParseDecimal,
// or converts an int.
func decimalFunc(c *compiler, args []*node, _ int) (*node, error) {
	a := args[0]
	if err := c.argKind("decimal", a, row.KindString, row.KindInt, row.KindDecimal); err != nil {
		return nil, err
	}
	out := &node{kind: row.KindDecimal}
	if a.kind == row.KindString {
		out.d = un(c, a.s, func(s string) (row.Decimal, error) {
			// ParseDecimal neither keeps nor changes its input.
			d, err := row.ParseDecimal(unsafe.Slice(unsafe.StringData(s), len(s)))
			if err != nil {
				return row.Decimal{}, fmt.Errorf("%w %q to decimal: %w", ErrConversion, s, err)
			}
			return d, nil
		})
	} else {
		out.d = a.decs()
	}
	return out, nil
}

func absFunc(c *compiler, args []*node, _ int) (*node, error) {
	a := args[0]
	if err := c.argKind("abs", a, row.KindInt, row.KindDecimal); err != nil {
		return nil, err
	}
	switch a.kind {
	case row.KindInt:
		return &node{kind: row.KindInt, i: un(c, a.i, func(v int64) (int64, error) {
			if v < 0 {
				return negInt(v)
			}
			return v, nil
		})}, nil
	case row.KindDecimal:
		return &node{kind: row.KindDecimal, d: un(c, a.d, func(v row.Decimal) (row.Decimal, error) { return v.Abs(), nil })}, nil
	}
	return &node{kind: row.KindNull}, nil
}

// roundFunc: round(x, n) rounds half away from zero to n digits after the
// point (n a constant int 0..19, default 0) and returns a decimal with
// exactly n digits after the point (zero prints as 0).
func roundFunc(c *compiler, args []*node, at int) (*node, error) {
	a := args[0]
	if err := c.argKind("round", a, row.KindInt, row.KindDecimal); err != nil {
		return nil, err
	}
	places := int64(0)
	if len(args) == 2 {
		p := args[1]
		if !p.lit || p.val.Kind != row.KindInt || p.val.I < 0 || p.val.I > row.MaxDecimalScale {
			return nil, c.errAt(p.at, "round(x, n) needs n to be a constant int from 0 to %d", row.MaxDecimalScale)
		}
		places = p.val.I
	}
	n := uint8(places)
	one, err := udecimal.NewFromHiLo(false, 0, pow10(n), n) // 1 with n digits after the point
	if err != nil {
		return nil, c.errAt(at, "round: %v", err)
	}
	return &node{kind: row.KindDecimal, d: un(c, a.decs(), func(v row.Decimal) (row.Decimal, error) {
		v = v.RoundHAZ(n)
		if v.PrecUint() < n {
			v = v.Mul(one).Trunc(n)
		}
		return v, nil
	})}, nil
}

func pow10(n uint8) uint64 {
	p := uint64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// timePart: hour(t) and minute(t) of a timestamp, in UTC.
func timePart(name string, unit, mod int64) func(*compiler, []*node, int) (*node, error) {
	return func(c *compiler, args []*node, _ int) (*node, error) {
		if err := c.argKind(name, args[0], row.KindTime); err != nil {
			return nil, err
		}
		return &node{kind: row.KindInt, i: un(c, args[0].ints(), func(ms int64) (int64, error) {
			q := ms / unit
			if ms%unit < 0 {
				q-- // floor: instants before 1970
			}
			v := q % mod
			if v < 0 {
				v += mod
			}
			return v, nil
		})}, nil
	}
}
