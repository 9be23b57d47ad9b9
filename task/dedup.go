package task

import (
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
	hasher  *dedup.Hasher
	sweep   dedup.SweepState
	event   []byte
	buf     []byte
	enc     *changelog.Encoder
	perKG   int // payload cache capacity per key group
}

func newDedupNode(g *Graph, rng keygroup.Range) *dedupNode {
	d := g.Plan.Dedup
	n := &dedupNode{g: g, p: d, rng: rng, tables: make([]*dedup.Table, rng.Len()), caches: make([]payloadCache, rng.Len()),
		changed: make([]bool, rng.Len()), hasher: dedup.NewHasher(d.Ignore), sweep: dedup.NewSweepState(),
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
		t.ApplySweep(d.sweep)
		d.tables[i] = t
	}
	return t
}

// item classifies one delivery and forwards a first delivery.
func (d *dedupNode) item(nr *nodeRT, p *Packet, it *Item) {
	kg := keygroup.OfHash(it.IDHash, d.g.KeyGroups)
	i := kg - d.rng.Lo
	t := d.table(i)
	d.event = d.g.EventJSON(d.event[:0], it.Meta)
	payload, _ := d.hasher.Sum(d.event)
	out, first := t.Observe(it.IDHash, payload, it.TS)
	cnt := nr.t.cnt
	id := p.ID(it)
	switch out {
	case dedup.Duplicate:
		cnt.Duplicates++
		return
	case dedup.Conflict:
		cnt.Conflicts++
		if !d.g.HasConflicts {
			return
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
		return
	}
	d.changed[i] = true
	d.caches[i].put(it.IDHash, d.event)
	fid := ID{Text: id, Hash: it.IDHash, Payload: payload, Has: true}
	if d.g.OrderNode >= 0 {
		nr.snd.ToOrder(it.Step, it.Now, it.Row, it.Meta, it.TS, fid)
		return
	}
	nr.snd.ToRoots(it.Step, nil, it.Now, it.Row, it.Meta, it.TS, 1, fid, true)
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
}

// Dedup key-group section: Byte(1), the table's section
// (dedup.Table.AppendEntries), then the payload cache: Uint(#ring)
// Uint(next) and per ring entry Fixed64(id) Bytes8(payload).

func (d *dedupNode) snapshot(i int, e *state.Encoder) {
	e.Byte(1)
	d.table(i).AppendEntries(e)
	d.caches[i].snapshot(e)
}

func (d *dedupNode) restore(i int, dec *state.Decoder) error {
	dec.Section("dedup key group section", 1)
	t := dedup.New(d.p.TTL)
	if err := t.RestoreEntries(dec, d.sweep); err != nil {
		return err
	}
	d.tables[i] = t
	d.caches[i].restore(dec)
	return dec.Err()
}

// payloadCache keeps the newest first payloads of a key group (up to
// capacity), so that a conflict record can show the first delivery.
type payloadCache struct {
	capacity int
	ring     []uint64
	next     int
	m        map[uint64][]byte
}

func (c *payloadCache) put(id uint64, payload []byte) {
	if c.capacity <= 0 {
		return
	}
	if c.m == nil {
		c.m = map[uint64][]byte{}
		c.ring = make([]uint64, 0, min(c.capacity, 1<<10))
	}
	if old, ok := c.m[id]; ok {
		// The id came back after its TTL: replace its payload in place (a
		// second ring entry would delete it when the first is evicted).
		c.m[id] = append(old[:0], payload...)
		return
	}
	if len(c.ring) < c.capacity {
		c.ring = append(c.ring, id)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = id
		c.next = (c.next + 1) % c.capacity
	}
	c.m[id] = append([]byte(nil), payload...)
}

func (c *payloadCache) get(id uint64) []byte { return c.m[id] }

func (c *payloadCache) snapshot(e *state.Encoder) {
	e.Uint(uint64(len(c.ring)))
	e.Uint(uint64(c.next))
	for _, id := range c.ring {
		e.Fixed64(id)
		e.Bytes8(c.m[id])
	}
}

func (c *payloadCache) restore(d *state.Decoder) {
	n := d.Len(max(c.capacity, 0), 9)
	next := d.Len(max(n, 1), 0)
	if d.Err() != nil {
		return
	}
	c.ring, c.next, c.m = make([]uint64, 0, n), next, make(map[uint64][]byte, n)
	for range n {
		id := d.Fixed64()
		p := d.Bytes8()
		if d.Err() != nil {
			return
		}
		c.ring = append(c.ring, id)
		c.m[id] = append([]byte(nil), p...)
	}
}
