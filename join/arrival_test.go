package join

import (
	"slices"
	"testing"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// arrivalOp is an operator of type t over one key group whose sides keep
// one int column each, and a put that feeds it rows of key 1.
func arrivalOp(t *testing.T, c Config) (*Operator, func(side int, val, ts int64, seq uint64)) {
	t.Helper()
	s := row.NewSchema()
	k, _ := s.Add("k", row.KindInt)
	v, _ := s.Add("v", row.KindInt)
	c.TombCol, c.KeyGroups, c.Groups = -1, 1, keygroup.Range{Lo: 0, Hi: 1}
	c.Keep = [2][]row.Kind{{row.KindInt}, {row.KindInt}}
	c.Columns = []Column{{Side: L, Col: 0}, {Side: R, Col: 0}}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var r row.Row
	return op, func(side int, val, ts int64, seq uint64) {
		s.Shape(&r)
		_ = r.Set(k, row.Int(1))
		_ = r.Set(v, row.Int(val))
		enc := operator.AppendKey(nil, &r, []row.Field{k})
		if _, err := op.Process(side, 0, enc, ts, seq, &r, []row.Field{v}, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRowsOfOneTimeInArrivalOrder: a key's rows of one event time are kept
// in the order they arrived (the list entry holds no arrival step). An
// interval join pairs a left row with them in that order: right rows 1
// and 2 at 100, 3 at 90 (out of order), 4 at 100, then a left row at 95
// (bounds [0, 10]) pairs with 1, 2 and 4, in that order — also after a
// snapshot and restore, with 12 more rows and 5 at 100, and 7 at 90 (its
// place found by binary search): a left row at 90 pairs with 3, 7, 1, 2,
// 4, the twelve, 5. A temporal join
// takes, among versions of one time, the last to arrive: versions 1 and
// 2 at 100, 3 at 90, then a probe at 100 takes version 2.
func TestRowsOfOneTimeInArrivalOrder(t *testing.T) {
	op, put := arrivalOp(t, Config{Type: Interval, Kind: Inner, Lower: 0, Upper: 10, UpperCol: -1})
	put(R, 1, 100, 1)
	put(R, 2, 100, 2)
	put(R, 3, 90, 3)
	put(R, 4, 100, 4)
	put(L, 0, 95, 5)
	rows, _ := op.Drain()
	var got []int64
	for _, r := range rows {
		got = append(got, r.Values[1].I)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Errorf("interval: the left row paired with right rows %v, want [1 2 4]", got)
	}

	// The same rows restored from a snapshot into a fresh operator, then
	// more rows of the same time.
	op, put = arrivalOp(t, Config{Type: Interval, Kind: Inner, Lower: 0, Upper: 10, UpperCol: -1})
	put(R, 1, 100, 1)
	put(R, 2, 100, 2)
	put(R, 3, 90, 3)
	put(R, 4, 100, 4)
	e := state.NewEncoder(nil)
	op.SnapshotGroup(0, e)
	restored, put2 := arrivalOp(t, Config{Type: Interval, Kind: Inner, Lower: 0, Upper: 10, UpperCol: -1})
	if err := restored.RestoreGroups([]int{0}, [][]byte{e.Bytes()}, op.Globals()); err != nil {
		t.Fatal(err)
	}
	for i := range int64(12) {
		put2(R, 10+i, 100, uint64(5+i))
	}
	put2(R, 5, 100, 20)
	put2(R, 7, 90, 21) // behind 15 rows: the binary search, after 3
	put2(L, 0, 90, 22)
	rows, _ = restored.Drain()
	want := []int64{3, 7, 1, 2, 4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 5}
	got = got[:0]
	for _, r := range rows {
		got = append(got, r.Values[1].I)
	}
	if !slices.Equal(got, want) {
		t.Errorf("interval after restore: the left row paired with right rows %v, want %v", got, want)
	}

	op, put = arrivalOp(t, Config{Type: Temporal, Kind: Inner, Mode: operator.Update, UpperCol: -1})
	put(R, 1, 100, 1)
	put(R, 2, 100, 2)
	put(R, 3, 90, 3)
	put(L, 0, 100, 4)
	op.Advance(101, 101, 0)
	rows, _ = op.Drain()
	if len(rows) != 1 || rows[0].Values[1].I != 2 {
		t.Errorf("temporal: rows %+v, want one with version 2", rows)
	}
}
