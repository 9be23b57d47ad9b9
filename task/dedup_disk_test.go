package task

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
)

// diskDedupTask returns a one-task graph's task of a dedup pipeline
// (TTL ttl) with its dedup node on a store in memory, and the store.
func diskDedupTask(t rapid.TB, ttl string, hot int) (*Task, *dedupNode, *disk.Store) {
	y := `name: d
source: {type: file, path: in.jsonl, schema: {a: int, ts: timestamp}}
event_time: {field: ts}
dedup: {key: id, ttl: ` + ttl + `}
key: [a]
window: {type: tumbling, size: 1s}
aggregates: {n: count()}
`
	sp, err := spec.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGraph(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := New(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.UseStore(st, hot); err != nil {
		t.Fatal(err)
	}
	for _, nr := range tk.nodes {
		if nr.dedup != nil {
			return tk, nr.dedup, st
		}
	}
	t.Fatal("no dedup node")
	return nil, nil, nil
}

// TestDiskDedupMatchesTable: the dedup node on the disk backend — a hot
// tier that turns every 256 new ids, lookups of the rest in the store,
// write-backs and range deletes at random points — classifies every
// delivery as one memory table with the same sweeps does.
func TestDiskDedupMatchesTable(t *testing.T) {
	var hits, swept int64
	rapid.Check(t, func(rt *rapid.T) {
		const ttl = 60_000
		_, d, st := diskDedupTask(rt, "1m", 1)
		defer st.Close()
		ref := dedup.New(ttl)
		sweep := dedup.NewSweepState()
		ids := rapid.IntRange(50, 3000).Draw(rt, "ids")
		n := rapid.IntRange(200, 3000).Draw(rt, "n")
		var ts, wm int64 = 1_000_000, 0
		deliver := func(k int, id uint64, payload uint32, at int64) {
			want, wf := ref.Observe(id, payload, at)
			i := keygroup.OfHash(id, d.g.KeyGroups) // one task owns every key group
			got, gf, err := d.observeCold(i, d.table(i), id, payload, at)
			if err != nil {
				rt.Fatal(err)
			}
			if got != want || gf != wf {
				rt.Fatalf("delivery %d of id %x at %d (watermark %d): disk %v (first %d), memory %v (first %d)", k, id, at, wm, got, gf, want, wf)
			}
		}
		for k := range n {
			switch op := rapid.IntRange(0, 99).Draw(rt, "op"); {
			case op < 4: // the watermark advances: both sweep
				wm = ts - rapid.Int64Range(0, 30_000).Draw(rt, "lag")
				if s, due := sweep.Advance(wm, ttl); due {
					sweep = s
					ref.ApplySweep(s)
				}
				d.advance(wm)
			case op < 6:
				if err := d.writeBack(); err != nil {
					rt.Fatal(err)
				}
			default:
				ts += rapid.Int64Range(0, 100).Draw(rt, "step")
				id := uint64(rapid.IntRange(1, ids).Draw(rt, "id"))*0x9e3779b97f4a7c15 | 1
				payload := uint32(rapid.IntRange(0, 2).Draw(rt, "payload"))
				at := ts - rapid.Int64Range(0, 5_000).Draw(rt, "late")
				deliver(k, id, payload, at)
			}
		}
		// A tail that always reaches the store, whatever the draws: 600
		// fresh ids turn the tier twice (every 256 new ids), so the first
		// 50 of them, delivered again unexpired, are found in the store.
		for j := range 650 {
			id := uint64(ids+1+j%600)*0x9e3779b97f4a7c15 | 1
			deliver(n+j, id, uint32(j/600), ts)
		}
		// Nothing the store holds is older than the buckets the sweeps
		// deleted.
		if err := d.writeBack(); err != nil {
			rt.Fatal(err)
		}
		c := d.cold
		hits += c.hits
		for i := range c.top {
			swept += int64(c.swept[i])
			lo, hi := state.GroupSpan(i, i+1)
			if err := st.Scan(lo, hi, func(k, v []byte) bool {
				b := uint32(k[4])<<24 | uint32(k[5])<<16 | uint32(k[6])<<8 | uint32(k[7])
				if b < c.swept[i] {
					rt.Fatalf("key group %d holds an id of bucket %d, swept up to %d", i, b, c.swept[i])
				}
				return true
			}); err != nil {
				rt.Fatal(err)
			}
		}
	})
	if hits == 0 || swept == 0 {
		t.Fatalf("%d ids found in the store, %d buckets swept: the draws do not exercise the store", hits, swept)
	}
}

// TestDiskDedupTrickles: with a hot tier that never fills, the dedup node
// writes its new ids back in batches of trickleIDs as they come (checked
// every 256 new ids), not all at the checkpoint: after 10,000 new ids the
// store holds 8,192 (two batches of 4,096), and the checkpoint's
// write-back (Task.Flush) writes only the other 1,808.
func TestDiskDedupTrickles(t *testing.T) {
	tk, d, st := diskDedupTask(t, "1h", 64<<20)
	defer st.Close()
	for j := range 10_000 {
		id := uint64(j+1)*0x9e3779b97f4a7c15 | 1
		i := keygroup.OfHash(id, d.g.KeyGroups)
		if _, _, err := d.observeCold(i, d.table(i), id, 0, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		n := 0
		if err := st.Scan(nil, []byte{0xff, 0xff}, func(k, v []byte) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := d.cold.writes; got != 2*trickleIDs || count() != 2*trickleIDs {
		t.Fatalf("before the checkpoint: %d ids written, %d in the store; want %d", got, count(), 2*trickleIDs)
	}
	if err := tk.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := d.cold.writes; got != 10_000 || count() != 10_000 {
		t.Fatalf("after the checkpoint's write-back: %d ids written, %d in the store; want 10000", got, count())
	}
}
