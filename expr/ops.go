package expr

import (
	"math"

	"github.com/expr-lang/expr/ast"
	"github.com/quagmt/udecimal"

	"github.com/tidemark/tidemark/row"
)

// unary compiles -x, +x, not x and !x.
func (c *compiler) unary(n *ast.UnaryNode) (*node, error) {
	at := n.Location().From
	x, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "not", "!":
		if x.kind != row.KindBool && x.kind != row.KindNull {
			return nil, c.errAt(at, "operator %s needs a bool, not %s", n.Operator, x.kind)
		}
		if x.kind == row.KindNull {
			return x, nil
		}
		return &node{kind: row.KindBool, at: at, konst: x.konst, b: not3(x.b)}, nil
	case "-", "+":
		if !x.kind.Numeric() && x.kind != row.KindNull {
			return nil, c.errAt(at, "unary %s needs a number, not %s", n.Operator, x.kind)
		}
		if n.Operator == "+" || x.kind == row.KindNull {
			out := *x
			out.isField, out.at = false, at
			return &out, nil
		}
		if x.kind == row.KindInt {
			return &node{kind: row.KindInt, at: at, konst: x.konst, i: un(c, x.i, negInt)}, nil
		}
		return &node{kind: row.KindDecimal, at: at, konst: x.konst, d: negDec(x)}, nil
	}
	return nil, c.unsupported(at, "unary operator "+n.Operator)
}

func not3(x fn[bool]) fn[bool] {
	return func(r *row.Row) (bool, bool, error) {
		v, ok, err := x(r)
		if err != nil || !ok {
			return false, false, err
		}
		return !v, true, nil
	}
}

// negDec negates a decimal; a field is read straight from its slot.
func negDec(n *node) fn[row.Decimal] {
	if n.isField {
		idx, slot := n.field.Index, n.field.Slot
		return func(r *row.Row) (row.Decimal, bool, error) {
			if r.IsNull(idx) {
				return row.Decimal{}, false, nil
			}
			return r.D[slot].Neg(), true, nil
		}
	}
	x := n.d
	return func(r *row.Row) (row.Decimal, bool, error) {
		v, ok, err := x(r)
		if err != nil || !ok {
			return row.Decimal{}, false, err
		}
		return v.Neg(), true, nil
	}
}

// binary dispatches a binary operator.
func (c *compiler) binary(n *ast.BinaryNode) (*node, error) {
	at := n.Location().From
	switch n.Operator {
	case "in":
		return c.in(n)
	case "**", "^":
		return nil, c.unsupported(at, "exponent operator "+n.Operator)
	case "..":
		return nil, c.unsupported(at, "range (..)")
	case "|":
		return nil, c.unsupported(at, "pipe (|)")
	}
	l, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	r, err := c.compile(n.Right)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "+", "-", "*", "/", "%":
		return c.arith(n.Operator, l, r, at)
	case "==", "!=", "<", "<=", ">", ">=":
		return c.compare(n.Operator, l, r, at)
	case "and", "&&", "or", "||":
		return c.logic(n.Operator, l, r, at)
	case "contains", "startsWith", "endsWith":
		return c.strOp(n.Operator, l, r, at)
	case "matches":
		return c.matches(l, r, at)
	case "??":
		return c.coalesce(l, r, at)
	}
	return nil, c.unsupported(at, "operator "+n.Operator)
}

// bin lifts a binary operation over two closures: operands are evaluated
// left to right and evaluation stops at the first error or null.
func bin[A, B, T any](c *compiler, l fn[A], r fn[B], op func(A, B) (T, error)) fn[T] {
	return func(rw *row.Row) (T, bool, error) {
		var z T
		a, ok, err := l(rw)
		if err != nil || !ok {
			return z, false, err
		}
		b, ok, err := r(rw)
		if err != nil || !ok {
			return z, false, err
		}
		v, err := op(a, b)
		if err != nil {
			return z, false, c.evalErr(err)
		}
		return v, true, nil
	}
}

// un lifts a unary operation over a closure (null in, null out).
func un[A, T any](c *compiler, x fn[A], op func(A) (T, error)) fn[T] {
	return func(rw *row.Row) (T, bool, error) {
		var z T
		a, ok, err := x(rw)
		if err != nil || !ok {
			return z, false, err
		}
		v, err := op(a)
		if err != nil {
			return z, false, c.evalErr(err)
		}
		return v, true, nil
	}
}

