package task

import (
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// TestCopyCRChunks copies more upstream rows than one chunk of values
// holds: every copy keeps its own key and values (no copy overwrites an
// earlier one when the chunks fill), the chunks in use are just enough,
// and a reset packet reuses them, zeroed.
func TestCopyCRChunks(t *testing.T) {
	var p Packet
	const n = 3000 // 3 values a row: 9,000 values, 3 chunks of 4,096
	var got []*changelog.Row
	for i := range n {
		r := changelog.Row{Op: changelog.Insert, Key: []row.Value{row.Int(int64(i))}, Values: []row.Value{row.Int(int64(2 * i)), row.Str("s")}}
		c := p.copyCR(&r)
		r.Key[0], r.Values[0] = row.Int(-1), row.Int(-1) // the source's buffers are reused
		got = append(got, c)
	}
	for i, c := range got {
		if len(c.Key) != 1 || cap(c.Key) != 1 || c.Key[0].I != int64(i) || len(c.Values) != 2 || cap(c.Values) != 2 || c.Values[0].I != int64(2*i) || c.Values[1].S != "s" {
			t.Fatalf("row %d: key %v values %v (caps %d, %d)", i, c.Key, c.Values, cap(c.Key), cap(c.Values))
		}
	}
	if len(p.vals.c) != 3 || p.vals.cur != 2 || p.vals.n != 9000-2*4095 {
		t.Fatalf("chunks %d, cur %d, used %d; want 3, 2, %d", len(p.vals.c), p.vals.cur, p.vals.n, 9000-2*4095)
	}
	p.Reset()
	for i, ch := range p.vals.c {
		for j := range ch {
			if ch[j] != (row.Value{}) {
				t.Fatalf("chunk %d value %d not cleared: %v", i, j, ch[j])
			}
		}
	}
	c := p.copyCR(&changelog.Row{Key: []row.Value{row.Int(7)}})
	if len(p.vals.c) != 3 || &c.Key[0] != &p.vals.c[0][0] {
		t.Fatal("a reset packet does not reuse its first chunk")
	}
}
