package operator

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// Sizes used by Stats' state estimate (bytes, amd64).
const (
	paneBytes     = 128 // pane struct, its map header, list and index entries
	entryBytes    = 40  // one inst in a pane's ents slice
	mapEntryBytes = 24  // string → int32 map entry incl. control bytes (approx.; the string's bytes belong to the key table)
	sessionBytes  = 120 // session struct, pointer in its key's list, two timers
	paneRefBytes  = 16  // a key's reference to its entry in a sliding-window pane
)

// pane is the state of one tumbling or sliding window: an instance per key
// in order of first arrival.
type pane struct {
	w     window.Window
	fired bool
	idx   map[string]int32 // encoded key (the key table's string) → index in ents
	ents  []inst           // in order of first arrival; slot −1 when removed
	live  int
	// Sliced operators (slices.go): seqs are the entries' arrival numbers
	// (parallel to ents, ascending), and mat the key groups whose share of
	// the window the pane holds (a bit per key group; the others' rows are
	// in the slices).
	seqs []uint64
	mat  []uint64
	// next is the next entry's arrival number on the disk backend
	// (spill.go: seqs are then the entries' arrival numbers).
	next uint64
	// cut: arrival numbers below it predate the last restore, which put
	// those entries in key-group order (as the memory backend's restore
	// does); 0 for a pane created since.
	cut uint64
}

// holds reports whether a sliced operator's pane holds key group g's share.
func (p *pane) holds(g int) bool { return p.mat[g>>6]&(1<<(uint(g)&63)) != 0 }

// hold marks key group g's share as the pane's.
func (p *pane) hold(g int) { p.mat[g>>6] |= 1 << (uint(g) & 63) }

// paneStore holds the open panes in order of (end, start).
type paneStore struct {
	multi bool // sliding windows: keys find their entries through keyEntry.panes, not idx
	words int  // sliced operators: words of a pane's key-group bits (pane.mat); 0 otherwise
	list  []*pane
	byEnd map[int64]*pane
	last  *pane
	pool  []*pane
	// hit is the entry the last record found or created (not multi): a
	// record of the same pane and key — every row of one upstream firing
	// a stage keyed by window_start reads — finds it without the map
	// (find). It is checked, never invalidated: find uses i only when
	// entry i of the record's pane holds the record's key — a pane's keys
	// are distinct, so that entry is the key's — whatever happened since
	// (a pane recycled or rebuilt — closed, restored, key groups moved —
	// fails the check or still holds the key at i); p == the record's
	// pane only spares the check for another pane.
	hit struct {
		p *pane
		i int32
	}
}

func (ps *paneStore) init() { ps.byEnd = map[int64]*pane{} }

func (ps *paneStore) get(w window.Window) *pane {
	if p := ps.last; p != nil && p.w == w {
		return p
	}
	p := ps.byEnd[w.End]
	if p != nil {
		ps.last = p
	}
	return p
}

func (ps *paneStore) create(w window.Window, fired bool) *pane {
	var p *pane
	if n := len(ps.pool); n > 0 {
		p = ps.pool[n-1]
		ps.pool = ps.pool[:n-1]
	} else {
		p = &pane{idx: map[string]int32{}}
	}
	p.w, p.fired, p.live, p.next, p.cut = w, fired, 0, 0, 0
	p.seqs = p.seqs[:0]
	if ps.words > 0 {
		p.mat = slices.Grow(p.mat[:0], ps.words)[:ps.words]
		clear(p.mat)
		p.seqs = p.seqs[:0]
	}
	ps.byEnd[w.End] = p
	// Insert in (end, start) order; new panes usually go last.
	i := len(ps.list)
	if i > 0 && less(w, ps.list[i-1].w) {
		i = sort.Search(len(ps.list), func(j int) bool { return less(w, ps.list[j].w) })
	}
	ps.list = append(ps.list, nil)
	copy(ps.list[i+1:], ps.list[i:])
	ps.list[i] = p
	ps.last = p
	return p
}

func less(a, b window.Window) bool {
	if a.End != b.End {
		return a.End < b.End
	}
	return a.Start < b.Start
}

