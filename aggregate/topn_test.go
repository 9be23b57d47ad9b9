package aggregate

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// TestTopN: top_n(3, desc(price), ts) over the columns bidder and price,
// after each row of a sequence whose ranks are worked out by hand (ties on
// both keys to the row added first, a null price below every price, fewer
// than 3 rows while the slot has fewer); a merge ranks the source's rows
// after the destination's equal ones; a snapshot restores a slot exactly
// and a corrupt one (rows out of rank order) fails; bad specs are
// refused.
func TestTopN(t *testing.T) {
	s := row.NewSchema()
	price, _ := s.Add("price", row.KindInt)
	ts, _ := s.Add("ts", row.KindInt)
	bidder, _ := s.Add("bidder", row.KindString)
	c0, err := New(Spec{Name: "top", Func: "top_n", N: 3, Order: []row.Field{price, ts}, Desc: []bool{true, false}, Cols: []row.Field{bidder, price}})
	if err != nil {
		t.Fatal(err)
	}
	c := c0.(Ranker)
	c.Grow(4)
	r := func(p, t int64, b string) *row.Row {
		x := s.NewRow()
		if p >= 0 {
			x.Set(price, row.Int(p))
		}
		x.Set(ts, row.Int(t))
		x.Set(bidder, row.Str(b))
		return x
	}
	ranks := func(slot int32) string {
		var out []string
		for k := range c.Ranks(slot) {
			v := c.AppendRank(nil, slot, k)
			out = append(out, v[0].String()+":"+v[1].String())
		}
		return strings.Join(out, " ")
	}
	rows := []*row.Row{r(10, 5, "a"), r(30, 7, "b"), r(-1, 1, "c"), r(30, 7, "d"), r(30, 6, "e"), r(5, 9, "f")}
	after := []string{
		"a:10",
		"b:30 a:10",
		"b:30 a:10 c:null",
		"b:30 d:30 a:10", // d ties b on (30, 7): after it; c leaves
		"e:30 b:30 d:30", // e (30, 6) comes before b (30, 7); a leaves
		"e:30 b:30 d:30", // f (5) is past rank 3
	}
	for i, x := range rows {
		if err := c.Add(0, x); err != nil {
			t.Fatal(err)
		}
		if got := ranks(0); got != after[i] {
			t.Errorf("after row %d: ranks %q, want %q", i+1, got, after[i])
		}
		if got := c.Result(0); got.I != int64(min(i+1, 3)) || got.Kind != row.KindInt {
			t.Errorf("after row %d: Result %v, want %d", i+1, got, min(i+1, 3))
		}
	}
	// The kept rows own their strings: the input row's reuse changes none.
	rows[1].Set(bidder, row.Str("zz"))
	if got := ranks(0); got != after[5] {
		t.Errorf("after the input row changed: %q", got)
	}
	rows[1].Set(bidder, row.Str("b"))
	// Merge: slot 1 holds rows 1–2 and 4 (b, d tie), slot 2 rows 3, 5, 6;
	// merged into 1: e first, then b and d (slot 1's, then the source's
	// equal ones — there are none).
	for i, x := range rows {
		slot := int32(2)
		if i == 0 || i == 1 || i == 3 {
			slot = 1
		}
		c.Add(slot, x)
	}
	if got := ranks(1); got != "b:30 d:30 a:10" {
		t.Fatalf("slot 1 before the merge: %q", got)
	}
	c.Merge(1, 2)
	if got := ranks(1); got != "e:30 b:30 d:30" {
		t.Errorf("merged: %q, want e:30 b:30 d:30", got)
	}
	// A merge of equal rows: the source's after the destination's.
	c.Reset(2)
	c.Reset(3)
	c.Add(2, r(30, 7, "x"))
	c.Add(3, r(30, 7, "y"))
	c.Merge(2, 3)
	if got := ranks(2); got != "x:30 y:30" {
		t.Errorf("merged ties: %q, want x:30 y:30", got)
	}
	// Snapshot: slot 0 restored into slot 3 holds the same rows, and
	// ranks a new row as slot 0 does.
	var e state.Encoder
	c.AppendSlot(&e, 0)
	d := state.NewDecoder(e.Bytes())
	c.RestoreSlot(d, 3)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	if got := ranks(3); got != after[5] {
		t.Errorf("restored: %q, want %q", got, after[5])
	}
	for _, slot := range []int32{0, 3} {
		c.Add(slot, r(40, 1, "g"))
	}
	if a, b := ranks(0), ranks(3); a != "g:40 e:30 b:30" || b != a {
		t.Errorf("after g (40): original %q, restored %q, want g:40 e:30 b:30", a, b)
	}
	// Two rows swapped in the snapshot: refused.
	var bad state.Encoder
	bad.Uint(2)
	for _, x := range [][]row.Value{{row.Int(10), row.Int(1), row.Str("p"), row.Int(10)}, {row.Int(20), row.Int(1), row.Str("q"), row.Int(20)}} {
		for _, v := range x {
			bad.Value(v)
		}
	}
	d = state.NewDecoder(bad.Bytes())
	c.RestoreSlot(d, 3)
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "rows out of rank order") {
		t.Errorf("rows out of order: %v", d.Err())
	}
	for _, tc := range []struct {
		sp   Spec
		want string
	}{
		{Spec{Func: "top_n", N: 0, Order: []row.Field{price}}, "n is 1 to 1000"},
		{Spec{Func: "top_n", N: 1001, Order: []row.Field{price}}, "n is 1 to 1000"},
		{Spec{Func: "top_n", N: 2}, "needs at least one key to order by"},
		{Spec{Func: "top_n", N: 2, Order: []row.Field{price}, Retract: true}, "top_n() cannot take back a row"},
	} {
		if _, err := New(tc.sp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.sp, err, tc.want)
		}
	}
}
