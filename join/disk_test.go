package join

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
)

func openTestStore(t interface {
	Fatal(...any)
	Cleanup(func())
}) *disk.Store {
	st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// fataler is what the helpers below need of a test (testing.T, rapid.T).
type fataler interface {
	Fatal(...any)
	Fatalf(string, ...any)
}

// diskOp returns an operator for c on st under a tier of hot bytes whose
// size is checked every every rows.
func diskOp(t fataler, c Config, st state.Store, hot, every int) *Operator {
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.UseStore(st, 3, hot); err != nil {
		t.Fatal(err)
	}
	op.cold.every = every
	return op
}

// restartDisk flushes op, writes its sections and restores them into a
// new operator on the same store (a checkpoint and a local restart).
func restartDisk(t fataler, op *Operator, st state.Store) *Operator {
	if err := op.Flush(); err != nil {
		t.Fatal(err)
	}
	var groups []int
	var secs [][]byte
	for kg := op.cfg.Groups.Lo; kg < op.cfg.Groups.Hi; kg++ {
		var e state.Encoder
		op.SnapshotGroup(kg, &e)
		groups = append(groups, kg)
		secs = append(secs, e.Bytes())
	}
	n := diskOp(t, op.cfg, st, op.cold.hot, op.cold.every)
	n.cold.fcap = op.cold.fcap
	if err := n.RestoreGroups(groups, secs, op.Globals()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return n
}

// TestDiskIntervalJoinEqualsMemory: an inner interval join on the disk
// backend — a hot tier that turns every few rows (so keys leave memory
// and come back from the store), checkpoints and local restarts at
// random points — emits exactly the rows of the memory backend, in the
// same order, with the same outcomes; once both watermarks are +∞ the
// store holds no row of the join (the range deletes took them all).
func TestDiskIntervalJoinEqualsMemory(t *testing.T) { testDiskEqualsMemory(t, Interval) }

// TestDiskTemporalJoinEqualsMemory is TestDiskIntervalJoinEqualsMemory for
// a temporal join (inner or left, tombstones, late versions correcting
// emitted rows): its versions on the disk backend, loaded back per key,
// pruned below the anchor by key.
func TestDiskTemporalJoinEqualsMemory(t *testing.T) { testDiskEqualsMemory(t, Temporal) }

func testDiskEqualsMemory(t *testing.T, typ Type) {
	s, fields := testSchema()
	rapid.Check(t, func(t *rapid.T) {
		c := Config{Type: typ, Kind: Inner, UpperCol: -1, TombCol: -1, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
			Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}, {Side: L, Col: 0}}}
		c.Mode = operator.Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		c.Lateness = rapid.SampledFrom([]int64{0, 30, 100}).Draw(t, "lateness")
		if typ == Temporal {
			c.Kind = Kind(rapid.IntRange(0, 1).Draw(t, "kind"))
			c.TombCol = 2
		} else {
			c.Kind = Kind(rapid.IntRange(0, 2).Draw(t, "kind"))
			c.Lower = rapid.Int64Range(-3000, 100).Draw(t, "lower")
			c.Upper = c.Lower + rapid.Int64Range(0, 3000).Draw(t, "width")
			if c.Kind == Inner && rapid.IntRange(0, 2).Draw(t, "abs") == 0 {
				c.UpperCol = 2
				c.Lower = max(c.Lower, 0)
				c.Upper = c.Lower + rapid.Int64Range(1, 3000).Draw(t, "span")
			}
		}
		mem, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		st := openTestStore(t)
		every := rapid.IntRange(1, 16).Draw(t, "every")
		dop := diskOp(t, c, st, rapid.SampledFrom([]int{0, 300, 3000, 10000}).Draw(t, "hot"), every)
		// The filters of keys gone: the default room, none (every key group
		// blind at its first key gone) or room for a few filters.
		if fc := rapid.SampledFrom([]int{-1, 0, 1000}).Draw(t, "goneCap"); fc >= 0 {
			dop.cold.fcap = fc
		}
		n := rapid.IntRange(0, 400).Draw(t, "rows")
		keys := rapid.Int64Range(1, 40).Draw(t, "keys")
		ooo := rapid.SampledFrom([]int64{0, 200, 2000}).Draw(t, "ooo")
		restarts := map[int]bool{}
		for range rapid.IntRange(0, 3).Draw(t, "restarts") {
			restarts[rapid.IntRange(0, n).Draw(t, "restartAt")] = true
		}
		r := s.NewRow()
		clock := int64(1_000_000)
		maxTS := [2]int64{NoWatermark, NoWatermark}
		compare := func(what string) {
			a, ao := mem.Drain()
			b, bo := dop.Drain()
			if len(a) != len(b) || len(ao) != len(bo) {
				t.Fatalf("%s: memory emitted %d rows (%d orders), disk %d (%d)", what, len(a), len(ao), len(b), len(bo))
			}
			for i := range a {
				if ga, gb := fmt.Sprint(a[i].Op, a[i].WindowStart, a[i].Values, a[i].IsFinal), fmt.Sprint(b[i].Op, b[i].WindowStart, b[i].Values, b[i].IsFinal); ga != gb {
					t.Fatalf("%s: row %d: memory %s, disk %s", what, i, ga, gb)
				}
				if len(ao) > 0 && ao[i] != bo[i] {
					t.Fatalf("%s: row %d: memory order %+v, disk %+v", what, i, ao[i], bo[i])
				}
			}
		}
		for i := range n {
			if restarts[i] {
				dop = restartDisk(t, dop, st)
			}
			clock += rapid.Int64Range(0, 300).Draw(t, "step")
			side := rapid.IntRange(0, 1).Draw(t, "side")
			ts := clock - rapid.Int64Range(0, 400).Draw(t, "jitter")
			if rapid.IntRange(0, 5).Draw(t, "far") == 0 {
				ts -= rapid.Int64Range(0, 5000).Draw(t, "behind")
			}
			s.Shape(r)
			_ = r.Set(fields[side][0], row.Int(rapid.Int64Range(0, keys-1).Draw(t, "key")))
			_ = r.Set(fields[side][1], row.Int(int64(i)))
			if side == L {
				if rapid.IntRange(0, 9).Draw(t, "null") > 0 {
					_ = r.Set(fields[L][2], row.Time(ts+rapid.Int64Range(0, max(c.Upper, 0)).Draw(t, "up")))
				}
			} else {
				_ = r.Set(fields[R][2], row.Bool(typ == Interval || rapid.IntRange(0, 4).Draw(t, "tomb") == 0))
			}
			key := operator.AppendKey(nil, r, fields[side][:1])
			kg := keygroup.OfKey(key, c.KeyGroups)
			oa, err := mem.Process(side, kg, key, ts, uint64(i+1), r, fields[side], 0)
			if err != nil {
				t.Fatal(err)
			}
			ob, err := dop.Process(side, kg, key, ts, uint64(i+1), r, fields[side], 0)
			if err != nil {
				t.Fatal(err)
			}
			if oa != ob {
				t.Fatalf("row %d: outcome %d in memory, %d on disk", i, oa, ob)
			}
			compare(fmt.Sprintf("row %d", i))
			maxTS[side] = max(maxTS[side], ts)
			wl, wr := mem.wm[L], mem.wm[R]
			if maxTS[L] != NoWatermark {
				wl = max(wl, maxTS[L]-ooo)
			}
			if maxTS[R] != NoWatermark {
				wr = max(wr, maxTS[R]-ooo)
			}
			mem.Advance(wl, wr, 0)
			dop.Advance(wl, wr, 0)
			compare(fmt.Sprintf("advance after row %d", i))
		}
		mem.Advance(Inf, Inf, 0)
		dop.Advance(Inf, Inf, 0)
		compare("the end")
		if err := dop.Flush(); err != nil {
			t.Fatal(err)
		}
		left := 0
		lo, hi := state.GroupSpan(0, 8)
		if err := st.Scan(lo, hi, func(k, v []byte) bool { left++; return true }); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Fatalf("%d rows left in the store at +inf", left)
		}
		if rows, slots := dop.Live(); rows != 0 || slots != 0 {
			t.Fatalf("%d rows, %d slots left in memory at +inf", rows, slots)
		}
	})
}

