package file

import (
	"bytes"
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
	n        int64  // ordinal of the previous record of the file; 0 at a file's start
	prev     []byte // text of the previous record's per field
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
	if d.ord, err = lookupField(s, "source.ordinal.field", o.Field, row.KindInt); err != nil {
		return err
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
func (d *derive) newFile() { d.n = 0 }

// number sets the ordinal field of a record just read: 1, 2, 3 … within
// each run of consecutive records of the file with equal per values (null
// equals null), or counting the file's records without per. Every record
// is counted, including one that failed to decode; such a record whose
// per field is null continues the current run, so a broken line does not
// renumber the lines after it.
func (d *derive) number(r *row.Row, m *source.Meta) {
	if !d.hasOrd {
		return
	}
	switch {
	case !d.hasPer || d.n == 0:
		d.n++
		if d.hasPer {
			d.remember(r)
		}
	case m.Err != nil && r.IsNull(d.per.Index):
		d.n++
	default:
		null := r.IsNull(d.per.Index)
		d.text = d.text[:0]
		if !null {
			d.text = appendText(d.text, r, d.per)
		}
		if null == d.prevNull && bytes.Equal(d.text, d.prev) {
			d.n++
		} else {
			d.n = 1
			d.prev, d.text = d.text, d.prev
			d.prevNull = null
		}
	}
	r.I[d.ord.Slot] = d.n
	r.SetValid(d.ord.Index)
}

// remember stores the per value of r as the current run's.
func (d *derive) remember(r *row.Row) {
	d.prevNull = r.IsNull(d.per.Index)
	d.prev = d.prev[:0]
	if !d.prevNull {
		d.prev = appendText(d.prev, r, d.per)
	}
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
