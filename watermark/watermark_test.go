package watermark

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/state"
)

// at returns 2026-09-01 hh:mm:ss UTC in ms: the times of the first
// article's example.
func at(hh, mm, ss int) int64 {
	return time.Date(2026, 9, 1, hh, mm, ss, 0, time.UTC).UnixMilli()
}

const (
	second = int64(1000)
	minute = 60 * second
)

func check(t *testing.T, what string, got, want int64) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: watermark %s, want %s", what, show(got), show(want))
	}
}

func show(ms int64) string {
	switch ms {
	case None:
		return "-inf"
	case Infinity:
		return "+inf"
	}
	return time.UnixMilli(ms).UTC().Format("15:04:05.000")
}

// TestBoundedOutOfOrderness: a partition's watermark is the largest event
// time seen minus out_of_orderness; out-of-order records below the maximum
// do not move it.
func TestBoundedOutOfOrderness(t *testing.T) {
	tr := New(5*second, 0)
	check(t, "before any record", tr.Current(), None)
	tr.AddPartition(0, at(12, 0, 0))
	check(t, "partition without records", tr.Current(), None)
	check(t, "12:00:00", tr.Observe(0, at(12, 0, 0), at(12, 0, 0)), at(11, 59, 55))
	check(t, "11:59:58 (out of order)", tr.Observe(0, at(11, 59, 58), at(12, 0, 1)), at(11, 59, 55))
	check(t, "12:00:00 again", tr.Observe(0, at(12, 0, 0), at(12, 0, 2)), at(11, 59, 55))
	check(t, "12:00:10", tr.Observe(0, at(12, 0, 10), at(12, 0, 3)), at(12, 0, 5))
	check(t, "11:00 (very late)", tr.Observe(0, at(11, 0, 0), at(12, 0, 4)), at(12, 0, 5))
	p := tr.Partitions()[0]
	if want := (Partition{MaxEventTime: at(12, 0, 10), LastArrival: at(12, 0, 4), Records: 5}); p != want {
		t.Fatalf("partition %+v, want %+v", p, want)
	}
	if w := p.Watermark(5 * second); w != at(12, 0, 5) {
		t.Fatalf("Partition.Watermark = %s", show(w))
	}
	if tr.OutOfOrderness() != 5*second {
		t.Fatalf("OutOfOrderness = %d", tr.OutOfOrderness())
	}
	// Zero out-of-orderness: the watermark is the largest event time.
	z := New(0, 0)
	check(t, "ooo 0", z.Observe(0, at(12, 0, 0), 0), at(12, 0, 0))
}

// TestMinOverPartitions: the pipeline watermark is the minimum of the
// partition watermarks, and never goes backwards.
func TestMinOverPartitions(t *testing.T) {
	tr := New(10*second, 0)
	tr.AddPartition(0, 0)
	tr.AddPartition(1, 0)
	tr.AddPartition(2, 0)
	check(t, "p0 only", tr.Observe(0, at(12, 0, 0), 1), None)
	check(t, "p0, p1", tr.Observe(1, at(12, 1, 0), 2), None)
	check(t, "all three", tr.Observe(2, at(12, 2, 0), 3), at(11, 59, 50))
	check(t, "p1 ahead", tr.Observe(1, at(12, 5, 0), 4), at(11, 59, 50))
	check(t, "p0 moves", tr.Observe(0, at(12, 3, 0), 5), at(12, 1, 50))
	check(t, "p2 moves", tr.Observe(2, at(12, 10, 0), 6), at(12, 2, 50))
	check(t, "p0 passes everyone", tr.Observe(0, at(12, 20, 0), 7), at(12, 4, 50))
}