// arith compiles + - * / %.
func (c *compiler) arith(op string, l, r *node, at int) (*node, error) {
	konst := l.konst && r.konst
	if op == "+" && (l.kind == row.KindString || r.kind == row.KindString) {
		if !stringish(l.kind) || !stringish(r.kind) {
			return nil, c.errAt(at, "operator + cannot join %s and %s (convert with string(x))", l.kind, r.kind)
		}
		return &node{kind: row.KindString, at: at, konst: konst, s: bin(c, l.strs(), r.strs(), concat)}, nil
	}
	if !numish(l.kind) || !numish(r.kind) {
		return nil, c.errAt(at, "operator %s needs numbers, not %s and %s", op, l.kind, r.kind)
	}
	if l.kind == row.KindNull && r.kind == row.KindNull {
		return &node{kind: row.KindNull, at: at, konst: true}, nil
	}
	if op == "/" || l.kind == row.KindDecimal || r.kind == row.KindDecimal {
		var f func(a, b row.Decimal) (row.Decimal, error)
		switch op {
		case "+":
			f = addDec
		case "-":
			f = subDec
		case "*":
			f = mulDec
		case "/":
			f = divDec
		default:
			f = modDec
		}
		return &node{kind: row.KindDecimal, at: at, konst: konst, d: bin(c, l.decs(), r.decs(), f)}, nil
	}
	var f func(a, b int64) (int64, error)
	switch op {
	case "+":
		f = addInt
	case "-":
		f = subInt
	case "*":
		f = mulInt
	default:
		f = modInt
	}
	return &node{kind: row.KindInt, at: at, konst: konst, i: bin(c, l.ints(), r.ints(), f)}, nil
}

func stringish(k row.Kind) bool { return k == row.KindString || k == row.KindNull }
func numish(k row.Kind) bool    { return k.Numeric() || k == row.KindNull }

func concat(a, b string) (string, error) { return a + b, nil }

func addInt(a, b int64) (int64, error) {
	s := a + b
	if (a^s)&(b^s) < 0 {
		return 0, ErrOverflow
	}
	return s, nil
}

func subInt(a, b int64) (int64, error) {
	d := a - b
	if (a^b)&(a^d) < 0 {
		return 0, ErrOverflow
	}
	return d, nil
}

func mulInt(a, b int64) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, ErrOverflow
	}
	return p, nil
}

func modInt(a, b int64) (int64, error) {
	if b == 0 {
		return 0, ErrDivisionByZero
	}
	return a % b, nil
}

func negInt(a int64) (int64, error) {
	if a == math.MinInt64 {
		return 0, ErrOverflow
	}
	return -a, nil
}

func addDec(a, b row.Decimal) (row.Decimal, error) { return a.Add(b), nil }
func subDec(a, b row.Decimal) (row.Decimal, error) { return a.Sub(b), nil }
func mulDec(a, b row.Decimal) (row.Decimal, error) { return a.Mul(b), nil }

func divDec(a, b row.Decimal) (row.Decimal, error) {
	if b.IsZero() {
		return row.Decimal{}, ErrDivisionByZero
	}
	q, err := a.Div(b)
	if err != nil {
		return row.Decimal{}, err
	}
	return trimZeros(q), nil
}

func modDec(a, b row.Decimal) (row.Decimal, error) {
	if b.IsZero() {
		return row.Decimal{}, ErrDivisionByZero
	}
	return a.Mod(b)
}

// trimZeros drops trailing fractional zeros: a quotient comes back with 19
// digits after the point, and 10 / 4 should read 2.5.
func trimZeros(d row.Decimal) row.Decimal {
	p := d.PrecUint()
	if p == 0 {
		return d
	}
	neg, hi, lo, _, ok := d.ToHiLo()
	if ok && hi == 0 {
		k := uint8(0)
		for k < p && lo%10 == 0 {
			lo /= 10
			k++
		}
		if k == 0 {
			return d
		}
		if t, err := udecimal.NewFromHiLo(neg, 0, lo, p-k); err == nil {
			return t
		}
		return d
	}
	for p > 0 {
		t := d.Trunc(p - 1)
		if !t.Equal(d) {
			break
		}
		d = t
		p--
	}
	return d
}

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var cmpOps = map[string]cmpOp{"==": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

func holds(op cmpOp, c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	}
	return c >= 0
}

