package file

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"unsafe"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// pcgStream is the second PCG seed word; the first is replay.seed.
const pcgStream = 0x7469_6465_6d61_726b // "tidemark"

// replayer delivers the records of a source in a simulated transport's
// order. See the package documentation, "Replay".
type replayer struct {
	rng         *rand.Rand
	delay       int64 // ms
	maxDelay    int64 // ms
	straggler   float64
	redeliver   float64
	parts       int
	names       []string
	by          row.Field
	hasBy       bool
	schema      *row.Schema
	d           *derive
	text        []byte // scratch
	seq         int64  // records read so far
	horizon     int64  // largest event time read so far (ms)
	known       bool   // horizon is set
	inputDone   bool
	heap        []*entry
	pending     []*entry // records read before the first event time
	free        []*entry
	delivered   []*entry // in the caller's batch until the next call
	scratch     row.Row
	scratchMeta source.Meta
}

// entry is one delivery held by the replayer. Its row and raw bytes are
// its own (copied out of decoder buffers); strs holds the bytes of the
// row's strings. An entry is reused once its delivery has left the
// caller's batch, so a held record costs no allocation in steady state.
type entry struct {
	arrival    int64
	seq        int64
	redelivery bool
	row        row.Row
	meta       source.Meta
	raw        []byte
	strs       []byte
}

func newReplayer(c *spec.Replay, d *derive, schema *row.Schema) (*replayer, error) {
	if !d.hasET {
		return nil, errors.New("source.replay: needs the event-time field")
	}
	if d.hasPart {
		return nil, errors.New("source.replay: replay assigns partitions itself; use replay.partition_by instead of partition_field")
	}
	if d.hasArr {
		return nil, errors.New("source.replay: replay records its own arrival times; drop arrival_time_field")
	}
	rp := &replayer{
		rng:       rand.New(rand.NewPCG(uint64(c.Seed), pcgStream)),
		delay:     c.Delay.Ms(),
		maxDelay:  c.MaxDelay.Ms(),
		straggler: c.StragglerFraction,
		redeliver: c.RedeliverFraction,
		parts:     c.Partitions,
		schema:    schema,
		d:         d,
	}
	if rp.maxDelay == 0 {
		rp.maxDelay = rp.delay
	}
	if rp.parts == 0 {
		rp.parts = 1
	}
	switch {
	case rp.delay < 0 || rp.maxDelay < 0:
		return nil, errors.New("source.replay: delays must not be negative")
	case rp.maxDelay < rp.delay:
		return nil, fmt.Errorf("source.replay.max_delay: %s is less than delay %s", c.MaxDelay, c.Delay)
	case !(rp.straggler >= 0 && rp.straggler <= 1):
		return nil, errors.New("source.replay.straggler_fraction: must be between 0 and 1")
	case !(rp.redeliver >= 0 && rp.redeliver <= 1):
		return nil, errors.New("source.replay.redeliver_fraction: must be between 0 and 1")
	case rp.parts < 1 || rp.parts > 4096:
		return nil, errors.New("source.replay.partitions: must be between 1 and 4096")
	}
	for i := range rp.parts {
		rp.names = append(rp.names, "p"+strconv.Itoa(i))
	}
	if n := c.PartitionBy; n != "" {
		f, ok := schema.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("source.replay.partition_by: field %q is not in the source schema", n)
		}
		rp.by, rp.hasBy = f, true
	}
	return rp, nil
}

// next fills b with up to max deliveries in (arrival, sequence) order:
// it reads records until the earliest held delivery is due (its arrival
// is at most the horizon), and drains what is held at the end of input.
func (rp *replayer) next(s *Source, b *source.Batch, max int) error {
	rp.free = append(rp.free, rp.delivered...)
	clear(rp.delivered)
	rp.delivered = rp.delivered[:0]
	start := b.Len()
	for b.Len()-start < max {
		if len(rp.heap) > 0 && (rp.inputDone || rp.heap[0].arrival <= rp.horizon) {
			rp.deliver(b)
			continue
		}
		if rp.inputDone {
			return io.EOF
		}
		s.resetBuffers()
		rp.schema.Shape(&rp.scratch)
		rp.scratchMeta = source.Meta{Arrival: source.NoArrival}
		err := s.read(&rp.scratch, &rp.scratchMeta)
		if err == io.EOF {
			rp.inputDone = true
			rp.releasePending(0)
			continue
		}
		if err != nil {
			return err
		}
		rp.add(&rp.scratch, &rp.scratchMeta)
	}
	if rp.inputDone && len(rp.heap) == 0 {
		return io.EOF
	}
	return nil
}

