package operator

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// TestTransientKeys checks that an operator with transient keys gives each
// drained row its own key — the same rows as one without, drain by drain —
// while it reuses the keys' memory after each Drain (from the third
// drain on, each drain's first key sits where the third's did), and that one
// without never reuses it. Keys are strings k0…k2999 (more than one arena chunk of
// 1,024 values per drain), one record each in a 10 s tumbling window,
// counted; the windows close at five watermarks, 3,000 rows each.
func TestTransientKeys(t *testing.T) {
	s := row.NewSchema()
	kf, _ := s.Add("k", row.KindString)
	const nw = 5
	run := func(transient bool) (rows [][]changelog.Row, first []*row.Value) {
		cnt, err := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		if err != nil {
			t.Fatal(err)
		}
		op, err := New(Config{Assigner: &window.Fixed{Size: 10_000, Slide: 10_000}, Mode: Final, Key: []row.Field{kf}, Aggs: []aggregate.Column{cnt}})
		if err != nil {
			t.Fatal(err)
		}
		op.SetTransientKeys(transient)
		var r row.Row
		s.Shape(&r)
		for w := range int64(nw) {
			for i := range 3000 {
				r.Set(kf, row.Str(fmt.Sprintf("k%d", i)))
				if _, err := op.Process(&r, w*10_000+int64(i), 1, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		for w := range int64(nw) {
			op.AdvanceWatermarkLimit((w+1)*10_000, 0, 1<<30)
			d := op.Drain()
			if len(d) > 0 {
				first = append(first, &d[0].Key[0])
			}
			// What a consumer reads before the next call: copy it.
			var got []changelog.Row
			for _, cr := range d {
				cr.Key = append([]row.Value(nil), cr.Key...)
				cr.Values = append([]row.Value(nil), cr.Values...)
				got = append(got, cr)
			}
			rows = append(rows, got)
		}
		return rows, first
	}
	want, keptFirst := run(false)
	got, reusedFirst := run(true)
	for w := range nw {
		if len(want[w]) != 3000 || len(got[w]) != 3000 {
			t.Fatalf("window %d: %d and %d rows, want 3000", w, len(want[w]), len(got[w]))
		}
		for i := range 3000 {
			a, b := want[w][i], got[w][i]
			if k := fmt.Sprintf("k%d", i); b.Key[0].S != k || a.Key[0].S != k {
				t.Fatalf("window %d row %d: keys %q (transient) and %q, want %q", w, i, b.Key[0].S, a.Key[0].S, k)
			}
			if a.WindowStart != int64(w)*10_000 || b.WindowStart != a.WindowStart || b.Values[0].I != 1 || a.Values[0].I != 1 {
				t.Fatalf("window %d row %d: %+v and %+v", w, i, b, a)
			}
		}
	}
	// The arena grows to 1,024, 2,048 (drain 1: 3,000 values), 4,096
	// (drain 2) values; from drain 3 on it holds a drain's keys.
	if reusedFirst[3] != reusedFirst[2] || reusedFirst[4] != reusedFirst[2] {
		t.Errorf("transient keys: drains 3-5 have their first keys at %p, %p, %p, want one place", reusedFirst[2], reusedFirst[3], reusedFirst[4])
	}
	for i := 1; i < nw; i++ {
		if keptFirst[i] == keptFirst[i-1] {
			t.Errorf("kept keys: drain %d's first key is where drain %d's was", i+1, i)
		}
	}
}