// TestFirstArticleStuckPartition is the first article's example:
// partition 0 reached 12:10, partition 1 stopped at 11:50. Without an idle
// timeout the watermark is held at 11:50 − out_of_orderness however long
// processing time runs; with idle_timeout 1m partition 1 is excluded one
// minute after its last record, and partition 0 alone drives the
// watermark (engine/testdata/scenarios/idle_partition.txt, runs 1 and 2,
// with out_of_orderness 30s here). The engine ticks before every record.
func TestFirstArticleStuckPartition(t *testing.T) {
	ooo := 30 * second
	type rec struct {
		p       int
		arrival int64
		ts      int64
	}
	recs := []rec{
		{0, at(11, 50, 0), at(11, 50, 0)},
		{1, at(11, 50, 0), at(11, 50, 0)},
		{0, at(12, 0, 30), at(12, 0, 0)},
		{0, at(12, 10, 30), at(12, 10, 0)},
	}
	run := func(idle int64, want []int64) *Tracker {
		t.Helper()
		tr := New(ooo, idle)
		tr.AddPartition(0, at(11, 50, 0))
		tr.AddPartition(1, at(11, 50, 0))
		for i, r := range recs {
			tr.Tick(r.arrival)
			check(t, fmt.Sprint("record ", i), tr.Observe(r.p, r.ts, r.arrival), want[i])
		}
		return tr
	}

	tr := run(0, []int64{None, at(11, 49, 30), at(11, 49, 30), at(11, 49, 30)})
	check(t, "no idle timeout, an hour later", tr.Tick(at(13, 0, 0)), at(11, 49, 30))
	if slices.ContainsFunc(tr.Partitions(), func(p Partition) bool { return p.Idle }) {
		t.Fatal("a partition turned idle with idle_timeout 0")
	}

	// idle_timeout 1m: at 12:00:30 both partitions have been silent for
	// 10m30s and are idle, so the watermark holds until p0's record wakes
	// p0, which then alone decides: 12:00 − 30s. Likewise at 12:10:30.
	run(minute, []int64{None, at(11, 49, 30), at(11, 59, 30), at(12, 9, 30)})

	// Released only by idleness, not before: p1 turns idle exactly
	// idle_timeout after its last record (11:50:00), p0 stays active.
	tr = New(ooo, minute)
	tr.AddPartition(0, at(11, 50, 0))
	tr.AddPartition(1, at(11, 50, 0))
	tr.Observe(1, at(11, 50, 0), at(11, 50, 0))
	tr.Observe(0, at(12, 10, 0), at(11, 50, 30))
	check(t, "p1 silent 59.999s", tr.Tick(at(11, 51, 0)-1), at(11, 49, 30))
	check(t, "p1 silent 1m", tr.Tick(at(11, 51, 0)), at(12, 9, 30))
	if ps := tr.Partitions(); ps[0].Idle || !ps[1].Idle {
		t.Fatalf("idle flags %v %v, want p1 only", ps[0].Idle, ps[1].Idle)
	}
	// p0 turns idle at 11:51:30 too: every partition idle, the watermark
	// holds.
	check(t, "all idle", tr.Tick(at(11, 55, 0)), at(12, 9, 30))
}

// TestWokenPartitionDoesNotPullBack: an idle partition that wakes up with
// old data rejoins the minimum, but the watermark does not go back
// (engine/testdata/scenarios/idle_partition.txt, run 3).
func TestWokenPartitionDoesNotPullBack(t *testing.T) {
	tr := New(0, minute)
	steps := []struct {
		p       int
		arrival int64
		ts      int64
		want    int64
	}{
		{0, at(11, 50, 0), at(11, 50, 0), None}, // p1 has no record yet
		{1, at(11, 50, 0), at(11, 50, 0), at(11, 50, 0)},
		{0, at(12, 0, 30), at(12, 0, 0), at(12, 0, 0)},
		{0, at(12, 10, 30), at(12, 10, 0), at(12, 10, 0)},
		{1, at(12, 11, 0), at(11, 55, 0), at(12, 10, 0)},  // p1 wakes at 11:55: no step back
		{0, at(12, 20, 30), at(12, 20, 0), at(12, 20, 0)}, // both idle before; p0 alone
		{1, at(12, 20, 40), at(12, 20, 0), at(12, 20, 0)},
		{0, at(12, 30, 30), at(12, 30, 0), at(12, 30, 0)},
	}
	tr.AddPartition(0, at(11, 50, 0))
	tr.AddPartition(1, at(11, 50, 0))
	for i, s := range steps {
		tr.Tick(s.arrival)
		check(t, fmt.Sprint("step ", i), tr.Observe(s.p, s.ts, s.arrival), s.want)
	}

	// While awake, the old partition holds the watermark where it is
	// until it passes it.
	tr = New(0, minute)
	tr.Observe(0, at(12, 10, 0), 0)
	tr.Observe(1, at(12, 10, 0), 0)
	tr.Observe(0, at(12, 20, 0), 10*second)
	tr.Tick(minute) // p1 idle (silent 1m); p0 silent 50s
	check(t, "p1 idle", tr.Current(), at(12, 20, 0))
	check(t, "p1 wakes at 11:00", tr.Observe(1, at(11, 0, 0), minute+1), at(12, 20, 0))
	if p := tr.Partitions()[1]; p.Idle || p.MaxEventTime != at(12, 10, 0) {
		t.Fatalf("woken partition %+v", p)
	}
	check(t, "p0 ahead, p1 behind", tr.Observe(0, at(12, 30, 0), minute+2), at(12, 20, 0))
	check(t, "p1 reaches 12:25", tr.Observe(1, at(12, 25, 0), minute+3), at(12, 25, 0))
}

