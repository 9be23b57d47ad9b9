package expr

import (
	"regexp"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/tidemark/tidemark/row"
)

// smallSet is the list length up to which in scans a slice rather than
// probing a map: for a handful of values comparing beats hashing.
const smallSet = 8

// in compiles x in [lit, lit, ...]: the list is literals (or constant
// expressions such as -1) of one kind, built into a set once. x in [...]
// is null when x is null; otherwise true or false. (not in is not(in).)
func (c *compiler) in(n *ast.BinaryNode) (*node, error) {
	at := n.Location().From
	arr, ok := n.Right.(*ast.ArrayNode)
	if !ok {
		return nil, c.errAt(at, `operator in needs a list of literals on the right, such as x in ["A", "B"]`)
	}
	x, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	elems := make([]row.Value, 0, len(arr.Nodes))
	ek := row.KindNull
	for _, an := range arr.Nodes {
		e, err := c.compile(an)
		if err != nil {
			return nil, err
		}
		if !e.lit {
			return nil, c.errAt(e.at, "the list of in must hold literals only")
		}
		if e.val.Kind == row.KindNull {
			return nil, c.errAt(e.at, "nil in the list of in is not supported; test nullness with x == nil")
		}
		k, ok := unify(ek, e.val.Kind)
		if !ok {
			return nil, c.errAt(e.at, "the list of in mixes %s and %s", ek, e.val.Kind)
		}
		ek = k
		elems = append(elems, e.val)
	}
	out := &node{kind: row.KindBool, at: at, konst: x.konst}
	switch {
	case x.kind == row.KindNull:
		out.b = nullOf[bool]()
	case len(elems) == 0:
		test := x.nullTest()
		out.b = func(r *row.Row) (bool, bool, error) {
			isNull, err := test(r)
			if err != nil || isNull {
				return false, false, err
			}
			return false, true, nil
		}
	case x.kind == row.KindString && ek == row.KindString:
		out.b = stringSet(x, elems)
	case x.kind == row.KindInt && ek == row.KindInt:
		out.b = intSet(x.i, elems)
	case x.kind.Numeric() && ek.Numeric():
		out.b = decimalSet(x.decs(), elems)
	case x.kind == row.KindBool && ek == row.KindBool:
		var hasT, hasF bool
		for _, e := range elems {
			hasT = hasT || e.I != 0
			hasF = hasF || e.I == 0
		}
		out.b = member(x.b, func(v bool) bool { return (v && hasT) || (!v && hasF) })
	default:
		return nil, c.errAt(at, "cannot look for a %s in a list of %s", x.kind, ek)
	}
	return out, nil
}

func member[T any](x fn[T], has func(T) bool) fn[bool] {
	return func(r *row.Row) (bool, bool, error) {
		v, ok, err := x(r)
		if err != nil || !ok {
			return false, false, err
		}
		return has(v), true, nil
	}
}

func stringSet(x *node, elems []row.Value) fn[bool] {
	if len(elems) > smallSet {
		set := make(map[string]struct{}, len(elems))
		for _, e := range elems {
			set[e.S] = struct{}{}
		}
		return member(x.s, func(v string) bool {
			_, ok := set[v]
			return ok
		})
	}
	list := make([]string, len(elems))
	for i, e := range elems {
		list[i] = e.S
	}
	if x.isField {
		idx, slot := x.field.Index, x.field.Slot
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			v := r.S[slot]
			for _, s := range list {
				if s == v {
					return true, true, nil
				}
			}
			return false, true, nil
		}
	}
	return member(x.s, func(v string) bool {
		for _, s := range list {
			if s == v {
				return true
			}
		}
		return false
	})
}

func intSet(x fn[int64], elems []row.Value) fn[bool] {
	if len(elems) > smallSet {
		set := make(map[int64]struct{}, len(elems))
		for _, e := range elems {
			set[e.I] = struct{}{}
		}
		return member(x, func(v int64) bool {
			_, ok := set[v]
			return ok
		})
	}
	list := make([]int64, len(elems))
	for i, e := range elems {
		list[i] = e.I
	}
	return member(x, func(v int64) bool {
		for _, k := range list {
			if k == v {
				return true
			}
		}
		return false
	})
}

// decimalSet looks decimals up in a sorted slice by numeric value (2.0 is
// in [2.00]); decimals are not usable as map keys.
func decimalSet(x fn[row.Decimal], elems []row.Value) fn[bool] {
	list := make([]row.Decimal, len(elems))
	for i, e := range elems {
		if e.Kind == row.KindInt {
			list[i] = row.DecimalFromInt(e.I)
		} else {
			list[i] = e.D
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Cmp(list[j]) < 0 })
	return member(x, func(v row.Decimal) bool {
		lo, hi := 0, len(list)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			switch list[m].Cmp(v) {
			case 0:
				return true
			case -1:
				lo = m + 1
			default:
				hi = m
			}
		}
		return false
	})
}

// strOp compiles contains, startsWith and endsWith on strings.
func (c *compiler) strOp(op string, l, r *node, at int) (*node, error) {
	if !stringish(l.kind) || !stringish(r.kind) {
		return nil, c.errAt(at, "operator %s needs strings, not %s and %s", op, l.kind, r.kind)
	}
	var f func(a, b string) (bool, error)
	switch op {
	case "contains":
		f = func(a, b string) (bool, error) { return strings.Contains(a, b), nil }
	case "startsWith":
		f = func(a, b string) (bool, error) { return strings.HasPrefix(a, b), nil }
	default:
		f = func(a, b string) (bool, error) { return strings.HasSuffix(a, b), nil }
	}
	return &node{kind: row.KindBool, at: at, konst: l.konst && r.konst, b: bin(c, l.strs(), r.strs(), f)}, nil
}

// matches compiles s matches "regexp"; the pattern must be a constant
// string and is compiled once (Go RE2 syntax, unanchored).
func (c *compiler) matches(l, r *node, at int) (*node, error) {
	if !stringish(l.kind) {
		return nil, c.errAt(at, "operator matches needs a string on the left, not %s", l.kind)
	}
	if !r.lit || r.val.Kind != row.KindString {
		return nil, c.errAt(at, "operator matches needs a constant string pattern on the right")
	}
	re, err := regexp.Compile(r.val.S)
	if err != nil {
		return nil, c.errAt(at, "bad pattern for matches: %v", err)
	}
	return &node{kind: row.KindBool, at: at, konst: l.konst, b: member(l.strs(), re.MatchString)}, nil
}
