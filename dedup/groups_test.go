package dedup

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestTablesPerGroupMatchOneTable: ids observed by one table, and by
// tables per key group that share one SweepState (restored from their
// sections at random points), give the same outcome for every delivery;
// and a table's section does not depend on its layout (a restored table
// writes the section it was restored from).
func TestTablesPerGroupMatchOneTable(t *testing.T) {
	const groups = 8
	const ttl = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	one := New(ttl)
	per := make([]*Table, groups)
	for g := range per {
		per[g] = New(ttl)
	}
	sweep := NewSweepState()
	var wm int64
	for i := range 200_000 {
		id := uint64(rng.IntN(5000)) + 1
		id *= 0x9E3779B97F4A7C15 // spread over the high bits
		payload := uint32(rng.IntN(3))
		ts := wm + int64(rng.IntN(300)) - 100
		g := int(id>>61) % groups
		a, fa := one.Observe(id, payload, ts)
		b, fb := per[g].Observe(id, payload, ts)
		if a != b || fa != fb {
			t.Fatalf("delivery %d: one table %d/%d, per group %d/%d", i, a, fa, b, fb)
		}
		if rng.IntN(10) == 0 {
			wm += int64(rng.IntN(40))
			one.Expire(wm)
			if s, due := sweep.Advance(wm, ttl); due {
				sweep = s
				for _, tb := range per {
					tb.ApplySweep(s)
				}
			}
		}
		if rng.IntN(20_000) == 0 {
			for g, tb := range per {
				var e state.Encoder
				tb.AppendEntries(&e)
				nt := New(ttl)
				if err := nt.RestoreEntries(state.NewDecoder(e.Bytes()), sweep); err != nil {
					t.Fatal(err)
				}
				var e2 state.Encoder
				nt.AppendEntries(&e2)
				if !bytes.Equal(e.Bytes(), e2.Bytes()) {
					t.Fatalf("group %d: section of the restored table differs", g)
				}
				per[g] = nt
			}
		}
	}
	n := 0
	for _, tb := range per {
		n += tb.Len()
	}
	if n != one.Len() {
		t.Fatalf("one table holds %d ids, the tables per group %d", one.Len(), n)
	}
}

func TestRestoreEntriesRefusesBadSections(t *testing.T) {
	tb := New(1000)
	tb.Observe(5, 1, 100)
	tb.Observe(9, 1, 100)
	var e state.Encoder
	tb.AppendEntries(&e)
	good := e.Bytes()
	if err := New(2000).RestoreEntries(state.NewDecoder(good), NewSweepState()); err == nil {
		t.Fatal("another TTL was accepted")
	}
	if err := New(1000).RestoreEntries(state.NewDecoder(good[:len(good)-3]), NewSweepState()); err == nil {
		t.Fatal("a truncated section was accepted")
	}
	swapped := bytes.Clone(good)
	// ids 5 and 9 as Fixed64 little endian: make the second equal the first.
	i := bytes.Index(swapped, []byte{9, 0, 0, 0, 0, 0, 0, 0})
	swapped[i] = 5
	if err := New(1000).RestoreEntries(state.NewDecoder(swapped), NewSweepState()); err == nil {
		t.Fatal("a repeated id was accepted")
	}
}
