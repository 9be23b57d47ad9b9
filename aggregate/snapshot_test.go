package aggregate

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// snapSchema is {i int, d decimal, s string}.
func snapSchema(t interface{ Fatal(...any) }) (*row.Schema, [3]row.Field) {
	s := row.NewSchema()
	var fs [3]row.Field
	for i, x := range []struct {
		n string
		k row.Kind
	}{{"i", row.KindInt}, {"d", row.KindDecimal}, {"s", row.KindString}} {
		f, err := s.Add(x.n, x.k)
		if err != nil {
			t.Fatal(err)
		}
		fs[i] = f
	}
	return s, fs
}

// Decimal inputs: equal values at different scales, and values near 2^128
// so that sums switch to the decimal type's big.Int form.
var snapDecimals = []string{"2", "2.0", "2.00", "-1.5", "0.10", "0.1", "19.99", "-0.001",
	"300000000000000000000000000000000000000", "-300000000000000000000000000000000000000"}

type slotOp struct {
	kind     int // 0 add, 1 retract, 2 merge, 3 reset
	s, src   int32
	i        int64
	d        string
	str      string
	nullMask int
}

// show renders a slot's result with its kind, so 2.0 and 2.00, 1 and "1"
// differ.
func show(c Column, s int32) string {
	v := c.Result(s)
	return fmt.Sprintf("%d:%s", v.Kind, v.String())
}

func encodeSlots(c Column, n int32) []byte {
	var e state.Encoder
	for s := int32(0); s < n; s++ {
		c.AppendSlot(&e, s)
	}
	return bytes.Clone(e.Bytes())
}

// TestSlotRoundTrip: for every function (min and max with and without
// retraction), a column restored from AppendSlot bytes has the same
// results, the same encoding, and stays identical to the original under
// any further Add, Retract, Merge and Reset.
func TestSlotRoundTrip(t *testing.T) {
	specs := []struct {
		fn  string
		arg int // -1 none, else index in the schema fields
	}{
		{"count", -1}, {"count", 0}, {"sum", 0}, {"sum", 1}, {"avg", 0}, {"avg", 1},
		{"min", 0}, {"max", 0}, {"min", 1}, {"max", 1}, {"min", 2}, {"max", 2},
		{"count_distinct", 0}, {"count_distinct", 1}, {"count_distinct", 2},
	}
	rapid.Check(t, func(t *rapid.T) {
		schema, fs := snapSchema(t)
		sp := rapid.SampledFrom(specs).Draw(t, "spec")
		retract := rapid.Bool().Draw(t, "retract")
		spec := Spec{Name: "x", Func: sp.fn, Retract: retract}
		if sp.arg >= 0 {
			spec.Arg, spec.HasArg = fs[sp.arg], true
		}
		mk := func() Column {
			c, err := New(spec)
			if err != nil {
				t.Fatal(err)
			}
			c.Grow(4)
			return c
		}
		a := mk()
		ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) slotOp {
			k := rapid.IntRange(0, 9).Draw(t, "kind")
			o := slotOp{
				s:        rapid.Int32Range(0, 3).Draw(t, "s"),
				src:      rapid.Int32Range(0, 3).Draw(t, "src"),
				i:        rapid.Int64Range(-2, 3).Draw(t, "i"),
				d:        rapid.SampledFrom(snapDecimals).Draw(t, "d"),
				str:      rapid.SampledFrom([]string{"a", "b", "", "ab"}).Draw(t, "str"),
				nullMask: rapid.IntRange(0, 7).Draw(t, "null"),
			}
			switch {
			case k < 6:
				o.kind = 0
			case k < 8:
				o.kind = 1
			case k < 9:
				o.kind = 2
			default:
				o.kind = 3
			}
			return o
		}), 0, 60).Draw(t, "ops")
		cut := rapid.IntRange(0, len(ops)).Draw(t, "cut")
		r := schema.NewRow()
		apply := func(c Column, o slotOp) {
			schema.Shape(r)
			r.Set(fs[0], row.Int(o.i))
			d, err := row.ParseDecimal([]byte(o.d))
			if err != nil {
				t.Fatal(err)
			}
			r.Set(fs[1], row.Dec(d))
			r.Set(fs[2], row.Str(o.str))
			for f := 0; f < 3; f++ {
				if o.nullMask == f+1 { // one field null now and then
					r.SetNull(fs[f].Index)
				}
			}
			var e error
			switch o.kind {
			case 0:
				e = c.Add(o.s, r)
			case 1:
				if !retract {
					return
				}
				e = c.Retract(o.s, r)
			case 2:
				if o.s != o.src {
					e = c.Merge(o.s, o.src)
				}
			case 3:
				c.Reset(o.s)
			}
			if e != nil {
				t.Fatal(e)
			}
		}
		for _, o := range ops[:cut] {
			apply(a, o)
		}
		snap := encodeSlots(a, 4)
		b := mk()
		d := state.NewDecoder(snap)
		for s := int32(0); s < 4; s++ {
			b.RestoreSlot(d, s)
		}
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("restore: %v, %d bytes left", d.Err(), d.Remaining())
		}
		if again := encodeSlots(b, 4); !bytes.Equal(again, snap) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", again, snap)
		}
		compare := func(when string) {
			for s := int32(0); s < 4; s++ {
				if x, y := show(a, s), show(b, s); x != y {
					t.Fatalf("%s: slot %d original %s, restored %s", when, s, x, y)
				}
			}
		}
		compare("after restore")
		for i, o := range ops[cut:] {
			apply(a, o)
			apply(b, o)
			compare(fmt.Sprintf("op %d %+v", cut+i, o))
		}
		if x, y := encodeSlots(a, 4), encodeSlots(b, 4); !bytes.Equal(x, y) {
			t.Fatalf("final states differ:\n%x\n%x", x, y)
		}
	})
}

