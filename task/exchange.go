package task

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// Item is one input of a node: a source record (or, from order_by, the
// retraction of an entity's previous version), or a result row of an
// upstream stage.
type Item struct {
	// Step is the runner's step at which the item arose; tail (in the
	// packet's arena) orders the items of one step (package doc).
	Step    uint64
	tailOff uint32
	tailLen uint32
	// Now is the processing time (ms) of the step.
	Now int64
	// TS is the event time (ms): the record's, or (stage inputs read from
	// a changelog) the upstream row's event-time field plus the stage's
	// shift.
	TS int64
	// Row is the record: for a stage node, with the stage's derived fields
	// computed. It is the source batch's row (read only) or the packet's
	// copy; for a stage's input made from an upstream row, the input row
	// as the sender made it (Sender.toStage).
	Row *row.Row
	// Meta is the source record's meta (batch-owned or the packet's copy);
	// nil for an upstream stage's row.
	Meta *record.Meta
	// CR is the upstream stage's row (the packet's copy), for side outputs;
	// nil for a source record, and for an upstream row when the pipeline
	// has no sink that would read it (no quarantine sink, no late sink of
	// the stage: Sender.toStage). An upstream row without strings travels
	// encoded instead (crOff, crLen in the packet's arena: Packet.putCR)
	// and CR is set, to the receiving node's copy, when a side output
	// needs it (stageNode.origin).
	CR           *changelog.Row
	crOff, crLen uint32
	// ID is the record's event id text (dedup.key; the packet's arena) and
	// IDHash its hash; Payload is its payload hash (from the dedup node).
	idOff, idLen uint32
	IDHash       uint64
	Payload      uint32
	// Weight is +1, or −1 for a retraction.
	Weight int8
	// HasID is true when the item carries an event id.
	HasID bool
	// Side is the join side (0 left, 1 right) of an item for a join node.
	Side int8
}

// Packet carries the items of one round for one node of one task, from one
// sender, in (step, tail) order, with the memory they own: copies of rows,
// metas and upstream rows, and a byte arena (tails, ids, strings and raw
// bytes of copies). Packets are reused: Reset keeps the capacity.
type Packet struct {
	items chunks[Item] // fixed-size chunks: a packet of millions of items grows without copying
	rows  chunks[row.Row]
	slots row.Arena // the copied rows' slots
	metas chunks[record.Meta]
	crs   chunks[changelog.Row]
	vals  valChunks // the copied upstream rows' keys and values
	arena []byte    // grows by append: offsets and earlier slices stay valid
	// slotN is the bytes of the copied rows' slots (Row.SlotBytes of each,
	// counted as they are copied: Bytes is O(1)).
	slotN int
}

// Reset empties the packet for reuse.
func (p *Packet) Reset() {
	p.items.clearUsed()
	p.items.reset()
	p.rows.reset()
	p.slots.Reset()
	p.metas.reset()
	p.crs.reset()
	p.vals.reset()
	p.arena = p.arena[:0]
	p.slotN = 0
}

// Tail returns item i's order tail.
func (p *Packet) Tail(it *Item) []byte { return p.arena[it.tailOff : it.tailOff+it.tailLen] }

// ID returns the item's event id text.
func (p *Packet) ID(it *Item) []byte { return p.arena[it.idOff : it.idOff+it.idLen] }

// bytes appends b to the arena and returns its offset. The arena only
// grows within a round: offsets stay valid.
func (p *Packet) bytes(b []byte) uint32 {
	off := len(p.arena)
	p.arena = append(p.arena, b...)
	return uint32(off)
}

// add appends an item with the given tail (copied) and returns it.
func (p *Packet) add(step uint64, tail []byte) *Item {
	it := p.items.next()
	*it = Item{Step: step}
	if len(tail) > 0 {
		it.tailOff = p.bytes(tail)
		it.tailLen = uint32(len(tail))
	}
	return it
}

