package contract

import (
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// Apply fills in the keys of pipeline p that its contract c answers. Call
// it after decoding the pipeline's YAML and before p.Defaults and
// p.Validate, with a contract that passed Validate (Load and Parse return
// only such contracts). It does, in order:
//
//   - source.schema: every contract field that the pipeline does not
//     declare is added with the contract's type (after the pipeline's own
//     entries, in the contract's order). A field the pipeline declares
//     with another type is an error naming source.schema.<field> and both
//     types; aliases are compared by meaning ("integer" is "int").
//   - event_time: when event_time.field is empty, field, format, layout
//     and timezone come from the contract (out_of_orderness and
//     idle_timeout stay the pipeline's). A pipeline that names its own
//     event-time field keeps it, even when it differs from the contract's.
//     Unset timestamp rules come from the contract too: max_future is the
//     smallest max_future of its rules, max_past the smallest max_age,
//     ingest_time_field its ingest_time (docs/semantics.md, "Timestamp
//     rules").
//   - dedup (when present): an empty key becomes the contract's event_id;
//     an absent ignore list becomes MetadataFields, plus
//     source.arrival_time_field when set.
//   - order_by (when present): an empty key or version comes from the
//     contract's ordering; without one it is an error.
//
// Apply changes p only when it returns nil; errors are joined, one per
// line, each naming the pipeline key.
func Apply(c *Contract, p *spec.Pipeline) error {
	if c == nil || p == nil {
		return errors.New("contract.Apply: nil contract or pipeline")
	}
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	schema := append(spec.FieldTypes(nil), p.Source.Schema...)
	for _, f := range c.Fields {
		pt, ok := p.Source.Schema.Lookup(f.Name)
		if !ok {
			schema = append(schema, spec.FieldType{Name: f.Name, Type: f.Type})
			continue
		}
		if !sameType(pt, f.Type) {
			add("source.schema."+f.Name, "declared %s in the pipeline, but the contract %s declares %s", pt, c.Product, f.Type)
		}
	}

	et := p.EventTime
	if et.Field == "" {
		et.Field = c.EventTime.Field
		et.Format = c.EventTime.Format
		et.Layout = c.EventTime.Layout
		et.Timezone = c.EventTime.Timezone
	}
	var future, past *spec.Duration
	for _, r := range c.Rules {
		if d := r.MaxFuture; d > 0 && (future == nil || d < *future) {
			future = &d
		}
		if d := r.MaxAge; d > 0 && (past == nil || d < *past) {
			past = &d
		}
	}
	if et.MaxFuture == nil {
		et.MaxFuture = future
	}
	if et.MaxPast == nil {
		et.MaxPast = past
	}
	if et.IngestTimeField == "" && c.IngestTime != et.Field {
		// (A pipeline windowing over the ingest time itself is tidemark
		// check's TM201, not a record's fault.)
		et.IngestTimeField = c.IngestTime
	}

	var dedup *spec.Dedup
	if p.Dedup != nil {
		d := *p.Dedup
		if d.Key == "" {
			d.Key = c.EventID
		}
		if d.Ignore == nil {
			d.Ignore = c.MetadataFields()
			if a := p.Source.ArrivalTimeField; a != "" && !contains(d.Ignore, a) {
				d.Ignore = append(d.Ignore, a)
			}
		}
		dedup = &d
	}

	var order *spec.OrderBy
	if p.OrderBy != nil {
		o := *p.OrderBy
		if o.Key == "" || o.Version == "" {
			if c.Ordering == nil {
				add("order_by", "key and version are required: the contract %s declares no ordering", c.Product)
			} else {
				if o.Key == "" {
					o.Key = c.Ordering.Key
				}
				if o.Version == "" {
					o.Version = c.Ordering.Version
				}
			}
		}
		order = &o
	}

	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.Source.Schema = schema
	p.EventTime = et
	if dedup != nil {
		p.Dedup = dedup
	}
	if order != nil {
		p.OrderBy = order
	}
	return nil
}

// sameType reports whether two type names mean the same type; unknown
// names are the same only when equal (the pipeline's Validate reports a
// bad name in source.schema).
func sameType(a, b string) bool {
	ka, errA := row.ParseKind(a)
	kb, errB := row.ParseKind(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return ka == kb
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
