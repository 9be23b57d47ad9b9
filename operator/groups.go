package operator

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// State per key group (docs/parallelism.md). A pipeline's keyed state is
// split into key groups; a task's operator holds the keys of the key
// groups the task owns. Checkpoints store each key group's share of the
// state on its own (SnapshotGroups), only for the key groups that changed
// since the previous checkpoint (Changed), and a restore assembles an
// operator from the shares of any set of key groups (RestoreGroups): the
// shares a checkpoint taken by 4 tasks wrote restore into 1 or 2.
//
// Key-group section format, version 4 (state encoding; RestoreGroups also
// reads version 2, which has no closed-session memory, and version 3,
// which has no slices: sliding windows restore from it as panes):
//
//	Byte(3)                             section version
//	shape (as in Snapshot)
//	Uint(key group)
//	Uint(#keys) per key, sorted by encoded key:
//	    String(encoded key) Uint(maxVer)
//	    [sessions: Bool(closed memory) [Int(largest closed end)]
//	               Uint(#sessions) per session, by start:
//	        Int(start) Int(end−start) Uint(rank) inst]
//	[panes: Uint(#panes) per pane holding the group's keys, in (end, start)
//	        order: Int(start) Int(end−start) Bool(fired)
//	        Uint(#entries) per entry, in the pane's order:
//	            Uint(index of its key in the list above) inst
//	        version 4: Uint(#slices) per slice holding the group's keys, by
//	        start: Int(start) Int(end−start) Uint(#entries) per entry, in
//	        arrival order: Uint(index of its key) Uint(rank) Byte(flags:
//	            1 live slot) Int(rows) Uint(birth) [live: each aggregate's
//	            slot state]]
//
//	inst: as in Snapshot without the slot number (slots are allocated on
//	      restore): Byte(flags) Int(rows) Uint(version) Int(version −
//	      emitted version) [Δ emitted window] [live: each aggregate's slot
//	      state; retract mode: the last emitted values]
//
// A slice entry's rank is its place among the group's slice entries in
// arrival order; a restore numbers the arrivals of all its key groups by
// (birth, section, rank) with OrderBirth, else by (section, rank), so the
// first-arrival order within a key group survives any reassignment (as
// panes keep their entries' order). A session's rank is its place among
// the group's sessions in creation order; a restore renumbers the sessions of all its key groups by (key
// group, rank), so creation order within a key group — the only order the
// canonical emission order uses — survives any reassignment. Panes keep
// their entries in arrival order within the key group. Keys are listed
// only when they hold state: keys held by a window or session, and (session
// windows) keys remembering where their closed sessions end and idle keys
// whose next session continues their versions. Equal
// states of a key group give equal bytes, whichever operator held it.

// groupSectionVersion is the key-group section's format version.
const groupSectionVersion = 4

// Globals is the part of an operator's state that is not per key group:
// the watermark and processing time every task's operator shares, and
// counters (which a runner sums over its tasks).
type Globals struct {
	Watermark, Now int64
	// ClosedThrough is the largest window end that has closed (the most
	// watermark − allowed lateness reached so far). A restore under a
	// larger allowed lateness keeps the windows closed through it closed;
	// under a smaller one, those the new lateness closes close too.
	// None (changelog.WatermarkNone) before any advance.
	ClosedThrough int64
	// Emitted, PartlyTooLate and SkippedWindows are Stats' counters.
	Emitted, PartlyTooLate, SkippedWindows int64
}

// Globals returns the operator's state outside its key groups.
func (o *Operator) Globals() Globals {
	return Globals{Watermark: o.wm, Now: o.now, ClosedThrough: o.closedThrough, Emitted: o.emitted, PartlyTooLate: o.partial, SkippedWindows: o.skippedWindows}
}

// markChanged records that key group g's state changed.
func (o *Operator) markChanged(g int) { o.changed[g>>6] |= 1 << (uint(g) & 63) }

// Changed appends to dst the key groups whose state changed since the last
// ClearChanged (or since New), in ascending order.
func (o *Operator) Changed(dst []int) []int {
	for w, bits := range o.changed {
		for bits != 0 {
			b := 0
			for bits&(1<<uint(b)) == 0 {
				b++
			}
			dst = append(dst, w*64+b)
			bits &^= 1 << uint(b)
		}
	}
	return dst
}

