// Package dedup remembers event ids for a time-to-live measured in event
// time, telling a first delivery from a duplicate (same id, same payload)
// and from a conflict (same id, different payload).
//
// In the data flow it is core, below the task: the task's dedup node holds
// the Tables of its key groups and sees each record (routed by its event
// id's key group) before order_by and the stages; a first delivery goes
// on, a duplicate is counted and a conflict goes to the conflict side
// output. The PostgreSQL sink's ledger uses its payload hash. It imports
// only state and u64map.
//
// # Memory
//
// An id is remembered as a 64-bit hash of its text, a 32-bit hash of its
// canonical payload and a 32-bit expiry: 16 bytes in a linear-probing
// table kept between 37.5 % and 75 % full, so 21 to 43 bytes per
// remembered id (the bound tidemark holds itself to is 48). Two different ids share a 64-bit hash with
// probability about n²/2⁶⁵ (3·10⁻⁸ for a million ids in the table at
// once); a conflict whose payloads share a 32-bit hash (probability 2⁻³²)
// is taken for a duplicate. Flink's deduplication keeps the full key
// instead, at several times the memory.
//
// # Time to live
//
// An id is forgotten once the watermark passes its event time + TTL. The
// TTL is in event time so that the guarantee is a property of the data
// ("a redelivery within 24 h of the event is caught"), the same in a live
// run, a replay at ten times the speed, or a restore from a checkpoint. A
// processing-time TTL (Flink's StateTtlConfig) would make the result of a
// replay depend on how fast it ran. A duplicate that arrives after its
// id's TTL is treated as a first delivery: the TTL must cover the longest
// redelivery or replay range (docs/semantics.md, "Duplicates").
//
// The table is a pure, single-threaded structure: time enters as
// arguments.
package dedup

import (
	"math"
)

// Outcome classifies a delivery.
type Outcome uint8

// The outcomes.
const (
	First     Outcome = iota // the id is new (now remembered)
	Duplicate                // same id, same payload: count, do not apply
	Conflict                 // same id, different payload: to the conflict output
)

// slot is one table entry; id 0 marks an empty slot.
type slot struct {
	id      uint64 // hash of the event id (never 0)
	payload uint32 // hash of the canonical payload
	expiry  uint32 // seconds after base when the id is forgotten
}

// Table remembers event ids. The zero value is not usable; use New.
type Table struct {
	slots     []slot
	n         int   // remembered ids
	base      int64 // seconds: expiry values count from here
	baseSet   bool
	nextSweep int64 // watermark (ms) at which expired ids are swept next
	inserts   int   // ids added since the last rebuild
	cut       int64 // seconds: ids whose expiry is at or before it are forgotten
	ttl       int64 // ms
	// track makes Observe keep the ids it adds in added, until the next
	// section (AppendEntries or AppendDelta): incremental checkpoints.
	track bool
	added []slot
	// scratch sorts the sections (UseScratch; nil: allocated per section).
	scratch *Scratch
	// live counts the ids not forgotten while liveOK (Live counts them
	// again after the cut moved or a restore); sectionIDs is the number
	// of ids of the last section written or read.
	live       int
	liveOK     bool
	sectionIDs int
}

// minSlots is the smallest table size.
const minSlots = 1024

// New returns an empty table whose ids live for ttl ms of event time
// (ttl > 0).
func New(ttlMs int64) *Table {
	return &Table{slots: make([]slot, minSlots), ttl: ttlMs, nextSweep: math.MinInt64, cut: math.MinInt64, liveOK: true}
}

// TTL returns the time to live in ms.
func (t *Table) TTL() int64 { return t.ttl }

// Len returns the number of remembered ids (Live).
func (t *Table) Len() int { return t.Live() }

// Live returns the number of remembered ids: counted as ids are added,
// and by a scan of the table after the sweep cut moved (once per sweep)
// or a restore.
func (t *Table) Live() int {
	if !t.liveOK {
		n := 0
		for i := range t.slots {
			if s := &t.slots[i]; s.id != 0 && !t.expired(s) {
				n++
			}
		}
		t.live, t.liveOK = n, true
	}
	return t.live
}

