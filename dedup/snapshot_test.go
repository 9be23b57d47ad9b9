package dedup

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// A restored table answers every lookup as the original does, and
// snapshots to the same bytes.
func TestSnapshotRestore(t *testing.T) {
	a := New(3_600_000)
	for i := range 5000 {
		a.Observe(id(fmt.Sprint("e", i)), uint32(i), int64(i)*1000)
	}
	a.Expire(2_000_000)
	var e state.Encoder
	a.Snapshot(&e)
	b := New(3_600_000)
	if err := b.Restore(state.NewDecoder(e.Bytes())); err != nil {
		t.Fatal(err)
	}
	var e2 state.Encoder
	b.Snapshot(&e2)
	if !bytes.Equal(e.Bytes(), e2.Bytes()) {
		t.Fatal("the restored table snapshots differently")
	}
	for i := range 6000 {
		k := id(fmt.Sprint("e", i))
		oa, pa := a.Observe(k, uint32(i+1), int64(i)*1000)
		ob, pb := b.Observe(k, uint32(i+1), int64(i)*1000)
		if oa != ob || pa != pb {
			t.Fatalf("e%d: original %v %d, restored %v %d", i, oa, pa, ob, pb)
		}
	}
	for cut := 0; cut < e.Len(); cut += 97 {
		if err := New(3_600_000).Restore(state.NewDecoder(e.Bytes()[:cut])); err == nil {
			t.Fatalf("a %d-byte prefix restored", cut)
		}
	}
	if err := New(60_000).Restore(state.NewDecoder(e.Bytes())); err == nil {
		t.Fatal("restored into a table with another TTL")
	}
}