// TestBigFormSumRestores: a decimal sum that went through 2^128 stays in
// the decimal type's big.Int form, whose Result keeps the sum's own scale;
// the restored sum must keep that form (and so its text), not come back in
// 128-bit form with the scale padded.
func TestBigFormSumRestores(t *testing.T) {
	schema, fs := snapSchema(t)
	for _, fn := range []string{"sum", "avg"} {
		c, _ := New(Spec{Name: "x", Func: fn, Arg: fs[1], HasArg: true, Retract: true})
		c.Grow(1)
		row1 := decRowFor(t, schema, fs[1], "0.1")
		row2 := decRowFor(t, schema, fs[1], "0.25")
		big := decRowFor(t, schema, fs[1], "300000000000000000000000000000000000000")
		// Scale 2 seen, but the sum is 0 (scale 0) and then 0.1 (scale 1):
		// Result pads it to 0.10 in 128-bit form, leaves 0.1 in big form.
		c.Add(0, row2)
		c.Retract(0, row2)
		for _, r := range []*row.Row{row1, big, big} {
			c.Add(0, r)
		}
		c.Retract(0, big)
		c.Retract(0, big)
		want := show(c, 0)
		if fn == "sum" && want != "3:0.1" {
			t.Fatalf("sum in big form = %s, want 0.1 (the test no longer reaches big form)", want)
		}
		var e state.Encoder
		c.AppendSlot(&e, 0)
		if fn == "sum" && e.Bytes()[e.Len()-1] != bigForm|2 {
			t.Fatalf("%s: scale byte %#x, want big form, scale 2", fn, e.Bytes()[e.Len()-1])
		}
		r, _ := New(Spec{Name: "x", Func: fn, Arg: fs[1], HasArg: true, Retract: true})
		r.Grow(1)
		d := state.NewDecoder(e.Bytes())
		r.RestoreSlot(d, 0)
		if d.Err() != nil {
			t.Fatal(d.Err())
		}
		if got := show(r, 0); got != want {
			t.Fatalf("%s: restored %s, want %s", fn, got, want)
		}
		// Same future: one more add.
		c.Add(0, row1)
		r.Add(0, row1)
		if x, y := show(c, 0), show(r, 0); x != y {
			t.Fatalf("%s after add: %s vs %s", fn, x, y)
		}
	}
	if _, _, _, _, ok := toBigForm(row.DecimalFromInt(-7)).ToHiLo(); ok {
		t.Fatal("toBigForm(-7) is not in big.Int form")
	}
	if got := toBigForm(mustDec(t, "-0.250")); row.FormatDecimal(nil, got) == nil || string(row.FormatDecimal(nil, got)) != "-0.250" {
		t.Fatalf("toBigForm(-0.250) = %s", row.FormatDecimal(nil, got))
	}
}

