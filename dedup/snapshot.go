package dedup

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"

	"github.com/tidemark/tidemark/state"
)

// sectionVersion is the version byte of every section of dedup state
// (Snapshot, key-group and delta sections). Version 2 sections hold
// payload hashes of PayloadHashVersion 2; version 1 sections, of the same
// layout, hold version-1 hashes, which this build cannot compare with its
// own, so they are refused (section).
const sectionVersion = 2

// section reads a section's version byte, refusing any but
// sectionVersion and naming the payload hash scheme for version 1.
func section(d *state.Decoder, name string) {
	v := d.Byte()
	switch {
	case d.Err() != nil, v == sectionVersion:
	case v == 1:
		d.Fail("%s: written by an earlier build whose event payload hashes (scheme 1) differ from this build's (scheme %d); start the pipeline from an empty checkpoint directory", name, PayloadHashVersion)
	default:
		d.Fail("%s: section version %d is not supported (this build reads [%d])", name, v, sectionVersion)
	}
}

// Snapshot appends the table's state: its size, base, sweep point and
// every remembered id at its slot index (delta-encoded), so that Restore
// rebuilds the identical table. Size: about 14 bytes per remembered id.
func (t *Table) Snapshot(e *state.Encoder) {
	e.Byte(sectionVersion)
	e.Int(t.ttl)
	e.Uint(uint64(len(t.slots)))
	e.Bool(t.baseSet)
	e.Int(t.base)
	e.Int(t.nextSweep)
	e.Uint(uint64(t.inserts))
	e.Int(t.cut)
	e.Uint(uint64(t.n))
	prev := -1
	for i, s := range t.slots {
		if s.id == 0 {
			continue
		}
		e.Uint(uint64(i - prev))
		prev = i
		e.Fixed64(s.id)
		e.Fixed32(s.payload)
		e.Uint(uint64(s.expiry))
	}
}

// Restore replaces the table's state with one Snapshot wrote. Errors: a
// truncated or inconsistent snapshot (a slot size that is not a power of
// two, an index out of range, a TTL that differs from the table's).
func (t *Table) Restore(d *state.Decoder) error {
	section(d, "dedup table")
	ttl := d.Int()
	size := d.Len(1<<34, 0)
	baseSet := d.Bool()
	base := d.Int()
	nextSweep := d.Int()
	inserts := d.Len(1<<62, 0)
	cut := d.Int()
	n := d.Len(size, 14)
	if err := d.Err(); err != nil {
		return err
	}
	if ttl != t.ttl {
		d.Fail("dedup TTL %d ms, the pipeline's is %d ms", ttl, t.ttl)
	}
	if size < 1 || bits.OnesCount(uint(size)) != 1 || n*4 > size*3+3 {
		d.Fail("dedup table of %d slots holding %d ids", size, n)
	}
	if err := d.Err(); err != nil {
		return err
	}
	slots := make([]slot, size)
	i := -1
	for range n {
		i += int(d.Uint())
		s := slot{id: d.Fixed64(), payload: d.Fixed32()}
		exp := d.Uint()
		if d.Err() != nil {
			return d.Err()
		}
		if i < 0 || i >= size || s.id == 0 || slots[i].id != 0 || exp > 1<<32-1 {
			d.Fail("dedup slot %d", i)
			return d.Err()
		}
		s.expiry = uint32(exp)
		slots[i] = s
	}
	t.slots, t.n, t.base, t.baseSet, t.nextSweep, t.inserts, t.cut = slots, n, base, baseSet, nextSweep, inserts, cut
	t.liveOK = false
	return nil
}

// Key-group sections (docs/parallelism.md): a task keeps one Table per key
// group of event ids, and a checkpoint writes the tables that changed. A
// section lists the table's remembered ids in id order — the same bytes
// for the same ids whatever the table's layout, so a key group's section
// does not depend on which task held it or whether it was restored — and
// the sweep state (cut, next sweep), which every table of a pipeline
// shares, is stored once beside them by the runner.
//
//	Byte(2) Int(ttl ms) Uint(#ids) per id ascending: Fixed64(id)
//	Fixed32(payload hash) Int(expiry, seconds since the epoch, as
//	delta from the previous id's)

// SweepState is the part of a Table's state that is the same for every
// table of a pipeline (it follows the pipeline watermark): the cut below
// which ids are forgotten (seconds) and the watermark of the next sweep
// (ms).
type SweepState struct {
	Cut, NextSweep int64
}

// Sweep returns the table's sweep state.
func (t *Table) Sweep() SweepState { return SweepState{Cut: t.cut, NextSweep: t.nextSweep} }

