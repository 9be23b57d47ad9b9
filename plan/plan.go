// Package plan compiles a pipeline spec into an executable plan before the
// first record is read: field names resolve to typed row slots, expressions
// compile once, aggregates and window assigners are built, and every stage
// knows its input, its output columns and its sinks.
//
// The stages form a graph: stage 0 reads the source; a later stage may read
// an earlier stage's changelog (its input rows then carry the upstream
// output columns and a weight: +1 for insert/update_after, −1 for
// update_before/delete).
package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/nexschema"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/window"
)

// Plan is a compiled pipeline.
type Plan struct {
	Spec *spec.Pipeline
	// Source is what the source decodes: its schema and timestamp parsers.
	SourceSchema *row.Schema
	// TimeParsers maps source field indexes of timestamp fields to their
	// parsers (the event-time field's format; RFC 3339 for others).
	TimeParsers map[int]*eventtime.Parser
	// EventTimeField is the name of the source's event-time field.
	EventTimeField string
	// Stages in dependency order.
	Stages []*Stage

	// Contract is the pipeline's data contract (nil without one), and
	// Rules its quality checks compiled against SourceSchema.
	Contract *contract.Contract
	Rules    *contract.Checker
	// Ingest is the contract's ingest-time field (HasIngest false without
	// one): the arrival the time rules compare with.
	Ingest    row.Field
	HasIngest bool
	// Time holds the pipeline's timestamp rules (event_time.max_future,
	// max_past, ingest_time_field; docs/semantics.md, "Timestamp rules").
	Time TimeRules
	// Dedup is the deduplication plan (nil without dedup).
	Dedup *Dedup
	// OrderBy is the version-ordering plan (nil without order_by). A
	// change stream has one of its own (key __key, version __lsn) and
	// Changes.
	OrderBy *OrderBy
	// Changes is set for a change stream (spec.Source.ChangeStream): the
	// order_by step also applies deletes and takes unchanged (TOAST)
	// values from the key's previous row.
	Changes *Changes
	// Inputs are the compiled inputs[] (input numbers 1, 2, …; the
	// source is input 0).
	Inputs []*Input
}

// TimeRules are the pipeline's timestamp rules, judged by the router
// after the contract's rules.
type TimeRules struct {
	// MaxFuture and MaxPast bound event time − processing time and
	// processing time − event time, in ms; 0 turns a rule off.
	MaxFuture, MaxPast int64
	// Ingest is the event_time.ingest_time_field (a timestamp; HasIngest
	// false without one): event time must not be after it.
	Ingest    row.Field
	HasIngest bool
}

// Dedup is a compiled dedup spec.
type Dedup struct {
	Key          *expr.Expr // the event id; its text is hashed
	TTL          int64      // ms of event time
	KeepPayloads int
	Ignore       []string // top-level fields left out of the payload hash
}

// OrderBy is a compiled order_by spec.
type OrderBy struct {
	Key     row.Field // the entity
	Version row.Field // int
	TTL     int64     // ms of event time; 0 keeps state for the run
}

// Changes are the fields of a change stream the order_by step reads
// (package source, "Change streams").
type Changes struct {
	Op        row.Field // string: record.OpRead, OpCreate, OpUpdate, OpDelete
	Unchanged row.Field // string: record.MarkUnchanged's bitmap
}

// Stage is one compiled windowed aggregation.
type Stage struct {
	Name  string
	Input int // −1 for the source, else the index of the upstream stage
	// Schema is the full row layout: input fields first (the first
	// InputFields of them), then derived fields.
	Schema      *row.Schema
	InputFields int
	EventTime   row.Field
	// EventTimeShift is added to the event-time field's value (−1 ms when a
	// downstream stage uses an upstream window_end, Flink's
	// window.maxTimestamp()).
	EventTimeShift int64
	// OwnTime marks a stage reading the source whose event time is a
	// field of its own (stages[].event_time: processing time), not the
	// source's: its records are windowed by that field's value.
	OwnTime  bool
	Filter   *expr.Expr // nil: keep all
	Derived  []Derived
	Key      []row.Field
	Operator operator.Config
	Desc     changelog.Desc
	Loc      *time.Location // zone for rendering times
	Late     spec.Late
	Sinks    []spec.Sink
	// Retracting is true when the input may carry retractions.
	Retracting bool
	// Contributions, when set, records the events behind the rows.
	Contributions *spec.Contributions
	// Select lists the output fields of a select stage (Desc.Stateless):
	// no operator, every kept record is emitted as an insert row.
	Select []row.Field
	// Aggs are the aggregate columns' specs, in output order (the ledger
	// sink reads each event's deltas from their argument fields).
	Aggs []aggregate.Spec
	// Join is a join stage's compiled join (nil for other stages); its
	// Input is InputJoin and its rows are described by Desc (Stateless:
	// no window and no key).
	Join *Join
	// Union lists, for a union stage (spec.Stage.Union), the indexes of
	// the stages whose rows are its rows (union.go); nil for other
	// stages. A union stage has no node of its own: it only has sinks.
	Union []int
}