// ClearChanged forgets which key groups changed (after a checkpoint wrote
// them).
func (o *Operator) ClearChanged() { clear(o.changed) }

// MarkAllChanged marks every key group changed (a checkpoint that must
// write every key group, e.g. the first after a restore into another
// number of tasks).
func (o *Operator) MarkAllChanged() {
	for g := range o.cfg.KeyGroups {
		o.markChanged(g)
	}
}

// canonScratch holds the buffers of the canonical emission order.
type canonScratch struct {
	count []int32
	order []int32
}

// paneOrder returns the indexes of p's entries in canonical order: by key
// group, then by position (first arrival). The slice is valid until the
// next call.
func (o *Operator) paneOrder(p *pane) []int32 {
	c := &o.canon
	n := len(p.ents)
	c.order = slices.Grow(c.order[:0], n)[:n]
	sorted := true
	prev := uint16(0)
	for i := range p.ents {
		g := p.ents[i].group
		if g < prev {
			sorted = false
		}
		prev = g
	}
	if sorted {
		for i := range c.order {
			c.order[i] = int32(i)
		}
		return c.order
	}
	k := o.cfg.KeyGroups
	c.count = slices.Grow(c.count[:0], k+1)[:k+1]
	clear(c.count)
	for i := range p.ents {
		c.count[p.ents[i].group+1]++
	}
	for g := 1; g <= k; g++ {
		c.count[g] += c.count[g-1]
	}
	for i := range p.ents {
		g := p.ents[i].group
		c.order[c.count[g]] = int32(i)
		c.count[g]++
	}
	return c.order
}

// entriesInOrder calls f for each entry index of p, in canonical order when
// the operator is canonical, else in arrival order.
func (o *Operator) entriesInOrder(p *pane, f func(i int32)) {
	if o.cfg.Order != OrderGroup {
		for i := range p.ents {
			f(int32(i))
		}
		return
	}
	for _, i := range o.paneOrder(p) {
		f(i)
	}
}

