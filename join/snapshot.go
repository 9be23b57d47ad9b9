package join

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// A key group's section (package state's encoding), version 1:
//
//	Byte(1) Byte(type) Uint(#keys)
//	  per key, by encoded key: String(key) Uint(pad left) Uint(pad right)
//	    per side: Uint(#rows) per row: Int(ts) Uint(seq) Uint(n)
//	      Value per kept column
//	Uint(#windows)  (window joins; 0 otherwise)
//	  per window, by (end, start): Int(start) Int(end) Bool(fired) Uint(#keys)
//	    per key, by encoded key: String(key) per side: Uint(#rows) per row:
//	      Int(ts) Uint(seq) Value per kept column
//
// Timers are not stored: Restore schedules every key again. Rows are
// stored in their order (event time for keys, arrival within a window).
// seq is the row's arrival step where the side keeps it (keepsSeq); an
// interval join's inner side keeps none and writes the row's position in
// its key's list, 1, 2, …: Restore reads only their order there.

// SnapshotGroup appends key group kg's section to e.
func (o *Operator) SnapshotGroup(kg int, e *state.Encoder) {
	if o.cold != nil {
		o.snapshotCold(kg-o.cfg.Groups.Lo, e)
		return
	}
	g := o.groups[kg-o.cfg.Groups.Lo]
	e.Byte(1)
	e.Byte(byte(o.cfg.Type))
	keys := o.keyOrder[:0]
	for i := range g.ks {
		if g.ks[i].live {
			keys = append(keys, int32(i))
		}
	}
	slices.SortFunc(keys, func(a, b int32) int { return strings.Compare(g.ks[a].key, g.ks[b].key) })
	o.keyOrder = keys
	e.Uint(uint64(len(keys)))
	for _, ki := range keys {
		ks := &g.ks[ki]
		e.String(ks.key)
		e.Uint(uint64(ks.pad[L]))
		e.Uint(uint64(ks.pad[R]))
		for s := range 2 {
			e.Uint(uint64(len(ks.rows[s])))
			for i, x := range ks.rows[s] {
				e.Int(x.ts)
				e.Uint(o.snapSeq(g, s, x.slot, i))
				e.Uint(uint64(x.n))
				o.putValues(e, g, s, x.slot)
			}
		}
	}
	e.Uint(uint64(len(g.panes)))
	for _, p := range g.panes {
		e.Int(p.win.Start)
		e.Int(p.win.End)
		e.Bool(p.fired)
		keys := slices.Sorted(maps.Keys(p.keys))
		e.Uint(uint64(len(keys)))
		for _, k := range keys {
			pk := &p.ents[p.keys[k]]
			e.String(k)
			for s := range 2 {
				e.Uint(uint64(len(pk.rows[s])))
				for i, x := range pk.rows[s] {
					e.Int(x.ts)
					e.Uint(o.snapSeq(g, s, x.slot, i))
					o.putValues(e, g, s, x.slot)
				}
			}
		}
	}
}

// snapSeq is the seq written for the row in slot, the i-th of its list.
func (o *Operator) snapSeq(g *group, s int, slot int32, i int) uint64 {
	if g.store[s].keepSeq {
		return g.store[s].seq(slot)
	}
	return uint64(i + 1)
}

func (o *Operator) putValues(e *state.Encoder, g *group, s int, slot int32) {
	for c := range o.cfg.Keep[s] {
		e.Value(g.store[s].get(slot, c))
	}
}

// Globals is the part of a join's state outside its key groups: the
// sides' watermarks (the same in every task) and the rows emitted (a sum
// over the tasks).
type Globals struct {
	Watermarks [2]int64
	Now        int64
	Emitted    int64
}

// Globals returns the operator's globals.
func (o *Operator) Globals() Globals {
	return Globals{Watermarks: o.wm, Now: o.now, Emitted: o.emitted}
}

// RestoreGroups brings a new operator to a checkpoint: the sections of
// its key groups (each SnapshotGroup's output, any order; a key group
// absent is empty) and the globals. Errors name the key group, the key
// and what is wrong; the operator must then be discarded.
func (o *Operator) RestoreGroups(groups []int, sections [][]byte, gl Globals) error {
	if len(groups) != len(sections) {
		return fmt.Errorf("join: %d key groups, %d sections", len(groups), len(sections))
	}
	o.wm, o.now, o.emitted = gl.Watermarks, gl.Now, gl.Emitted
	for i, kg := range groups {
		if !o.cfg.Groups.Contains(kg) {
			return fmt.Errorf("join: section of key group %d given to the task of key groups [%d, %d)", kg, o.cfg.Groups.Lo, o.cfg.Groups.Hi)
		}
		d := state.NewDecoder(sections[i])
		g := o.newGroup()
		o.groups[kg-o.cfg.Groups.Lo] = g
		if o.cold != nil {
			g.cold, g.tier = &o.cold.g[kg-o.cfg.Groups.Lo], o.cold
		}
		var err error
		if o.cold != nil {
			if v := d.Section("join key group", 1, 2, 3); d.Err() == nil && v == 1 {
				err = errors.New("a section of the memory backend (its rows in the section), restored into the disk backend")
			} else if d.Err() == nil {
				err = o.restoreCold(kg-o.cfg.Groups.Lo, v, d)
			} else {
				err = d.Err()
			}
		} else {
			err = o.restoreGroup(kg, g, d)
		}
		if err != nil {
			return fmt.Errorf("join: key group %d: %w", kg, err)
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("join: key group %d: %d bytes after the section", kg, d.Remaining())
		}
	}
	return nil
}

