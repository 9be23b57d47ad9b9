package nexbase

import (
	"context"
	"strings"
)

// BidRow is a row of q0: a bid's fields. Prices are in cents, times in
// ms since the epoch.
type BidRow struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
}

// Q1Row is a row of q1: a bid with its price converted to euros.
type Q1Row struct {
	Auction, Bidder int64
	// PriceMilli is the bid's price × 0.908, exactly, in thousandths of a
	// cent (price × 908): the decimal price × 0.908 with scale 3.
	PriceMilli int64
	DateTime   int64 // ms since the epoch
	Extra      string
}

// Q2Row is a row of q2.
type Q2Row struct {
	Auction, Price int64 // auction id; price in cents
}

// WindowCount is a window's count for one key (q5, q11). Start and End
// are the window's bounds in ms since the epoch, End exclusive.
type WindowCount struct {
	Start, End int64
	Key        int64 // auction id (q5) or bidder id (q11)
	Count      int64 // bids
}

// Q7Row is q7's row for one 10 s window: the highest price and, for each
// other column, its value on the bids with that price (the smallest one
// when several bids share the price, column by column, as the arg_max
// aggregate does).
type Q7Row struct {
	Start, End int64 // window bounds, ms since the epoch
	Price      int64 // the highest bid price in the window, cents
	Auction    int64
	Bidder     int64
	DateTime   int64 // ms since the epoch
	Extra      string
}

const bidType = 2 // event_type of a bid

// Q0 is Nexmark q0, pass-through: every bid's auction, bidder, price,
// date_time and extra, in delivery order.
func Q0(ctx context.Context, cfg Config, emit func(*BidRow)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.auction", "bid.bidder", "bid.price", "bid.extra")
	if err != nil {
		return Stats{}, err
	}
	et, dt, au, bi, pr, ex := r.slot("event_type"), r.slot("date_time"), r.slot("bid.auction"), r.slot("bid.bidder"), r.slot("bid.price"), r.slot("bid.extra")
	var st Stats
	var out BidRow
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
			if row.I[et] != bidType {
				continue
			}
			out = BidRow{Auction: row.I[au], Bidder: row.I[bi], Price: row.I[pr], DateTime: row.I[dt], Extra: row.S[ex]}
			st.Rows++
			if emit != nil {
				emit(&out)
			}
		}
	}
	st.Events = r.events
	return st, nil
}

// Q1 is Nexmark q1, currency conversion: every bid with its price × 0.908
// (exact), in delivery order.
func Q1(ctx context.Context, cfg Config, emit func(*Q1Row)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.auction", "bid.bidder", "bid.price", "bid.extra")
	if err != nil {
		return Stats{}, err
	}
	et, dt, au, bi, pr, ex := r.slot("event_type"), r.slot("date_time"), r.slot("bid.auction"), r.slot("bid.bidder"), r.slot("bid.price"), r.slot("bid.extra")
	var st Stats
	var out Q1Row
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
			if row.I[et] != bidType {
				continue
			}
			out = Q1Row{Auction: row.I[au], Bidder: row.I[bi], PriceMilli: row.I[pr] * 908, DateTime: row.I[dt], Extra: row.S[ex]}
			st.Rows++
			if emit != nil {
				emit(&out)
			}
		}
	}
	st.Events = r.events
	return st, nil
}

// Q2 is Nexmark q2, selection: the auction and price of every bid whose
// auction id is a multiple of 123, in delivery order.
func Q2(ctx context.Context, cfg Config, emit func(*Q2Row)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.auction", "bid.price")
	if err != nil {
		return Stats{}, err
	}
	et, au, pr := r.slot("event_type"), r.slot("bid.auction"), r.slot("bid.price")
	var st Stats
	var out Q2Row
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
			if row.I[et] != bidType || row.I[au]%123 != 0 {
				continue
			}
			out = Q2Row{Auction: row.I[au], Price: row.I[pr]}
			st.Rows++
			if emit != nil {
				emit(&out)
			}
		}
	}
	st.Events = r.events
	return st, nil
}

// q5 windows: 10 s long, one starting every 2 s (epoch-aligned).
const (
	q5Size  = 10_000
	q5Slide = 2_000
)

// Q5Counts is the first half of Nexmark q5: the number of bids per
// auction in each 10 s window sliding by 2 s ([start, start+10 s), start a
// multiple of 2 s), one row per window and auction with at least one bid.
// It counts per 2 s pane and sums the five panes of a window when the
// watermark reaches the window's end.
func Q5Counts(ctx context.Context, cfg Config, emit func(*WindowCount)) (Stats, error) {
	return q5(ctx, cfg, emit, false)
}

// Q5 is Nexmark q5, hot items: for each 10 s window sliding by 2 s, the
// auction with the most bids and its count (Q5Counts' rows reduced to the
// largest count per window; on a tie the smallest auction id, as
// arg_max(bids, auction) does, where Flink's query returns every tied
// auction).
func Q5(ctx context.Context, cfg Config, emit func(*WindowCount)) (Stats, error) {
	return q5(ctx, cfg, emit, true)
}

