package dedup

import (
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestLiveMatchesScan: the count of remembered ids kept as ids are added
// (and counted again after the cut moves or a restore) equals a scan of
// the table (Slots) after every step of a random run: new ids, ids seen
// again after their TTL, events older than the cut, sweeps with and
// without rebuilds, growth, and restores from full and delta sections.
func TestLiveMatchesScan(t *testing.T) {
	const ttl = 1000
	rng := rand.New(rand.NewPCG(11, 12))
	tb := New(ttl)
	tb.Track()
	sweep := NewSweepState()
	var chain [][]byte
	var wm int64
	scan := func() int {
		n := 0
		tb.Slots(func(uint64, uint32, int64) { n++ })
		return n
	}
	for i := range 60_000 {
		id := (uint64(rng.IntN(5000)) + 1) * 0x9E3779B97F4A7C15
		tb.Observe(id, uint32(rng.IntN(3)), wm+int64(rng.IntN(3000))-2000)
		if rng.IntN(20) == 0 {
			wm += int64(rng.IntN(100))
			if s, due := sweep.Advance(wm, ttl); due {
				sweep = s
				tb.ApplySweep(s)
			}
		}
		if rng.IntN(400) == 0 {
			var e state.Encoder
			if len(chain) == 0 || rng.IntN(3) == 0 {
				tb.AppendEntries(&e)
				chain = [][]byte{e.Bytes()}
			} else {
				tb.AppendDelta(&e)
				chain = append(chain, e.Bytes())
			}
			if rng.IntN(2) == 0 {
				nt := New(ttl)
				if err := nt.RestoreEntries(state.NewDecoder(chain[0]), sweep); err != nil {
					t.Fatal(err)
				}
				for _, d := range chain[1:] {
					if err := nt.ApplyDelta(state.NewDecoder(d)); err != nil {
						t.Fatal(err)
					}
				}
				nt.Track()
				tb = nt
			}
		}
		if got, want := tb.Live(), scan(); got != want {
			t.Fatalf("step %d: Live %d, a scan finds %d", i, got, want)
		}
	}
}