// SnapshotGroups appends the state of each key group of groups (ascending)
// to the encoder enc returns for it, in the key-group section format
// above. It walks the operator's state once, whatever the number of
// groups. Preconditions as for Snapshot (between calls, after Drain).
func (o *Operator) SnapshotGroups(groups []int, enc func(g int) *state.Encoder) {
	if len(groups) == 0 {
		return
	}
	k := o.cfg.KeyGroups
	want := make([]int32, k) // group → index in groups + 1
	for i, g := range groups {
		want[g] = int32(i + 1)
	}
	sessions := o.cfg.Gap > 0
	// Keys per group, sorted by encoding.
	keys := make([][]uint32, len(groups))
	for id := range uint32(o.keys.ents.len()) {
		e := o.keys.ent(id)
		if want[e.group] == 0 || !o.keys.holds(uint32(id)) {
			continue
		}
		if e.refs <= 0 && !(sessions && e.maxVer > 0) {
			continue
		}
		w := want[e.group] - 1
		keys[w] = append(keys[w], uint32(id))
	}
	index := make(map[uint32]int) // key id → index in its group's list
	encs := make([]*state.Encoder, len(groups))
	for w, g := range groups {
		ids := keys[w]
		sort.Slice(ids, func(i, j int) bool { return o.keys.ent(ids[i]).enc < o.keys.ent(ids[j]).enc })
		e := enc(g)
		encs[w] = e
		e.Byte(groupSectionVersion)
		o.appendShape(e)
		e.Uint(uint64(g))
		e.Uint(uint64(len(ids)))
		var ranks map[*session]int
		if sessions {
			var all []*session
			for _, id := range ids {
				all = append(all, o.keys.ent(id).open()...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
			ranks = make(map[*session]int, len(all))
			for r, s := range all {
				ranks[s] = r
			}
		}
		for i, id := range ids {
			index[id] = i
			o.appendKeyEntry(e, o.keys.ent(id), sessions, ranks, false)
		}
	}
	if sessions {
		return
	}
	// Panes: per group, the panes holding its keys and their entries.
	counts := make([][]int, len(o.panes.list)) // pane → entries per wanted group
	held := make([]int, len(groups))           // group → panes holding it
	for pi, p := range o.panes.list {
		var c []int
		for i := range p.ents {
			g := p.ents[i].group
			if w := want[g]; w != 0 {
				if c == nil {
					c = make([]int, len(groups))
				}
				if c[w-1] == 0 {
					held[w-1]++
				}
				c[w-1]++
			}
		}
		counts[pi] = c
	}
	for w := range groups {
		encs[w].Uint(uint64(held[w]))
	}
	for pi, p := range o.panes.list {
		c := counts[pi]
		if c == nil {
			continue
		}
		for w, n := range c {
			if n == 0 {
				continue
			}
			e := encs[w]
			e.Int(p.w.Start)
			e.Int(p.w.End - p.w.Start)
			e.Bool(p.fired)
			e.Uint(uint64(n))
		}
		for i := range p.ents {
			in := &p.ents[i]
			w := want[in.group]
			if w == 0 {
				continue
			}
			e := encs[w-1]
			e.Uint(uint64(index[in.key]))
			o.appendInst(e, in, p.w, false, false)
		}
	}
	if o.sl.on {
		o.snapshotSliceGroups(groups, want, encs, index)
	}
}

// snapshotSliceGroups writes the slices part of the sections (version 4).
func (o *Operator) snapshotSliceGroups(groups []int, want []int32, encs []*state.Encoder, index map[uint32]int) {
	list := o.sl.list
	counts := make([][]int, len(list)) // slice → entries per wanted group
	held := make([]int, len(groups))
	seqs := make([][]uint64, len(groups)) // per group: its entries' arrival numbers, for the ranks
	for si, s := range list {
		var c []int
		for i := range s.ents.len() {
			if w := want[s.ents.at(i).group]; w != 0 {
				if c == nil {
					c = make([]int, len(groups))
				}
				if c[w-1] == 0 {
					held[w-1]++
				}
				c[w-1]++
				seqs[w-1] = append(seqs[w-1], s.ents.at(i).seq)
			}
		}
		counts[si] = c
	}
	for w := range groups {
		encs[w].Uint(uint64(held[w]))
		slices.Sort(seqs[w])
	}
	for si, s := range list {
		c := counts[si]
		if c == nil {
			continue
		}
		for w, n := range c {
			if n == 0 {
				continue
			}
			e := encs[w]
			e.Int(s.w.Start)
			e.Int(s.w.End - s.w.Start)
			e.Uint(uint64(n))
		}
		for i := range s.ents.len() {
			se := s.ents.at(i)
			w := want[se.group]
			if w == 0 {
				continue
			}
			e := encs[w-1]
			rank, _ := slices.BinarySearch(seqs[w-1], se.seq)
			e.Uint(uint64(index[se.key]))
			if o.spill != nil {
				// The disk backend keeps arrival numbers (slicespill.go):
				// its stored partials carry theirs.
				e.Uint(se.seq)
			} else {
				e.Uint(uint64(rank))
			}
			o.appendSliceEnt(e, se, false)
		}
	}
}

// RestoreGroups replaces the state of a fresh operator (from New, nothing
// processed) by the key-group sections in parts (each written by
// SnapshotGroups of an operator with the same Config, one key group each,
// no key group twice) and the globals g. The operator then emits exactly
// the rows an operator holding those key groups all along would emit on
// the same further input (for the rows of its keys: the versions, values,
// is_final, watermark_at and updated_at), whichever operators wrote the
// sections.
//
// Errors: ErrNotFresh; an error naming the section's key group for a
// section that is corrupt, of another configuration, of a key group given
// twice, or holding a key that does not hash into its key group. On error
// the operator must be discarded. Never panics on corrupt input.
func (o *Operator) RestoreGroups(parts [][]byte, g Globals) error {
	if o.slots.n != 0 || o.keys.ents.len() != 0 || len(o.panes.list) != 0 || o.sess.seq != 0 ||
		o.wm != changelog.WatermarkNone || o.emitted != 0 || len(o.out) != 0 {
		return ErrNotFresh
	}
	r := groupRestorer{o: o, panes: map[int64]*pane{}, seen: map[int]bool{}, slices: map[int64]*slice{}}
	for i, part := range parts {
		r.part, r.rank = i, 0
		d := state.NewDecoder(part)
		r.section(d)
		if err := d.Err(); err != nil {
			return fmt.Errorf("operator: key group section %d: %w", i, err)
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("operator: key group section %d: %d bytes after the section", i, d.Remaining())
		}
	}
	r.install(g)
	if r.err != nil {
		return fmt.Errorf("operator: state store: %w", r.err)
	}
	if o.spill != nil && !o.sl.on {
		if err := o.loadSpilled(); err != nil {
			return fmt.Errorf("operator: state store: %w", err)
		}
	}
	return nil
}

// groupRestorer assembles an operator from key-group sections.
type groupRestorer struct {
	o        *Operator
	panes    map[int64]*pane
	sessions []restoredSession
	seen     map[int]bool
	slices   map[int64]*slice
	arrivals []restoredArrival
	part     int // index of the section being read
	rank     int // the next pane entry's place in the section (sliced operators)
	err      error
}

// restoredArrival places a restored slice entry for the numbering of
// arrivals (install).
type restoredArrival struct {
	s             *slice // a slice entry's, or
	p             *pane  // a pane entry's
	i             int    // index in s.ents or p.ents
	section, rank int
	birth         uint64
	seq           uint64 // a slice entry's rank as written (the disk backend: its arrival number)
}

type restoredSession struct {
	s     *session
	group int
	rank  uint64
}

func (r *groupRestorer) section(d *state.Decoder) {
	o := r.o
	version := d.Section("operator key group", 2, groupSectionVersion)
	sh := restorer{o: o, d: d}
	sh.shape()
	g64 := d.Uint()
	if d.Err() != nil {
		return
	}
	if g64 >= uint64(o.cfg.KeyGroups) {
		d.Fail("key group %d out of range (the operator has %d)", g64, o.cfg.KeyGroups)
		return
	}
	g := int(g64)
	if r.seen[g] {
		d.Fail("key group %d given twice", g)
		return
	}
	r.seen[g] = true
	nkeys := d.Len(maxCount, 2)
	if d.Err() != nil {
		return
	}
	k := o.keys
	ids := make([]uint32, nkeys)
	sessions := o.cfg.Gap > 0
	prevEnc := ""
	for i := range nkeys {
		enc := d.String()
		maxVer := d.Uint()
		if d.Err() != nil {
			return
		}
		if maxVer > math.MaxUint32 {
			d.Fail("key group %d: key %d: version %d out of range", g, i, maxVer)
			return
		}
		if err := checkKey(enc, o.cfg.Key); err != nil {
			d.Fail("key group %d: key %d: %v", g, i, err)
			return
		}
		if i > 0 && enc <= prevEnc {
			d.Fail("key group %d: keys out of order", g)
			return
		}
		prevEnc = enc
		if kg := keygroup.OfKey([]byte(enc), o.cfg.KeyGroups); kg != g {
			d.Fail("key group %d: key %d belongs to key group %d", g, i, kg)
			return
		}
		if _, dup := k.get(enc); dup {
			d.Fail("key group %d: key %d listed twice", g, i)
			return
		}
		id := uint32(k.ents.len())
		ke := keyEntry{enc: enc, group: uint16(g)}
		if k.extra || maxVer != 0 {
			ke.keyExtra = &keyExtra{maxVer: uint32(maxVer)}
		}
		k.ents.add(ke)
		k.set(enc, id)
		ids[i] = id
		if sessions {
			if version >= 3 && d.Bool() {
				ke := k.ent(id)
				ke.closedHeld, ke.closedEnd = true, d.Int()
			}
			r.keySessions(d, g, id)
			if d.Err() != nil {
				return
			}
		}
	}
	if sessions {
		return
	}
	npanes := d.Len(maxCount, 4)
	if d.Err() != nil {
		return
	}
	var last window.Window
	for pi := range npanes {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		fired := d.Bool()
		m := d.Len(maxCount, 3)
		if d.Err() != nil {
			return
		}
		if pi > 0 && !less(last, w) {
			d.Fail("key group %d: pane %s out of order", g, w)
			return
		}
		last = w
		p := r.panes[w.End]
		if p == nil {
			p = &pane{w: w, fired: fired, idx: map[string]int32{}}
			r.panes[w.End] = p
		} else if p.w != w || p.fired != fired {
			d.Fail("key group %d: pane %s (fired %v) differs from another key group's pane %s (fired %v)", g, w, fired, p.w, p.fired)
			return
		}
		for range m {
			ki := d.Uint()
			if d.Err() != nil {
				return
			}
			if ki >= uint64(len(ids)) {
				d.Fail("key group %d: pane %s: key index %d out of range", g, w, ki)
				return
			}
			kid := ids[ki]
			if _, dup := p.idx[k.ent(kid).enc]; dup {
				d.Fail("key group %d: pane %s: key %d listed twice", g, w, ki)
				return
			}
			in := inst{key: kid, group: uint16(g)}
			isFired, live := r.inst(d, &in, w)
			if d.Err() != nil {
				return
			}
			if isFired {
				d.Fail("key group %d: pane %s: entry with the session fired flag", g, w)
				return
			}
			if o.sl.on {
				r.arrivals = append(r.arrivals, restoredArrival{p: p, i: len(p.ents), section: r.part, rank: r.rank, birth: in.birth})
				r.rank++
			}
			p.idx[k.ent(kid).enc] = int32(len(p.ents))
			p.ents = append(p.ents, in)
			if live {
				p.live++
			}
		}
	}
	if sh.sliced {
		r.sliceSection(d, g, ids)
	}
}

// sliceSection reads the slices of a key group's section (version 4).
func (r *groupRestorer) sliceSection(d *state.Decoder, g int, ids []uint32) {
	o := r.o
	n := d.Len(maxCount, 3)
	if d.Err() != nil {
		return
	}
	if n > 0 && !o.sl.on {
		d.Fail("key group %d: %d slices of sliced sliding windows; this operator keeps one accumulator per window (NoSlicing, or an aggregate that cannot be sliced)", g, n)
		return
	}
	var last window.Window
	var ranks map[uint64]bool
	for si := range n {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		m := d.Len(maxCount, 4)
		if d.Err() != nil {
			return
		}
		if si > 0 && last.End > w.Start {
			d.Fail("key group %d: slice %s out of order", g, w)
			return
		}
		last = w
		if got := o.sl.slicer.SliceOf(w.Start); got != w {
			d.Fail("key group %d: slice %s is not a slice of the windows (%s is)", g, w, got)
			return
		}
		s := r.slices[w.Start]
		if s == nil {
			s = &slice{w: w}
			r.slices[w.Start] = s
		}
		if ranks == nil {
			ranks = map[uint64]bool{}
		}
		for range m {
			ki := d.Uint()
			rank := d.Uint()
			flags := d.Byte()
			if d.Err() != nil {
				return
			}
			if ki >= uint64(len(ids)) {
				d.Fail("key group %d: slice %s: key index %d out of range", g, w, ki)
				return
			}
			if ranks[rank] || rank > maxCount && o.spill == nil || rank == math.MaxUint64 {
				d.Fail("key group %d: slice %s: arrival rank %d given twice or out of range", g, w, rank)
				return
			}
			ranks[rank] = true
			if flags&^flagLive != 0 {
				d.Fail("key group %d: slice %s: bad entry flags %#x", g, w, flags)
				return
			}
			se := sliceEnt{key: ids[ki], group: uint16(g), slot: -1}
			se.rows = d.Int()
			se.birth = d.Uint()
			if d.Err() != nil {
				return
			}
			for i := range s.ents.len() {
				if s.ents.at(i).key == se.key {
					d.Fail("key group %d: slice %s: key %d listed twice", g, w, ki)
					return
				}
			}
			if (flags&flagLive != 0) != (se.rows > 0) {
				d.Fail("key group %d: slice %s: entry with %d rows and live %v", g, w, se.rows, flags&flagLive != 0)
				return
			}
			if flags&flagLive != 0 {
				se.slot = o.slots.alloc()
				s.live++
				for _, c := range o.cfg.Aggs {
					c.RestoreSlot(d, se.slot)
				}
			}
			// After the section's pane entries (their relative order never
			// matters: one window holds a key group's share either way).
			r.arrivals = append(r.arrivals, restoredArrival{s: s, i: s.ents.len(), section: r.part, rank: 1<<40 + int(min(rank, maxCount)), seq: rank, birth: se.birth})
			s.ents.add(se)
		}
	}
}

func (r *groupRestorer) keySessions(d *state.Decoder, g int, id uint32) {
	n := d.Len(maxCount, 6)
	if d.Err() != nil || n == 0 {
		return
	}
	ke := r.o.keys.ent(id)
	ke.sessions = nil
	ke.reserveSessions(n)
	for i := range n {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		rank := d.Uint()
		if d.Err() != nil {
			return
		}
		if i > 0 && ke.sessions[i-1].w.Start >= w.Start {
			d.Fail("key group %d: sessions out of order", g)
			return
		}
		s := &session{w: w}
		s.key, s.group = id, uint16(g)
		fired, live := r.inst(d, &s.inst, w)
		if d.Err() != nil {
			return
		}
		if !live {
			d.Fail("key group %d: session without state", g)
			return
		}
		s.fired = fired
		ke = r.o.keys.ent(id)
		ke.sessions = append(ke.sessions, s)
		r.sessions = append(r.sessions, restoredSession{s: s, group: g, rank: rank})
	}
}

// inst reads an instance in the key-group format, allocating its slot.
func (r *groupRestorer) inst(d *state.Decoder, in *inst, w window.Window) (fired, live bool) {
	o := r.o
	flags := readInstFlags(d)
	if d.Err() != nil {
		return
	}
	live = flags&flagLive != 0
	in.slot = -1
	readInstCounts(d, in, w, flags)
	if d.Err() != nil {
		return
	}
	if live {
		in.slot = o.slots.alloc()
		for _, c := range o.cfg.Aggs {
			c.RestoreSlot(d, in.slot)
		}
		if o.slots.keep {
			o.slots.prev[in.slot] = readPrevValues(d, o, in.slot)
		}
	}
	return flags&flagFired != 0, live
}

// install derives the rest of the state: pane order, reference counts,
// idleness, session numbering and timers, and sets the globals.
func (r *groupRestorer) install(g Globals) {
	o := r.o
	k := o.keys
	o.wm, o.now = g.Watermark, g.Now
	o.closedThrough = max(g.ClosedThrough, o.horizon(g.Watermark))
	o.emitted, o.partial, o.skippedWindows = g.Emitted, g.PartlyTooLate, g.SkippedWindows
	for _, p := range r.panes {
		o.panes.list = append(o.panes.list, p)
		o.panes.byEnd[p.w.End] = p
		for i := range p.ents {
			k.ent(p.ents[i].key).refs++
		}
	}
	sort.Slice(o.panes.list, func(i, j int) bool { return less(o.panes.list[i].w, o.panes.list[j].w) })
	if o.cfg.Order == OrderBirth && !o.sl.on { // sliced: by arrival numbers, birth first (installSlices)
		// Entries in birth order, as an operator that never restarted
		// holds them (arrival order).
		for _, p := range o.panes.list {
			sort.SliceStable(p.ents, func(i, j int) bool { return p.ents[i].birth < p.ents[j].birth })
			clear(p.idx)
			for i := range p.ents {
				p.idx[k.ent(p.ents[i].key).enc] = int32(i)
			}
		}
	}
	// Sessions are numbered by (key group, rank): creation order within
	// each key group.
	sort.Slice(r.sessions, func(i, j int) bool {
		a, b := r.sessions[i], r.sessions[j]
		if a.group != b.group {
			return a.group < b.group
		}
		return a.rank < b.rank
	})
	for i, rs := range r.sessions {
		rs.s.seq = uint64(i)
		k.ent(rs.s.key).refs++
	}
	for id := range uint32(k.ents.len()) {
		if k.ent(id).held() {
			k.ent(id).refs++
		}
	}
	for _, s := range r.slices {
		for i := range s.ents.len() {
			k.ent(s.ents.at(i).key).refs++
		}
	}
	o.sess = sessionStore{keys: k, seq: uint64(len(r.sessions)), live: len(r.sessions)}
	for id := range uint32(k.ents.len()) {
		if k.ent(id).refs == 0 {
			k.ent(id).idle = true
			k.idle++
		}
	}
	k.rebuildGroups()
	for _, rs := range r.sessions {
		o.schedule(rs.s)
	}
	for id := range uint32(k.ents.len()) {
		if k.ent(id).held() {
			o.restoreForget(uint32(id))
		}
	}
	o.indexEntries()
	if o.sl.on {
		r.installSlices(g)
	}
}

// installSlices numbers the restored slice entries' arrivals (by birth
// with OrderBirth, then section and rank), puts every slice's entries in
// arrival order and installs the slices.
func (r *groupRestorer) installSlices(g Globals) {
	o := r.o
	a := r.arrivals
	sort.Slice(a, func(i, j int) bool {
		x, y := &a[i], &a[j]
		if o.cfg.Order == OrderBirth && x.birth != y.birth {
			return x.birth < y.birth
		}
		if x.section != y.section {
			return x.section < y.section
		}
		return x.rank < y.rank
	})
	for _, p := range o.panes.list {
		p.seqs = slices.Grow(p.seqs[:0], len(p.ents))[:len(p.ents)]
	}
	for n := range a {
		if a[n].s != nil {
			if o.spill == nil {
				a[n].s.ents.at(a[n].i).seq = uint64(n)
			} else {
				a[n].s.ents.at(a[n].i).seq = a[n].seq // kept (slicespill.go)
			}
		} else {
			a[n].p.seqs[a[n].i] = uint64(n)
		}
	}
	// Each pane's entries in arrival order.
	for _, p := range o.panes.list {
		idx := make([]int, len(p.ents))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return p.seqs[idx[i]] < p.seqs[idx[j]] })
		ents, seqs := make([]inst, len(p.ents)), make([]uint64, len(p.ents))
		for i, j := range idx {
			ents[i], seqs[i] = p.ents[j], p.seqs[j]
		}
		p.ents, p.seqs = ents, seqs
		clear(p.idx)
		for i := range p.ents {
			p.idx[o.keys.ent(p.ents[i].key).enc] = int32(i)
		}
	}
	list := make([]*slice, 0, len(r.slices))
	for _, s := range r.slices {
		s.ents.sortFunc(func(x, y sliceEnt) int { return cmp.Compare(x.seq, y.seq) })
		list = append(list, s)
	}
	slices.SortFunc(list, func(x, y *slice) int { return cmp.Compare(x.w.Start, y.w.Start) })
	for i := 1; i < len(list); i++ {
		if list[i-1].w.End > list[i].w.Start {
			// Sections agree on each slice's extent (SliceOf), so slices
			// never overlap.
			panic("tidemark: restored slices overlap")
		}
	}
	thr := g.ClosedThrough
	if o.cfg.Mode != Final {
		thr = g.Watermark
	}
	next := uint64(len(a))
	if o.spill != nil {
		// The disk backend keeps the slice entries' arrival numbers (their
		// ranks) and adds the slices that only the store holds; entries
		// below the cut come in key-group order (sliceStore.before).
		cut := uint64(len(a))
		for _, s := range list {
			for i := range s.ents.len() {
				cut = max(cut, s.ents.at(i).seq+1)
			}
		}
		var err error
		if list, cut, err = o.loadSliceMarkers(list, cut); err != nil {
			r.err = err
			return
		}
		o.sl.cut, next = cut, cut
		for _, s := range list {
			s.ents.sortFunc(func(x, y sliceEnt) int {
				switch {
				case o.sl.before(&x, &y):
					return -1
				case o.sl.before(&y, &x):
					return 1
				}
				return 0
			})
		}
	}
	o.installSlices(list, next, thr)
}