// add takes one record just read: it draws the record's delays, assigns
// its partition and arrival, and holds it (and a redelivered copy).
func (rp *replayer) add(r *row.Row, m *source.Meta) {
	seq := rp.seq
	rp.seq++
	// Exactly four draws per record, used or not, so that one record's
	// validity never shifts another record's delays.
	straggle := rp.rng.Float64() < rp.straggler
	bound := rp.delay
	if straggle {
		bound = rp.maxDelay
	}
	d := rp.rng.Int64N(bound + 1)
	again := rp.rng.Float64() < rp.redeliver
	extra := rp.rng.Int64N(rp.maxDelay + 1)

	valid := rp.d.valid(r, m)
	if valid {
		if et := r.I[rp.d.et.Slot]; !rp.known || et > rp.horizon {
			rp.horizon, rp.known = et, true
			rp.releasePending(rp.horizon)
		}
	}
	p := rp.partition(r, m, seq)
	e := rp.hold(r, m, seq, p)
	switch {
	case valid:
		e.arrival = addSat(r.I[rp.d.et.Slot], d)
	case rp.known:
		e.arrival = rp.horizon
	default:
		rp.pending = append(rp.pending, e)
		return
	}
	rp.push(e)
	if valid && again {
		c := rp.hold(r, m, seq, p)
		c.arrival = addSat(e.arrival, extra)
		c.redelivery = true
		c.meta.Redelivery = true
		rp.push(c)
	}
}

// partition picks the record's partition: FNV-1a of the partition_by
// field's text modulo the partition count, or the record's sequence
// number modulo the partition count without partition_by or when the
// field is null (like a log's producer spreading records without a key).
func (rp *replayer) partition(r *row.Row, m *source.Meta, seq int64) int {
	if rp.hasBy && !r.IsNull(rp.by.Index) {
		rp.text = appendText(rp.text[:0], r, rp.by)
		return int(fnv1a(rp.text) % uint32(rp.parts))
	}
	return int(seq % int64(rp.parts))
}

// hold returns a free entry holding a copy of the record.
func (rp *replayer) hold(r *row.Row, m *source.Meta, seq int64, p int) *entry {
	var e *entry
	if n := len(rp.free); n > 0 {
		e = rp.free[n-1]
		rp.free[n-1] = nil
		rp.free = rp.free[:n-1]
	} else {
		e = &entry{}
	}
	e.seq, e.redelivery = seq, false
	rp.own(e, r)
	e.raw = append(e.raw[:0], m.Raw...)
	e.meta = *m
	e.meta.Raw = e.raw
	e.meta.Partition = p
	e.meta.Pos.Partition = rp.names[p]
	return e
}

// own makes e.row a deep copy of r whose strings point into e.strs. It
// does what row.Row.CopyFrom does without allocating a string per field.
func (rp *replayer) own(e *entry, r *row.Row) {
	sc := rp.schema
	sc.Shape(&e.row)
	n := 0
	for _, f := range sc.Fields {
		if f.Kind == row.KindString && !r.IsNull(f.Index) {
			n += len(r.S[f.Slot])
		}
	}
	if cap(e.strs) < n {
		e.strs = make([]byte, 0, n)
	}
	buf := e.strs[:0]
	for _, f := range sc.Fields {
		if r.IsNull(f.Index) {
			continue
		}
		switch f.Kind {
		case row.KindString:
			v := r.S[f.Slot]
			if v != "" {
				start := len(buf)
				buf = append(buf, v...)
				v = unsafe.String(&buf[start], len(v))
			}
			e.row.S[f.Slot] = v
		case row.KindDecimal:
			e.row.D[f.Slot] = r.D[f.Slot]
		default:
			e.row.I[f.Slot] = r.I[f.Slot]
		}
		e.row.SetValid(f.Index)
	}
	e.strs = buf
}

// releasePending schedules the records read before the first event time
// at arrival (the first horizon, or 0 at the end of an input without a
// single valid event time).
func (rp *replayer) releasePending(arrival int64) {
	for i, e := range rp.pending {
		e.arrival = arrival
		rp.push(e)
		rp.pending[i] = nil
	}
	rp.pending = rp.pending[:0]
}

// deliver moves the earliest held delivery into b. The batch row takes
// over the entry's memory; the entry keeps the batch row's old slices and
// is reused only after the caller's next call.
func (rp *replayer) deliver(b *source.Batch) {
	e := rp.pop()
	r, m := b.Next(rp.schema)
	*r, e.row = e.row, *r
	e.meta.Arrival = e.arrival
	*m = e.meta
	rp.delivered = append(rp.delivered, e)
}

// addSat returns a+b (b ≥ 0), saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
