package join

import (
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// The window join (package doc). Each row enters the windows of its own
// event time; within a window every left row of a key pairs with every
// right row of the key. W is min(W_left, W_right).
//
//   - A window fires when W reaches its end: in modes Update and Retract
//     its rows come out then (inner: the pairs; left and full: the pairs
//     and the unmatched rows padded with nulls; semi: the left rows with a
//     match; anti: those without).
//   - Until W reaches end + allowed lateness it still takes late rows; in
//     Update and Retract a late row's effect comes out at once (new pairs;
//     a padded, semi or anti row that its arrival changes is replaced,
//     emitted or retracted).
//   - At end + allowed lateness the window closes (mode Final emits its
//     rows then) and is freed; a row all of whose windows have closed is
//     too late.

// pane is one window's rows of a key group.
type pane struct {
	win   window.Window
	fired bool // its rows came out (modes Update and Retract)
	keys  map[string]int32
	ents  []paneKey
}

// paneKey is one key's rows in a window, each side in arrival order.
type paneKey struct {
	key  string
	rows [2][]rec
}

// pane returns g's pane of window w, made when absent; the panes stay in
// (end, start) order.
func (g *group) pane(w window.Window) *pane {
	i, ok := slices.BinarySearchFunc(g.panes, w, func(p *pane, w window.Window) int {
		switch {
		case p.win.End != w.End:
			return cmp64(p.win.End, w.End)
		case p.win.Start != w.Start:
			return cmp64(p.win.Start, w.Start)
		}
		return 0
	})
	if ok {
		return g.panes[i]
	}
	p := &pane{win: w, keys: map[string]int32{}}
	g.panes = slices.Insert(g.panes, i, p)
	return p
}

func (p *pane) key(k []byte) *paneKey {
	if i, ok := p.keys[string(k)]; ok {
		return &p.ents[i]
	}
	p.ents = append(p.ents, paneKey{key: string(k)})
	i := int32(len(p.ents) - 1)
	p.keys[p.ents[i].key] = i
	return &p.ents[i]
}

// windowRow adds a row of side s to its open windows and emits what its
// arrival changes in fired ones. It reports whether any window took it.
func (o *Operator) windowRow(g *group, s int, key []byte, ts int64, seq uint64, r *row.Row, fields []row.Field) bool {
	w := min(o.wm[L], o.wm[R])
	o.wins = o.cfg.Assigner.Assign(ts, o.wins[:0])
	took := false
	for _, win := range o.wins {
		if w >= add(win.End, o.cfg.Lateness) {
			continue // closed
		}
		took = true
		p := g.pane(win)
		pk := p.key(key)
		x := rec{ts: ts, slot: g.store[s].put(r, fields, seq)}
		if p.fired && o.cfg.Mode != operator.Final {
			o.windowLate(g, p, pk, s, &x)
		}
		pk.rows[s] = append(pk.rows[s], x)
	}
	return took
}

// windowLate emits the effect of x (side s), arriving in fired window p,
// before it is added to the key's rows pk.
func (o *Operator) windowLate(g *group, p *pane, pk *paneKey, s int, x *rec) {
	win := p.win
	mine, others := pk.rows[s], pk.rows[1-s]
	k := o.cfg.Kind
	switch k {
	case Inner, Left, Full:
		for i := range others {
			y := &others[i]
			l, r := pair(s, x, y)
			pts := max(x.ts, y.ts)
			if o.outer(1-s) && len(mine) == 0 {
				// y had no match in the window: its padded row is replaced.
				pl, pr := padRow(1-s, y)
				o.replace(g, pl, pr, l, r, y.ts, pts, win, nil)
				continue
			}
			o.emit(g, changelog.Insert, l, r, pts, win, true, nil)
		}
		if len(others) == 0 && o.outer(s) {
			l, r := padRow(s, x)
			o.emit(g, changelog.Insert, l, r, x.ts, win, false, nil)
		}
	case Semi, Anti:
		if s == L {
			if (len(others) > 0) == (k == Semi) {
				o.emit(g, changelog.Insert, x, nil, x.ts, win, k == Semi, nil)
			}
			return
		}
		if len(mine) > 0 {
			return // the left rows had a match already
		}
		for i := range others {
			l := &others[i]
			if k == Semi {
				o.emit(g, changelog.Insert, l, nil, l.ts, win, true, nil)
			} else {
				o.emit(g, changelog.Delete, l, nil, l.ts, win, false, nil)
			}
		}
	}
}

// windowFire emits window p's rows (final: at its close, in mode Final).
func (o *Operator) windowFire(g *group, p *pane, final bool) {
	win := p.win
	k := o.cfg.Kind
	for i := range p.ents {
		e := &p.ents[i]
		ls, rs := e.rows[L], e.rows[R]
		for j := range ls {
			l := &ls[j]
			ord := Order{A: win.End, B: win.Start, C: g.store[L].seq(l.slot) << 1}
			switch k {
			case Inner, Left, Full:
				for m := range rs {
					r := &rs[m]
					// A pair is never taken back: inputs are insert-only.
					o.emit(g, changelog.Insert, l, r, max(l.ts, r.ts), win, true, &ord)
				}
				if len(rs) == 0 && k != Inner {
					o.emit(g, changelog.Insert, l, nil, l.ts, win, final, &ord)
				}
			case Semi:
				if len(rs) > 0 {
					o.emit(g, changelog.Insert, l, nil, l.ts, win, true, &ord)
				}
			case Anti:
				if len(rs) == 0 {
					o.emit(g, changelog.Insert, l, nil, l.ts, win, final, &ord)
				}
			}
		}
		if k == Full && len(ls) == 0 {
			for m := range rs {
				r := &rs[m]
				ord := Order{A: win.End, B: win.Start, C: g.store[R].seq(r.slot)<<1 | 1}
				o.emit(g, changelog.Insert, nil, r, r.ts, win, final, &ord)
			}
		}
	}
}

// windowAdvance fires and closes g's windows at the join's watermark.
func (o *Operator) windowAdvance(g *group) bool {
	w := min(o.wm[L], o.wm[R])
	did := false
	n := 0 // panes closed: a prefix? not always (lateness), so compact
	for _, p := range g.panes {
		if p.win.End > w {
			break
		}
		did = true
		closing := w >= add(p.win.End, o.cfg.Lateness)
		switch {
		case o.cfg.Mode == operator.Final:
			if closing {
				o.windowFire(g, p, true)
			}
		case !p.fired:
			o.windowFire(g, p, closing)
			p.fired = true
		}
		if closing {
			for i := range p.ents {
				for s := range 2 {
					for _, x := range p.ents[i].rows[s] {
						g.store[s].del(x.slot)
					}
				}
			}
			n++
		}
	}
	if n > 0 {
		keep := g.panes[:0]
		for _, p := range g.panes {
			if !(p.win.End <= w && w >= add(p.win.End, o.cfg.Lateness)) {
				keep = append(keep, p)
			}
		}
		clear(g.panes[len(keep):])
		g.panes = keep
	}
	return did
}