// Derived is one computed field.
type Derived struct {
	Field row.Field
	Expr  *expr.Expr
}

// Compile builds the plan of a validated pipeline, with its contract (nil
// without one; contract.Apply has filled the pipeline's keys from it).
// Errors name the stage and key ("revenue: aggregates.total: ...") and join
// every problem found.
func Compile(p *spec.Pipeline, c *contract.Contract) (*Plan, error) {
	pl := &Plan{Spec: p, TimeParsers: map[int]*eventtime.Parser{}, EventTimeField: p.EventTime.Field, Contract: c}
	stages := p.StageList()
	idx := map[string]int{"source": -1}
	for i, st := range stages {
		idx[st.Name] = i
	}
	// Source fields: everything stage-0-like stages reference plus the
	// source's own needs, typed by the declared schema (string otherwise).
	var errs []error
	need := newFieldSet()
	need.add(p.EventTime.Field)
	need.add(p.EventTime.IngestTimeField)
	for _, f := range []string{p.Source.PartitionField, p.Source.ArrivalTimeField, p.Source.ProcessingTimeField} {
		need.add(f)
	}
	if o := p.Source.Ordinal; o != nil {
		need.add(o.Field)
		need.add(o.Per)
	}
	if r := p.Source.Replay; r != nil {
		need.add(r.PartitionBy)
		need.add(r.ConflictField)
	}
	var dedupKey *expr.Parsed
	if d := p.Dedup; d != nil {
		k, err := expr.Parse(d.Key)
		if err != nil {
			return nil, fmt.Errorf("dedup.key: %w", err)
		}
		dedupKey = k
		for _, n := range k.Identifiers() {
			need.add(n)
		}
	}
	if o := p.OrderBy; o != nil {
		need.add(o.Key)
		need.add(o.Version)
	}
	if p.Source.ChangeStream() {
		for _, n := range []string{record.FieldKey, record.FieldLSN, record.FieldOp, record.FieldUnchanged} {
			need.add(n)
		}
	}
	if r := p.Reference; r != nil {
		need.add(r.Key)
	}
	if c != nil {
		names, err := contract.RuleFields(c)
		if err != nil {
			return nil, fmt.Errorf("contract: %w", err)
		}
		for _, n := range names {
			need.add(n)
		}
		need.add(c.IngestTime)
	}
	parsed := make([]*parsedStage, len(stages))
	// One parse of each expression text for the whole pipeline: stages'
	// aggregates repeat their arguments (a Top-N's nth_by columns all
	// order by the same keys).
	cache := &expr.ParseCache{}
	for i, st := range stages {
		ps, err := parseStage(st, cache)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			continue
		}
		parsed[i] = ps
		if idx[st.Input] == -1 && len(st.Union) == 0 {
			for _, n := range ps.inputRefs() {
				need.add(n)
			}
		}
	}
	needs := []*fieldSet{need}
	for range p.Inputs {
		needs = append(needs, newFieldSet())
	}
	joinUses, err := joinNeeds(p, stages, needs)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A misspelt field is refused before anything is written, when the
	// source's fields are listed (a contract, source.schema_complete, CSV
	// columns); otherwise it would read as null in every record.
	readsSource := func(st spec.Stage) bool { return idx[st.Input] == -1 && st.Join == nil }
	if err := checkSourceFields(p, c, parsed, readsSource, dedupKey, joinUses...); err != nil {
		return nil, err
	}
	src, err := sourceSchema(p, need.list(), c)
	if err != nil {
		return nil, err
	}
	pl.SourceSchema = src
	if err := pl.compileSourceSteps(dedupKey); err != nil {
		return nil, err
	}
	etParser, err := eventtime.New(p.EventTime)
	if err != nil {
		return nil, err
	}
	for _, f := range src.Fields {
		if f.Kind != row.KindTime {
			continue
		}
		if f.Name == p.EventTime.Field {
			pl.TimeParsers[f.Index] = etParser
		} else {
			pl.TimeParsers[f.Index] = &eventtime.Parser{}
		}
	}
	if err := pl.compileInputs(needs); err != nil {
		return nil, err
	}
	upSchema := make([]*row.Schema, len(stages)) // changelogSchema by upstream stage
	for i, st := range stages {
		if len(st.Union) > 0 {
			s, err := pl.compileUnion(st, idx)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			}
			pl.Stages = append(pl.Stages, s)
			continue
		}
		if st.Join != nil {
			s, err := pl.compileJoin(st)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
				s = nil // the stages reading it are not checked against it
			}
			pl.Stages = append(pl.Stages, s)
			continue
		}
		if parsed[i] == nil {
			pl.Stages = append(pl.Stages, nil) // its parse error is reported
			continue
		}
		in := idx[st.Input]
		var inSchema *row.Schema
		etName := p.EventTime.Field
		var shift int64
		if st.EventTime != nil {
			etName = st.EventTime.Field
		}
		// A stage reading the source retracts rows when order_by turns
		// state events into an upsert stream (a newer version retracts the
		// entity's previous row).
		retracting := p.OrderBy != nil || p.Source.ChangeStream()
		retracts := "with order_by a newer version of an entity retracts its previous row"
		fix := "read the source without order_by, or with a windowed stage"
		if p.Source.ChangeStream() {
			retracts = "a change stream's update or delete retracts the row's previous version"
			fix = "read it with a windowed stage"
		}
		if in == -1 {
			inSchema = src
		} else {
			up := pl.Stages[in]
			if up == nil {
				// The input failed to compile (its error is reported):
				// nothing to check this stage against.
				pl.Stages = append(pl.Stages, nil)
				continue
			}
			if up.Join != nil {
				// A join's rows: their event time, then the join's columns.
				inSchema = up.Schema
				if st.EventTime == nil {
					etName = "event_time"
				}
				retracting = joinRetracts(up.Join)
				uj := p.Stages[in]
				retracts = fmt.Sprintf("input %s (join type %s, kind %s, emit mode %s) takes back rows it emitted (update_before, delete)", up.Name, uj.Join.Type, uj.Join.Kind, uj.Emit.Mode)
				fix = fmt.Sprintf("set %s's emit.mode to final, or read %s with a windowed stage", up.Name, up.Name)
				goto compile
			}
			if up.Desc.Stateless {
				errs = append(errs, fmt.Errorf("%s: input %s is a select stage; read the source with the same filter instead (a stage reading a select stage is not supported yet)", st.Name, up.Name))
				pl.Stages = append(pl.Stages, nil)
				continue
			}
			// One layout of an upstream's changelog for every stage
			// reading it (a Top-N's ranks read one aggregation ten
			// times); each stage extends its own copy (compileStage).
			if upSchema[in] == nil {
				upSchema[in] = changelogSchema(&up.Desc)
			}
			inSchema = upSchema[in]
			if st.EventTime == nil {
				etName = "window_end"
			}
			if etName == "window_end" {
				// window_end is exclusive: the last instant of the upstream
				// window is end − 1 ms (Flink's window.maxTimestamp()).
				shift = -1
			}
			retracting = up.Desc.EmitMode != "final"
			retracts = fmt.Sprintf("input %s (emit mode %s) takes back rows it emitted (update_before)", up.Name, up.Desc.EmitMode)
			fix = fmt.Sprintf("set %s's emit.mode to final, or read %s with a windowed stage", up.Name, up.Name)
			if up.Desc.EmitMode == "update" {
				errs = append(errs, fmt.Errorf("%s: input %s emits mode update (an upsert stream without update_before); a stage reading it needs emit.mode retract or final upstream", st.Name, up.Name))
				pl.Stages = append(pl.Stages, nil)
				continue
			}
		}
	compile:
		var undeclared map[string]bool
		if in == -1 {
			undeclared = map[string]bool{}
			for _, f := range src.Fields {
				if _, ok := p.Source.Schema.Lookup(f.Name); !ok && f.Kind == row.KindString {
					undeclared[f.Name] = true
				}
			}
		}
		if retracting && len(st.Select) > 0 {
			errs = append(errs, fmt.Errorf("%s: select: %s; a select stage's rows have no key to take back: %s", st.Name, retracts, fix))
			pl.Stages = append(pl.Stages, nil)
			continue
		}
		s, err := compileStage(st, parsed[i], in, inSchema, etName, shift, retracting, undeclared)
		if err == nil && in == -1 && etName != p.EventTime.Field {
			s.OwnTime = true
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			pl.Stages = append(pl.Stages, nil) // pl.Stages[i] stays stage i's
			continue
		}
		pl.Stages = append(pl.Stages, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pl, nil
}

