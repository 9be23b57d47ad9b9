package join

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestKeyTableMatchesMap drives a keyTable and a Go map with the same
// random adds and deletes (small key spaces, so runs collide and deletes
// shift entries back) and checks every key's lookup after each step.
func TestKeyTableMatchesMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var tab keyTable
		var ks []keyState
		var free []int32
		ref := map[string]int32{}
		space := 4 + rng.IntN(200)
		for step := range 3000 {
			k := fmt.Sprint(rng.IntN(space))
			h := keyHash([]byte(k))
			i, ok := tab.find(ks, []byte(k), h)
			ri, rok := ref[k]
			if ok != rok || ok && i != ri {
				t.Fatalf("seed %d step %d: find %q = %d, %v; the map: %d, %v", seed, step, k, i, ok, ri, rok)
			}
			if !ok {
				var at int32
				if n := len(free); n > 0 {
					at, free = free[n-1], free[:n-1]
				} else {
					ks = append(ks, keyState{})
					at = int32(len(ks) - 1)
				}
				ks[at] = keyState{key: k, live: true}
				tab.add(at, h)
				ref[k] = at
			} else if rng.IntN(3) > 0 {
				tab.del(i, h)
				delete(ref, k)
				ks[i] = keyState{}
				free = append(free, i)
			}
			if tab.len() != len(ref) {
				t.Fatalf("seed %d step %d: %d keys, the map %d", seed, step, tab.len(), len(ref))
			}
			for rk, ri := range ref {
				if i, ok := tab.find(ks, []byte(rk), keyHash([]byte(rk))); !ok || i != ri {
					t.Fatalf("seed %d step %d: key %q lost (%d, %v; want %d)", seed, step, rk, i, ok, ri)
				}
			}
		}
	}
}

// TestKeyTableCraftedHashes is TestKeyTableMatchesMap with hashes chosen
// to collide: each key's hash is one of a few values that agree in their
// low bits or sit at the table's end (runs wrap around to slot 0, equal
// hashes of different keys are told apart by the key), so that deletes
// shift entries back across the wrap.
func TestKeyTableCraftedHashes(t *testing.T) {
	pool := []uint32{0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0, 1, 0x80000000, 0xFFFFFFF8}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tab keyTable
		var ks []keyState
		var free []int32
		ref := map[string]int32{}
		hashOf := map[string]uint32{}
		space := 2 + rng.IntN(60)
		for step := range 2000 {
			k := fmt.Sprint(rng.IntN(space))
			h, seen := hashOf[k]
			if !seen {
				h = pool[rng.IntN(len(pool))]
				hashOf[k] = h
			}
			i, ok := tab.find(ks, []byte(k), h)
			ri, rok := ref[k]
			if ok != rok || ok && i != ri {
				t.Fatalf("seed %d step %d: find %q = %d, %v; the map: %d, %v", seed, step, k, i, ok, ri, rok)
			}
			if !ok {
				var at int32
				if n := len(free); n > 0 {
					at, free = free[n-1], free[:n-1]
				} else {
					ks = append(ks, keyState{})
					at = int32(len(ks) - 1)
				}
				ks[at] = keyState{key: k, live: true}
				tab.add(at, h)
				ref[k] = at
			} else if rng.IntN(2) > 0 {
				tab.del(i, h)
				delete(ref, k)
				ks[i] = keyState{}
				free = append(free, i)
			}
			if tab.len() != len(ref) {
				t.Fatalf("seed %d step %d: %d keys, the map %d", seed, step, tab.len(), len(ref))
			}
			for rk, ri := range ref {
				if i, ok := tab.find(ks, []byte(rk), hashOf[rk]); !ok || i != ri {
					t.Fatalf("seed %d step %d: key %q lost (%d, %v; want %d)", seed, step, rk, i, ok, ri)
				}
			}
		}
	}
}
