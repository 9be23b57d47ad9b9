package nexmark

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
)

// benchNext measures Next per event (ns/op and allocs/op are per event)
// in batches of 1024, the engine's default batch size.
func benchNext(b *testing.B, cfg Config, names ...string) {
	s, err := NewSchema(names...)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Fields = format.Fields{Schema: s}
	src, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var batch source.Batch
	// Start 4 s into the stream, where the delay wheel holds its steady
	// 3 s of held-back events, then let the arena and the batch grow.
	if _, err := src.o.seek(40_000_000); err != nil {
		b.Fatal(err)
	}
	for range 100 {
		batch.Reset()
		if _, err := src.Next(ctx, &batch, 1024); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		batch.Reset()
		if _, err := src.Next(ctx, &batch, min(1024, b.N-done)); err != nil {
			b.Fatal(err)
		}
		done += batch.Len()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

var bidFields = []string{"bid.auction", "bid.price", "date_time"}

func BenchmarkNext(b *testing.B) {
	b.Run("bid3", func(b *testing.B) { benchNext(b, Config{}, bidFields...) })
	b.Run("bid3-nodelay", func(b *testing.B) { benchNext(b, Config{Delay: &Delay{}}, bidFields...) })
	b.Run("bid-all", func(b *testing.B) {
		benchNext(b, Config{}, "event_type", "bid.auction", "bid.bidder", "bid.price", "bid.channel", "bid.url", "bid.date_time", "bid.extra", "date_time")
	})
	b.Run("all", func(b *testing.B) { benchNext(b, Config{}) })
}
