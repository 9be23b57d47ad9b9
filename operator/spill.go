package operator

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// Window state on the disk backend (docs/state.md). An operator given a
// store (UseStore) keeps its panes as the hot tier over the store: when
// the entries of the panes that have not fired hold more than the tier's
// budget, every such entry is written to the store in one batch — its
// partial aggregate, rows, birth and arrival number — and dropped from
// memory. A record for a key whose entry was written starts a new partial
// in memory; no record reads the store. When a window fires (or closes
// without having fired) its key groups' partials are read back in one
// scan each, merged in arrival order (the earliest partial accumulates the
// later ones, as slices merge) into the pane, and the window's span of
// each key group is forgotten by one range delete. Two cases read the
// store before the window fires, for that (window, key group) only and
// once per write-back: a retraction (the key's full accumulator must be
// known), and an update an aggregate checks (an int sum) when the bound
// on the partials written cannot show the total stays in range.
//
// Only tumbling windows without early firing and without aggregates whose
// result depends on the order of updates spill (UseStore reports it).
//
// The panes of a window that fired and waits for late rows (allowed
// lateness) spill too: firing read every partial back, so a fired
// window's entries are whole instances — the accumulator, rows, version,
// the live downstream row's version and, in retract mode, its values —
// and each is written whole, once per key (a fired window's span of a key
// group holds either nothing or every entry of the key group the window
// holds, none of them in memory). A record (late row or retraction) of a
// fired, open window whose key group's entries are in the store reads
// that key group's entries of the window back first, in one scan, so the
// record updates the key's whole instance and emits its next version as
// memory would; closing the window reads back the rest and forgets the
// window's span by one range delete per key group.
//
// Keys after state.KeyPrefix(key group, node):
//
//	0x00 end(8)              a window's marker: its start, the next
//	                         arrival number, the last write-back's
//	                         generation, the checked columns' bound and
//	                         whether the window had fired (its entries
//	                         whole instances)
//	0x01 end(8) key gen(4)   a partial of one key written at generation
//	                         gen; of a fired window, the key's instance
//
// end is the window end with its sign bit flipped, big-endian, so keys sort
// by end; gen is big-endian.

// spillState is an operator's disk state.
type spillState struct {
	store state.Store
	node  int
	hot   int // the tier's budget, bytes
	batch state.Batch
	ticks int
	every int // records between checks of the tier's size (spillEvery)
	gen   uint32
	wins  map[int64]*spillWin   // the windows with partials in the store, by end
	slw   map[int64]*spillSlice // sliced operators: the slices with partials in the store, by start (slicespill.go)
	kbuf  []byte
	hbuf  []byte
	enc   state.Encoder
	err   error
	parts []spillPart
	// Reads and Writes count partials (and fired instances) read back and
	// written; firedWrites and firedReads count the fired instances among
	// them.
	reads, writes, scans, firedWrites, firedReads int64
	// held is the most entries of keys absent from memory that a firing
	// or close read back from the store and held in memory at once.
	held int
}

// spillWin is a window with partials in the store.
type spillWin struct {
	w      window.Window
	groups []uint64 // key groups holding partials of the window (bits)
	next   uint64   // arrival numbers of the partials written are below next
	bound  uint64   // checked columns: the sum of the largest magnitudes of each write-back (saturating)
	// fired says the window had fired when its entries were written: they
	// are whole instances (one per key), not partials.
	fired bool
}

// spillPart is a partial read back.
type spillPart struct {
	enc        string
	gen        uint32
	arr, birth uint64
	rows       int64
	slot       int32
}

const (
	spillMarker = 0
	spillEntry  = 1
	// spillEvery is the number of records between checks of the tier's
	// size.
	spillEvery = 256
)