// recycle returns a closed pane's memory to the pool.
func (ps *paneStore) recycle(p *pane) {
	delete(ps.byEnd, p.w.End)
	if ps.last == p {
		ps.last = nil
	}
	p.release()
	ps.pool = append(ps.pool, p)
}

// shrinkEntries is the most entries whose arrays and index a pane keeps
// once emptied (release): past it they go, so that a pane written back
// or a pane in the pool holds no more than that whatever its largest
// size was (q9 on disk: one pane a second of event time, each keeping
// the capacity of its fullest moment, grew with the events).
const shrinkEntries = 256

// release empties p's entries, letting their arrays and index go when
// they held more than shrinkEntries (a Go map keeps its buckets when
// cleared; a slice its capacity when cut).
func (p *pane) release() {
	if len(p.idx) > shrinkEntries {
		p.idx = map[string]int32{}
	} else {
		clear(p.idx)
	}
	if cap(p.ents) > shrinkEntries {
		p.ents = nil
	} else {
		p.ents = p.ents[:0]
	}
	if cap(p.seqs) > shrinkEntries {
		p.seqs = nil
	} else {
		p.seqs = p.seqs[:0]
	}
	p.live = 0
}

// find returns the index in p's entries of the current record's key
// (o.keyBuf; o.kid in multi mode).
func (o *Operator) find(p *pane) (int32, bool) {
	if o.panes.multi {
		if !o.kidOK {
			return 0, false
		}
		for _, r := range o.keys.ent(o.kid).panes {
			if r.end == p.w.End {
				return r.idx, true
			}
		}
		return 0, false
	}
	if h := &o.panes.hit; h.p == p && int(h.i) < len(p.ents) && o.keys.ent(p.ents[h.i].key).enc == string(o.keyBuf) {
		return h.i, true
	}
	i, ok := p.idx[string(o.keyBuf)]
	if ok {
		o.panes.hit.p, o.panes.hit.i = p, i
	}
	return i, ok
}

// indexEntries rebuilds the keys' pane references (after a restore).
func (o *Operator) indexEntries() {
	if !o.panes.multi {
		return
	}
	for _, p := range o.panes.list {
		for j := range p.ents {
			ke := o.keys.ent(p.ents[j].key)
			ke.panes = append(ke.panes, paneRef{end: p.w.End, idx: int32(j)})
		}
		clear(p.idx) // restore fills idx; multi-window panes use the keys' references
	}
}

func (o *Operator) processPanes(r *row.Row, ts int64, weight int) (Outcome, error) {
	o.assignPanes(ts)
	if o.panes.multi {
		o.kid, o.kidOK = o.keys.lookup(o.keyBuf)
	}
	if len(o.slots.chk) > 0 {
		if err := o.checkPanes(r, weight); err != nil {
			return OnTime, err
		}
	}
	accepted, late, skipped := 0, false, 0
	for _, w := range o.wins {
		if o.closed(w.End) {
			skipped++
			continue
		}
		p := o.panes.get(w)
		if p == nil {
			if weight < 0 {
				continue
			}
			p = o.panes.create(w, o.firedAt(w.End))
		}
		ok, err := o.applyPane(p, r, weight)
		if err != nil {
			return OnTime, err
		}
		if ok {
			accepted++
			late = late || p.fired
		}
	}
	return o.outcome(accepted, skipped, late, weight), nil
}

// assignPanes sets o.wins to the windows of ts. With an assigner that
// slices (window.Slicer: Assign returns the same windows for every instant
// of a slice) a record in the slice of the previous one reuses its
// windows, as processSliced does: the rows of an upstream firing, whose
// event times are one window's, are assigned once.
func (o *Operator) assignPanes(ts int64) {
	pw := &o.pwin
	if pw.ok && pw.slice.Contains(ts) {
		o.wins = pw.wins
		return
	}
	pw.wins = o.cfg.Assigner.Assign(ts, pw.wins[:0])
	o.wins = pw.wins
	if sl, ok := o.cfg.Assigner.(window.Slicer); ok {
		pw.slice, pw.ok = sl.SliceOf(ts), true
	}
}

