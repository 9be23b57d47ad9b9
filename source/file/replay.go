package file

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"unsafe"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/perturb"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// replayer delivers the records of a source in a simulated transport's
// order. See the package documentation, "Replay". The transport model
// (delays, stragglers, copies, partitions) and the order of deliveries
// are package perturb's Scheduler and Queue; the replayer holds typed
// rows in the queue and writes conflicting copies.
type replayer struct {
	sch         *perturb.Scheduler
	q           perturb.Queue[*entry]
	names       []string
	by          row.Field
	hasBy       bool
	cf          row.Field // conflict_field
	hasCF       bool
	change      perturb.Change // how a conflicting copy changes a JSON value
	schema      *row.Schema
	strs        []row.Field // the string fields of schema
	d           *derive
	text        []byte // scratch: the partition key
	inputDone   bool
	free        []*entry
	scratch     row.Row
	scratchMeta source.Meta
	arena       source.Arena // strings and raw bytes of scratch and crow, until the next read

	// scratch of conflicting copies
	crow  row.Row
	cmeta source.Meta
	craw  []byte
	cbuf  bytes.Buffer
	ctext []byte
}

// entry is one delivery held by the replayer. Its row and raw bytes are
// its own (copied out of decoder buffers); strs holds the bytes of the
// row's strings. Delivering an entry copies it into the caller's batch,
// and the entry is reused at once, so a held record costs no allocation
// in steady state.
type entry struct {
	row  row.Row
	meta source.Meta
	raw  []byte
	strs []byte
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
	sch, err := perturb.NewScheduler(perturb.Options{
		Seed:              c.Seed,
		Delay:             c.Delay.D(),
		MaxDelay:          c.MaxDelay.D(),
		StragglerFraction: c.StragglerFraction,
		RedeliverFraction: c.RedeliverFraction,
		ConflictFraction:  c.ConflictFraction,
		ConflictField:     c.ConflictField,
		Partitions:        c.Partitions,
	})
	if err != nil {
		return nil, replayOptionError(err)
	}
	rp := &replayer{sch: sch, names: sch.PartitionNames(), schema: schema, d: d}
	for _, f := range schema.Fields {
		if f.Kind == row.KindString {
			rp.strs = append(rp.strs, f)
		}
	}
	if n := c.PartitionBy; n != "" {
		f, ok := schema.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("source.replay.partition_by: field %q is not in the source schema", n)
		}
		rp.by, rp.hasBy = f, true
	}
	if n := c.ConflictField; n != "" && c.ConflictFraction > 0 {
		f, err := lookupField(schema, "source.replay.conflict_field", n)
		if err != nil {
			return nil, err
		}
		switch {
		case d.hasOrd && f.Index == d.ord.Index:
			return nil, fmt.Errorf("source.replay.conflict_field: %q is the ordinal field, which the source fills", n)
		case f.Kind == row.KindInt || f.Kind == row.KindDecimal:
			rp.change = perturb.AsNumber
		case f.Kind == row.KindString:
			rp.change = perturb.AsString
		default:
			return nil, fmt.Errorf("source.replay.conflict_field: field %q is %s, want a number or a string", n, f.Kind)
		}
		rp.cf, rp.hasCF = f, true
	}
	return rp, nil
}

// replayOptionError names the source.replay key of perturb's option
// errors.
func replayOptionError(err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var oe *perturb.OptionError
		switch {
		case !errors.As(e, &oe):
			out[i] = fmt.Errorf("source.replay: %w", e)
		case oe.Key == "":
			out[i] = fmt.Errorf("source.replay: %s", oe.Reason)
		default:
			out[i] = fmt.Errorf("source.replay.%s: %s", oe.Key, oe.Reason)
		}
	}
	return errors.Join(out...)
}

