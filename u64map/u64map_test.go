package u64map

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// check fails unless m holds exactly want: Len, every key's value, no
// cell holding a key want lacks, and every cell reachable by its key's
// probe (no empty cell between its home and it), and the load bound.
func check(t interface{ Fatalf(string, ...any) }, m *Map[uint32], want map[uint64]uint32) {
	if m.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(want))
	}
	for k, wv := range want {
		if v, ok := m.Get(k); !ok || v != wv {
			t.Fatalf("Get(%d) = %d, %v; want %d, true", k, v, ok, wv)
		}
	}
	used := 0
	mask := uint64(len(m.cells) - 1)
	for i, c := range m.cells {
		if c.k == 0 {
			if c.v != 0 {
				t.Fatalf("empty cell %d holds value %d", i, c.v)
			}
			continue
		}
		used++
		if wv, ok := want[c.k]; !ok || c.v != wv {
			t.Fatalf("cell %d holds key %d → %d; the map has %d, %v", i, c.k, c.v, wv, ok)
		}
		for h := hash(c.k) & mask; h != uint64(i); h = (h + 1) & mask {
			if m.cells[h].k == 0 {
				t.Fatalf("key %d at cell %d: its probe from %d meets an empty cell at %d", c.k, i, hash(c.k)&mask, h)
			}
		}
	}
	if used != m.n {
		t.Fatalf("%d cells used, n = %d", used, m.n)
	}
	if len(m.cells) > 0 && 4*m.n > 3*len(m.cells) {
		t.Fatalf("%d keys in %d cells: above 3/4", m.n, len(m.cells))
	}
	if _, ok := want[0]; ok != m.hasZero {
		t.Fatalf("hasZero = %v, the map has key 0: %v", m.hasZero, ok)
	}
}

// TestSmall: a few operations whose results are known by hand, key 0
// among them.
func TestSmall(t *testing.T) {
	var m Map[uint32]
	if m.Len() != 0 || m.Cells() != 0 {
		t.Fatalf("zero Map: Len %d, Cells %d", m.Len(), m.Cells())
	}
	if _, ok := m.Get(0); ok {
		t.Fatal("Get(0) found a key in an empty table")
	}
	if m.Delete(7) || m.Delete(0) {
		t.Fatal("Delete found a key in an empty table")
	}
	m.Put(7, 70)
	m.Put(0, 5)
	m.Put(7, 71)
	if v, ok := m.Get(7); !ok || v != 71 {
		t.Fatalf("Get(7) = %d, %v; want 71, true", v, ok)
	}
	if v, ok := m.Get(0); !ok || v != 5 {
		t.Fatalf("Get(0) = %d, %v; want 5, true", v, ok)
	}
	if m.Len() != 2 || m.Cells() != 16 || m.Bytes() != 16*16 {
		t.Fatalf("Len %d, Cells %d, Bytes %d; want 2, 16, 256", m.Len(), m.Cells(), m.Bytes())
	}
	p, isNew := m.Upsert(9)
	if !isNew || *p != 0 {
		t.Fatalf("Upsert(9) = %d, %v; want 0, true", *p, isNew)
	}
	*p = 90
	if p, isNew := m.Upsert(9); isNew || *p != 90 {
		t.Fatalf("Upsert(9) again = %d, %v; want 90, false", *p, isNew)
	}
	*m.Ptr(0) += 1
	if !m.Delete(7) || m.Delete(7) {
		t.Fatal("Delete(7) twice: want true, then false")
	}
	check(t, &m, map[uint64]uint32{0: 6, 9: 90})
	// The twelfth key fills 3/4 of 16 cells; the thirteenth doubles them.
	for k := uint64(100); k < 111; k++ {
		m.Put(k, uint32(k))
	}
	if m.Len() != 13 || m.Cells() != 16 {
		t.Fatalf("Len %d, Cells %d; want 13, 16", m.Len(), m.Cells())
	}
	m.Put(111, 111)
	if m.Cells() != 32 {
		t.Fatalf("Cells %d after the 13th key in cells; want 32", m.Cells())
	}
	m.Reset()
	check(t, &m, map[uint64]uint32{})
	if m.Cells() != 32 {
		t.Fatalf("Reset dropped the cells: %d", m.Cells())
	}
}

// TestFullTableReplaces: replacing a key's value in a table at its load
// bound neither grows it nor loses the key.
func TestFullTableReplaces(t *testing.T) {
	var m Map[uint32]
	want := map[uint64]uint32{}
	for k := uint64(1); k <= 12; k++ {
		m.Put(k, 1)
		want[k] = 1
	}
	for k := uint64(1); k <= 12; k++ {
		m.Put(k, 2)
		want[k] = 2
	}
	if m.Cells() != 16 {
		t.Fatalf("Cells %d; want 16", m.Cells())
	}
	check(t, &m, want)
}