// TestDiskIntervalJoinReadsTheStore: a tier smaller than the state makes
// the join load keys back from the store (the differential test above
// would pass trivially if nothing ever left memory).
func TestDiskIntervalJoinReadsTheStore(t *testing.T) {
	s, fields := testSchema()
	c := Config{Type: Interval, Kind: Inner, UpperCol: -1, TombCol: -1, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
		Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}, Lower: -10_000, Upper: 10_000}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t)
	if err := op.UseStore(st, 3, 4096); err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	// 1,000 keys, a left row each, then a right row each at the same
	// time: every right row matches its key's left row once.
	matched := 0
	for side := range 2 {
		for k := range 1000 {
			s.Shape(r)
			_ = r.Set(fields[side][0], row.Int(int64(k)))
			_ = r.Set(fields[side][1], row.Int(int64(k)))
			key := operator.AppendKey(nil, r, fields[side][:1])
			if _, err := op.Process(side, keygroup.OfKey(key, 8), key, 1000, uint64(side*1000+k+1), r, fields[side], 0); err != nil {
				t.Fatal(err)
			}
			rows, _ := op.Drain()
			for _, x := range rows {
				if x.Values[0].I != int64(k) || x.Values[1].I != int64(k) {
					t.Fatalf("key %d: joined %v", k, x.Values)
				}
				matched++
			}
		}
	}
	cs := op.ColdStats()
	if matched != 1000 || cs.Turns == 0 || cs.Loads == 0 || cs.RowsRead == 0 {
		t.Fatalf("matched %d (want 1000); %+v", matched, cs)
	}
}