// UseStore puts the operator's panes on the disk backend: store holds
// what does not fit in hot bytes, under keys of node (state.KeyPrefix).
// Call it right after New, before RestoreGroups or any record. It reports
// whether the operator spills: tumbling windows without early firing
// whose aggregates' results do not depend on the order of updates; any
// other operator keeps its state in memory.
func (o *Operator) UseStore(store state.Store, node, hot int) bool {
	if o.cfg.Gap > 0 || o.panes.multi || o.cfg.EarlyEvery > 0 || historyDependent(o.cfg.Aggs) {
		return false
	}
	o.spill = &spillState{store: store, node: node, hot: hot, batch: store.NewBatch(), every: spillEvery, wins: map[int64]*spillWin{}, slw: map[int64]*spillSlice{}}
	return true
}

// StoreErr returns the first error of the store met where no call could
// return it (reading a window's partials back as it fires): the task must
// stop. Nil on the memory backend.
func (o *Operator) StoreErr() error {
	if o.spill == nil {
		return nil
	}
	return o.spill.err
}

// SpillStats returns the partials the operator wrote to its store and read
// back, and the scans that read them (zero on the memory backend). The
// writes and reads include the instances of fired windows (FiredSpills).
func (o *Operator) SpillStats() (writes, reads, scans int64) {
	if o.spill == nil {
		return 0, 0, 0
	}
	return o.spill.writes, o.spill.reads, o.spill.scans
}

// FiredSpills returns the instances of fired windows (waiting for late
// rows) the operator wrote to its store and read back: a part of
// SpillStats' writes and reads. Zero on the memory backend.
func (o *Operator) FiredSpills() (writes, reads int64) {
	if o.spill == nil {
		return 0, 0
	}
	return o.spill.firedWrites, o.spill.firedReads
}

// SpillHeld returns the most entries of keys not in memory that a
// window's firing or close read back from the store and held in memory at
// once (zero on the memory backend). A close of an operator emitting by
// key group (OrderGroup) reads back one key group at a time, so this is at
// most the entries one key group of a window had in the store; a firing,
// or a close in another order, holds the whole window's.
func (o *Operator) SpillHeld() int {
	if o.spill == nil {
		return 0
	}
	return o.spill.held
}

func putEnd(dst []byte, end int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(end)^1<<63)
}

// key appends to dst the store key of a window's marker or entries in key
// group g: state.KeyPrefix(g, node), the kind (spillMarker, spillEntry,
// sliceMarker, sliceEntry) and the window's end (putEnd); an entry's key
// and generation follow it.
func (sp *spillState) key(dst []byte, g int, kind byte, end int64) []byte {
	dst = state.KeyPrefix(dst, g, sp.node)
	return putEnd(append(dst, kind), end)
}

// spillEntryBytes estimates the bytes of a pane entry in memory: the
// entry, its index entry and arrival number, its accumulators' slot and
// its key's share of the key table (keyTable.perKey: the keys' own
// length, not a constant — q9's eight-column keys are several times a
// one-int key).
func (o *Operator) spillEntryBytes() int {
	return entryBytes + mapEntryBytes + 8 + o.slots.slotBytes() + o.keys.perKey()
}

// maybeSpill writes the panes' entries (of windows fired or not) to the
// store when they hold more than the tier's budget.
func (o *Operator) maybeSpill() error {
	sp := o.spill
	n := 0
	for _, p := range o.panes.list {
		n += len(p.ents)
	}
	if n*o.spillEntryBytes() <= sp.hot {
		return nil
	}
	return o.spillPanes()
}

