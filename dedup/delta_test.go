package dedup

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestDeltaChains: a tracked table observes ids (some seen again after
// their TTL) under a moving sweep state; at random points it writes a
// full section or a delta. A table restored from the last full section
// and the deltas after it gives every later delivery the outcome the
// original gives, and writes the same full section.
func TestDeltaChains(t *testing.T) {
	const ttl = 1000
	rng := rand.New(rand.NewPCG(5, 6))
	orig := New(ttl)
	orig.Track()
	sweep := NewSweepState()
	var chain [][]byte // the last full section, then deltas
	var wm int64
	restore := func() *Table {
		nt := New(ttl)
		if err := nt.RestoreEntries(state.NewDecoder(chain[0]), sweep); err != nil {
			t.Fatal(err)
		}
		for _, d := range chain[1:] {
			dec := state.NewDecoder(d)
			if err := nt.ApplyDelta(dec); err != nil {
				t.Fatal(err)
			}
			if dec.Remaining() != 0 {
				t.Fatalf("%d bytes after a delta", dec.Remaining())
			}
		}
		return nt
	}
	deltas, checks := 0, 0
	for i := range 100_000 {
		id := (uint64(rng.IntN(8000)) + 1) * 0x9E3779B97F4A7C15
		orig.Observe(id, uint32(rng.IntN(3)), wm+int64(rng.IntN(300))-100)
		if rng.IntN(10) == 0 {
			wm += int64(rng.IntN(30))
			if s, due := sweep.Advance(wm, ttl); due {
				sweep = s
				orig.ApplySweep(s)
			}
		}
		if rng.IntN(500) != 0 {
			continue
		}
		var e state.Encoder
		if len(chain) == 0 || rng.IntN(6) == 0 {
			orig.AppendEntries(&e)
			chain = [][]byte{e.Bytes()}
		} else {
			orig.AppendDelta(&e)
			chain = append(chain, e.Bytes())
			deltas++
		}
		if rng.IntN(4) != 0 {
			continue
		}
		// Restore and compare: the same section now, the same outcomes
		// for the next deliveries (on copies, so orig goes on alone).
		checks++
		nt := restore()
		var a, b state.Encoder
		(&Table{slots: append([]slot(nil), orig.slots...), n: orig.n, base: orig.base, baseSet: orig.baseSet, cut: orig.cut, ttl: ttl}).AppendEntries(&a)
		nt.AppendEntries(&b)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("step %d: the table restored from a chain of %d sections differs", i, len(chain))
		}
		probe := New(ttl)
		*probe = Table{slots: append([]slot(nil), orig.slots...), n: orig.n, base: orig.base, baseSet: orig.baseSet, cut: orig.cut, nextSweep: orig.nextSweep, ttl: ttl}
		for range 200 {
			id := (uint64(rng.IntN(9000)) + 1) * 0x9E3779B97F4A7C15
			p, ts := uint32(rng.IntN(3)), wm+int64(rng.IntN(300))-100
			x, fx := probe.Observe(id, p, ts)
			y, fy := nt.Observe(id, p, ts)
			if x != y || fx != fy {
				t.Fatalf("step %d: restored table says %d/%d, the original %d/%d", i, y, fy, x, fx)
			}
		}
	}
	if deltas < 50 || checks < 20 {
		t.Fatalf("%d deltas, %d checks: too few", deltas, checks)
	}
}

// TestApplyDeltaRefusesDamage: a truncated delta or one whose ids are out
// of order is an error, not a panic or a silent partial table.
func TestApplyDeltaRefusesDamage(t *testing.T) {
	tb := New(1000)
	tb.Track()
	for i := range 50 {
		tb.Observe(uint64(i+1)*0x9E3779B97F4A7C15, 1, int64(i))
	}
	var e state.Encoder
	tb.AppendDelta(&e)
	good := e.Bytes()
	for n := range len(good) - 1 {
		if err := New(1000).ApplyDelta(state.NewDecoder(good[:n])); err == nil {
			t.Fatalf("a delta cut at %d of %d bytes was applied", n, len(good))
		}
	}
	var bad state.Encoder
	bad.Byte(1)
	bad.Uint(2)
	for _, id := range []uint64{9, 3} {
		bad.Fixed64(id)
		bad.Fixed32(0)
		bad.Int(1 << 20)
	}
	if err := New(1000).ApplyDelta(state.NewDecoder(bad.Bytes())); err == nil {
		t.Fatal("ids out of order were applied")
	}
}
