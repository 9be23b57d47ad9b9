package operator

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"sort"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/u64map"
	"github.com/tidemark/tidemark/window"
)

// Window slicing (sliding windows).
//
// A sliced operator keeps, per key, one partial aggregate per slice — the
// interval between consecutive window boundaries (window.Slicer: the
// slide-long panes when size is a multiple of slide) — instead of one
// accumulator per overlapping window: a record updates one accumulator,
// not ⌈size/slide⌉, and a window's value is the merge of its slices'
// partials, computed when the window emits (Flink's
// SlicingWindowOperator, Scotty). Each key group's share of a window is in
// one of three states:
//
//   - virtual: its rows are in the slices only, from the window's first
//     record of the key group until the share first emits a row;
//   - in the window's pane (materialized): a share that emitted before
//     the window closed — the window fired and stays open for late data
//     (update and retract modes with allowed lateness), or fired early —
//     holds one accumulator per key, merged from the slices when the share
//     joined the pane, and from then on every record of the key group in
//     the window updates the pane directly, as in an unsliced operator;
//   - processed: the window closed (its final rows emitted from the
//     merged slices) or it fired and its shares are all in its pane.
//
// Whether a share joins the pane depends on the key group's own rows and
// on the watermark and early firings only, never on other key groups, so
// a key group's state — and its checkpoint section — is the same whichever
// key groups share its operator. A record updates the window's pane when
// the pane holds its key group, and its slice when one of its windows
// keeps its key group's share virtual. A slice is freed once every window
// containing it is processed (after an early firing, which moves every
// share into panes, at once). So the emitted rows are the
// unsliced operator's, row for row: a window's entries come in order of
// first arrival (each slice entry keeps its arrival number, and a window
// orders its keys by the first arrival over its slices, tombstones of
// retracted rows included), with the same versions, values, is_final and
// watermark_at. Only aggregates whose results depend on the rows a window
// holds, not on the order of its updates, can be sliced
// (aggregate.HistoryDependent); an int sum's slices hold 128-bit partials
// and the operator checks every window's total before a record changes it
// (checkSliced).
//
// In mode final a virtual window closes at the watermark end + allowed
// lateness, straight from its slices; in modes update and retract it is
// processed when it fires: closed at once when the close coincides
// (allowed lateness 0), else its shares with rows join its pane, which
// fires. A key group without rows in a window that fired joins the pane
// with its first late record (which emits a row). An early firing moves
// every virtual share holding rows into its window's pane, so with early
// firings the slices hold only the rows since the last early firing of
// windows that had none of their key group's. A pane that closes or fires
// (modes update and retract) first takes in the shares still virtual.

// Sizes used by Stats' state estimate (bytes, amd64).
const (
	sliceBytes    = 96 // slice struct, its list and index entries
	sliceEntBytes = 40 // one sliceEnt
)

// slice is the state of one slice: an entry per key in order of first
// arrival.
type slice struct {
	w     window.Window
	lastW window.Window // the last window containing the slice
	ents  entVec        // by arrival number (seq)
	live  int           // entries holding a slot
	idx   entIndex      // encoded key → index in ents
}

// entIndex maps encoded keys to entry indexes: a record finds its slice
// entry with one lookup, as a hand-written map[key]count per slice does,
// without the key table (consulted only when a key enters a slice). Keys
// of one int, bool or time field that is not null (keyTable.intKey) are
// held by value in a u64map.Map, others by their encoding (the key
// table's string) in a map.
type entIndex struct {
	ints u64map.Map[entCell]
	strs map[string]int32
}

// entCell is the value of a key held by value in an entIndex: its entry's
// index and, beside it in the cell's spare bytes, the entry's slot (−1
// while the entry holds none), so that a record reads its partial
// aggregate's slot with its entry index and the two loads, of the entry
// and of the aggregate, overlap instead of following one another.
type entCell struct {
	i    int32
	slot int32
}

// get returns the entry index of the key encoded as enc and, for a key
// held by value, its cell, else nil.
func (x *entIndex) get(k *keyTable, enc []byte) (int32, *entCell, bool) {
	if k.intKey && len(enc) == 9 && enc[0] == 1 {
		c := x.ints.Ptr(binary.BigEndian.Uint64(enc[1:]))
		if c == nil {
			return 0, nil, false
		}
		return c.i, c, true
	}
	i, ok := x.strs[string(enc)]
	return i, nil, ok
}

// getString is get for an encoding held as a string (a key entry's).
func (x *entIndex) getString(k *keyTable, enc string) (int32, bool) {
	if v, ok := k.intOf(enc); ok {
		c, ok := x.ints.Get(v)
		return c.i, ok
	}
	i, ok := x.strs[enc]
	return i, ok
}

// set records entry i, holding slot, for the key encoded as enc.
func (x *entIndex) set(k *keyTable, enc string, i, slot int32) {
	if v, ok := k.intOf(enc); ok {
		x.ints.Put(v, entCell{i: i, slot: slot})
		return
	}
	if x.strs == nil {
		x.strs = map[string]int32{}
	}
	x.strs[enc] = i
}

// reset empties the index, keeping its memory (pooled slices).
func (x *entIndex) reset() {
	x.ints.Reset()
	clear(x.strs)
}