// spillPanes writes every pane's entries to the store in one batch and
// drops them from memory: partials of the windows that have not fired,
// whole instances of those that have (spillFired).
func (o *Operator) spillPanes() error {
	sp := o.spill
	sp.gen++
	words := (o.cfg.KeyGroups + 63) / 64
	touched := make([]uint64, words)
	for _, p := range o.panes.list {
		if len(p.ents) == 0 {
			continue
		}
		sw := sp.wins[p.w.End]
		if sw == nil {
			sw = &spillWin{w: p.w, groups: make([]uint64, words), fired: p.fired}
			sp.wins[p.w.End] = sw
		}
		if sw.fired != p.fired {
			// Firing reads every partial back (paneStart) before the pane
			// is marked fired, so a fired pane's window has none.
			return fmt.Errorf("window %s: partials in the store of a window that has fired", p.w)
		}
		clear(touched)
		if p.fired {
			o.spillFired(p, sw, touched)
			continue
		}
		var mag uint64
		for i := range p.ents {
			e := &p.ents[i]
			g := int(e.group)
			o.entryKey(spillEntry, e.key, g, p.w.End)
			mag = max(mag, o.encodePartial(p.seqs[i], e.birth, e.rows, e.slot))
			o.putEntry(e.key, g, sw.groups, touched)
		}
		sw.next = p.next
		sw.bound = addSat(sw.bound, mag)
		forGroups(touched, func(g int) { sp.putMarker(g, sw) })
		p.release()
	}
	if sp.batch.Count() == 0 {
		return nil
	}
	return sp.store.Commit(sp.batch)
}

// spillFired writes fired pane p's entries — whole instances, each with
// its arrival number — to the batch under generation sp.gen, marks the key
// groups written in touched and sw, writes their markers and drops the
// entries from memory. The key groups of p's entries have none in the
// store (a record of a key group with entries in the store reads them back
// first: processSpilled), so each key is written once.
func (o *Operator) spillFired(p *pane, sw *spillWin, touched []uint64) {
	sp := o.spill
	for i := range p.ents {
		e := &p.ents[i]
		g := int(e.group)
		o.entryKey(spillEntry, e.key, g, p.w.End)
		sp.enc.Reset()
		sp.enc.Uint(p.seqs[i])
		o.appendInst(&sp.enc, e, p.w, false, false)
		if e.slot >= 0 {
			o.slots.release(e.slot)
		}
		sp.firedWrites++
		o.putEntry(e.key, g, sw.groups, touched)
	}
	sw.next = p.next
	forGroups(touched, func(g int) { sp.putMarker(g, sw) })
	p.release()
}

// entryKey sets sp.kbuf to the store key of key id's entry of the given
// kind (spillEntry: a pane's, sliceEntry: a slice's) in key group g, in
// the window or slice ending at end: the prefix (spillState.key), the
// key's encoding and the spill's generation.
func (o *Operator) entryKey(kind byte, id uint32, g int, end int64) {
	sp := o.spill
	sp.kbuf = sp.key(sp.kbuf[:0], g, kind, end)
	sp.kbuf = append(sp.kbuf, o.keys.ent(id).enc...)
	sp.kbuf = binary.BigEndian.AppendUint32(sp.kbuf, sp.gen)
}

// encodePartial sets sp.enc to a partial's stored value — its arrival
// number, birth, rows, whether it holds a slot and, if so, the slot's
// aggregates — and releases the slot. It returns the largest magnitude of
// the slot's checked columns (0 without a slot).
func (o *Operator) encodePartial(seq, birth uint64, rows int64, slot int32) (mag uint64) {
	sp := o.spill
	sp.enc.Reset()
	sp.enc.Uint(seq)
	sp.enc.Uint(birth)
	sp.enc.Int(rows)
	sp.enc.Bool(slot >= 0)
	if slot >= 0 {
		for _, c := range o.cfg.Aggs {
			c.AppendSlot(&sp.enc, slot)
		}
		for _, c := range o.slots.chk {
			mag = max(mag, c.Magnitude(slot))
		}
		o.slots.release(slot)
	}
	return mag
}

// putEntry adds sp.kbuf → sp.enc's bytes (an entry of key id in key group
// g) to the batch, marks g written in touched and in groups (the window's
// or slice's) and changed for the next checkpoint, and lets go of the key.
func (o *Operator) putEntry(id uint32, g int, groups, touched []uint64) {
	sp := o.spill
	sp.batch.Set(sp.kbuf, sp.enc.Bytes())
	sp.writes++
	touched[g>>6] |= 1 << (uint(g) & 63)
	groups[g>>6] |= 1 << (uint(g) & 63)
	o.markChanged(g)
	o.keys.unref(id)
}

