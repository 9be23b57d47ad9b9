package join

import (
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// The interval join (package doc). A left row l matches the right rows r
// of its key with Lower ≤ r.ts − l.ts ≤ Upper (with an absolute upper
// bound: r.ts ≤ l's bound, which lies within Upper of l.ts). The last
// event time of the other side a row can match is its lastMatch: l.ts +
// Upper (or l's bound) for a left row, r.ts − Lower for a right row.
//
//   - A row pairs with the buffered rows of the other side at once (pairs
//     never change: inputs are insert-only).
//   - An outer side's row without a match gets its padded row once the
//     other side's watermark passes its lastMatch (mode Final: passes
//     lastMatch + allowed lateness, when no match can come any more); a
//     later match (a late row within the lateness) replaces it.
//   - A row is freed once the other side's watermark passes lastMatch +
//     allowed lateness: no row accepted from then on can match it.

var noWindow window.Window

func (o *Operator) outer(s int) bool {
	switch o.cfg.Kind {
	case Full:
		return true
	case Left:
		return s == L
	}
	return false
}

// lastMatch returns the last event time of the other side that x (of
// side s) can match.
func (o *Operator) lastMatch(g *group, s int, x *rec) int64 {
	if s == R {
		return add(x.ts, -o.cfg.Lower)
	}
	if o.cfg.UpperCol >= 0 {
		if up, ok := g.store[L].getInt(x.slot, o.cfg.UpperCol); ok {
			return min(up, add(x.ts, o.cfg.Upper))
		}
		return x.ts - 1 // no bound: matches nothing (the task quarantines such rows)
	}
	return add(x.ts, o.cfg.Upper)
}

// expireTime is when (the other side's watermark) x is freed: once no
// row accepted from then on (event time ≥ that watermark − the allowed
// lateness) can match it. With an absolute upper bound a left row's
// expiry is its own bound's, not l.ts + max_span (q4's auctions last
// milliseconds against a span of seconds), so those rows are not freed in
// event-time order (intervalKey filters them).
func (o *Operator) expireTime(g *group, s int, x *rec) int64 {
	return add(o.lastMatch(g, s, x), o.cfg.Lateness+1)
}

// padTime is when (the other side's watermark) x's padded row is due.
func (o *Operator) padTime(g *group, s int, x *rec) int64 {
	t := add(o.lastMatch(g, s, x), 1)
	if o.cfg.Mode == operator.Final {
		t = add(t, o.cfg.Lateness)
	}
	return t
}

func decided(x *rec) bool { return x.n&cntMask > 0 || x.n&padded != 0 }

// pair orders the rows of sides s and the other as (left, right).
func pair(s int, x, y *rec) (l, r *rec) {
	if s == L {
		return x, y
	}
	return y, x
}

// padRow returns the left and right rows of x's padded row.
func padRow(s int, x *rec) (l, r *rec) {
	if s == L {
		return x, nil
	}
	return nil, x
}

func (o *Operator) intervalRow(g *group, s int, key []byte, ts int64, seq uint64, r *row.Row, fields []row.Field) {
	ki, ks := g.key(key)
	x := rec{ts: ts, slot: g.store[s].put(r, fields, seq)}
	os := 1 - s
	others := ks.rows[os]
	var lo, hi int64
	if s == L {
		lo, hi = add(ts, o.cfg.Lower), o.lastMatch(g, L, &x)
	} else {
		lo, hi = add(ts, -o.cfg.Upper), add(ts, -o.cfg.Lower)
	}
	abs := o.cfg.UpperCol >= 0
	for i := lowerBound(others, lo); i < len(others) && others[i].ts <= hi; i++ {
		y := &others[i]
		if abs && s == R && o.lastMatch(g, L, y) < ts {
			continue // beyond y's own bound
		}
		l, rr := pair(s, &x, y)
		pts := max(x.ts, y.ts)
		before := y.n
		if o.outer(os) && y.n&padded != 0 {
			// y's padded row had come out: the pair replaces it.
			pl, pr := padRow(os, y)
			o.replace(g, pl, pr, l, rr, y.ts, pts, noWindow, nil)
			y.n &^= padded
		} else {
			o.emit(g, changelog.Insert, l, rr, pts, noWindow, true, nil)
		}
		y.n++
		x.n++
		g.restate(os, y, before)
	}
	rows, idx := g.insert(ks.rows[s], x)
	ks.rows[s] = rows
	xp := &rows[idx]
	if o.outer(s) {
		if !decided(xp) && o.wm[os] >= o.padTime(g, s, xp) {
			l, rr := padRow(s, xp)
			o.emit(g, changelog.Insert, l, rr, xp.ts, noWindow, o.cfg.Mode == operator.Final, nil)
			xp.n |= padded
		}
		if !abs && idx < int(ks.pad[s]) {
			ks.pad[s]++ // it was due: decided above
		}
	}
	if o.wm[os] != NoWatermark && o.expireTime(g, s, xp) <= o.wm[os] {
		// Already past its last match (a late row within the lateness
		// whose matches came above): not kept. Its padded row, if any,
		// was due (padTime ≤ expireTime), so it is decided.
		g.store[s].del(xp.slot)
		ks.rows[s] = slices.Delete(rows, idx, idx+1)
		if o.outer(s) && !abs && idx < int(ks.pad[s]) {
			ks.pad[s]--
		}
		if len(ks.rows[L]) == 0 && len(ks.rows[R]) == 0 {
			g.dropKey(ki)
			return
		}
	}
	o.intervalSchedule(g, ki, s)
	if len(others) > 0 {
		o.intervalSchedule(g, ki, os)
	}
}

// intervalSchedule makes key i due (on the clock of the other side of s)
// at the next time one of its side-s rows needs attention: a padded row
// due, or the oldest row to free.
func (o *Operator) intervalSchedule(g *group, i int32, s int) {
	ks := &g.ks[i]
	rows := ks.rows[s]
	if len(rows) == 0 {
		return
	}
	t := o.expireTime(g, s, &rows[0])
	if s == L && o.cfg.UpperCol >= 0 {
		for j := 1; j < len(rows); j++ {
			t = min(t, o.expireTime(g, s, &rows[j]))
		}
	}
	if o.outer(s) {
		if o.cfg.UpperCol >= 0 && s == L {
			for j := range rows {
				if !decided(&rows[j]) {
					t = min(t, o.padTime(g, s, &rows[j]))
				}
			}
		} else {
			for j := int(ks.pad[s]); j < len(rows); j++ {
				if !decided(&rows[j]) {
					t = min(t, o.padTime(g, s, &rows[j]))
					break
				}
			}
		}
	}
	g.schedule(i, 1-s, t)
}

// intervalAdvance handles the keys due at the new watermarks. It reports
// whether state changed.
func (o *Operator) intervalAdvance(g *group) bool {
	did := false
	var due []int32
	for s := range 2 {
		// Side s's rows wait on the other side's watermark (clock 1 − s).
		w := o.wm[1-s]
		due = g.due(1-s, w, due[:0])
		for _, ki := range due {
			o.intervalKey(g, ki, s, w)
			did = true
		}
	}
	return did
}

// intervalKey emits the due padded rows of key i's side-s rows and frees
// the rows past their last match, at the other side's watermark w.
func (o *Operator) intervalKey(g *group, ki int32, s int, w int64) {
	ks := &g.ks[ki]
	rows := ks.rows[s]
	abs := o.cfg.UpperCol >= 0 && s == L
	if o.outer(s) {
		start := int(ks.pad[s])
		if abs {
			start = 0
		}
		for j := start; j < len(rows); j++ {
			x := &rows[j]
			if !abs && o.padTime(g, s, x) > w {
				break
			}
			if !decided(x) && o.padTime(g, s, x) <= w {
				l, r := padRow(s, x)
				ord := Order{A: o.lastMatch(g, s, x), B: x.ts, C: g.store[s].seq(x.slot)<<1 | uint64(s)}
				o.emit(g, changelog.Insert, l, r, x.ts, noWindow, o.cfg.Mode == operator.Final, &ord)
				before := x.n
				x.n |= padded
				g.restate(s, x, before)
			}
			if !abs && decided(x) && j == int(ks.pad[s]) {
				ks.pad[s]++
			}
		}
	}
	// Free the rows no accepted row can match any more: a prefix, since
	// the free time grows with the event time — except for left rows
	// with their own upper bounds, which are filtered.
	n := 0
	if abs {
		keep := rows[:0]
		for j := range rows {
			if o.expireTime(g, s, &rows[j]) <= w {
				g.store[s].del(rows[j].slot)
				n++
				continue
			}
			keep = append(keep, rows[j])
		}
		clear(rows[len(keep):])
		rows = keep
	} else {
		for n < len(rows) && o.expireTime(g, s, &rows[n]) <= w {
			g.store[s].del(rows[n].slot)
			n++
		}
		if n > 0 {
			copy(rows, rows[n:])
			clear(rows[len(rows)-n:])
			rows = rows[:len(rows)-n]
		}
	}
	if n > 0 {
		if cap(rows) > 16 && len(rows) < cap(rows)/4 {
			rows = append([]rec(nil), rows...)
		}
		ks.rows[s] = rows
		ks.pad[s] = max(0, ks.pad[s]-int32(n))
	}
	if len(ks.rows[L]) == 0 && len(ks.rows[R]) == 0 {
		g.dropKey(ki)
		return
	}
	o.intervalSchedule(g, ki, s)
}
