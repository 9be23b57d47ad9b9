package task

import (
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// Items on the wire. In a run of a group of instances (docs/scale-out.md)
// an item whose key group another task owns travels as the value of one
// record of the pipeline's repartition topic, in the partition of that
// task. Its encoding (package state):
//
//	Byte(1) Uint(node) Int(now ms) Int(event time ms) Int(weight) Byte(flags)
//	flags&1  id:   Bytes8(text) Fixed64(hash) Fixed32(payload hash)
//	flags&2  row:  a Value per field of the node's input schema (the
//	               source's for dedup and order_by, the stage's whole
//	               schema, derived fields included, for a stage)
//	flags&4  meta: Uint(partition index) Int(arrival ms) String(source)
//	               String(partition) Int(line) Int(offset) Bytes8(raw)
//	               Bool(redelivery)
//	flags&8  cr:   an upstream stage's row: Byte(op) Int(window start)
//	               Int(window end) Uint(#key) Value… Uint(#values) Value…
//	               Uint(version) Bool(is_final) Int(watermark_at)
//	               Int(updated_at)
//
// A stage's input made from an upstream row carries the row (cr) alone:
// the receiver makes the input row from it (within a process the input
// row travels made instead: Sender.toStage). Steps
// and order tails do not travel: the receiving task numbers items in the
// order it reads them.

// WireItem is the first byte of an item record.
const WireItem = 1

const (
	wireID = 1 << iota
	wireRow
	wireMeta
	wireCR
)

// inputSchema is the row layout of node n's items.
func (g *Graph) inputSchema(n int) *row.Schema {
	if si := g.Nodes[n].Stage; si >= 0 {
		return g.Plan.Stages[si].Schema
	}
	return g.Plan.SourceSchema
}

// WireEncoder encodes items for the repartition topic. Not safe for
// concurrent use; the zero value is ready.
type WireEncoder struct {
	e  state.Encoder
	cr crScratch
}

// Encode returns the wire form of item it (of packet p) for node n of
// graph g, valid until the next call.
func (w *WireEncoder) Encode(g *Graph, n int, p *Packet, it *Item) []byte {
	if it.crLen > 0 && it.CR == nil {
		// An upstream row encoded in a packet (Packet.putCR): the packet
		// wrote it, so it decodes. Decoded into a copy of the item, so
		// that the packet's item never points at this encoder's scratch
		// (encoding it again, after another item, would read that one's
		// values).
		c := *it
		_ = w.cr.takeCR(p, &c)
		it = &c
	}
	e := &w.e
	e.Reset()
	e.Byte(WireItem)
	e.Uint(uint64(n))
	e.Int(it.Now)
	e.Int(it.TS)
	e.Int(int64(it.Weight))
	var flags byte
	if it.HasID {
		flags |= wireID
	}
	if it.Row != nil && it.CR == nil {
		flags |= wireRow
	}
	if it.Meta != nil {
		flags |= wireMeta
	}
	if it.CR != nil {
		flags |= wireCR
	}
	e.Byte(flags)
	if flags&wireID != 0 {
		e.Bytes8(p.ID(it))
		e.Fixed64(it.IDHash)
		e.Fixed32(it.Payload)
	}
	if flags&wireRow != 0 {
		for _, f := range g.inputSchema(n).Fields {
			e.Value(it.Row.Get(f))
		}
	}
	if m := it.Meta; flags&wireMeta != 0 {
		e.Uint(uint64(m.Partition))
		e.Int(m.Arrival)
		e.String(m.Pos.Source)
		e.String(m.Pos.Partition)
		e.Int(m.Pos.Line)
		e.Int(m.Pos.Offset)
		e.Bytes8(m.Raw)
		e.Bool(m.Redelivery)
	}
	if flags&wireCR != 0 {
		encodeCR(e, it.CR)
	}
	return e.Bytes()
}

// WireDecoder decodes items from the repartition topic into packets. Not
// safe for concurrent use; make one with NewWireDecoder.
type WireDecoder struct {
	g       *Graph
	scratch []*row.Row // per node
	vals    []row.Value
}

// NewWireDecoder returns a decoder for graph g's items.
func NewWireDecoder(g *Graph) *WireDecoder {
	d := &WireDecoder{g: g, scratch: make([]*row.Row, len(g.Nodes))}
	for n := range g.Nodes {
		d.scratch[n] = g.inputSchema(n).NewRow()
	}
	return d
}

// Decode reads the item b holds into packet p, which owns the item's
// memory (its row, meta, upstream row and id) until p is Reset, with
// step step, and returns its node. Errors name the byte offset and what
// is wrong: a damaged record, a node the graph does not have, a value
// that does not fit its field, an upstream row of another shape than its
// stage's.
func (d *WireDecoder) Decode(p *Packet, b []byte, step uint64) (int, *Item, error) {
	g := d.g
	dec := state.NewDecoder(b)
	if v := dec.Byte(); dec.Err() == nil && v != WireItem {
		return 0, nil, fmt.Errorf("repartition record: kind %d is not an item", v)
	}
	n := dec.Len(len(g.Nodes)-1, 0)
	now, ts, weight := dec.Int(), dec.Int(), dec.Int()
	flags := dec.Byte()
	if err := dec.Err(); err != nil {
		return 0, nil, fmt.Errorf("repartition record: %w", err)
	}
	if weight != 1 && weight != -1 {
		return 0, nil, fmt.Errorf("repartition record: weight %d", weight)
	}
	it := p.add(step, nil)
	it.Now, it.TS, it.Weight = now, ts, int8(weight)
	if flags&wireID != 0 {
		id := dec.Bytes8()
		hash, payload := dec.Fixed64(), dec.Fixed32()
		p.setID(it, id, hash, payload)
	}
	if flags&wireRow != 0 {
		sc := g.inputSchema(n)
		r := d.scratch[n]
		sc.Shape(r)
		for _, f := range sc.Fields {
			v := dec.Value()
			if dec.Err() != nil {
				break
			}
			if err := r.Set(f, v); err != nil {
				return 0, nil, fmt.Errorf("repartition record: node %d: %w", n, err)
			}
		}
		it.Row = p.copyRow(r)
	}
	if flags&wireMeta != 0 {
		m := record.Meta{Partition: dec.Len(1<<30, 0), Arrival: dec.Int()}
		m.Pos = changelog.Position{Source: dec.String(), Partition: dec.String(), Line: dec.Int(), Offset: dec.Int()}
		m.Raw = dec.Bytes8()
		m.Redelivery = dec.Bool()
		if len(m.Raw) == 0 {
			m.Raw = nil
		}
		it.Meta = p.copyMeta(&m)
	}
	if flags&wireCR != 0 {
		si := g.Nodes[n].Stage
		if si < 0 || g.Plan.Stages[si].Input < 0 {
			return 0, nil, fmt.Errorf("repartition record: an upstream row for node %d, which reads no stage", n)
		}
		up := &g.Plan.Stages[g.Plan.Stages[si].Input].Desc
		var cr changelog.Row
		var nk, nv int
		d.vals, nk, nv = decodeCR(dec, &cr, d.vals[:0], len(up.Key), len(up.Values))
		if err := dec.Err(); err != nil {
			return 0, nil, fmt.Errorf("repartition record: %w", err)
		}
		if nk != len(up.Key) || nv != len(up.Values) || cr.Op > changelog.Delete {
			return 0, nil, fmt.Errorf("repartition record: an upstream row of stage %s with %d keys and %d values (op %d); the stage has %d and %d", up.Stage, nk, nv, cr.Op, len(up.Key), len(up.Values))
		}
		cr.Key, cr.Values = d.vals[:nk], d.vals[nk:]
		it.CR = p.copyCR(&cr)
	}
	if err := dec.Err(); err != nil {
		return 0, nil, fmt.Errorf("repartition record: %w", err)
	}
	if dec.Remaining() != 0 {
		return 0, nil, fmt.Errorf("repartition record: %d bytes after the item", dec.Remaining())
	}
	if flags&(wireRow|wireCR) == 0 {
		return 0, nil, fmt.Errorf("repartition record: an item without a row")
	}
	return n, it, nil
}
