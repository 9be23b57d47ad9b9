package operator

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// Sliced sliding and cumulating windows on the disk backend
// (docs/state.md). The slices are the hot tier over the store: when their
// entries hold more than the tier's budget, every slice entry — its
// arrival number, birth, rows, a live flag and each aggregate's partial
// state — is written in one batch and dropped from memory; the slice
// itself stays in the list, empty, so that its windows still come in
// order. A later record of the key in the slice starts a new partial. A
// slice's stored partials of a key group come back into the slice — the
// key's pieces merged in the order they were written, the earliest's
// arrival number and birth kept, the memory's piece merged last — and
// are deleted by one range delete:
//
//   - for every key group, before a window reads its slices (it closes,
//     fires or takes a key group's share into its pane: windowKeys,
//     streamStart), so the window sees each key's whole partial per slice;
//   - for the record's key group, before a retraction (the slice entry's
//     rows must be known) and before an update an aggregate checks (an int
//     sum) when the bounds on the partials cannot show that no window
//     total leaves the range (checkSliced then merges exact totals);
//   - a slice freed with stored partials left (every window containing it
//     processed) has them deleted by range.
//
// So the slices the operator reads are exactly the memory backend's, and
// it emits the same rows in the same order.
//
// Arrival numbers across a restore: the memory backend's restore numbers a
// window's entries of before the restore by (birth with OrderBirth, key
// group, first arrival within the key group); the disk backend keeps the
// numbers (the sections carry each slice entry's arrival number as its
// rank, the stored partials theirs) and orders the entries below the
// restore's cut (sliceStore.cut) by (birth, key group, number)
// (sliceStore.before), those after it by their number. Within a key group
// numbers only grow, whichever task held it: a restore's cut is above
// every number its sections and markers hold.
//
// Keys after state.KeyPrefix(key group, node):
//
//	0x02 end(8)              a slice's marker: its start, the arrival
//	                         number after the last write-back, the last
//	                         write-back's generation, the bound on its
//	                         checked columns' stored pieces
//	0x03 end(8) key gen(4)   a piece of one key's partial in the slice,
//	                         written at generation gen
//
// end is the slice's end with its sign bit flipped, big-endian.

const (
	sliceMarker = 2
	sliceEntry  = 3
)

// spillSlice is a slice with partials in the store.
type spillSlice struct {
	w      window.Window
	groups []uint64 // key groups holding pieces of the slice (bits)
	// bound is at least the sum, over the write-backs since the slice's
	// last load, of the largest magnitude of a checked column's piece
	// (saturating): a key's stored pieces in the slice total at most bound.
	bound uint64
}

// sliceEntryBytes estimates the bytes of a slice entry in memory.
func (o *Operator) sliceEntryBytes() int {
	return sliceEntBytes + entIndexBytes + o.slots.slotBytes() + o.keys.perKey()
}

// maybeSpillSlices writes the slices' entries to the store when they hold
// more than the tier's budget.
func (o *Operator) maybeSpillSlices() error {
	n := 0
	for _, s := range o.sl.list {
		n += s.ents.len()
	}
	if n*o.sliceEntryBytes() <= o.spill.hot {
		return nil
	}
	return o.spillSlices()
}

// spillSlices writes every slice entry to the store in one batch and
// drops them from memory (the slices stay, empty).
func (o *Operator) spillSlices() error {
	sp, ss := o.spill, &o.sl
	sp.gen++
	words := (o.cfg.KeyGroups + 63) / 64
	touched := make([]uint64, words)
	for _, s := range ss.list {
		if s.ents.len() == 0 {
			continue
		}
		sw := sp.slw[s.w.Start]
		if sw == nil {
			sw = &spillSlice{w: s.w, groups: make([]uint64, words)}
			sp.slw[s.w.Start] = sw
		}
		clear(touched)
		var mag uint64
		for i := range s.ents.len() {
			e := s.ents.at(i)
			g := int(e.group)
			o.entryKey(sliceEntry, e.key, g, s.w.End)
			mag = max(mag, o.encodePartial(e.seq, e.birth, e.rows, e.slot))
			o.putEntry(e.key, g, sw.groups, touched)
		}
		sw.bound = addSat(sw.bound, mag)
		forGroups(touched, func(g int) { sp.putSliceMarker(g, sw, ss.seq) })
		s.ents.reset()
		s.idx.reset()
		s.live = 0
	}
	if sp.batch.Count() == 0 {
		return nil
	}
	return sp.store.Commit(sp.batch)
}