// TestDiskIntervalJoinPartialKey: a key loaded back for a right row has
// only its left rows in memory; its right rows written at a turn while it
// stays in memory must not come back twice when a left row needs them.
func TestDiskIntervalJoinPartialKey(t *testing.T) {
	s, fields := testSchema()
	c := Config{Type: Interval, Kind: Inner, UpperCol: -1, TombCol: -1, KeyGroups: 1, Groups: keygroup.Range{Lo: 0, Hi: 1},
		Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}, Lower: -10_000, Upper: 10_000}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.UseStore(openTestStore(t), 3, 1<<30); err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	var got []string
	put := func(side int, id, ts int64) {
		s.Shape(r)
		_ = r.Set(fields[side][0], row.Int(7))
		_ = r.Set(fields[side][1], row.Int(id))
		key := operator.AppendKey(nil, r, fields[side][:1])
		if _, err := op.Process(side, 0, key, ts, uint64(id), r, fields[side], 0); err != nil {
			t.Fatal(err)
		}
		rows, _ := op.Drain()
		for _, x := range rows {
			got = append(got, fmt.Sprint(x.Values[0].I, "-", x.Values[1].I))
		}
	}
	put(L, 1, 1000)
	put(R, 2, 1000) // 1-2
	if err := op.writeBack(); err != nil {
		t.Fatal(err)
	}
	op.dropKeys(true)
	put(R, 3, 1002) // loads the left row: 1-3
	if err := op.writeBack(); err != nil {
		t.Fatal(err)
	}
	put(L, 4, 1003) // loads the right rows 2 (stored) and 3 (in memory): 4-2, 4-3
	if want := "[1-2 1-3 4-2 4-3]"; fmt.Sprint(got) != want {
		t.Fatalf("joined %v, want %s", got, want)
	}
}