// setID stores the item's event id.
func (p *Packet) setID(it *Item, id []byte, hash uint64, payload uint32) {
	it.idOff = p.bytes(id)
	it.idLen = uint32(len(id))
	it.IDHash, it.Payload, it.HasID = hash, payload, true
}

// copyRow returns a copy of r owned by the packet: its slots copied, its
// strings shared (strings are immutable and outlive the round: they point
// into the source batch, a key table, or a string an expression made).
func (p *Packet) copyRow(r *row.Row) *row.Row {
	c := p.rows.next()
	p.slots.Copy(c, r)
	p.slotN += c.SlotBytes()
	return c
}

// copyMeta returns a deep copy of m owned by the packet (Raw in the arena).
func (p *Packet) copyMeta(m *record.Meta) *record.Meta {
	c := p.metas.next()
	*c = *m
	if m.Raw != nil {
		off := p.bytes(m.Raw)
		c.Raw = p.arena[off : off+uint32(len(m.Raw)) : off+uint32(len(m.Raw))]
	}
	return c
}

// copyCR returns a copy of an upstream result row owned by the packet
// (its key and values copied; their strings shared).
func (p *Packet) copyCR(r *changelog.Row) *changelog.Row {
	c := p.crs.next()
	*c = *r
	nk := len(r.Key)
	v := p.vals.take(nk + len(r.Values))
	copy(v, r.Key)
	copy(v[nk:], r.Values)
	c.Key = v[:nk:nk]
	c.Values = v[nk:]
	return c
}

// putCR stores upstream row r in the arena, encoded with e (state's
// encoding: about 40 bytes for a row of one int key and one count, where
// a copy takes its 104-byte struct and 64 bytes per value), and reports
// whether it did: a row holding a string is copied instead (copyCR), as
// decoding makes a string anew. It travels beside the stage's input row
// made from it, for a side output only (the receiver decodes it when
// the input is quarantined or too late: stageNode.origin).
func (p *Packet) putCR(it *Item, r *changelog.Row, e *state.Encoder) bool {
	for _, v := range r.Key {
		if v.Kind == row.KindString && !v.IsNull() {
			return false
		}
	}
	for _, v := range r.Values {
		if v.Kind == row.KindString && !v.IsNull() {
			return false
		}
	}
	e.Reset()
	encodeCR(e, r)
	b := e.Bytes()
	it.crOff, it.crLen = p.bytes(b), uint32(len(b))
	return true
}

// encodeCR appends upstream row r to e: op, window bounds, the key's and
// the values' counts and values, version, finality, watermark and update
// time (the layout decodeCR reads; packets and repartition records share
// it).
func encodeCR(e *state.Encoder, r *changelog.Row) {
	e.Byte(byte(r.Op))
	e.Int(r.WindowStart)
	e.Int(r.WindowEnd)
	e.Uint(uint64(len(r.Key)))
	for _, v := range r.Key {
		e.Value(v)
	}
	e.Uint(uint64(len(r.Values)))
	for _, v := range r.Values {
		e.Value(v)
	}
	e.Uint(r.Version)
	e.Bool(r.IsFinal)
	e.Int(r.WatermarkAt)
	e.Int(r.UpdatedAt)
}

// decodeCR reads an upstream row written by encodeCR into cr, appending
// its key's and values' values to vals (at most maxKeys and maxValues of
// each, as d.Len bounds them), and returns vals and the two counts;
// cr.Key and cr.Values are left for the caller to point into vals. A
// damaged encoding leaves its error in d (d.Err).
func decodeCR(d *state.Decoder, cr *changelog.Row, vals []row.Value, maxKeys, maxValues int) ([]row.Value, int, int) {
	*cr = changelog.Row{Op: changelog.Op(d.Byte()), WindowStart: d.Int(), WindowEnd: d.Int()}
	nk := d.Len(maxKeys, 1)
	for range nk {
		vals = append(vals, d.Value())
	}
	nv := d.Len(maxValues, 1)
	for range nv {
		vals = append(vals, d.Value())
	}
	cr.Version, cr.IsFinal, cr.WatermarkAt, cr.UpdatedAt = d.Uint(), d.Bool(), d.Int(), d.Int()
	return vals, nk, nv
}

