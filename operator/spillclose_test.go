package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state/disk"
)

// TestSpillCloseHoldsOneKeyGroup: the close of a tumbling window whose
// entries are in the store reads them back, in an operator emitting by
// key group (OrderGroup: a stage reading another stage, as Nexmark q9's
// second stage), one key group at a time: it holds at most the entries of
// the key group with the most keys (counted here from keygroup.OfKey of
// each key's encoding: 167 of 2,000 keys in 12 key groups), not the
// window's, and emits exactly the memory backend's rows in its order. In
// arrival order (OrderArrival) a close reads the whole window back: 2,000
// held. The tier holds nothing (every record writes the pane's entries
// back), so at the close every key is in the store, in two pieces.
func TestSpillCloseHoldsOneKeyGroup(t *testing.T) {
	const keys, groups = 2000, 12
	perGroup := make([]int, groups)
	for g := range int64(keys) {
		enc := AppendKeyValue(nil, row.Int(g))
		perGroup[keygroup.OfKey(enc, groups)]++
	}
	for _, order := range []Order{OrderGroup, OrderArrival} {
		t.Run(map[Order]string{OrderGroup: "group", OrderArrival: "arrival"}[order], func(t *testing.T) {
			f := newSnapFields(t)
			cfg := snapConfig{kind: "tumbling", size: 10, slide: 10, mode: Final, keys: 3,
				aggs: []aggChoice{{"sum", "v"}, {"max", "v"}}, groups: groups, order: order}
			st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			a, b := cfg.build(t, f), cfg.build(t, f)
			if !b.UseStore(st, 7, 0) {
				t.Fatal("a tumbling window of sums does not spill")
			}
			b.spill.every = 1
			r := f.schema.NewRow()
			// Every key twice, the second time in reverse order, so that
			// a key's pieces of two write-backs merge.
			for i := range int64(2 * keys) {
				g := i
				if i >= keys {
					g = 2*keys - 1 - i
				}
				v := i
				e := snapEvent{g: g, ts: g % 10, v: &v}
				for _, o := range []*Operator{a, b} {
					f.fill(r, e)
					o.SetStep(uint64(i))
					if _, err := o.Process(r, e.ts, 1, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := a.AdvanceWatermark(10, 0); err != nil {
				t.Fatal(err)
			}
			if err := b.AdvanceWatermark(10, 0); err != nil {
				t.Fatal(err)
			}
			if err := b.StoreErr(); err != nil {
				t.Fatal(err)
			}
			ra, rb := formatRows(a.Drain()), formatRows(b.Drain())
			oa, ob := fmt.Sprint(a.DrainOrder()), fmt.Sprint(b.DrainOrder())
			if len(ra) != keys {
				t.Fatalf("memory emitted %d rows, want %d", len(ra), keys)
			}
			if strings.Join(ra, "\n") != strings.Join(rb, "\n") || oa != ob {
				t.Fatalf("rows differ\nmemory:\n%s\ndisk:\n%s", strings.Join(ra[:20], "\n"), strings.Join(rb[:20], "\n"))
			}
			want := keys
			if order == OrderGroup {
				want = 0
				for _, n := range perGroup {
					want = max(want, n)
				}
			}
			if got := b.SpillHeld(); got != want {
				t.Errorf("the close held %d entries read back at once, want %d", got, want)
			}
		})
	}
}
