package u64map

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// The benchmarks run each operation on a Map[uint32] and on a Go
// map[uint64]uint32 side by side (sub-benchmarks map and gomap), at 1,000
// keys (the table in cache) and 1,000,000 (a lookup misses the cache),
// keys drawn uniformly from uint64 or dense (0..n-1, as int group keys):
//
//	go test ./u64map -run XXX -bench . -count 8

var sizes = []int{1_000, 1_000_000}

// keys returns n distinct keys: dense (0..n-1, shuffled) or random.
func keys(n int, dense bool) []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	ks := make([]uint64, n)
	seen := make(map[uint64]bool, n)
	for i := range ks {
		if dense {
			ks[i] = uint64(i)
			continue
		}
		for {
			k := rng.Uint64()
			if !seen[k] {
				seen[k] = true
				ks[i] = k
				break
			}
		}
	}
	rng.Shuffle(n, func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return ks
}

func name(n int, dense bool) string {
	if dense {
		return strconv.Itoa(n) + "/dense"
	}
	return strconv.Itoa(n) + "/random"
}

// BenchmarkGet: lookups of present keys, in an order other than their
// insertion's.
func BenchmarkGet(b *testing.B) {
	for _, n := range sizes {
		for _, dense := range []bool{true, false} {
			ks := keys(n, dense)
			probe := append([]uint64(nil), ks...)
			rand.New(rand.NewPCG(5, 6)).Shuffle(n, func(i, j int) { probe[i], probe[j] = probe[j], probe[i] })
			b.Run(name(n, dense)+"/map", func(b *testing.B) {
				var m Map[uint32]
				for i, k := range ks {
					m.Put(k, uint32(i))
				}
				var s uint32
				b.ResetTimer()
				for i := range b.N {
					v, _ := m.Get(probe[i%n])
					s += v
				}
				sink = s
			})
			b.Run(name(n, dense)+"/gomap", func(b *testing.B) {
				m := map[uint64]uint32{}
				for i, k := range ks {
					m[k] = uint32(i)
				}
				var s uint32
				b.ResetTimer()
				for i := range b.N {
					s += m[probe[i%n]]
				}
				sink = s
			})
		}
	}
}

// BenchmarkMiss: lookups of absent keys.
func BenchmarkMiss(b *testing.B) {
	for _, n := range sizes {
		ks := keys(2*n, false)
		in, out := ks[:n], ks[n:]
		b.Run(name(n, false)+"/map", func(b *testing.B) {
			var m Map[uint32]
			for i, k := range in {
				m.Put(k, uint32(i))
			}
			found := 0
			b.ResetTimer()
			for i := range b.N {
				if _, ok := m.Get(out[i%n]); ok {
					found++
				}
			}
			sink = uint32(found)
		})
		b.Run(name(n, false)+"/gomap", func(b *testing.B) {
			m := map[uint64]uint32{}
			for i, k := range in {
				m[k] = uint32(i)
			}
			found := 0
			b.ResetTimer()
			for i := range b.N {
				if _, ok := m[out[i%n]]; ok {
					found++
				}
			}
			sink = uint32(found)
		})
	}
}

// BenchmarkInsert: n keys into an empty table, growing it (per key).
func BenchmarkInsert(b *testing.B) {
	for _, n := range sizes {
		ks := keys(n, false)
		b.Run(name(n, false)+"/map", func(b *testing.B) {
			b.ReportAllocs()
			for it := 0; it < b.N; {
				var m Map[uint32]
				for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
					m.Put(ks[i], uint32(i))
				}
			}
		})
		b.Run(name(n, false)+"/gomap", func(b *testing.B) {
			b.ReportAllocs()
			for it := 0; it < b.N; {
				m := map[uint64]uint32{}
				for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
					m[ks[i]] = uint32(i)
				}
			}
		})
	}
}

// BenchmarkChurn: at a steady n keys, each operation deletes the oldest
// key and inserts a new one (a ring of ids, as the payload cache's).
func BenchmarkChurn(b *testing.B) {
	for _, n := range sizes {
		ks := keys(2*n, false)
		b.Run(name(n, false)+"/map", func(b *testing.B) {
			var m Map[uint32]
			for i := range n {
				m.Put(ks[i], uint32(i))
			}
			b.ResetTimer()
			for i := range b.N {
				m.Delete(ks[i%(2*n)])
				m.Put(ks[(i+n)%(2*n)], uint32(i))
			}
		})
		b.Run(name(n, false)+"/gomap", func(b *testing.B) {
			m := map[uint64]uint32{}
			for i := range n {
				m[ks[i]] = uint32(i)
			}
			b.ResetTimer()
			for i := range b.N {
				delete(m, ks[i%(2*n)])
				m[ks[(i+n)%(2*n)]] = uint32(i)
			}
		})
	}
}

var sink uint32
