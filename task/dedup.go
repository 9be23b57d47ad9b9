package task

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/state"
)

// dedupNode remembers the event ids of the task's key groups
// (docs/semantics.md, "Duplicates"): a table and a payload cache per key
// group, one sweep schedule for all.
type dedupNode struct {
	g       *Graph
	p       *plan.Dedup
	rng     keygroup.Range
	tables  []*dedup.Table // by key group − rng.Lo; nil until used
	caches  []payloadCache
	changed []bool
	chains  []chain
	hasher  *dedup.Hasher
	sweep   dedup.SweepState
	event   []byte
	buf     []byte
	enc     *changelog.Encoder
	perKG   int // payload cache capacity per key group
	// scratch sorts every table's sections (one task's tables are
	// written one at a time).
	scratch dedup.Scratch
	// cold is the disk backend's state (dedup_disk.go); nil on the memory
	// backend.
	cold *dedupCold
}

func newDedupNode(g *Graph, rng keygroup.Range) *dedupNode {
	d := g.Plan.Dedup
	n := &dedupNode{g: g, p: d, rng: rng, tables: make([]*dedup.Table, rng.Len()), caches: make([]payloadCache, rng.Len()),
		changed: make([]bool, rng.Len()), chains: make([]chain, rng.Len()), hasher: dedup.NewHasher(d.Ignore), sweep: dedup.NewSweepState(),
		enc: changelog.NewEncoder(g.Plan.Stages[0].Loc)}
	// keep_payloads is shared out evenly among the key groups, so which
	// first payloads a conflict record can show does not depend on the
	// parallelism.
	if d.KeepPayloads > 0 {
		n.perKG = (d.KeepPayloads + g.KeyGroups - 1) / g.KeyGroups
	}
	for i := range n.caches {
		n.caches[i].capacity = n.perKG
	}
	return n
}

func (d *dedupNode) table(i int) *dedup.Table {
	t := d.tables[i]
	if t == nil {
		t = dedup.New(d.p.TTL)
		t.UseScratch(&d.scratch)
		t.ApplySweep(d.sweep)
		if d.g.Incremental || d.cold != nil {
			t.Track()
		}
		d.tables[i] = t
	}
	return t
}

// item classifies one delivery and forwards a first delivery. Errors: the
// disk backend's store failed.
func (d *dedupNode) item(nr *nodeRT, p *Packet, it *Item) error {
	kg := keygroup.OfHash(it.IDHash, d.g.KeyGroups)
	i := kg - d.rng.Lo
	t := d.table(i)
	d.event = d.g.EventJSON(d.event[:0], it.Meta)
	payload, _ := d.hasher.Sum(d.event)
	var out dedup.Outcome
	var first uint32
	if d.cold != nil {
		var err error
		if out, first, err = d.observeCold(i, t, it.IDHash, payload, it.TS); err != nil {
			return fmt.Errorf("dedup: %w", err)
		}
	} else {
		out, first = t.Observe(it.IDHash, payload, it.TS)
	}
	cnt := nr.t.cnt
	id := p.ID(it)
	switch out {
	case dedup.Duplicate:
		cnt.Duplicates++
		return nil
	case dedup.Conflict:
		cnt.Conflicts++
		if !d.g.HasConflicts {
			return nil
		}
		rec := changelog.ConflictRecord{
			EventID:          string(id),
			FirstPayloadHash: first,
			FirstPayload:     d.caches[i].get(it.IDHash),
			NewPayloadHash:   payload,
			NewPayload:       d.event,
			EventTime:        it.TS,
			ObservedAt:       it.Now,
			Position:         it.Meta.Pos,
		}
		start := len(nr.log.Bytes)
		nr.log.Bytes = d.enc.Conflict(nr.log.Bytes, &rec)
		nr.log.record(it.Step, OutConflicts, start)
		return nil
	}
	d.changed[i] = true
	d.caches[i].put(it.IDHash, d.event)
	fid := ID{Text: id, Hash: it.IDHash, Payload: payload, Has: true}
	if d.g.OrderNode >= 0 {
		nr.snd.ToOrder(it.Step, it.Now, it.Row, it.Meta, it.TS, fid)
		return nil
	}
	nr.snd.ToRoots(it.Step, nil, it.Now, it.Row, it.Meta, it.TS, 1, &fid, true)
	return nil
}

