package join

import (
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
)

// The temporal join (package doc): rows[L] are the probes, rows[R] the
// versions of a key, both in (ts, arrival) order. A probe p takes the last
// version v with (v.ts, arrival) ≤ (p.ts, ∞): the newest version time at or
// before p.ts, and among versions of one time the last to arrive.
//
//   - A probe waits until the right watermark passes its event time
//     (W_right > p.ts: every version at or before it has arrived, or is
//     late); then, in modes Update and Retract, its row comes out.
//   - A version arriving late (behind the right watermark, within the
//     allowed lateness) corrects the rows of the probes it now applies to.
//   - A probe is final once W_right > p.ts + allowed lateness (no version
//     at or before it can be accepted any more): mode Final emits it then;
//     it is freed.
//   - Versions: per key, the newest version at or below H =
//     min(W_left, W_right) − allowed lateness, and at or below the key's
//     oldest probe, is the anchor; older ones are dropped (no probe
//     accepted from then on, and no probe held, is before the anchor). A
//     key whose only version is a tombstone at or below H, and that holds
//     no probe, is dropped whole.

// tomb reports whether version v is a tombstone.
func (o *Operator) tomb(g *group, v *rec) bool {
	if o.cfg.TombCol < 0 {
		return false
	}
	b, ok := g.store[R].getInt(v.slot, o.cfg.TombCol)
	return ok && b != 0
}

// versionAt returns the index of the version a probe at ts takes, −1 for
// none.
func versionAt(vs []rec, ts int64) int {
	return lowerBound(vs, add(ts, 1)) - 1
}

// probeRow returns the left and right rows of probe p's result with the
// version at index vi (−1 none), and whether there is a row.
func (o *Operator) probeRow(g *group, p *rec, vs []rec, vi int) (l, r *rec, ok bool) {
	if vi >= 0 && !o.tomb(g, &vs[vi]) {
		return p, &vs[vi], true
	}
	if o.cfg.Kind == Left {
		return p, nil, true
	}
	return nil, nil, false
}

func (o *Operator) temporalRow(g *group, s int, key []byte, ts int64, seq uint64, r *row.Row, fields []row.Field) {
	ki, ks := g.key(key)
	x := rec{ts: ts, slot: g.store[s].put(r, fields, seq)}
	final := o.cfg.Mode == operator.Final
	if s == L {
		rows, idx := g.insert(ks.rows[L], x)
		ks.rows[L] = rows
		p := &rows[idx]
		if o.wm[R] > ts && !final {
			if l, rr, ok := o.probeRow(g, p, ks.rows[R], versionAt(ks.rows[R], ts)); ok {
				o.emit(g, changelog.Insert, l, rr, ts, noWindow, false, nil)
			}
			p.n |= resolved
		}
		if idx < int(ks.pad[L]) {
			ks.pad[L]++ // resolved above: W_right is past it
		}
		if o.wm[R] > add(ts, o.cfg.Lateness) {
			// Final already (no version at or before it can be accepted
			// any more): out at once in mode Final (in the others, out
			// above), and freed rather than held until the next advance.
			if final {
				if l, rr, ok := o.probeRow(g, p, ks.rows[R], versionAt(ks.rows[R], ts)); ok {
					o.emit(g, changelog.Insert, l, rr, ts, noWindow, true, nil)
				}
			}
			o.dropProbe(g, ks, idx)
		}
		o.temporalPrune(g, ki)
		if ks.live {
			o.temporalSchedule(g, ki)
		}
		return
	}
	vs, k := g.insert(ks.rows[R], x)
	ks.rows[R] = vs
	if !final {
		// The probes in [v.ts, next version's time) that had a row now
		// take v: the previous version (k − 1) or none was theirs.
		next := int64(Inf)
		if k+1 < len(vs) {
			next = vs[k+1].ts
		}
		probes := ks.rows[L]
		for j := lowerBound(probes, ts); j < len(probes) && probes[j].ts < next; j++ {
			p := &probes[j]
			if p.n&resolved == 0 {
				continue
			}
			al, ar, aok := o.probeRow(g, p, vs, k-1)
			bl, br, bok := o.probeRow(g, p, vs, k)
			switch {
			case aok && bok:
				if ar == nil && br == nil {
					continue // nulls either way
				}
				o.replace(g, al, ar, bl, br, p.ts, p.ts, noWindow, nil)
			case aok:
				o.emit(g, changelog.Delete, al, ar, p.ts, noWindow, false, nil)
			case bok:
				o.emit(g, changelog.Insert, bl, br, p.ts, noWindow, false, nil)
			}
		}
	}
	o.temporalPrune(g, ki)
	if ks.live {
		o.temporalSchedule(g, ki)
	}
}

// dropProbe frees probe j of ks.
func (o *Operator) dropProbe(g *group, ks *keyState, j int) {
	g.store[L].del(ks.rows[L][j].slot)
	ks.rows[L] = deleteAt(ks.rows[L], j)
	if j < int(ks.pad[L]) {
		ks.pad[L]--
	}
}

func deleteAt(rows []rec, j int) []rec {
	copy(rows[j:], rows[j+1:])
	rows[len(rows)-1] = rec{}
	return rows[:len(rows)-1]
}

