package plan

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/join"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/window"
)

// InputJoin is Stage.Input of a join stage: its inputs are its sides'.
const InputJoin = -2

// Input is a compiled named input (spec.Input): what its source decodes,
// its event time and timestamp rules. Input numbers: 0 is the pipeline's
// source, i ≥ 1 is Plan.Inputs[i−1].
type Input struct {
	Name string
	Spec *spec.Input
	// Schema holds the fields the joins read of the input (and its
	// event-time field), typed like a source's.
	Schema *row.Schema
	// TimeParsers maps the indexes of timestamp fields to their parsers.
	TimeParsers map[int]*eventtime.Parser
	// EventTime is the input's event-time field.
	EventTime row.Field
	// Time holds the input's timestamp rules (max_future, max_past,
	// ingest_time_field).
	Time TimeRules
}

// Join is a compiled join stage (spec.Join).
type Join struct {
	Spec *spec.Join
	// Config is the operator's configuration; KeyGroups and Groups are
	// set per task.
	Config join.Config
	// Sides are the left and right inputs.
	Sides [2]JoinSide
	// Hold is join.HoldBack: how far the output watermark trails each
	// side's watermark, ms.
	Hold [2]int64
	// Regular marks a regular join (an interval join with ±ttl).
	Regular bool
}

// JoinSide is one compiled side of a join.
type JoinSide struct {
	// Input is the input number (0: the source), −1 for a side reading a
	// stage.
	Input int
	// Stage is the index of the earlier stage whose rows the side reads,
	// −1 for a side reading an input; Shift is added to the rows'
	// event-time field (−1 ms for an aggregation's window_end).
	Stage int
	Shift int64
	// Name is the input's name and Alias the side's.
	Name, Alias string
	// Schema is the input's row layout; EventTime its event-time field.
	Schema    *row.Schema
	EventTime row.Field
	// Filter keeps the side's records (nil: all).
	Filter *expr.Expr
	// Key are the equality key fields, in join.on order. A key computed
	// by an expression (join.on "B.bid.auction % 10000 = S.key") has
	// Index −1 here, its name the expression's text, its kind the
	// expression's; KeyExprs holds its expression.
	Key []row.Field
	// KeyExprs are, per key, the compiled expression of a computed key,
	// nil for a field.
	KeyExprs []*expr.Expr
	// Keep are the fields kept in the join's state (join.Config.Keep's
	// order): the side's output columns, then an upper-bound or tombstone
	// field.
	Keep []row.Field
	// UpperField is the left side's upper-bound field (HasUpper false
	// without one): the task quarantines rows whose bound is null, before
	// their event time or beyond max_span.
	UpperField row.Field
	HasUpper   bool
}

// InputCount returns the number of inputs: the source and inputs[].
func (p *Plan) InputCount() int { return 1 + len(p.Inputs) }

// InputName returns input i's name.
func (p *Plan) InputName(i int) string {
	if i == 0 {
		return "source"
	}
	return p.Inputs[i-1].Name
}

// joinRef is one field a join names: its side and the field's name; or,
// for one side of a join.on pair, an expression over the side's fields
// (expr set, field its text without the alias).
type joinRef struct {
	side  int
	field string
	key   string // the join key naming it ("join.on[0]")
	expr  *expr.Parsed
}

// fieldRefRE matches a plain "<alias>.<field>" reference.
var fieldRefRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_.]*)$`)

// parseJoinTerm parses one side of a join.on pair: "<alias>.<field>", or
// an expression whose fields are all named "<alias>.<field>" with one
// side's alias ("B.bid.auction % 10000"), which computes the key.
func parseJoinTerm(j *spec.Join, term, key string) (joinRef, error) {
	term = strings.TrimSpace(term)
	if fieldRefRE.MatchString(term) {
		return parseJoinRef(j, term, key)
	}
	side := -1
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_."'])(` + regexp.QuoteMeta(j.Left.As) + `|` + regexp.QuoteMeta(j.Right.As) + `)\.`)
	for _, m := range re.FindAllStringSubmatch(term, -1) {
		s := join.L
		if m[2] == j.Right.As {
			s = join.R
		}
		if side >= 0 && s != side {
			return joinRef{}, fmt.Errorf("%s: %q names fields of both sides; each side of an equality key is computed from one side's fields", key, term)
		}
		side = s
	}
	if side < 0 {
		return joinRef{}, fmt.Errorf("%s: %q: name a field as <alias>.<field> with the sides' aliases %q (left) or %q (right), or compute the key from them", key, term, j.Left.As, j.Right.As)
	}
	text := re.ReplaceAllString(term, "$1")
	p, err := expr.Parse(text)
	if err != nil {
		return joinRef{}, fmt.Errorf("%s: %q: %w", key, term, err)
	}
	return joinRef{side: side, field: text, key: key, expr: p}, nil
}