// entIndexBytes is the estimated heap bytes of one entIndex entry.
const entIndexBytes = 24

// sliceEnt is one (slice, key) partial aggregate.
type sliceEnt struct {
	seq   uint64 // arrival number: the order of first arrival over every slice
	birth uint64 // the step that created the entry (OrderBirth)
	rows  int64  // rows contributing (adds − retractions)
	key   uint32
	slot  int32 // −1 once its rows are all retracted (a tombstone keeping its place)
	group uint16
}

// sliceStore holds the open slices of a sliced operator.
type sliceStore struct {
	on      bool
	slicer  window.Slicer
	maxSl   int      // slices per window, at most
	list    []*slice // by start
	byStart map[int64]*slice
	curW    window.Window // the slice of the last record, and its state (nil: none)
	cur     *slice
	pool    []*slice
	seq     uint64 // the next arrival number
	// cut is the next arrival number at the last restore on the disk
	// backend (slicespill.go: entries below it come in key-group order,
	// as the memory backend's restore numbers them); 0 otherwise.
	cut        uint64
	birthFirst bool // Config.Order is OrderBirth
	// done is the last window (in (end, start) order) whose virtual
	// processing is complete: the windows up to it hold no virtual rows.
	// Between calls it marks every window ending at or before the
	// threshold (sliceThreshold) as processed.
	done window.Window
	// bound is at least the magnitude (aggregate.Checker.Magnitude) of
	// every slice partial of the columns that check their updates: a
	// window's total over at most maxSl slices is then within maxSl ×
	// bound (checkSliced).
	bound uint64

	// recW is the slice of the last record processed and recWins its
	// windows (Assign's result, the same for every instant of a slice:
	// window.Slicer), with recEnd the smallest of their ends; recOK says
	// they are set. A record in the same slice reuses them.
	recW    window.Window
	recWins []window.Window
	recEnd  int64
	recOK   bool

	// Scratch of a window's keys (windowKeys).
	wins  []window.Window
	mark  []uint32 // per key id: gen when listed for the current window
	pos   []int32  // per key id: its index in keys
	gen   uint32
	keys  []vkey
	parts []vpart
	heap  []cursor
	ents  []inst   // a pane's entries while shares move in (materialize)
	seqs  []uint64 // and their arrival numbers
}

// vkey is one key of a window being emitted or materialized: its rows over
// the window's slices and its live partials.
type vkey struct {
	kid        uint32
	group      uint16
	seq        uint64 // its first arrival into the window
	birth      uint64 // of its first arrival into the window
	rows       int64
	head, tail int32 // its live partials in parts, linked
	nlive      int32
}

type vpart struct {
	slot int32
	next int32
}

// cursor is a position in one slice's entries during a merge by arrival.
type cursor struct {
	s   *slice
	pos int
}

// virtualAdvance is the close of a virtual window in progress.
type virtualAdvance struct {
	active bool
	w      window.Window
	order  []int32 // indexes into sl.keys, in emission order
	pos    int
	z      int32 // the scratch slot of merged partials, −1 when none
	// stream says the window's keys are read from its slices as they are
	// emitted (orders by first arrival: streamStart), not listed in
	// sl.keys first; in are the window's slices and heap their cursors, a
	// min-heap by the arrival number of their next entry (siftDown).
	stream bool
	in     []*slice
	heap   []cursor
	parts  []streamPart // scratch: one key's entries over in
}

// streamPart is one entry of the key being emitted by streamContinue.
type streamPart struct {
	seq  uint64
	slot int32
}

func (ss *sliceStore) init(sl window.Slicer) {
	ss.on = true
	ss.slicer = sl
	ss.maxSl = sl.MaxSlices()
	ss.byStart = map[int64]*slice{}
	ss.done = processedUpTo(changelog.WatermarkNone) // nothing processed
}

// processedUpTo is the window after every window ending at or before
// thr, in (end, start) order.
func processedUpTo(thr int64) window.Window { return window.Window{Start: math.MaxInt64, End: thr} }

// after reports whether w comes after d in (end, start) order.
func after(w, d window.Window) bool { return less(d, w) }

// sliceThreshold is how far virtual windows are processed: to the closed
// horizon in mode final (windows close from their slices), to the
// watermark in the other modes (a window is processed when it fires).
func (o *Operator) sliceThreshold() int64 {
	if o.cfg.Mode == Final {
		return o.closedThrough
	}
	return o.wm
}

// at returns the slice containing ts and its state (nil when it holds
// nothing).
func (ss *sliceStore) at(ts int64) (window.Window, *slice) {
	if !ss.curW.Contains(ts) {
		ss.curW = ss.slicer.SliceOf(ts)
		ss.cur = ss.byStart[ss.curW.Start]
	} else if ss.cur == nil {
		ss.cur = ss.byStart[ss.curW.Start]
	}
	return ss.curW, ss.cur
}

// create adds an empty slice for w.
func (o *Operator) createSlice(w window.Window) *slice {
	ss := &o.sl
	var s *slice
	if n := len(ss.pool); n > 0 {
		s = ss.pool[n-1]
		ss.pool = ss.pool[:n-1]
	} else {
		s = &slice{}
	}
	ss.wins = o.cfg.Assigner.Assign(w.Start, ss.wins[:0])
	s.w, s.lastW, s.live = w, ss.wins[len(ss.wins)-1], 0
	s.ents.reset()
	ss.insert(s)
	return s
}