// TestAddPartitionHolds: a partition registered without records is −∞
// and holds the pipeline watermark until it turns idle. Adding a known
// partition changes nothing; observing an unknown one registers every
// index up to it.
func TestAddPartitionHolds(t *testing.T) {
	tr := New(5*second, 10*second)
	tr.AddPartition(0, 0)
	check(t, "p0", tr.Observe(0, at(12, 0, 0), 0), at(11, 59, 55))
	tr.AddPartition(1, 1000)
	check(t, "p1 added", tr.Observe(0, at(12, 1, 0), 5000), at(11, 59, 55))
	check(t, "p1 silent 9.999s", tr.Tick(10_999), at(11, 59, 55))
	tr.AddPartition(1, 10_000) // known: LastArrival stays 1000
	if got := tr.Partitions()[1].LastArrival; got != 1000 {
		t.Fatalf("re-adding moved LastArrival to %d", got)
	}
	check(t, "p1 silent 10s", tr.Tick(11_000), at(12, 0, 55))
	if ps := tr.Partitions(); len(ps) != 2 || ps[0].Idle || !ps[1].Idle {
		t.Fatalf("partitions %+v", ps)
	}

	// A partition added while every other is idle still turns idle on
	// time: here p0 wakes after p1's deadline and alone decides.
	tr = New(0, 10*second)
	tr.Observe(0, at(12, 0, 0), 0)
	check(t, "p0 idle", tr.Tick(10_000), at(12, 0, 0))
	tr.AddPartition(1, 10_000)
	check(t, "p1 idle", tr.Tick(20_000), at(12, 0, 0))
	check(t, "p0 wakes", tr.Observe(0, at(12, 5, 0), 20_001), at(12, 5, 0))

	// Observe on partition 3 of a one-partition tracker adds 1, 2 and 3;
	// 1 and 2 have no records and hold the watermark.
	tr = New(0, 0)
	check(t, "p0", tr.Observe(0, at(12, 0, 0), 0), at(12, 0, 0))
	check(t, "p3", tr.Observe(3, at(12, 5, 0), 7), at(12, 0, 0))
	ps := tr.Partitions()
	if len(ps) != 4 {
		t.Fatalf("%d partitions, want 4", len(ps))
	}
	for i, want := range []Partition{
		{MaxEventTime: at(12, 0, 0), LastArrival: 0, Records: 1},
		{MaxEventTime: None, LastArrival: 7},
		{MaxEventTime: None, LastArrival: 7},
		{MaxEventTime: at(12, 5, 0), LastArrival: 7, Records: 1},
	} {
		if ps[i] != want {
			t.Errorf("partition %d: %+v, want %+v", i, ps[i], want)
		}
	}
	check(t, "p0 moves", tr.Observe(0, at(13, 0, 0), 8), at(12, 0, 0))
}

// TestAllIdleHolds: with every partition idle the watermark keeps its
// value; it neither drops to −∞ nor jumps to +∞.
func TestAllIdleHolds(t *testing.T) {
	tr := New(0, 100)
	tr.Observe(0, 5000, 0)
	tr.Observe(1, 7000, 0)
	check(t, "before", tr.Current(), 5000)
	check(t, "all idle", tr.Tick(100), 5000)
	check(t, "still", tr.Tick(1_000_000), 5000)
	check(t, "p1 wakes", tr.Observe(1, 7500, 1_000_001), 7500)
	// A tracker whose only partitions never delivered and went idle.
	tr = New(0, 100)
	tr.AddPartition(0, 0)
	check(t, "idle, no records", tr.Tick(100), None)
}

