package join

import (
	"runtime"
	"testing"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
)

// BenchmarkStateBytes measures the join state per buffered row beyond the
// columns the query reads, in the shape of Nexmark q4's bids: an interval
// join whose right rows (one kept int column, the price) wait for the
// left side's watermark, 1,000,000 rows over 65,536 keys (about 15 per
// key, as bids per auction), no left rows. Reported per buffered row:
// heap-B/row (the live heap the state takes, measured), beyond-cols-B/row
// (that, less the 8 bytes of the kept column), est-B/row and
// est-beyond-cols-B/row (Stats' estimate), and key-B/row (the per-key part:
// the key table, the keys' states with their lists' headers and the keys'
// 9 bytes, over the rows of a key).
//
//	go test ./join -run XXX -bench StateBytes -benchtime 3x
func BenchmarkStateBytes(b *testing.B) {
	const rows, keys = 1_000_000, 65_536
	s := row.NewSchema()
	k, _ := s.Add("auction", row.KindInt)
	price, _ := s.Add("price", row.KindInt)
	c := Config{Type: Interval, Kind: Inner, Lower: 0, Upper: 4000, UpperCol: -1, TombCol: -1,
		Keep: [2][]row.Kind{{row.KindInt}, {row.KindInt}}, Columns: []Column{{Side: L, Col: 0}, {Side: R, Col: 0}},
		KeyGroups: 128, Groups: keygroup.Range{Lo: 0, Hi: 128}}
	var r row.Row
	var key []byte
	var heap, est, estCols, keyPart float64
	for range b.N {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		op, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		for i := range rows {
			s.Shape(&r)
			_ = r.Set(k, row.Int(int64(i%keys)))
			_ = r.Set(price, row.Int(int64(i)))
			key = operator.AppendKey(key[:0], &r, []row.Field{k})
			if _, err := op.Process(R, keygroup.OfKey(key, c.KeyGroups), key, int64(i/100), uint64(i), &r, []row.Field{price}, 0); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		st := op.Stats()
		if st.Rows != rows || st.Keys != keys {
			b.Fatalf("%d rows, %d keys buffered", st.Rows, st.Keys)
		}
		heap += float64(m1.HeapAlloc-m0.HeapAlloc) / rows
		est += float64(st.StateBytes) / rows
		estCols += float64(st.StateBytes-st.ColumnBytes) / rows
		for _, g := range op.groups {
			keyPart += float64(int64(cap(g.ks))*keyStateBytes+g.keys.bytes()+int64(g.keys.len())*9) / rows
		}
		runtime.KeepAlive(op)
	}
	n := float64(b.N)
	b.ReportMetric(heap/n, "heap-B/row")
	b.ReportMetric(heap/n-8, "beyond-cols-B/row")
	b.ReportMetric(est/n, "est-B/row")
	b.ReportMetric(estCols/n, "est-beyond-cols-B/row")
	b.ReportMetric(keyPart/n, "key-B/row")
}