// TestMatchesMap checks Map against a Go map over random puts, upserts
// through the returned pointer, deletions, lookups and resets, with keys
// drawn from a small range with 0 in it (collisions, long probe runs,
// deletions inside runs that wrap around the table's end) or from all of
// uint64, across growths; the whole table is checked after every step.
func TestMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var m Map[uint32]
		want := map[uint64]uint32{}
		keyGen := rapid.Uint64()
		if rapid.Bool().Draw(t, "small") {
			keyGen = rapid.Uint64Range(0, 300)
		}
		n := rapid.IntRange(0, 1500).Draw(t, "n")
		for range n {
			k := keyGen.Draw(t, "k")
			switch op := rapid.IntRange(0, 40).Draw(t, "op"); {
			case op == 0:
				m.Reset()
				clear(want)
			case op < 12:
				v := rapid.Uint32().Draw(t, "v")
				m.Put(k, v)
				want[k] = v
			case op < 18:
				p, isNew := m.Upsert(k)
				wv, had := want[k]
				if isNew == had || *p != wv {
					t.Fatalf("Upsert(%d) = %d, %v; the map has %d, %v", k, *p, isNew, wv, had)
				}
				*p += 3
				want[k] = wv + 3
			case op < 30:
				_, had := want[k]
				if got := m.Delete(k); got != had {
					t.Fatalf("Delete(%d) = %v, want %v", k, got, had)
				}
				delete(want, k)
			default:
				v, ok := m.Get(k)
				if wv, wok := want[k]; ok != wok || v != wv {
					t.Fatalf("Get(%d) = %d, %v; want %d, %v", k, v, ok, wv, wok)
				}
				if p := m.Ptr(k); (p != nil) != ok || p != nil && *p != v {
					t.Fatalf("Ptr(%d) disagrees with Get", k)
				}
			}
			check(t, &m, want)
		}
	})
}

// TestChurn runs 400,000 random puts and deletions over 3,000 keys (the
// table near its 3/4 bound, long probe runs, runs wrapping around the
// table's end) against a Go map, checking the table after each 1,000
// operations, then deletes every key.
func TestChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var m Map[uint32]
	want := map[uint64]uint32{}
	for op := range 400_000 {
		k := uint64(rng.IntN(3000))
		if rng.IntN(2) == 0 {
			m.Put(k, uint32(op))
			want[k] = uint32(op)
		} else {
			m.Delete(k)
			delete(want, k)
		}
		if op%1000 == 999 {
			check(t, &m, want)
		}
	}
	for k := range uint64(3000) {
		m.Delete(k)
		delete(want, k)
	}
	check(t, &m, want)
	if m.Len() != 0 {
		t.Fatalf("Len %d after deleting every key", m.Len())
	}
}

// TestSeeds: the table holds the same keys whatever the seed (seeds that
// put small keys' homes next to each other, and the zero seed).
func TestSeeds(t *testing.T) {
	defer func(s uint64) { seed = s }(seed)
	for _, s := range []uint64{0, 1, 1 << 63, 0x9e3779b97f4a7c15} {
		seed = s
		rng := rand.New(rand.NewPCG(s, 9))
		var m Map[uint32]
		want := map[uint64]uint32{}
		for op := range 20_000 {
			k := uint64(rng.IntN(200))
			if rng.IntN(3) > 0 {
				m.Put(k, uint32(op))
				want[k] = uint32(op)
			} else {
				m.Delete(k)
				delete(want, k)
			}
		}
		check(t, &m, want)
	}
}

// FuzzMap reads operations from the input, 9 bytes each (an operation
// byte and a key), against a Go map: keys below 64 unless the operation
// byte's high bit is set, so that a short input still collides.
func FuzzMap(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"))
	seed := make([]byte, 0, 9*300)
	for i := range 300 {
		seed = append(seed, byte(i%5))
		seed = binary.LittleEndian.AppendUint64(seed, uint64(i*7%61))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, in []byte) {
		var m Map[uint32]
		want := map[uint64]uint32{}
		for i := 0; i+9 <= len(in); i += 9 {
			op := in[i]
			k := binary.LittleEndian.Uint64(in[i+1:])
			if op&0x80 == 0 {
				k %= 64
			}
			switch op % 5 {
			case 0, 1:
				m.Put(k, uint32(i))
				want[k] = uint32(i)
			case 2:
				_, had := want[k]
				if m.Delete(k) != had {
					t.Fatalf("Delete(%d) != %v", k, had)
				}
				delete(want, k)
			case 3:
				p, isNew := m.Upsert(k)
				if _, had := want[k]; isNew == had {
					t.Fatalf("Upsert(%d) new = %v, the map had it: %v", k, isNew, had)
				}
				*p++
				want[k]++
			case 4:
				if op&0x40 != 0 {
					m.Reset()
					clear(want)
				}
			}
		}
		check(t, &m, want)
	})
}

// TestStructValues: a value of two fields kept in the cell and changed
// through Ptr (the operator's entry index and slot).
func TestStructValues(t *testing.T) {
	type ent struct {
		i    uint32
		slot int32
	}
	var m Map[ent]
	for k := range uint64(1000) {
		m.Put(k*k, ent{uint32(k), -1})
	}
	for k := range uint64(1000) {
		if k%3 == 0 {
			m.Ptr(k * k).slot = int32(k)
		}
	}
	for k := range uint64(1000) {
		e, ok := m.Get(k * k)
		ws := int32(-1)
		if k%3 == 0 {
			ws = int32(k)
		}
		if !ok || e.i != uint32(k) || e.slot != ws {
			t.Fatalf("Get(%d) = %+v, %v; want {%d %d}, true", k*k, e, ok, k, ws)
		}
	}
	if m.Len() != 1000 || m.Cells() != 2048 || m.Bytes() != 2048*16 {
		t.Fatalf("Len %d, Cells %d, Bytes %d; want 1000, 2048, 32768", m.Len(), m.Cells(), m.Bytes())
	}
}
