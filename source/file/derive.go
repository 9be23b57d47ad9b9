package file

import (
	"fmt"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// derive computes what the source adds to decoded records: the ordinal
// field, and (without replay) the partition and the arrival time.
type derive struct {
	et    row.Field
	hasET bool

	// ordinal
	ord      row.Field
	hasOrd   bool
	per      row.Field
	hasPer   bool
	n        int64          // records of the file so far
	group    map[string]int // per value text → index in counts
	counts   []int64        // records of the file with each per value
	nullN    int64          // records of the file with a null per value
	prev     []byte         // text of the previous record's per field
	prevNull bool
	text     []byte // scratch

	// partition_field
	part     row.Field
	hasPart  bool
	names    []string
	index    map[string]int
	lastPart int

	// arrival_time_field
	arr         row.Field
	hasArr      bool
	lastArrival int64
}

// unpartitioned is the partition list of a source without partition_field
// or replay.
var unpartitioned = []string{"0"}

// init resolves the configured field names in cfg.Fields.Schema and marks
// the ordinal field Derived in fields.
func (d *derive) init(cfg *Config, fields *format.Fields) error {
	s := cfg.Fields.Schema
	lookup := func(key, name string, kinds ...row.Kind) (row.Field, error) {
		return lookupField(s, key, name, kinds...)
	}
	var err error
	if n := cfg.EventTimeField; n != "" {
		if d.et, err = lookup("event_time.field", n, row.KindTime); err != nil {
			return err
		}
		d.hasET = true
	}
	sp := &cfg.Spec
	if o := sp.Ordinal; o != nil {
		if o.Field == "" {
			return fmt.Errorf("source.ordinal.field: required")
		}
		// A planner leaves fields that nothing reads out of the schema:
		// an ordinal field that is not in it is not computed.
		if _, ok := s.Lookup(o.Field); ok {
			if err := d.initOrdinal(s, o, fields); err != nil {
				return err
			}
		}
	}
	if n := sp.PartitionField; n != "" {
		if d.part, err = lookup("source.partition_field", n); err != nil {
			return err
		}
		d.hasPart = true
		d.index = map[string]int{}
	}
	if n := sp.ArrivalTimeField; n != "" {
		if d.arr, err = lookup("source.arrival_time_field", n, row.KindTime); err != nil {
			return err
		}
		d.hasArr = true
	}
	d.lastArrival = source.NoArrival
	return nil
}

// lookupField returns the field of s named name, which the setting key
// names; with a kind, the field must be of that kind.
func lookupField(s *row.Schema, key, name string, kind ...row.Kind) (row.Field, error) {
	f, ok := s.Lookup(name)
	if !ok {
		return f, fmt.Errorf("%s: field %q is not in the source schema", key, name)
	}
	if len(kind) > 0 && f.Kind != kind[0] {
		return f, fmt.Errorf("%s: field %q is %s, want %s", key, name, f.Kind, kind[0])
	}
	return f, nil
}

// initOrdinal resolves the ordinal's fields in s and marks its field
// Derived in fields.
func (d *derive) initOrdinal(s *row.Schema, o *spec.Ordinal, fields *format.Fields) error {
	var err error
	// An int, or a timestamp when the ordinal is the event time (n ms
	// after the epoch: the version time of a lookup table's line n,
	// which has no time of its own; the planner of SQL's processing-time
	// lookup joins sets it).
	if d.ord, err = lookupField(s, "source.ordinal.field", o.Field); err != nil {
		return err
	}
	if d.ord.Kind != row.KindInt && d.ord.Kind != row.KindTime {
		return fmt.Errorf("source.ordinal.field: field %q is %s, want int (or a timestamp, as event_time.field)", o.Field, d.ord.Kind)
	}
	d.hasOrd = true
	fields.Derived = append(append([]int(nil), fields.Derived...), d.ord.Index)
	if o.Per != "" {
		if d.per, err = lookupField(s, "source.ordinal.per", o.Per); err != nil {
			return err
		}
		if d.per.Index == d.ord.Index {
			return fmt.Errorf("source.ordinal.per: %q is the ordinal field itself", o.Per)
		}
		d.hasPer = true
	}
	return nil
}

// newFile restarts the ordinal at a file's first record.
func (d *derive) newFile() {
	d.n = 0
	d.nullN = 0
	clear(d.group)
	d.counts = d.counts[:0]
	d.prevNull = true
}

// number sets the ordinal field of a record just read: 1, 2, 3 … over
// the file's records with equal per values (null equals null), counted in
// file order whether or not the records are adjacent, or counting the
// file's records without per. Every record is counted, including one that
// failed to decode; such a record whose per field is null is counted with
// the previous record's per value, so a broken line does not renumber the
// lines after it.
//
// Memory: one map entry per distinct per value of the current file.
func (d *derive) number(r *row.Row, m *source.Meta) {
	if !d.hasOrd {
		return
	}
	if !d.hasPer {
		d.n++
		r.I[d.ord.Slot] = d.n
		r.SetValid(d.ord.Index)
		return
	}
	null := r.IsNull(d.per.Index)
	if null && m.Err != nil && d.n > 0 {
		// A broken line: count it with the previous record's value.
		null = d.prevNull
	} else {
		d.prevNull = null
		d.prev = d.prev[:0]
		if !null {
			d.prev = appendText(d.prev, r, d.per)
		}
	}
	d.n++
	var n int64
	if null {
		d.nullN++
		n = d.nullN
	} else {
		i, ok := d.group[string(d.prev)]
		if !ok {
			if d.group == nil {
				d.group = make(map[string]int)
			}
			i = len(d.counts)
			d.group[string(d.prev)] = i
			d.counts = append(d.counts, 0)
		}
		d.counts[i]++
		n = d.counts[i]
	}
	r.I[d.ord.Slot] = n
	r.SetValid(d.ord.Index)
}

// valid reports whether the engine will process the record (not
// quarantine it): it decoded and its event time is not null.
func (d *derive) valid(r *row.Row, m *source.Meta) bool {
	return m.Err == nil && (!d.hasET || !r.IsNull(d.et.Index))
}

// assign sets the partition and arrival time of a record (without
// replay).
//
// With partition_field, the field's text names the partition; a null
// value names the partition "". A record the engine will quarantine
// (failed decode or null event time) never creates a partition, since a
// partition without valid records would hold the watermark back: it goes
// to its field's partition if that one exists, else to the previous
// record's partition (0 before any).
//
// With arrival_time_field, Meta.Arrival is the field's value; when the
// field is null, the previous record's arrival (processing time stands
// still), or source.NoArrival before any.
func (d *derive) assign(r *row.Row, m *source.Meta) {
	if d.hasPart {
		d.text = d.text[:0]
		if !r.IsNull(d.part.Index) {
			d.text = appendText(d.text, r, d.part)
		}
		i, ok := d.index[string(d.text)]
		switch {
		case ok:
		case d.valid(r, m):
			i = len(d.names)
			name := string(d.text)
			d.names = append(d.names, name)
			d.index[name] = i
		default:
			i = d.lastPart
		}
		d.lastPart = i
		m.Partition = i
		if i < len(d.names) {
			m.Pos.Partition = d.names[i]
		}
	}
	if d.hasArr {
		if !r.IsNull(d.arr.Index) {
			d.lastArrival = r.I[d.arr.Slot]
		}
		m.Arrival = d.lastArrival
	}
}

// partNames returns the partitions known so far.
func (d *derive) partNames() []string {
	if !d.hasPart {
		return unpartitioned
	}
	return d.names
}
