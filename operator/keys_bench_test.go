package operator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// wideKeyEvents returns n rows keyed by eight columns as Nexmark q9's
// second stage sees them (an auction's id, item name, initial bid,
// reserve, date time, expires, seller and category) with a price, and
// their event times (the auction's expiry). Auctions open one per 20 rows;
// half the rows belong to the newest auction (Nexmark's hot auctions), the
// others to one of the 2,000 before it, so a row's key is often the one
// before it and a 1 s window holds some thousands of keys.
func wideKeyEvents(n int) (key []row.Field, price row.Field, rows []row.Row, ts []int64) {
	s := row.NewSchema()
	names := []string{"id", "item_name", "initial_bid", "reserve", "date_time", "expires", "seller", "category"}
	for _, nm := range names {
		k := row.KindInt
		switch nm {
		case "item_name":
			k = row.KindString
		case "date_time", "expires":
			k = row.KindTime
		}
		f, _ := s.Add(nm, k)
		key = append(key, f)
	}
	price, _ = s.Add("price", row.KindInt)
	rng := rand.New(rand.NewPCG(3, 4))
	const base = int64(1_790_000_000_000)
	auctions := make([][]row.Value, n/20+1)
	for a := range auctions {
		a64 := int64(a)
		auctions[a] = []row.Value{row.Int(1000 + a64), row.Str(fmt.Sprintf("item %d of the catalogue", a)), row.Int(a64 % 97), row.Int(a64 % 89),
			row.Time(base + a64*2), row.Time(base + a64*2 + 4000), row.Int(a64 % 1013), row.Int(10 + a64%5)}
	}
	rows = make([]row.Row, n)
	ts = make([]int64, n)
	for i := range rows {
		newest := i / 20
		a := newest
		if rng.IntN(2) == 0 {
			a = max(0, newest-1-rng.IntN(2000))
		}
		r := &rows[i]
		s.Shape(r)
		for j, v := range auctions[a] {
			r.Set(key[j], v)
		}
		r.Set(price, row.Int(rng.Int64N(10_000)))
		ts[i] = auctions[a][5].I
	}
	return
}

// BenchmarkWideKey is the per-row path of a stage keyed by eight columns
// (Nexmark q9's second stage): a 1 s tumbling max over wideKeyEvents, in
// mode final, the watermark moved every 1,000 rows to 5 s behind the
// rows' largest event time.
func BenchmarkWideKey(b *testing.B) {
	const n = 1 << 19
	key, price, rows, ts := wideKeyEvents(n)
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; {
		b.StopTimer()
		mx, _ := aggregate.New(aggregate.Spec{Name: "price", Func: "max", Arg: price, HasArg: true})
		op, _ := New(Config{Assigner: &window.Fixed{Size: 1000, Slide: 1000}, Mode: Final, Key: key, Aggs: []aggregate.Column{mx}})
		b.StartTimer()
		var maxTs int64
		for i := 0; i < n && it < b.N; i, it = i+1, it+1 {
			op.Process(&rows[i], ts[i], 1, 0)
			maxTs = max(maxTs, ts[i])
			if i%1000 == 999 {
				op.AdvanceWatermark(maxTs-5000, 0)
				op.Drain()
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