// temporalSchedule makes key i due on the right watermark when its next
// probe resolves (Update, Retract) or becomes final, and on the least
// watermark when its versions can be pruned.
func (o *Operator) temporalSchedule(g *group, i int32) {
	ks := &g.ks[i]
	probes, vs := ks.rows[L], ks.rows[R]
	if len(probes) > 0 {
		t := add(probes[0].ts, o.cfg.Lateness+1)
		if o.cfg.Mode != operator.Final && int(ks.pad[L]) < len(probes) {
			t = min(t, add(probes[ks.pad[L]].ts, 1))
		}
		g.schedule(i, clockR, t)
	}
	// Pruning waits for the least watermark — and for the key's oldest
	// probe, whose freeing prunes again (temporalAdvance).
	v := -1
	switch {
	case len(vs) >= 2:
		v = 1
	case len(vs) == 1 && o.tomb(g, &vs[0]):
		v = 0
	}
	if v >= 0 && (len(probes) == 0 || probes[0].ts >= vs[v].ts) {
		g.schedule(i, clockMin, add(vs[v].ts, o.cfg.Lateness))
	}
}

// temporalPrune drops the versions of key i before its anchor (and a key
// left with a lone tombstone and no probe).
func (o *Operator) temporalPrune(g *group, ki int32) {
	ks := &g.ks[ki]
	h := sub(min(o.wm[L], o.wm[R]), o.cfg.Lateness)
	if len(ks.rows[L]) > 0 {
		h = min(h, ks.rows[L][0].ts)
	}
	vs := ks.rows[R]
	a := versionAt(vs, h) // the anchor
	if a > 0 {
		for j := range a {
			o.forgetVersion(g, ks, &vs[j])
			g.store[R].del(vs[j].slot)
		}
		copy(vs, vs[a:])
		clear(vs[len(vs)-a:])
		vs = vs[:len(vs)-a]
		ks.rows[R] = vs
	}
	if len(vs) == 1 && len(ks.rows[L]) == 0 && vs[0].ts <= h && o.tomb(g, &vs[0]) {
		o.forgetVersion(g, ks, &vs[0])
		g.store[R].del(vs[0].slot)
		ks.rows[R] = vs[:0]
	}
	if len(ks.rows[L]) == 0 && len(ks.rows[R]) == 0 {
		g.dropKey(ki)
	}
}

func (o *Operator) temporalAdvance(g *group) bool {
	if min(o.wm[L], o.wm[R]) == Inf {
		// The end of both inputs: every probe is final, and no probe will
		// ever need a version again.
		did := false
		for i := range g.ks {
			ks := &g.ks[i]
			if !ks.live {
				continue
			}
			did = true
			o.temporalProbes(g, int32(i))
			for _, v := range ks.rows[R] {
				g.store[R].del(v.slot)
			}
			ks.rows[R] = nil
			g.dropKey(int32(i))
		}
		return did
	}
	var due []int32
	due = g.due(clockR, o.wm[R], due)
	did := len(due) > 0
	for _, ki := range due {
		o.temporalProbes(g, ki)
		o.temporalPrune(g, ki)
		if g.ks[ki].live {
			o.temporalSchedule(g, ki)
		}
	}
	due = g.due(clockMin, min(o.wm[L], o.wm[R]), due[:0])
	did = did || len(due) > 0
	for _, ki := range due {
		if !g.ks[ki].live {
			continue // dropped above
		}
		o.temporalPrune(g, ki)
		if g.ks[ki].live {
			o.temporalSchedule(g, ki)
		}
	}
	return did
}

// temporalProbes resolves the probes of key i the right watermark has
// passed and frees the final ones.
func (o *Operator) temporalProbes(g *group, ki int32) {
	ks := &g.ks[ki]
	w := o.wm[R]
	final := o.cfg.Mode == operator.Final
	if !final {
		probes := ks.rows[L]
		for j := int(ks.pad[L]); j < len(probes) && probes[j].ts < w; j++ {
			p := &probes[j]
			if p.n&resolved == 0 {
				if l, r, ok := o.probeRow(g, p, ks.rows[R], versionAt(ks.rows[R], p.ts)); ok {
					ord := Order{A: p.ts, C: g.store[L].seq(p.slot) << 1}
					o.emit(g, changelog.Insert, l, r, p.ts, noWindow, false, &ord)
				}
				p.n |= resolved
			}
			ks.pad[L] = int32(j + 1)
		}
	}
	n := 0
	probes := ks.rows[L]
	for n < len(probes) && add(probes[n].ts, o.cfg.Lateness) < w {
		p := &probes[n]
		if final {
			if l, r, ok := o.probeRow(g, p, ks.rows[R], versionAt(ks.rows[R], p.ts)); ok {
				ord := Order{A: p.ts, C: g.store[L].seq(p.slot) << 1}
				o.emit(g, changelog.Insert, l, r, p.ts, noWindow, true, &ord)
			}
		}
		g.store[L].del(p.slot)
		n++
	}
	if n > 0 {
		copy(probes, probes[n:])
		clear(probes[len(probes)-n:])
		ks.rows[L] = probes[:len(probes)-n]
		ks.pad[L] = max(0, ks.pad[L]-int32(n))
	}
}
