package nexmarkq_test

import (
	"context"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/internal/nexbase"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
)

// The queries with joins (q3, q4, q8, q9), each checked against a batch
// recomputation over every generated event: nested loops over people,
// auctions and bids (q3, q4, q9), a hash join per window (q8). With the
// 4 s out-of-orderness no event is late, so the streaming rows must equal
// them exactly.

// fullEvent is one generated event with the person, auction and bid
// fields the join queries read.
type fullEvent struct {
	typ, t int64 // event_type; date_time, ms
	// person
	pid               int64
	name, city, state string
	// auction
	aid, seller, category, expires, initial, reserve int64
	item                                             string
	// bid
	auction, bidder, price int64
}

// generateFull returns every event of a run in delivery order, read from
// the Nexmark source directly (no engine).
func generateFull(t *testing.T, events, rate int64, seed uint64) []fullEvent {
	t.Helper()
	names := []string{"event_type", "date_time",
		"person.id", "person.name", "person.city", "person.state",
		"auction.id", "auction.seller", "auction.category", "auction.expires", "auction.initial_bid", "auction.reserve", "auction.item_name",
		"bid.auction", "bid.bidder", "bid.price"}
	s, err := nexmark.NewSchema(names...)
	if err != nil {
		t.Fatal(err)
	}
	src, err := nexmark.New(nexmark.Config{Fields: format.Fields{Schema: s}, Events: events, Rate: rate, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string) row.Field { x, _ := s.Lookup(name); return x }
	var out []fullEvent
	var b source.Batch
	for {
		b.Reset()
		st, err := src.Next(context.Background(), &b, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			r := &b.Rows[i]
			str := func(n string) string { return strings.Clone(r.Get(f(n)).S) }
			num := func(n string) int64 { return r.Get(f(n)).I }
			e := fullEvent{typ: num("event_type"), t: num("date_time")}
			switch e.typ {
			case nexmark.EventPerson:
				e.pid, e.name, e.city, e.state = num("person.id"), str("person.name"), str("person.city"), str("person.state")
			case nexmark.EventAuction:
				e.aid, e.seller, e.category, e.expires = num("auction.id"), num("auction.seller"), num("auction.category"), num("auction.expires")
				e.initial, e.reserve, e.item = num("auction.initial_bid"), num("auction.reserve"), str("auction.item_name")
			case nexmark.EventBid:
				e.auction, e.bidder, e.price = num("bid.auction"), num("bid.bidder"), num("bid.price")
			}
			out = append(out, e)
		}
		if st == source.End {
			break
		}
	}
	if int64(len(out)) != events {
		t.Fatalf("generated %d events, want %d", len(out), events)
	}
	return out
}

// ofType returns the events of one type.
func ofType(evs []fullEvent, typ int64) []fullEvent {
	var out []fullEvent
	for _, e := range evs {
		if e.typ == typ {
			out = append(out, e)
		}
	}
	return out
}

// q3Want is q3 by a nested loop: every (auction in category 10, person in
// OR, ID or CA) with A.seller = P.id and event times at most the ttl
// (10 s) apart.
func q3Want(evs []fullEvent) []string {
	var want []string
	people := ofType(evs, nexmark.EventPerson)
	for _, a := range ofType(evs, nexmark.EventAuction) {
		if a.category != 10 {
			continue
		}
		for _, p := range people {
			if p.state != "OR" && p.state != "ID" && p.state != "CA" {
				continue
			}
			if a.seller == p.pid && a.t-p.t <= 10_000 && p.t-a.t <= 10_000 {
				want = append(want, expected(0, 0, "name", p.name, "city", p.city, "state", p.state, "id", a.aid))
			}
		}
	}
	return want
}

func TestQ3(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generateFull(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q3", r.events, r.rate, r.seed)
			want := q3Want(evs)
			same(t, "q3", rows["q3"], want)
			var base []string
			if _, err := nexbase.Q3(context.Background(), baselineConfig(t, p), func(q *nexbase.Q3Row) {
				base = append(base, expected(0, 0, "name", q.Name, "city", q.City, "state", q.State, "id", q.Auction))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q3", base, want)
		})
	}
}

// q8Want is q8 by a hash join per 10 s tumbling window: the people (id,
// name) of each window with an auction of theirs (as seller) in it.
func q8Want(evs []fullEvent) []string {
	sellers := map[[2]int64]bool{} // (window start, seller)
	for _, a := range ofType(evs, nexmark.EventAuction) {
		sellers[[2]int64{a.t - a.t%10_000, a.seller}] = true
	}
	var want []string
	for _, p := range ofType(evs, nexmark.EventPerson) {
		w := p.t - p.t%10_000
		if sellers[[2]int64{w, p.pid}] {
			want = append(want, expected(0, 0, "id", p.pid, "name", p.name, "starttime", w))
		}
	}
	return want
}

func TestQ8(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generateFull(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q8", r.events, r.rate, r.seed)
			want := q8Want(evs)
			same(t, "q8", rows["q8"], want)
			var base []string
			if _, err := nexbase.Q8(context.Background(), baselineConfig(t, p), func(q *nexbase.Q8Row) {
				base = append(base, expected(0, 0, "id", q.Person, "name", q.Name, "starttime", q.Start))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q8", base, want)
		})
	}
}

// winner is an auction's winning bid by a nested loop over its bids: the
// highest price among the bids with A.ts ≤ B.ts ≤ A.expires, and for the
// bidder and the bid's time their smallest values among the bids with
// that price (arg_max's tie rule, column by column).
type winner struct {
	a                   fullEvent
	price, bidder, bidT int64
}

func winners(evs []fullEvent) []winner {
	bids := map[int64][]fullEvent{}
	for _, b := range ofType(evs, nexmark.EventBid) {
		bids[b.auction] = append(bids[b.auction], b)
	}
	var out []winner
	for _, a := range ofType(evs, nexmark.EventAuction) {
		var w *winner
		for _, b := range bids[a.aid] {
			if b.t < a.t || b.t > a.expires {
				continue
			}
			switch {
			case w == nil || b.price > w.price:
				w = &winner{a: a, price: b.price, bidder: b.bidder, bidT: b.t}
			case b.price == w.price:
				w.bidder, w.bidT = min(w.bidder, b.bidder), min(w.bidT, b.t)
			}
		}
		if w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// avgRat is avg's result: sum / n rounded half away from zero to 6
// decimal places (the prices are ints, scale 0).
func avgRat(sum *big.Int, n int64) *big.Rat {
	q := new(big.Int).Mul(sum, big.NewInt(2_000_000))
	q.Quo(q, big.NewInt(n)) // 2·10⁶·sum / n, truncated (sum ≥ 0)
	q.Add(q, big.NewInt(1)) // half away from zero: ⌊(2x + 1) / 2⌋
	q.Quo(q, big.NewInt(2))
	return new(big.Rat).SetFrac(q, big.NewInt(1_000_000))
}

func TestQ4(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generateFull(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q4", r.events, r.rate, r.seed)
			ws := winners(evs)
			// Stage winning: the max per auction, in the 1 s window of its
			// expiry.
			var wantWin []string
			type cat struct {
				sum *big.Int
				n   int64
			}
			cats := map[[2]int64]*cat{} // (10 s window of the expiry, category)
			for _, w := range ws {
				s := w.a.expires - w.a.expires%1000
				wantWin = append(wantWin, expected(s, s+1000, "auction", w.a.aid, "category", w.a.category, "final", w.price))
				// Stage q4 reads each row at its window's end − 1 ms.
				k := [2]int64{(s + 999) - (s+999)%10_000, w.a.category}
				c := cats[k]
				if c == nil {
					c = &cat{sum: new(big.Int)}
					cats[k] = c
				}
				c.sum.Add(c.sum, big.NewInt(w.price))
				c.n++
			}
			same(t, "q4 stage winning", rows["winning"], wantWin)
			var want []string
			for k, c := range cats {
				want = append(want, expected(k[0], k[0]+10_000, "category", k[1], "avg", avgRat(c.sum, c.n), "auctions", c.n))
			}
			same(t, "q4", rows["q4"], want)
			var base []string
			if _, err := nexbase.Q4(context.Background(), baselineConfig(t, p), func(q *nexbase.Q4Row) {
				base = append(base, expected(q.Start, q.End, "category", q.Category, "avg", new(big.Rat).SetFrac(big.NewInt(q.AvgMicros), big.NewInt(1_000_000)), "auctions", q.Auctions))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q4", base, want)
		})
	}
}

func TestQ9(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generateFull(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q9", r.events, r.rate, r.seed)
			row9 := func(a *fullEvent, price, bidder, bidT int64) string {
				s := a.expires - a.expires%1000
				return expected(s, s+1000, "id", a.aid, "item_name", a.item, "initial_bid", a.initial, "reserve", a.reserve,
					"date_time", a.t, "expires", a.expires, "seller", a.seller, "category", a.category,
					"price", price, "bidder", bidder, "bid_date_time", bidT)
			}
			var want []string
			for _, w := range winners(evs) {
				want = append(want, row9(&w.a, w.price, w.bidder, w.bidT))
			}
			same(t, "q9", rows["q9"], want)
			var base []string
			if _, err := nexbase.Q9(context.Background(), baselineConfig(t, p), func(q *nexbase.Q9Row) {
				a := fullEvent{aid: q.ID, item: q.ItemName, initial: q.InitialBid, reserve: q.Reserve, t: q.DateTime, expires: q.Expires, seller: q.Seller, category: q.Category}
				base = append(base, row9(&a, q.Price, q.Bidder, q.BidDateTime))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q9", base, want)
		})
	}
}

// TestQ13: every bid (the engine's rows and nexbase.Q13's) with the value of the side input's row whose key is
// its auction % 10,000, found by an as-of search over the file's rows
// (the newest row of the key valid at or before the bid: every row is
// valid from 0).
func TestQ13(t *testing.T) {
	data, err := os.ReadFile("side_input.csv")
	if err != nil {
		t.Fatal(err)
	}
	type version struct {
		from  int64
		value string
	}
	side := map[int64][]version{}
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(l, ",")
		k, err1 := strconv.ParseInt(f[0], 10, 64)
		from, err2 := strconv.ParseInt(f[2], 10, 64)
		if len(f) != 3 || err1 != nil || err2 != nil {
			t.Fatalf("side_input.csv:%d: %q", i+2, l)
		}
		side[k] = append(side[k], version{from * 1000, f[1]})
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generateFull(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q13", r.events, r.rate, r.seed)
			var want []string
			for _, b := range ofType(evs, nexmark.EventBid) {
				// As of the bid's time: the version with the largest
				// valid_from ≤ its time (the last listed on a tie).
				var v *version
				for i, x := range side[b.auction%10_000] {
					if x.from <= b.t && (v == nil || x.from >= v.from) {
						v = &side[b.auction%10_000][i]
					}
				}
				if v == nil {
					continue // inner: no row without a version
				}
				want = append(want, expected(0, 0, "auction", b.auction, "bidder", b.bidder, "price", b.price, "date_time", b.t, "value", v.value))
			}
			same(t, "q13", rows["q13"], want)
			var base []string
			if _, err := nexbase.Q13(context.Background(), baselineConfig(t, p), func(q *nexbase.Q13Row) {
				base = append(base, expected(0, 0, "auction", q.Auction, "bidder", q.Bidder, "price", q.Price, "date_time", q.DateTime, "value", q.Value))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q13", base, want)
		})
	}
}