// addSat returns a+b, or math.MaxUint64 when the sum would wrap.
func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// setMarker sets sp.kbuf and sp.enc to the marker of the given kind
// (spillMarker, sliceMarker) of window or slice w in key group g: w's
// start, next (the arrival numbers written are below it), the spill's
// generation and bound. A window's marker adds its fired flag (putMarker).
func (sp *spillState) setMarker(g int, kind byte, w window.Window, next, bound uint64) {
	sp.kbuf = sp.key(sp.kbuf[:0], g, kind, w.End)
	sp.enc.Reset()
	sp.enc.Int(w.Start)
	sp.enc.Uint(next)
	sp.enc.Uint(uint64(sp.gen))
	sp.enc.Uint(bound)
}

// putMarker writes window sw's marker in key group g (setMarker) with its
// fired flag.
func (sp *spillState) putMarker(g int, sw *spillWin) {
	sp.setMarker(g, spillMarker, sw.w, sw.next, sw.bound)
	sp.enc.Bool(sw.fired)
	sp.batch.Set(sp.kbuf, sp.enc.Bytes())
}

func forGroups(bits []uint64, f func(g int)) {
	for w, b := range bits {
		for b != 0 {
			i := 0
			for b&(1<<uint(i)) == 0 {
				i++
			}
			f(w*64 + i)
			b &^= 1 << uint(i)
		}
	}
}

// unspillWindow reads every key group's partials of pane p's window back
// into p (the window fires or closes) and commits the range deletes.
func (o *Operator) unspillWindow(p *pane) {
	sp := o.spill
	sw := sp.wins[p.w.End]
	if sw == nil || sp.err != nil {
		return
	}
	var err error
	n0 := len(p.ents)
	forGroups(sw.groups, func(g int) {
		if err == nil {
			err = o.unspill(p, sw, g)
		}
	})
	sp.held = max(sp.held, len(p.ents)-n0)
	o.sortPane(p)
	if err == nil && sp.batch.Count() > 0 {
		err = sp.store.Commit(sp.batch)
	}
	if err != nil {
		sp.err = fmt.Errorf("window %s: %w", p.w, err)
	}
}

// unspillGroup reads key group g's partials of pane p's window back, if the
// store holds any, and commits.
func (o *Operator) unspillGroup(p *pane, g int) error {
	sp := o.spill
	sw := sp.wins[p.w.End]
	if sw == nil || sw.groups[g>>6]&(1<<(uint(g)&63)) == 0 {
		return nil
	}
	if err := o.unspill(p, sw, g); err != nil {
		return fmt.Errorf("window %s: %w", p.w, err)
	}
	o.sortPane(p)
	return sp.store.Commit(sp.batch)
}

// unspill merges key group g's partials of sw's window into pane p — a
// key in memory takes its pieces, the other keys are appended in key order
// (sortPane then puts the entries in arrival order) — and adds their range
// delete to the batch.
func (o *Operator) unspill(p *pane, sw *spillWin, g int) error {
	sp := o.spill
	lo, hi := sp.entryRange(sp.kbuf, sp.hbuf, g, spillEntry, p.w.End)
	sp.kbuf, sp.hbuf = lo, hi
	if sw.fired {
		if err := o.unspillFired(p, lo, hi, g); err != nil {
			return err
		}
		return o.forgetSpilled(p, sw, g, lo, hi)
	}
	parts, err := o.scanPieces(lo, hi, g, nil)
	if err != nil {
		return err
	}
	for i := 0; i < len(parts); {
		first := parts[i]
		j, acc, rows := o.mergePieces(parts, i)
		i = j
		if k, ok := p.idx[first.enc]; ok {
			e := &p.ents[k]
			if e.slot >= 0 {
				acc = o.mergeSlot(acc, e.slot)
			} else if acc >= 0 {
				p.live++
			}
			e.slot, e.rows, e.birth = acc, e.rows+rows, first.birth
			p.seqs[k] = first.arr
			if e.slot < 0 {
				e.rows = 0
			}
			continue
		}
		// A key whose rows were all retracted comes back as the tombstone
		// memory keeps (its place in the window held).
		kid := o.keys.intern([]byte(first.enc))
		o.keys.ref(kid)
		p.idx[o.keys.ent(kid).enc] = int32(len(p.ents))
		e := inst{key: kid, slot: acc, group: uint16(g), birth: first.birth, dirty: true}
		if acc >= 0 {
			e.rows = rows
			p.live++
		}
		p.ents = append(p.ents, e)
		p.seqs = append(p.seqs, first.arr)
	}
	sp.parts = parts[:0]
	return o.forgetSpilled(p, sw, g, lo, hi)
}