func mustDec(t *testing.T, s string) row.Decimal {
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func decRowFor(t *testing.T, s *row.Schema, f row.Field, text string) *row.Row {
	r := s.NewRow()
	r.Set(f, row.Dec(mustDec(t, text)))
	return r
}

// TestRestoreSlotRejects: malformed slot states are errors, not panics or
// silently wrong sets.
func TestRestoreSlotRejects(t *testing.T) {
	_, fs := snapSchema(t)
	enc := func(f func(e *state.Encoder)) []byte {
		var e state.Encoder
		f(&e)
		return e.Bytes()
	}
	cases := []struct {
		name string
		spec Spec
		in   []byte
	}{
		{"distinct zero multiplicity", Spec{Func: "count_distinct", Arg: fs[0], HasArg: true},
			enc(func(e *state.Encoder) { e.Uint(1); e.Fixed64(5); e.Uint(0) })},
		{"distinct duplicate", Spec{Func: "count_distinct", Arg: fs[2], HasArg: true},
			enc(func(e *state.Encoder) { e.Uint(2); e.Fixed64(7); e.Uint(1); e.Fixed64(7); e.Uint(1) })},
		{"distinct out of order", Spec{Func: "count_distinct", Arg: fs[2], HasArg: true},
			enc(func(e *state.Encoder) { e.Uint(2); e.Fixed64(9); e.Uint(1); e.Fixed64(3); e.Uint(1) })},
		{"distinct key above 56 bits", Spec{Func: "count_distinct", Arg: fs[1], HasArg: true},
			enc(func(e *state.Encoder) { e.Uint(1); e.Fixed64(1 << 60); e.Uint(1) })},
		{"distinct huge count", Spec{Func: "count_distinct", Arg: fs[0], HasArg: true},
			enc(func(e *state.Encoder) { e.Uint(1 << 40) })},
		{"multiset duplicate decimal (2.0 and 2.00 are one value)", Spec{Func: "max", Arg: fs[1], HasArg: true, Retract: true},
			enc(func(e *state.Encoder) {
				e.Uint(2)
				e.Uint(1)
				e.Decimal(mustDec(t, "2.0"))
				e.Uint(1)
				e.Decimal(mustDec(t, "2.00"))
				e.Bool(false)
			})},
		{"multiset zero multiplicity", Spec{Func: "min", Arg: fs[0], HasArg: true, Retract: true},
			enc(func(e *state.Encoder) { e.Uint(1); e.Uint(0); e.Int(3); e.Bool(false) })},
		{"bad bool", Spec{Func: "min", Arg: fs[0], HasArg: true},
			enc(func(e *state.Encoder) { e.Byte(7) })},
		{"sum scale above 19", Spec{Func: "sum", Arg: fs[1], HasArg: true},
			enc(func(e *state.Encoder) { e.Decimal(mustDec(t, "1")); e.Int(1); e.Byte(20) })},
		{"bad decimal text", Spec{Func: "sum", Arg: fs[1], HasArg: true},
			enc(func(e *state.Encoder) { e.String("1x"); e.Int(1); e.Byte(0) })},
		{"truncated", Spec{Func: "avg", Arg: fs[1], HasArg: true},
			enc(func(e *state.Encoder) { e.Decimal(mustDec(t, "1.5")) })},
	}
	for _, tc := range cases {
		c, err := New(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(1)
		d := state.NewDecoder(tc.in)
		c.RestoreSlot(d, 0)
		if d.Err() == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestStaleExtremeRestores: a retractable max whose values were added and
// retracted in two scales (2.00 and 2, then both retracted) is empty — it
// once kept a stale 2.00 — and restores empty, and both go on alike.
func TestStaleExtremeRestores(t *testing.T) {
	schema, fs := snapSchema(t)
	c, _ := New(Spec{Name: "x", Func: "max", Arg: fs[1], HasArg: true, Retract: true})
	c.Grow(1)
	for _, v := range []string{"2.00", "2"} {
		c.Add(0, decRowFor(t, schema, fs[1], v))
	}
	for _, v := range []string{"2.00", "2"} {
		c.Retract(0, decRowFor(t, schema, fs[1], v))
	}
	want := show(c, 0)
	if want != "0:null" {
		t.Fatalf("max = %s; the retraction rule changed, revisit this test", want)
	}
	var e state.Encoder
	c.AppendSlot(&e, 0)
	r, _ := New(Spec{Name: "x", Func: "max", Arg: fs[1], HasArg: true, Retract: true})
	r.Grow(1)
	d := state.NewDecoder(e.Bytes())
	r.RestoreSlot(d, 0)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	if got := show(r, 0); got != want {
		t.Fatalf("restored max %s, want %s", got, want)
	}
	for _, col := range []Column{c, r} {
		col.Add(0, decRowFor(t, schema, fs[1], "1.5"))
	}
	if x, y := show(c, 0), show(r, 0); x != y {
		t.Fatalf("after add: %s vs %s", x, y)
	}
}

// TestAppendDecimalText: the allocation-free decimal text equals
// row.FormatDecimal (and so state.Encoder.Decimal) for every scale, sign
// and size, including coefficients of 2^64 and more and big.Int form.
func TestAppendDecimalText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		digits := rapid.StringMatching(`[0-9]{1,30}`).Draw(t, "digits")
		prec := rapid.IntRange(0, row.MaxDecimalScale).Draw(t, "prec")
		neg := rapid.Bool().Draw(t, "neg")
		text := digits
		if prec > 0 {
			for len(text) <= prec {
				text = "0" + text
			}
			text = text[:len(text)-prec] + "." + text[len(text)-prec:]
		}
		if neg {
			text = "-" + text
		}
		d, err := row.ParseDecimal([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []row.Decimal{d, toBigForm(d)} {
			want := string(row.FormatDecimal(nil, x))
			if got := string(appendDecimalText([]byte("p"), x)); got != "p"+want {
				t.Fatalf("%s: got %q, want %q", text, got, "p"+want)
			}
			var a, b state.Encoder
			a.Decimal(x)
			appendDecimal(&b, x)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("%s: encoding %x, want %x", text, b.Bytes(), a.Bytes())
			}
		}
	})
}
