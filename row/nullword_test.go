package row

import "testing"

// TestSetAllNullOneWord: a row of one word of null bits gets exactly the
// first n bits (n = 1, 63, 64), whatever it held; SetValidWord clears the
// bits of its mask only.
func TestSetAllNullOneWord(t *testing.T) {
	for _, c := range []struct {
		n    int
		want uint64
	}{{1, 1}, {63, 1<<63 - 1}, {64, ^uint64(0)}} {
		r := &Row{null: []uint64{0xdead_beef_0000_0000}}
		r.SetAllNull(c.n)
		if r.null[0] != c.want {
			t.Fatalf("SetAllNull(%d) = %#x, want %#x", c.n, r.null[0], c.want)
		}
	}
	r := &Row{null: []uint64{0xff}}
	r.SetValidWord(0, 0x0f|1<<40)
	if r.null[0] != 0xf0 {
		t.Fatalf("SetValidWord = %#x, want 0xf0", r.null[0])
	}
}
