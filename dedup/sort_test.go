package dedup

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestSortSlotsMatchesStableSort: sortSlots orders slots exactly as a
// stable comparison sort by id does (slots of one id in their input
// order, told apart by payload), for hash-like ids over a key group's
// range, ids repeated, ids bunched into one bucket (the fallback) and
// short inputs, with one scratch reused throughout.
func TestSortSlotsMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var sc Scratch
	gens := map[string]func(n int) uint64{
		"uniform":   func(int) uint64 { return rng.Uint64() },
		"key group": func(int) uint64 { return 37<<57 | rng.Uint64()>>7 },
		"repeated":  func(n int) uint64 { return uint64(rng.IntN(n/3+1)+1) * 0x9E3779B97F4A7C15 },
		"bunched":   func(int) uint64 { return 1<<40 + uint64(rng.IntN(1000)) },
		"one id":    func(int) uint64 { return 42 },
	}
	for _, name := range []string{"uniform", "key group", "repeated", "bunched", "one id"} {
		gen := gens[name]
		for _, n := range []int{0, 1, 2, 31, 32, 33, 100, 1000, 20000} {
			in := make([]slot, n)
			for i := range in {
				in[i] = slot{id: gen(n), payload: uint32(i)}
			}
			want := slices.Clone(in)
			slices.SortStableFunc(want, func(a, b slot) int { return cmp.Compare(a.id, b.id) })
			got := sortSlots(slices.Clone(in), &sc)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d slots: not the stable order", name, n)
			}
		}
	}
}

// TestSectionsWithSharedScratch: tables sharing one scratch write the
// same sections as tables with none.
func TestSectionsWithSharedScratch(t *testing.T) {
	var sc Scratch
	rng := rand.New(rand.NewPCG(9, 10))
	for k := range 4 {
		a, b := New(1000), New(1000)
		a.Track()
		b.Track()
		b.UseScratch(&sc)
		for range 3000 * (k + 1) {
			id, p, ts := rng.Uint64()>>uint(k*16), rng.Uint32(), int64(rng.IntN(5000))
			a.Observe(id, p, ts)
			b.Observe(id, p, ts)
		}
		var ea, eb state.Encoder
		a.AppendDelta(&ea)
		b.AppendDelta(&eb)
		if !bytes.Equal(ea.Bytes(), eb.Bytes()) {
			t.Fatalf("table %d: delta sections differ", k)
		}
		ea.Reset()
		eb.Reset()
		a.AppendEntries(&ea)
		b.AppendEntries(&eb)
		if !bytes.Equal(ea.Bytes(), eb.Bytes()) {
			t.Fatalf("table %d: key-group sections differ", k)
		}
	}
}
