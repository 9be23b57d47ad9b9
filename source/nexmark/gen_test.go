package nexmark

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
)

// noDelay delivers events in id order.
var noDelay = &Delay{}

// TestProportions: id % 50 gives exactly 1 person, 3 auctions and 46 bids
// in every 50 consecutive events, with ids and times as Beam numbers them.
func TestProportions(t *testing.T) {
	src, s := newSource(t, Config{Events: 50_000, Delay: noDelay, Rate: 1000})
	recs, eof := read(t, src, s, -1, 1000)
	if !eof || len(recs) != 50_000 {
		t.Fatalf("%d events, eof %v", len(recs), eof)
	}
	var counts [3]int
	for i, r := range recs {
		id := int64(i)
		if r.id != id {
			t.Fatalf("event %d has id %d", i, r.id)
		}
		k := value(s, r, "event_type").I
		counts[k]++
		want := int64(EventBid)
		switch id % 50 {
		case 0:
			want = EventPerson
		case 1, 2, 3:
			want = EventAuction
		}
		if k != want {
			t.Fatalf("event %d: type %d, want %d", id, k, want)
		}
		if tm := value(s, r, "date_time"); tm.Kind != row.KindTime || tm.I != DefaultBaseTime+id {
			t.Fatalf("event %d: date_time %v, want base + %d ms", id, tm, id)
		}
		if r.arrival != DefaultBaseTime+id {
			t.Fatalf("event %d: arrival %d", id, r.arrival)
		}
		// Exactly the fields of the event's type are set.
		for _, f := range s.Fields {
			k2 := kindOf(byName[f.Name])
			if null := r.vals[f.Index].IsNull(); null != (k2 >= 0 && int64(k2) != k) {
				t.Fatalf("event %d (type %d): %s null=%v", id, k, f.Name, null)
			}
		}
		switch k {
		case EventPerson:
			if v := value(s, r, "person.id").I; v != 1000+id/50 {
				t.Fatalf("event %d: person.id %d", id, v)
			}
		case EventAuction:
			if v := value(s, r, "auction.id").I; v != 1000+id/50*3+id%50-1 {
				t.Fatalf("event %d: auction.id %d", id, v)
			}
		}
	}
	if counts != [3]int{1000, 3000, 46000} {
		t.Errorf("persons, auctions, bids = %v, want 1000, 3000, 46000", counts)
	}
}

// TestDistributions checks the values against the reference's rules, and
// the hot shares against the probabilities they imply: a bid is for the
// hot auction with P = 1/2 (hotAuctionRatio 2) plus 1/2 × the chance that
// the uniform pick among ~111 auctions hits it; by the hot bidder with
// P ≈ 3/4 (hotBiddersRatio 4); an auction by the hot seller with P ≈
// 3/4 (hotSellersRatio 4). The counts are exact for seed 0. The bounds
// are wider than binomial noise: consecutive ids seed java.util.Random
// with consecutive values, whose first draws are correlated (Beam's
// generator has the same property), so a share drifts by about 1% over
// hundreds of thousands of events (0.5104 here, 0.5017 over 500,000).
func TestDistributions(t *testing.T) {
	const n = 200_000
	src, s := newSource(t, Config{Events: n, Delay: noDelay})
	recs, _ := read(t, src, s, -1, 4096)
	var bids, hotAuction, hotBidder, auctions, hotSeller, hotChannel, channelID int
	minPrice, maxPrice := int64(1<<62), int64(0)
	for _, r := range recs {
		id := r.id
		tm := value(s, r, "date_time").I
		switch value(s, r, "event_type").I {
		case EventPerson:
			name := value(s, r, "person.name").S
			if strings.Count(name, " ") != 1 {
				t.Fatalf("person %d: name %q", id, name)
			}
			if cc := value(s, r, "person.credit_card").S; len(cc) != 19 {
				t.Fatalf("person %d: card %q", id, cc)
			}
			if e := value(s, r, "person.email_address").S; !strings.HasSuffix(e, ".com") || strings.Count(e, "@") != 1 {
				t.Fatalf("person %d: email %q", id, e)
			}
			if x := len(value(s, r, "person.extra").S); x < 100 || x > 190 {
				t.Fatalf("person %d: extra of %d bytes", id, x)
			}
		case EventAuction:
			auctions++
			seller := value(s, r, "auction.seller").I
			if seller == 1000+lastBase0PersonID(id)/100*100 {
				hotSeller++
			}
			if seller < 1000 || seller > 1000+id/50+10 {
				t.Fatalf("auction %d: seller %d", id, seller)
			}
			if c := value(s, r, "auction.category").I; c < 10 || c > 14 {
				t.Fatalf("auction %d: category %d", id, c)
			}
			ib, res := value(s, r, "auction.initial_bid").I, value(s, r, "auction.reserve").I
			if ib < 100 || ib > 1e8 || res <= ib || res > ib+1e8 {
				t.Fatalf("auction %d: initial %d, reserve %d", id, ib, res)
			}
			if e := value(s, r, "auction.expires").I; e <= tm {
				t.Fatalf("auction %d: expires %d at %d", id, e, tm)
			}
			if l := len(value(s, r, "auction.item_name").S); l > 19 {
				t.Fatalf("auction %d: item_name of %d bytes", id, l)
			}
			if l := len(value(s, r, "auction.description").S); l > 99 {
				t.Fatalf("auction %d: description of %d bytes", id, l)
			}
		case EventBid:
			bids++
			a := value(s, r, "bid.auction").I
			if a == 1000+lastBase0AuctionID(id)/100*100 {
				hotAuction++
			}
			if last := 1000 + lastBase0AuctionID(id); a < last-100 || a > last+10 {
				t.Fatalf("bid %d: auction %d, newest %d", id, a, last)
			}
			if value(s, r, "bid.bidder").I == 1000+lastBase0PersonID(id)/100*100+1 {
				hotBidder++
			}
			p := value(s, r, "bid.price").I
			minPrice, maxPrice = min(minPrice, p), max(maxPrice, p)
			if p < 100 || p > 100_000_000 {
				t.Fatalf("bid %d: price %d", id, p)
			}
			ch, url := value(s, r, "bid.channel").S, value(s, r, "bid.url").S
			switch ch {
			case "Google", "Facebook", "Baidu", "Apple":
				hotChannel++
			default:
				if !strings.HasPrefix(ch, "channel-") {
					t.Fatalf("bid %d: channel %q", id, ch)
				}
				if strings.Contains(url, "&channel_id=") {
					channelID++
				}
			}
			if !strings.HasPrefix(url, "https://www.nexmark.com/") || !strings.Contains(url, "/item.htm?query=1") {
				t.Fatalf("bid %d: url %q", id, url)
			}
			if x := len(value(s, r, "bid.extra").S); x < 54 || x > 81 {
				t.Fatalf("bid %d: extra of %d bytes", id, x)
			}
		}
	}
	share := func(k, of int) float64 { return float64(k) / float64(of) }
	checks := []struct {
		what     string
		got      float64
		lo, hi   float64
		exact    int
		expected int
	}{
		{"hot auction share of bids", share(hotAuction, bids), 0.49, 0.52, hotAuction, 93910},
		{"hot bidder share of bids", share(hotBidder, bids), 0.745, 0.755, hotBidder, 138131},
		{"hot seller share of auctions", share(hotSeller, auctions), 0.74, 0.76, hotSeller, 9084},
		{"hot channel share of bids", share(hotChannel, bids), 0.495, 0.505, hotChannel, 91993},
		{"channel_id share of other channels", share(channelID, bids-hotChannel), 0.88, 0.92, channelID, 82922},
	}
	for _, c := range checks {
		if c.got < c.lo || c.got > c.hi {
			t.Errorf("%s %.4f, outside [%v, %v]", c.what, c.got, c.lo, c.hi)
		}
		if c.exact != c.expected {
			t.Errorf("%s: count %d, want %d for seed 0", c.what, c.exact, c.expected)
		}
	}
	if minPrice > 200 || maxPrice < 90_000_000 {
		t.Errorf("prices span %d to %d cents, want about 100 to 100,000,000", minPrice, maxPrice)
	}
}

