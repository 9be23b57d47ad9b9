package nexmark

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/source"
)

// TestFieldOrder holds the attr constants, which the generator and the
// JSON rendering index defs by, to nexschema's order: each attr names the
// field written beside it here.
func TestFieldOrder(t *testing.T) {
	want := map[attr]string{
		aEventType: "event_type", aPersonID: "person.id", aPersonName: "person.name",
		aPersonEmail: "person.email_address", aPersonCard: "person.credit_card",
		aPersonCity: "person.city", aPersonState: "person.state",
		aPersonDateTime: "person.date_time", aPersonExtra: "person.extra",
		aAuctionID: "auction.id", aAuctionItem: "auction.item_name",
		aAuctionDesc: "auction.description", aAuctionInitial: "auction.initial_bid",
		aAuctionReserve: "auction.reserve", aAuctionDateTime: "auction.date_time",
		aAuctionExpires: "auction.expires", aAuctionSeller: "auction.seller",
		aAuctionCategory: "auction.category", aAuctionExtra: "auction.extra",
		aBidAuction: "bid.auction", aBidBidder: "bid.bidder", aBidPrice: "bid.price",
		aBidChannel: "bid.channel", aBidURL: "bid.url", aBidDateTime: "bid.date_time",
		aBidExtra: "bid.extra", aDateTime: "date_time",
	}
	if len(want) != int(nAttrs) {
		t.Fatalf("%d attrs named here, %d declared", len(want), nAttrs)
	}
	for a, n := range want {
		if defs[a].Name != n {
			t.Errorf("attr %d: defs has %q, want %q", a, defs[a].Name, n)
		}
	}
}

// TestOrderClaimEqualsNext: order.claim, its spans expanded one event at
// a time, delivers exactly the events (id, event time, delivery time)
// that as many calls of order.next deliver, in the same order, leaves the
// order where they leave it (the next batch, claimed or read, continues
// alike), and reports their count and last id — for rates below, at and
// above one event per ms, no delay, some and every event delayed, random
// batch sizes, and from positions reached by seek.
func TestOrderClaimEqualsNext(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	rates := []int64{1, 3, 999, 1000, 1001, 7000, 10_000_000}
	fractions := []float64{0, 0.1, 0.5, 1}
	maxMss := []int64{1, 7, 3000}
	for round := range 120 {
		rate := rates[rng.IntN(len(rates))]
		fraction := fractions[rng.IntN(len(fractions))]
		maxMs := maxMss[rng.IntN(len(maxMss))]
		n := int64(1 + rng.IntN(30_000))
		clk := clock{base: DefaultBaseTime, rate: rate}
		key := rng.Uint64()
		ref := newOrder(n, clk, fraction, maxMs, key)
		got := newOrder(n, clk, fraction, maxMs, key)
		if round%3 == 1 {
			// Start both mid-way, from the position after a random event.
			skip := rng.Int64N(n)
			var last int64 = -1
			for range skip + 1 {
				id, _, _, ok := ref.next()
				if !ok {
					break
				}
				last = id
			}
			ref = newOrder(n, clk, fraction, maxMs, key)
			if _, err := ref.seek(last); err != nil {
				t.Fatal(err)
			}
			if _, err := got.seek(last); err != nil {
				t.Fatal(err)
			}
		}
		var spans []source.Span
		for batch := 0; ; batch++ {
			max := 1 + rng.IntN(700)
			if rng.IntN(4) == 0 {
				// Mix: this batch read with next on both.
				id1, t1, at1, ok1 := ref.next()
				id2, t2, at2, ok2 := got.next()
				if id1 != id2 || t1 != t2 || at1 != at2 || ok1 != ok2 {
					t.Fatalf("round %d batch %d: next after claims %d %d %d %v, want %d %d %d %v", round, batch, id2, t2, at2, ok2, id1, t1, at1, ok1)
				}
				if !ok1 {
					break
				}
				continue
			}
			type ev struct{ id, t, at int64 }
			var want []ev
			for range max {
				id, tt, at, ok := ref.next()
				if !ok {
					break
				}
				want = append(want, ev{id, tt, at})
			}
			var k int
			var last int64
			spans, k, last = got.claim(max, spans[:0])
			var have []ev
			for _, sp := range spans {
				if sp.At != onTime {
					if sp.Hi != sp.Lo+1 {
						t.Fatalf("round %d: a delayed span [%d, %d)", round, sp.Lo, sp.Hi)
					}
					have = append(have, ev{sp.Lo, clk.at(sp.Lo), sp.At})
					continue
				}
				for id := sp.Lo; id < sp.Hi; id++ {
					if got.delay(id) == 0 {
						have = append(have, ev{id, clk.at(id), clk.at(id)})
					}
				}
			}
			if !slices.Equal(have, want) || k != len(want) {
				t.Fatalf("round %d (rate %d, fraction %v, max %d ms, %d events) batch %d: claimed %d (%d expanded) %v…, want %d %v…",
					round, rate, fraction, maxMs, n, batch, k, len(have), have[:min(len(have), 5)], len(want), want[:min(len(want), 5)])
			}
			if k > 0 && last != want[k-1].id || k == 0 && last != -1 {
				t.Fatalf("round %d batch %d: last %d, want %v", round, batch, last, want)
			}
			if got.gen != ref.gen || got.held != ref.held {
				t.Fatalf("round %d batch %d: gen %d held %d after the claim, want %d %d", round, batch, got.gen, got.held, ref.gen, ref.held)
			}
			if len(want) < max {
				break
			}
		}
	}
}

