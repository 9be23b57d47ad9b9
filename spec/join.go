package spec

import (
	"fmt"
	"strings"
	"time"
)

// Input is a named input beside the pipeline's source: another file,
// Kafka topic or Nexmark stream that join stages read
// (docs/semantics.md, "Joins"). It keeps its own partitions and
// watermark. The pipeline's own source is the input named "source".
type Input struct {
	// Name identifies the input in join.left.input and join.right.input.
	// YAML `name`. Required; letters, digits, '_' and '-'; not "source",
	// "reference" or a stage's name.
	Name string `yaml:"name"`
	// Source is where the input's records come from: the keys of the
	// top-level source (type file, kafka or nexmark). YAML `source`.
	// Required.
	Source Source `yaml:"source"`
	// EventTime is the input's event-time field and watermark: the keys of
	// the top-level event_time. YAML `event_time`. Required.
	EventTime EventTime `yaml:"event_time"`
}

// Join makes a stage join two inputs (docs/semantics.md, "Joins"; the keys
// follow Flink SQL's window, interval and temporal joins). The stage's
// rows are the joined rows: a stream that later stages window and
// aggregate like any other.
type Join struct {
	// Type is "window" (rows of the same window and key pair up; Flink's
	// window join), "interval" (rows whose event times are within bounds:
	// r.ts − l.ts in [between.lower, between.upper]; Flink's interval
	// join), "regular" (an equi-join whose state is bounded by ttl: rows at
	// most ttl apart in event time pair up) or "temporal" (each left row
	// takes the right side's version valid at its event time: FOR
	// SYSTEM_TIME AS OF). YAML `type`. Required.
	Type string `yaml:"type" enum:"join type|window,interval,regular,temporal"`
	// Kind is "inner", "left" (left rows without a match are emitted with
	// the right columns null), "full" (both sides' rows without a match),
	// "semi" (left rows with at least one match, once) or "anti" (left rows
	// without a match). semi and anti only with type window; full not with
	// type temporal. YAML `kind`. Default inner.
	Kind string `yaml:"kind" enum:"join kind|inner,left,full,semi,anti"`
	// Left and Right are the two sides. YAML `left`, `right`. Required.
	Left  JoinSide `yaml:"left"`
	Right JoinSide `yaml:"right"`
	// On lists the equality keys, each "L.field = R.field" with the sides'
	// aliases (join.left.as, join.right.as); either side may be an
	// expression over one side's fields, a computed key ("B.bid.auction %
	// 10000 = S.key"). Both sides of a pair must have the same type. YAML
	// `on`. Required: at least one pair.
	On []string `yaml:"on"`
	// Between bounds an interval join: the right row's event time minus
	// the left row's must lie in [lower, upper]. YAML `between`. Required
	// with type interval.
	Between *JoinBounds `yaml:"between"`
	// Window assigns the rows of a window join to windows: the keys of the
	// top-level window, tumbling or sliding. YAML `window`. Required with
	// type window.
	Window *Window `yaml:"window"`
	// TTL bounds a regular join's state in event time: a row waits at most
	// ttl for a match on the other side, so rows more than ttl apart never
	// pair up (a regular join is the interval join with between
	// [−ttl, ttl]). YAML `ttl`. Required with type regular: without a
	// bound a regular join would keep every row for ever.
	TTL Duration `yaml:"ttl"`
	// Tombstone names a bool field of the right side of a temporal join
	// ("R.deleted"): a version whose field is true deletes the key from its
	// version time on (no match: nulls for a left join). YAML `tombstone`.
	// Default: none (every version is a value).
	Tombstone string `yaml:"tombstone"`
	// Select maps output column names to the joined fields, "L.field" or
	// "R.field", or window_start / window_end (window joins). YAML
	// `select`. Required.
	Select NamedExprs `yaml:"select"`
}

// JoinSide is one input of a join.
type JoinSide struct {
	// Input names the input: "source" (the pipeline's source, after dedup
	// and the reference data), one of inputs[].name, or an earlier stage,
	// whose rows the side reads: an aggregation in emit mode final (a row
	// at its window_end − 1 ms, Flink's window time) or a join whose rows
	// are never taken back (inner, not temporal, or emit mode final; a
	// row at its event time). YAML `input`. Default source.
	Input string `yaml:"input"`
	// As is the alias the side's fields are named with in on, select,
	// between.upper_field and tombstone ("A" in "A.id"). YAML `as`.
	// Default: the input's name. The two sides need different aliases.
	As string `yaml:"as"`
	// Filter keeps the side's records for which this expr-lang expression
	// over the input's fields is true (Flink's views of one Nexmark
	// stream: event_type == 1). YAML `filter`. Default: keep all.
	Filter string `yaml:"filter"`
}