// advance runs the sweep schedule at watermark wm.
func (d *dedupNode) advance(wm int64) {
	s, due := d.sweep.Advance(wm, d.p.TTL)
	if !due {
		return
	}
	d.sweep = s
	for _, t := range d.tables {
		if t != nil {
			t.ApplySweep(s)
		}
	}
	if d.cold != nil {
		d.sweepCold(s)
	}
}

// Dedup key-group sections: a full section, Byte(2), the table's section
// (dedup.Table.AppendEntries), then the payload cache (payloadCache
// below); or a delta section, Byte(3), the ids added since the key
// group's previous section (dedup.Table.AppendDelta), then the payloads
// put into the cache since then (at most its capacity, oldest first: the
// ones before were evicted by these). A checkpoint references a key
// group's last full section and the deltas after it, in order.

// chain is what a key group's newest sections are: whether there is a
// full one, the deltas after it, and the ids they list together.
type chain struct {
	full        bool
	deltas, ids int
}

// maxDeltas and maxChainIDs bound the deltas after a full section: key
// group g writes a full section again after 8 + g mod 8 deltas, or once
// its sections would list more than (24 + g mod 8)/16 times the ids the
// table remembers (ids forgotten since, or listed again), so that a
// restore reads less than twice the ids of the state. While a table only
// grows, its deltas list only remembered ids and the sections stay
// deltas up to the count: the bound follows the state, not the full
// section, which a growing table would otherwise rewrite every time it
// grew by half. The payload cache's entries in each delta (the ring's
// newest puts, often all of it) are bounded by the count. The bounds
// differ among key groups so that the key groups of a pipeline, which
// mostly change at once and grow alike, do not all rewrite at the same
// checkpoint.
func maxDeltas(g int) int { return 8 + g%8 }

func maxChainIDs(g, live int) int { return live * (24 + g%8) / 16 }

// snapshot returns key group i's section — a delta when the graph is
// incremental and the chain allows it — and whether it is a delta.
func (d *dedupNode) snapshot(i int) (data []byte, delta bool) {
	if d.cold != nil {
		return d.snapshotCold(i)
	}
	t, c, ch := d.table(i), &d.caches[i], &d.chains[i]
	g := d.rng.Lo + i
	if d.g.Incremental && ch.full && ch.deltas < maxDeltas(g) && ch.ids+t.Added() <= maxChainIDs(g, t.Live()) {
		var e state.Encoder
		e.Grow(1 + t.DeltaSize() + c.putsSize())
		e.Byte(3)
		t.AppendDelta(&e)
		c.appendPuts(&e)
		ch.deltas++
		ch.ids += t.SectionIDs()
		return e.Bytes(), true
	}
	var e state.Encoder
	e.Grow(1 + t.EntriesSize() + c.size())
	e.Byte(2)
	t.AppendEntries(&e)
	c.snapshot(&e)
	*ch = chain{full: true, ids: t.SectionIDs()}
	return e.Bytes(), false
}

// restore brings key group i to a full section.
func (d *dedupNode) restore(i int, dec *state.Decoder) error {
	if d.cold != nil {
		return d.restoreCold(i, dec, false)
	}
	dec.Section("dedup key group section", 2)
	t := dedup.New(d.p.TTL)
	t.UseScratch(&d.scratch)
	if err := t.RestoreEntries(dec, d.sweep); err != nil {
		return err
	}
	if d.g.Incremental {
		t.Track()
	}
	d.tables[i] = t
	d.caches[i] = payloadCache{capacity: d.perKG}
	d.caches[i].restore(dec)
	d.chains[i] = chain{full: true, ids: t.SectionIDs()}
	return dec.Err()
}

// restoreDelta applies a delta section to key group i, restored from the
// sections before it.
func (d *dedupNode) restoreDelta(i int, dec *state.Decoder) error {
	if d.cold != nil {
		return d.restoreCold(i, dec, true)
	}
	if d.tables[i] == nil {
		return errors.New("a delta section without a full section before it")
	}
	dec.Section("dedup key group delta", 3)
	if err := dec.Err(); err != nil {
		return err
	}
	if err := d.tables[i].ApplyDelta(dec); err != nil {
		return err
	}
	d.caches[i].restorePuts(dec)
	d.chains[i].deltas++
	d.chains[i].ids += d.tables[i].SectionIDs()
	return dec.Err()
}

