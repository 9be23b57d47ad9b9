package task

import (
	"maps"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// orderNode keeps the newest version of each entity of the task's key
// groups and turns state events into an upsert stream: a newer version
// retracts the entity's previous row from the stages and inserts its own
// (docs/semantics.md, "Versions and state events").
type orderNode struct {
	g         *Graph
	p         *plan.OrderBy
	ch        *plan.Changes // a change stream's fields; nil for order_by
	scratch   *row.Row      // a change whose unchanged values are filled in
	rng       keygroup.Range
	state     []map[string]*version // by key group − rng.Lo
	changed   []bool
	nextSweep int64
	key       []byte
	tail      []byte
}

// version is an entity's current state: its version and its row (owned),
// with the record's meta (Raw owned) for side outputs. A change stream's
// deleted key keeps its version (dead, no row), so that the delete seen
// again is known.
type version struct {
	v    int64
	ts   int64
	dead bool
	row  row.Row
	meta record.Meta
}

func newOrderNode(g *Graph, rng keygroup.Range) *orderNode {
	o := &orderNode{g: g, p: g.Plan.OrderBy, ch: g.Plan.Changes, rng: rng, state: make([]map[string]*version, rng.Len()), changed: make([]bool, rng.Len())}
	if o.ch != nil {
		o.scratch = g.Plan.SourceSchema.NewRow()
	}
	for i := range o.state {
		o.state[i] = map[string]*version{}
	}
	return o
}

func (o *orderNode) item(nr *nodeRT, p *Packet, it *Item) {
	if o.ch != nil {
		o.change(nr, it)
		return
	}
	r := it.Row
	o.key = OrderKey(o.key[:0], o.p, r)
	kg := keygroup.OfHash(xxhash.Sum64(o.key), o.g.KeyGroups)
	i := kg - o.rng.Lo
	ver := r.I[o.p.Version.Slot]
	cnt := nr.t.cnt
	cur, ok := o.state[i][string(o.key)]
	if ok && ver <= cur.v {
		cnt.StaleVersions++
		return
	}
	// A record the stages cannot evaluate is not a valid new version: it
	// is quarantined and the entity keeps its row.
	if reason, field, bad := nr.snd.Invalid(r); bad {
		nr.snd.QuarantineSource(it.Step, it.Meta, reason, field, "expression")
		return
	}
	o.changed[i] = true
	var id ID
	if it.HasID {
		id = ID{Text: p.ID(it), Hash: it.IDHash, Payload: it.Payload, Has: true}
	}
	if ok {
		cnt.Superseded++
		o.tail = appendChild(o.tail[:0], nil, 0)
		nr.snd.ToRoots(it.Step, o.tail, it.Now, &cur.row, &cur.meta, cur.ts, -1, &ID{}, false)
	} else {
		cur = &version{}
		o.state[i][string(o.key)] = cur
	}
	cur.v, cur.ts = ver, it.TS
	cur.row.CopyFrom(r)
	raw := cur.meta.Raw
	cur.meta = *it.Meta
	cur.meta.Raw = append(raw[:0], it.Meta.Raw...)
	tail := []byte(nil)
	if ok {
		o.tail = appendChild(o.tail[:0], nil, 1)
		tail = o.tail
	}
	nr.snd.ToRoots(it.Step, tail, it.Now, r, it.Meta, it.TS, 1, &id, true)
}

// change applies one record of a change stream (package source, "Change
// streams"): a version not newer than the key's is a duplicate (the same
// LSN: the change seen again) or stale, counted; a delete retracts the
// key's row and keeps its version; an insert or update takes the values
// it left unchanged (TOAST) from the key's previous row, passes the
// contract's rules and the stages' expressions, retracts the previous
// row and inserts its own.
func (o *orderNode) change(nr *nodeRT, it *Item) {
	r := it.Row
	o.key = OrderKey(o.key[:0], o.p, r)
	kg := keygroup.OfHash(xxhash.Sum64(o.key), o.g.KeyGroups)
	i := kg - o.rng.Lo
	ver := r.I[o.p.Version.Slot]
	cnt := nr.t.cnt
	cur, ok := o.state[i][string(o.key)]
	if ok && ver <= cur.v {
		if ver == cur.v {
			cnt.Duplicates++
		} else {
			cnt.StaleVersions++
		}
		return
	}
	ch := o.ch
	live := ok && !cur.dead
	if !r.IsNull(ch.Op.Index) && r.S[ch.Op.Slot] == record.OpDelete {
		cnt.Deletes++
		o.changed[i] = true
		if !ok {
			cur = &version{}
			o.state[i][string(o.key)] = cur
		}
		if live {
			cnt.Superseded++
			o.tail = appendChild(o.tail[:0], nil, 0)
			nr.snd.ToRoots(it.Step, o.tail, it.Now, &cur.row, &cur.meta, cur.ts, -1, &ID{}, false)
		}
		cur.v, cur.dead = ver, true
		cur.row, cur.meta = row.Row{}, record.Meta{}
		return
	}
	stable := true
	if !r.IsNull(ch.Unchanged.Index) && r.S[ch.Unchanged.Slot] != "" {
		mask := r.S[ch.Unchanged.Slot]
		sc := o.g.Plan.SourceSchema
		if !live {
			var names []string
			for _, f := range sc.Fields {
				if record.Unchanged(mask, f.Index) {
					names = append(names, f.Name)
				}
			}
			nr.snd.QuarantineSource(it.Step, it.Meta, "the update left "+strings.Join(names, ", ")+" unchanged (an unchanged TOAST value, which the change does not carry) and key "+string(o.key)+" has no earlier row to take it from; with REPLICA IDENTITY FULL the change carries it", names[0], "unchanged_value")
			return
		}
		w := o.scratch
		w.CopyShallow(r)
		for _, f := range sc.Fields {
			if record.Unchanged(mask, f.Index) {
				_ = w.Set(f, cur.row.Get(f))
			}
		}
		w.SetNull(ch.Unchanged.Index)
		r, stable = w, false
	}
	if rules := o.g.Plan.Rules; rules != nil {
		arrival := it.Now
		if pl := o.g.Plan; pl.HasIngest && !r.IsNull(pl.Ingest.Index) {
			arrival = r.I[pl.Ingest.Slot]
		}
		if rule, field, reason, ok := rules.Check(r, it.TS, arrival); !ok {
			nr.snd.QuarantineSource(it.Step, it.Meta, reason, field, rule)
			return
		}
	}
	if reason, field, bad := nr.snd.Invalid(r); bad {
		nr.snd.QuarantineSource(it.Step, it.Meta, reason, field, "expression")
		return
	}
	o.changed[i] = true
	if live {
		cnt.Superseded++
		o.tail = appendChild(o.tail[:0], nil, 0)
		nr.snd.ToRoots(it.Step, o.tail, it.Now, &cur.row, &cur.meta, cur.ts, -1, &ID{}, false)
	} else if !ok {
		cur = &version{}
		o.state[i][string(o.key)] = cur
	}
	cur.v, cur.ts, cur.dead = ver, it.TS, false
	cur.row.CopyFrom(r)
	// The source renders a meta without Raw from its position (its table
	// and LSN): the row itself is the state, kept once.
	cur.meta = *it.Meta
	cur.meta.Raw = nil
	tail := []byte(nil)
	if live {
		o.tail = appendChild(o.tail[:0], nil, 1)
		tail = o.tail
	}
	nr.snd.ToRoots(it.Step, tail, it.Now, r, it.Meta, it.TS, 1, &ID{}, stable)
}

// expire forgets entities whose latest version's event time + TTL the
// watermark has passed (every TTL/4 of watermark progress).
func (o *orderNode) expire(wm int64) {
	if o.p.TTL <= 0 || wm < o.nextSweep || wm == changelog.WatermarkInfinity {
		return
	}
	o.nextSweep = wm + max(o.p.TTL/4, 1)
	for i, m := range o.state {
		for k, v := range m { // deletion only: order does not matter
			if v.ts+o.p.TTL < wm {
				delete(m, k)
				o.changed[i] = true
			}
		}
	}
}

// Order key-group section: Byte(1) Uint(#entities), per entity sorted by
// key: String(key) Int(version) Int(event time), the row's source fields
// (Value each), and the meta: Int(partition) Int(arrival) String(source)
// String(partition name) Int(line) Int(offset) Bytes8(raw) Bool(redelivery).
// A change stream's section is Byte(2): after the event time a Bool(dead),
// and a dead entity (a deleted key) has no fields or meta.

func (o *orderNode) snapshot(i int, e *state.Encoder) {
	s := o.g.Plan.SourceSchema
	m := o.state[i]
	keys := slices.Sorted(maps.Keys(m))
	if o.ch != nil {
		e.Byte(2)
	} else {
		e.Byte(1)
	}
	e.Uint(uint64(len(keys)))
	for _, k := range keys {
		v := m[k]
		e.String(k)
		e.Int(v.v)
		e.Int(v.ts)
		if o.ch != nil {
			e.Bool(v.dead)
			if v.dead {
				continue
			}
		}
		for _, f := range s.Fields {
			e.Value(v.row.Get(f))
		}
		mt := &v.meta
		e.Int(int64(mt.Partition))
		e.Int(mt.Arrival)
		e.String(mt.Pos.Source)
		e.String(mt.Pos.Partition)
		e.Int(mt.Pos.Line)
		e.Int(mt.Pos.Offset)
		e.Bytes8(mt.Raw)
		e.Bool(mt.Redelivery)
	}
}

func (o *orderNode) restore(i int, d *state.Decoder) error {
	s := o.g.Plan.SourceSchema
	sv := d.Section("order_by key group", 1, 2)
	n := d.Len(1<<31-1, 4)
	m := make(map[string]*version, n)
	for range n {
		if d.Err() != nil {
			break
		}
		k := d.String()
		if kg := keygroup.OfHash(xxhash.Sum64String(k), o.g.KeyGroups); d.Err() == nil && kg != o.rng.Lo+i {
			d.Fail("entity %q belongs to key group %d, not %d", k, kg, o.rng.Lo+i)
			break
		}
		v := &version{v: d.Int(), ts: d.Int()}
		if sv == 2 {
			v.dead = d.Bool()
		}
		if v.dead {
			m[k] = v
			continue
		}
		v.row = *s.NewRow()
		for _, f := range s.Fields {
			val := d.Value()
			if d.Err() != nil {
				break
			}
			if err := v.row.Set(f, val); err != nil {
				d.Fail("entity %q field %s: %v", k, f.Name, err)
				break
			}
		}
		mt := &v.meta
		mt.Partition = int(d.Int())
		mt.Arrival = d.Int()
		mt.Pos.Source = d.String()
		mt.Pos.Partition = d.String()
		mt.Pos.Line = d.Int()
		mt.Pos.Offset = d.Int()
		mt.Raw = append([]byte(nil), d.Bytes8()...)
		mt.Redelivery = d.Bool()
		m[k] = v
	}
	if d.Err() != nil {
		return d.Err()
	}
	o.state[i] = m
	return nil
}