// JoinBounds are an interval join's bounds on r.ts − l.ts.
type JoinBounds struct {
	// Lower is the least r.ts − l.ts, a Go duration that may be negative
	// ("-5m"). YAML `lower`. Default 0s.
	Lower Duration `yaml:"lower"`
	// Upper is the largest r.ts − l.ts. YAML `upper`. Required unless
	// upper_field is given.
	Upper *Duration `yaml:"upper"`
	// UpperField takes the upper bound from a timestamp field of the left
	// side ("A.auction.expires": r.ts ≤ A.expires, Nexmark q4's
	// B.ts BETWEEN A.ts AND A.expires) instead of upper. YAML
	// `upper_field`. Needs max_span.
	UpperField string `yaml:"upper_field"`
	// MaxSpan is the largest upper_field − l.ts the data may hold: how long
	// a right row can wait for its left row. A left row whose upper field
	// is further than this from its event time (or before it, or null) is
	// quarantined. YAML `max_span`. Required with upper_field.
	MaxSpan Duration `yaml:"max_span"`
}

// The join kinds and types (Join.Kind, Join.Type).
const (
	JoinInner = "inner"
	JoinLeft  = "left"
	JoinFull  = "full"
	JoinSemi  = "semi"
	JoinAnti  = "anti"
)

// validateInputs checks inputs[]: names, sources and event times, each
// message naming inputs[i].
func validateInputs(p *Pipeline, add func(key, format string, args ...any)) {
	seen := map[string]bool{}
	for i := range p.Inputs {
		in := &p.Inputs[i]
		prefix := fmt.Sprintf("inputs[%d].", i)
		switch {
		case in.Name == "":
			add(prefix+"name", "required")
		case !nameRE.MatchString(in.Name):
			add(prefix+"name", "%q must start with a letter and hold only letters, digits, '_' and '-'", in.Name)
		case in.Name == ReferenceInput && i == len(p.Inputs)-1 && isReferenceInput(p, in):
			// The versioned reference, added by Defaults for a temporal join.
		case in.Name == "source" || in.Name == ReferenceInput:
			add(prefix+"name", "%q is reserved (the pipeline's own source and reference data)", in.Name)
		case seen[in.Name]:
			add(prefix+"name", "%q used twice", in.Name)
		}
		seen[in.Name] = true
		sub := func(key, format string, args ...any) {
			add(prefix+key, format, args...)
		}
		validateSource(&in.Source, sub)
		validateSchemaComplete(&in.Source, sub)
		validateEventTime(prefix+"event_time", &in.EventTime, add)
		switch in.EventTime.From {
		case "", "payload":
		case "kafka_timestamp":
			if in.Source.Type != "kafka" {
				add(prefix+"event_time.from", "kafka_timestamp needs a kafka source")
			}
		default:
			add(prefix+"event_time.from", "%q: want payload or kafka_timestamp", in.EventTime.From)
		}
		if in.EventTime.IdleAdvance {
			add(prefix+"event_time.idle_advance", "not available for an input beside the source yet: set idle_timeout, and end the input (a bounded source) to close the last windows")
		}
		if in.Source.Type == "kafka" && in.Source.Assignment == "group" {
			add(prefix+"source.assignment", "group runs read one source: a join pipeline runs with assignment direct")
		}
	}
	for _, st := range p.Stages {
		if seen[st.Name] {
			add("inputs", "%q is both an input and a stage: rename one", st.Name)
		}
	}
}

// ReferenceInput is the input name with which a temporal join reads a
// versioned reference (join.right.input: reference).
const ReferenceInput = "reference"

// referenceSpan is the out-of-orderness of a versioned reference read as
// an input: longer than any data set, so no version of the file is late
// however the file orders its lines; the input's watermark passes the
// versions when the file ends (every version is then known).
const referenceSpan = Duration(100 * 365 * 24 * time.Hour)