func (o *Operator) restoreGroup(kg int, g *group, d *state.Decoder) error {
	if v := d.Section("join key group", 1, 2, 3); d.Err() == nil && v >= 2 {
		return errors.New("a section of the disk backend (its rows in the task's store), restored into the memory backend")
	}
	if t := Type(d.Byte()); d.Err() == nil && t != o.cfg.Type {
		return fmt.Errorf("a section of join type %d, the join is of type %d", t, o.cfg.Type)
	}
	vals := make([]row.Value, 0, MaxKept)
	var seqs []uint64 // of the list being read
	readRow := func(s int, withN bool) (rec, error) {
		x := rec{ts: d.Int()}
		seq := d.Uint()
		seqs = append(seqs, seq)
		if withN {
			n := d.Uint()
			if n > 1<<32-1 {
				d.Fail("row flags %d", n)
			}
			x.n = uint32(n)
		}
		vals = vals[:0]
		for range o.cfg.Keep[s] {
			vals = append(vals, d.Value())
		}
		if err := d.Err(); err != nil {
			return x, err
		}
		slot, err := g.store[s].putValues(vals, seq)
		if err != nil {
			return x, fmt.Errorf("side %d: %w", s, err)
		}
		x.slot = slot
		return x, nil
	}
	ordered := func(rows []rec) bool {
		for i := 1; i < len(rows); i++ {
			if rows[i].ts < rows[i-1].ts || rows[i].ts == rows[i-1].ts && seqs[i] <= seqs[i-1] {
				return false
			}
		}
		return true
	}
	n := d.Len(1<<31-1, 3)
	for range n {
		k := d.String()
		if d.Err() != nil {
			break
		}
		if owner := keygroup.OfKey([]byte(k), o.cfg.KeyGroups); owner != kg {
			return fmt.Errorf("key %q belongs to key group %d", k, owner)
		}
		if _, dup := g.keys.find(g.ks, []byte(k), keyHash([]byte(k))); dup {
			return fmt.Errorf("key %q listed twice", k)
		}
		ki, ks := g.key([]byte(k))
		pads := [2]int32{int32(d.Len(1<<31-1, 0)), int32(d.Len(1<<31-1, 0))}
		for s := range 2 {
			m := d.Len(1<<31-1, 3)
			seqs = seqs[:0]
			for range m {
				x, err := readRow(s, true)
				if err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
				ks.rows[s] = append(ks.rows[s], x)
			}
			if !ordered(ks.rows[s]) {
				return fmt.Errorf("key %q: side %d's rows are not in event-time order", k, s)
			}
			if int(pads[s]) > len(ks.rows[s]) {
				return fmt.Errorf("key %q: side %d: cursor %d beyond %d rows", k, s, pads[s], len(ks.rows[s]))
			}
		}
		ks.pad = pads
		switch o.cfg.Type {
		case Interval:
			o.intervalSchedule(g, ki, L)
			o.intervalSchedule(g, ki, R)
		case Temporal:
			o.temporalSchedule(g, ki)
		}
	}
	np := d.Len(1<<31-1, 3)
	for range np {
		win := struct{ s, e int64 }{d.Int(), d.Int()}
		fired := d.Bool()
		if d.Err() != nil {
			break
		}
		if o.cfg.Type != Window {
			return fmt.Errorf("a window in the section of a join without windows")
		}
		p := &pane{keys: map[string]int32{}, fired: fired}
		p.win.Start, p.win.End = win.s, win.e
		if len(g.panes) > 0 {
			last := g.panes[len(g.panes)-1].win
			if last.End > p.win.End || last.End == p.win.End && last.Start >= p.win.Start {
				return fmt.Errorf("windows out of order")
			}
		}
		g.panes = append(g.panes, p)
		m := d.Len(1<<31-1, 3)
		for range m {
			k := d.String()
			if d.Err() != nil {
				break
			}
			if owner := keygroup.OfKey([]byte(k), o.cfg.KeyGroups); owner != kg {
				return fmt.Errorf("key %q belongs to key group %d", k, owner)
			}
			if _, dup := p.keys[k]; dup {
				return fmt.Errorf("window [%d, %d): key %q listed twice", win.s, win.e, k)
			}
			pk := p.key([]byte(k))
			for s := range 2 {
				r := d.Len(1<<31-1, 2)
				seqs = seqs[:0]
				for range r {
					x, err := readRow(s, false)
					if err != nil {
						return fmt.Errorf("window [%d, %d): key %q: %w", win.s, win.e, k, err)
					}
					pk.rows[s] = append(pk.rows[s], x)
				}
			}
		}
	}
	return d.Err()
}
