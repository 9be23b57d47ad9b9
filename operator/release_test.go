package operator

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// TestPaneReleaseShrinks: an emptied pane lets go of arrays and an index
// of more than shrinkEntries entries (1,000 here: nothing kept), and keeps
// smaller ones (100: the same capacity, for the pane's next entries).
func TestPaneReleaseShrinks(t *testing.T) {
	fill := func(n int) *pane {
		p := &pane{idx: map[string]int32{}}
		for i := range n {
			p.ents = append(p.ents, inst{})
			p.seqs = append(p.seqs, uint64(i))
			p.idx[strings.Repeat("k", i+1)] = int32(i)
		}
		p.live = n
		return p
	}
	big := fill(1000)
	big.release()
	if cap(big.ents) != 0 || cap(big.seqs) != 0 || len(big.idx) != 0 || big.idx == nil || big.live != 0 {
		t.Fatalf("1,000 entries released: cap(ents) %d, cap(seqs) %d, %d in idx (nil %v), live %d; want 0, 0, 0 (a new map), 0",
			cap(big.ents), cap(big.seqs), len(big.idx), big.idx == nil, big.live)
	}
	small := fill(100)
	ce, cs := cap(small.ents), cap(small.seqs)
	small.release()
	if len(small.ents) != 0 || cap(small.ents) != ce || cap(small.seqs) != cs || len(small.idx) != 0 || small.live != 0 {
		t.Fatalf("100 entries released: len(ents) %d, cap %d (was %d), cap(seqs) %d (was %d), %d in idx, live %d",
			len(small.ents), cap(small.ents), ce, cap(small.seqs), cs, len(small.idx), small.live)
	}
}

// TestKeyTableBytesRunning: the key table's estimate, kept as keys come
// and go, worked out by hand for three string keys of 5, 10 and 20
// bytes: each key's encoding twice (map and entry: 70), 48 bytes of map
// overhead each (144) and a 32-byte entry each (96) — 310 bytes, 103 a
// key; after the 20-byte key leaves the map (its entry stays until
// reused) 30 + 96 + 96 = 222. An empty table's share of a key is
// defaultKeyBytes.
func TestKeyTableBytesRunning(t *testing.T) {
	k := newKeyTable([]row.Field{{Name: "s", Kind: row.KindString}}, 0)
	if got := k.perKey(); got != defaultKeyBytes {
		t.Fatalf("empty table: perKey %d, want %d", got, defaultKeyBytes)
	}
	for _, s := range []string{"aaaaa", "bbbbbbbbbb", "cccccccccccccccccccc"} {
		k.intern([]byte(s))
	}
	if got := k.bytes(); got != 310 {
		t.Fatalf("bytes %d, want 310", got)
	}
	if got := k.perKey(); got != 103 {
		t.Fatalf("perKey %d, want 103", got)
	}
	k.del("cccccccccccccccccccc")
	if got := k.bytes(); got != 222 {
		t.Fatalf("after a delete: bytes %d, want 222", got)
	}
}
