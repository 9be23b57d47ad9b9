package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// TestPaneHitAndWindowReuse drives the one-entry pane cache (find) and the
// reuse of the previous record's windows (assignPanes) through runs of one
// key and window, keys and windows interleaved, a retraction emptying an
// entry, a restore, and a closed pane whose memory a later window reuses
// (its old entries replaced by other keys). Tumbling windows of 10 ms with
// offset 3 ([3,13), [13,23), …), sum(v), mode update, allowed lateness 0:
// every row below was worked out by hand from the inputs.
func TestPaneHitAndWindowReuse(t *testing.T) {
	schema, kf, vf := testSchema(t)
	mk := func() *Operator {
		sum, err := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true, Retract: true})
		if err != nil {
			t.Fatal(err)
		}
		o, err := New(Config{Assigner: &window.Fixed{Size: 10, Slide: 10, Offset: 3}, Mode: Update,
			Key: []row.Field{kf}, Aggs: []aggregate.Column{sum}, KeyGroups: 8})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := mk()
	r := schema.NewRow()
	var got []string
	ev := func(k string, ts, v int64, w int) {
		t.Helper()
		schema.Shape(r)
		r.Set(kf, row.Str(k))
		r.Set(vf, row.Int(v))
		if _, err := o.Process(r, ts, w, 0); err != nil {
			t.Fatal(err)
		}
	}
	advance := func(wm int64) {
		t.Helper()
		if err := o.AdvanceWatermark(wm, 0); err != nil {
			t.Fatal(err)
		}
		for _, x := range o.Drain() {
			got = append(got, fmt.Sprintf("%s [%d,%d) %s=%s v%d", x.Op, x.WindowStart, x.WindowEnd, x.Key[0].S, x.Values[0], x.Version))
		}
	}
	ev("a", 3, 1, 1)
	ev("a", 4, 2, 1)
	ev("b", 5, 4, 1)
	ev("a", 12, 8, 1)  // a after b: the cache holds b's entry
	ev("a", 13, 16, 1) // the next window
	ev("a", 6, 32, 1)  // back to [3,13)
	ev("b", 7, 4, -1)  // b's only row retracted: its entry empties
	ev("c", 8, 64, 1)
	ev("c", 9, 128, 1)
	o = restoreWith(t, o, mk)
	ev("b", 10, 256, 1) // b comes back after the restore
	ev("a", 11, 512, 1)
	ev("b", 14, 1024, 1)
	ev("a", 11, 2048, 1) // the cache holds [3,13)'s entry of a when that pane closes
	advance(13)          // [3,13) fires and closes (lateness 0): its pane is recycled
	ev("c", 24, 1, 1)    // [23,33) reuses the pane: entry 0 is c now, not a
	ev("a", 25, 2, 1)
	ev("c", 26, 4, 1)
	ev("a", 27, 8, 1)
	ev("a", 15, 32, 1) // [13,23)
	advance(40)
	want := []string{
		// The restored pane lists its entries by key group (b, c, a),
		// as the operator without the cache does.
		"insert [3,13) b=256 v1", // b's entry emptied and came back: its first row
		"insert [3,13) c=192 v1",
		"insert [3,13) a=2603 v1", // 1+2+8+32+512+2048 (a@12 is in [3,13))
		"insert [13,23) a=48 v1",  // 16+32
		"insert [13,23) b=1024 v1",
		"insert [23,33) c=5 v1",
		"insert [23,33) a=10 v1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
