package bloom

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/u64map"
)

// TestNoFalseNegatives checks, against a Go map of the hashes added, that
// every hash added is found — hashes drawn with shared high bits (as a key
// group's are) and enough of them to grow the filter several times — and
// that Len counts the adds.
func TestNoFalseNegatives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		first := rapid.IntRange(1, 600).Draw(t, "first")
		high := rapid.Uint64().Draw(t, "high") &^ (1<<40 - 1)
		hs := rapid.SliceOfN(rapid.Uint64Range(0, 1<<40-1), 300, 3000).Draw(t, "hashes")
		f := New(first)
		added := map[uint64]bool{}
		for k, h := range hs {
			h |= high
			f.Add(h)
			added[h] = true
			if k%97 == 0 {
				for a := range added {
					if !f.MayContain(a) {
						t.Fatalf("after %d adds: %#x added, MayContain false", k+1, a)
					}
				}
			}
		}
		for a := range added {
			if !f.MayContain(a) {
				t.Fatalf("%#x added, MayContain false", a)
			}
		}
		if f.Len() != len(hs) {
			t.Fatalf("Len %d, want %d", f.Len(), len(hs))
		}
	})
}

// naive is an independent recomputation of one part: a flat array of
// bits, bit w·32 + (x·salt[w] >> 27) of block (m>>32)·nb>>32, with
// u64map's copy of the finalizer.
type naive struct {
	bits []bool
	nb   int
}

func (n *naive) pos(h uint64) []int {
	m := u64map.Fmix64(h)
	b := int((m >> 32) * uint64(n.nb) >> 32)
	x := uint32(m)
	var ps []int
	for w, s := range []uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31} {
		ps = append(ps, b*256+w*32+int((x*s)>>27))
	}
	return ps
}

// TestMatchesNaive checks the blocks bit for bit and every answer
// against the naive recomputation, over one part (no growth).
func TestMatchesNaive(t *testing.T) {
	f := New(4000)
	n := &naive{nb: len(f.parts[0].blocks), bits: make([]bool, len(f.parts[0].blocks)*256)}
	if n.nb != 157 { // ⌈4000·10/256⌉
		t.Fatalf("%d blocks, want 157", n.nb)
	}
	for i := range uint64(4000) {
		h := i * 0x9e3779b97f4a7c15
		f.Add(h)
		for _, p := range n.pos(h) {
			n.bits[p] = true
		}
	}
	for b, blk := range f.parts[0].blocks {
		for w, word := range blk {
			for k := range 32 {
				if got, want := word&(1<<k) != 0, n.bits[b*256+w*32+k]; got != want {
					t.Fatalf("block %d word %d bit %d: %v, want %v", b, w, k, got, want)
				}
			}
		}
	}
	for i := range uint64(20000) {
		h := i*0x9e3779b97f4a7c15 + 12345
		want := true
		for _, p := range n.pos(h) {
			want = want && n.bits[p]
		}
		if got := f.MayContain(h); got != want {
			t.Fatalf("MayContain(%#x) = %v, naive %v", h, got, want)
		}
	}
}

// TestGrowth checks the parts' sizes worked out by hand: a first part of
// 256 keys is ⌈256·10/256⌉ = 10 blocks (320 bytes); the 257th key adds a
// part of 512 keys, 20 blocks (640 bytes more).
func TestGrowth(t *testing.T) {
	f := New(1) // clamped to 256
	if f.Bytes() != 320 {
		t.Fatalf("Bytes %d, want 320", f.Bytes())
	}
	for i := range uint64(256) {
		f.Add(i)
	}
	if f.Bytes() != 320 || len(f.parts) != 1 {
		t.Fatalf("after 256 adds: Bytes %d, %d parts; want 320, 1", f.Bytes(), len(f.parts))
	}
	f.Add(256)
	if f.Bytes() != 960 || len(f.parts) != 2 || f.Len() != 257 {
		t.Fatalf("after 257 adds: Bytes %d, %d parts, Len %d; want 960, 2, 257", f.Bytes(), len(f.parts), f.Len())
	}
}

// TestFalsePositiveRate checks the rate on 100,000 hashes never added
// after 100,000 added to a filter sized for them: about 1.2 % expected
// (Parquet's table at 10 bits per key); at most 2 % accepted.
func TestFalsePositiveRate(t *testing.T) {
	f := New(100000)
	for i := range uint64(100000) {
		f.Add(u64map.Fmix64(i))
	}
	fp := 0
	for i := uint64(100000); i < 200000; i++ {
		if f.MayContain(u64map.Fmix64(i)) {
			fp++
		}
	}
	if fp > 2000 || fp == 0 {
		t.Fatalf("%d false positives in 100,000, want (0, 2,000]", fp)
	}
	t.Logf("%d false positives in 100,000", fp)
}