func q5(ctx context.Context, cfg Config, emit func(*WindowCount), hottest bool) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.auction")
	if err != nil {
		return Stats{}, err
	}
	et, dt, au := r.slot("event_type"), r.slot("date_time"), r.slot("bid.auction")
	var st Stats
	panes := map[int64]map[int64]int64{} // pane start → auction → bids
	var free []map[int64]int64           // emptied pane maps, for reuse
	sum := map[int64]int64{}             // a window's counts, while it fires
	var cur map[int64]int64              // the pane of the previous bid
	curStart := int64(-1 << 63)
	next := inf // start of the first window not yet emitted
	fired := false
	maxT := int64(-1 << 63)
	var out WindowCount
	fire := func(wm int64) {
		for len(panes) > 0 && next <= wm-q5Size {
			start := next
			clear(sum)
			for p := start; p < start+q5Size; p += q5Slide {
				for a, n := range panes[p] {
					sum[a] += n
				}
			}
			if hottest {
				best, bestN := int64(0), int64(0)
				for a, n := range sum {
					if n > bestN || n == bestN && a < best {
						best, bestN = a, n
					}
				}
				if bestN > 0 {
					out = WindowCount{Start: start, End: start + q5Size, Key: best, Count: bestN}
					st.Rows++
					if emit != nil {
						emit(&out)
					}
				}
			} else {
				for a, n := range sum {
					out = WindowCount{Start: start, End: start + q5Size, Key: a, Count: n}
					st.Rows++
					if emit != nil {
						emit(&out)
					}
				}
			}
			// No later window reads the pane at start.
			if m, ok := panes[start]; ok {
				clear(m)
				free = append(free, m)
				delete(panes, start)
				if curStart == start {
					cur, curStart = nil, -1<<63
				}
			}
			next += q5Slide
			fired = true
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
			if row.I[et] == bidType {
				ps := floorDiv(t, q5Slide)
				if first := ps - q5Size + q5Slide; first < next && !fired {
					next = first
				}
				if len(panes) == 0 && fired {
					// Nothing open: skip the empty windows since the last.
					next = max(next, ps-q5Size+q5Slide)
				}
				if ps >= next { // else every window of the bid was emitted: too late
					if ps != curStart {
						cur = panes[ps]
						if cur == nil {
							if n := len(free); n > 0 {
								cur, free = free[n-1], free[:n-1]
							} else {
								cur = map[int64]int64{}
							}
							panes[ps] = cur
						}
						curStart = ps
					}
					cur[row.I[au]]++
				}
			}
			if t > maxT {
				maxT = t
				fire(maxT - cfg.OutOfOrdernessMs)
			}
		}
	}
	fire(inf)
	st.Events = r.events
	return st, nil
}

// q7 windows: tumbling, 10 s (epoch-aligned).
const q7Size = 10_000

// Q7 is Nexmark q7, highest bid: for each 10 s tumbling window, the
// highest price and the auction, bidder, date_time and extra of the bid
// with it (on a tie, the smallest value of each column, see Q7Row).
func Q7(ctx context.Context, cfg Config, emit func(*Q7Row)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.auction", "bid.bidder", "bid.price", "bid.extra")
	if err != nil {
		return Stats{}, err
	}
	et, dt, au, bi, pr, ex := r.slot("event_type"), r.slot("date_time"), r.slot("bid.auction"), r.slot("bid.bidder"), r.slot("bid.price"), r.slot("bid.extra")
	var st Stats
	open := map[int64]*Q7Row{} // window start → its best bid so far
	emitted := int64(-1 << 63) // windows starting before this were emitted
	maxT := int64(-1 << 63)
	var due []int64
	fire := func(wm int64) {
		due = due[:0]
		for s := range open {
			if s+q7Size <= wm {
				due = append(due, s)
			}
		}
		for _, s := range due {
			st.Rows++
			if emit != nil {
				emit(open[s])
			}
			delete(open, s)
			emitted = max(emitted, s+q7Size)
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
			if row.I[et] == bidType {
				if s := floorDiv(t, q7Size); s >= emitted {
					w := open[s]
					p := row.I[pr]
					switch {
					case w == nil:
						open[s] = &Q7Row{Start: s, End: s + q7Size, Price: p, Auction: row.I[au], Bidder: row.I[bi], DateTime: t, Extra: strings.Clone(row.S[ex])}
					case p > w.Price:
						*w = Q7Row{Start: s, End: s + q7Size, Price: p, Auction: row.I[au], Bidder: row.I[bi], DateTime: t, Extra: strings.Clone(row.S[ex])}
					case p == w.Price:
						w.Auction = min(w.Auction, row.I[au])
						w.Bidder = min(w.Bidder, row.I[bi])
						w.DateTime = min(w.DateTime, t)
						if x := row.S[ex]; x < w.Extra {
							w.Extra = strings.Clone(x)
						}
					}
				}
			}
			if t > maxT {
				maxT = t
				if len(open) > 0 {
					fire(maxT - cfg.OutOfOrdernessMs)
				}
			}
		}
	}
	fire(inf)
	st.Events = r.events
	return st, nil
}