// forgetSpilled adds to the batch the range delete of key group g's
// entries [lo, hi) of sw's window and of its marker, once they are back in
// pane p.
func (o *Operator) forgetSpilled(p *pane, sw *spillWin, g int, lo, hi []byte) error {
	if o.forgetGroup(g, spillMarker, p.w.End, lo, hi, sw.groups) {
		delete(o.spill.wins, p.w.End)
	}
	return nil
}

// entryRange returns the key range [lo, hi) of key group g's entries of
// the given kind (spillEntry, sliceEntry) in the window or slice ending at
// end, built in lo's and hi's storage.
func (sp *spillState) entryRange(lo, hi []byte, g int, kind byte, end int64) ([]byte, []byte) {
	lo = sp.key(lo[:0], g, kind, end)
	if end == math.MaxInt64 {
		hi = append(state.KeyPrefix(hi[:0], g, sp.node), kind+1)
	} else {
		hi = sp.key(hi[:0], g, kind, end+1)
	}
	return lo, hi
}

// forgetGroup adds to the batch the range delete of key group g's entries
// [lo, hi) and the delete of its marker of the given kind (spillMarker,
// sliceMarker) of the window or slice ending at end, clears g in groups
// (the window's or slice's) and marks g changed. It reports whether groups
// is left empty.
func (o *Operator) forgetGroup(g int, kind byte, end int64, lo, hi []byte, groups []uint64) (empty bool) {
	sp := o.spill
	sp.batch.DeleteRange(lo, hi)
	sp.batch.Delete(sp.key(nil, g, kind, end))
	groups[g>>6] &^= 1 << (uint(g) & 63)
	o.markChanged(g)
	return !slices.ContainsFunc(groups, func(b uint64) bool { return b != 0 })
}

// unspillFired reads key group g's instances [lo, hi) of fired pane p's
// window back into p, each with its arrival number, version and last
// emitted row, and counts them in sp.reads. Memory holds none of the key
// group's entries of the window (spillFired), so a key met twice, or
// already in p, is corrupt state. On an error the instances read so far
// stay in p (the task stops).
func (o *Operator) unspillFired(p *pane, lo, hi []byte, g int) error {
	sp := o.spill
	sp.scans++
	r := groupRestorer{o: o}
	var bad error
	err := sp.store.Scan(lo, hi, func(key, value []byte) bool {
		if len(key) < len(lo)+4 {
			bad = fmt.Errorf("key group %d: a fired instance's key of %d bytes", g, len(key))
			return false
		}
		enc := key[len(lo) : len(key)-4]
		if err := checkKey(string(enc), o.cfg.Key); err != nil || keygroup.OfKey(enc, o.cfg.KeyGroups) != g {
			bad = fmt.Errorf("key group %d: a fired instance of a key not in the key group", g)
			return false
		}
		if _, dup := p.idx[string(enc)]; dup {
			bad = fmt.Errorf("key group %d: a fired instance of a key held twice", g)
			return false
		}
		d := state.NewDecoder(value)
		arr := d.Uint()
		in := inst{group: uint16(g)}
		isFired, live := r.inst(d, &in, p.w)
		if err := d.Err(); err != nil {
			if in.slot >= 0 {
				o.slots.release(in.slot)
			}
			bad = fmt.Errorf("key group %d: a fired instance: %w", g, err)
			return false
		}
		if isFired || d.Remaining() != 0 {
			if in.slot >= 0 {
				o.slots.release(in.slot)
			}
			bad = fmt.Errorf("key group %d: a fired instance: corrupt", g)
			return false
		}
		kid := o.keys.intern(enc)
		o.keys.ref(kid)
		in.key = kid
		p.idx[o.keys.ent(kid).enc] = int32(len(p.ents))
		p.ents = append(p.ents, in)
		p.seqs = append(p.seqs, arr)
		if live {
			p.live++
		}
		sp.reads++
		sp.firedReads++
		return true
	})
	if err == nil {
		err = bad
	}
	return err
}