// putSliceMarker writes a slice's marker: a window's (setMarker) without
// the fired flag, as a slice holds partials only.
func (sp *spillState) putSliceMarker(g int, sw *spillSlice, next uint64) {
	sp.setMarker(g, sliceMarker, sw.w, next, sw.bound)
	sp.batch.Set(sp.kbuf, sp.enc.Bytes())
}

// storedBound returns the largest bound of a slice's stored pieces
// (spillSlice.bound), 0 on the memory backend.
func (o *Operator) storedBound() uint64 {
	if o.spill == nil {
		return 0
	}
	var b uint64
	for _, sw := range o.spill.slw {
		b = max(b, sw.bound)
	}
	return b
}

// loadWindowSlices reads the stored partials of window w's slices back
// into them: every key group's (only < 0) or key group only's. An error is
// kept in spill.err (the task stops at its next check).
func (o *Operator) loadWindowSlices(w window.Window, only int) {
	sp := o.spill
	if sp == nil || len(sp.slw) == 0 || sp.err != nil {
		return
	}
	for _, s := range o.sl.list {
		if s.w.Start >= w.End {
			break
		}
		if s.w.Start < w.Start {
			continue
		}
		if err := o.loadSlice(s, only); err != nil {
			sp.err = fmt.Errorf("window %s: %w", w, err)
			return
		}
	}
}

// loadSlice reads slice s's stored partials of every key group (only < 0)
// or of key group only back into s, and commits their range deletes.
func (o *Operator) loadSlice(s *slice, only int) error {
	sp := o.spill
	sw := sp.slw[s.w.Start]
	if sw == nil {
		return nil
	}
	var err error
	if only >= 0 {
		if sw.groups[only>>6]&(1<<(uint(only)&63)) == 0 {
			return nil
		}
		err = o.loadSliceGroup(s, sw, only)
	} else {
		forGroups(slices.Clone(sw.groups), func(g int) {
			if err == nil {
				err = o.loadSliceGroup(s, sw, g)
			}
		})
	}
	if err == nil && sp.batch.Count() > 0 {
		err = sp.store.Commit(sp.batch)
	}
	if err != nil {
		return fmt.Errorf("slice %s: %w", s.w, err)
	}
	o.sortSlice(s)
	return nil
}

// loadSliceGroup merges key group g's stored pieces of slice s into s (its
// entries are sorted afterwards: sortSlice) and adds their range delete
// to the batch.
func (o *Operator) loadSliceGroup(s *slice, sw *spillSlice, g int) error {
	sp := o.spill
	lo, hi := sp.entryRange(sp.kbuf, sp.hbuf, g, sliceEntry, s.w.End)
	sp.kbuf, sp.hbuf = lo, hi
	parts, err := o.scanPieces(lo, hi, g, checkSliceRows)
	if err != nil {
		return err
	}
	for i := 0; i < len(parts); {
		first := parts[i]
		j, acc, rows := o.mergePieces(parts, i)
		i = j
		// unspill's merge into a pane's entry, kept apart: a slice entry
		// (sliceEnt) holds its arrival number and bounds its slot
		// (boundSlot); a pane keeps the numbers in p.seqs and bounds none.
		if x, ok := s.idx.getString(o.keys, first.enc); ok {
			e := s.ents.at(int(x))
			if e.slot >= 0 {
				acc = o.mergeSlot(acc, e.slot)
			} else if acc >= 0 {
				s.live++
			}
			e.slot, e.rows, e.seq, e.birth = acc, e.rows+rows, first.arr, first.birth
			if e.slot < 0 {
				e.rows = 0
			} else {
				o.boundSlot(e.slot)
			}
			s.idx.set(o.keys, o.keys.ent(e.key).enc, x, e.slot) // a key held by value keeps its slot in the index
			continue
		}
		// A key whose rows were all retracted comes back as the tombstone
		// memory keeps (its place in the slice held).
		kid := o.keys.intern([]byte(first.enc))
		o.keys.ref(kid)
		e := sliceEnt{seq: first.arr, birth: first.birth, key: kid, slot: acc, group: uint16(g)}
		if acc >= 0 {
			e.rows = rows
			s.live++
			o.boundSlot(acc)
		}
		s.idx.set(o.keys, o.keys.ent(kid).enc, int32(s.ents.len()), acc)
		s.ents.add(e)
	}
	sp.parts = parts[:0]
	if o.forgetGroup(g, sliceMarker, s.w.End, lo, hi, sw.groups) {
		delete(sp.slw, s.w.Start)
	}
	return nil
}