// parseJoinRef splits "alias.field" into its side and field.
func parseJoinRef(j *spec.Join, ref, key string) (joinRef, error) {
	ref = strings.TrimSpace(ref)
	a, f, ok := strings.Cut(ref, ".")
	if ok && f != "" {
		switch a {
		case j.Left.As:
			return joinRef{side: join.L, field: f, key: key}, nil
		case j.Right.As:
			return joinRef{side: join.R, field: f, key: key}, nil
		}
	}
	return joinRef{}, fmt.Errorf("%s: %q: name a field as <alias>.<field> with the sides' aliases %q (left) or %q (right)", key, ref, j.Left.As, j.Right.As)
}

// joinRefs lists every field a join names, per side: the on pairs, the
// selected columns, the upper field and tombstone, the filters'
// identifiers.
func joinRefs(j *spec.Join) (refs []joinRef, filters [2]*expr.Parsed, err error) {
	var errs []error
	var computed []joinRef // the fields of computed keys
	for k, eq := range j.On {
		l, r, _ := strings.Cut(eq, "=")
		key := fmt.Sprintf("join.on[%d]", k)
		a, err1 := parseJoinTerm(j, l, key)
		b, err2 := parseJoinTerm(j, r, key)
		if err1 != nil || err2 != nil {
			errs = append(errs, errors.Join(err1, err2))
			continue
		}
		if a.side == b.side {
			errs = append(errs, fmt.Errorf("%s: %q compares two fields of one side; an equality key pairs a left field with a right one", key, eq))
			continue
		}
		refs = append(refs, a, b)
		for _, x := range []joinRef{a, b} {
			if x.expr != nil {
				for _, n := range x.expr.Identifiers() {
					computed = append(computed, joinRef{side: x.side, field: n, key: "the key computed in " + key})
				}
			}
		}
	}
	defer func() { refs = append(refs, computed...) }()
	for _, c := range j.Select {
		if c.Expr == "window_start" || c.Expr == "window_end" {
			continue
		}
		r, err := parseJoinRef(j, c.Expr, "join.select."+c.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		refs = append(refs, r)
	}
	if b := j.Between; b != nil && b.UpperField != "" {
		r, err := parseJoinRef(j, b.UpperField, "join.between.upper_field")
		if err != nil {
			errs = append(errs, err)
		} else {
			refs = append(refs, r)
		}
	}
	if j.Tombstone != "" {
		r, err := parseJoinRef(j, j.Tombstone, "join.tombstone")
		if err != nil {
			errs = append(errs, err)
		} else {
			refs = append(refs, r)
		}
	}
	for s, sd := range []spec.JoinSide{j.Left, j.Right} {
		if sd.Filter == "" {
			continue
		}
		p, err := expr.Parse(sd.Filter)
		if err != nil {
			errs = append(errs, fmt.Errorf("join.%s.filter: %w", [2]string{"left", "right"}[s], err))
			continue
		}
		filters[s] = p
		for _, n := range p.Identifiers() {
			refs = append(refs, joinRef{side: s, field: n, key: "join." + [2]string{"left", "right"}[s] + ".filter"})
		}
	}
	return refs, filters, errors.Join(errs...)
}

// inputIndex returns the input number of a side's input name.
func inputIndex(p *spec.Pipeline, name string) int {
	if name == "" || name == "source" {
		return 0
	}
	for i, in := range p.Inputs {
		if in.Name == name {
			return i + 1
		}
	}
	return -1
}

// joinNeeds adds to needs[i] the fields each join reads of input i, and
// returns the field uses of the source's (for checkSourceFields).
func joinNeeds(p *spec.Pipeline, stages []spec.Stage, needs []*fieldSet) ([]fieldUse, error) {
	var uses []fieldUse
	var errs []error
	for _, st := range stages {
		j := st.Join
		if j == nil {
			continue
		}
		refs, _, err := joinRefs(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			continue
		}
		for _, r := range refs {
			if r.expr != nil {
				continue // a computed key: its fields are listed apart
			}
			in := inputIndex(p, [2]string{j.Left.Input, j.Right.Input}[r.side])
			if in < 0 {
				continue // Validate names it
			}
			needs[in].add(r.field)
			if in == 0 {
				uses = append(uses, fieldUse{r.field, st.Name + ": " + r.key})
			}
		}
	}
	return uses, errors.Join(errs...)
}

// compileInputs compiles inputs[]: each input's schema of the fields in
// its need set, its parsers and rules. Errors name inputs[i].
func (pl *Plan) compileInputs(needs []*fieldSet) error {
	p := pl.Spec
	var errs []error
	for i := range p.Inputs {
		in := &p.Inputs[i]
		prefix := fmt.Sprintf("inputs[%d] (%s): ", i, in.Name)
		need := needs[i+1]
		need.add(in.EventTime.Field)
		need.add(in.EventTime.IngestTimeField)
		need.add(in.Source.PartitionField)
		need.add(in.Source.ArrivalTimeField)
		if o := in.Source.Ordinal; o != nil {
			need.add(o.Field)
			need.add(o.Per)
		}
		if r := in.Source.Replay; r != nil {
			need.add(r.PartitionBy)
			need.add(r.ConflictField)
		}
		q := &spec.Pipeline{Name: p.Name, Source: in.Source, EventTime: in.EventTime}
		if l := SourceFields(q, nil); l != nil {
			for _, n := range need.list() {
				if !l.Has(n) {
					errs = append(errs, fmt.Errorf("%s%q is not among the fields of %s%s", prefix, n, l.From, suggest.Hint(n, l.Names)))
				}
			}
		}
		s, err := sourceSchema(q, need.list(), nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%w", prefix, err))
			continue
		}
		ci := &Input{Name: in.Name, Spec: in, Schema: s, TimeParsers: map[int]*eventtime.Parser{}}
		etp, err := eventtime.New(in.EventTime)
		if err != nil {
			errs = append(errs, fmt.Errorf("%sevent_time: %w", prefix, err))
			continue
		}
		for _, f := range s.Fields {
			if f.Kind != row.KindTime {
				continue
			}
			if f.Name == in.EventTime.Field {
				ci.TimeParsers[f.Index] = etp
			} else {
				ci.TimeParsers[f.Index] = &eventtime.Parser{}
			}
		}
		ci.EventTime, _ = s.Lookup(in.EventTime.Field)
		ci.Time = TimeRules{MaxFuture: in.EventTime.MaxFutureMs(), MaxPast: in.EventTime.MaxPastMs()}
		if n := in.EventTime.IngestTimeField; n != "" {
			ci.Time.Ingest, ci.Time.HasIngest = s.Lookup(n)
			if ci.Time.HasIngest && ci.Time.Ingest.Kind != row.KindTime {
				errs = append(errs, fmt.Errorf("%sevent_time.ingest_time_field: field %q is %s, want timestamp", prefix, n, ci.Time.Ingest.Kind))
			}
		}
		pl.Inputs = append(pl.Inputs, ci)
	}
	return errors.Join(errs...)
}

// inputSchema returns input i's schema and event-time field.
func (pl *Plan) inputSchema(i int) (*row.Schema, row.Field) {
	if i == 0 {
		f, _ := pl.SourceSchema.Lookup(pl.EventTimeField)
		return pl.SourceSchema, f
	}
	in := pl.Inputs[i-1]
	return in.Schema, in.EventTime
}

// compileJoin compiles join stage st.
func (pl *Plan) compileJoin(st spec.Stage) (*Stage, error) {
	j := st.Join
	s := &Stage{Name: st.Name, Input: InputJoin, Late: st.Late, Sinks: st.Sinks}
	var errs []error
	add := func(key string, err error) { errs = append(errs, fmt.Errorf("%s: %w", key, err)) }
	refs, filters, err := joinRefs(j)
	if err != nil {
		return nil, err
	}
	cj := &Join{Spec: j, Regular: j.Type == "regular"}
	c := &cj.Config
	c.UpperCol, c.TombCol = -1, -1
	c.Lateness = st.AllowedLateness.Ms()
	mode, err := operator.ParseMode(st.Emit.Mode)
	if err != nil {
		add("emit.mode", err)
	}
	c.Mode = mode
	switch j.Type {
	case "window":
		c.Type = join.Window
	case "interval", "regular":
		c.Type = join.Interval
		c.Lower, c.Upper = j.JoinMs()
	case "temporal":
		c.Type = join.Temporal
	default:
		return nil, fmt.Errorf("join.type: %q", j.Type)
	}
	c.Kind = map[string]join.Kind{spec.JoinInner: join.Inner, spec.JoinLeft: join.Left, spec.JoinFull: join.Full, spec.JoinSemi: join.Semi, spec.JoinAnti: join.Anti}[j.Kind]
	sideKey := [2]string{"join.left", "join.right"}
	for sdi, sd := range []spec.JoinSide{j.Left, j.Right} {
		in := inputIndex(pl.Spec, sd.Input)
		if in < 0 {
			side, err := pl.stageSide(sd, st.Name)
			if err != nil {
				add(sideKey[sdi]+".input", err)
				continue
			}
			if f := filters[sdi]; f != nil {
				e, err := expr.Compile(f, side.Schema)
				switch {
				case err != nil:
					add(sideKey[sdi]+".filter", err)
				case e.Kind() != row.KindBool:
					add(sideKey[sdi]+".filter", fmt.Errorf("%q is %s, not bool", sd.Filter, e.Kind()))
				default:
					side.Filter = e
				}
			}
			cj.Sides[sdi] = side
			continue
		}
		if in == 0 && (pl.Spec.OrderBy != nil || pl.Spec.Source.ChangeStream()) {
			add(sideKey[sdi]+".input", fmt.Errorf("the source with order_by is an upsert stream (a newer version retracts the older); a join reads insert-only inputs"))
			continue
		}
		schema, et := pl.inputSchema(in)
		side := JoinSide{Input: in, Stage: -1, Name: pl.InputName(in), Alias: sd.As, Schema: schema, EventTime: et}
		if f := filters[sdi]; f != nil {
			e, err := expr.Compile(f, schema)
			switch {
			case err != nil:
				add(sideKey[sdi]+".filter", err)
			case e.Kind() != row.KindBool:
				add(sideKey[sdi]+".filter", fmt.Errorf("%q is %s, not bool", sd.Filter, e.Kind()))
			default:
				side.Filter = e
			}
		}
		cj.Sides[sdi] = side
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	lookup := func(r joinRef) (row.Field, bool) {
		sd := &cj.Sides[r.side]
		f, ok := sd.Schema.Lookup(r.field)
		if !ok {
			add(r.key, fmt.Errorf("%s.%s: %q is not a field of input %s%s", sd.Alias, r.field, r.field, sd.Name, closeFields(r.field, sd.Schema)))
		}
		return f, ok
	}
	// A computed key: its expression over the side's fields, compiled.
	keyOf := func(r joinRef) (row.Field, *expr.Expr, bool) {
		if r.expr == nil {
			f, ok := lookup(r)
			return f, nil, ok
		}
		sd := &cj.Sides[r.side]
		e, err := expr.Compile(r.expr, sd.Schema)
		if err != nil {
			add(r.key, fmt.Errorf("the key %s computed from %s: %w", r.field, sd.Alias, err))
			return row.Field{}, nil, false
		}
		return row.Field{Name: r.field, Kind: e.Kind(), Index: -1, Slot: -1}, e, true
	}
	// The equality keys: pairs of one type.
	for k := 0; k+1 < len(refs) && strings.HasPrefix(refs[k].key, "join.on["); k += 2 {
		a, b := refs[k], refs[k+1]
		if a.side == join.R {
			a, b = b, a
		}
		fa, ea, oka := keyOf(a)
		fb, eb, okb := keyOf(b)
		if !oka || !okb {
			continue
		}
		if fa.Kind != fb.Kind {
			add(a.key, fmt.Errorf("%s.%s is %s and %s.%s is %s: the fields of an equality key must have the same type (declare them alike in source.schema)",
				j.Left.As, fa.Name, fa.Kind, j.Right.As, fb.Name, fb.Kind))
			continue
		}
		cj.Sides[join.L].Key = append(cj.Sides[join.L].Key, fa)
		cj.Sides[join.R].Key = append(cj.Sides[join.R].Key, fb)
		cj.Sides[join.L].KeyExprs = append(cj.Sides[join.L].KeyExprs, ea)
		cj.Sides[join.R].KeyExprs = append(cj.Sides[join.R].KeyExprs, eb)
	}
	keep := func(side int, f row.Field) int {
		sd := &cj.Sides[side]
		for i, k := range sd.Keep {
			if k.Index == f.Index {
				return i
			}
		}
		sd.Keep = append(sd.Keep, f)
		return len(sd.Keep) - 1
	}
	var cols []changelog.Column
	for _, sc := range j.Select {
		switch sc.Expr {
		case "window_start", "window_end":
			if c.Type != join.Window {
				add("join.select."+sc.Name, fmt.Errorf("%s: only a window join has windows", sc.Expr))
				continue
			}
			side := join.WindowStart
			if sc.Expr == "window_end" {
				side = join.WindowEnd
			}
			c.Columns = append(c.Columns, join.Column{Side: side})
			cols = append(cols, changelog.Column{Name: sc.Name, Kind: row.KindTime})
			continue
		}
		r, _ := parseJoinRef(j, sc.Expr, "join.select."+sc.Name)
		f, ok := lookup(r)
		if !ok {
			continue
		}
		if r.side == join.R && (c.Kind == join.Semi || c.Kind == join.Anti) {
			add("join.select."+sc.Name, fmt.Errorf("%s: a %s join emits left rows only", sc.Expr, j.Kind))
			continue
		}
		c.Columns = append(c.Columns, join.Column{Side: int8(r.side), Col: keep(r.side, f)})
		cols = append(cols, changelog.Column{Name: sc.Name, Kind: f.Kind})
	}
	if b := j.Between; b != nil && b.UpperField != "" {
		r, _ := parseJoinRef(j, b.UpperField, "join.between.upper_field")
		if f, ok := lookup(r); ok {
			switch {
			case r.side != join.L:
				add("join.between.upper_field", fmt.Errorf("%s: the upper bound is a field of the left side (%s)", b.UpperField, j.Left.As))
			case f.Kind != row.KindTime:
				add("join.between.upper_field", fmt.Errorf("%s is %s, not a timestamp", b.UpperField, f.Kind))
			default:
				c.UpperCol = keep(join.L, f)
				cj.Sides[join.L].UpperField, cj.Sides[join.L].HasUpper = f, true
			}
		}
	}
	if j.Tombstone != "" {
		r, _ := parseJoinRef(j, j.Tombstone, "join.tombstone")
		if f, ok := lookup(r); ok {
			switch {
			case r.side != join.R:
				add("join.tombstone", fmt.Errorf("%s: a tombstone is a field of the versioned (right) side %s", j.Tombstone, j.Right.As))
			case f.Kind != row.KindBool:
				add("join.tombstone", fmt.Errorf("%s is %s, not bool (declare it bool in the input's source.schema)", j.Tombstone, f.Kind))
			default:
				c.TombCol = keep(join.R, f)
			}
		}
	}
	for sdi := range cj.Sides {
		if len(cj.Sides[sdi].Keep) > join.MaxKept {
			add(sideKey[sdi], fmt.Errorf("keeps %d columns; at most %d", len(cj.Sides[sdi].Keep), join.MaxKept))
		}
		for _, f := range cj.Sides[sdi].Keep {
			c.Keep[sdi] = append(c.Keep[sdi], f.Kind)
		}
	}
	loc := time.UTC
	tz := "UTC"
	if c.Type == join.Window && j.Window != nil {
		a, err := window.New(*j.Window)
		if err != nil {
			add("join.window", err)
		} else {
			c.Assigner = a
		}
		tz = j.Window.Timezone
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	} else if st.Window.Timezone != "" {
		tz = st.Window.Timezone
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cj.Hold = join.HoldBack(c)
	s.Join = cj
	s.Loc = loc
	s.Operator = operator.Config{AllowedLateness: c.Lateness, Mode: mode}
	s.Desc = changelog.Desc{Stage: st.Name, Values: cols, Stateless: true, Timezone: tz, EmitMode: st.Emit.Mode}
	// The stage's schema is its output (for stages reading it: joinSchema).
	s.Schema = joinSchema(&s.Desc)
	s.InputFields = s.Schema.Len()
	return s, nil
}

// stageSide compiles a join side reading an earlier stage's rows: an
// aggregation in emit mode final (its changelog's columns, the event
// time window_end − 1 ms) or a join that never takes a row back (its
// columns, the event time event_time).
func (pl *Plan) stageSide(sd spec.JoinSide, self string) (JoinSide, error) {
	k := -1
	for i, s := range pl.Stages {
		if s != nil && s.Name == sd.Input {
			k = i
		}
	}
	if k < 0 {
		return JoinSide{}, fmt.Errorf("%q is not an input or an earlier stage (a stage that failed to compile is reported apart)", sd.Input)
	}
	up := pl.Stages[k]
	side := JoinSide{Input: -1, Stage: k, Name: up.Name, Alias: sd.As}
	var etName string
	switch {
	case up.Join != nil:
		if joinRetracts(up.Join) {
			return JoinSide{}, fmt.Errorf("%q is a join whose rows may be taken back (emit mode %s, kind %s): a join reads rows that stay (emit mode final, or an inner join)", sd.Input, up.Desc.EmitMode, up.Join.Spec.Kind)
		}
		side.Schema, etName = up.Schema, "event_time"
	case up.Desc.Stateless:
		return JoinSide{}, fmt.Errorf("%q is a select stage, whose rows no other stage reads: join its input with the select's filter instead", sd.Input)
	default:
		if up.Desc.EmitMode != "final" {
			return JoinSide{}, fmt.Errorf("%q emits mode %s: a join reads rows that stay, an aggregation in emit mode final", sd.Input, up.Desc.EmitMode)
		}
		side.Schema, etName, side.Shift = changelogSchema(&up.Desc), "window_end", -1
	}
	side.EventTime, _ = side.Schema.Lookup(etName)
	return side, nil
}

// joinSchema is the row layout of a stage reading a join's rows: the
// row's event time (event_time), then the join's output columns.
func joinSchema(d *changelog.Desc) *row.Schema {
	s := row.NewSchemaSize(1 + len(d.Values))
	s.Add("event_time", row.KindTime)
	for _, c := range d.Values {
		s.Add(c.Name, c.Kind)
	}
	return s
}

// joinRetracts reports whether a join's rows may carry retractions: in
// modes update and retract, any kind but an inner window or interval join
// (whose pairs never change).
func joinRetracts(j *Join) bool {
	if j.Config.Mode == operator.Final {
		return false
	}
	return !(j.Config.Kind == join.Inner && j.Config.Type != join.Temporal)
}

// JoinsInput reports whether some join reads input i, with the joins'
// stage indexes.
func (p *Plan) JoinsInput(i int) []int {
	var out []int
	for si, st := range p.Stages {
		if st.Join == nil {
			continue
		}
		if st.Join.Sides[0].Input == i || st.Join.Sides[1].Input == i {
			out = append(out, si)
		}
	}
	return slices.Compact(out)
}