// outcome counts a record in time for some windows and too late for
// others, and returns its outcome from the windows it updated (accepted),
// those it was too late for (skipped) and whether one had fired (late).
func (o *Operator) outcome(accepted, skipped int, late bool, weight int) Outcome {
	if accepted > 0 && skipped > 0 {
		// Sliding windows: in time for some windows, too late for others
		// (Flink drops those assignments silently; tidemark counts them).
		o.partial++
		o.skippedWindows += int64(skipped)
	}
	switch {
	case accepted == 0 && weight < 0 && skipped > 0:
		return RetractTooLate
	case accepted == 0 && weight < 0:
		return RetractMissing
	case accepted == 0:
		return TooLate
	case late:
		return LateAccepted
	}
	return OnTime
}

// applyPane applies the current record (o.keyBuf; o.kid when o.kidOK and
// the key was looked up for it) to pane p: it adds the record to the key's
// entry, creating or reviving it, or retracts it from a live entry, and
// emits the rows a fired pane owes. It reports whether the entry changed
// (a retraction of a key the pane does not hold changes nothing).
func (o *Operator) applyPane(p *pane, r *row.Row, weight int) (bool, error) {
	w := p.w
	i, ok := o.find(p)
	if weight < 0 {
		if !ok || p.ents[i].slot < 0 {
			return false, nil
		}
		e := &p.ents[i]
		if err := o.slots.apply(e.slot, r, -1); err != nil {
			return false, err
		}
		o.markChanged(int(e.group))
		e.rows--
		e.dirty = true
		if e.rows <= 0 {
			o.emitDelete(e)
			o.removeEntry(p, i)
		} else if p.fired {
			o.emit(e, w, fireLate)
		}
		return true, nil
	}
	// One string-keyed lookup per event and window, as a hand-written
	// map[key]sum would do; the key table is consulted only when the key
	// first enters the window.
	switch {
	case !ok:
		kid := o.kid
		if !(o.panes.multi || o.sl.on) || !o.kidOK {
			kid = o.keys.intern(o.keyBuf)
			o.kid, o.kidOK = kid, true
		}
		i = int32(len(p.ents))
		p.ents = append(p.ents, inst{key: kid, slot: o.slots.alloc(), group: o.keys.ent(kid).group, birth: o.step})
		if o.sl.on {
			p.seqs = append(p.seqs, o.sl.seq)
			o.sl.seq++
		} else if o.spill != nil {
			p.seqs = append(p.seqs, p.next)
			p.next++
		}
		if o.panes.multi {
			ke := o.keys.ent(kid)
			if ke.panes == nil {
				// Room for every window a record falls in, and one more
				// for a pane not yet closed: usually no regrowth.
				ke.panes = make([]paneRef, 0, o.cfg.Assigner.MaxWindows()+1)
			}
			ke.panes = append(ke.panes, paneRef{end: p.w.End, idx: i})
		} else {
			p.idx[o.keys.ent(kid).enc] = i
			o.panes.hit.p, o.panes.hit.i = p, i
		}
		p.live++
		o.keys.ref(kid)
	case p.ents[i].slot < 0:
		// The key's row was retracted away (and deleted downstream): it
		// comes back under the same identity, its versions going on from
		// the delete's.
		p.ents[i].slot = o.slots.alloc()
		p.live++
	}
	e := &p.ents[i]
	if err := o.slots.apply(e.slot, r, 1); err != nil {
		return false, err
	}
	o.markChanged(int(e.group))
	e.rows++
	e.dirty = true
	switch {
	case o.rankedUpdating():
		o.emitRanks(e, w) // the ranks the record changed, at once
	case p.fired:
		o.emit(e, w, fireLate)
	}
	return true, nil
}

// checkPanes refuses a record that some window could not take, before any
// window changes. A window and key not seen yet starts empty and takes any
// single value.
func (o *Operator) checkPanes(r *row.Row, weight int) error {
	for _, w := range o.wins {
		if o.closed(w.End) {
			continue
		}
		p := o.panes.get(w)
		if p == nil {
			continue
		}
		i, ok := o.find(p)
		if !ok || p.ents[i].slot < 0 {
			continue
		}
		if err := o.slots.check(p.ents[i].slot, r, weight); err != nil {
			return &RejectError{Err: err, Window: w, Key: o.keys.values(p.ents[i].key)}
		}
	}
	return nil
}

