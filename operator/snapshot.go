package operator

import (
	"errors"
	"fmt"
	"github.com/tidemark/tidemark/keygroup"
	"math"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// Snapshot format, version 4 (state package encoding: Uint/Int varints,
// strings length-prefixed). Everything is written in a deterministic order
// (key ids, slot ids, pane order, session order per key, aggregate sets in
// value order), so equal states give equal bytes.
//
//	Byte(1)                              section version
//	shape: Byte(0 panes | 1 sessions | 2 sliced panes, version 4) Byte(mode)
//	       Uint(#aggs) Byte(kind)…  Uint(#key fields) Byte(kind)…
//	Int(watermark) Int(now) Int(nextEarly) Int(closed through; version 3)
//	Int(rows emitted) Int(partly too late) Int(skipped windows)
//	[sessions: Uint(next session seq)]
//	slot table: Uint(#free) Uint(slot)… (free list, in order) Uint(#held)
//	            (slots ever allocated = #free + #held)
//	key table:  Uint(#free) Uint(id)… (free list, in order) Uint(#other ids)
//	            per id not free, ascending: String(encoded key) Uint(maxVer)
//	                [sessions: Bool(closed memory) [Int(largest closed end)]
//	                           Uint(#sessions) session…  (by start)]
//	[panes: Uint(#panes) per pane in (end, start) order:
//	        Int(start) Int(end−start) Bool(fired) Uint(#entries) entry…
//	        sliced: Uint(next arrival number) Uint(#slices) per slice by
//	        start: Int(start) Int(end−start) Uint(#entries) slice entry…]
//
//	entry (pane):  Uint(key id) inst [sliced: Uint(arrival number)]
//	slice entry:   Uint(key id) Uint(arrival number) Byte(flags: 1 live slot)
//	               [live: Uint(slot)] Int(rows) Uint(birth)
//	               [live: per aggregate its slot state]
//	               (in ascending arrival number within a slice)
//	session:       Int(start) Int(end−start) Uint(seq) inst
//	inst: Byte(flags: 1 live slot, 2 emitted, 4 dirty, 8 fired (sessions),
//	           16 emitted window = own window, 32 emitted window explicit;
//	           neither: the zero window)
//	      [live: Uint(slot)] Int(rows) Uint(version) Int(version − emitted version)
//	      [explicit: Int(Δstart) Int(Δend) from the own window]
//	      [live: per aggregate its slot state (aggregate.Column.AppendSlot);
//	             retract mode: Uint(#prev) Value… (the last emitted values)]
//
// Derived state is rebuilt on restore rather than stored: key values and
// key groups (from the encoded key), the key → id map, key reference
// counts and idleness (from the panes and sessions that hold each key),
// pane indexes and live counts, and the session timers (a fire timer for
// each session that has not fired, a close timer for each; stale timers of
// the running operator are no-ops, so dropping them changes nothing);
// for slices, the last window of each, the keys' references to their
// entries and which windows are processed (slices.go: those ending at or
// before the closed horizon in mode final, the watermark otherwise).

// snapshotVersion is the operator section's format version: 3 adds the
// keys' closed-session memory and the closed horizon, 4 the slices of
// sliced sliding windows (Restore also reads 2 and 3; a version 3 snapshot
// of sliding windows restores into a sliced operator as windows that are
// all panes).
const snapshotVersion = 4

const (
	flagLive     = 1 << iota // the instance holds a slot
	flagEmitted              // a row is live downstream
	flagDirty                // changed since the last emission
	flagFired                // session has fired
	flagEmitSame             // emitW equals the instance's window
	flagEmitDiff             // emitW is written as offsets from the window
	flagMask     = 1<<iota - 1
)

// Restore limits: counts above them are corrupt input (each counted
// element also takes at least one byte of input, which bounds allocation
// by the input's size first).
const (
	maxCount = math.MaxInt32
)

// ErrNotFresh is returned by Restore on an operator that has already
// processed input.
var ErrNotFresh = errors.New("operator: Restore needs a fresh operator from New")

// Snapshot appends the operator's complete state to e (format version 1,
// described in snapshot.go): watermark, key table, slot table with the
// aggregate accumulators and the values last emitted per slot (retract
// mode), panes or sessions with their emission state, the early-firing
// schedule and the counters. The operator is unchanged.
//
// Precondition: call Snapshot between calls to Process, AdvanceWatermark
// and OnProcessingTime, after Drain: rows not yet drained are not part of
// the snapshot (they belong to the caller's output for the input already
// processed). Equal states give byte-identical snapshots. Not safe for
// concurrent use with any other method (aggregate columns reuse scratch
// buffers while encoding).
func (o *Operator) Snapshot(e *state.Encoder) {
	e.Byte(snapshotVersion)
	o.appendShape(e)
	e.Int(o.wm)
	e.Int(o.now)
	e.Int(o.nextEarly)
	e.Int(o.closedThrough)
	e.Int(o.emitted)
	e.Int(o.partial)
	e.Int(o.skippedWindows)
	sessions := o.cfg.Gap > 0
	if sessions {
		e.Uint(o.sess.seq)
	}

	e.Uint(uint64(len(o.slots.free)))
	for _, s := range o.slots.free {
		e.Uint(uint64(s))
	}
	e.Uint(uint64(o.slots.n - len(o.slots.free)))

	k := o.keys
	e.Uint(uint64(len(k.free)))
	freed := make([]bool, k.ents.len())
	for _, id := range k.free {
		e.Uint(uint64(id))
		freed[id] = true
	}
	e.Uint(uint64(k.ents.len() - len(k.free)))
	for id := range uint32(k.ents.len()) {
		if freed[id] {
			continue
		}
		o.appendKeyEntry(e, k.ent(id), sessions, nil, true)
	}

	if !sessions {
		e.Uint(uint64(len(o.panes.list)))
		for _, p := range o.panes.list {
			e.Int(p.w.Start)
			e.Int(p.w.End - p.w.Start)
			e.Bool(p.fired)
			e.Uint(uint64(len(p.ents)))
			for i := range p.ents {
				in := &p.ents[i]
				e.Uint(uint64(in.key))
				o.appendInst(e, in, p.w, false, true)
				if o.sl.on {
					e.Uint(p.seqs[i])
				}
			}
		}
		if !o.sl.on {
			return
		}
		e.Uint(o.sl.seq)
		e.Uint(uint64(len(o.sl.list)))
		for _, s := range o.sl.list {
			e.Int(s.w.Start)
			e.Int(s.w.End - s.w.Start)
			e.Uint(uint64(s.ents.len()))
			for i := range s.ents.len() {
				se := s.ents.at(i)
				e.Uint(uint64(se.key))
				e.Uint(se.seq)
				o.appendSliceEnt(e, se, true)
			}
		}
	}
}

// appendSliceEnt writes a slice entry after its key and arrival number:
// flags, the slot number (withSlot), rows, birth and the slot's state.
func (o *Operator) appendSliceEnt(e *state.Encoder, se *sliceEnt, withSlot bool) {
	if se.slot < 0 {
		e.Byte(0)
	} else {
		e.Byte(flagLive)
		if withSlot {
			e.Uint(uint64(se.slot))
		}
	}
	e.Int(se.rows)
	e.Uint(se.birth)
	if se.slot >= 0 {
		for _, c := range o.cfg.Aggs {
			c.AppendSlot(e, se.slot)
		}
	}
}

// appendShape writes what the snapshot's layout depends on, so that a
// snapshot restored under a different configuration fails clearly.
func (o *Operator) appendShape(e *state.Encoder) {
	switch {
	case o.cfg.Gap > 0:
		e.Byte(1)
	case o.sl.on:
		e.Byte(2)
	default:
		e.Byte(0)
	}
	e.Byte(byte(o.cfg.Mode))
	e.Uint(uint64(len(o.cfg.Aggs)))
	for _, c := range o.cfg.Aggs {
		e.Byte(byte(c.Kind()))
	}
	e.Uint(uint64(len(o.cfg.Key)))
	for _, f := range o.cfg.Key {
		e.Byte(byte(f.Kind))
	}
}

// appendKeyEntry writes a key's entry: its encoding, its version and, for
// session windows, its closed-session horizon and its sessions, each
// numbered by its creation number (whole, the whole-operator snapshot, with
// slot numbers) or by its rank in ranks (a key-group section).
func (o *Operator) appendKeyEntry(e *state.Encoder, ke *keyEntry, sessions bool, ranks map[*session]int, whole bool) {
	e.String(ke.enc)
	e.Uint(uint64(ke.version()))
	if !sessions {
		return
	}
	e.Bool(ke.closedHeld)
	if ke.closedHeld {
		e.Int(ke.closedEnd)
	}
	e.Uint(uint64(len(ke.sessions)))
	for _, s := range ke.sessions {
		e.Int(s.w.Start)
		e.Int(s.w.End - s.w.Start)
		if whole {
			e.Uint(s.seq)
		} else {
			e.Uint(uint64(ranks[s]))
		}
		o.appendInst(e, &s.inst, s.w, s.fired, whole)
	}
}

// appendInst writes an instance of window w: its flags, its slot number
// when withSlot (the whole-operator snapshot; the key-group sections and
// the spilled entries leave it out, their reader allocates the slot),
// counters and, when live, its aggregate slot.
func (o *Operator) appendInst(e *state.Encoder, in *inst, w window.Window, fired, withSlot bool) {
	var flags byte
	if in.slot >= 0 {
		flags |= flagLive
	}
	if in.emitted {
		flags |= flagEmitted
	}
	if in.dirty {
		flags |= flagDirty
	}
	if fired {
		flags |= flagFired
	}
	switch in.emitW {
	case window.Window{}:
	case w:
		flags |= flagEmitSame
	default:
		flags |= flagEmitDiff
	}
	e.Byte(flags)
	if withSlot && in.slot >= 0 {
		e.Uint(uint64(in.slot))
	}
	e.Int(in.rows)
	e.Uint(uint64(in.version))
	e.Int(int64(in.version) - int64(in.emitV))
	e.Uint(in.birth)
	if flags&flagEmitDiff != 0 {
		// Wrapping differences round-trip exactly.
		e.Int(in.emitW.Start - w.Start)
		e.Int(in.emitW.End - w.End)
	}
	if in.slot >= 0 {
		for _, c := range o.cfg.Aggs {
			c.AppendSlot(e, in.slot)
		}
		if o.slots.keep {
			prev := o.slots.prev[in.slot]
			e.Uint(uint64(len(prev)))
			for _, v := range prev {
				e.Value(v)
			}
		}
	}
}

// Restore replaces the state of a fresh operator (from New, with nothing
// processed) by the state a Snapshot of an operator with the same Config
// wrote: the restored operator then produces exactly the rows (operations,
// values, versions, is_final, watermark_at, updated_at) the snapshotted one
// would have produced on the same further input, and a Snapshot of it
// equals the one it was restored from.
//
// Errors: ErrNotFresh when the operator has processed input; an error
// (wrapping state.ErrTruncated for a short input) when the input is not a
// version-1 operator snapshot for this configuration or is inconsistent
// (an id or slot out of range or held twice, a key encoding that does not
// match the key fields, panes out of order, …). Restore never panics on
// corrupt input and allocates at most in proportion to the input's size.
// On error the operator is left fresh (as New returned it); d's error is
// set and its position unspecified. On success d is positioned after the
// section.
func (o *Operator) Restore(d *state.Decoder) error {
	if o.slots.n != 0 || o.keys.ents.len() != 0 || len(o.panes.list) != 0 || o.sess.seq != 0 ||
		o.wm != changelog.WatermarkNone || o.nextEarly != 0 || o.emitted != 0 || len(o.out) != 0 {
		return ErrNotFresh
	}
	if d.Err() != nil {
		return d.Err()
	}
	r := restorer{o: o, d: d}
	r.run()
	if d.Err() != nil {
		r.undo()
		return fmt.Errorf("operator: restore: %w", d.Err())
	}
	o.indexEntries()
	return nil
}

// restorer decodes a snapshot into new tables and installs them only when
// the whole section has been read without error.
type restorer struct {
	o       *Operator
	d       *state.Decoder
	version byte // of the section being read

	wm, now, nextEarly, emitted, partial, skipped int64
	closedThrough                                 int64
	storedClosed                                  int64 // the closed horizon the snapshot holds
	sliced                                        bool  // a sliced operator's snapshot (shape kind 2)
	seq                                           uint64

	nslots    int
	slotFree  []int32
	slotUsed  []bool // free or held by an instance
	grown     bool
	prev      [][]row.Value
	keys      *keyTable
	keyFreed  []bool
	panes     []*pane
	slices    []*slice
	nextSeq   uint64
	sessions  []*session
	sessLive  int
	heldSlots int
}

func (r *restorer) run() {
	o, d := r.o, r.d
	r.version = d.Section("operator", 2, snapshotVersion)
	r.shape()
	r.wm, r.now, r.nextEarly = d.Int(), d.Int(), d.Int()
	r.closedThrough = o.horizon(r.wm)
	r.storedClosed = r.closedThrough
	if r.version >= 3 {
		r.storedClosed = d.Int()
		r.closedThrough = max(r.closedThrough, r.storedClosed)
	}
	r.emitted, r.partial, r.skipped = d.Int(), d.Int(), d.Int()
	sessions := o.cfg.Gap > 0
	if sessions {
		r.seq = d.Uint()
	}
	r.slotTable()
	r.keyTable()
	if !sessions {
		r.paneList()
		if r.sliced {
			r.sliceList()
		}
	}
	if d.Err() != nil {
		return
	}
	// Every slot ever allocated is either free or held by one instance.
	if held := r.nslots - len(r.slotFree); r.heldSlots != held {
		d.Fail("%d slots are held by instances, the slot table says %d", r.heldSlots, held)
		return
	}
	r.install()
}

func (r *restorer) shape() {
	o, d := r.o, r.d
	kind := d.Byte()
	mode := d.Byte()
	if d.Err() != nil {
		return
	}
	want := byte(0)
	switch {
	case o.cfg.Gap > 0:
		want = 1
	case o.sl.on:
		want = 2
	}
	// A sliced operator also restores an unsliced one's panes (they stay
	// panes); the other way round the slices would have no place.
	if kind != want && !(kind == 0 && want == 2) {
		d.Fail("snapshot of %s windows, operator has %s windows", windowsName(kind), windowsName(want))
		return
	}
	r.sliced = kind == 2
	if Mode(mode) != o.cfg.Mode {
		d.Fail("snapshot of emit mode %d, operator has %d", mode, o.cfg.Mode)
		return
	}
	n := d.Len(maxCount, 1)
	if d.Err() == nil && n != len(o.cfg.Aggs) {
		d.Fail("snapshot has %d aggregates, operator %d", n, len(o.cfg.Aggs))
		return
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		if k := row.Kind(d.Byte()); d.Err() == nil && k != o.cfg.Aggs[i].Kind() {
			d.Fail("aggregate %d is %s in the snapshot, %s in the operator", i, k, o.cfg.Aggs[i].Kind())
		}
	}
	n = d.Len(maxCount, 1)
	if d.Err() == nil && n != len(o.cfg.Key) {
		d.Fail("snapshot has %d key fields, operator %d", n, len(o.cfg.Key))
		return
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		if k := row.Kind(d.Byte()); d.Err() == nil && k != o.cfg.Key[i].Kind {
			d.Fail("key field %d is %s in the snapshot, %s in the operator", i, k, o.cfg.Key[i].Kind)
		}
	}
}

func windowsName(kind byte) string {
	switch kind {
	case 0:
		return "tumbling/sliding"
	case 1:
		return "session"
	case 2:
		return "sliced sliding (one partial aggregate per slice; an operator with NoSlicing, or with an aggregate that cannot be sliced, keeps one per window)"
	}
	return fmt.Sprintf("unknown (%d)", kind)
}

func (r *restorer) slotTable() {
	d := r.d
	nfree := d.Len(maxCount, 1)
	if d.Err() != nil {
		return
	}
	free := make([]int32, 0, nfree)
	for i := 0; i < nfree; i++ {
		s := d.Uint()
		if s > maxCount {
			d.Fail("free slot %d out of range", s)
		}
		free = append(free, int32(s))
	}
	// Held slots are written with their instances, at least one byte each:
	// this bounds the columns' growth by the input's size.
	held := d.Len(maxCount-nfree, 1)
	if d.Err() != nil {
		return
	}
	r.nslots = nfree + held
	r.slotUsed = make([]bool, r.nslots)
	for _, s := range free {
		if int(s) >= r.nslots || r.slotUsed[s] {
			d.Fail("free slot %d out of range or listed twice", s)
			return
		}
		r.slotUsed[s] = true
	}
	r.slotFree = free
	for _, c := range r.o.cfg.Aggs {
		c.Grow(r.nslots)
	}
	r.grown = true
	if r.o.slots.keep {
		r.prev = make([][]row.Value, r.nslots)
	}
}

func (r *restorer) keyTable() {
	o, d := r.o, r.d
	nfree := d.Len(maxCount, 1)
	if d.Err() != nil {
		return
	}
	free := make([]uint32, 0, nfree)
	for i := 0; i < nfree; i++ {
		id := d.Uint()
		if id > math.MaxUint32 {
			d.Fail("free key id %d out of range", id)
		}
		free = append(free, uint32(id))
	}
	// Every id not free takes at least two bytes (encoded key, maxVer).
	nlive := d.Len(maxCount, 2)
	if d.Err() != nil {
		return
	}
	n := nfree + nlive
	if uint64(n) > math.MaxUint32 {
		d.Fail("%d key ids is above the limit %d", n, uint64(math.MaxUint32))
		return
	}
	k := newKeyTable(o.cfg.Key, o.cfg.KeyGroups)
	k.extra = o.keys.extra
	r.keys = k
	for range n {
		k.ents.add(keyEntry{})
	}
	if !k.intKey {
		k.ids = make(map[string]uint32, nlive)
	}
	r.keyFreed = make([]bool, n)
	for _, id := range free {
		if int(id) >= n || r.keyFreed[id] {
			d.Fail("free key id %d out of range or listed twice", id)
			return
		}
		r.keyFreed[id] = true
	}
	k.free = free
	sessions := o.cfg.Gap > 0
	for id := range uint32(k.ents.len()) {
		if r.keyFreed[id] {
			continue
		}
		enc := d.String()
		maxVer := d.Uint()
		if d.Err() != nil {
			return
		}
		if maxVer > math.MaxUint32 {
			d.Fail("key %d: version %d out of range", id, maxVer)
			return
		}
		if err := checkKey(enc, o.cfg.Key); err != nil {
			d.Fail("key %d: %v", id, err)
			return
		}
		before := k.count()
		k.set(enc, uint32(id))
		if k.count() == before {
			d.Fail("key %d: encoded key listed twice", id)
			return
		}
		ke := k.ent(id)
		*ke = keyEntry{enc: enc}
		if k.extra || maxVer != 0 {
			ke.keyExtra = &keyExtra{maxVer: uint32(maxVer)}
		}
		if k.groups > 0 {
			ke.group = uint16(keygroup.OfKey([]byte(enc), k.groups))
		}
		if sessions {
			if r.version >= 3 && d.Bool() {
				ke.closedHeld, ke.closedEnd = true, d.Int()
			}
			r.keySessions(uint32(id))
		}
	}
}

func (r *restorer) keySessions(id uint32) {
	d := r.d
	n := d.Len(maxCount, 6)
	if d.Err() != nil || n == 0 {
		return
	}
	ke := r.keys.ent(id)
	ke.sessions = nil
	ke.reserveSessions(n)
	for i := 0; i < n; i++ {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		seq := d.Uint()
		if d.Err() != nil {
			return
		}
		if seq >= r.seq {
			d.Fail("key %d: session seq %d is not below the next seq %d", id, seq, r.seq)
			return
		}
		if i > 0 && ke.sessions[i-1].w.Start >= w.Start {
			d.Fail("key %d: sessions out of order", id)
			return
		}
		s := &session{w: w, seq: seq}
		s.key, s.group = id, r.keys.ent(id).group
		fired, live := r.inst(&s.inst, w)
		if d.Err() != nil {
			return
		}
		if !live {
			d.Fail("key %d: session without a slot", id)
			return
		}
		s.fired = fired
		ke.sessions = append(ke.sessions, s)
		r.sessions = append(r.sessions, s)
	}
}

func (r *restorer) paneList() {
	d := r.d
	n := d.Len(maxCount, 4)
	if d.Err() != nil {
		return
	}
	r.panes = make([]*pane, 0, n)
	byEnd := make(map[int64]bool, n)
	for i := 0; i < n; i++ {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		fired := d.Bool()
		m := d.Len(maxCount, 5)
		if d.Err() != nil {
			return
		}
		if i > 0 && !less(r.panes[i-1].w, w) {
			d.Fail("pane %s out of order", w)
			return
		}
		if byEnd[w.End] {
			d.Fail("two panes end at %d", w.End)
			return
		}
		byEnd[w.End] = true
		p := &pane{w: w, fired: fired, idx: make(map[string]int32, m), ents: make([]inst, m)}
		for j := range p.ents {
			in := &p.ents[j]
			kid := d.Uint()
			if d.Err() != nil {
				return
			}
			if kid >= uint64(r.keys.ents.len()) || r.keyFreed[kid] {
				d.Fail("pane %s: key id %d out of range or free", w, kid)
				return
			}
			in.key, in.group = uint32(kid), r.keys.ent(uint32(kid)).group
			// One hash operation: a key listed twice does not grow the map.
			before := len(p.idx)
			p.idx[r.keys.ent(uint32(kid)).enc] = int32(j)
			if len(p.idx) == before {
				d.Fail("pane %s: key %d listed twice", w, kid)
				return
			}
			isFired, live := r.inst(in, w)
			if d.Err() != nil {
				return
			}
			if isFired {
				d.Fail("pane %s: entry with the session fired flag", w)
				return
			}
			if live {
				p.live++
			}
			if r.sliced {
				seq := d.Uint()
				if d.Err() != nil {
					return
				}
				if j > 0 && seq <= p.seqs[j-1] {
					d.Fail("pane %s: arrival numbers out of order", w)
					return
				}
				p.seqs = append(p.seqs, seq)
			}
		}
		r.panes = append(r.panes, p)
	}
}

// sliceList reads the slices (version 4).
func (r *restorer) sliceList() {
	o, d := r.o, r.d
	r.nextSeq = d.Uint()
	n := d.Len(maxCount, 3)
	if d.Err() != nil {
		return
	}
	r.slices = make([]*slice, 0, n)
	for i := 0; i < n; i++ {
		start := d.Int()
		w := window.Window{Start: start, End: start + d.Int()}
		m := d.Len(maxCount, 4)
		if d.Err() != nil {
			return
		}
		if i > 0 && r.slices[i-1].w.End > w.Start || w.End <= w.Start {
			d.Fail("slice %s out of order or empty", w)
			return
		}
		if got := o.sl.slicer.SliceOf(w.Start); got != w {
			d.Fail("slice %s is not a slice of the windows (%s is)", w, got)
			return
		}
		s := &slice{w: w}
		for range m {
			s.ents.add(sliceEnt{})
		}
		seen := make(map[uint32]bool, m)
		for j := range s.ents.len() {
			se := s.ents.at(j)
			kid := d.Uint()
			se.seq = d.Uint()
			if d.Err() != nil {
				return
			}
			if kid >= uint64(r.keys.ents.len()) || r.keyFreed[kid] || seen[uint32(kid)] {
				d.Fail("slice %s: key id %d out of range, free or listed twice", w, kid)
				return
			}
			seen[uint32(kid)] = true
			if se.seq >= r.nextSeq || j > 0 && se.seq <= s.ents.at(j-1).seq {
				d.Fail("slice %s: arrival number %d out of order or not below %d", w, se.seq, r.nextSeq)
				return
			}
			se.key, se.group = uint32(kid), r.keys.ent(uint32(kid)).group
			flags := d.Byte()
			if d.Err() != nil {
				return
			}
			if flags&^flagLive != 0 {
				d.Fail("slice %s: bad entry flags %#x", w, flags)
				return
			}
			se.slot = -1
			if flags&flagLive != 0 {
				se.slot = r.slot()
				if d.Err() != nil {
					return
				}
			}
			se.rows = d.Int()
			se.birth = d.Uint()
			if d.Err() != nil {
				return
			}
			if (se.slot >= 0) != (se.rows > 0) {
				d.Fail("slice %s: entry with %d rows and live %v", w, se.rows, se.slot >= 0)
				return
			}
			if se.slot >= 0 {
				s.live++
				for _, c := range o.cfg.Aggs {
					c.RestoreSlot(d, se.slot)
				}
			}
		}
		r.slices = append(r.slices, s)
	}
}

// inst reads an instance (not its key) and its slot state; it reports the
// fired flag and whether the instance holds a slot.
func (r *restorer) inst(in *inst, w window.Window) (fired, live bool) {
	o, d := r.o, r.d
	flags := readInstFlags(d)
	if d.Err() != nil {
		return
	}
	live = flags&flagLive != 0
	in.slot = -1
	if live {
		in.slot = r.slot()
		if d.Err() != nil {
			return
		}
	}
	readInstCounts(d, in, w, flags)
	if d.Err() != nil {
		return
	}
	if live {
		for _, c := range o.cfg.Aggs {
			c.RestoreSlot(d, in.slot)
		}
		if o.slots.keep {
			r.prevValues(in.slot)
		}
	}
	return flags&flagFired != 0, live
}

// slot reads the slot number of a live instance or slice entry, failing
// the decoder on a number out of range or already held, and counts it held.
func (r *restorer) slot() int32 {
	d := r.d
	s := d.Uint()
	if d.Err() != nil {
		return -1
	}
	if s >= uint64(r.nslots) || r.slotUsed[s] {
		d.Fail("slot %d out of range, free or held twice", s)
		return -1
	}
	r.slotUsed[s] = true
	r.heldSlots++
	return int32(s)
}

// readInstFlags reads an instance's flags byte (appendInst), failing d on
// bits no writer sets or on both emitted-window flags at once.
func readInstFlags(d *state.Decoder) byte {
	flags := d.Byte()
	if d.Err() != nil {
		return 0
	}
	if flags&^flagMask != 0 || flags&(flagEmitSame|flagEmitDiff) == flagEmitSame|flagEmitDiff {
		d.Fail("bad instance flags %#x", flags)
		return 0
	}
	return flags
}

// readInstCounts reads what appendInst writes after an instance's flags
// and slot number: rows, version, emitted version, birth and, by the
// flags, the emitted window (relative to w). It fails d on versions out of
// range.
func readInstCounts(d *state.Decoder, in *inst, w window.Window, flags byte) {
	in.rows = d.Int()
	ver := d.Uint()
	dv := d.Int()
	in.birth = d.Uint()
	if d.Err() != nil {
		return
	}
	emitV := int64(ver) - dv
	if ver > math.MaxUint32 || dv < -math.MaxUint32 || dv > math.MaxUint32 || emitV < 0 || emitV > math.MaxUint32 {
		d.Fail("version %d / emitted version offset %d out of range", ver, dv)
		return
	}
	in.version, in.emitV = uint32(ver), uint32(emitV)
	in.emitted = flags&flagEmitted != 0
	in.dirty = flags&flagDirty != 0
	switch {
	case flags&flagEmitSame != 0:
		in.emitW = w
	case flags&flagEmitDiff != 0:
		in.emitW = window.Window{Start: w.Start + d.Int(), End: w.End + d.Int()}
	}
}

// prevValues reads a slot's last emitted values: none, or one per
// aggregate, each null or of the aggregate's kind.
func (r *restorer) prevValues(s int32) {
	r.prev[s] = readPrevValues(r.d, r.o, s)
}

// readPrevValues reads slot s's last emitted values (nil for none).
func readPrevValues(d *state.Decoder, o *Operator, s int32) []row.Value {
	n := d.Len(len(o.cfg.Aggs), 1)
	if d.Err() != nil || n == 0 {
		return nil
	}
	if n != len(o.cfg.Aggs) {
		d.Fail("slot %d: %d emitted values for %d aggregates", s, n, len(o.cfg.Aggs))
		return nil
	}
	vals := make([]row.Value, n)
	for i := range vals {
		v := d.Value()
		if d.Err() != nil {
			return nil
		}
		if !v.IsNull() && v.Kind != o.cfg.Aggs[i].Kind() {
			d.Fail("slot %d: emitted value %d is %s, aggregate is %s", s, i, v.Kind, o.cfg.Aggs[i].Kind())
			return nil
		}
		vals[i] = v
	}
	return vals
}

// install replaces the operator's state with the decoded one and derives
// the rest: key reference counts and idleness, pane lookup, timers.
func (r *restorer) install() {
	o := r.o
	k := r.keys
	for _, p := range r.panes {
		for i := range p.ents {
			k.ent(p.ents[i].key).refs++
		}
	}
	for _, s := range r.sessions {
		k.ent(s.key).refs++
	}
	for _, s := range r.slices {
		for i := range s.ents.len() {
			k.ent(s.ents.at(i).key).refs++
		}
	}
	for id := range uint32(k.ents.len()) {
		if !r.keyFreed[id] && k.ent(id).held() {
			k.ent(id).refs++
		}
	}
	for id := range uint32(k.ents.len()) {
		if !r.keyFreed[id] && k.ent(id).refs == 0 {
			k.ent(id).idle = true
			k.idle++
		}
	}
	o.wm, o.now, o.nextEarly = r.wm, r.now, r.nextEarly
	o.closedThrough = r.closedThrough
	o.emitted, o.partial, o.skippedWindows = r.emitted, r.partial, r.skipped
	k.perGroup = o.keys.perGroup
	k.rebuildGroups()
	o.keys = k
	o.slots.n = r.nslots
	o.slots.free = r.slotFree
	if o.slots.keep {
		o.slots.prev = r.prev
	}
	o.panes.init()
	o.panes.list = r.panes
	for _, p := range r.panes {
		o.panes.byEnd[p.w.End] = p
	}
	o.sess = sessionStore{keys: k, seq: r.seq, live: len(r.sessions)}
	if o.sl.on {
		// The snapshotter had processed its virtual windows up to its
		// threshold: the closed horizon it wrote (mode final) or the
		// watermark.
		thr := r.storedClosed
		if o.cfg.Mode != Final {
			thr = r.wm
		}
		next := r.nextSeq
		if !r.sliced {
			next = o.numberPanes() // an unsliced operator's panes: arrival order within each
		}
		for _, p := range o.panes.list {
			if len(p.seqs) > 0 && p.seqs[len(p.seqs)-1] >= next {
				r.d.Fail("pane %s: arrival number %d not below the next one %d", p.w, p.seqs[len(p.seqs)-1], next)
				return
			}
		}
		o.installSlices(r.slices, next, thr)
	}
	// Timers in (key id, start) order; pops are ordered by (time, kind,
	// seq), which is total, so the insertion order does not matter.
	for _, s := range r.sessions {
		o.schedule(s)
	}
	for id := range uint32(k.ents.len()) {
		if !r.keyFreed[id] && k.ent(id).held() {
			o.restoreForget(uint32(id))
		}
	}
}

// undo empties the slots a failed restore may have written, leaving the
// operator as New returned it.
func (r *restorer) undo() {
	if !r.grown {
		return
	}
	for _, c := range r.o.cfg.Aggs {
		for s := 0; s < r.nslots; s++ {
			c.Reset(int32(s))
		}
	}
}

// checkKey reports whether enc is a key encoding AppendKey could have
// written for fields: a valid tag per field (0 null; 1 for bool, int and
// timestamp fields; 2 for strings; 3 and a parseable decimal for decimal
// fields), lengths within enc, nothing after the last field.
func checkKey(enc string, fields []row.Field) error {
	p := 0
	for i, f := range fields {
		if p >= len(enc) {
			return fmt.Errorf("encoding ends before field %d", i)
		}
		tag := enc[p]
		p++
		switch {
		case tag == 0:
		case tag == 1 && f.Kind != row.KindString && f.Kind != row.KindDecimal:
			if len(enc)-p < 8 {
				return fmt.Errorf("field %d: short value", i)
			}
			p += 8
		case tag == 2 && f.Kind == row.KindString, tag == 3 && f.Kind == row.KindDecimal:
			n, w := uvarint(enc[p:])
			if w <= 0 || n > uint64(len(enc)-p-w) {
				return fmt.Errorf("field %d: bad length", i)
			}
			p += w
			s := enc[p : p+int(n)]
			p += int(n)
			if tag == 3 {
				if _, err := row.ParseDecimal([]byte(s)); err != nil {
					return fmt.Errorf("field %d: %v", i, err)
				}
			}
		default:
			return fmt.Errorf("field %d (%s): bad tag %d", i, f.Kind, tag)
		}
	}
	if p != len(enc) {
		return fmt.Errorf("%d bytes after the last field", len(enc)-p)
	}
	return nil
}

// uvarint is binary.Uvarint over a string.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < 10; i++ {
		b := s[i]
		if b < 0x80 {
			if i == 9 && b > 1 {
				return 0, -1
			}
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}
