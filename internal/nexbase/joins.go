package nexbase

import (
	"context"
	"slices"
	"strings"
)

// The join queries (q3, q4, q8, q9) by hand: Go maps keyed by the join
// key, a queue in arrival order to free rows once the watermark has
// passed them, and the same firing rule as the engine. The loops use what
// the generator guarantees and a general join cannot assume: person and
// auction ids are unique, so an auction's bids need no buffer once the
// auction is there, and a person or an auction is one row per id.

const (
	personType  = 0 // event_type of a person
	auctionType = 1 // event_type of an auction
)

// Q3Row is a row of q3: an auction in category 10 and its seller's name,
// city and state.
type Q3Row struct {
	Name, City, State string
	Auction           int64 // auction id
}

// q3TTL is q3.yaml's join.ttl: a person and an auction at most 10 s apart
// in event time pair up.
const q3TTL = 10_000

// Q3 is Nexmark q3, local item suggestion: the auctions in category 10 of
// the sellers in OR, ID or CA, with the seller's name, city and state,
// joined on seller = person id within q3TTL of event time (q3.yaml's
// regular join with ttl). Each side's rows are freed once the watermark
// passes their event time + ttl.
func Q3(ctx context.Context, cfg Config, emit func(*Q3Row)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "person.id", "person.name", "person.city", "person.state",
		"auction.id", "auction.seller", "auction.category")
	if err != nil {
		return Stats{}, err
	}
	et, dt := r.slot("event_type"), r.slot("date_time")
	pid, pn, pc, ps := r.slot("person.id"), r.slot("person.name"), r.slot("person.city"), r.slot("person.state")
	aid, as, ac := r.slot("auction.id"), r.slot("auction.seller"), r.slot("auction.category")
	type person struct {
		t                 int64
		name, city, state string
	}
	type auction struct{ t, id int64 }
	people := map[int64]person{}      // person id → the person
	auctions := map[int64][]auction{} // seller → their auctions
	type queued struct{ t, key int64 }
	var pq, aq fifo[queued] // arrival order
	var st Stats
	var out Q3Row
	maxT := int64(-1 << 63)
	expire := func(w int64) {
		for pq.len() > 0 && pq.front().t+q3TTL < w {
			q := pq.pop()
			if p, ok := people[q.key]; ok && p.t == q.t {
				delete(people, q.key)
			}
		}
		for aq.len() > 0 && aq.front().t+q3TTL < w {
			q := aq.pop()
			l := auctions[q.key]
			l = slices.DeleteFunc(l, func(a auction) bool { return a.t+q3TTL < w })
			if len(l) == 0 {
				delete(auctions, q.key)
			} else {
				auctions[q.key] = l
			}
		}
	}
	for {
		rows, err := r.next(ctx)
		if err != nil {
			return st, err
		}
		if rows == nil {
			break
		}
		for i := range rows {
			row := &rows[i]
			t := row.I[dt]
			switch row.I[et] {
			case personType:
				s := row.S[ps]
				if s != "OR" && s != "ID" && s != "CA" {
					break
				}
				id := row.I[pid]
				p := person{t: t, name: strings.Clone(row.S[pn]), city: strings.Clone(row.S[pc]), state: strings.Clone(s)}
				for _, a := range auctions[id] {
					if a.t-t <= q3TTL && t-a.t <= q3TTL {
						out = Q3Row{Name: p.name, City: p.city, State: p.state, Auction: a.id}
						st.Rows++
						if emit != nil {
							emit(&out)
						}
					}
				}
				people[id] = p
				pq.push(queued{t, id})
			case auctionType:
				if row.I[ac] != 10 {
					break
				}
				seller := row.I[as]
				a := auction{t: t, id: row.I[aid]}
				if p, ok := people[seller]; ok && a.t-p.t <= q3TTL && p.t-a.t <= q3TTL {
					out = Q3Row{Name: p.name, City: p.city, State: p.state, Auction: a.id}
					st.Rows++
					if emit != nil {
						emit(&out)
					}
				}
				auctions[seller] = append(auctions[seller], a)
				aq.push(queued{t, seller})
			}
			if t > maxT {
				maxT = t
				expire(maxT - cfg.OutOfOrdernessMs)
			}
		}
	}
	st.Events = r.events
	return st, nil
}