// removeEntry frees the accumulator of a (window, key) whose rows were all
// retracted. The entry stays as a tombstone holding its key and version
// until the pane closes, so that a row for the key that comes back
// continues the version sequence (a version-guarded sink must not take it
// for a stale write).
func (o *Operator) removeEntry(p *pane, i int32) {
	e := &p.ents[i]
	o.slots.release(e.slot)
	e.slot = -1
	e.rows = 0
	p.live--
}

// paneAdvance is an advance of the panes in progress (AdvanceWatermarkLimit):
// the pane being emitted, its entries' order and the next position.
type paneAdvance struct {
	firing bool // past the closing prefix: firing the panes that reached their end
	fi     int  // firing: index in the pane list of the next pane to look at
	p      *pane
	order  []int32
	pos    int
	// stream: the pane closing is of a window with entries in the store
	// and the operator emits by key group (OrderGroup): its key groups
	// are read back, emitted and let go one at a time (streamGroup), so
	// that a close holds one key group's stored entries, not the window's.
	stream bool
	sw     *spillWin
	mem    []int32 // the entries in memory at the start, by key group
	mi     int     // the next of mem
	g      int     // the next key group to look at
	n0     int     // p.ents before the current key group's were read back
}

// advancePanes closes, then fires, the panes the watermark has passed, and
// returns true when it stopped because limit rows are pending (call again
// to go on).
func (o *Operator) advancePanes(limit int) bool {
	a := &o.padv
	for {
		if a.p != nil {
			if o.paneContinue(limit) {
				return true
			}
			continue
		}
		p := o.paneNext()
		if p == nil {
			*a = paneAdvance{order: a.order[:0]}
			return false
		}
		o.paneStart(p, limit)
	}
}

// paneNext returns the next pane the advance in progress closes or fires
// (nil when none is left), without starting it: the closing panes form a
// prefix of the (end, start) order, and come before the panes that reach
// their end (closing ends are at most the closed horizon, firing ones
// above it).
func (o *Operator) paneNext() *pane {
	a := &o.padv
	list := o.panes.list
	if !a.firing {
		if len(list) > 0 && o.closed(list[0].w.End) {
			return list[0]
		}
		a.firing, a.fi = true, 0
	}
	for a.fi < len(list) && list[a.fi].fired && o.firedAt(list[a.fi].w.End) {
		a.fi++
	}
	if a.fi == len(list) || !o.firedAt(list[a.fi].w.End) {
		return nil
	}
	return list[a.fi]
}

// paneStart starts closing or firing pane p (paneNext's).
func (o *Operator) paneStart(p *pane, limit int) {
	a := &o.padv
	a.p = p
	a.order, a.pos = a.order[:0], 0
	if sp := o.spill; sp != nil && !a.firing && o.cfg.Order == OrderGroup && sp.wins[p.w.End] != nil && sp.err == nil {
		a.stream, a.sw, a.mi, a.g, a.n0 = true, sp.wins[p.w.End], 0, 0, len(p.ents)
		a.mem = append(a.mem[:0], o.paneOrder(p)...)
		o.reserve(min(p.live, limit))
		return
	}
	if o.spill != nil {
		o.unspillWindow(p)
	}
	if a.firing {
		p.fired = true
	}
	o.entriesInOrder(p, func(i int32) { a.order = append(a.order, i) })
	o.reserve(min(p.live, limit))
}