// checkSliceRows is scanPieces' check of a slice's piece: a live one
// (slot allocated) has rows, a retracted one (no slot) none.
func checkSliceRows(pt spillPart, live bool) error {
	if (pt.slot >= 0) != (pt.rows > 0) {
		return fmt.Errorf("a partial with %d rows and live %v", pt.rows, live)
	}
	return nil
}

// sortSlice puts s's entries in arrival order (sliceStore.before) and
// rebuilds its index.
func (o *Operator) sortSlice(s *slice) {
	ss := &o.sl
	sorted := true
	for i := 1; i < s.ents.len() && sorted; i++ {
		sorted = !ss.before(s.ents.at(i), s.ents.at(i-1))
	}
	if sorted {
		return
	}
	s.ents.sortFunc(func(a, b sliceEnt) int {
		switch {
		case ss.before(&a, &b):
			return -1
		case ss.before(&b, &a):
			return 1
		}
		return 0
	})
	s.idx.reset()
	for i := range s.ents.len() {
		e := s.ents.at(i)
		s.idx.set(o.keys, o.keys.ent(e.key).enc, int32(i), e.slot)
	}
}

// dropSlice deletes the stored partials of a freed slice (every window
// containing it processed) by one range delete per key group.
func (o *Operator) dropSlice(s *slice) {
	sp := o.spill
	sw := sp.slw[s.w.Start]
	if sw == nil || sp.err != nil {
		return
	}
	forGroups(sw.groups, func(g int) {
		lo, hi := sp.entryRange(nil, nil, g, sliceEntry, s.w.End)
		sp.batch.DeleteRange(lo, hi)
		sp.batch.Delete(sp.key(nil, g, sliceMarker, s.w.End))
		o.markChanged(g)
	})
	delete(sp.slw, s.w.Start)
	if err := sp.store.Commit(sp.batch); err != nil {
		sp.err = fmt.Errorf("slice %s: %w", s.w, err)
	}
}

// before reports whether slice entry a came before b in arrival order
// (sliceStore.cut).
func (ss *sliceStore) before(a, b *sliceEnt) bool {
	return ss.beforeSeq(a.seq, a.birth, a.group, b.seq, b.birth, b.group)
}

// beforeSeq is before for entries given by arrival number, birth and key
// group: by number, except that entries both below the cut of the last
// restore on the disk backend come by (birth with OrderBirth, key group,
// number), as the memory backend's restore numbers them.
func (ss *sliceStore) beforeSeq(a, ab uint64, ag uint16, b, bb uint64, bg uint16) bool {
	if a >= ss.cut || b >= ss.cut {
		return a < b
	}
	if ss.birthFirst && ab != bb {
		return ab < bb
	}
	if ag != bg {
		return ag < bg
	}
	return a < b
}