// Q8Row is a row of q8: a person who opened an auction in the 10 s window
// in which they registered.
type Q8Row struct {
	Person int64
	Name   string
	Start  int64 // the window's start, ms since the epoch
}

// q8Size is q8's tumbling window, ms.
const q8Size = 10_000

// Q8 is Nexmark q8, monitor new users: per 10 s tumbling window, the
// people registered in it who opened an auction (as seller) in it; a
// window's rows come when the watermark reaches its end (q8.yaml's window
// semi join).
func Q8(ctx context.Context, cfg Config, emit func(*Q8Row)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "person.id", "person.name", "auction.seller")
	if err != nil {
		return Stats{}, err
	}
	et, dt, pid, pn, as := r.slot("event_type"), r.slot("date_time"), r.slot("person.id"), r.slot("person.name"), r.slot("auction.seller")
	type win struct {
		people  map[int64]string // id → name
		order   []int64          // ids in arrival order
		sellers map[int64]struct{}
	}
	wins := map[int64]*win{}
	var starts []int64
	get := func(start int64) *win {
		w := wins[start]
		if w == nil {
			w = &win{people: map[int64]string{}, sellers: map[int64]struct{}{}}
			wins[start] = w
			starts = append(starts, start)
		}
		return w
	}
	var st Stats
	var out Q8Row
	fire := func(wm int64) {
		slices.Sort(starts)
		n := 0
		for _, s := range starts {
			if s+q8Size > wm {
				break
			}
			w := wins[s]
			for _, id := range w.order {
				if _, ok := w.sellers[id]; ok {
					out = Q8Row{Person: id, Name: w.people[id], Start: s}
					st.Rows++
					if emit != nil {
						emit(&out)
					}
				}
			}
			delete(wins, s)
			n++
		}
		starts = starts[n:]
	}
	maxT := int64(-1 << 63)
	next := int64(1<<63 - 1) // the first window end not yet fired
	for {
		rows, err := r.next(ctx)
		if err != nil {
			return st, err
		}
		if rows == nil {
			break
		}
		for i := range rows {
			row := &rows[i]
			t := row.I[dt]
			switch row.I[et] {
			case personType:
				w := get(floorDiv(t, q8Size))
				id := row.I[pid]
				if _, ok := w.people[id]; !ok {
					w.order = append(w.order, id)
				}
				w.people[id] = strings.Clone(row.S[pn])
				next = min(next, floorDiv(t, q8Size)+q8Size)
			case auctionType:
				get(floorDiv(t, q8Size)).sellers[row.I[as]] = struct{}{}
				next = min(next, floorDiv(t, q8Size)+q8Size)
			}
			if t > maxT {
				maxT = t
				if wm := maxT - cfg.OutOfOrdernessMs; wm >= next {
					fire(wm)
					next = 1<<63 - 1
					for _, s := range starts {
						next = min(next, s+q8Size)
					}
				}
			}
		}
	}
	fire(inf)
	st.Events = r.events
	return st, nil
}

// Q4Row is a row of q4: the average winning price of a category's
// auctions that expired in a 10 s window.
type Q4Row struct {
	Start, End int64 // the window, ms since the epoch
	Category   int64
	// AvgMicros is the average winning price in millionths of a cent,
	// rounded half away from zero (avg's rule: 6 decimal places).
	AvgMicros int64
	Auctions  int64 // auctions with a winning bid
}

// Q9Row is a row of q9: an auction and its winning bid.
type Q9Row struct {
	ID                  int64
	ItemName            string
	InitialBid, Reserve int64 // cents
	DateTime, Expires   int64 // ms since the epoch
	Seller, Category    int64
	Price, Bidder       int64 // the winning bid: the highest price, cents
	BidDateTime         int64 // ms since the epoch
}