func TestEnd(t *testing.T) {
	tr := New(0, minute)
	tr.Observe(0, at(12, 0, 0), 0)
	tr.AddPartition(1, 0) // holds the watermark at 12:00
	check(t, "End", tr.End(), Infinity)
	check(t, "Current", tr.Current(), Infinity)
	check(t, "Observe after End", tr.Observe(0, at(13, 0, 0), 1), Infinity)
	check(t, "Tick after End", tr.Tick(10*minute), Infinity)
	check(t, "wake after End", tr.Observe(1, at(11, 0, 0), 10*minute+1), Infinity)
}

// TestWatermarkSaturates: an event time within out_of_orderness of the
// smallest int64 gives the partition watermark −∞; it used to wrap to a
// watermark near +∞ that fired every window.
func TestWatermarkSaturates(t *testing.T) {
	tr := New(5*second, 0)
	check(t, "MinInt64+1", tr.Observe(0, math.MinInt64+1, 0), None)
	check(t, "MinInt64+4999", tr.Observe(0, math.MinInt64+4999, 1), None)
	check(t, "MinInt64+5000", tr.Observe(0, math.MinInt64+5000, 2), math.MinInt64)
	check(t, "MinInt64+5001", tr.Observe(0, math.MinInt64+5001, 3), math.MinInt64+1)
	check(t, "normal", tr.Observe(0, at(12, 0, 0), 4), at(11, 59, 55))
	p := Partition{MaxEventTime: math.MaxInt64}
	if w := p.Watermark(5 * second); w != math.MaxInt64-5000 {
		t.Fatalf("MaxInt64 − 5s = %d", w)
	}
}

// TestRestore: a tracker restored from a snapshot of another's partitions
// and watermark continues exactly as the original.
func TestRestore(t *testing.T) {
	orig := New(5*second, minute)
	orig.Observe(2, at(11, 0, 0), 0)
	orig.Observe(0, at(12, 0, 0), 0)
	orig.Observe(1, at(12, 1, 0), 0)
	orig.Observe(0, at(12, 2, 0), 30*second)
	orig.Observe(1, at(12, 3, 0), 30*second)
	check(t, "before idleness", orig.Current(), at(10, 59, 55))
	check(t, "p2 idle", orig.Tick(minute), at(12, 1, 55))
	parts := slices.Clone(orig.Partitions())
	snap := slices.Clone(parts)

	r := New(5*second, minute)
	r.Restore(parts, orig.Current())
	parts[0].MaxEventTime = 0 // Restore copies: the caller's slice is not kept
	if !slices.Equal(r.Partitions(), snap) {
		t.Fatalf("restored %+v, want %+v", r.Partitions(), snap)
	}
	check(t, "restored", r.Current(), at(12, 1, 55))
	for _, tk := range []*Tracker{orig, r} {
		check(t, "p0 moves (min recomputed on restore)", tk.Observe(0, at(12, 4, 0), minute+1), at(12, 2, 55))
		check(t, "p1 silent 1m", tk.Tick(90*second), at(12, 3, 55))
		check(t, "p2 wakes with old data", tk.Observe(2, at(11, 30, 0), 91*second), at(12, 3, 55))
	}

	// Restore of a partition silent for longer than idle_timeout turns it
	// idle at the first Tick, whatever the tracker's earlier deadlines.
	r = New(0, minute)
	r.Observe(0, at(12, 0, 0), 10*minute) // next deadline 11m
	r.Restore([]Partition{
		{MaxEventTime: at(12, 0, 0), LastArrival: 0, Records: 1},
		{MaxEventTime: at(12, 5, 0), LastArrival: 9 * minute, Records: 1},
	}, at(12, 0, 0))
	check(t, "restored", r.Current(), at(12, 0, 0))
	check(t, "first Tick", r.Tick(9*minute+1), at(12, 5, 0))

	// Restoring a watermark above every partition keeps it: it never goes
	// back.
	r = New(0, 0)
	r.Restore([]Partition{{MaxEventTime: at(12, 0, 0), Records: 1}}, at(12, 30, 0))
	check(t, "restored above partitions", r.Current(), at(12, 30, 0))
	check(t, "partition below", r.Observe(0, at(12, 10, 0), 1), at(12, 30, 0))
	check(t, "partition passes", r.Observe(0, at(12, 40, 0), 2), at(12, 40, 0))
}

