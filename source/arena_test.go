package source

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestArenaKeepsEverythingUntilReset: strings and byte slices handed out
// stay intact while the arena grows through many chunks, including
// requests larger than a chunk, and appending to a slice never writes
// into the arena.
func TestArenaKeepsEverythingUntilReset(t *testing.T) {
	var a Arena
	var strs []string
	var want []string
	var raws [][]byte
	for i := range 20000 {
		text := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%97))
		if i%1000 == 999 {
			text = strings.Repeat("big", MinArenaChunk) // 3 chunks' worth at once
		}
		strs = append(strs, a.String([]byte(text)))
		raws = append(raws, a.Bytes([]byte(text)))
		want = append(want, text)
		if c := raws[len(raws)-1]; cap(c) != len(c) {
			t.Fatalf("Bytes: cap %d, len %d", cap(c), len(c))
		}
		_ = append(raws[len(raws)-1], '!') // must copy, not overwrite the arena
	}
	for i := range want {
		if strs[i] != want[i] || string(raws[i]) != want[i] {
			t.Fatalf("%d: %q / %q, want %q", i, strs[i][:min(20, len(strs[i]))], raws[i][:min(20, len(raws[i]))], want[i][:min(20, len(want[i]))])
		}
	}
	if a.String(nil) != "" || a.Bytes(nil) != nil || a.Alloc(0) != nil {
		t.Fatal("empty input must give an empty result")
	}
}

// TestArenaReuse: after Reset the arena fills the same chunks again, so
// a steady sequence of batches allocates nothing, and the memory it holds
// stops growing.
func TestArenaReuse(t *testing.T) {
	var a Arena
	line := bytes.Repeat([]byte("abcdefgh"), 40) // 320 bytes
	large := make([]byte, 3*MinArenaChunk)       // an odd large record
	batch := func() {
		a.Reset()
		for range 1024 {
			a.String(line)
		}
		a.Bytes(large)
	}
	for range 3 {
		batch()
	}
	size := a.Size()
	if allocs := testing.AllocsPerRun(100, batch); allocs != 0 {
		t.Fatalf("a batch allocates %.1f times after warm-up, want 0", allocs)
	}
	if a.Size() != size {
		t.Fatalf("arena grew from %d to %d bytes in steady state", size, a.Size())
	}
	// The batch is 1024·320 + 3·64 Ki = 512 KiB: with doubling chunks the
	// arena holds less than four times that.
	if need := 1024*len(line) + 3*MinArenaChunk; size > 4*need {
		t.Fatalf("arena holds %d bytes for batches of %d", size, need)
	}
}

// TestArenaChunksAreIndependent: two arenas (two batches) never share
// memory: resetting and refilling one leaves the other intact.
func TestArenaChunksAreIndependent(t *testing.T) {
	var a, b Arena
	sa := a.String([]byte("first batch"))
	sb := b.String([]byte("second batch"))
	for range 3 {
		b.Reset()
		for range 10000 {
			b.String([]byte("overwrite overwrite"))
		}
	}
	if sa != "first batch" {
		t.Fatalf("a's string became %q", sa)
	}
	_ = sb
}

func BenchmarkArenaString(b *testing.B) {
	var a Arena
	s := []byte("store-7")
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%4096 == 0 {
			a.Reset()
		}
		n++
		a.String(s)
	}
}
