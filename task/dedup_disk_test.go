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
	g := diskDedupGraph(t, ttl, 1)
	st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	tk, d := diskDedupOn(t, g, 0, st, hot)
	return tk, d, st
}

// diskDedupGraph returns the graph at tasks tasks of diskDedupTask's
// pipeline.
func diskDedupGraph(t rapid.TB, ttl string, tasks int) *Graph {
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
	g, err := NewGraph(p, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// diskDedupOn returns task index of g on store st (hot tier hot bytes)
// and its dedup node.
func diskDedupOn(t rapid.TB, g *Graph, index int, st state.Store, hot int) (*Task, *dedupNode) {
	tk, err := New(g, index)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.UseStore(st, hot); err != nil {
		t.Fatal(err)
	}
	for _, nr := range tk.nodes {
		if nr.dedup != nil {
			return tk, nr.dedup
		}
	}
	t.Fatal("no dedup node")
	return nil, nil
}

// TestDiskDedupMatchesTable: the dedup node on the disk backend — a hot
// tier that turns every 256 new ids, lookups of the rest in the store,
// write-backs and range deletes at random points — classifies every
// delivery as one memory table with the same sweeps does, with the
// buckets' filters (which skip the lookups of ids never written to a
// bucket) or without them (no room: every bucket probed).
func TestDiskDedupMatchesTable(t *testing.T) {
	var hits, swept, skips, restarted int64
	rapid.Check(t, func(rt *rapid.T) {
		const ttl = 60_000
		tk, d, st := diskDedupTask(rt, "1m", 1)
		defer st.Close()
		noFilters := !rapid.Bool().Draw(rt, "filters")
		if noFilters {
			d.cold.fcap = 0
		}
		restarts := 0
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
			case op < 7: // a checkpoint and a local restart on the same store
				if err := tk.Flush(); err != nil {
					rt.Fatal(err)
				}
				for i := range d.changed {
					d.changed[i] = true
					d.chains[i] = chain{} // full sections: the test keeps no chain of deltas
				}
				secs, glob := tk.Snapshot(nil), tk.Globals()
				tk, d = diskDedupOn(rt, tk.g, 0, st, 1)
				if noFilters {
					d.cold.fcap = 0
				}
				if err := tk.Restore(secs, glob); err != nil {
					rt.Fatal(err)
				}
				// The restored buckets' filters, rebuilt in steps of a few
				// keys (as the deliveries' checks of the tier do).
				if err := d.rebuildStep(rapid.IntRange(0, 64).Draw(rt, "rebuild")); err != nil {
					rt.Fatal(err)
				}
				restarts++
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
		restarted += int64(restarts)
		hits += c.hits
		if c.fcap > 0 {
			skips += c.skips
		}
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
	if hits == 0 || swept == 0 || skips == 0 || restarted == 0 {
		t.Fatalf("%d ids found in the store, %d buckets swept, %d probes skipped, %d restarts: the draws do not exercise the store", hits, swept, skips, restarted)
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
	var counts int
	count := func() int {
		n := 0
		counts = 0
		if err := st.Scan(nil, []byte{0xff, 0xff}, func(k, v []byte) bool {
			switch len(k) {
			case state.PrefixLen + 12:
				n++
			case state.PrefixLen + 13:
				counts++
			default:
				t.Fatalf("a key of %d bytes", len(k))
			}
			return true
		}); err != nil {
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
	// The checkpoint also wrote each bucket's count of ids (one bucket per
	// key group: every id expires at the same second).
	if counts != d.g.KeyGroups {
		t.Fatalf("%d count keys, want %d", counts, d.g.KeyGroups)
	}
}

// TestDiskDedupFilterRestore: the buckets' filters after a checkpoint and
// a restore at another parallelism (1 task → 2: each takes half the key
// groups). The filters are not in the checkpoint, so a restored key
// group probes every bucket the store held ids in at the restore (known)
// and filters only the buckets written after it. Every delivery is
// classified as by one memory table: 3,000 ids before the checkpoint,
// then after the restore those again (duplicates, found in the store in
// buckets no filter covers), 3,000 new ids two minutes later (a new
// bucket of 30 s: filtered), those again (duplicates found through the
// filters: no false "absent") and 3,000 more new ones. The probes of new
// ids in the new bucket are skipped but for the filters' false
// positives.
func TestDiskDedupFilterRestore(t *testing.T) {
	const ttl = 60_000
	g1 := diskDedupGraph(t, "1m", 1)
	st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk, d := diskDedupOn(t, g1, 0, st, 1)
	ref := dedup.New(ttl)
	idOf := func(j int) uint64 { return uint64(j)*0x9e3779b97f4a7c15 | 1 }
	deliver := func(d *dedupNode, j int, at int64) dedup.Outcome {
		t.Helper()
		id := idOf(j)
		want, wf := ref.Observe(id, 7, at)
		kg := keygroup.OfHash(id, d.g.KeyGroups)
		got, gf, err := d.observeCold(kg-d.rng.Lo, d.table(kg-d.rng.Lo), id, 7, at)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || gf != wf {
			t.Fatalf("id %d at %d: disk %v (first %d), memory %v (first %d)", j, at, got, gf, want, wf)
		}
		return got
	}
	for j := 1; j <= 3000; j++ {
		deliver(d, j, 1_000_000)
	}
	if err := tk.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range d.changed {
		d.changed[i] = true
	}
	wrote := map[int]int{} // ids per key group, counted independently
	for j := 1; j <= 3000; j++ {
		wrote[keygroup.OfHash(idOf(j), g1.KeyGroups)]++
	}
	secs := tk.Snapshot(nil)
	glob := tk.Globals()

	g2 := diskDedupGraph(t, "1m", 2)
	var nodes [2]*dedupNode
	for k := range 2 {
		tk2, d2 := diskDedupOn(t, g2, k, st, 1)
		var mine []Section
		for _, s := range secs {
			if tk2.Range().Contains(s.Group) {
				mine = append(mine, s)
			}
		}
		if err := tk2.Restore(mine, glob); err != nil {
			t.Fatal(err)
		}
		c := d2.cold
		for i := range c.top {
			// One restored bucket per key group (every id expires at the same
			// second), its filter to be rebuilt, sized by the count the
			// checkpoint wrote.
			fs := c.filters[i]
			if c.known[i] != c.top[i] || len(fs) != 1 || fs[0].b != c.top[i]-1 || fs[0].f == nil || fs[0].scan == nil || fs[0].counted != wrote[d2.rng.Lo+i] {
				t.Fatalf("task %d key group %d: known %d, top %d, filters %+v; want known = top, one filter of bucket top−1 to rebuild, its count %d", k, d2.rng.Lo+i, c.known[i], c.top[i], fs, wrote[d2.rng.Lo+i])
			}
		}
		nodes[k] = d2
	}
	owner := func(j int) *dedupNode {
		kg := keygroup.OfHash(idOf(j), g2.KeyGroups)
		if nodes[0].rng.Contains(kg) {
			return nodes[0]
		}
		return nodes[1]
	}
	stats := func() (reads, hits, skips int64) {
		for _, n := range nodes {
			reads, hits, skips = reads+n.cold.reads, hits+n.cold.hits, skips+n.cold.skips
		}
		return
	}
	for j := 1; j <= 3000; j++ {
		if deliver(owner(j), j, 1_000_000) != dedup.Duplicate {
			t.Fatalf("id %d after the restore: not a duplicate", j)
		}
	}
	r0, h0, s0 := stats()
	if h0 != 3000 || s0 != 0 {
		t.Fatalf("the restored ids: %d found in the store, %d probes skipped; want 3000 and 0 (each is in its bucket's filter, rebuilt or not)", h0, s0)
	}
	// The rebuild reads every id of the restored buckets into their
	// filters (a few steps ran in the deliveries above); then each filter
	// is complete and holds its bucket's ids, and new ids of the restored
	// bucket are skipped but for false positives (before the filters were
	// rebuilt, every one was probed).
	for k, n := range nodes {
		if err := n.rebuildStep(1 << 30); err != nil {
			t.Fatal(err)
		}
		for i, fs := range n.cold.filters {
			if len(fs) != 1 || fs[0].scan != nil || fs[0].f.Len() < wrote[n.rng.Lo+i] {
				t.Fatalf("task %d key group %d after the rebuild: %+v; want a complete filter of at least %d ids", k, n.rng.Lo+i, fs, wrote[n.rng.Lo+i])
			}
		}
	}
	for j := 9001; j <= 12000; j++ {
		if deliver(owner(j), j, 1_000_000) != dedup.First {
			t.Fatalf("id %d: not a first delivery", j)
		}
	}
	r2, _, s2 := stats()
	if r2-r0 > 300 || s2-s0 < 2700 {
		t.Fatalf("3,000 new ids of the restored bucket: %d lookups, %d probes skipped; want at most 300 and at least 2,700", r2-r0, s2-s0)
	}
	r0, h0, s0 = stats()
	const later = 1_000_000 + 120_000
	for j := 3001; j <= 6000; j++ {
		deliver(owner(j), j, later)
	}
	for j := 3001; j <= 6000; j++ {
		deliver(owner(j), j, later)
	}
	for j := 6001; j <= 9000; j++ {
		deliver(owner(j), j, later)
	}
	r1, h1, s1 := stats()
	// Every id of 3001–6000 was delivered twice: the second delivery
	// finds it in the tier or, once the tier turned it out (every 256 new
	// ids), in the store through its bucket's filter.
	if h1-h0 == 0 {
		t.Fatal("no id of the new bucket found in the store: the tier held them all")
	}
	// The new ids of the new bucket are probed in the old buckets (no
	// filter: known) and, but for false positives, skipped in the new.
	t.Logf("after the restore: %d lookups and %d hits for the restored ids; then %d lookups, %d hits, %d probes skipped", r0, h0, r1-r0, h1-h0, s1)
	if s1 == 0 || r1-r0-(h1-h0) > s1 {
		t.Fatalf("%d lookups (%d found), %d skipped: the filters spared too few", r1-r0, h1-h0, s1)
	}
}