// TestDiskOuterJoinPadsFromTheStore: a left join whose left rows all
// leave memory undecided (a 4 KiB tier) pads the unmatched ones from the
// store (the pad index names their keys) and matches the others (their
// stored state written again), across a checkpoint and a local restart:
// the rows are exactly the memory backend's, and the counters show the
// store did the work.
func TestDiskOuterJoinPadsFromTheStore(t *testing.T) {
	s, fields := testSchema()
	c := Config{Type: Interval, Kind: Left, UpperCol: -1, TombCol: -1, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
		Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}, Lower: 0, Upper: 5_000}
	st := openTestStore(t)
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.UseStore(st, 3, 4096); err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	step := uint64(0)
	put := func(side int, k, ts int64) {
		s.Shape(r)
		_ = r.Set(fields[side][0], row.Int(k))
		_ = r.Set(fields[side][1], row.Int(k))
		step++
		key := operator.AppendKey(nil, r, fields[side][:1])
		if _, err := op.Process(side, keygroup.OfKey(key, 8), key, ts, step, r, fields[side], 0); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	drain := func() {
		rows, _ := op.Drain()
		for _, x := range rows {
			got[fmt.Sprint(x.Op, " ", x.Values)]++
		}
	}
	// 1,000 auctions at 1 s; bids for the even keys at 2 s, and the
	// right side's watermark to 3 s (nothing due: pads at 6 s + 1 ms).
	for k := range int64(1000) {
		put(L, k, 1000)
	}
	drain()
	for k := int64(0); k < 1000; k += 2 {
		put(R, k, 2000)
	}
	drain()
	op.Advance(1000, 3000, 0)
	drain()
	op = restartDisk(t, op, st)
	// The odd keys' padded rows come at 6,001 ms, from the store.
	op.Advance(7000, 7000, 0)
	drain()
	op.Advance(Inf, Inf, 0)
	drain()
	for k := range int64(1000) {
		want := fmt.Sprint("insert [", k, " ", k, "]")
		if k%2 == 1 {
			want = fmt.Sprint("insert [", k, " null]")
		}
		if got[want] != 1 {
			t.Fatalf("key %d: %q ×%d; got %d distinct rows: %v", k, want, got[want], len(got), got)
		}
	}
	if len(got) != 1000 {
		t.Fatalf("%d distinct rows, want 1000", len(got))
	}
	cs := op.ColdStats()
	if cs.PadLoads < 500 || cs.Loads < cs.PadLoads {
		t.Fatalf("the padded rows did not come from the store: %+v", cs)
	}
	if rows, slots := op.Live(); rows != 0 || slots != 0 {
		t.Fatalf("%d rows, %d slots left at +inf", rows, slots)
	}
}

// TestDiskTemporalJoinReadsTheStore: 1,000 keys' versions under a 4 KiB
// tier leave memory; each key's probe then loads its versions back from
// the store and takes its version; a second version per key prunes the
// first from the store by key.
func TestDiskTemporalJoinReadsTheStore(t *testing.T) {
	s, fields := testSchema()
	c := Config{Type: Temporal, Kind: Inner, UpperCol: -1, TombCol: 2, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
		Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}, Mode: operator.Update}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t)
	if err := op.UseStore(st, 3, 4096); err != nil {
		t.Fatal(err)
	}
	r := s.NewRow()
	step := uint64(0)
	put := func(side int, k, id, ts int64) {
		s.Shape(r)
		_ = r.Set(fields[side][0], row.Int(k))
		_ = r.Set(fields[side][1], row.Int(id))
		if side == R {
			_ = r.Set(fields[R][2], row.Bool(false))
		}
		step++
		key := operator.AppendKey(nil, r, fields[side][:1])
		if _, err := op.Process(side, keygroup.OfKey(key, 8), key, ts, step, r, fields[side], 0); err != nil {
			t.Fatal(err)
		}
	}
	for k := range int64(1000) {
		put(R, k, 10_000+k, 1000) // version 1 of key k
	}
	for k := range int64(1000) {
		put(R, k, 20_000+k, 2000) // version 2
	}
	op.Advance(1500, 1500, 0)
	for k := range int64(1000) {
		put(L, k, k, 1600) // takes version 1
	}
	op.Advance(3000, 3000, 0) // the probes resolve; version 1 falls below the anchor
	got := map[string]int{}
	rows, _ := op.Drain()
	for _, x := range rows {
		got[fmt.Sprint(x.Op, " ", x.Values)]++
	}
	for k := range int64(1000) {
		if want := fmt.Sprint("insert [", k, " ", 10_000+k, "]"); got[want] != 1 {
			t.Fatalf("key %d: %q ×%d (%d distinct rows)", k, want, got[want], len(got))
		}
	}
	if len(got) != 1000 {
		t.Fatalf("%d distinct rows, want 1000", len(got))
	}
	cs := op.ColdStats()
	if cs.Turns == 0 || cs.Loads < 500 || cs.RowsRead < 500 || cs.RowsWritten < 1000 {
		t.Fatalf("the versions did not go through the store: %+v", cs)
	}
	op.Advance(Inf, Inf, 0)
	if err := op.Flush(); err != nil {
		t.Fatal(err)
	}
	left := 0
	lo, hi := state.GroupSpan(0, 8)
	if err := st.Scan(lo, hi, func(k, v []byte) bool { left++; return true }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d versions left in the store at +inf", left)
	}
	t.Logf("%+v", cs)
}

