package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

// The differential test: random int/decimal arithmetic trees over literals
// and (possibly null) fields, compiled and evaluated, checked against a
// naive model on math/big rationals that spells out the documented rules:
//
//   - int op int (+ - * %) is the exact result, an overflow error outside
//     int64;
//   - with a decimal operand: + - exact with scale max(s1, s2); * exact
//     with scale s1+s2, truncated toward zero to 19 digits when s1+s2 > 19;
//     % is a - trunc(a/b)*b with scale max(s1, s2);
//   - / is a decimal: the quotient truncated toward zero at 19 digits, then
//     trailing zeros dropped;
//   - zero always has scale 0; division or modulo by zero is an error;
//   - operands evaluate left to right and stop at the first error or null;
//   - a constant sub-tree that fails is a compile error instead.

type tnode struct {
	op   string // "lit", "field", "neg", or a binary operator
	text string // lit: source text; field: name
	l, r *tnode
}

func (n *tnode) String() string {
	switch n.op {
	case "lit", "field":
		return n.text
	case "neg":
		return "-(" + n.l.String() + ")"
	}
	return "(" + n.l.String() + " " + n.op + " " + n.r.String() + ")"
}

func (n *tnode) konst() bool {
	switch n.op {
	case "lit":
		return true
	case "field":
		return false
	case "neg":
		return n.l.konst()
	}
	return n.l.konst() && n.r.konst()
}

var propFields = []struct {
	name string
	kind row.Kind
}{
	{"i0", row.KindInt}, {"i1", row.KindInt}, {"i2", row.KindInt},
	{"d0", row.KindDecimal}, {"d1", row.KindDecimal}, {"d2", row.KindDecimal},
}

func genInt(t *rapid.T, label string) int64 {
	switch rapid.IntRange(0, 9).Draw(t, label+"_shape") {
	case 0, 1, 2:
		return rapid.SampledFrom([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 32, -(1 << 31), 3037000500}).Draw(t, label)
	case 3, 4:
		return rapid.Int64().Draw(t, label)
	default:
		return rapid.Int64Range(-1000, 1000).Draw(t, label)
	}
}

// genDecText returns a decimal's text with a scale of 0..4 (or 19).
func genDecText(t *rapid.T, label string, signed bool) string {
	coef := rapid.Int64Range(0, 10_000_000).Draw(t, label+"_coef")
	if rapid.IntRange(0, 5).Draw(t, label+"_zero") == 0 {
		coef = 0
	}
	scale := rapid.SampledFrom([]int{0, 1, 2, 3, 4, 19}).Draw(t, label+"_scale")
	s := fmt.Sprintf("%0*d", scale+1, coef)
	if scale > 0 {
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if signed && rapid.Bool().Draw(t, label+"_neg") {
		s = "-" + s
	}
	return s
}

func genTree(t *rapid.T, depth int) *tnode {
	if depth == 0 || rapid.IntRange(0, 3).Draw(t, "leafy") == 0 {
		switch rapid.IntRange(0, 3).Draw(t, "leaf") {
		case 0:
			v := genInt(t, "int_lit")
			if v < 0 {
				v = -(v + 1) // literals are non-negative; unary minus makes negatives
			}
			return &tnode{op: "lit", text: fmt.Sprint(v)}
		case 1:
			s := genDecText(t, "dec_lit", false)
			if !strings.Contains(s, ".") {
				s += ".0"
			}
			return &tnode{op: "lit", text: s}
		default:
			return &tnode{op: "field", text: propFields[rapid.IntRange(0, len(propFields)-1).Draw(t, "field")].name}
		}
	}
	if rapid.IntRange(0, 7).Draw(t, "unary") == 0 {
		return &tnode{op: "neg", l: genTree(t, depth-1)}
	}
	op := rapid.SampledFrom([]string{"+", "-", "*", "/", "%"}).Draw(t, "op")
	return &tnode{op: op, l: genTree(t, depth-1), r: genTree(t, depth-1)}
}

// mval is a model value: an exact rational with the decimal scale it
// would carry.
type mval struct {
	null  bool
	isInt bool
	v     *big.Rat
	scale int
}

var (
	minI64 = new(big.Rat).SetInt64(math.MinInt64)
	maxI64 = new(big.Rat).SetInt64(math.MaxInt64)
	ten19  = new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil)
)

func ratOf(t *rapid.T, s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("bad rational %q", s)
	}
	return r
}

// truncRat truncates x toward zero to 19 digits after the point.
func truncRat(x *big.Rat) *big.Rat {
	n := new(big.Int).Mul(x.Num(), ten19)
	n.Quo(n, x.Denom())
	return new(big.Rat).SetFrac(n, ten19)
}

// minScale is the number of digits after the point x needs (x has a
// power-of-ten denominator up to 10^19).
func minScale(x *big.Rat) int {
	d := new(big.Int).Set(x.Denom())
	s := 0
	ten := big.NewInt(10)
	for d.Cmp(big.NewInt(1)) != 0 {
		d.Mul(d, ten)
		s++
		if new(big.Int).Mod(new(big.Int).Mul(x.Num(), pow10Big(s)), x.Denom()).Sign() == 0 {
			return s
		}
	}
	return s
}

func pow10Big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func norm(m mval) mval {
	if !m.null && m.v.Sign() == 0 && !m.isInt {
		m.scale = 0
	}
	return m
}