// next fills b with up to max deliveries in (arrival, sequence, kind)
// order: it reads records until the earliest held delivery is due (its
// arrival is at most the horizon), and drains what is held at the end of
// input.
func (rp *replayer) next(s *Source, b *source.Batch, max int) (source.Status, error) {
	start := b.Len()
	for b.Len()-start < max {
		if rp.q.Due() {
			rp.deliver(b)
			continue
		}
		if rp.inputDone {
			return source.End, nil
		}
		rp.arena.Reset()
		rp.schema.Shape(&rp.scratch)
		rp.scratchMeta = source.Meta{Arrival: source.NoArrival}
		end, err := s.read(&rp.scratch, &rp.scratchMeta, &rp.arena, false) // hold copies Raw
		if err != nil {
			return source.More, err
		}
		if end {
			rp.inputDone = true
			rp.q.Close()
			continue
		}
		rp.add(s, &rp.scratch, &rp.scratchMeta)
	}
	if rp.inputDone && rp.q.Len() == 0 {
		return source.End, nil
	}
	return source.More, nil
}

// add takes one record just read: the scheduler decides its partition,
// its arrival and its copies; add holds the record and its copies.
func (rp *replayer) add(s *Source, r *row.Row, m *source.Meta) {
	valid := rp.d.valid(r, m)
	et := perturb.NoTime
	if valid {
		et = r.I[rp.d.et.Slot]
	}
	hasKey := rp.hasBy && !r.IsNull(rp.by.Index)
	rp.text = rp.text[:0]
	if hasKey {
		rp.text = appendText(rp.text, r, rp.by)
	}
	sc := rp.sch.Next(et, rp.text, hasKey)
	e := rp.hold(r, m, sc.Partition)
	if !valid {
		rp.q.PushAtHorizon(sc.Seq, e)
		return
	}
	rp.q.Observe(et)
	rp.q.Push(sc.Arrival, sc.Seq, perturb.First, e)
	if sc.Redeliver {
		c := rp.hold(r, m, sc.Partition)
		c.meta.Redelivery = true
		rp.q.Push(sc.RedeliverAt, sc.Seq, perturb.Redelivery, c)
	}
	if sc.Conflict && rp.hasCF && rp.conflicting(s, r, m) {
		c := rp.hold(&rp.crow, &rp.cmeta, sc.Partition)
		c.meta.Redelivery = true
		rp.q.Push(sc.ConflictAt, sc.Seq, perturb.Conflict, c)
	}
}

// conflicting builds the conflicting copy of a valid record in rp.crow and
// rp.cmeta: its raw bytes with conflict_field changed (a number plus one,
// a string plus "-x"), decoded again so that the row, the raw bytes and
// EventJSON agree. It returns false, and the record gets no conflicting
// copy, when the field is null or its changed value does not decode.
func (rp *replayer) conflicting(s *Source, r *row.Row, m *source.Meta) bool {
	if r.IsNull(rp.cf.Index) {
		return false
	}
	rp.schema.Shape(&rp.crow)
	rp.cmeta = *m
	var derr *source.DecodeError
	if s.jsonl {
		var ok bool
		if rp.craw, ok = perturb.AppendChanged(rp.craw[:0], m.Raw, rp.cf.Name, rp.change); !ok {
			return false
		}
		derr = s.json.Decode(rp.craw, &rp.crow, &rp.arena)
	} else if s.feed.on {
		// Fed by Claim: the open file may be a later one; the record's
		// file's header, and its line breaks as Claim found them.
		path := m.Pos.Source
		dec := s.conflictCSV(path)
		if dec == nil {
			return false
		}
		mode := modeLF
		if v, ok := s.modes.Load(path); ok {
			mode = v.(lineMode)
		}
		rec, ok := rp.changeCSV(s, s.heads[path], m.Raw, mode)
		if !ok {
			return false
		}
		derr = dec.Decode(rec, &rp.crow, &rp.arena)
	} else {
		c, ok := s.cur.(*csvReader)
		if !ok || c.dec == nil {
			return false
		}
		rec, ok := rp.changeCSV(s, c.header, m.Raw, c.lines.mode)
		if !ok {
			return false
		}
		derr = c.dec.Decode(rec, &rp.crow, &rp.arena)
	}
	if derr != nil {
		return false
	}
	if rp.d.hasOrd { // the ordinal is the record's, not decoded
		rp.crow.I[rp.d.ord.Slot] = r.I[rp.d.ord.Slot]
		rp.crow.SetValid(rp.d.ord.Index)
	}
	rp.cmeta.Raw = rp.craw
	return true
}