// TestDiskJoinGoneBounded: the filters of the keys gone from memory cost
// about a byte and a half a key where the list they replace cost 24, and
// they stay within their room whatever the keys: past it a key group
// forgets its filters and loads every absent key. Whichever, every key
// gone with a row in the store is loaded (a right row of each matches
// its left row exactly once), and a key never seen is rarely loaded
// while the filters hold.
func TestDiskJoinGoneBounded(t *testing.T) {
	s, fields := testSchema()
	c := Config{Type: Interval, Kind: Inner, UpperCol: -1, TombCol: -1, KeyGroups: 8, Groups: keygroup.Range{Lo: 0, Hi: 8},
		Keep: [2][]row.Kind{keepL, keepR}, Columns: []Column{{Side: L, Col: 1}, {Side: R, Col: 1}}, Lower: -1_000_000, Upper: 1_000_000}
	const hot = 64 << 10
	op := diskOp(t, c, openTestStore(t), hot, 256)
	if op.cold.fcap != minGone {
		t.Fatalf("room %d, want %d", op.cold.fcap, minGone)
	}
	r := s.NewRow()
	seq := uint64(0)
	matched := 0
	put := func(side, k int) {
		s.Shape(r)
		_ = r.Set(fields[side][0], row.Int(int64(k)))
		_ = r.Set(fields[side][1], row.Int(int64(k)))
		key := operator.AppendKey(nil, r, fields[side][:1])
		seq++
		if _, err := op.Process(side, keygroup.OfKey(key, 8), key, 1000, seq, r, fields[side], 0); err != nil {
			t.Fatal(err)
		}
		rows, _ := op.Drain()
		for _, x := range rows {
			if x.Values[0].I != int64(k) || x.Values[1].I != int64(k) {
				t.Fatalf("key %d: joined %v", k, x.Values)
			}
			matched++
		}
		if b := op.GoneBytes(); b > op.cold.fcap {
			t.Fatalf("after %d rows: filters of %d bytes, room %d", seq, b, op.cold.fcap)
		}
		if tb := op.tierBytes(); tb > 2*hot {
			t.Fatalf("after %d rows: the tier holds %d bytes, budget %d", seq, tb, hot)
		}
	}
	// 10,000 keys with a left row each, no watermark: they go from memory
	// with rows in the store, within the room.
	const n = 10_000
	for k := range n {
		put(L, k)
	}
	cs := op.ColdStats()
	if cs.Turns == 0 || cs.Blind != 0 {
		t.Fatalf("%d keys: %+v", n, cs)
	}
	inMem := 0
	for _, g := range op.groups {
		inMem += g.keys.len()
	}
	gone := n - inMem
	if b := op.GoneBytes(); gone < n/2 || b == 0 || b*8 > gone*24 {
		t.Fatalf("%d keys gone: filters of %d bytes (%.2f a key), want less than an eighth of 24 a key", gone, b, float64(b)/float64(gone))
	}
	// Right rows of 10,000 keys never seen: loaded only on a false
	// positive (about 1 % per filter part: a key group's filter has four
	// or five by then).
	before := op.ColdStats()
	for k := n; k < 2*n; k++ {
		put(R, k)
	}
	after := op.ColdStats()
	if fp := after.Loads - before.Loads; fp > n/20 || after.Skipped-before.Skipped < n*19/20 || after.Blind != 0 {
		t.Fatalf("keys never seen: %d loads, %d skipped of %d; %+v", fp, after.Skipped-before.Skipped, n, after)
	}
	// 100,000 more keys: past the room, key groups go blind.
	for k := 2 * n; k < 12*n; k++ {
		put(L, k)
	}
	if cs := op.ColdStats(); cs.Blind == 0 {
		t.Fatalf("%d keys: no key group blind: %+v", 11*n, cs)
	}
	// A right row of every key with a left row matches it exactly once.
	for k := range n {
		put(R, k)
	}
	for k := 2 * n; k < 12*n; k++ {
		put(R, k)
	}
	if matched != 11*n {
		t.Fatalf("matched %d, want %d", matched, 11*n)
	}
}