// processSlicedDisk is processSliced on the disk backend: the record's
// key group's stored partials read back first where the record needs
// them, and the tier's size checked every spillEvery records.
func (o *Operator) processSlicedDisk(r *row.Row, ts int64, weight int) (Outcome, error) {
	sp := o.spill
	if sp.err != nil {
		return OnTime, sp.err
	}
	if len(sp.slw) > 0 && (weight < 0 || len(o.slots.chk) > 0) {
		if err := o.slicesBefore(r, ts, weight); err != nil {
			return OnTime, fmt.Errorf("state store: %w", err)
		}
	}
	out, err := o.processSliced(r, ts, weight)
	if err != nil {
		return out, err
	}
	if sp.err != nil {
		return out, fmt.Errorf("state store: %w", sp.err)
	}
	if sp.ticks++; sp.ticks%sp.every == 0 {
		if err := o.maybeSpillSlices(); err != nil {
			return out, fmt.Errorf("state store: %w", err)
		}
	}
	return out, nil
}

// slicesBefore reads back the record's key group's stored partials where
// the record needs its key's whole partials: its slice's before a
// retraction; every slice of its open windows before a checked update
// the bounds cannot clear (checkSliced's fast test, with the stored
// pieces' bound added).
func (o *Operator) slicesBefore(r *row.Row, ts int64, weight int) error {
	ss := &o.sl
	key := AppendKey(o.keyBuf[:0], r, o.cfg.Key)
	o.keyBuf = key
	g := keygroup.OfKey(key, o.cfg.KeyGroups)
	if weight < 0 {
		w, s := ss.at(ts)
		if s == nil {
			return nil
		}
		if err := o.loadSlice(s, g); err != nil {
			return fmt.Errorf("window slice %s: %w", w, err)
		}
	}
	if len(o.slots.chk) == 0 {
		return nil
	}
	var rowMag uint64
	for _, c := range o.slots.chk {
		rowMag = max(rowMag, c.RowMagnitude(r))
	}
	b := ss.bound
	if sb := o.storedBound(); b > math.MaxUint64-sb {
		b = math.MaxUint64
	} else {
		b += sb
	}
	if rowMag <= math.MaxInt64 && (b == 0 || uint64(ss.maxSl) <= (math.MaxInt64-rowMag)/b) {
		return nil
	}
	ss.wins = o.cfg.Assigner.Assign(ts, ss.wins[:0])
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, w := range ss.wins {
		if !o.closed(w.End) {
			lo, hi = min(lo, w.Start), max(hi, w.End)
		}
	}
	for _, s := range ss.list {
		if s.w.Start >= lo && s.w.Start < hi {
			if err := o.loadSlice(s, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadSliceMarkers reads the slices' markers of every key group (a restore
// on the disk backend): the slices with partials in the store are added
// to list (restored slices, by start) when missing, and the returned cut
// is raised above their arrival numbers.
func (o *Operator) loadSliceMarkers(list []*slice, cut uint64) ([]*slice, uint64, error) {
	sp := o.spill
	words := (o.cfg.KeyGroups + 63) / 64
	have := make(map[int64]bool, len(list))
	for _, s := range list {
		have[s.w.Start] = true
	}
	err := sp.scanMarkers(o.cfg.KeyGroups, sliceMarker, "slice marker", func(g int, end int64, value []byte) error {
		d := state.NewDecoder(value)
		start, next, gen, bound := d.Int(), d.Uint(), d.Uint(), d.Uint()
		if d.Err() != nil || d.Remaining() != 0 || start >= end || gen > math.MaxUint32 || next == math.MaxUint64 {
			return fmt.Errorf("key group %d: slice marker of end %d: corrupt", g, end)
		}
		w := window.Window{Start: start, End: end}
		if got := o.sl.slicer.SliceOf(start); got != w {
			return fmt.Errorf("key group %d: slice marker %s is not a slice of the windows (%s is)", g, w, got)
		}
		sw := sp.slw[start]
		if sw == nil {
			sw = &spillSlice{w: w, groups: make([]uint64, words)}
			sp.slw[start] = sw
		}
		sw.groups[g>>6] |= 1 << (uint(g) & 63)
		sw.bound = max(sw.bound, bound)
		cut = max(cut, next)
		sp.gen = max(sp.gen, uint32(gen))
		if !have[start] {
			have[start] = true
			list = append(list, &slice{w: w})
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(list, func(x, y *slice) int { return cmp.Compare(x.w.Start, y.w.Start) })
	return list, cut, nil
}
