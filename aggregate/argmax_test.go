package aggregate

import (
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// TestArgMax: arg_max(price, auction) returns the auction of the highest
// price, ties to the smallest auction, nulls skipped, whatever the order of
// adds and merges; arg_min mirrors it; a snapshot restores it exactly.
func TestArgMax(t *testing.T) {
	s := row.NewSchema()
	price, _ := s.Add("price", row.KindInt)
	auction, _ := s.Add("auction", row.KindString)
	mk := func(fn string) Column {
		c, err := New(Spec{Name: "a", Func: fn, Arg: price, HasArg: true, Arg2: auction, HasArg2: true})
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(4)
		return c
	}
	r := func(p int64, a string) *row.Row {
		x := s.NewRow()
		if p >= 0 {
			x.Set(price, row.Int(p))
		}
		if a != "" {
			x.Set(auction, row.Str(a))
		}
		return x
	}
	amax, amin := mk("arg_max"), mk("arg_min")
	// Slot 0 gets the rows one by one; slots 1 and 2 split them and merge
	// into slot 3 in the other order.
	rows := []*row.Row{r(10, "b"), r(30, "z"), r(-1, "n"), r(30, "c"), r(5, ""), r(10, "a")}
	for i, x := range rows {
		for _, c := range []Column{amax, amin} {
			if err := c.Add(0, x); err != nil {
				t.Fatal(err)
			}
			if err := c.Add(int32(1+i%2), x); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []Column{amax, amin} {
		c.Merge(3, 2)
		c.Merge(3, 1)
	}
	for _, tc := range []struct {
		c    Column
		want string
	}{{amax, "c"}, {amin, "a"}} {
		for _, slot := range []int32{0, 3} {
			if got := tc.c.Result(slot).String(); got != tc.want {
				t.Errorf("slot %d = %s, want %s", slot, got, tc.want)
			}
		}
	}
	if !amax.Result(1).Equal(row.Str("b")) || !amax.Result(2).Equal(row.Str("c")) {
		t.Errorf("partial slots: %v %v, want b c", amax.Result(1), amax.Result(2))
	}
	var e state.Encoder
	amax.AppendSlot(&e, 0)
	back := mk("arg_max")
	d := state.NewDecoder(e.Bytes())
	back.RestoreSlot(d, 0)
	if d.Err() != nil || back.Result(0).String() != "c" {
		t.Fatalf("restored %v (%v)", back.Result(0), d.Err())
	}
	back.Add(0, r(30, "b")) // a tie the restored x must still see
	if got := back.Result(0).String(); got != "b" {
		t.Errorf("after restore and a tie: %s, want b", got)
	}
	// A tie on x between equal decimals of different scales goes to the
	// smaller scale, whatever the order.
	ds := row.NewSchema()
	dx, _ := ds.Add("x", row.KindInt)
	dy, _ := ds.Add("y", row.KindDecimal)
	dec := func(x int64, y string) *row.Row {
		r := ds.NewRow()
		r.Set(dx, row.Int(x))
		d, _ := row.ParseDecimal([]byte(y))
		r.Set(dy, row.Dec(d))
		return r
	}
	for _, order := range [][]string{{"1.50", "1.5"}, {"1.5", "1.50"}} {
		c, _ := New(Spec{Name: "a", Func: "arg_max", Arg: dx, HasArg: true, Arg2: dy, HasArg2: true})
		c.Grow(1)
		c.Add(0, dec(5, order[0]))
		c.Add(0, dec(5, order[1]))
		if got := c.Result(0).String(); got != "1.5" {
			t.Errorf("order %v: %s, want 1.5", order, got)
		}
	}
	if _, err := New(Spec{Name: "a", Func: "arg_max", Arg: price, HasArg: true}); err == nil {
		t.Error("arg_max with one argument: no error")
	}
	if _, err := New(Spec{Name: "a", Func: "arg_max", Arg: price, HasArg: true, Arg2: auction, HasArg2: true, Retract: true}); err == nil {
		t.Error("retractable arg_max: no error")
	}
}

// TestArgMaxInts: with int x and y (Nexmark q5's arg_max(bids, auction))
// Add compares the rows' int64s; over 20,000 random rows with many ties
// and nulls, in 64 slots, arg_max and arg_min give what a scan of the
// same rows computes here (the largest, smallest x; on a tie the smallest
// y), and what the boxed comparison gives (the column with ints off).
func TestArgMaxInts(t *testing.T) {
	s := row.NewSchema()
	xf, _ := s.Add("bids", row.KindInt)
	yf, _ := s.Add("auction", row.KindTime)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, fn := range []string{"arg_max", "arg_min"} {
		mk := func() *argExtreme {
			c, err := New(Spec{Name: "a", Func: fn, Arg: xf, HasArg: true, Arg2: yf, HasArg2: true})
			if err != nil {
				t.Fatal(err)
			}
			c.Grow(64)
			return c.(*argExtreme)
		}
		fast, boxed := mk(), mk()
		boxed.ints = false
		if !fast.ints {
			t.Fatal("int x and y: ints is off")
		}
		type best struct {
			x, y int64
			ok   bool
		}
		want := make([]best, 64)
		r := s.NewRow()
		for range 20_000 {
			slot := int32(rng.IntN(64))
			x, y := rng.Int64N(7)-3, rng.Int64N(11)-5
			r.Set(xf, row.Int(x))
			r.Set(yf, row.Time(y))
			null := rng.IntN(10) == 0
			if null {
				r.SetNull(xf.Index)
			}
			for _, c := range []*argExtreme{fast, boxed} {
				if err := c.Add(slot, r); err != nil {
					t.Fatal(err)
				}
			}
			if null {
				continue
			}
			b := &want[slot]
			better := x > b.x
			if fn == "arg_min" {
				better = x < b.x
			}
			if !b.ok || better || x == b.x && y < b.y {
				*b = best{x, y, true}
			}
		}
		for slot := range int32(64) {
			w := want[slot]
			got, gotBoxed := fast.Result(slot), boxed.Result(slot)
			if !w.ok || got.Kind != row.KindTime || got.I != w.y || gotBoxed.I != w.y || fast.xv[slot].I != w.x {
				t.Fatalf("%s slot %d: %v (boxed %v), want y %d of x %d", fn, slot, got, gotBoxed, w.y, w.x)
			}
		}
	}
}
