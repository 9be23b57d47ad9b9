package aggregate

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// TestNthBy: nth_by(bidder, n, desc(price)) for n = 1 … 4 over rows whose
// ranks are worked out by hand (ties on price to the row added first, a
// null price below every price), null while the slot has fewer than n
// rows; a merge ranks the source's rows after the destination's equal
// ones; a snapshot restores a slot exactly; a bad rank is refused.
func TestNthBy(t *testing.T) {
	s := row.NewSchema()
	price, _ := s.Add("price", row.KindInt)
	bidder, _ := s.Add("bidder", row.KindString)
	mk := func(n int) Column {
		c, err := New(Spec{Name: "b", Func: "nth_by", N: n, Arg: bidder, HasArg: true, Order: []row.Field{price}, Desc: []bool{true}})
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(4)
		return c
	}
	r := func(p int64, b string) *row.Row {
		x := s.NewRow()
		if p >= 0 {
			x.Set(price, row.Int(p))
		}
		x.Set(bidder, row.Str(b))
		return x
	}
	cols := []Column{mk(1), mk(2), mk(3), mk(4)}
	rows := []*row.Row{r(10, "a"), r(30, "b"), r(-1, "c"), r(30, "d"), r(20, "e")}
	// After each row, ranks 1…4 (by hand).
	after := [][4]string{
		{"a", "null", "null", "null"},
		{"b", "a", "null", "null"},
		{"b", "a", "c", "null"},
		{"b", "d", "a", "c"}, // d ties b on 30: after it
		{"b", "d", "e", "a"}, // e (20) before a (10); c leaves rank 4
	}
	for i, x := range rows {
		for k, c := range cols {
			if err := c.Add(0, x); err != nil {
				t.Fatal(err)
			}
			if got := c.Result(0).String(); got != after[i][k] {
				t.Errorf("after row %d: nth_by(bidder, %d, desc(price)) = %s, want %s", i+1, k+1, got, after[i][k])
			}
		}
	}
	// Merge: slot 1 holds rows 1–2, slot 2 rows 3–5; merged into 1, the
	// ranks are those of adding the rows one by one.
	for k, c := range cols {
		for i, x := range rows {
			slot := int32(1)
			if i >= 2 {
				slot = 2
			}
			c.Add(slot, x)
		}
		c.Merge(1, 2)
		if got := c.Result(1).String(); got != after[4][k] {
			t.Errorf("merged nth_by(…, %d, …) = %s, want %s", k+1, got, after[4][k])
		}
	}
	// Snapshot: slot 0 restored into slot 3 ranks a new row as slot 0 does.
	for k, c := range cols {
		var e state.Encoder
		c.AppendSlot(&e, 0)
		d := state.NewDecoder(e.Bytes())
		c.RestoreSlot(d, 3)
		if d.Err() != nil {
			t.Fatal(d.Err())
		}
		for _, slot := range []int32{0, 3} {
			c.Add(slot, r(25, "f"))
		}
		if a, b := c.Result(0).String(), c.Result(3).String(); a != b {
			t.Errorf("nth_by(…, %d, …): restored slot gives %s, the original %s", k+1, b, a)
		}
	}
	if got := cols[2].Result(0).String(); got != "f" {
		t.Errorf("rank 3 after f (25) = %s, want f", got)
	}
	if _, err := New(Spec{Func: "nth_by", N: 0, Arg: bidder, HasArg: true, Order: []row.Field{price}}); err == nil || !strings.Contains(err.Error(), "the rank is 1 to 1000") {
		t.Errorf("rank 0: %v", err)
	}
	if _, err := New(Spec{Func: "nth_by", N: 2, Arg: bidder, HasArg: true, Order: []row.Field{price}, Retract: true}); err == nil || !strings.HasPrefix(err.Error(), "nth_by() cannot take back a row") {
		t.Errorf("retracting input: %v", err)
	}
}