// scanPieces reads the pieces (stored partials) in [lo, hi) of key group
// g — a slot allocated for each live one — sorted by key and generation,
// and counts them in sp.reads. check, if not nil, is run on each piece
// decoded (live: its value says it holds a slot); its error ends the
// scan. On an error no slot stays allocated.
func (o *Operator) scanPieces(lo, hi []byte, g int, check func(pt spillPart, live bool) error) ([]spillPart, error) {
	sp := o.spill
	sp.parts = sp.parts[:0]
	var bad error
	sp.scans++
	err := sp.store.Scan(lo, hi, func(key, value []byte) bool {
		if len(key) < len(lo)+4 {
			bad = fmt.Errorf("key group %d: a partial's key of %d bytes", g, len(key))
			return false
		}
		enc := string(key[len(lo) : len(key)-4])
		d := state.NewDecoder(value)
		pt := spillPart{enc: enc, gen: binary.BigEndian.Uint32(key[len(key)-4:]), slot: -1}
		pt.arr, pt.birth, pt.rows = d.Uint(), d.Uint(), d.Int()
		live := d.Bool()
		if live && d.Err() == nil {
			pt.slot = o.slots.alloc()
			for _, c := range o.cfg.Aggs {
				c.RestoreSlot(d, pt.slot)
			}
		}
		sp.parts = append(sp.parts, pt)
		if err := d.Err(); err != nil {
			bad = fmt.Errorf("key group %d: a partial: %w", g, err)
			return false
		}
		if d.Remaining() != 0 {
			bad = fmt.Errorf("key group %d: %d bytes after a partial", g, d.Remaining())
			return false
		}
		if check != nil {
			if err := check(pt, live); err != nil {
				bad = fmt.Errorf("key group %d: %w", g, err)
				return false
			}
		}
		if err := checkKey(enc, o.cfg.Key); err != nil || keygroup.OfKey([]byte(enc), o.cfg.KeyGroups) != g {
			bad = fmt.Errorf("key group %d: a partial of a key not in the key group", g)
			return false
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		for _, pt := range sp.parts {
			if pt.slot >= 0 {
				o.slots.release(pt.slot)
			}
		}
		sp.parts = sp.parts[:0]
		return nil, err
	}
	sp.reads += int64(len(sp.parts))
	parts := sp.parts
	slices.SortFunc(parts, func(a, b spillPart) int {
		if a.enc != b.enc {
			if a.enc < b.enc {
				return -1
			}
			return 1
		}
		return int(int64(a.gen) - int64(b.gen))
	})
	return parts, nil
}

// sortPane puts p's entries in arrival order (p.seqs) — those from before
// the last restore first, by key group and arrival (OrderBirth: by birth,
// key group and arrival), as the memory backend's restore orders them —
// and rebuilds its index.
func (o *Operator) sortPane(p *pane) {
	before := func(i, j int) bool {
		a, b := p.seqs[i], p.seqs[j]
		if a < p.cut && b < p.cut {
			x, y := &p.ents[i], &p.ents[j]
			if o.cfg.Order == OrderBirth && x.birth != y.birth {
				return x.birth < y.birth
			}
			if x.group != y.group {
				return x.group < y.group
			}
		}
		return a < b
	}
	sorted := true
	for i := 1; i < len(p.ents) && sorted; i++ {
		sorted = !before(i, i-1)
	}
	if sorted {
		return
	}
	idx := make([]int, len(p.ents))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return before(idx[i], idx[j]) })
	ents, seqs := make([]inst, len(p.ents)), make([]uint64, len(p.ents))
	for i, j := range idx {
		ents[i], seqs[i] = p.ents[j], p.seqs[j]
	}
	p.ents, p.seqs = ents, seqs
	clear(p.idx)
	for i := range p.ents {
		p.idx[o.keys.ent(p.ents[i].key).enc] = int32(i)
	}
	o.panes.hit.p = nil
}