// compare compiles == != < <= > >=.
func (c *compiler) compare(opName string, l, r *node, at int) (*node, error) {
	op := cmpOps[opName]
	konst := l.konst && r.konst
	if l.kind == row.KindNull || r.kind == row.KindNull {
		if op != opEq && op != opNe {
			return nil, c.errAt(at, "operator %s cannot compare with nil; test nullness with == nil or != nil", opName)
		}
		x := l
		if l.kind == row.KindNull {
			x = r
		}
		test, wantNull := x.nullTest(), op == opEq
		return &node{kind: row.KindBool, at: at, konst: konst, b: func(rw *row.Row) (bool, bool, error) {
			isNull, err := test(rw)
			if err != nil {
				return false, false, err
			}
			return isNull == wantNull, true, nil
		}}, nil
	}
	out := &node{kind: row.KindBool, at: at, konst: konst}
	switch {
	case l.kind == row.KindInt && r.kind == row.KindInt, l.kind == row.KindTime && r.kind == row.KindTime:
		switch {
		case l.isField && r.lit && !r.val.IsNull():
			out.b = fieldVsInt(l.field, op, r.val.I)
			out.test, out.hasTest = intTest(l.field, op, r.val.I), true
		case r.isField && l.lit && !l.val.IsNull():
			out.b = fieldVsInt(r.field, mirror(op), l.val.I)
			out.test, out.hasTest = intTest(r.field, mirror(op), l.val.I), true
		default:
			out.b = compareFn(l.i, r.i, cmpInt, op)
		}
	case l.kind.Numeric() && r.kind.Numeric():
		switch {
		case l.isField && l.kind == row.KindDecimal && r.lit && numericLit(r.val):
			out.b = fieldVsDecimal(l.field, op, decimalOf(r.val))
		case r.isField && r.kind == row.KindDecimal && l.lit && numericLit(l.val):
			out.b = fieldVsDecimal(r.field, mirror(op), decimalOf(l.val))
		default:
			out.b = compareFn(l.decs(), r.decs(), row.Decimal.Cmp, op)
		}
	case l.kind == row.KindString && r.kind == row.KindString:
		if op == opEq || op == opNe {
			out.b = eqStr(l, r, op == opEq)
		} else {
			out.b = compareFn(l.s, r.s, cmpStr, op)
		}
	case l.kind == row.KindBool && r.kind == row.KindBool:
		if op != opEq && op != opNe {
			return nil, c.errAt(at, "operator %s cannot order bools (only == and !=)", opName)
		}
		out.b = compareFn(l.b, r.b, cmpBool, op)
	default:
		return nil, c.errAt(at, "cannot compare %s with %s", l.kind, r.kind)
	}
	return out, nil
}

// mirror returns the operator that compares b with a as op compares a
// with b (a < b is b > a).
func mirror(op cmpOp) cmpOp {
	switch op {
	case opLt:
		return opGt
	case opLe:
		return opGe
	case opGt:
		return opLt
	case opGe:
		return opLe
	}
	return op
}

// numericLit reports whether v is a non-null int or decimal literal.
func numericLit(v row.Value) bool { return v.Kind == row.KindInt || v.Kind == row.KindDecimal }

// decimalOf returns an int or decimal literal as a decimal (an int
// exactly).
func decimalOf(v row.Value) row.Decimal {
	if v.Kind == row.KindInt {
		return row.DecimalFromInt(v.I)
	}
	return v.D
}

// fieldVsDecimal compiles f op k for a decimal field f and a numeric
// literal k, as fieldVsInt does for ints: one closure reading the field
// (a contract rule such as amount >= 0 runs once per record), where the
// general form calls the field's closure, the literal's, its conversion
// to a decimal and the comparison's. The same Decimal.Cmp decides (so a
// field holding -0 compares below 0 as before). Null when the field is
// null, as compareFn.
func fieldVsDecimal(f row.Field, op cmpOp, k row.Decimal) fn[bool] {
	idx, slot := f.Index, f.Slot
	return func(r *row.Row) (bool, bool, error) {
		if r.IsNull(idx) {
			return false, false, nil
		}
		return holds(op, r.D[slot].Cmp(k)), true, nil
	}
}

// fieldVsInt compiles f op k for an int or time field f and an int (ms
// for a time) literal k: one closure that reads the field, where the
// general form calls the field's, the literal's and the comparison's (a
// stage filter such as event_type == 2 runs once per record). Null when
// the field is null, as compareFn. One closure per operator: a single one
// calling holds(op, cmpInt(…)) took 7.3 ns per evaluation against 3.8 ns
// (go test -bench, qty == 3).
func fieldVsInt(f row.Field, op cmpOp, k int64) fn[bool] {
	idx, slot := f.Index, f.Slot
	switch op {
	case opEq:
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] == k, true, nil
		}
	case opNe:
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] != k, true, nil
		}
	case opLt:
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] < k, true, nil
		}
	case opLe:
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] <= k, true, nil
		}
	case opGt:
		return func(r *row.Row) (bool, bool, error) {
			if r.IsNull(idx) {
				return false, false, nil
			}
			return r.I[slot] > k, true, nil
		}
	}
	return func(r *row.Row) (bool, bool, error) {
		if r.IsNull(idx) {
			return false, false, nil
		}
		return r.I[slot] >= k, true, nil
	}
}