// referenceInput returns the input that a temporal join reading the
// versioned reference r reads: r's file, its key and fields typed as
// declared (the key as in source.schema, else a string), valid_from a
// timestamp and the input's event time (the version time). ok is false
// when r is not versioned.
func referenceInput(p *Pipeline) (Input, bool) {
	r := p.Reference
	if r == nil || r.ValidFrom == "" || r.Path == "" {
		return Input{}, false
	}
	keyType := "string"
	if t, ok := p.Source.Schema.Lookup(r.Key); ok {
		keyType = t
	}
	schema := FieldTypes{{Name: r.Key, Type: keyType}}
	schema = append(schema, r.Fields...)
	schema = append(schema, FieldType{Name: r.ValidFrom, Type: "timestamp"})
	return Input{
		Name:      ReferenceInput,
		Source:    Source{Type: "file", Path: r.Path, Schema: schema},
		EventTime: EventTime{Field: r.ValidFrom, OutOfOrderness: referenceSpan},
	}, true
}

// readsReference reports whether a join stage reads the reference.
func readsReference(p *Pipeline) bool {
	for _, st := range p.Stages {
		if j := st.Join; j != nil && (j.Left.Input == ReferenceInput || j.Right.Input == ReferenceInput) {
			return true
		}
	}
	return false
}

// defaultInput fills in an input's defaults (those of the top-level
// source and event_time).
func defaultInput(in *Input) {
	q := Pipeline{Source: in.Source, EventTime: in.EventTime}
	q.Defaults()
	in.Source, in.EventTime = q.Source, q.EventTime
}

// InputNames returns the names a join side may read: "source" and every
// inputs[].name.
func (p *Pipeline) InputNames() []string {
	out := []string{"source"}
	for _, in := range p.Inputs {
		out = append(out, in.Name)
	}
	return out
}