// changeCSV parses a CSV record's raw bytes (of a file with line mode
// mode), changes the conflict field's column and encodes the record again
// (encoding/csv) into rp.craw. It returns the changed record, parsed from
// rp.craw.
func (rp *replayer) changeCSV(s *Source, header []string, raw []byte, mode lineMode) (*format.CSVRecord, bool) {
	col := -1
	for i, h := range header {
		if h == rp.cf.Name {
			col = i
			break
		}
	}
	orig := splitCSV(raw, s.csv.comma, mode)
	if orig == nil || col < 0 || col >= len(orig.Fields) || len(orig.Fields[col]) == 0 {
		return nil, false
	}
	rec := make([]string, len(orig.Fields))
	for i, f := range orig.Fields {
		rec[i] = string(f)
	}
	rp.ctext = rp.ctext[:0]
	if rp.change == perturb.AsNumber {
		var ok bool
		if rp.ctext, ok = perturb.AddOne(rp.ctext, []byte(rec[col])); !ok {
			return nil, false
		}
	} else {
		rp.ctext = append(append(rp.ctext, rec[col]...), perturb.StringSuffix...)
	}
	rec[col] = string(rp.ctext)
	rp.cbuf.Reset()
	w := csv.NewWriter(&rp.cbuf)
	w.Comma = s.csv.comma
	if err := w.Write(rec); err != nil {
		return nil, false
	}
	w.Flush()
	b := rp.cbuf.Bytes()
	rp.craw = append(rp.craw[:0], b[:len(b)-1]...) // without the final "\n"
	changed := splitCSV(rp.craw, s.csv.comma, mode)
	if changed == nil {
		return nil, false
	}
	return changed, true
}

// hold returns a free entry holding a copy of the record on partition p.
func (rp *replayer) hold(r *row.Row, m *source.Meta, p int) *entry {
	var e *entry
	if n := len(rp.free); n > 0 {
		e = rp.free[n-1]
		rp.free[n-1] = nil
		rp.free = rp.free[:n-1]
	} else {
		e = &entry{}
	}
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
	e.row.CopyShallow(r)
	n := 0
	for _, f := range rp.strs {
		if !r.IsNull(f.Index) {
			n += len(r.S[f.Slot])
		}
	}
	if cap(e.strs) < n {
		e.strs = make([]byte, 0, n)
	}
	buf := e.strs[:0]
	for _, f := range rp.strs {
		v := r.S[f.Slot]
		if v == "" || r.IsNull(f.Index) {
			e.row.S[f.Slot] = ""
			continue
		}
		start := len(buf)
		buf = append(buf, v...) // within capacity: strings stay put
		e.row.S[f.Slot] = unsafe.String(&buf[start], len(v))
	}
	e.strs = buf
}

// deliver copies the earliest held delivery into b and frees its entry:
// the entry's string bytes and raw bytes go to b's arena in one block.
func (rp *replayer) deliver(b *source.Batch) {
	arrival, _, _, e := rp.q.Pop()
	r, m := b.Append()
	block := b.Arena().Alloc(len(e.strs) + len(e.raw))
	copy(block, e.strs)
	copy(block[len(e.strs):], e.raw)
	// The batch row takes the entry's row (its slices: the batch was
	// Reset, so nobody uses the row's old ones, which the entry takes),
	// its strings moved to block.
	*r, e.row = e.row, *r
	rp.rebase(r, e.strs, block)
	*m = e.meta
	m.Arrival = arrival
	m.Raw = block[len(e.strs):len(block):len(block)]
	if len(e.raw) == 0 {
		m.Raw = nil
	}
	e.meta = source.Meta{}
	rp.free = append(rp.free, e)
}

// rebase points the strings of r, which lie in strs (own put them
// there), at the same bytes of block, a copy of strs; null string fields
// become "".
func (rp *replayer) rebase(r *row.Row, strs, block []byte) {
	var base uintptr
	if len(strs) > 0 {
		base = uintptr(unsafe.Pointer(unsafe.SliceData(strs)))
	}
	for _, f := range rp.strs {
		v := r.S[f.Slot]
		if v == "" || r.IsNull(f.Index) {
			r.S[f.Slot] = ""
			continue
		}
		off := uintptr(unsafe.Pointer(unsafe.StringData(v))) - base
		r.S[f.Slot] = unsafe.String(&block[off], len(v))
	}
}
