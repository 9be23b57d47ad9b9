package nexmark

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/source"
)

// TestClaimDecodeEqualsNext: batches claimed in delivery order and
// decoded by four goroutines at once, each batch by whichever is free,
// equal what Next delivers, event by event (rows, metas, the strings in
// each batch's arena, EventJSON), with the same errors at the end and
// the same positions after each batch; for random batch sizes, seeds and
// delays (run with -race).
func TestClaimDecodeEqualsNext(t *testing.T) {
	names := []string{"event_type", "person.name", "person.email_address", "auction.item_name", "auction.description",
		"auction.reserve", "bid.auction", "bid.price", "bid.channel", "bid.url", "bid.extra", "date_time"}
	cfgs := []Config{
		{Events: 20_000, Seed: 4},
		{Events: 20_000, Rate: 7000, Delay: &Delay{Fraction: 0.5, MaxMs: 500}},
		{Events: 5000, Rate: 3, Seed: 9, Delay: &Delay{Fraction: 0.3, MaxMs: 10_000}},
		{Events: 20_000, Delay: noDelay},
	}
	for ci, cfg := range cfgs {
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		ref, s := newSource(t, cfg, names...)
		split, _ := newSource(t, cfg, names...)
		type claimed struct {
			b    *source.Batch
			want []string
		}
		work := make(chan *claimed, 16)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var decoded []*claimed
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range work {
					split.Decode(c.b)
					mu.Lock()
					decoded = append(decoded, c)
					mu.Unlock()
				}
			}()
		}
		var batches []*claimed
		for {
			max := 1 + rng.IntN(900)
			var rb source.Batch
			rst, rerr := ref.Next(context.Background(), &rb, max)
			c := &claimed{b: &source.Batch{}, want: renderBatch(ref, s, &rb)}
			sst, serr := split.Claim(context.Background(), c.b, max)
			if rst != sst || !errors.Is(rerr, serr) && rerr != serr {
				t.Fatalf("config %d: Claim %v %v, Next %v %v", ci, sst, serr, rst, rerr)
			}
			if !slices.Equal(ref.Position(), split.Position()) {
				t.Fatalf("config %d: positions differ after a batch", ci)
			}
			batches = append(batches, c)
			work <- c
			if rerr == nil && rst == source.End {
				break
			}
			if rerr != nil {
				t.Fatal(rerr)
			}
		}
		close(work)
		wg.Wait()
		if len(decoded) != len(batches) {
			t.Fatalf("config %d: %d decoded of %d", ci, len(decoded), len(batches))
		}
		n := 0
		for bi, c := range batches {
			got := renderBatch(split, s, c.b)
			if !slices.Equal(got, c.want) {
				for i := range got {
					if i >= len(c.want) || got[i] != c.want[i] {
						t.Fatalf("config %d, batch %d, event %d:\n got %s\nwant %s", ci, bi, i, got[i], c.want[min(i, len(c.want)-1)])
					}
				}
				t.Fatalf("config %d, batch %d: %d events, want %d", ci, bi, len(got), len(c.want))
			}
			n += len(got)
		}
		if want := cfg.Events; int64(n) != want {
			t.Fatalf("config %d: %d events, want %d", ci, n, want)
		}
	}
}
