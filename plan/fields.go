package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/nexschema"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/spec"
)

// FieldList is the list of a source's fields, when the pipeline has one:
// the Nexmark generator's fixed schema, the fields of its contract (which declares every field of the events;
// its event-time field may be left out of them), source.schema with
// source.schema_complete, or source.csv.columns for CSV without a header.
// The fields the pipeline adds itself (source.ordinal.field, the
// reference's fields, an event-time field filled from the Kafka
// timestamp) belong to every list.
type FieldList struct {
	// Names are the listed fields, in order, without repeats.
	Names []string
	// From says what lists them, for messages: "contract order_event",
	// "source.schema (source.schema_complete)", "source.csv.columns".
	From string
}

// Has reports whether name is a listed field.
func (l *FieldList) Has(name string) bool {
	for _, n := range l.Names {
		if n == name {
			return true
		}
	}
	return false
}

// hasTop reports whether name is a listed field or the top level of
// listed nested fields ("properties" for "properties.time"): dedup.ignore
// names top-level fields of the payload.
func (l *FieldList) hasTop(name string) bool {
	for _, n := range l.Names {
		if n == name || strings.HasPrefix(n, name+".") {
			return true
		}
	}
	return false
}

// SourceFields returns the field list of p's source (c is its contract,
// nil without one, already applied to p), or nil when nothing lists the
// source's fields: then source.schema may declare only some of them, and
// a field the pipeline uses that no one declares is read as a string. A
// nexmark source's list is the generator's fixed schema.
func SourceFields(p *spec.Pipeline, c *contract.Contract) *FieldList {
	src := &p.Source
	l := &FieldList{}
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			l.Names = append(l.Names, n)
		}
	}
	var from []string
	if src.Type == "nexmark" {
		from = append(from, "the Nexmark generator (docs/nexmark.md)")
		for _, n := range nexschema.Names() {
			add(n)
		}
	}
	if c != nil {
		from = append(from, "contract "+c.Product)
		for _, f := range c.Fields {
			add(f.Name)
		}
		add(c.EventTime.Field)
	}
	if src.SchemaComplete {
		from = append(from, "source.schema (source.schema_complete)")
	}
	if len(from) > 0 {
		// With a contract, source.schema holds the contract's fields
		// (contract.Apply) and the pipeline's own declarations.
		for _, f := range src.Schema {
			add(f.Name)
		}
	}
	if src.Format == "csv" && src.CSV.Header != nil && !*src.CSV.Header && len(src.CSV.Columns) > 0 {
		from = append(from, "source.csv.columns")
		for _, n := range src.CSV.Columns {
			add(n)
		}
	}
	if len(from) == 0 {
		return nil
	}
	l.From = strings.Join(from, " and ")
	if o := src.Ordinal; o != nil {
		add(o.Field)
	}
	if r := p.Reference; r != nil {
		for _, f := range r.Fields {
			add(f.Name)
		}
	}
	if p.EventTime.From == "kafka_timestamp" {
		add(p.EventTime.Field)
	}
	add(src.ProcessingTimeField)
	if src.ChangeStream() {
		for _, f := range record.ChangeFields {
			add(f.Name)
		}
	}
	return l
}

// fieldUse is one place where the pipeline names a source field.
type fieldUse struct {
	name string
	key  string // the pipeline key that names it ("dedup.key", "key")
}

// sourceFieldUses lists, in order, the source fields the pipeline names:
// pipeline keys first (event time and ingest time, partition and arrival fields, ordinal,
// replay, reference key, dedup, order_by), then each stage that reads
// the source (filter, derived fields, key, aggregates, select), whose
// keys are returned as "<stage>: <key>" like the other compile errors.
func sourceFieldUses(p *spec.Pipeline, parsed []*parsedStage, reads func(spec.Stage) bool, dedupKey *expr.Parsed) []fieldUse {
	var uses []fieldUse
	use := func(key string, names ...string) {
		for _, n := range names {
			if n != "" {
				uses = append(uses, fieldUse{n, key})
			}
		}
	}
	if p.EventTime.From != "kafka_timestamp" {
		use("event_time.field", p.EventTime.Field)
	}
	src := p.Source
	use("event_time.ingest_time_field", p.EventTime.IngestTimeField)
	use("source.partition_field", src.PartitionField)
	use("source.arrival_time_field", src.ArrivalTimeField)
	if o := src.Ordinal; o != nil {
		use("source.ordinal.per", o.Per)
	}
	if r := src.Replay; r != nil {
		use("source.replay.partition_by", r.PartitionBy)
		use("source.replay.conflict_field", r.ConflictField)
	}
	if r := p.Reference; r != nil {
		use("reference.key", r.Key)
	}
	if d := p.Dedup; d != nil {
		if dedupKey != nil {
			use("dedup.key", dedupKey.Identifiers()...)
		}
		use("dedup.ignore", d.Ignore...)
	}
	if o := p.OrderBy; o != nil {
		use("order_by.key", o.Key)
		use("order_by.version", o.Version)
	}
	for _, ps := range parsed {
		if ps == nil || !reads(ps.st) {
			continue
		}
		st := ps.st
		derived := map[string]bool{}
		for _, f := range st.Fields {
			derived[f.Name] = true
		}
		inputs := func(key string, e *expr.Parsed) {
			if e == nil {
				return
			}
			for _, n := range e.Identifiers() {
				if !derived[n] {
					use(st.Name+": "+key, n)
				}
			}
		}
		inputs("filter", ps.filter)
		for i, f := range st.Fields {
			inputs("fields."+f.Name, ps.fields[i])
		}
		for _, k := range st.Key {
			if !derived[k] {
				use(st.Name+": key", k)
			}
		}
		for i, a := range st.Aggregates {
			for _, arg := range ps.aggArgs[i] {
				inputs("aggregates."+a.Name, arg)
			}
		}
		for _, item := range st.Select {
			if n, _ := spec.SelectItem(item); !derived[n] {
				use(st.Name+": select", n)
			}
		}
	}
	return uses
}

// checkSourceFields refuses a field the pipeline uses that the source's
// field list (SourceFields) does not hold, naming the field, the key that
// uses it and the listed names close to it (one error per field and key).
// Without a field list it returns nil.
func checkSourceFields(p *spec.Pipeline, c *contract.Contract, parsed []*parsedStage, reads func(spec.Stage) bool, dedupKey *expr.Parsed, more ...fieldUse) error {
	l := SourceFields(p, c)
	if l == nil {
		return nil
	}
	var errs []error
	reported := map[fieldUse]bool{}
	for _, u := range append(sourceFieldUses(p, parsed, reads, dedupKey), more...) {
		has := l.Has
		if u.key == "dedup.ignore" {
			has = l.hasTop
		}
		if has(u.name) || reported[u] {
			continue
		}
		reported[u] = true
		cands := l.Names
		if stage, _, ok := strings.Cut(u.key, ": "); ok {
			// A stage's derived fields are names it may have meant too.
			for _, ps := range parsed {
				if ps != nil && ps.st.Name == stage {
					for _, f := range ps.st.Fields {
						cands = append(cands, f.Name)
					}
				}
			}
		}
		errs = append(errs, fmt.Errorf("%s: %q is not among the fields of %s%s",
			u.key, u.name, l.From, suggest.Hint(u.name, cands)))
	}
	return errors.Join(errs...)
}
