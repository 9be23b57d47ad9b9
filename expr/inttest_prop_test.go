package expr

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

// TestIntTestMatchesModel checks Expr.IntTest against the comparison
// worked out in Go: an int field (null or not) against a
// random int literal (the int64 bounds, their neighbours, small values,
// any int64; written as a negated or parenthesized expression for a
// negative one), the literal on either side, every comparison operator.
// The field's value is drawn near the literal (k−1, k, k+1) as often as
// anywhere, so each range bound is crossed. Holds must give the model's
// result and nullness, and so must EvalBool.
func TestIntTestMatchesModel(t *testing.T) {
	s := row.NewSchema()
	// A time field has no int literal to meet (no expression makes a
	// constant time), so the int field is the one IntTest sees.
	f, err := s.Add("x", row.KindInt)
	if err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	rapid.Check(t, func(rt *rapid.T) {
		const field = "x"
		k := genInt(rt, "k")
		var x int64
		switch rapid.IntRange(0, 3).Draw(rt, "near") {
		case 0:
			x = k
		case 1:
			x = k - 1 // wraps at MinInt64: far from k, still a value
		case 2:
			x = k + 1
		default:
			x = genInt(rt, "x")
		}
		null := rapid.IntRange(0, 5).Draw(rt, "null") == 0
		op := rapid.SampledFrom([]string{"==", "!=", "<", "<=", ">", ">="}).Draw(rt, "op")
		litLeft := rapid.Bool().Draw(rt, "litLeft")
		// The literal's text: digits for k ≥ 0; −(|k|) or (−|k|−1) below.
		var lit string
		switch {
		case k == math.MinInt64:
			lit = "(-9223372036854775807 - 1)"
		case k < 0:
			lit = fmt.Sprintf("-%d", -k)
			if rapid.Bool().Draw(rt, "paren") {
				lit = fmt.Sprintf("(0 - %d)", -k)
			}
		default:
			lit = fmt.Sprint(k)
		}
		src := field + " " + op + " " + lit
		// The model: field op k, or, with the literal left, k op' field
		// (the same relation).
		want := map[string]bool{"==": x == k, "!=": x != k, "<": x < k, "<=": x <= k, ">": x > k, ">=": x >= k}[op]
		if litLeft {
			mirror := map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
			src = lit + " " + mirror[op] + " " + field
		}
		p, err := Parse(src)
		if err != nil {
			rt.Fatalf("Parse(%q): %v", src, err)
		}
		e, err := Compile(p, s)
		if err != nil {
			rt.Fatalf("Compile(%q): %v", src, err)
		}
		it, ok := e.IntTest()
		if !ok {
			rt.Fatalf("%s: no IntTest", src)
		}
		r.SetAllNull(1)
		if !null {
			if err := r.Set(f, row.Value{Kind: f.Kind, I: x}); err != nil {
				rt.Fatal(err)
			}
		}
		hv, hok := it.Holds(r)
		ev, eok, err := e.EvalBool(r)
		if err != nil {
			rt.Fatalf("%s: %v", src, err)
		}
		wv, wok := want && !null, !null
		if hv != wv || hok != wok || ev != wv || eok != wok {
			rt.Fatalf("%s with %s = %d (null %v): Holds %v, %v; EvalBool %v, %v; want %v, %v", src, field, x, null, hv, hok, ev, eok, wv, wok)
		}
	})
}