// validateJoinStage checks a stage with join: the join's keys, and that
// the stage's own filter, fields, key, window, aggregates and select are
// unset (a join stage's rows are its joined rows; a side's filter is
// join.left.filter or join.right.filter).
func validateJoinStage(prefix string, p *Pipeline, s *Stage, add func(key, format string, args ...any)) {
	j := s.Join
	notHere := func(key string, set bool) {
		if set {
			add(prefix+key, "not used by a join stage: filter each side with join.left.filter or join.right.filter, and window or aggregate the joined rows in a stage reading this one")
		}
	}
	w := s.Window
	w.Timezone = ""
	notHere("filter", s.Filter != "")
	notHere("fields", len(s.Fields) > 0)
	notHere("key", len(s.Key) > 0)
	notHere("window", w != (Window{}))
	notHere("aggregates", len(s.Aggregates) > 0)
	notHere("select", len(s.Select) > 0)
	notHere("top_n", s.TopN != nil)
	notHere("contributions", s.Contributions != nil)
	if s.Input != "" && s.Input != "source" {
		add(prefix+"input", "not used by a join stage: its inputs are join.left.input and join.right.input")
	}
	jp := prefix + "join."
	inputs := map[string]bool{}
	inputList := p.InputNames()
	for _, n := range inputList {
		inputs[n] = true
	}
	// The stages before this one: a side may read their rows.
	for _, st := range p.Stages {
		if st.Name == s.Name {
			break
		}
		inputs[st.Name] = true
		inputList = append(inputList, st.Name)
	}
	switch j.Type {
	case "window", "interval", "regular", "temporal":
	case "":
		add(jp+"type", "required (window, interval, regular or temporal)")
	default:
		add(jp+"type", "unknown join type %q (want window, interval, regular or temporal)", j.Type)
	}
	switch j.Kind {
	case JoinInner, JoinLeft:
	case JoinFull:
		if j.Type == "temporal" {
			add(jp+"kind", "full: a temporal join keeps the left rows (inner or left); versions without a probe are not rows")
		}
	case JoinSemi, JoinAnti:
		if j.Type != "window" && j.Type != "" {
			add(jp+"kind", "%s: only with type window (the set of matches of a left row is known when its window closes)", j.Kind)
		}
	default:
		add(jp+"kind", "unknown join kind %q (want inner, left, full, semi or anti)", j.Kind)
	}
	alias := [2]string{}
	for i, sd := range []*JoinSide{&j.Left, &j.Right} {
		key := jp + [2]string{"left", "right"}[i]
		if sd.Input == ReferenceInput {
			r := p.Reference
			switch {
			case i == 0 || j.Type != "temporal":
				add(key+".input", "%q: the reference data is joined as versions, as the right side of a temporal join (type temporal, right.input: reference)", sd.Input)
			case r == nil:
				add(key+".input", "%q: the pipeline has no reference (the top-level key reference)", sd.Input)
			case r.ValidFrom == "":
				add(key+".input", "%q: a temporal join needs the reference's version-time column: set reference.valid_from (the column with each version's valid-from time) in %s", sd.Input, orAlias(r.Path, r.Topic))
			case r.Topic != "":
				add(key+".input", "%q: a temporal join stage reads a reference file (reference.path); a Kafka reference's fields are joined as of each record's time through reference.fields, or declare the topic as an input (inputs[]) and join it as versions", sd.Input)
			}
			alias[i] = sd.As
			continue
		}
		if !inputs[sd.Input] {
			add(key+".input", "%q is not an input or an earlier stage (inputs and stages: %s)", sd.Input, strings.Join(inputList, ", "))
		}
		alias[i] = sd.As
		if sd.As != "" && !aliasRE.MatchString(sd.As) {
			add(key+".as", "%q: an alias starts with a letter and holds only letters, digits and '_'", sd.As)
		}
	}
	if alias[0] != "" && alias[0] == alias[1] {
		add(jp+"right.as", "%q is also the left side's alias: name the sides apart (join.left.as, join.right.as)", alias[1])
	}
	if len(j.On) == 0 {
		add(jp+"on", "required: the equality keys, e.g. [\"%s.id = %s.seller\"]", orAlias(alias[0], "L"), orAlias(alias[1], "R"))
	}
	for k, eq := range j.On {
		l, r, ok := strings.Cut(eq, "=")
		if !ok || strings.TrimSpace(l) == "" || strings.TrimSpace(r) == "" || strings.Contains(r, "=") {
			add(fmt.Sprintf("%son[%d]", jp, k), "%q: want \"<left alias>.<field> = <right alias>.<field>\"", eq)
		}
	}
	b := j.Between
	switch j.Type {
	case "interval":
		switch {
		case b == nil:
			add(jp+"between", "required with type interval: the bounds of r.ts − l.ts, e.g. {lower: 0s, upper: 1h}")
		case b.Upper == nil && b.UpperField == "":
			add(jp+"between.upper", "required with type interval (or upper_field with max_span): an interval join without an upper bound keeps every row for ever")
		case b.Upper != nil && b.UpperField != "":
			add(jp+"between.upper_field", "give upper or upper_field, not both")
		case b.Upper != nil && *b.Upper < b.Lower:
			add(jp+"between.upper", "%s is less than lower %s", *b.Upper, b.Lower)
		case b.UpperField != "" && b.MaxSpan <= 0:
			add(jp+"between.max_span", "required and positive with upper_field: the largest upper_field − l.ts (how long a right row may wait for its left row)")
		case b.UpperField != "" && b.MaxSpan < b.Lower:
			add(jp+"between.max_span", "%s is less than lower %s: no right row could match", b.MaxSpan, b.Lower)
		}
		if b != nil {
			wholeMs(jp+"between.lower", b.Lower, add)
			if b.Upper != nil {
				wholeMs(jp+"between.upper", *b.Upper, add)
			}
			wholeMs(jp+"between.max_span", b.MaxSpan, add)
			if b.UpperField == "" && b.MaxSpan != 0 {
				add(jp+"between.max_span", "only with upper_field")
			}
		}
	default:
		if b != nil {
			add(jp+"between", "only with type interval")
		}
	}
	switch j.Type {
	case "window":
		if j.Window == nil {
			add(jp+"window", "required with type window, e.g. {type: tumbling, size: 10s}")
		} else {
			jw := *j.Window
			switch jw.Type {
			case "tumbling", "sliding":
				tmp := Stage{Window: jw, Aggregates: NamedExprs{{Name: "x", Expr: "count()"}}, Emit: Emit{Mode: "final"}, Late: Late{Policy: "drop"}}
				validateStage(jp, &tmp, add)
			case "session":
				add(jp+"window.type", "session: a window join pairs rows of fixed windows (tumbling or sliding); sessions of the two sides would differ")
			default:
				add(jp+"window.type", "required: tumbling or sliding")
			}
		}
	default:
		if j.Window != nil {
			add(jp+"window", "only with type window")
		}
	}
	switch j.Type {
	case "regular":
		if j.TTL <= 0 {
			add(jp+"ttl", "required with type regular: a regular join without a bound keeps every row for ever (Flink's default); ttl bounds it in event time")
		}
		wholeMs(jp+"ttl", j.TTL, add)
	default:
		if j.TTL != 0 {
			add(jp+"ttl", "only with type regular (the other types are bounded by their window, bounds or versions)")
		}
	}
	if j.Tombstone != "" && j.Type != "temporal" {
		add(jp+"tombstone", "only with type temporal")
	}
	if len(j.Select) == 0 {
		add(jp+"select", "required: the output columns, e.g. {id: %s.id, seller: %s.seller}", orAlias(alias[0], "L"), orAlias(alias[1], "R"))
	}
	names := map[string]bool{}
	for _, c := range j.Select {
		switch {
		case names[c.Name]:
			add(jp+"select."+c.Name, "listed twice")
		case reserved[strings.ToLower(c.Name)] || c.Name == "event_time":
			add(jp+"select."+c.Name, "%q is a reserved output column: name it otherwise", c.Name)
		}
		names[c.Name] = true
	}
	if s.Emit.EarlyEvery != 0 {
		add(prefix+"emit.early_every", "not used by a join stage: its rows are emitted when the watermarks allow")
	}
	if p.Source.Type == "kafka" && p.Source.Assignment == "group" {
		add(prefix+"join", "not available with source.assignment: group yet (a group run's repartition topic carries one source's records): run the join with assignment direct")
	}
	// The stage keys a join shares with a windowed stage: lateness, emit
	// mode, late policy and sinks (the window and aggregate are stand-ins).
	rest := *s
	rest.Join, rest.Filter, rest.Fields, rest.Key, rest.Select, rest.Contributions = nil, "", nil, nil, nil, nil
	rest.Window = Window{Type: "tumbling", Size: Duration(time.Millisecond), Timezone: s.Window.Timezone}
	rest.Aggregates = NamedExprs{{Name: "n", Expr: "count()"}}
	rest.Emit.EarlyEvery = 0
	validateStage(prefix, &rest, add)
	for i := range s.Sinks {
		if t := s.Sinks[i].Type; t == "sqlite" || t == "postgres" || t == "iceberg" {
			add(fmt.Sprintf("%ssinks[%d].type", prefix, i), "a join's rows have no key for an upsert table: write them to jsonl, parquet, stdout or kafka, or aggregate them in a stage reading this one")
		}
	}
}