// winAuction is an open auction of q4 and q9 with its best bid so far.
type winAuction struct {
	row    Q9Row
	hasBid bool
}

// The windows of q4 and q9: an auction's result is due once the watermark
// reaches the end of the 1 s window holding its expiry (the engine's
// stage reading the join: event time expires, tumbling 1 s); q4's
// averages per 10 s window.
const (
	expirySize = 1_000
	q4Size     = 10_000
)

// winningBids runs the interval join of q4 and q9 (a bid B of auction A
// counts when A.ts ≤ B.ts ≤ A.expires) and calls done with each auction
// that has a bid, once the watermark reaches the end of the 1 s window of
// its expiry; wm is called with each new watermark after.
func winningBids(ctx context.Context, cfg Config, full bool, done func(*Q9Row), wm func(int64)) (*reader, error) {
	names := []string{"event_type", "date_time", "auction.id", "auction.expires", "auction.category", "bid.auction", "bid.bidder", "bid.price"}
	if full {
		names = append(names, "auction.item_name", "auction.initial_bid", "auction.reserve", "auction.seller")
	}
	r, err := open(cfg, names...)
	if err != nil {
		return nil, err
	}
	et, dt, aid, aex, acat := r.slot("event_type"), r.slot("date_time"), r.slot("auction.id"), r.slot("auction.expires"), r.slot("auction.category")
	ba, bb, bp := r.slot("bid.auction"), r.slot("bid.bidder"), r.slot("bid.price")
	var ait, ain, are, ase int
	if full {
		ait, ain, are, ase = r.slot("auction.item_name"), r.slot("auction.initial_bid"), r.slot("auction.reserve"), r.slot("auction.seller")
	}
	type bid struct{ t, bidder, price int64 }
	open := map[int64]*winAuction{} // auction id → the auction
	waiting := map[int64][]bid{}    // bids of auctions not seen yet
	type queued struct{ t, auction int64 }
	var wq fifo[queued]        // waiting bids in arrival order
	due := map[int64][]int64{} // 1 s window start of the expiry → auctions
	var dueStarts []int64
	apply := func(a *winAuction, b bid) {
		w := &a.row
		if b.t < w.DateTime || b.t > w.Expires {
			return
		}
		switch {
		case !a.hasBid || b.price > w.Price:
			w.Price, w.Bidder, w.BidDateTime, a.hasBid = b.price, b.bidder, b.t, true
		case b.price == w.Price:
			w.Bidder, w.BidDateTime = min(w.Bidder, b.bidder), min(w.BidDateTime, b.t)
		}
	}
	advance := func(w int64) {
		for wq.len() > 0 && wq.front().t < w {
			q := wq.pop()
			if l := waiting[q.auction]; len(l) > 1 {
				waiting[q.auction] = l[1:]
			} else {
				delete(waiting, q.auction)
			}
		}
		if len(dueStarts) > 0 && dueStarts[0]+expirySize <= w {
			slices.Sort(dueStarts)
			n := 0
			for _, s := range dueStarts {
				if s+expirySize > w {
					break
				}
				for _, id := range due[s] {
					if a := open[id]; a.hasBid {
						done(&a.row)
					}
					delete(open, id)
				}
				delete(due, s)
				n++
			}
			dueStarts = dueStarts[n:]
		}
		wm(w)
	}
	maxT := int64(-1 << 63)
	for {
		rows, err := r.next(ctx)
		if err != nil {
			return r, err
		}
		if rows == nil {
			break
		}
		for i := range rows {
			row := &rows[i]
			t := row.I[dt]
			switch row.I[et] {
			case auctionType:
				id := row.I[aid]
				a := &winAuction{row: Q9Row{ID: id, DateTime: t, Expires: row.I[aex], Category: row.I[acat]}}
				if full {
					a.row.ItemName = strings.Clone(row.S[ait])
					a.row.InitialBid, a.row.Reserve, a.row.Seller = row.I[ain], row.I[are], row.I[ase]
				}
				for _, b := range waiting[id] {
					apply(a, b)
				}
				open[id] = a
				s := floorDiv(a.row.Expires, expirySize)
				if _, ok := due[s]; !ok {
					dueStarts = append(dueStarts, s)
				}
				due[s] = append(due[s], id)
			case bidType:
				b := bid{t: t, bidder: row.I[bb], price: row.I[bp]}
				id := row.I[ba]
				if a := open[id]; a != nil {
					apply(a, b)
				} else {
					waiting[id] = append(waiting[id], b)
					wq.push(queued{t, id})
				}
			}
			if t > maxT {
				maxT = t
				advance(maxT - cfg.OutOfOrdernessMs)
			}
		}
	}
	advance(inf)
	return r, nil
}