// AppendEntries appends the key-group section of the table (format
// above): its remembered ids in id order.
func (t *Table) AppendEntries(e *state.Encoder) {
	sc := t.scratchFor()
	ents := sc.a[:0]
	for i := range t.slots {
		if s := &t.slots[i]; s.id != 0 && !t.expired(s) {
			ents = append(ents, *s)
		}
	}
	sc.a = ents[:0]
	ents = sortSlots(ents, sc)
	t.added = t.added[:0]
	t.appendSlots(e, ents, true)
	t.sectionIDs = len(ents)
	sc.release()
}

// SectionIDs returns the number of ids in the table's last section,
// written (AppendEntries, AppendDelta) or read (RestoreEntries,
// ApplyDelta).
func (t *Table) SectionIDs() int { return t.sectionIDs }

// sectionBytes is the room a section of n ids takes, but for expiries
// more than 12 days apart in id order (an id's expiry delta takes 1 to 4
// bytes below that).
func sectionBytes(n int) int { return 1 + 2*binary.MaxVarintLen64 + n*(8+4+4) }

// EntriesSize is about the size of the table's key-group section
// (AppendEntries) in bytes, from above: room for a writer to grow once.
func (t *Table) EntriesSize() int { return sectionBytes(t.n) }

// DeltaSize is about the size of the table's next delta section
// (AppendDelta) in bytes, from above.
func (t *Table) DeltaSize() int { return sectionBytes(len(t.added)) }

// scratchFor returns the table's scratch, or a new one.
func (t *Table) scratchFor() *Scratch {
	if t.scratch != nil {
		return t.scratch
	}
	return &Scratch{}
}

// appendSlots writes a section of ids sorted by id: the version byte, the
// TTL when full, the count and every id's entry (the formats of the
// key-group and delta sections), into memory grown once.
func (t *Table) appendSlots(e *state.Encoder, ents []slot, full bool) {
	e.Grow(sectionBytes(len(ents)))
	e.Byte(sectionVersion)
	if full {
		e.Int(t.ttl)
	}
	e.Uint(uint64(len(ents)))
	var prev int64
	for i := range ents {
		x := &ents[i]
		exp := t.base + int64(x.expiry)
		e.Fixed64(x.id)
		e.Fixed32(x.payload)
		e.Int(exp - prev)
		prev = exp
	}
}

// RestoreEntries fills a new table (from New, nothing observed) with the
// ids of a section AppendEntries wrote, under the pipeline's sweep state
// s. Errors: a truncated or inconsistent section (a TTL other than the
// table's, ids out of order or repeated, an expiry out of range).
func (t *Table) RestoreEntries(d *state.Decoder, s SweepState) error {
	if t.n != 0 || t.baseSet {
		return errors.New("dedup: RestoreEntries needs a new table")
	}
	section(d, "dedup key group")
	ttl := d.Int()
	n := d.Len(1<<31, 13)
	if err := d.Err(); err != nil {
		return err
	}
	if ttl != t.ttl {
		d.Fail("dedup TTL %d ms, the pipeline's is %d ms", ttl, t.ttl)
		return d.Err()
	}
	t.cut, t.nextSweep, t.liveOK = s.Cut, s.NextSweep, false
	size := 1024
	for n*4 > size*3 {
		size *= 2
	}
	t.slots = make([]slot, size)
	if err := t.readSlots(d, n, t.insertSlot); err != nil {
		return err
	}
	t.sectionIDs = n
	return nil
}

// readSlots reads n ids as appendSlots writes them — ascending, each with
// its payload hash and its expiry (seconds since the epoch, as a delta
// from the previous id's) — and passes each to add. The first expiry read
// sets the table's base when it has none. Errors (d's): a truncated
// input, an id zero or out of order, an expiry out of range.
func (t *Table) readSlots(d *state.Decoder, n int, add func(slot)) error {
	var prevID uint64
	var exp int64
	for i := range n {
		id := d.Fixed64()
		payload := d.Fixed32()
		exp += d.Int()
		if err := d.Err(); err != nil {
			return err
		}
		if id == 0 || (i > 0 && id <= prevID) {
			d.Fail("dedup id %d out of order or zero", i)
			return d.Err()
		}
		prevID = id
		if !t.baseSet {
			t.base, t.baseSet = exp-1<<31, true
		}
		rel := exp - t.base
		if rel < 1 || rel > math.MaxUint32 {
			d.Fail("dedup id %d: expiry %d s out of range", i, exp)
			return d.Err()
		}
		add(slot{id: id, payload: payload, expiry: uint32(rel)})
	}
	return nil
}

