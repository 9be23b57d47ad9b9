package watermark

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/state"
)

func trackerBytes(t *Tracker) []byte {
	var e state.Encoder
	t.Snapshot(&e)
	return bytes.Clone(e.Bytes())
}

// TestSnapshotRestoreState: a tracker restored (New + RestoreState) from a
// Snapshot taken at random points returns the same watermark as the
// uninterrupted tracker after every later call, holds the same partitions
// and internal schedule, and snapshots to the same bytes.
func TestSnapshotRestoreState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ooo := rapid.SampledFrom([]int64{0, 1, 5000, 60_000}).Draw(t, "ooo")
		idle := rapid.SampledFrom([]int64{0, 1, 1000, 3000}).Draw(t, "idle")
		nparts := rapid.IntRange(1, 4).Draw(t, "partitions")
		nops := rapid.IntRange(1, 80).Draw(t, "ops")
		base := at(12, 0, 0)
		now := int64(0)
		adv := rapid.Bool().Draw(t, "idleAdvance")
		a, b := New(ooo, idle), New(ooo, idle)
		if adv {
			a.SetIdleAdvance(testLimit)
			b.SetIdleAdvance(testLimit)
		}
		for k := 0; k < nops; k++ {
			if rapid.IntRange(0, 5).Draw(t, "restart") == 0 {
				snap := trackerBytes(b)
				if sa := trackerBytes(a); !bytes.Equal(sa, snap) {
					t.Fatalf("step %d: snapshots of equal trackers differ:\n%x\n%x", k, sa, snap)
				}
				b = New(ooo, idle)
				if adv {
					b.SetIdleAdvance(testLimit)
				}
				d := state.NewDecoder(snap)
				if err := b.RestoreState(d); err != nil || d.Remaining() != 0 {
					t.Fatalf("step %d: restore: %v, %d bytes left", k, err, d.Remaining())
				}
				if again := trackerBytes(b); !bytes.Equal(again, snap) {
					t.Fatalf("step %d: restored tracker snapshots to\n%x\nwant\n%x", k, again, snap)
				}
				if a.min != b.min || a.nextCheck != b.nextCheck || a.current != b.current || a.maxET != b.maxET {
					t.Fatalf("step %d: min/nextCheck/current %d/%d/%d, restored %d/%d/%d", k, a.min, a.nextCheck, a.current, b.min, b.nextCheck, b.current)
				}
			}
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
			wa, wb := apply(a, o), apply(b, o)
			if wa != wb || !slices.Equal(a.Partitions(), b.Partitions()) {
				t.Fatalf("step %d %+v: watermark %s, restored %s\n%+v\n%+v", k, o, show(wa), show(wb), a.Partitions(), b.Partitions())
			}
		}
		if !bytes.Equal(trackerBytes(a), trackerBytes(b)) {
			t.Fatal("final snapshots differ")
		}
	})
}

// TestRestoreStateExample: an idle partition, its last activity and the
// watermark survive a restore; the restored tracker turns the other
// partition idle at the same tick.
func TestRestoreStateExample(t *testing.T) {
	tr := New(5*second, minute)
	tr.Observe(0, at(12, 0, 0), 0)
	tr.Observe(1, at(12, 1, 0), 0)
	tr.Observe(2, at(11, 0, 0), 0)
	tr.Observe(0, at(12, 2, 0), 30*second)
	tr.Observe(1, at(12, 3, 0), 40*second)
	check(t, "p2 idle", tr.Tick(minute), at(12, 1, 55))
	snap := trackerBytes(tr)
	r := New(5*second, minute)
	if err := r.RestoreState(state.NewDecoder(snap)); err != nil {
		t.Fatal(err)
	}
	want := []Partition{
		{MaxEventTime: at(12, 2, 0), LastArrival: 30 * second, Records: 2},
		{MaxEventTime: at(12, 3, 0), LastArrival: 40 * second, Records: 2},
		{MaxEventTime: at(11, 0, 0), LastArrival: 0, Idle: true, Records: 1},
	}
	if !slices.Equal(r.Partitions(), want) {
		t.Fatalf("restored partitions %+v", r.Partitions())
	}
	check(t, "restored", r.Current(), at(12, 1, 55))
	check(t, "p0 idle at 90s", r.Tick(90*second), at(12, 2, 55))
	check(t, "original p0 idle at 90s", tr.Tick(90*second), at(12, 2, 55))

	// A shorter idle timeout after a restart brings the next check forward.
	short := New(5*second, 10*second)
	if err := short.RestoreState(state.NewDecoder(snap)); err != nil {
		t.Fatal(err)
	}
	check(t, "both active partitions idle at 50s", short.Tick(50*second), at(12, 1, 55))
	if ps := short.Partitions(); !ps[0].Idle || !ps[1].Idle {
		t.Fatalf("partitions %+v, want all idle", ps)
	}
}

// TestRestoreStateCorrupt: a strict prefix is a truncation error, a
// negative record count an error; a tracker is unchanged by a failed
// restore; no bit flip panics.
func TestRestoreStateCorrupt(t *testing.T) {
	tr := New(5*second, minute)
	for p := 0; p < 3; p++ {
		tr.Observe(p, at(12, p, 0), int64(p)*second)
	}
	tr.Tick(minute + second)
	snap := trackerBytes(tr)
	fresh := trackerBytes(New(5*second, minute))
	for cut := 0; cut < len(snap); cut++ {
		r := New(5*second, minute)
		if err := r.RestoreState(state.NewDecoder(snap[:cut])); !errors.Is(err, state.ErrTruncated) {
			t.Fatalf("prefix %d: %v", cut, err)
		}
		if !bytes.Equal(trackerBytes(r), fresh) {
			t.Fatalf("prefix %d: a failed restore changed the tracker", cut)
		}
	}
	for bit := 0; bit < len(snap)*8; bit++ {
		bad := bytes.Clone(snap)
		bad[bit/8] ^= 1 << (bit % 8)
		r := New(5*second, minute)
		if r.RestoreState(state.NewDecoder(bad)) == nil {
			r.Observe(1, at(12, 5, 0), 2*minute)
			r.Tick(10 * minute)
			r.AddPartition(4, 10*minute)
		}
	}
	var e state.Encoder
	e.Byte(1)
	e.Int(0)
	e.Int(Infinity)
	e.Uint(1)
	e.Int(0)
	e.Int(0)
	e.Bool(false)
	e.Int(-1)
	if err := New(0, 0).RestoreState(state.NewDecoder(e.Bytes())); err == nil {
		t.Fatal("negative record count accepted")
	}
	var big state.Encoder
	big.Byte(1)
	big.Int(0)
	big.Int(0)
	big.Uint(1 << 40)
	if err := New(0, 0).RestoreState(state.NewDecoder(big.Bytes())); err == nil {
		t.Fatal("2^40 partitions accepted")
	}
}