// setCut moves the sweep cut (seconds).
func (t *Table) setCut(cut int64) {
	if cut != t.cut {
		t.cut, t.liveOK = cut, false
	}
}

// Bytes returns the table's memory in bytes (16 per slot).
func (t *Table) Bytes() int { return len(t.slots) * 16 }

// expiryOf encodes event time ts (ms) + TTL as seconds after base, rounded
// up; it saturates at the ends of the 136-year range of a uint32.
func (t *Table) expiryOf(ts int64) uint32 {
	sec := (ts + t.ttl + 999) / 1000
	if !t.baseSet {
		t.base, t.baseSet = sec-1<<31, true
	}
	d := sec - t.base
	switch {
	case d < 1:
		return 1
	case d > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(d)
}

// Observe looks up an event id (its hash; 0 is remapped) with the hash of
// its payload and its event time ts (ms). A new id is remembered until the
// watermark passes ts + TTL. It returns the outcome and, for a duplicate or
// a conflict, the payload hash of the first delivery.
func (t *Table) Observe(id uint64, payload uint32, ts int64) (Outcome, uint32) {
	if id == 0 {
		id = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := id & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.id {
		case 0:
			*s = slot{id: id, payload: payload, expiry: t.expiryOf(ts)}
			t.n++
			t.inserts++
			if !t.expired(s) {
				t.live++
			}
			if t.track {
				t.added = append(t.added, *s)
			}
			if t.n*4 > len(t.slots)*3 {
				t.resize(len(t.slots) * 2)
			}
			return First, 0
		case id:
			if t.expired(s) { // swept logically: a new event
				*s = slot{id: id, payload: payload, expiry: t.expiryOf(ts)}
				t.inserts++
				if !t.expired(s) {
					t.live++
				}
				if t.track {
					t.added = append(t.added, *s)
				}
				return First, 0
			}
			if s.payload == payload {
				return Duplicate, s.payload
			}
			return Conflict, s.payload
		}
	}
}

// expired reports whether the last sweep forgot s.
func (t *Table) expired(s *slot) bool { return t.base+int64(s.expiry) <= t.cut }

// Contains reports whether an id is remembered (for tests and tools).
func (t *Table) Contains(id uint64) bool {
	if id == 0 {
		id = 1
	}
	mask := uint64(len(t.slots) - 1)
	for i := id & mask; ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case 0:
			return false
		case id:
			return !t.expired(&t.slots[i])
		}
	}
}

// Expire forgets the ids whose event time + TTL the watermark wm (ms) has
// passed. It sweeps the whole table at most once per quarter of the TTL of
// watermark progress, so its cost is amortized over the records of that
// span; ids may outlive their TTL by up to that quarter.
func (t *Table) Expire(wm int64) {
	if wm < t.nextSweep || !t.baseSet {
		return
	}
	t.nextSweep = wm + max(t.ttl/4, 1)
	if wm == math.MaxInt64 {
		return // end of input: nothing more to compare with
	}
	// An id whose expiry second is ≤ wm/1000 has expired. The sweep is logical at once (lookups treat ids expired by cut as
	// absent) and physical — a rebuild of the table — only when at least
	// an eighth of its ids are new since the last rebuild: with a TTL short
	// next to the gap between records, a rebuild every quarter TTL would
	// cost a rebuild per record.
	t.setCut(wm / 1000)
	if t.inserts*8 < t.n {
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

// resize rehashes into size slots (a power of two), leaving out the ids
// the last sweep forgot.
func (t *Table) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	t.n = 0
	mask := uint64(size - 1)
	for k := range old {
		s := &old[k]
		if s.id == 0 || t.expired(s) {
			continue
		}
		i := s.id & mask
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = *s
		t.n++
	}
	t.live, t.liveOK = t.n, true
}

// Slots returns the table's entries for a checkpoint: id hash, payload
// hash and expiry instant (ms, rounded up to the second).
func (t *Table) Slots(f func(id uint64, payload uint32, expiryMs int64)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.id != 0 && !t.expired(s) {
			f(s.id, s.payload, (t.base+int64(s.expiry))*1000)
		}
	}
}
