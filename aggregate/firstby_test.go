package aggregate

import (
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// TestFirstBy: first_by(bidder, desc(price), ts) is the bidder of the
// highest price, the earliest ts among those, the first added among rows
// equal in both (Nexmark q9's ROW_NUMBER() OVER (… ORDER BY price DESC,
// dateTime ASC) = 1); last_by(bidder, ts) the bidder of the latest ts,
// the last added among equal ts (q18's deduplication keeping the last
// row). Values worked out by hand; a snapshot restores a slot exactly.
func TestFirstBy(t *testing.T) {
	s := row.NewSchema()
	price, _ := s.Add("price", row.KindInt)
	ts, _ := s.Add("ts", row.KindTime)
	bidder, _ := s.Add("bidder", row.KindString)
	mk := func(fn string, order []row.Field, desc []bool) Column {
		c, err := New(Spec{Name: "b", Func: fn, Arg: bidder, HasArg: true, Order: order, Desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(4)
		return c
	}
	r := func(p, t int64, b string) *row.Row {
		x := s.NewRow()
		if p >= 0 {
			x.Set(price, row.Int(p))
		}
		x.Set(ts, row.Time(t))
		if b != "" {
			x.Set(bidder, row.Str(b))
		}
		return x
	}
	top := mk("first_by", []row.Field{price, ts}, []bool{true, false})
	last := mk("last_by", []row.Field{ts}, nil)
	first := mk("first_by", []row.Field{ts}, nil)
	rows := []*row.Row{
		r(10, 5, "a"),
		r(30, 9, "b"),  // highest price so far
		r(30, 7, "c"),  // same price, earlier: wins
		r(30, 7, "d"),  // equal in both: the first added (c) stays
		r(-1, 20, "e"), // null price: below every price (descending: last)
		r(20, 20, ""),  // null bidder, latest ts tied with e: last_by takes it
		r(5, 1, "f"),   // earliest ts
	}
	for _, x := range rows {
		for _, c := range []Column{top, last, first} {
			if err := c.Add(0, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		c    Column
		want string
	}{{"first_by(bidder, desc(price), ts)", top, "c"}, {"last_by(bidder, ts)", last, "null"}, {"first_by(bidder, ts)", first, "f"}} {
		if got := tc.c.Result(0).String(); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, got, tc.want)
		}
	}
	// Merging: slot 1 holds the first three rows, slot 2 the rest; merged
	// into 1 the result is the same row as when added one by one (ties go
	// to the slot merged into, the earlier rows).
	for i, x := range rows {
		slot := int32(1)
		if i >= 3 {
			slot = 2
		}
		top.Add(slot, x)
	}
	top.Merge(1, 2)
	if got := top.Result(1).String(); got != "c" {
		t.Errorf("merged first_by = %s, want c", got)
	}
	// Snapshot: slot 0 restored into slot 3 behaves the same (a later
	// equal row does not replace it, a better one does).
	var e state.Encoder
	top.AppendSlot(&e, 0)
	d := state.NewDecoder(e.Bytes())
	top.RestoreSlot(d, 3)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	top.Add(3, r(30, 7, "z"))
	if got := top.Result(3).String(); got != "c" {
		t.Errorf("restored slot after an equal row = %s, want c", got)
	}
	top.Add(3, r(31, 100, "y"))
	if got := top.Result(3).String(); got != "y" {
		t.Errorf("restored slot after a better row = %s, want y", got)
	}
	if _, err := New(Spec{Name: "b", Func: "first_by", Arg: bidder, HasArg: true, Order: []row.Field{ts}, Retract: true}); err == nil {
		t.Error("first_by with retractions: no error")
	}
	if err := top.Retract(0, rows[0]); err != ErrNotRetractable {
		t.Errorf("Retract = %v, want ErrNotRetractable", err)
	}
}