// Q9 is Nexmark q9, winning bids: each auction with its highest bid made
// between its opening and its expiry (on a tie, the smallest bidder and
// bid time, arg_max's rule), once the watermark reaches the end of the
// 1 s window of its expiry.
func Q9(ctx context.Context, cfg Config, emit func(*Q9Row)) (Stats, error) {
	var st Stats
	r, err := winningBids(ctx, cfg, true, func(w *Q9Row) {
		st.Rows++
		if emit != nil {
			emit(w)
		}
	}, func(int64) {})
	if r != nil {
		st.Events = r.events
	}
	return st, err
}

// Q4 is Nexmark q4, average price per category: the winning price of
// each auction (Q9's), averaged per category over the auctions whose
// expiry window ends in each 10 s window, emitted when the watermark
// reaches its end.
func Q4(ctx context.Context, cfg Config, emit func(*Q4Row)) (Stats, error) {
	type acc struct{ sum, n int64 }
	open := map[[2]int64]*acc{} // (10 s window start, category)
	var keys [][2]int64
	var st Stats
	var out Q4Row
	fire := func(w int64) {
		if len(keys) == 0 {
			return
		}
		slices.SortFunc(keys, func(a, b [2]int64) int {
			if a[0] != b[0] {
				return cmpInt(a[0], b[0])
			}
			return cmpInt(a[1], b[1])
		})
		n := 0
		for _, k := range keys {
			if k[0]+q4Size > w {
				break
			}
			a := open[k]
			// avg: sum / n rounded half away from zero to 6 places
			// (sums of prices stay far below 2⁶³ / 10⁶ here).
			q := (a.sum*2_000_000/a.n + 1) / 2
			out = Q4Row{Start: k[0], End: k[0] + q4Size, Category: k[1], AvgMicros: q, Auctions: a.n}
			st.Rows++
			if emit != nil {
				emit(&out)
			}
			delete(open, k)
			n++
		}
		keys = keys[n:]
	}
	r, err := winningBids(ctx, cfg, false, func(w *Q9Row) {
		// The winning row's event time downstream: its 1 s window's end − 1 ms.
		t := floorDiv(w.Expires, expirySize) + expirySize - 1
		k := [2]int64{floorDiv(t, q4Size), w.Category}
		a := open[k]
		if a == nil {
			a = &acc{}
			open[k] = a
			keys = append(keys, k)
		}
		a.sum += w.Price
		a.n++
	}, fire)
	if r != nil {
		st.Events = r.events
	}
	return st, err
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fifo is a queue on a slice (amortised O(1) push and pop).
type fifo[T any] struct {
	buf  []T
	head int
}

func (q *fifo[T]) len() int { return len(q.buf) - q.head }
func (q *fifo[T]) front() T { return q.buf[q.head] }
func (q *fifo[T]) push(v T) { q.buf = append(q.buf, v) }
func (q *fifo[T]) pop() T {
	v := q.buf[q.head]
	q.head++
	if q.head > 1024 && q.head*2 > len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:n]
		q.head = 0
	}
	return v
}