// Delta sections. Between two full sections of a key group, a runner that
// takes incremental checkpoints writes only the ids the table added since
// its previous section: a table's content changes only by additions (ids
// are forgotten by the sweep state's cut, which the runner stores beside
// the sections, not by removal), so the previous sections and the
// additions make the table again. The ids the cut has forgotten are left
// out.
//
//	Byte(2) Uint(#ids) per id ascending: Fixed64(id) Fixed32(payload
//	hash) Int(expiry, seconds since the epoch, as delta from the previous
//	id's)

// Track makes the table remember the ids it adds from now on, for the next
// AppendDelta (about 16 bytes per id added, until the next section).
func (t *Table) Track() { t.track = true }

// Added returns the number of additions since the table's last section
// (an id forgotten after its TTL and seen again counts twice).
func (t *Table) Added() int { return len(t.added) }

// AppendDelta appends a delta section (format above) of the ids added
// since the table's last section — AppendEntries or AppendDelta; an id
// added twice appears once, with its newest payload hash and expiry —
// and forgets them. It needs Track.
func (t *Table) AppendDelta(e *state.Encoder) {
	sc := t.scratchFor()
	add := sortSlots(t.added, sc)
	keep := add[:0]
	for i := range add {
		if i+1 < len(add) && add[i+1].id == add[i].id {
			continue // a newer addition of the same id follows
		}
		if !t.expired(&add[i]) {
			keep = append(keep, add[i])
		}
	}
	t.appendSlots(e, keep, false)
	t.sectionIDs = len(keep)
	t.added = t.added[:0]
	sc.release()
}

// ApplyDelta adds the ids of a delta section to a table restored from the
// sections before it (RestoreEntries, then ApplyDelta for each delta in
// order); an id the table holds takes the delta's payload hash and
// expiry. Errors: a truncated section, ids out of order, an expiry out of
// range.
func (t *Table) ApplyDelta(d *state.Decoder) error {
	section(d, "dedup key group delta")
	n := d.Len(1<<31, 13)
	if err := d.Err(); err != nil {
		return err
	}
	err := t.readSlots(d, n, func(s slot) {
		if !t.replace(s) {
			if (t.n+1)*4 > len(t.slots)*3 {
				t.resize(len(t.slots) * 2)
			}
			t.insertSlot(s)
		}
	})
	if err != nil {
		return err
	}
	t.sectionIDs, t.liveOK = n, false
	return nil
}

// replace overwrites the slot of s.id, if the table holds it.
func (t *Table) replace(s slot) bool {
	mask := uint64(len(t.slots) - 1)
	for i := s.id & mask; ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case 0:
			return false
		case s.id:
			t.slots[i] = s
			return true
		}
	}
}

// insertSlot places s in the table (the id is known to be absent).
func (t *Table) insertSlot(s slot) {
	mask := uint64(len(t.slots) - 1)
	i := s.id & mask
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	t.n++
}

// NewSweepState is the sweep state before any watermark: nothing
// forgotten, the first watermark sweeps.
func NewSweepState() SweepState { return SweepState{Cut: math.MinInt64, NextSweep: math.MinInt64} }

// Advance returns the sweep state after the pipeline watermark reached wm
// (ms), and whether a sweep is due: one every quarter TTL (ms) of
// watermark progress, as Table.Expire sweeps a single table. A runner with
// a table per key group advances one SweepState and applies it to every
// table (ApplySweep), so that ids are forgotten at the same watermarks
// whichever task holds their key group.
func (s SweepState) Advance(wm, ttlMs int64) (SweepState, bool) {
	if wm < s.NextSweep || wm == math.MaxInt64 {
		return s, false
	}
	return SweepState{Cut: wm / 1000, NextSweep: wm + max(ttlMs/4, 1)}, true
}

// ApplySweep forgets the ids whose expiry second is at or before s.Cut
// (at once for lookups; physically, by a rebuild, once at least an eighth
// of the table's ids are new since the last rebuild, as Expire does).
func (t *Table) ApplySweep(s SweepState) {
	t.setCut(s.Cut)
	t.nextSweep = s.NextSweep
	// A table of the smallest size is not rebuilt: the ids it forgot are
	// dropped when it next grows. (With a table per key group most tables
	// are small, and rebuilding them all at every sweep would cost more
	// than the memory it gives back.)
	if !t.baseSet || t.inserts*8 < t.n || len(t.slots) <= minSlots {
		return
	}
	t.inserts = 0
	size := len(t.slots)
	for size > 1024 && t.n*100 < size*37/2 {
		size /= 2
	}
	t.resize(size)
	if t.n*4 > len(t.slots)*3 {
		t.resize(len(t.slots) * 2)
	}
}