// model evaluates n in the model; fields are looked up in env.
func model(t *rapid.T, n *tnode, env map[string]mval) (mval, error) {
	switch n.op {
	case "lit":
		if strings.Contains(n.text, ".") {
			return norm(mval{v: ratOf(t, n.text), scale: len(n.text) - strings.Index(n.text, ".") - 1}), nil
		}
		return mval{isInt: true, v: ratOf(t, n.text)}, nil
	case "field":
		return env[n.text], nil
	case "neg":
		x, err := model(t, n.l, env)
		if err != nil || x.null {
			return x, err
		}
		v := new(big.Rat).Neg(x.v)
		if x.isInt && v.Cmp(maxI64) > 0 {
			return mval{}, ErrOverflow
		}
		return norm(mval{isInt: x.isInt, v: v, scale: x.scale}), nil
	}
	a, err := model(t, n.l, env)
	if err != nil || a.null {
		return mval{null: true}, err
	}
	b, err := model(t, n.r, env)
	if err != nil || b.null {
		return mval{null: true}, err
	}
	if (n.op == "/" || n.op == "%") && b.v.Sign() == 0 {
		return mval{}, ErrDivisionByZero
	}
	if n.op == "/" {
		q := truncRat(new(big.Rat).Quo(a.v, b.v))
		return norm(mval{v: q, scale: minScale(q)}), nil
	}
	var v *big.Rat
	switch n.op {
	case "+":
		v = new(big.Rat).Add(a.v, b.v)
	case "-":
		v = new(big.Rat).Sub(a.v, b.v)
	case "*":
		v = new(big.Rat).Mul(a.v, b.v)
	case "%":
		q := new(big.Int).Quo(new(big.Int).Mul(a.v.Num(), b.v.Denom()), new(big.Int).Mul(a.v.Denom(), b.v.Num()))
		v = new(big.Rat).Sub(a.v, new(big.Rat).Mul(new(big.Rat).SetInt(q), b.v))
	}
	if a.isInt && b.isInt {
		if v.Cmp(minI64) < 0 || v.Cmp(maxI64) > 0 {
			return mval{}, ErrOverflow
		}
		return mval{isInt: true, v: v}, nil
	}
	scale := max(a.scale, b.scale)
	if n.op == "*" {
		scale = a.scale + b.scale
		if scale > 19 {
			v, scale = truncRat(v), 19
		}
	}
	return norm(mval{v: v, scale: scale}), nil
}

// constErr is the error Compile reports: the first constant sub-tree, in
// compile order (post-order, left to right), whose evaluation fails.
func constErr(t *rapid.T, n *tnode) error {
	switch n.op {
	case "lit", "field":
		return nil
	case "neg":
		if err := constErr(t, n.l); err != nil {
			return err
		}
	default:
		if err := constErr(t, n.l); err != nil {
			return err
		}
		if err := constErr(t, n.r); err != nil {
			return err
		}
	}
	if n.konst() {
		_, err := model(t, n, nil)
		return err
	}
	return nil
}

func TestArithmeticMatchesBigRat(t *testing.T) {
	s := row.NewSchema()
	for _, f := range propFields {
		if _, err := s.Add(f.name, f.kind); err != nil {
			t.Fatal(err)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		tree := genTree(t, 4)
		src := tree.String()

		r := s.NewRow()
		env := map[string]mval{}
		for _, f := range propFields {
			fd, _ := s.Lookup(f.name)
			if rapid.IntRange(0, 9).Draw(t, f.name+"_null") == 0 {
				env[f.name] = mval{null: true}
				continue
			}
			var v row.Value
			if f.kind == row.KindInt {
				i := genInt(t, f.name)
				v = row.Int(i)
				env[f.name] = mval{isInt: true, v: new(big.Rat).SetInt64(i)}
			} else {
				txt := genDecText(t, f.name, true)
				d, err := row.ParseDecimal([]byte(txt))
				if err != nil {
					t.Fatal(err)
				}
				v = row.Dec(d)
				env[f.name] = norm(mval{v: ratOf(t, txt), scale: int(d.PrecUint())})
			}
			if err := r.Set(fd, v); err != nil {
				t.Fatal(err)
			}
		}

		p, err := Parse(src)
		if err != nil {
			t.Fatalf("Parse(%s): %v", src, err)
		}
		e, err := Compile(p, s)
		if want := constErr(t, tree); want != nil {
			if err == nil || !strings.Contains(err.Error(), "constant expression always fails: "+want.Error()) {
				t.Fatalf("%s: Compile error %v, want constant failure %v", src, err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("Compile(%s): %v", src, err)
		}

		want, wantErr := model(t, tree, env)
		got, gotErr := e.Eval(r)
		if wantErr != nil || gotErr != nil {
			if !errors.Is(gotErr, wantErr) || wantErr == nil {
				t.Fatalf("%s: error %v, want %v (value %v)", src, gotErr, wantErr, got)
			}
			return
		}
		if want.null != got.IsNull() {
			t.Fatalf("%s = %v, want null=%v", src, got, want.null)
		}
		if want.null {
			return
		}
		switch got.Kind {
		case row.KindInt:
			if !want.isInt || new(big.Rat).SetInt64(got.I).Cmp(want.v) != 0 {
				t.Fatalf("%s = int %d, want %v (int %v)", src, got.I, want.v.RatString(), want.isInt)
			}
		case row.KindDecimal:
			gv := ratOf(t, got.D.String())
			if want.isInt || gv.Cmp(want.v) != 0 || int(got.D.PrecUint()) != want.scale {
				t.Fatalf("%s = decimal %s (scale %d), want %s (scale %d)",
					src, got, got.D.PrecUint(), want.v.FloatString(want.scale), want.scale)
			}
		default:
			t.Fatalf("%s: kind %s", src, got.Kind)
		}
	})
}