// The differential test: the tracker against a naive recomputation from the
// definition in docs/semantics.md over the whole history, after every step.

type opKind int

const (
	opObserve opKind = iota
	opTick
	opAdd
	opEnd
	opDiscover
)

// testLimit is the idle-advance limit of the naive tests: the newest event
// time + 5 s.
func testLimit(newest int64) int64 { return newest + 5000 }

type op struct {
	kind opKind
	p    int
	ts   int64
	now  int64
}

// naive recomputes every partition and the pipeline watermark from the
// history alone:
//   - a partition exists from the first AddPartition or Observe naming it or
//     a higher index; its last activity is that moment or its last record;
//   - it is idle when some Tick after its last activity came idle_timeout
//     or more after it (idle_timeout > 0);
//   - the pipeline watermark after step k is the largest, over steps
//     j ≤ k, of the minimum partition watermark over non-idle partitions
//     after step j (steps where every partition is idle do not count); +∞
//     from an End on;
//   - a partition created by a Discover (before any other op named it)
//     is idle until its first record;
//   - with idle advance (adv), a Tick after which every partition is idle
//     raises the watermark to min(now − ooo, testLimit(newest event time
//     of all records so far)), when there was a record.
func naive(ooo, idle int64, adv bool, hist []op) ([]Partition, int64) {
	cur := None
	var parts []Partition
	for k := range hist {
		parts = naiveParts(idle, hist[:k+1])
		if hist[k].kind == opEnd {
			cur = Infinity
		}
		if adv && hist[k].kind == opTick && idle > 0 && len(parts) > 0 {
			all, newest := true, None
			for _, p := range parts {
				all = all && p.Idle
				newest = max(newest, p.MaxEventTime)
			}
			if all && newest != None {
				if w := min(hist[k].now-ooo, testLimit(newest)); w > cur && cur != Infinity {
					cur = w
				}
			}
		}
		min, active := Infinity, false
		for _, p := range parts {
			if p.Idle {
				continue
			}
			active = true
			w := None
			if p.MaxEventTime != None {
				w = p.MaxEventTime - ooo
			}
			if w < min {
				min = w
			}
		}
		if active && min > cur {
			cur = min
		}
	}
	return parts, cur
}

func naiveParts(idle int64, hist []op) []Partition {
	n := 0
	for _, o := range hist {
		if (o.kind == opAdd || o.kind == opObserve || o.kind == opDiscover) && o.p+1 > n {
			n = o.p + 1
		}
	}
	parts := make([]Partition, n)
	for i := range parts {
		last := -1 // index of the last activity
		p := Partition{MaxEventTime: None}
		waiting := false
		for j, o := range hist {
			if last < 0 && (o.kind == opAdd || o.kind == opObserve || o.kind == opDiscover) && o.p >= i {
				last = j // created
				waiting = o.kind == opDiscover
			}
			if o.kind == opObserve && o.p == i {
				waiting = false
				last = j
				p.Records++
				if o.ts > p.MaxEventTime {
					p.MaxEventTime = o.ts
				}
			}
		}
		p.LastArrival = hist[last].now
		p.Idle = waiting
		for j := last + 1; j < len(hist); j++ {
			if hist[j].kind == opTick && idle > 0 && hist[j].now-p.LastArrival >= idle {
				p.Idle = true
			}
		}
		parts[i] = p
	}
	return parts
}

func apply(tr *Tracker, o op) int64 {
	switch o.kind {
	case opObserve:
		return tr.Observe(o.p, o.ts, o.now)
	case opTick:
		return tr.Tick(o.now)
	case opAdd:
		tr.AddPartition(o.p, o.now)
		return tr.Current()
	case opDiscover:
		tr.AddDiscovered(o.p, o.now)
		return tr.Current()
	default:
		return tr.End()
	}
}

func TestTrackerMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ooo := rapid.SampledFrom([]int64{0, 1, 5000, 60_000}).Draw(t, "ooo")
		idle := rapid.SampledFrom([]int64{0, 1, 1000, 3000}).Draw(t, "idle")
		nparts := rapid.IntRange(1, 4).Draw(t, "partitions")
		nops := rapid.IntRange(1, 60).Draw(t, "ops")
		restoreAt := rapid.IntRange(0, nops).Draw(t, "restoreAt")
		adv := rapid.Bool().Draw(t, "idleAdvance")
		base := at(12, 0, 0)
		now := int64(0)
		tr := New(ooo, idle)
		if adv {
			tr.SetIdleAdvance(testLimit)
		}
		var restored *Tracker
		var hist []op
		for k := 0; k < nops; k++ {
			now += rapid.SampledFrom([]int64{0, 0, 1, 250, 999, 1000, 2500}).Draw(t, "dt")
			o := op{now: now}
			switch r := rapid.IntRange(0, 99).Draw(t, "op"); {
			case r < 55:
				o.kind = opObserve
				o.p = rapid.IntRange(0, nparts-1).Draw(t, "p")
				o.ts = base + rapid.Int64Range(-3, 12).Draw(t, "ts")*1000
			case r < 85:
				o.kind = opTick
			case r < 92:
				o.kind = opAdd
				o.p = rapid.IntRange(0, nparts).Draw(t, "p")
			case r < 98:
				o.kind = opDiscover
				o.p = rapid.IntRange(0, nparts).Draw(t, "p")
			default:
				o.kind = opEnd
			}
			hist = append(hist, o)
			got := apply(tr, o)
			wantParts, want := naive(ooo, idle, adv, hist)
			if got != want || tr.Current() != want {
				t.Fatalf("step %d %+v: watermark %s (Current %s), naive %s", k, o, show(got), show(tr.Current()), show(want))
			}
			if !slices.Equal(tr.Partitions(), wantParts) {
				t.Fatalf("step %d %+v: partitions\n%+v\nnaive\n%+v", k, o, tr.Partitions(), wantParts)
			}
			if restored != nil {
				if got := apply(restored, o); got != want || !slices.Equal(restored.Partitions(), wantParts) {
					t.Fatalf("step %d %+v: restored tracker at %s %+v, naive %s %+v", k, o, show(got), restored.Partitions(), show(want), wantParts)
				}
			}
			if k+1 == restoreAt {
				restored = New(ooo, idle)
				if adv {
					restored.SetIdleAdvance(testLimit)
				}
				restored.Restore(slices.Clone(tr.Partitions()), tr.Current())
			}
		}
	})
}

// TestDiscoveredPartitions: a partition found in the data counts from its
// first record. Registered before it (the runner learned of it from a
// read batch holding its first record further on) it holds nothing back,
// so the watermarks are those of a tracker that learned of it at its
// first record. A partition registered with AddPartition holds the
// watermark back from its registration.
func TestDiscoveredPartitions(t *testing.T) {
	// Records: p0 12:00, p0 12:05, p1 11:58, p0 12:10 (ooo 0).
	early, late, announced := New(0, 0), New(0, 0), New(0, 0)
	early.AddDiscovered(1, 0) // both known from the start
	announced.AddPartition(0, 0)
	announced.AddPartition(1, 0)
	var got [3][]int64
	for _, r := range []struct {
		p  int
		ts int64
	}{{0, at(12, 0, 0)}, {0, at(12, 5, 0)}, {1, at(11, 58, 0)}, {0, at(12, 10, 0)}} {
		late.AddDiscovered(r.p, 0) // learned of at its first record
		for i, tr := range []*Tracker{early, late, announced} {
			got[i] = append(got[i], tr.Observe(r.p, r.ts, 0))
		}
	}
	want := []int64{at(12, 0, 0), at(12, 5, 0), at(12, 5, 0), at(12, 5, 0)}
	if !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
		t.Fatalf("discovered: %v and %v, want %v", got[0], got[1], want)
	}
	// Announced: p1 holds the watermark at −∞ until its record, then at
	// 11:58 (its own), and p0's 12:10 leaves p1 the minimum.
	if wantA := []int64{None, None, at(11, 58, 0), at(11, 58, 0)}; !slices.Equal(got[2], wantA) {
		t.Fatalf("announced: %v, want %v", got[2], wantA)
	}
	// A discovered partition without records does not hold an idle
	// timeout's schedule either: with every other partition idle the
	// watermark holds.
	d := New(0, minute)
	d.AddDiscovered(0, 0)
	check(t, "discovered, no record, tick", d.Tick(10*minute), None)
}