var aliasRE = nameRE

func orAlias(a, def string) string {
	if a == "" {
		return def
	}
	return a
}

// defaultJoin fills in a join's defaults: kind inner, sides reading the
// source, aliases from the input names, the window's zone.
func defaultJoin(j *Join) {
	if j.Kind == "" {
		j.Kind = JoinInner
	}
	for _, sd := range []*JoinSide{&j.Left, &j.Right} {
		if sd.Input == "" {
			sd.Input = "source"
		}
		if sd.As == "" {
			sd.As = sd.Input
		}
	}
	if j.Window != nil && j.Window.Timezone == "" {
		j.Window.Timezone = "UTC"
	}
	if j.Between != nil && j.Between.Upper == nil && j.Between.UpperField == "" && j.Type == "regular" {
		j.Between = nil
	}
}

// JoinMs returns a join's interval bounds in ms (lower, upper; upper is
// max_span with upper_field), for type interval and regular (±ttl).
func (j *Join) JoinMs() (lower, upper int64) {
	switch j.Type {
	case "regular":
		return -j.TTL.Ms(), j.TTL.Ms()
	case "interval":
		if b := j.Between; b != nil {
			if b.Upper != nil {
				return b.Lower.Ms(), b.Upper.Ms()
			}
			return b.Lower.Ms(), b.MaxSpan.Ms()
		}
	}
	return 0, 0
}

// isReferenceInput reports whether in is the input Defaults adds for a
// temporal join over the versioned reference.
func isReferenceInput(p *Pipeline, in *Input) bool {
	want, ok := referenceInput(p)
	if !ok {
		return false
	}
	q := Pipeline{Inputs: []Input{want}}
	defaultInput(&q.Inputs[0])
	return in.Source.Type == "file" && in.Source.Path == want.Source.Path && in.EventTime.Field == want.EventTime.Field && in.EventTime.OutOfOrderness == q.Inputs[0].EventTime.OutOfOrderness
}