// fieldSet is an ordered set of field names.
type fieldSet struct {
	names []string
	seen  map[string]bool
}

func newFieldSet() *fieldSet { return &fieldSet{seen: map[string]bool{}} }
func (s *fieldSet) add(n string) {
	if n != "" && !s.seen[n] {
		s.seen[n] = true
		s.names = append(s.names, n)
	}
}
func (s *fieldSet) list() []string { return s.names }

// sourceSchema types the referenced source fields: the event-time and
// arrival-time fields are timestamps, the ordinal field an int filled by
// the source, the rest as declared in source.schema or strings.
func sourceSchema(p *spec.Pipeline, names []string, c *contract.Contract) (*row.Schema, error) {
	s := row.NewSchema()
	var errs []error
	ordinal := ""
	if p.Source.Ordinal != nil {
		ordinal = p.Source.Ordinal.Field
	}
	var nexmarkKinds map[string]row.Kind
	if p.Source.Type == "nexmark" {
		nexmarkKinds = map[string]row.Kind{}
		for _, f := range nexschema.Fields() {
			nexmarkKinds[f.Name] = f.Kind
		}
	}
	refKinds := map[string]string{}
	if r := p.Reference; r != nil {
		for _, f := range r.Fields {
			refKinds[f.Name] = f.Type
		}
	}
	for _, n := range names {
		k := row.KindString
		if n != "" && n == p.Source.ProcessingTimeField {
			// Filled by the runner: each record's processing time.
			if _, err := s.Add(n, row.KindTime); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if t, ok := refKinds[n]; ok {
			// A reference field: filled by the runner from the lookup file.
			kk, err := row.ParseKind(t)
			if err != nil {
				errs = append(errs, fmt.Errorf("reference.fields.%s: %w", n, err))
				continue
			}
			if _, err := s.Add(n, kk); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if ck, ok := record.ChangeFieldKind(n); ok && p.Source.ChangeStream() {
			// A change stream's metadata field (package source).
			if t, ok := p.Source.Schema.Lookup(n); ok {
				if kk, err := row.ParseKind(t); err != nil || kk != ck {
					errs = append(errs, fmt.Errorf("source.schema.%s: declared %s, but the change stream's %s is %s; leave it out", n, t, n, ck))
					continue
				}
			}
			if _, err := s.Add(n, ck); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if nexmarkKinds != nil {
			// The generator's fixed schema (docs/nexmark.md).
			kk, ok := nexmarkKinds[n]
			if !ok {
				errs = append(errs, fmt.Errorf("field %q is not a Nexmark field (%s)%s", n, strings.Join(nexschema.Names(), ", "), suggest.Hint(n, nexschema.Names())))
				continue
			}
			if _, err := s.Add(n, kk); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if t, ok := p.Source.Schema.Lookup(n); ok {
			kk, err := row.ParseKind(t)
			if err != nil {
				errs = append(errs, fmt.Errorf("source.schema.%s: %w", n, err))
				continue
			}
			k = kk
		}
		ingest := ""
		if c != nil {
			ingest = c.IngestTime
		}
		switch n {
		case p.EventTime.Field, p.Source.ArrivalTimeField, ingest, p.EventTime.IngestTimeField:
			if t, ok := p.Source.Schema.Lookup(n); ok && t != "timestamp" && t != "time" {
				errs = append(errs, fmt.Errorf("source.schema.%s: declared %s, but it is a time field; declare it timestamp or leave it out", n, t))
			}
			k = row.KindTime
		case ordinal:
			k = row.KindInt
		}
		if _, err := s.Add(n, k); err != nil {
			errs = append(errs, err)
		}
	}
	return s, errors.Join(errs...)
}

// compileSourceSteps compiles what runs on source records before the
// stages: the contract's checks, the dedup key, the version ordering.
func (pl *Plan) compileSourceSteps(dedupKey *expr.Parsed) error {
	src, p, c := pl.SourceSchema, pl.Spec, pl.Contract
	var errs []error
	pl.Time = TimeRules{MaxFuture: p.EventTime.MaxFutureMs(), MaxPast: p.EventTime.MaxPastMs()}
	if n := p.EventTime.IngestTimeField; n != "" {
		pl.Time.Ingest, pl.Time.HasIngest = src.Lookup(n)
		if pl.Time.HasIngest && pl.Time.Ingest.Kind != row.KindTime {
			errs = append(errs, fmt.Errorf("event_time.ingest_time_field: field %q is %s, want timestamp", n, pl.Time.Ingest.Kind))
		}
	}
	if c != nil {
		if c.IngestTime != "" {
			pl.Ingest, pl.HasIngest = src.Lookup(c.IngestTime)
		}
		ch, err := contract.Compile(c, src, pl.Ingest, pl.HasIngest)
		if err != nil {
			errs = append(errs, fmt.Errorf("contract: %w", err))
		}
		pl.Rules = ch
	}
	if d := p.Dedup; d != nil {
		k, err := expr.Compile(dedupKey, src)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("dedup.key: %w", err))
		case k.Kind() == row.KindNull || k.Kind() == row.KindBool:
			errs = append(errs, fmt.Errorf("dedup.key: %q is %s; an event id is a string or a number", d.Key, k.Kind()))
		default:
			keep := spec.DefaultKeepPayloads
			if d.KeepPayloads != nil {
				keep = *d.KeepPayloads
			}
			pl.Dedup = &Dedup{Key: k, TTL: d.TTL.Ms(), KeepPayloads: keep, Ignore: d.Ignore}
		}
	}
	if p.Source.ChangeStream() {
		kf, _ := src.Lookup(record.FieldKey)
		vf, _ := src.Lookup(record.FieldLSN)
		op, _ := src.Lookup(record.FieldOp)
		un, _ := src.Lookup(record.FieldUnchanged)
		pl.OrderBy = &OrderBy{Key: kf, Version: vf}
		pl.Changes = &Changes{Op: op, Unchanged: un}
	}
	if o := p.OrderBy; o != nil {
		kf, _ := src.Lookup(o.Key)
		vf, _ := src.Lookup(o.Version)
		if vf.Kind != row.KindInt {
			errs = append(errs, fmt.Errorf("order_by.version: field %q is %s; declare it int (source.schema or the contract)", o.Version, vf.Kind))
		} else {
			pl.OrderBy = &OrderBy{Key: kf, Version: vf, TTL: o.TTL.Ms()}
		}
	}
	return errors.Join(errs...)
}

// changelogSchema is the row layout of a stage reading an upstream stage's
// changelog.
func changelogSchema(d *changelog.Desc) *row.Schema {
	s := row.NewSchemaSize(4 + len(d.Key) + len(d.Values))
	s.Add("window_start", row.KindTime)
	s.Add("window_end", row.KindTime)
	for _, c := range d.Key {
		s.Add(c.Name, c.Kind)
	}
	for _, c := range d.Values {
		s.Add(c.Name, c.Kind)
	}
	s.Add("version", row.KindInt)
	s.Add("is_final", row.KindBool)
	return s
}

// parsedStage holds a stage's parsed (not yet type-checked) expressions.
type parsedStage struct {
	st      spec.Stage
	cache   *expr.ParseCache // the pipeline's parses, shared by its stages
	filter  *expr.Parsed
	fields  []*expr.Parsed
	aggFunc []string
	aggArgs [][]*expr.Parsed
	// topOrder and topDesc are a Top-N stage's order (stages[].top_n):
	// each expression without its desc(), and whether it was desc().
	topOrder []*expr.Parsed
	topDesc  []bool
}

func parseStage(st spec.Stage, cache *expr.ParseCache) (*parsedStage, error) {
	ps := &parsedStage{st: st, cache: cache}
	var errs []error
	if st.Filter != "" {
		f, err := cache.Parse(st.Filter)
		if err != nil {
			errs = append(errs, fmt.Errorf("filter: %w", err))
		}
		ps.filter = f
	}
	for _, f := range st.Fields {
		e, err := cache.Parse(f.Expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("fields.%s: %w", f.Name, err))
		}
		ps.fields = append(ps.fields, e)
	}
	for _, a := range st.Aggregates {
		name, args, err := cache.ParseCall(a.Expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("aggregates.%s: %w", a.Name, err))
		}
		ps.aggFunc = append(ps.aggFunc, name)
		ps.aggArgs = append(ps.aggArgs, args)
	}
	if t := st.TopN; t != nil {
		for _, o := range t.Order {
			src := strings.TrimSpace(o)
			desc := len(src) > 6 && strings.EqualFold(src[:5], "desc(") && src[len(src)-1] == ')'
			if desc {
				src = src[5 : len(src)-1]
			}
			p, err := cache.Parse(src)
			if err != nil {
				errs = append(errs, fmt.Errorf("top_n.order: %w", err))
			}
			ps.topOrder = append(ps.topOrder, p)
			ps.topDesc = append(ps.topDesc, desc)
		}
	}
	return ps, errors.Join(errs...)
}

