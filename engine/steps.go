package engine

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
)

// The steps a source record goes through before the stages (DESIGN.md,
// "Data flow"): the contract's quality rules, deduplication by event id,
// and per-key version ordering.

// dedupStep remembers event ids (docs/semantics.md, "Duplicates").
type dedupStep struct {
	p        *plan.Dedup
	table    *dedup.Table
	hasher   *dedup.Hasher
	key      []byte // the current record's event id (text)
	hash     uint32 // the current record's payload hash
	event    []byte // the current record as a JSON object
	payloads payloadCache
	sink     sink.Records
	enc      *changelog.Encoder
}

// observe classifies a valid source record. It reports whether the record
// goes on to the stages (a first delivery).
func (d *dedupStep) observe(ctx context.Context, rt *runtime, r *row.Row, m *source.Meta, ts int64) (bool, error) {
	v, err := d.p.Key.Eval(r)
	if err != nil || v.IsNull() {
		reason := "the event id (dedup.key) is null"
		if err != nil {
			reason = "the event id (dedup.key): " + err.Error()
		}
		return false, rt.quarantineAll(ctx, m, reason, "", "dedup")
	}
	d.key = v.AppendText(d.key[:0], nil)
	id := dedup.IDHash(d.key)
	d.event = rt.src.EventJSON(d.event[:0], m)
	payload, _ := d.hasher.Sum(d.event)
	d.hash = payload
	out, first := d.table.Observe(id, payload, ts)
	switch out {
	case dedup.Duplicate:
		rt.dups++
		return false, nil
	case dedup.Conflict:
		rt.conflicts++
		if d.sink == nil {
			return false, nil
		}
		rec := changelog.ConflictRecord{
			EventID:          string(d.key),
			FirstPayloadHash: first,
			FirstPayload:     d.payloads.get(id),
			NewPayloadHash:   payload,
			NewPayload:       d.event,
			EventTime:        ts,
			ObservedAt:       rt.now,
			Position:         m.Pos,
		}
		rt.buf = d.enc.Conflict(rt.buf[:0], &rec)
		if err := d.sink.WriteRecord(ctx, rt.buf); err != nil {
			return false, fmt.Errorf("conflicts sink: %w", err)
		}
		return false, nil
	}
	d.payloads.put(id, d.event)
	return true, nil
}

// payloadCache keeps the newest first payloads (up to capacity), so that a
// conflict record can show the first delivery.
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
		c.ring = make([]uint64, 0, min(c.capacity, 1<<16))
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

// orderStep keeps the newest version of each entity and turns state events
// into an upsert stream: a newer version retracts the entity's previous
// row from the stages and inserts its own.
type orderStep struct {
	p         *plan.OrderBy
	state     map[string]*version
	key       []byte
	nextSweep int64
}

// version is an entity's current state: its version and its row (owned),
// with the record's raw bytes and position for side outputs.
type version struct {
	v    int64
	ts   int64
	row  row.Row
	meta source.Meta
}

// apply runs a valid source record through version ordering and the root
// stages. It reports whether the record was applied (it then moves the
// watermark).
func (o *orderStep) apply(ctx context.Context, rt *runtime, r *row.Row, m *source.Meta, ts int64) (bool, error) {
	if r.IsNull(o.p.Key.Index) {
		return false, rt.quarantineAll(ctx, m, "order_by: the entity key "+o.p.Key.Name+" is null", o.p.Key.Name, "order_by")
	}
	if r.IsNull(o.p.Version.Index) {
		return false, rt.quarantineAll(ctx, m, "order_by: the version "+o.p.Version.Name+" is null", o.p.Version.Name, "order_by")
	}
	o.key = r.Get(o.p.Key).AppendText(o.key[:0], nil)
	ver := r.I[o.p.Version.Slot]
	cur, ok := o.state[string(o.key)]
	if ok && ver <= cur.v {
		rt.stale++
		return false, nil
	}
	// A record the stages cannot evaluate (an expression error) is not a
	// valid new version: it is quarantined and the entity keeps its row.
	for _, st := range rt.roots {
		if reason, field, bad := st.invalid(r); bad {
			return false, rt.quarantineAll(ctx, m, reason, field, "expression")
		}
	}
	if ok {
		rt.superseded++
		org := origin{meta: &cur.meta, src: rt.src}
		for _, st := range rt.roots {
			org.loc = st.p.Loc
			if _, err := st.process(ctx, &cur.row, cur.ts, -1, &org); err != nil {
				return false, err
			}
		}
	} else {
		cur = &version{}
		o.state[string(o.key)] = cur
	}
	cur.v, cur.ts = ver, ts
	cur.row.CopyFrom(r)
	cur.meta = *m
	cur.meta.Raw = append(cur.meta.Raw[:0], m.Raw...)
	valid := false
	org := origin{meta: m, src: rt.src}
	for _, st := range rt.roots {
		org.loc = st.p.Loc
		ok, err := st.process(ctx, r, ts, 1, &org)
		if err != nil {
			return false, err
		}
		valid = valid || ok
	}
	return valid, nil
}

// expire forgets entities whose latest version's event time + TTL the
// watermark has passed (every TTL/4 of watermark progress).
func (o *orderStep) expire(wm int64) {
	if o.p.TTL <= 0 || wm < o.nextSweep || wm == changelog.WatermarkInfinity {
		return
	}
	o.nextSweep = wm + max(o.p.TTL/4, 1)
	for k, v := range o.state { // deletion only: order does not matter
		if v.ts+o.p.TTL < wm {
			delete(o.state, k)
		}
	}
}

// quarantineAll sends a source record that failed a pipeline-level step to
// quarantine, once, counting it for the pipeline.
func (rt *runtime) quarantineAll(ctx context.Context, m *source.Meta, reason, field, rule string) error {
	rt.quarantined++
	if rt.firstQ == "" {
		rt.firstQ = m.Pos.String() + ": "
		if rule != "" {
			rt.firstQ += "rule " + rule + ": "
		}
		rt.firstQ += reason
	}
	if rule != "" {
		if rt.byRule == nil {
			rt.byRule = map[string]int64{}
		}
		rt.byRule[rule]++
	}
	if rt.quarantine == nil {
		return nil
	}
	raw := m.Raw
	if raw == nil { // a generated record (nexmark): its JSON
		raw = rt.src.EventJSON(nil, m)
	}
	rec := changelog.QuarantineRecord{Stage: rt.plan.Spec.Name, Raw: raw, Reason: reason, Field: field, Rule: rule, Position: m.Pos}
	rt.buf = rt.enc.Quarantine(rt.buf[:0], &rec)
	if err := rt.quarantine.WriteRecord(ctx, rt.buf); err != nil {
		return fmt.Errorf("quarantine sink: %w", err)
	}
	return nil
}