// crScratch is a node's decoded upstream row: the item's CR while the
// node takes it (valid until its next item).
type crScratch struct {
	cr   changelog.Row
	vals []row.Value
}

// takeCR decodes item it's encoded upstream row (putCR) into sc and
// points it.CR at it. Errors: damaged bytes (never for a packet this
// process wrote).
func (sc *crScratch) takeCR(p *Packet, it *Item) error {
	d := state.NewDecoder(p.arena[it.crOff : it.crOff+it.crLen])
	clear(sc.vals)
	var cr changelog.Row
	var nk, nv int
	sc.vals, nk, nv = decodeCR(d, &cr, sc.vals[:0], int(it.crLen), int(it.crLen))
	if err := d.Err(); err != nil {
		return fmt.Errorf("upstream row in a packet: %w", err)
	}
	if d.Remaining() != 0 || len(sc.vals) != nk+nv {
		return fmt.Errorf("upstream row in a packet: %d bytes after it", d.Remaining())
	}
	cr.Key = sc.vals[:nk:nk]
	cr.Values = sc.vals[nk : nk+nv : nk+nv]
	sc.cr = cr
	it.CR = &sc.cr
	return nil
}

// valChunkSize is the number of values in one chunk of a valChunks
// (64 bytes each: 256 KiB).
const valChunkSize = 4096

// valChunks holds values in fixed-size chunks reused after reset: a packet
// carrying the rows of a large firing (hundreds of thousands of upstream
// rows) holds about the values it needs, where one array growing by
// doubling held up to twice as much (the copies handed out keep every
// earlier array alive until the packet is reset).
type valChunks struct {
	c   [][]row.Value
	cur int // the chunk being filled
	n   int // values used in c[cur]
}

// take returns n consecutive values owned by the chunks, capacity n, for
// the caller to overwrite (zero values after a reset).
func (v *valChunks) take(n int) []row.Value {
	if n > valChunkSize {
		// Wider than a chunk (never for the rows of a stage): its own array.
		return make([]row.Value, n)
	}
	if len(v.c) == 0 || v.n+n > valChunkSize {
		if len(v.c) > 0 {
			v.cur++
		}
		if v.cur == len(v.c) {
			v.c = append(v.c, make([]row.Value, valChunkSize))
		}
		v.n = 0
	}
	s := v.c[v.cur][v.n : v.n+n : v.n+n]
	v.n += n
	return s
}

// used returns the number of values handed out since the last reset
// (values of a wider-than-a-chunk take, never made for a stage's rows,
// not counted).
func (v *valChunks) used() int {
	if len(v.c) == 0 {
		return 0
	}
	return v.cur*valChunkSize + v.n
}

// reset empties the chunks, keeping them, after zeroing the values used
// (dropping their strings).
func (v *valChunks) reset() {
	for i := 0; i < len(v.c) && i <= v.cur; i++ {
		clear(v.c[i])
	}
	v.cur, v.n = 0, 0
}

// chunks is a pool of T handed out by pointer: stable addresses (fixed-size
// chunks, never reallocated), reused after reset.
type chunks[T any] struct {
	c [][]T
	n int
}

const chunkSize = 1024

func (c *chunks[T]) next() *T {
	i, j := c.n/chunkSize, c.n%chunkSize
	if i == len(c.c) {
		c.c = append(c.c, make([]T, chunkSize))
	}
	c.n++
	return &c.c[i][j]
}

func (c *chunks[T]) reset() { c.n = 0 }

// clearUsed zeroes the elements handed out (dropping their pointers).
func (c *chunks[T]) clearUsed() {
	for i := 0; i < c.n; i += chunkSize {
		clear(c.c[i/chunkSize][:min(chunkSize, c.n-i)])
	}
}