// insert places s in the list by start and in the index.
func (ss *sliceStore) insert(s *slice) {
	i := len(ss.list)
	if i > 0 && ss.list[i-1].w.Start > s.w.Start {
		i = sort.Search(len(ss.list), func(j int) bool { return ss.list[j].w.Start > s.w.Start })
	}
	ss.list = slices.Insert(ss.list, i, s)
	ss.byStart[s.w.Start] = s
	if ss.curW == s.w {
		ss.cur = s
	}
}

// sliceEntry returns the index in s of the current record's key
// (o.keyInt when keyByValue, else o.keyBuf) and, for a key held by value,
// its index cell (holding the entry's slot too), else nil.
func (o *Operator) sliceEntry(s *slice) (int32, *entCell, bool) {
	if o.keyByValue {
		c := s.idx.ints.Ptr(o.keyInt)
		if c == nil {
			return 0, nil, false
		}
		return c.i, c, true
	}
	return s.idx.get(o.keys, o.keyBuf)
}

// encodeKey puts the current record's key encoding in keyBuf when it
// holds its value only (keyByValue).
func (o *Operator) encodeKey(r *row.Row) {
	if o.keyByValue {
		o.keyBuf = AppendKey(o.keyBuf[:0], r, o.cfg.Key)
		o.keyByValue = false
	}
}