// streamGroup moves a streamed close (paneAdvance.stream) to its next key
// group: it lets go the entries the last one read back (emitted: their
// slots, keys and places in p), then takes the next key group with
// entries in memory or in the store, reads its stored entries back into p
// and sets the order to its entries by arrival number — the order the
// window's entries have in memory (sortPane), taken by key group
// (paneOrder). It reports false when no key group is left (the batch of
// range deletes committed); a failure of the store is kept in
// spillState.err (the task stops) and the close goes on with memory's
// entries.
func (o *Operator) streamGroup() bool {
	a, sp, p := &o.padv, o.spill, o.padv.p
	for i := a.n0; i < len(p.ents); i++ {
		e := &p.ents[i]
		if e.slot >= 0 {
			o.slots.release(e.slot)
			p.live--
		}
		delete(p.idx, o.keys.ent(e.key).enc)
		o.keys.unref(e.key)
	}
	clear(p.ents[a.n0:])
	p.ents, p.seqs = p.ents[:a.n0], p.seqs[:a.n0]
	o.panes.hit.p = nil
	if a.g > 0 {
		// The keys let go are idle: free them once they outnumber the
		// live ones, as at the end of an advance.
		o.keys.sweep(o.markChanged)
	}
	k := o.cfg.KeyGroups
	g := k
	if a.mi < len(a.mem) {
		g = int(p.ents[a.mem[a.mi]].group)
	}
	stored := -1
	if sp.err == nil {
		for x := a.g; x < g; x++ {
			if a.sw.groups[x>>6]&(1<<(uint(x)&63)) != 0 {
				stored = x
				break
			}
		}
		if stored < 0 && g < k && a.sw.groups[g>>6]&(1<<(uint(g)&63)) != 0 {
			stored = g
		}
		if stored >= 0 {
			g = stored
		}
	}
	if g == k {
		a.stream = false
		return false
	}
	a.g = g + 1
	a.order, a.pos = a.order[:0], 0
	for a.mi < len(a.mem) && int(p.ents[a.mem[a.mi]].group) == g {
		a.order = append(a.order, a.mem[a.mi])
		a.mi++
	}
	if stored == g {
		err := o.unspill(p, a.sw, g)
		if err == nil && sp.batch.Count() > 0 {
			err = sp.store.Commit(sp.batch)
		}
		if err != nil {
			sp.err = fmt.Errorf("window %s: %w", p.w, err)
		}
		for i := a.n0; i < len(p.ents); i++ {
			a.order = append(a.order, int32(i))
		}
		sp.held = max(sp.held, len(p.ents)-a.n0)
		slices.SortStableFunc(a.order, func(x, y int32) int { return cmp.Compare(p.seqs[x], p.seqs[y]) })
	}
	return true
}

// paneContinue emits the rows of the pane being closed or fired; it
// returns true when it stopped because limit rows are pending, false when
// the pane is done (a closed pane freed).
func (o *Operator) paneContinue(limit int) bool {
	a := &o.padv
	p := a.p
	o.ordA, o.ordB = p.w.End, p.w.Start
	kind := fireClose
	if a.firing {
		kind = fireOnTime
	}
	for {
		for a.pos < len(a.order) {
			if len(o.out) >= limit {
				return true
			}
			e := &p.ents[a.order[a.pos]]
			a.pos++
			if a.firing {
				// The pane's fired flag is part of every key group's share.
				o.markChanged(int(e.group))
			}
			if e.slot >= 0 {
				o.ordC = e.birth
				o.emit(e, p.w, kind)
			}
		}
		if !a.stream || !o.streamGroup() {
			break
		}
	}
	if !a.firing {
		// The bookkeeping in arrival order: keys interned in arrival
		// order lie in that order in memory.
		for i := range p.ents {
			e := &p.ents[i]
			if e.slot >= 0 {
				o.slots.release(e.slot)
			}
			if o.panes.multi {
				o.keys.dropPane(e.key, p.w.End)
			}
			o.markChanged(int(e.group))
			o.keys.unref(e.key)
		}
		o.panes.recycle(p)
		list := o.panes.list
		m := copy(list, list[1:])
		list[m] = nil
		o.panes.list = list[:m]
	} else {
		a.fi++
	}
	a.p = nil
	return false
}

func (o *Operator) earlyPanes() {
	for _, p := range o.panes.list {
		if p.fired {
			continue
		}
		o.ordA, o.ordB = p.w.End, p.w.Start
		o.entriesInOrder(p, func(i int32) {
			if e := &p.ents[i]; e.slot >= 0 && e.dirty {
				o.markChanged(int(e.group))
				o.ordC = e.birth
				o.emit(e, p.w, fireEarly)
			}
		})
	}
}

// reserve makes room for the rows of n entries about to fire (up to two
// rows each: update_before and update_after), so that a window firing
// hundreds of thousands of rows grows the output buffers once rather than
// by doubling.
func (o *Operator) reserve(n int) {
	if n <= 0 {
		return
	}
	o.out = slices.Grow(o.out, 2*n)
	o.vals = slices.Grow(o.vals, 2*n*len(o.cfg.Aggs))
}
