package keygroup

import "testing"

// TestRangesPartition checks that the ranges of n tasks cover 0..k-1 once
// each, in order, and that Owner agrees with For (Flink's
// KeyGroupRangeAssignment: computeKeyGroupRangeForOperatorIndex and
// computeOperatorIndexForKeyGroup).
func TestRangesPartition(t *testing.T) {
	for _, k := range []int{1, 2, 3, 7, 128, 1000, Max} {
		for _, n := range []int{1, 2, 3, 4, 5, 8, 16, 127, 128} {
			if n > k {
				continue
			}
			next := 0
			for i := range n {
				r := For(i, n, k)
				if r.Lo != next || r.Hi <= r.Lo {
					t.Fatalf("k=%d n=%d task %d: range %v after %d", k, n, i, r, next)
				}
				for g := r.Lo; g < r.Hi; g++ {
					if o := Owner(g, n, k); o != i {
						t.Fatalf("k=%d n=%d: key group %d in task %d's range, Owner says %d", k, n, g, i, o)
					}
				}
				next = r.Hi
			}
			if next != k {
				t.Fatalf("k=%d n=%d: ranges end at %d", k, n, next)
			}
		}
	}
	// Worked by hand: 128 key groups over 3 tasks.
	if got := []Range{For(0, 3, 128), For(1, 3, 128), For(2, 3, 128)}; got[0] != (Range{0, 43}) || got[1] != (Range{43, 86}) || got[2] != (Range{86, 128}) {
		t.Fatalf("128 over 3: %v", got)
	}
}

func TestOfHash(t *testing.T) {
	if g := OfHash(0, 128); g != 0 {
		t.Fatal(g)
	}
	if g := OfHash(^uint64(0), 128); g != 127 {
		t.Fatal(g)
	}
	if g := OfHash(1<<63, 128); g != 64 { // the top bit alone: the middle
		t.Fatal(g)
	}
	if g := OfHash(0xffffffff, 128); g != 0 { // low bits do not matter
		t.Fatal(g)
	}
}

func TestFNV(t *testing.T) {
	// Reference values of FNV-1a 64 (the published test vectors).
	for _, c := range []struct {
		in   string
		want uint64
	}{{"", 0xcbf29ce484222325}, {"a", 0xaf63dc4c8601ec8c}, {"foobar", 0x85944171f73967e8}} {
		if got := FNV1a64([]byte(c.in)); got != c.want {
			t.Errorf("FNV1a64(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
}