func (o *Operator) processSliced(r *row.Row, ts int64, weight int) (Outcome, error) {
	ss := &o.sl
	if !ss.recOK || !ss.recW.Contains(ts) {
		ss.recW = ss.slicer.SliceOf(ts)
		ss.recWins = o.cfg.Assigner.Assign(ts, ss.recWins[:0])
		ss.recEnd = math.MaxInt64
		for _, w := range ss.recWins {
			ss.recEnd = min(ss.recEnd, w.End)
		}
		ss.recOK = true
	}
	o.wins = ss.recWins
	// The key table is consulted only when needed: a key entering a slice
	// or a pane, a pane's key group, the checks.
	o.kidOK = false
	if len(o.panes.list) == 0 && len(o.slots.chk) == 0 && len(o.wins) > 0 && !o.closed(ss.recEnd) &&
		(o.cfg.Mode == Final || !o.firedAt(ss.recEnd)) {
		// No pane and no window closed: every window is virtual (the loop
		// below with each window's tests decided by the earliest end). A
		// one-int key finds its slice entry by value; its encoding is
		// made only for a key new to the slice (applySlice).
		if o.keys.intKey && !r.IsNull(o.cfg.Key[0].Index) {
			o.keyInt, o.keyByValue = uint64(r.I[o.cfg.Key[0].Slot]), true
		} else {
			o.keyBuf, o.keyByValue = AppendKey(o.keyBuf[:0], r, o.cfg.Key), false
		}
		ok, err := o.applySlice(r, ts, weight)
		switch {
		case err != nil:
			return OnTime, err
		case !ok:
			return o.outcome(0, 0, false, weight), nil
		}
		return o.outcome(len(o.wins), 0, o.firedAt(ss.recEnd), weight), nil
	}
	o.keyBuf, o.keyByValue = AppendKey(o.keyBuf[:0], r, o.cfg.Key), false
	if len(o.slots.chk) > 0 {
		o.kid, o.kidOK = o.keys.lookup(o.keyBuf)
		if err := o.checkSliced(r, ts, weight); err != nil {
			return OnTime, err
		}
	}
	accepted, late, skipped := 0, false, 0
	virtual, vlate := 0, false
	g := -1 // the record's key group, once needed
	for _, w := range o.wins {
		if o.closed(w.End) {
			skipped++
			continue
		}
		var p *pane
		if len(o.panes.list) > 0 {
			if p = o.panes.get(w); p != nil {
				if g < 0 {
					g = o.recordGroup()
				}
				if !p.holds(g) {
					p = nil
				}
			}
		}
		if p == nil {
			if o.cfg.Mode == Final || !o.firedAt(w.End) {
				virtual++
				vlate = vlate || o.firedAt(w.End)
				continue
			}
			// The window fired without rows of the key group (else its
			// share would be in the pane): nothing to retract, and a
			// record moves the share into the pane, which emits the late
			// row.
			if weight < 0 {
				continue
			}
			if g < 0 {
				g = o.recordGroup()
			}
			p = o.materialize(w, true, g)
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
	if virtual > 0 {
		ok, err := o.applySlice(r, ts, weight)
		if err != nil {
			return OnTime, err
		}
		if ok {
			// The record is in each of its virtual windows.
			accepted += virtual
			late = late || vlate
		}
	}
	return o.outcome(accepted, skipped, late, weight), nil
}

// recordGroup returns the current record's key group.
func (o *Operator) recordGroup() int {
	if o.kidOK {
		return int(o.keys.ent(o.kid).group)
	}
	return keygroup.OfKey(o.keyBuf, o.cfg.KeyGroups)
}

// applySlice adds the current record to its slice's entry for its key, or
// retracts it from a live entry; it reports whether the entry changed.
func (o *Operator) applySlice(r *row.Row, ts int64, weight int) (bool, error) {
	ss := &o.sl
	w, s := ss.at(ts)
	var i int32
	var c *entCell // the key's index cell, when held by value
	ok := false
	if s != nil {
		i, c, ok = o.sliceEntry(s)
	}
	if c != nil && c.slot >= 0 && weight > 0 {
		// A live entry: its slot is in the cell, so the loads of the entry
		// (its key group read first) and of the partial aggregate are
		// issued together.
		e := s.ents.at(int(i))
		g, slot := int(e.group), c.slot
		if err := o.slots.apply(slot, r, 1); err != nil {
			return false, err
		}
		o.markChanged(g)
		o.boundSlot(slot)
		e.rows++
		return true, nil
	}
	if weight < 0 {
		if !ok || s.ents.at(int(i)).slot < 0 {
			return false, nil
		}
		e := s.ents.at(int(i))
		if err := o.slots.apply(e.slot, r, -1); err != nil {
			return false, err
		}
		o.markChanged(int(e.group))
		o.boundSlot(e.slot)
		if e.rows--; e.rows <= 0 {
			o.slots.release(e.slot)
			e.slot, e.rows = -1, 0
			if c != nil {
				c.slot = -1
			}
			s.live--
		}
		return true, nil
	}
	if s == nil {
		s = o.createSlice(w)
	}
	switch {
	case !ok:
		if !o.kidOK {
			o.encodeKey(r)
			o.kid, o.kidOK = o.keys.intern(o.keyBuf), true
		}
		ke := o.keys.ent(o.kid)
		i = int32(s.ents.len())
		slot := o.slots.alloc()
		s.ents.add(sliceEnt{seq: ss.seq, birth: o.step, key: o.kid, slot: slot, group: ke.group})
		ss.seq++
		s.idx.set(o.keys, ke.enc, i, slot)
		s.live++
		o.keys.ref(o.kid)
	case s.ents.at(int(i)).slot < 0:
		s.ents.at(int(i)).slot = o.slots.alloc()
		if c != nil {
			c.slot = s.ents.at(int(i)).slot
		}
		s.live++
	}
	e := s.ents.at(int(i))
	if err := o.slots.apply(e.slot, r, 1); err != nil {
		return false, err
	}
	o.markChanged(int(e.group))
	o.boundSlot(e.slot)
	e.rows++
	return true, nil
}

// boundSlot raises sl.bound to slot s's magnitude (columns that check
// their updates only).
func (o *Operator) boundSlot(s int32) {
	for _, c := range o.slots.chk {
		o.sl.bound = max(o.sl.bound, c.Magnitude(s))
	}
}

// checkSliced refuses a record that some window could not take, before
// any state changes: a pane's entry is checked as the unsliced operator
// checks it; a virtual window's total is the merge of the key's partials
// in its slices, checked exactly unless the bound on partials shows that
// no window can leave the range. When the window totals take the record
// but the slice's own partial cannot (partials beyond int64 while other
// slices offset them), the record's virtual windows become panes.
func (o *Operator) checkSliced(r *row.Row, ts int64, weight int) error {
	ss := &o.sl
	var rowMag uint64
	for _, c := range o.slots.chk {
		rowMag = max(rowMag, c.RowMagnitude(r))
	}
	fast := rowMag <= math.MaxInt64 && (ss.bound == 0 || uint64(ss.maxSl) <= (math.MaxInt64-rowMag)/ss.bound)
	virtual := false
	g := o.recordGroup()
	for _, w := range o.wins {
		if o.closed(w.End) {
			continue
		}
		var p *pane
		if len(o.panes.list) > 0 {
			if p = o.panes.get(w); p != nil && !p.holds(g) {
				p = nil
			}
		}
		if p != nil {
			i, ok := o.find(p)
			if !ok || p.ents[i].slot < 0 {
				continue
			}
			if err := o.slots.check(p.ents[i].slot, r, weight); err != nil {
				return &RejectError{Err: err, Window: w, Key: o.keys.values(p.ents[i].key)}
			}
			continue
		}
		virtual = true
		if fast || !o.kidOK {
			continue
		}
		z := o.keyTotal(w)
		if z < 0 {
			continue
		}
		err := o.slots.check(z, r, weight)
		o.slots.release(z)
		if err != nil {
			return &RejectError{Err: err, Window: w, Key: o.keys.values(o.kid)}
		}
	}
	if !virtual {
		return nil
	}
	_, s := ss.at(ts)
	if s == nil {
		return nil
	}
	i, _, ok := o.sliceEntry(s)
	if !ok || s.ents.at(int(i)).slot < 0 || o.slots.check(s.ents.at(int(i)).slot, r, weight) == nil {
		return nil
	}
	for _, w := range o.wins {
		if p := o.panes.get(w); !o.closed(w.End) && (p == nil || !p.holds(g)) {
			o.materialize(w, o.firedAt(w.End), g)
		}
	}
	return nil
}

// keyTotal merges the current key's live partials in window w into a new
// slot and returns it (−1 when the key holds none in w); the caller
// releases it.
func (o *Operator) keyTotal(w window.Window) int32 {
	z := int32(-1)
	ss := &o.sl
	i := sort.Search(len(ss.list), func(j int) bool { return ss.list[j].w.Start >= w.Start })
	for ; i < len(ss.list) && ss.list[i].w.Start < w.End; i++ {
		s := ss.list[i]
		x, _, ok := o.sliceEntry(s)
		if !ok {
			continue
		}
		e := s.ents.at(int(x))
		if e.slot < 0 {
			continue
		}
		if z < 0 {
			z = o.slots.alloc()
		}
		o.slots.merge(z, e.slot) // merges of partials never fail (aggregate.Checker)
	}
	return z
}

// windowKeys lists the keys of window w from its slices, in order of their
// first arrival into w (a merge of the slices' entries by arrival number),
// with their rows and live partials (sl.keys, sl.parts).
func (o *Operator) windowKeys(w window.Window) {
	ss := &o.sl
	ss.keys, ss.parts = ss.keys[:0], ss.parts[:0]
	i := sort.Search(len(ss.list), func(j int) bool { return ss.list[j].w.Start >= w.Start })
	j := i
	for j < len(ss.list) && ss.list[j].w.Start < w.End {
		j++
	}
	in := ss.list[i:j]
	if len(in) == 0 {
		return
	}
	ss.nextGen(o.keys.ents.len())
	if len(in) == 1 {
		for k := range in[0].ents.len() {
			o.visitKey(in[0].ents.at(k))
		}
		return
	}
	// A min-heap of the slices' positions by the arrival number of their
	// next entry.
	h := ss.heap[:0]
	for _, s := range in {
		if s.ents.len() > 0 {
			h = append(h, cursor{s: s})
		}
	}
	for k := len(h)/2 - 1; k >= 0; k-- {
		ss.siftDown(h, k)
	}
	for len(h) > 0 {
		c := &h[0]
		o.visitKey(c.s.ents.at(c.pos))
		if c.pos++; c.pos == c.s.ents.len() {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		ss.siftDown(h, 0)
	}
	clear(h[:cap(h)])
	ss.heap = h[:0]
}

// nextGen sizes mark and pos for n key ids and starts a new generation of
// marks (no key id marked).
func (ss *sliceStore) nextGen(n int) {
	if len(ss.mark) < n {
		ss.mark = slices.Grow(ss.mark, n-len(ss.mark))[:n]
		ss.pos = slices.Grow(ss.pos, n-len(ss.pos))[:n]
	}
	if ss.gen++; ss.gen == 0 {
		clear(ss.mark)
		ss.gen = 1
	}
}

// visitKey adds slice entry e to its key's line in sl.keys.
func (o *Operator) visitKey(e *sliceEnt) {
	ss := &o.sl
	if ss.mark[e.key] != ss.gen {
		ss.mark[e.key] = ss.gen
		ss.pos[e.key] = int32(len(ss.keys))
		ss.keys = append(ss.keys, vkey{kid: e.key, group: e.group, seq: e.seq, birth: e.birth, head: -1, tail: -1})
	}
	k := &ss.keys[ss.pos[e.key]]
	k.rows += e.rows
	if e.slot >= 0 {
		p := int32(len(ss.parts))
		ss.parts = append(ss.parts, vpart{slot: e.slot, next: -1})
		if k.tail >= 0 {
			ss.parts[k.tail].next = p
		} else {
			k.head = p
		}
		k.tail = p
		k.nlive++
	}
}

// mergeKey merges key k's live partials into slot dst.
func (o *Operator) mergeKey(dst int32, k *vkey) {
	for q := k.head; q >= 0; q = o.sl.parts[q].next {
		o.slots.merge(dst, o.sl.parts[q].slot) // merges of partials never fail
	}
}

// materialize moves the virtual shares of window w into its pane (created
// fired as given when w has none): every key group's with rows in the
// slices (only < 0), or key group only's. Each key of those shares gets an
// entry with the merge of its partials (a tombstone for a key whose rows
// were all retracted), placed by its first arrival among the pane's
// entries.
func (o *Operator) materialize(w window.Window, fired bool, only int) *pane {
	p := o.panes.get(w)
	if p == nil {
		p = o.panes.create(w, fired)
	}
	if only >= 0 {
		defer p.hold(only) // also when it has no rows yet: its next record goes to the pane
	}
	o.loadWindowSlices(w, only)
	o.windowKeys(w)
	ss := &o.sl
	keys := ss.keys[:0] // the keys moving in, filtered in place
	for i := range ss.keys {
		k := ss.keys[i]
		if p.holds(int(k.group)) || only >= 0 && int(k.group) != only {
			continue // the pane has the share already (the slices hold its rows for other windows)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return p
	}
	old, oldSeqs := p.ents, p.seqs
	if n := len(old); n > 0 && ss.beforeSeq(keys[0].seq, keys[0].birth, keys[0].group, oldSeqs[n-1], old[n-1].birth, old[n-1].group) {
		// Interleave by arrival: copy the old entries aside.
		ss.ents = append(ss.ents[:0], old...)
		ss.seqs = append(ss.seqs[:0], oldSeqs...)
		old, oldSeqs = ss.ents, ss.seqs
		p.ents, p.seqs = p.ents[:0], p.seqs[:0]
	} else {
		old, oldSeqs = nil, nil // append after the pane's entries
	}
	p.ents = slices.Grow(p.ents, len(old)+len(keys))
	j := 0
	for i := range keys {
		k := &keys[i]
		for j < len(old) && ss.beforeSeq(oldSeqs[j], old[j].birth, old[j].group, k.seq, k.birth, k.group) {
			p.ents = append(p.ents, old[j])
			p.seqs = append(p.seqs, oldSeqs[j])
			j++
		}
		in := inst{key: k.kid, group: k.group, birth: k.birth, rows: k.rows, slot: -1}
		if k.rows > 0 {
			in.slot = o.slots.alloc()
			o.mergeKey(in.slot, k)
			in.dirty = true
			p.live++
		}
		p.ents = append(p.ents, in)
		p.seqs = append(p.seqs, k.seq)
		p.hold(int(k.group))
		o.keys.ref(k.kid)
		o.markChanged(int(k.group))
	}
	p.ents = append(p.ents, old[j:]...)
	p.seqs = append(p.seqs, oldSeqs[j:]...)
	for i := range p.ents {
		p.idx[o.keys.ent(p.ents[i].key).enc] = int32(i)
	}
	return p
}

// nextVirtual returns the first window after from, in (end, start)
// order, that holds rows in the slices, is not a pane and ends at or
// before thr. The first slice with a window after from gives it (its
// first such window that is not a pane): a later slice's windows that
// start before it would contain this slice too.
//
// With withPanes it also returns windows with a pane (whose virtual
// shares the caller moves in: a pane's shares are not tracked by window).
func (o *Operator) nextVirtual(from window.Window, thr int64, withPanes bool) (window.Window, bool) {
	ss := &o.sl
	// The last window of a slice moves with its start.
	i := sort.Search(len(ss.list), func(j int) bool { return after(ss.list[j].lastW, from) })
	for _, s := range ss.list[i:] {
		ss.wins = o.cfg.Assigner.Assign(s.w.Start, ss.wins[:0])
		for _, w := range ss.wins {
			if !after(w, from) {
				continue
			}
			if w.End > thr {
				return window.Window{}, false
			}
			if !withPanes && len(o.panes.list) > 0 && o.panes.get(w) != nil {
				continue
			}
			return w, true
		}
	}
	return window.Window{}, false
}

// freeSlices frees the slices whose windows are all processed (a prefix of
// the list: the last window of a slice moves with its start).
func (o *Operator) freeSlices() {
	ss := &o.sl
	n := 0
	for n < len(ss.list) && !after(ss.list[n].lastW, ss.done) {
		o.freeSlice(ss.list[n])
		n++
	}
	if n > 0 {
		m := copy(ss.list, ss.list[n:])
		clear(ss.list[m:])
		ss.list = ss.list[:m]
	}
}

// freeAll frees every slice (after an early firing moved every virtual
// share into panes: no window reads the slices).
func (o *Operator) freeAll() {
	ss := &o.sl
	for _, s := range ss.list {
		o.freeSlice(s)
	}
	clear(ss.list)
	ss.list = ss.list[:0]
}

// freeSlice releases slice s's slots and key references (the caller
// removes it from the list).
func (o *Operator) freeSlice(s *slice) {
	ss := &o.sl
	if o.spill != nil {
		o.dropSlice(s)
	}
	for i := range s.ents.len() {
		e := s.ents.at(i)
		if e.slot >= 0 {
			o.slots.release(e.slot)
		}
		o.markChanged(int(e.group))
		o.keys.unref(e.key)
	}
	s.idx.reset()
	delete(ss.byStart, s.w.Start)
	if ss.cur == s {
		ss.cur = nil
	}
	s.ents.reset()
	ss.pool = append(ss.pool, s)
}

// advanceSliced is advancePanes for a sliced operator: the panes and the
// virtual windows the watermark has passed, in (end, start) order. A
// virtual window that closes emits its final rows from its slices; one
// that fires and stays open (modes update and retract) becomes a pane,
// which then fires.
func (o *Operator) advanceSliced(limit int) bool {
	a, v, ss := &o.padv, &o.vadv, &o.sl
	thr := o.sliceThreshold()
	for {
		if v.active {
			if o.virtualContinue(limit) {
				return true
			}
			continue
		}
		if a.p != nil {
			w := a.p.w
			if o.paneContinue(limit) {
				return true
			}
			// Windows are processed in (end, start) order: a pane closed,
			// or fired (modes update and retract), marks the windows up to
			// it processed — a closed pane is gone, and its window must
			// not look virtual to the slices that also held its rows.
			if w.End <= thr && after(w, ss.done) {
				ss.done = w
				o.freeSlices()
			}
			continue
		}
		p := o.paneNext()
		if w, ok := o.nextVirtual(ss.done, thr, false); ok && (p == nil || less(w, p.w)) {
			if o.closed(w.End) {
				o.virtualStart(w, limit)
			} else {
				o.materialize(w, false, -1) // fires next, as a pane
				ss.done = w
				o.freeSlices()
			}
			continue
		}
		if p == nil {
			break
		}
		if (o.closed(p.w.End) || o.cfg.Mode != Final) && after(p.w, ss.done) {
			// Closing, or firing in modes update and retract: the shares
			// still virtual join the pane first. Not when the window is
			// processed already: it fired (its shares are in the pane),
			// or it closed before this advance (a restore under a smaller
			// allowed lateness: installSlices moved its shares in then),
			// and the slices' rows since then are not the window's.
			o.materialize(p.w, p.fired, -1)
		}
		o.paneStart(p, limit)
	}
	*a = paneAdvance{order: a.order[:0]}
	if d := processedUpTo(thr); after(d, ss.done) {
		ss.done = d
	}
	o.freeSlices()
	return false
}

// virtualStart starts closing virtual window w: its keys in emission order.
func (o *Operator) virtualStart(w window.Window, limit int) {
	v := &o.vadv
	o.loadWindowSlices(w, -1)
	if o.cfg.Order != OrderGroup {
		o.streamStart(w, limit)
		return
	}
	o.windowKeys(w)
	keys := o.sl.keys
	v.active, v.w, v.pos, v.z = true, w, 0, -1
	n := len(keys)
	v.order = slices.Grow(v.order[:0], n)[:n]
	for i := range v.order {
		v.order[i] = int32(i)
	}
	if o.cfg.Order == OrderGroup {
		// By key group, then first arrival (a stable counting sort).
		c := &o.canon
		g := o.cfg.KeyGroups
		c.count = slices.Grow(c.count[:0], g+1)[:g+1]
		clear(c.count)
		for i := range keys {
			c.count[keys[i].group+1]++
		}
		for x := 1; x <= g; x++ {
			c.count[x] += c.count[x-1]
		}
		for i := range keys {
			gr := keys[i].group
			v.order[c.count[gr]] = int32(i)
			c.count[gr]++
		}
	}
	o.reserve(min(n, limit))
}

// virtualContinue emits the final rows of the virtual window being closed:
// for each key with rows, the merge of its partials (the partial itself
// when it has one), as an insert with version 1 and is_final. It returns
// true when it stopped because limit rows are pending, false when the
// window is done (and the slices no window needs any more are freed).
func (o *Operator) virtualContinue(limit int) bool {
	v, ss := &o.vadv, &o.sl
	o.ordA, o.ordB = v.w.End, v.w.Start
	if v.stream && o.streamContinue(limit) || !v.stream && o.listedContinue(limit) {
		return true
	}
	v.in, v.stream = nil, false
	clear(v.heap[:cap(v.heap)])
	v.heap = v.heap[:0]
	if v.z >= 0 {
		o.slots.release(v.z)
		v.z = -1
	}
	v.active = false
	ss.done = v.w
	o.freeSlices()
	return false
}

// listedContinue emits the rows of the window virtualStart listed in
// sl.keys (OrderGroup), as streamContinue does for the others: it returns
// true when it stopped at limit pending rows.
func (o *Operator) listedContinue(limit int) bool {
	v, ss := &o.vadv, &o.sl
	for v.pos < len(v.order) {
		if len(o.out) >= limit {
			return true
		}
		k := &ss.keys[v.order[v.pos]]
		v.pos++
		o.markChanged(int(k.group))
		if k.rows <= 0 {
			continue
		}
		slot := ss.parts[k.head].slot
		if k.nlive > 1 {
			if v.z < 0 {
				v.z = o.slots.alloc()
			} else {
				o.slots.reset(v.z)
			}
			o.mergeKey(v.z, k)
			slot = v.z
		}
		o.ordC = k.birth
		// Never emitted before (a window emits once it is a pane): an
		// insert, version 1, final.
		o.pushFinal(k.kid, v.w, slot, 1)
	}
	return false
}

// streamStart starts closing virtual window w in order of first arrival
// (OrderArrival, OrderBirth) without listing its keys first: a merge of
// its slices' entries by arrival number, each key emitted at its first
// entry with the entries of the same key in the window's other slices
// (found through their indexes), so a window of n keys needs no scratch
// of n entries (windowKeys' 48-byte line per key, 29 MiB for q5's
// 600,000 auctions), only a mark per key id. The rows are windowKeys' and
// virtualContinue's: the same keys, order, rows, partials (merged in
// arrival order) and births.
func (o *Operator) streamStart(w window.Window, limit int) {
	v, ss := &o.vadv, &o.sl
	v.active, v.w, v.pos, v.z, v.stream = true, w, 0, -1, true
	i := sort.Search(len(ss.list), func(j int) bool { return ss.list[j].w.Start >= w.Start })
	j := i
	n := 0
	for j < len(ss.list) && ss.list[j].w.Start < w.End {
		n = max(n, ss.list[j].ents.len())
		j++
	}
	v.in = ss.list[i:j]
	h := v.heap[:0]
	for _, s := range v.in {
		if s.ents.len() > 0 {
			h = append(h, cursor{s: s})
		}
	}
	v.heap = h
	for k := len(h)/2 - 1; k >= 0; k-- {
		ss.siftDown(h, k)
	}
	if len(v.in) > 1 {
		ss.nextGen(o.keys.ents.len())
	}
	o.reserve(min(n, limit))
}

// siftDown restores the order of h, a min-heap of slice cursors by the
// arrival of their next entry (before), below position k.
func (ss *sliceStore) siftDown(h []cursor, k int) {
	at := func(c *cursor) *sliceEnt { return c.s.ents.at(c.pos) }
	for {
		m := k
		if l := 2*k + 1; l < len(h) && ss.before(at(&h[l]), at(&h[m])) {
			m = l
		}
		if r := 2*k + 2; r < len(h) && ss.before(at(&h[r]), at(&h[m])) {
			m = r
		}
		if m == k {
			return
		}
		h[k], h[m] = h[m], h[k]
		k = m
	}
}

// streamContinue emits the rows of the window streamStart began, as
// virtualContinue does; it returns true when it stopped at limit pending
// rows, false when the window's entries are all read.
func (o *Operator) streamContinue(limit int) bool {
	v, ss := &o.vadv, &o.sl
	multi := len(v.in) > 1
	for len(v.heap) > 0 {
		if len(o.out) >= limit {
			return true
		}
		c := &v.heap[0]
		e := c.s.ents.at(c.pos)
		from := c.s
		if c.pos++; c.pos == c.s.ents.len() {
			v.heap[0] = v.heap[len(v.heap)-1]
			v.heap = v.heap[:len(v.heap)-1]
		}
		if len(v.heap) > 1 {
			ss.siftDown(v.heap, 0) // a window of one slice reads it in order
		}
		if multi {
			if ss.mark[e.key] == ss.gen {
				continue // emitted at its first entry
			}
			ss.mark[e.key] = ss.gen
		}
		o.markChanged(int(e.group))
		rows := e.rows
		slot := e.slot
		if multi {
			// The key's entries in the window's other slices, in arrival
			// order after this first one.
			v.parts = v.parts[:0]
			if e.slot >= 0 {
				v.parts = append(v.parts, streamPart{seq: e.seq, slot: e.slot})
			}
			enc := o.keys.ent(e.key).enc
			for _, s := range v.in {
				if s == from {
					continue
				}
				x, ok := s.idx.getString(o.keys, enc)
				if !ok {
					continue
				}
				f := s.ents.at(int(x))
				rows += f.rows
				if f.slot >= 0 {
					v.parts = append(v.parts, streamPart{seq: f.seq, slot: f.slot})
				}
			}
			if len(v.parts) > 1 {
				slices.SortFunc(v.parts, func(a, b streamPart) int {
					return cmp.Compare(a.seq, b.seq)
				})
			}
			if len(v.parts) > 0 {
				slot = v.parts[0].slot
			}
		}
		if rows <= 0 {
			continue
		}
		if len(v.parts) > 1 && multi {
			if v.z < 0 {
				v.z = o.slots.alloc()
			} else {
				o.slots.reset(v.z)
			}
			for _, p := range v.parts {
				o.slots.merge(v.z, p.slot) // merges of partials never fail
			}
			slot = v.z
		}
		o.ordC = e.birth
		o.pushFinal(e.key, v.w, slot, 1)
	}
	return false
}

// earlySliced runs an early firing: the virtual shares holding rows move
// into their windows' panes (created unfired: in modes update and retract
// a window after the processed ones has not fired), the slices are freed,
// and the panes fire early.
func (o *Operator) earlySliced() {
	from := o.sl.done
	for {
		w, ok := o.nextVirtual(from, math.MaxInt64, true)
		if !ok {
			break
		}
		o.materialize(w, false, -1)
		from = w
	}
	o.freeAll()
	o.earlyPanes()
}

// numberPanes gives the entries of restored panes that have none arrival
// numbers in pane order (panes in (end, start) order, entries in theirs)
// and returns the next number.
func (o *Operator) numberPanes() uint64 {
	var n uint64
	for _, p := range o.panes.list {
		p.seqs = p.seqs[:0]
		for range p.ents {
			p.seqs = append(p.seqs, n)
			n++
		}
	}
	return n
}

// installSlices puts restored slices in place (their entries in arrival
// order, next the next arrival number) and derives the rest: each slice's
// last window, the keys' references to their entries, the bound on
// partials, and the processed windows — up to thr, the threshold the
// snapshotter had reached (sliceThreshold). Under a smaller allowed
// lateness than the snapshotter's (mode final), the windows the new
// lateness closed take no more records and emit their final rows at the
// next advance: they become panes now, holding the rows of their slices.
func (o *Operator) installSlices(list []*slice, next uint64, thr int64) {
	ss := &o.sl
	ss.list, ss.seq = list, next
	for _, p := range o.panes.list {
		p.mat = make([]uint64, o.panes.words)
		for i := range p.ents {
			p.hold(int(p.ents[i].group))
		}
	}
	ss.byStart = make(map[int64]*slice, len(list))
	ss.cur, ss.curW = nil, window.Window{}
	ss.bound = 0
	for _, s := range list {
		ss.wins = o.cfg.Assigner.Assign(s.w.Start, ss.wins[:0])
		s.lastW = ss.wins[len(ss.wins)-1]
		ss.byStart[s.w.Start] = s
		for i := range s.ents.len() {
			e := s.ents.at(i)
			s.idx.set(o.keys, o.keys.ent(e.key).enc, int32(i), e.slot)
			if e.slot >= 0 {
				o.boundSlot(e.slot)
			}
		}
	}
	ss.done = processedUpTo(thr)
	if o.cfg.Mode == Final && o.closedThrough > thr {
		from := ss.done
		for {
			w, ok := o.nextVirtual(from, o.closedThrough, true)
			if !ok {
				break
			}
			o.materialize(w, o.firedAt(w.End), -1)
			from = w
		}
		ss.done = processedUpTo(o.closedThrough)
		o.freeSlices()
	}
}