// Bytes returns the bytes the packet's contents take: its items, the
// copies of rows, metas and upstream rows, their slots and values, and its
// arena (tails, ids, raw bytes, encoded upstream rows). Strings shared
// with the source batch or a key table count by their headers only, and
// the capacity a reused packet keeps from earlier rounds is not counted:
// this is the memory the packet's items need (the exchange's figure and
// bound: engine.Summary.ExchangePeakBytes, the pipeline's exchange_memory).
// O(1): a sender asks after every few items.
func (p *Packet) Bytes() int {
	return p.items.n*int(unsafe.Sizeof(Item{})) +
		p.rows.n*int(unsafe.Sizeof(row.Row{})) + p.slotN +
		p.metas.n*int(unsafe.Sizeof(record.Meta{})) +
		p.crs.n*int(unsafe.Sizeof(changelog.Row{})) + p.vals.used()*int(unsafe.Sizeof(row.Value{})) +
		len(p.arena)
}

// Len returns the number of items in the packet.
func (p *Packet) Len() int { return p.items.n }

// At returns item i.
func (p *Packet) At(i int) *Item { return &p.items.c[i/chunkSize][i%chunkSize] }

// orderLess reports whether item a of packet pa comes before item b of
// packet pb: by step, then by tail.
func orderLess(pa *Packet, a *Item, pb *Packet, b *Item) bool {
	if a.Step != b.Step {
		return a.Step < b.Step
	}
	return bytes.Compare(pa.Tail(a), pb.Tail(b)) < 0
}

// Bound is a position in a round's order, (step, tail): a sender's
// promise that every item it still sends in the round is at or after it
// (Inputs.Next), or the least position a node may still take (Inputs.Wait).
// The zero Bound (Valid false) is before every item: nothing promised.
type Bound struct {
	Step  uint64
	Tail  []byte
	Valid bool
}

// Set makes b the position (step, tail), copying tail into b's own bytes.
func (b *Bound) Set(step uint64, tail []byte) {
	b.Step, b.Tail, b.Valid = step, append(b.Tail[:0], tail...), true
}

// SetItem makes b the position of item it of packet p.
func (b *Bound) SetItem(p *Packet, it *Item) { b.Set(it.Step, p.Tail(it)) }

// Less reports whether b comes before c (an invalid Bound before every
// valid one).
func (b *Bound) Less(c *Bound) bool {
	if !b.Valid || !c.Valid {
		return !b.Valid && c.Valid
	}
	return b.Step < c.Step || b.Step == c.Step && bytes.Compare(b.Tail, c.Tail) < 0
}

// itemBefore reports whether item it of packet p comes before bound b,
// which is stream k's while it is stream a's: by (step, tail), and at the
// same position the lower stream first (Process's order of senders).
func itemBefore(p *Packet, it *Item, a int, b *Bound, k int) bool {
	if !b.Valid {
		return false
	}
	if it.Step != b.Step {
		return it.Step < b.Step
	}
	c := bytes.Compare(p.Tail(it), b.Tail)
	return c < 0 || c == 0 && a < k
}

// Tail encodings (package doc). A source record's item has an empty tail;
// an item made while processing item x as its j-th output has x's tail
// and j (4 bytes, big endian); a row of a firing of the stage at depth d
// has d, its EmitOrder (A and B as big-endian int64 with the sign bit
// flipped, C as big-endian uint64) and its index in the firing's rows
// (4 bytes).

func appendChild(dst, parent []byte, j int) []byte {
	dst = append(dst, parent...)
	return binary.BigEndian.AppendUint32(dst, uint32(j))
}

func appendFiring(dst []byte, depth uint8, a, b int64, c uint64, idx int) []byte {
	dst = append(dst, depth)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a)^1<<63)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b)^1<<63)
	dst = binary.BigEndian.AppendUint64(dst, c)
	return binary.BigEndian.AppendUint32(dst, uint32(idx))
}