// TestPartialSchemas: a schema with some of the fields gets the same
// values as the full schema (the draws it skips do not shift the others).
func TestPartialSchemas(t *testing.T) {
	full, fs := newSource(t, Config{Events: 2000, Seed: 9})
	want, _ := read(t, full, fs, -1, 300)
	names := Names()
	rng := rand.New(rand.NewPCG(1, 2))
	subsets := [][]string{bidFields, {"bid.channel"}, {"bid.url"}, {"bid.extra", "bid.url"}, {"person.extra"}, {"auction.extra"}, {"auction.reserve"}}
	for _, n := range names {
		subsets = append(subsets, []string{n})
	}
	for range 30 {
		var sub []string
		for _, n := range names {
			if rng.IntN(4) == 0 {
				sub = append(sub, n)
			}
		}
		if len(sub) > 0 {
			subsets = append(subsets, sub)
		}
	}
	for _, sub := range subsets {
		src, s := newSource(t, Config{Events: 2000, Seed: 9}, sub...)
		got, _ := read(t, src, s, -1, 300)
		for i := range got {
			if got[i].id != want[i].id || got[i].arrival != want[i].arrival {
				t.Fatalf("%v: event %d is %d, want %d", sub, i, got[i].id, want[i].id)
			}
			for _, f := range s.Fields {
				if g, w := got[i].vals[f.Index], value(fs, want[i], f.Name); !g.Equal(w) {
					t.Fatalf("%v: event %d: %s = %v, full schema %v", sub, got[i].id, f.Name, g, w)
				}
			}
		}
	}
}

// TestDecimalFields: int fields may be declared decimal.
func TestDecimalFields(t *testing.T) {
	s := row.NewSchema()
	s.Add("bid.price", row.KindDecimal)
	s.Add("date_time", row.KindTime)
	src, err := New(Config{Fields: fieldsOf(s), Events: 100})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := read(t, src, s, -1, 100)
	ref, rs := newSource(t, Config{Events: 100}, "bid.price")
	want, _ := read(t, ref, rs, -1, 100)
	for i := range got {
		g, w := got[i].vals[0], want[i].vals[0]
		if w.IsNull() != g.IsNull() || !w.IsNull() && !g.Equal(row.Dec(row.DecimalFromInt(w.I))) {
			t.Fatalf("event %d: %v, want %v", i, g, w)
		}
	}
}

// TestSeeds: the same seed gives the same events; another seed others.
func TestSeeds(t *testing.T) {
	run := func(seed uint64) []rec {
		src, s := newSource(t, Config{Events: 5000, Seed: seed})
		recs, _ := read(t, src, s, -1, 777)
		return recs
	}
	a, b, c := run(3), run(3), run(4)
	same := func(x, y []rec) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].id != y[i].id || x[i].arrival != y[i].arrival {
				return false
			}
			for j := range x[i].vals {
				if !x[i].vals[j].Equal(y[i].vals[j]) {
					return false
				}
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("seed 3 gave two different streams")
	}
	if same(a, c) {
		t.Error("seeds 3 and 4 gave the same stream")
	}
}