// spillBefore reads back, before the current record (o.keyBuf) updates
// pane p, its key group's partials of the window when the update needs the
// key's whole accumulator: a retraction, a checked update the bound on
// the partials cannot clear, or any row of an updating Top-N (its rows
// are the changes of the key's whole ranks).
func (o *Operator) spillBefore(p *pane, weight int, rowMag uint64) error {
	sw := o.spill.wins[p.w.End]
	if sw == nil {
		return nil
	}
	if weight > 0 && !o.rankedUpdating() {
		if len(o.slots.chk) == 0 {
			return nil
		}
		var have uint64
		if i, ok := o.find(p); ok && p.ents[i].slot >= 0 {
			for _, c := range o.slots.chk {
				have = max(have, c.Magnitude(p.ents[i].slot))
			}
		}
		if rowMag <= math.MaxInt64 && have <= math.MaxInt64-rowMag && sw.bound <= math.MaxInt64-rowMag-have {
			return nil // the total cannot leave the range: the partial's check is the total's
		}
	}
	return o.unspillGroup(p, keygroup.OfKey(o.keyBuf, o.cfg.KeyGroups))
}

// scanMarkers calls fn with the key group, the window's end and the value
// of every marker of the given kind (spillMarker, sliceMarker) in the
// store, key group by key group in order of end, and stops at fn's first
// error. A marker's key of the wrong length fails, named by what.
func (sp *spillState) scanMarkers(keyGroups int, kind byte, what string, fn func(g int, end int64, value []byte) error) error {
	for g := range keyGroups {
		lo := append(state.KeyPrefix(nil, g, sp.node), kind)
		hi := append(state.KeyPrefix(nil, g, sp.node), kind+1)
		var bad error
		err := sp.store.Scan(lo, hi, func(key, value []byte) bool {
			if len(key) != len(lo)+8 {
				bad = fmt.Errorf("key group %d: a %s's key of %d bytes", g, what, len(key))
				return false
			}
			bad = fn(g, int64(binary.BigEndian.Uint64(key[len(lo):])^1<<63), value)
			return bad == nil
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadSpilled reads the windows' markers of every key group (after a
// restore): the windows with partials in the store get their panes, and
// the restored entries their arrival numbers after the partials'.
func (o *Operator) loadSpilled() error {
	sp := o.spill
	words := (o.cfg.KeyGroups + 63) / 64
	err := sp.scanMarkers(o.cfg.KeyGroups, spillMarker, "window marker", func(g int, end int64, value []byte) error {
		d := state.NewDecoder(value)
		start, next, gen, bound := d.Int(), d.Uint(), d.Uint(), d.Uint()
		// A marker written before fired windows spilled ends here: its
		// window had not fired.
		fired := d.Remaining() > 0 && d.Bool()
		if d.Err() != nil || d.Remaining() != 0 || start >= end || gen > math.MaxUint32 {
			return fmt.Errorf("key group %d: window marker of end %d: corrupt", g, end)
		}
		sw := sp.wins[end]
		if sw == nil {
			sw = &spillWin{w: window.Window{Start: start, End: end}, groups: make([]uint64, words), fired: fired}
			sp.wins[end] = sw
		}
		if sw.w.Start != start || sw.fired != fired {
			return fmt.Errorf("key group %d: window marker of end %d: start %d (fired %v), another key group's %d (fired %v)", g, end, start, fired, sw.w.Start, sw.fired)
		}
		sw.groups[g>>6] |= 1 << (uint(g) & 63)
		sw.next, sw.bound = max(sw.next, next), max(sw.bound, bound)
		sp.gen = max(sp.gen, uint32(gen))
		return nil
	})
	if err != nil {
		return err
	}
	for _, sw := range sp.wins {
		// A window fires once every partial is back (paneStart), and its
		// span is forgotten when it closes. A window closed here (a
		// restore under a smaller allowed lateness) closes at the next
		// advance, reading its instances back, as memory's restored pane.
		switch fired := o.firedAt(sw.w.End); {
		case fired && !sw.fired:
			return fmt.Errorf("window %s has partials in the store but has fired", sw.w)
		case !fired && sw.fired:
			return fmt.Errorf("window %s has fired instances in the store but has not fired", sw.w)
		}
		if p := o.panes.get(sw.w); p == nil {
			o.panes.create(sw.w, sw.fired)
		} else if p.fired != sw.fired {
			return fmt.Errorf("window %s: fired %v in the store, %v in the key-group sections", sw.w, sw.fired, p.fired)
		}
	}
	for _, p := range o.panes.list {
		var base uint64
		if sw := sp.wins[p.w.End]; sw != nil {
			base = sw.next
		}
		p.seqs = p.seqs[:0]
		for i := range p.ents {
			p.seqs = append(p.seqs, base+uint64(i))
		}
		p.next = base + uint64(len(p.ents))
		p.cut = p.next
	}
	return nil
}

// processSpilled is processPanes on the disk backend: the key group's
// partials of a window read back first where the record needs them
// (spillBefore), and the tier's size checked every spillEvery records.
func (o *Operator) processSpilled(r *row.Row, ts int64, weight int) (Outcome, error) {
	sp := o.spill
	if sp.err != nil {
		return OnTime, sp.err
	}
	if len(sp.wins) > 0 {
		var rowMag uint64
		for _, c := range o.slots.chk {
			rowMag = max(rowMag, c.RowMagnitude(r))
		}
		o.assignPanes(ts)
		for _, w := range o.wins {
			p := o.panes.get(w)
			if p == nil || o.closed(w.End) {
				continue
			}
			var err error
			switch {
			case p.fired:
				// A late row or retraction of a fired window: the key's
				// whole instance, if its key group's are in the store.
				err = o.unspillGroup(p, keygroup.OfKey(o.keyBuf, o.cfg.KeyGroups))
			case !p.fired && (weight < 0 || len(o.slots.chk) > 0 || o.rankedUpdating()):
				err = o.spillBefore(p, weight, rowMag)
			}
			if err != nil {
				return OnTime, fmt.Errorf("state store: %w", err)
			}
		}
	}
	out, err := o.processPanes(r, ts, weight)
	if err != nil {
		return out, err
	}
	if sp.ticks++; sp.ticks%sp.every == 0 {
		if err := o.maybeSpill(); err != nil {
			return out, fmt.Errorf("state store: %w", err)
		}
	}
	return out, nil
}

// mergePieces merges the run of stored pieces of one key that starts at
// parts[i] (parts sorted by key, then by write order): the earliest
// piece's slot accumulates the later ones' (merges of partials never
// fail: aggregate.Checker). It returns the end of the run, the merged
// slot (-1 when every piece of the run is a tombstone) and the run's
// rows.
func (o *Operator) mergePieces(parts []spillPart, i int) (end int, acc int32, rows int64) {
	end = i + 1
	for end < len(parts) && parts[end].enc == parts[i].enc {
		end++
	}
	acc = -1
	for _, pt := range parts[i:end] {
		rows += pt.rows
		switch {
		case pt.slot < 0:
		case acc < 0:
			acc = pt.slot
		default:
			o.slots.merge(acc, pt.slot)
			o.slots.release(pt.slot)
		}
	}
	return end, acc, rows
}

// mergeSlot folds slot — memory's partial of a key, newer than every
// stored piece — into acc (the merged pieces, -1 for none) and returns
// the slot that holds the total.
func (o *Operator) mergeSlot(acc, slot int32) int32 {
	if acc < 0 {
		return slot
	}
	o.slots.merge(acc, slot)
	o.slots.release(slot)
	return acc
}