// payloadCache keeps the first payloads of a key group's newest ids (up
// to capacity), so that a conflict record can show the first delivery. It
// is a ring of the last capacity puts, oldest evicted first; a put of an
// id the cache holds (an id seen again after its TTL) moves it to the
// newest place and leaves its old place stale (counted, empty). What the
// cache holds is thus a function of the last capacity puts alone, which
// is what a delta section stores.
//
// The ids' live places are found through idx, an open-addressing table
// (linear probing, at most half full) of place+1 (0: empty) whose key is
// ring[place]: a put costs one probe for the id and, once the ring is
// full, a delete of the evicted id, instead of three operations on a Go
// map (about 620 of a put's 860 instructions, callgrind, the article's
// 2026-12-01 run).
//
// idx is its own table, not a u64map.Map, for a measured reason: its
// slots hold a place alone (the id is read from ring, which holds it
// anyway), 8 bytes where a u64map cell holds the id and the place in 16,
// so at the same bytes it is half as full and its probes and backward
// shifts are shorter. BenchmarkPayloadCachePut with idx a
// u64map.Map[int] (id → place; one Upsert, and a Delete of the evicted
// id), old and new test binaries alternating (2026-12-03, a shared
// machine, load 6-15 on 2 cores): at the same bytes (128 cells for 79
// ids) 1.46× the time per put (median of 12 rounds' ratios); reserved
// twice the bytes (256 cells) 1.17× and 1.21× (10 and 8 rounds) and 379
// instructions a put against 354 (callgrind, 300,000 puts; D1 read misses
// 11 % fewer); four times the bytes (512 cells) 0.88× and 352
// instructions. As fast only at four times the index's bytes (128 KiB a
// key group at keep_payloads 1,024 and more, against 32 KiB).
type payloadCache struct {
	capacity int
	ring     []uint64 // ids, by place
	pay      [][]byte // payloads, by place (nil when stale): as many buffers as live ids
	live     []bool   // by place: whether the place holds its id's payload
	idx      []int    // place+1 of each live id, by hash of the id
	n        int      // live ids
	next     int      // the oldest place once the ring is full
	since    int      // puts since the key group's last section
	bytes    int      // the live payloads' bytes
}

// slotOf returns the index slot of id: the slot holding its live place,
// or the empty slot where it would go.
func (c *payloadCache) slotOf(id uint64) int {
	mask := len(c.idx) - 1
	for i := int((id*phi64)>>32) & mask; ; i = (i + 1) & mask {
		p := c.idx[i]
		if p == 0 || c.ring[p-1] == id {
			return i
		}
	}
}

// phi64 is 2⁶⁴/φ (Fibonacci hashing: the ids' key group takes their high
// bits, so the index mixes all of them).
const phi64 = 0x9e3779b97f4a7c15

// unlink removes index slot i (linear probing's backward shift).
func (c *payloadCache) unlink(i int) {
	mask := len(c.idx) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		p := c.idx[j]
		if p == 0 {
			break
		}
		home := int((c.ring[p-1]*phi64)>>32) & mask
		// p may move to i when its home is not in (i, j] (cyclically).
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			c.idx[i] = p
			i = j
		}
	}
	c.idx[i] = 0
}

// grow doubles the index (or makes its first one) and re-inserts the
// live places.
func (c *payloadCache) grow() {
	size := max(16, 2*len(c.idx))
	c.idx = make([]int, size)
	for p, ok := range c.live {
		if ok {
			c.idx[c.slotOf(c.ring[p])] = p + 1
		}
	}
}