// TestOrderIsSortedByArrival: order.next delivers every event once, in
// the order of (delivery time, id) — the delivery order as the package
// documents it, recomputed here by sorting every event by its event time
// plus its delay — and order.claim, from a fresh order and from
// positions reached by seek, delivers the same; for rates below and
// above one event per ms and delays shorter and longer than the wheel's
// blocks.
func TestOrderIsSortedByArrival(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for round, c := range []struct {
		n, rate  int64
		fraction float64
		maxMs    int64
	}{
		{50_000, 10_000_000, 0.1, 3000}, {200_000, 20_000, 0.1, 3000}, {30_000, 1000, 0.3, 200},
		{30_000, 7, 0.5, 5000}, {40_000, 3000, 1, 63}, {40_000, 3000, 0.2, 64}, {40_000, 3000, 0.2, 65},
		{40_000, 100_000, 0.05, 1}, {20_000, 999, 0.9, 129},
	} {
		clk := clock{base: DefaultBaseTime + int64(round)*12345, rate: c.rate}
		key := rng.Uint64()
		o := newOrder(c.n, clk, c.fraction, c.maxMs, key)
		type ev struct{ at, id int64 }
		want := make([]ev, c.n)
		for id := range c.n {
			want[id] = ev{clk.at(id) + o.delay(id), id}
		}
		slices.SortFunc(want, func(a, b ev) int {
			if a.at != b.at {
				return cmp.Compare(a.at, b.at)
			}
			return cmp.Compare(a.id, b.id)
		})
		for i := range want {
			id, tt, at, ok := o.next()
			if !ok || id != want[i].id || at != want[i].at || tt != clk.at(id) {
				t.Fatalf("round %d: event %d of next: %d at %d (t %d, %v), want %d at %d", round, i, id, at, tt, ok, want[i].id, want[i].at)
			}
		}
		if _, _, _, ok := o.next(); ok {
			t.Fatalf("round %d: next delivers more than %d events", round, c.n)
		}
		for _, from := range []int64{-1, c.n / 3, c.n - 2} {
			o := newOrder(c.n, clk, c.fraction, c.maxMs, key)
			start := 0
			if from >= 0 {
				if _, err := o.seek(want[from].id); err != nil {
					t.Fatal(err)
				}
				start = int(from) + 1
			}
			var spans []source.Span
			i := start
			for {
				var k int
				spans, k, _ = o.claim(1+rng.IntN(5000), spans[:0])
				for _, sp := range spans {
					for id := sp.Lo; id < sp.Hi; id++ {
						at := sp.At
						if at == onTime {
							if o.delay(id) != 0 {
								continue
							}
							at = clk.at(id)
						}
						if i >= len(want) || id != want[i].id || at != want[i].at {
							t.Fatalf("round %d from %d: event %d of claim: %d at %d, want %v", round, from, i, id, at, want[min(i, len(want)-1)])
						}
						i++
					}
				}
				if k == 0 {
					break
				}
			}
			if i != len(want) {
				t.Fatalf("round %d from %d: claim delivered %d events of %d", round, from, i-start, len(want)-start)
			}
		}
	}
}