// inputRefs lists the input fields the stage reads: identifiers that are
// not its own derived fields.
func (ps *parsedStage) inputRefs() []string {
	derived := map[string]bool{}
	for _, f := range ps.st.Fields {
		derived[f.Name] = true
	}
	set := newFieldSet()
	add := func(p *expr.Parsed) {
		if p == nil {
			return
		}
		for _, n := range p.Identifiers() {
			if !derived[n] {
				set.add(n)
			}
		}
	}
	add(ps.filter)
	for _, f := range ps.fields {
		add(f)
	}
	for _, k := range ps.st.Key {
		if !derived[k] {
			set.add(k)
		}
	}
	for _, args := range ps.aggArgs {
		for _, a := range args {
			add(a)
		}
	}
	for _, item := range ps.st.Select {
		if n, _ := spec.SelectItem(item); !derived[n] {
			set.add(n)
		}
	}
	for _, p := range ps.topOrder {
		add(p)
	}
	if t := ps.st.TopN; t != nil {
		for _, item := range t.Columns {
			if n, _ := spec.SelectItem(item); !derived[n] {
				set.add(n)
			}
		}
	}
	return set.list()
}

func compileStage(st spec.Stage, ps *parsedStage, in int, inSchema *row.Schema, etName string, shift int64, retracting bool, undeclared map[string]bool) (*Stage, error) {
	s := &Stage{Name: st.Name, Input: in, Late: st.Late, Sinks: st.Sinks, Contributions: st.Contributions, Retracting: retracting, EventTimeShift: shift}
	var errs []error
	add := func(key string, err error) { errs = append(errs, fmt.Errorf("%s: %w", key, err)) }
	// exprErr adds a compile error, noting source fields that are strings
	// only because source.schema does not declare them.
	failed := map[string]bool{} // derived fields that did not compile
	exprErr := func(key string, p *expr.Parsed, err error) {
		for _, n := range p.Identifiers() {
			if failed[n] {
				return // a knock-on error: the field's own error is reported
			}
		}
		var names []string
		for _, n := range p.Identifiers() {
			if undeclared[n] {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			err = fmt.Errorf("%w (%s not declared in source.schema, so read as string)", err, strings.Join(names, ", "))
		}
		add(key, err)
	}

	// The stage schema starts as a copy of the input layout.
	schema := inSchema.Clone(len(st.Fields) + len(st.Aggregates))
	s.InputFields = schema.Len()
	et, ok := schema.Lookup(etName)
	switch {
	case !ok:
		add("event_time.field", fmt.Errorf("%q is not a field of the input", etName))
	case et.Kind != row.KindTime:
		add("event_time.field", fmt.Errorf("%q is %s, not a timestamp", etName, et.Kind))
	}
	s.EventTime = et

	if ps.filter != nil {
		derived := map[string]bool{}
		for _, f := range st.Fields {
			derived[f.Name] = true
		}
		usesDerived := false
		for _, n := range ps.filter.Identifiers() {
			if derived[n] {
				add("filter", fmt.Errorf("uses derived field %q; the filter runs before fields are derived and may use input fields only", n))
				usesDerived = true
			}
		}
		if !usesDerived {
			f, err := expr.Compile(ps.filter, schema)
			switch {
			case err != nil:
				exprErr("filter", ps.filter, err)
			case f.Kind() != row.KindBool:
				add("filter", fmt.Errorf("%q is %s, not bool", st.Filter, f.Kind()))
			default:
				s.Filter = f
			}
		}
	}
	for i, f := range st.Fields {
		if _, exists := schema.Lookup(f.Name); exists {
			add("fields."+f.Name, fmt.Errorf("already a field of the input; choose another name"))
			continue
		}
		e, err := expr.Compile(ps.fields[i], schema)
		if err != nil {
			exprErr("fields."+f.Name, ps.fields[i], err)
			failed[f.Name] = true
			continue
		}
		k := e.Kind()
		if k == row.KindNull {
			add("fields."+f.Name, fmt.Errorf("%q is always null", f.Expr))
			continue
		}
		fd, err := schema.Add(f.Name, k)
		if err != nil {
			add("fields."+f.Name, err)
			continue
		}
		s.Derived = append(s.Derived, Derived{Field: fd, Expr: e})
	}
	if len(st.Select) > 0 {
		return compileSelect(st, s, schema, errs)
	}
	for _, k := range st.Key {
		f, ok := schema.Lookup(k)
		if !ok {
			if !failed[k] {
				add("key", fmt.Errorf("%q is not a field%s", k, closeFields(k, schema)))
			}
			continue
		}
		s.Key = append(s.Key, f)
	}
	// Aggregates: a bare field argument is read directly; any other
	// expression becomes a hidden derived field evaluated with the others,
	// so that an evaluation error quarantines the record before any state
	// changes.
	var cols []aggregate.Column
	var outs []changelog.Column
	if st.TopN != nil {
		if c, sp, o, ok := compileTopN(st, ps, s, schema, retracting, add, exprErr); ok {
			cols, outs, s.Aggs = []aggregate.Column{c}, o, []aggregate.Spec{sp}
		}
	}
	for i, a := range st.Aggregates {
		sp := aggregate.Spec{Name: a.Name, Func: ps.aggFunc[i], Retract: retracting}
		args := ps.aggArgs[i]
		if sp.Func == "top_n" {
			add("aggregates."+a.Name, errors.New("top_n is a stage of its own (top_n: {n, order, columns}), not an aggregate column"))
			continue
		}
		// argField compiles argument j to a field: a bare field is read
		// directly; any other expression becomes a hidden derived field
		// (__name, __name_2), evaluated with the others.
		argField := func(j int) (row.Field, bool) {
			arg := args[j]
			if j > 0 && (ps.aggFunc[i] == "first_by" || ps.aggFunc[i] == "last_by" || ps.aggFunc[i] == "nth_by") {
				// desc(k): k descending.
				if inner, ok := descArg(arg); ok {
					p, err := ps.cache.Parse(inner)
					if err != nil {
						add("aggregates."+a.Name, err)
						return row.Field{}, false
					}
					arg = p
					sp.Desc = append(sp.Desc, true)
				} else {
					sp.Desc = append(sp.Desc, false)
				}
			}
			e, err := expr.Compile(arg, schema)
			if err != nil {
				exprErr("aggregates."+a.Name, arg, err)
				return row.Field{}, false
			}
			if f, ok := e.IsField(); ok {
				return f, true
			}
			name := "__" + a.Name
			if j > 0 {
				name += fmt.Sprintf("_%d", j+1)
			}
			fd, err := schema.Add(name, e.Kind())
			if err != nil {
				add("aggregates."+a.Name, err)
				return row.Field{}, false
			}
			s.Derived = append(s.Derived, Derived{Field: fd, Expr: e})
			return fd, true
		}
		want := 1
		if f := ps.aggFunc[i]; f == "arg_max" || f == "arg_min" {
			want = 2
		}
		if f := ps.aggFunc[i]; f == "first_by" || f == "last_by" || f == "nth_by" {
			// first_by(y, k1, desc(k2), …): the value and the keys;
			// nth_by(y, n, k1, …) the rank n (an int literal) between.
			first := 1
			if f == "nth_by" {
				first = 2
				if len(args) < 3 {
					add("aggregates."+a.Name, fmt.Errorf("nth_by() takes the value, the rank and at least one key to order by, got %d argument(s)", len(args)))
					continue
				}
				n, err := strconv.Atoi(strings.TrimSpace(args[1].Source()))
				if err != nil || n < 1 || n > aggregate.MaxNth {
					add("aggregates."+a.Name, fmt.Errorf("nth_by(y, n, …): n is the rank, an integer 1 to %d, not %q", aggregate.MaxNth, args[1].Source()))
					continue
				}
				sp.N = n
			}
			if len(args) < first+1 {
				add("aggregates."+a.Name, fmt.Errorf("%s() takes the value and at least one key to order by, got %d argument(s)", f, len(args)))
				continue
			}
			ok := true
			sp.Arg, ok = argField(0)
			sp.HasArg = ok
			for j := first; ok && j < len(args); j++ {
				var k row.Field
				k, ok = argField(j)
				sp.Order = append(sp.Order, k)
			}
			if !ok {
				continue
			}
			c, err := aggregate.New(sp)
			if err != nil {
				add("aggregates."+a.Name, err)
				continue
			}
			cols = append(cols, c)
			outs = append(outs, changelog.Column{Name: a.Name, Kind: c.Kind()})
			s.Aggs = append(s.Aggs, sp)
			continue
		}
		if len(args) > want {
			if want == 1 {
				add("aggregates."+a.Name, fmt.Errorf("%s() takes one argument, got %d", ps.aggFunc[i], len(args)))
			} else {
				add("aggregates."+a.Name, fmt.Errorf("%s() takes two arguments, got %d", ps.aggFunc[i], len(args)))
			}
			continue
		}
		ok := true
		if len(args) >= 1 {
			sp.Arg, ok = argField(0)
			sp.HasArg = ok
		}
		if ok && len(args) == 2 {
			sp.Arg2, ok = argField(1)
			sp.HasArg2 = ok
		}
		if !ok {
			continue
		}
		c, err := aggregate.New(sp)
		if err != nil {
			if len(args) == 1 {
				exprErr("aggregates."+a.Name, args[0], err)
			} else {
				add("aggregates."+a.Name, err)
			}
			continue
		}
		cols = append(cols, c)
		outs = append(outs, changelog.Column{Name: a.Name, Kind: c.Kind()})
		s.Aggs = append(s.Aggs, sp)
	}
	for i, sk := range st.Sinks {
		if sk.Type != "postgres" || sk.Mode != "ledger" {
			continue
		}
		key := fmt.Sprintf("sinks[%d].mode", i)
		if in >= 0 {
			add(key, errors.New("ledger reads source events; this stage reads another stage's changelog"))
		}
		for _, sp := range s.Aggs {
			if !(sp.Func == "sum" || (sp.Func == "count" && !sp.HasArg)) {
				add(key, fmt.Errorf("ledger keeps additive aggregates, sum(x) and count(); %s is %s(x)", sp.Name, sp.Func))
			}
		}
	}
	mode, err := operator.ParseMode(st.Emit.Mode)
	if err != nil {
		add("emit.mode", err)
	}
	loc, err := time.LoadLocation(st.Window.Timezone)
	if err != nil {
		add("window.timezone", err)
	}
	s.Loc = loc
	cfg := operator.Config{
		AllowedLateness: st.AllowedLateness.Ms(),
		Mode:            mode,
		EarlyEvery:      st.Emit.EarlyEvery.Ms(),
		Key:             s.Key,
		Aggs:            cols,
		Ranked:          st.TopN != nil,
	}
	if st.Window.Type == "session" {
		cfg.Gap = st.Window.Gap.Ms()
	} else if st.Window.Type != "" {
		a, err := window.New(st.Window)
		if err != nil {
			add("window", err)
		}
		cfg.Assigner = a
	}
	s.Operator = cfg
	s.Schema = schema
	keyCols := make([]changelog.Column, len(s.Key))
	for i, f := range s.Key {
		keyCols[i] = changelog.Column{Name: f.Name, Kind: f.Kind}
	}
	if st.TopN != nil {
		keyCols = append(keyCols, changelog.Column{Name: st.TopN.Rank, Kind: row.KindInt})
	}
	s.Desc = changelog.Desc{
		Stage:    st.Name,
		Key:      keyCols,
		Values:   outs,
		Session:  st.Window.Type == "session",
		Timezone: st.Window.Timezone,
		EmitMode: st.Emit.Mode,
	}
	return s, errors.Join(errs...)
}

// compileTopN compiles a Top-N stage's column (stages[].top_n): the
// aggregate top_n over its order (a bare field read directly, any other
// expression a hidden derived field __top_n_<i>) and its columns, with
// the output columns it gives (the values of a rank's row; the rank is
// the last key column). ok is false when something did not compile (the
// errors are added).
func compileTopN(st spec.Stage, ps *parsedStage, s *Stage, schema *row.Schema, retracting bool, add func(string, error), exprErr func(string, *expr.Parsed, error)) (aggregate.Column, aggregate.Spec, []changelog.Column, bool) {
	t := st.TopN
	sp := aggregate.Spec{Name: t.Rank, Func: "top_n", N: t.N, Retract: retracting, Versions: st.Emit.Mode != "final"}
	ok := true
	for i, p := range ps.topOrder {
		if p == nil {
			ok = false
			continue
		}
		e, err := expr.Compile(p, schema)
		if err != nil {
			exprErr("top_n.order", p, err)
			ok = false
			continue
		}
		f, isField := e.IsField()
		if !isField {
			fd, err := schema.Add(fmt.Sprintf("__top_n_%d", i+1), e.Kind())
			if err != nil {
				add("top_n.order", err)
				ok = false
				continue
			}
			s.Derived = append(s.Derived, Derived{Field: fd, Expr: e})
			f = fd
		}
		sp.Order = append(sp.Order, f)
		sp.Desc = append(sp.Desc, ps.topDesc[i])
	}
	var outs []changelog.Column
	for _, item := range t.Columns {
		field, name := spec.SelectItem(item)
		f, found := schema.Lookup(field)
		if !found {
			add("top_n.columns", fmt.Errorf("%q is not a field%s", field, closeFields(field, schema)))
			ok = false
			continue
		}
		sp.Cols = append(sp.Cols, f)
		outs = append(outs, changelog.Column{Name: name, Kind: f.Kind})
	}
	if !ok {
		return nil, sp, nil, false
	}
	c, err := aggregate.New(sp)
	if err != nil {
		add("top_n", err)
		return nil, sp, nil, false
	}
	return c, sp, outs, true
}

// descArg reports whether an aggregate argument is desc(k), returning
// k's source.
func descArg(p *expr.Parsed) (string, bool) {
	src := strings.TrimSpace(p.Source())
	if len(src) > 6 && strings.EqualFold(src[:5], "desc(") && src[len(src)-1] == ')' {
		return src[5 : len(src)-1], true
	}
	return "", false
}

// closeFields returns " (did you mean a or b?)" listing schema fields
// close to name, or "".
func closeFields(name string, s *row.Schema) string {
	p := suggest.Phrase(expr.CloseNames(s, name))
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// compileSelect finishes a select stage: its output columns are the
// selected fields; there is no operator.
func compileSelect(st spec.Stage, s *Stage, schema *row.Schema, errs []error) (*Stage, error) {
	var cols []changelog.Column
	for _, item := range st.Select {
		n, name := spec.SelectItem(item)
		f, ok := schema.Lookup(n)
		if !ok {
			errs = append(errs, fmt.Errorf("select: %q is not a field%s", n, closeFields(n, schema)))
			continue
		}
		s.Select = append(s.Select, f)
		cols = append(cols, changelog.Column{Name: name, Kind: f.Kind})
	}
	loc, err := time.LoadLocation(st.Window.Timezone)
	if err != nil {
		errs = append(errs, fmt.Errorf("window.timezone: %w", err))
	}
	s.Loc = loc
	s.Schema = schema
	s.Desc = changelog.Desc{Stage: st.Name, Values: cols, Stateless: true, Timezone: st.Window.Timezone, EmitMode: "final"}
	return s, errors.Join(errs...)
}