func compareFn[T any](l, r fn[T], cmp func(T, T) int, op cmpOp) fn[bool] {
	return func(rw *row.Row) (bool, bool, error) {
		a, ok, err := l(rw)
		if err != nil || !ok {
			return false, false, err
		}
		b, ok, err := r(rw)
		if err != nil || !ok {
			return false, false, err
		}
		return holds(op, cmp(a, b)), true, nil
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	if a == b {
		return 0
	}
	if b {
		return -1
	}
	return 1
}

// eqStr compiles string (in)equality; a field compared with a constant
// reads the slot directly.
func eqStr(l, r *node, want bool) fn[bool] {
	if r.isField && l.lit {
		l, r = r, l
	}
	if l.isField && r.lit && r.val.Kind == row.KindString {
		idx, slot, k := l.field.Index, l.field.Slot, r.val.S
		return func(rw *row.Row) (bool, bool, error) {
			if rw.IsNull(idx) {
				return false, false, nil
			}
			return (rw.S[slot] == k) == want, true, nil
		}
	}
	lf, rf := l.s, r.s
	return func(rw *row.Row) (bool, bool, error) {
		a, ok, err := lf(rw)
		if err != nil || !ok {
			return false, false, err
		}
		b, ok, err := rf(rw)
		if err != nil || !ok {
			return false, false, err
		}
		return (a == b) == want, true, nil
	}
}

// logic compiles and/&& and or/|| with SQL three-valued logic and short
// circuit: false and x is false and true or x is true without evaluating x.
func (c *compiler) logic(op string, l, r *node, at int) (*node, error) {
	if (l.kind != row.KindBool && l.kind != row.KindNull) || (r.kind != row.KindBool && r.kind != row.KindNull) {
		return nil, c.errAt(at, "operator %s needs bools, not %s and %s", op, l.kind, r.kind)
	}
	out := &node{kind: row.KindBool, at: at, konst: l.konst && r.konst}
	if op == "and" || op == "&&" {
		out.b = and3(l.bools(), r.bools())
	} else {
		out.b = or3(l.bools(), r.bools())
	}
	return out, nil
}

func and3(l, r fn[bool]) fn[bool] {
	return func(rw *row.Row) (bool, bool, error) {
		a, aok, err := l(rw)
		if err != nil {
			return false, false, err
		}
		if aok && !a {
			return false, true, nil
		}
		b, bok, err := r(rw)
		if err != nil {
			return false, false, err
		}
		if bok && !b {
			return false, true, nil
		}
		if aok && bok {
			return true, true, nil
		}
		return false, false, nil
	}
}

func or3(l, r fn[bool]) fn[bool] {
	return func(rw *row.Row) (bool, bool, error) {
		a, aok, err := l(rw)
		if err != nil {
			return false, false, err
		}
		if aok && a {
			return true, true, nil
		}
		b, bok, err := r(rw)
		if err != nil {
			return false, false, err
		}
		if bok && b {
			return true, true, nil
		}
		if aok && bok {
			return false, true, nil
		}
		return false, false, nil
	}
}

// IntTest is a comparison of an int or time field with an int literal
// (ms since the Unix epoch for a time), such as event_type == 2 or
// 2 < qty, as the closed range [Lo, Hi] the field's value must lie in
// (Not: must lie outside): == k is [k, k], != k outside it, < k is
// [MinInt64, k−1], <= k [MinInt64, k], > k [k+1, MaxInt64], >= k
// [k, MaxInt64]; a range no value lies in (< MinInt64, > MaxInt64) has
// Lo > Hi. Index and Slot are the field's (row.Field). It lets a caller
// evaluating one expression per record (a stage filter) run the test
// without a call: Holds gives exactly what Expr.EvalBool gives.
type IntTest struct {
	Index, Slot int
	Lo, Hi      int64
	Not         bool
}

// intTest returns f op k as an IntTest.
func intTest(f row.Field, op cmpOp, k int64) IntTest {
	t := IntTest{Index: f.Index, Slot: f.Slot, Lo: k, Hi: k}
	switch op {
	case opNe:
		t.Not = true
	case opLt:
		t.Lo, t.Hi = math.MinInt64, k-1
		if k == math.MinInt64 {
			t.Lo, t.Hi = 1, 0 // no value is below MinInt64
		}
	case opLe:
		t.Lo = math.MinInt64
	case opGt:
		t.Lo, t.Hi = k+1, math.MaxInt64
		if k == math.MaxInt64 {
			t.Lo, t.Hi = 1, 0 // no value is above MaxInt64
		}
	case opGe:
		t.Hi = math.MaxInt64
	}
	return t
}

// Holds evaluates the test on r: v is the comparison's result, ok false
// when the field is null (v false then), as Expr.EvalBool.
func (t *IntTest) Holds(r *row.Row) (v, ok bool) {
	if r.IsNull(t.Index) {
		return false, false
	}
	x := r.I[t.Slot]
	return (t.Lo <= x && x <= t.Hi) != t.Not, true
}

// IntTest returns e as an IntTest when e is a comparison of an int or
// time field with an int literal (the literal on either side), and false
// otherwise.
func (e *Expr) IntTest() (IntTest, bool) { return e.test, e.hasTest }