func (c *payloadCache) put(id uint64, payload []byte) {
	if c.capacity <= 0 {
		return
	}
	c.since++
	if c.ring == nil {
		n := min(c.capacity, 1<<10)
		c.ring, c.pay, c.live = make([]uint64, 0, n), make([][]byte, 0, n), make([]bool, 0, n)
	}
	if 2*(c.n+1) > len(c.idx) {
		c.grow()
	}
	s := c.slotOf(id)
	var buf []byte
	if p := c.idx[s]; p != 0 { // its old place goes stale, its bytes hold the new payload
		c.bytes -= len(c.pay[p-1])
		buf = c.pay[p-1][:0]
		c.pay[p-1], c.live[p-1] = nil, false
		c.n--
	}
	place := len(c.ring)
	if place < c.capacity {
		c.ring = append(c.ring, id)
		c.pay = append(c.pay, nil)
		c.live = append(c.live, false)
	} else {
		place = c.next
		if c.live[place] { // evicted (not id: its place went stale above)
			c.live[place] = false
			c.bytes -= len(c.pay[place])
			c.n--
			if buf == nil {
				buf = c.pay[place][:0] // the evicted payload's bytes hold the new one
			}
			c.pay[place] = nil
			c.unlink(c.slotOf(c.ring[place]))
			s = c.slotOf(id) // the shift may have moved id's slot
		}
		c.ring[place] = id
		c.next = (c.next + 1) % c.capacity
	}
	c.pay[place] = append(buf, payload...) // a stale place's bytes went to its id's newer place
	c.live[place] = true
	c.idx[s] = place + 1
	c.n++
	c.bytes += len(payload)
}

func (c *payloadCache) get(id uint64) []byte {
	if c.n == 0 {
		return nil
	}
	if p := c.idx[c.slotOf(id)]; p != 0 {
		return c.pay[p-1]
	}
	return nil
}

// order returns the ring's places from the oldest to the newest.
func (c *payloadCache) order(yield func(place int) bool) {
	n := len(c.ring)
	start := 0
	if n == c.capacity {
		start = c.next
	}
	for k := range n {
		if !yield((start + k) % n) {
			return
		}
	}
}

// appendEntry writes the put at place: Fixed64(id) Bool(live)
// [Bytes8(payload) when live].
func (c *payloadCache) appendEntry(e *state.Encoder, place int) {
	e.Fixed64(c.ring[place])
	e.Bool(c.live[place])
	if c.live[place] {
		e.Bytes8(c.pay[place])
	}
}

// size is about the size of snapshot's entries in bytes, from above.
func (c *payloadCache) size() int {
	return binary.MaxVarintLen64 + len(c.ring)*(8+1) + c.n*binary.MaxVarintLen64 + c.bytes
}

// putsSize is about the size of appendPuts' entries in bytes, from above
// for payloads of even length (the whole ring's once the puts since the
// last section fill it).
func (c *payloadCache) putsSize() int {
	if c.since >= len(c.ring) || c.n == 0 {
		return c.size()
	}
	return binary.MaxVarintLen64 + c.since*(8+1+binary.MaxVarintLen64+c.bytes/c.n+1)
}

// snapshot writes the whole ring, oldest first: Uint(n) entries.
func (c *payloadCache) snapshot(e *state.Encoder) {
	e.Uint(uint64(len(c.ring)))
	for p := range c.order {
		c.appendEntry(e, p)
	}
	c.since = 0
}

// appendPuts writes the puts since the last section (the newest
// min(since, len) places), oldest first, in snapshot's format.
func (c *payloadCache) appendPuts(e *state.Encoder) {
	n := min(c.since, len(c.ring))
	e.Uint(uint64(n))
	skip := len(c.ring) - n
	for p := range c.order {
		if skip > 0 {
			skip--
			continue
		}
		c.appendEntry(e, p)
	}
	c.since = 0
}

// restore replays a full section's entries into an empty cache.
func (c *payloadCache) restore(d *state.Decoder) {
	c.restorePuts(d)
	c.since = 0
}

// restorePuts replays entries (snapshot's or appendPuts' format) as puts:
// a stale entry is put empty, and the live put of the same id after it
// makes it stale again.
func (c *payloadCache) restorePuts(d *state.Decoder) {
	n := d.Len(max(c.capacity, 0), 9)
	for range n {
		id := d.Fixed64()
		var p []byte
		if d.Bool() {
			p = d.Bytes8()
		}
		if d.Err() != nil {
			return
		}
		c.put(id, p)
	}
	c.since = 0
}
