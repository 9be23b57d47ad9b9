package nexbase

import "context"

// q11Gap is q11's session gap, ms.
const q11Gap = 10_000

// session is one open session of a bidder: [start, end) with end = its
// last bid + the gap.
type session struct{ start, end, n int64 }

// bidderSessions are a bidder's open sessions, sorted by start, disjoint
// and not touching.
type bidderSessions struct {
	s      []session
	queued int64 // end of the bidder's live entry in the timer heap; 0 if none
}

// timer is an entry of the timer heap: a bidder to look at when the
// watermark reaches end.
type timer struct{ end, bidder int64 }

// timers is a binary min-heap of timers by end.
type timers []timer

func (h *timers) push(t timer) {
	*h = append(*h, t)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].end <= a[i].end {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *timers) pop() timer {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a[l].end < a[m].end {
			m = l
		}
		if r := l + 1; r < n && a[r].end < a[m].end {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// Q11 is Nexmark q11, user sessions: the number of bids per bidder in
// session windows with a 10 s gap. A bid at t opens [t, t+10 s); sessions
// of a bidder that overlap or touch merge (bids at most 10 s apart share a
// session), so a session is [first bid, last bid + 10 s). One row per
// session, emitted when the watermark reaches its end.
func Q11(ctx context.Context, cfg Config, emit func(*WindowCount)) (Stats, error) {
	r, err := open(cfg, "event_type", "date_time", "bid.bidder")
	if err != nil {
		return Stats{}, err
	}
	et, dt, bi := r.slot("event_type"), r.slot("date_time"), r.slot("bid.bidder")
	var st Stats
	bidders := map[int64]*bidderSessions{}
	var spare []*bidderSessions
	var h timers
	var out WindowCount
	maxT := int64(-1 << 63)
	fire := func(wm int64) {
		for len(h) > 0 && h[0].end <= wm {
			t := h.pop()
			b := bidders[t.bidder]
			if b == nil || b.queued != t.end {
				continue // superseded by an earlier entry
			}
			kept := b.s[:0]
			for _, s := range b.s {
				if s.end <= wm {
					out = WindowCount{Start: s.start, End: s.end, Key: t.bidder, Count: s.n}
					st.Rows++
					if emit != nil {
						emit(&out)
					}
				} else {
					kept = append(kept, s)
				}
			}
			b.s = kept
			if len(kept) == 0 {
				delete(bidders, t.bidder)
				b.queued = 0
				spare = append(spare, b)
				continue
			}
			b.queued = kept[0].end
			for _, s := range kept[1:] {
				b.queued = min(b.queued, s.end)
			}
			h.push(timer{b.queued, t.bidder})
		}
	}
	wm := int64(-1 << 63)
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
				bidder := row.I[bi]
				b := bidders[bidder]
				if b == nil {
					if n := len(spare); n > 0 {
						b, spare = spare[n-1], spare[:n-1]
					} else {
						b = &bidderSessions{}
					}
					bidders[bidder] = b
				}
				addBid(b, t, wm)
				if end := minEnd(b.s); len(b.s) > 0 && (b.queued == 0 || end < b.queued) {
					b.queued = end
					h.push(timer{end, bidder})
				}
				if len(b.s) == 0 {
					delete(bidders, bidder)
					spare = append(spare, b)
				}
			}
			if t > maxT {
				maxT = t
				wm = maxT - cfg.OutOfOrdernessMs
				fire(wm)
			}
		}
	}
	fire(inf)
	st.Events = r.events
	return st, nil
}

// addBid adds a bid at t to a bidder's sessions: it extends or merges the
// sessions it overlaps or touches, or opens one. A bid whose merged
// session would already have ended at watermark wm is too late and
// dropped (the engine's rule with allowed_lateness 0).
func addBid(b *bidderSessions, t, wm int64) {
	lo, hi := t, t+q11Gap // the bid's proto-session [t, t+gap)
	// The common case: the bid falls into or extends the newest session.
	if n := len(b.s); n > 0 {
		s := &b.s[n-1]
		if s.start <= t && t <= s.end {
			if hi > s.end {
				s.end = hi
			}
			s.n++
			return
		}
	}
	merged := session{start: lo, end: hi, n: 1}
	var kept []session
	for _, s := range b.s {
		if s.start <= hi && s.end >= lo { // overlap or touch
			merged.start = min(merged.start, s.start)
			merged.end = max(merged.end, s.end)
			merged.n += s.n
			continue
		}
		kept = append(kept, s)
	}
	if merged.end <= wm {
		return // too late
	}
	// Insert merged in start order.
	out := b.s[:0]
	placed := false
	for _, s := range kept {
		if !placed && merged.start < s.start {
			out = append(out, merged)
			placed = true
		}
		out = append(out, s)
	}
	if !placed {
		out = append(out, merged)
	}
	b.s = out
}

func minEnd(s []session) int64 {
	if len(s) == 0 {
		return 0
	}
	m := s[0].end
	for _, x := range s[1:] {
		m = min(m, x.end)
	}
	return m
}