// TestIdleAdvance: with idle advance, once every partition is idle the
// watermark follows processing time − out_of_orderness, never past the
// limit the newest event time gives, and never back; a record wakes its
// partition and the minimum rule applies again. Without it the watermark
// holds.
func TestIdleAdvance(t *testing.T) {
	const ooo, idle = 30 * second, minute
	// Windows of 10 minutes, lateness 2 minutes: the newest event's window
	// closes at its end + 2m.
	limit := func(newest int64) int64 { return newest - newest%(10*minute) + 10*minute + 2*minute }
	for _, on := range []bool{false, true} {
		tr := New(ooo, idle)
		if on {
			tr.SetIdleAdvance(limit)
		}
		check(t, "no record: nothing to advance", tr.Tick(at(10, 0, 0)), None)
		tr.AddPartition(0, at(10, 0, 0))
		tr.AddPartition(1, at(10, 0, 0))
		tr.Observe(0, at(10, 4, 50), at(10, 5, 0))
		check(t, "both partitions", tr.Observe(1, at(10, 5, 10), at(10, 5, 10)), at(10, 4, 20))
		check(t, "p0 idle, p1 not", tr.Tick(at(10, 6, 0)), at(10, 4, 40))
		if !on {
			check(t, "all idle, no idle advance: holds", tr.Tick(at(10, 30, 0)), at(10, 4, 40))
			continue
		}
		// p1 turns idle at 10:06:10: every partition is idle and the
		// watermark is now − ooo.
		check(t, "all idle", tr.Tick(at(10, 6, 10)), at(10, 5, 40))
		check(t, "follows processing time", tr.Tick(at(10, 9, 0)), at(10, 8, 30))
		// Capped at 10:12, where the window [10:00, 10:10) of the newest
		// event (10:05:10) closes.
		check(t, "at the limit", tr.Tick(at(10, 12, 30)), at(10, 12, 0))
		check(t, "limit holds", tr.Tick(at(11, 0, 0)), at(10, 12, 0))
		// A record wakes p0 with an old event: the watermark does not go
		// back; p1 stays idle, p0 (10:11:00 − ooo) is below: holds.
		check(t, "wake", tr.Observe(0, at(10, 11, 0), at(11, 0, 1)), at(10, 12, 0))
		check(t, "one active partition", tr.Tick(at(11, 0, 30)), at(10, 12, 0))
		// Idle again (no record for a minute): follows now, up to the new
		// limit (the newest event is now 10:11:00, whose window [10:10,
		// 10:20) closes at 10:22).
		check(t, "idle again", tr.Tick(at(11, 1, 1)), at(10, 22, 0))
		tr.Observe(1, at(10, 25, 0), at(11, 2, 0))
		check(t, "p1 newer", tr.Tick(at(11, 3, 30)), at(10, 32, 0))
		// A snapshot restores the largest event time seen: the restored
		// tracker advances the same way.
		tr2 := snapshotRoundTrip(t, tr, ooo, idle)
		tr2.SetIdleAdvance(limit)
		tr.Observe(0, at(10, 40, 0), at(11, 4, 0))
		tr2.Observe(0, at(10, 40, 0), at(11, 4, 0))
		check(t, "restored", tr2.Tick(at(11, 30, 0)), tr.Tick(at(11, 30, 0)))
		check(t, "restored value", tr2.Current(), at(10, 52, 0))
	}
}

// snapshotRoundTrip restores a Snapshot of tr into a new tracker with
// out-of-orderness ooo and idle timeout idle.
func snapshotRoundTrip(t *testing.T, tr *Tracker, ooo, idle int64) *Tracker {
	t.Helper()
	r := New(ooo, idle)
	if err := r.RestoreState(state.NewDecoder(trackerBytes(tr))); err != nil {
		t.Fatal(err)
	}
	return r
}
