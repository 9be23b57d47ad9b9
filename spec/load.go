package spec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Load reads, expands and decodes the pipeline file at path, applies
// defaults and validates it. Errors name the file and, for YAML problems,
// the line and column.
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a pipeline from YAML (name is used in error messages),
// expanding ${VAR} and ${VAR:-default} from the environment first, then
// applies Defaults and Validate. Unknown keys are errors. A pipeline that
// names a contract is validated after the contract fills in its keys:
// decode it with Decode and use tidemark.Compile.
func Parse(name string, data []byte) (*Pipeline, error) {
	p, err := Decode(name, data)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// Decode decodes a pipeline from YAML like Parse, without applying
// defaults or validating it.
func Decode(name string, data []byte) (*Pipeline, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte-order mark
	data, err := ExpandEnv(data, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var p Pipeline
	if err := decode(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, true))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty pipeline file", name)
	}
	return &p, nil
}

// decode unmarshals data into p, unknown keys being errors: CheckKeys
// names the first in the file (with the keys close to it), and the values
// of keys with a fixed set of values or a refused zero. A panic of the
// YAML library becomes an error: goccy/go-yaml v1.19.2 dereferences nil on
// a tag without a value where a list is expected ("key: !foo"; upstream
// issue goccy/go-yaml#735, found by FuzzParse).
func decode(data []byte, p *Pipeline) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode the YAML (the decoder failed: %v); check for a tag such as !foo without a value", r)
		}
	}()
	if err := CheckKeys(data, p); err != nil {
		return err
	}
	return yaml.UnmarshalWithOptions(data, p, yaml.DisallowUnknownField())
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// ExpandEnv replaces ${VAR} with the variable's value and ${VAR:-default}
// with the value or, when unset or empty, the default. A ${VAR} that is
// unset is an error naming it.
func ExpandEnv(data []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var missing []string
	expand := func(m []byte) []byte {
		sub := envRef.FindSubmatch(m)
		name := string(sub[1])
		v, ok := lookup(name)
		if ok && v != "" {
			return []byte(v)
		}
		if len(sub[2]) > 0 {
			return sub[3]
		}
		missing = append(missing, name)
		return m
	}
	// Lines that are only a comment are left as they are.
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		if t := bytes.TrimLeft(l, " \t"); len(t) > 0 && t[0] == '#' {
			continue
		}
		lines[i] = envRef.ReplaceAllFunc(l, expand)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", missing[0], missing[0])
	}
	return bytes.Join(lines, nil), nil
}

// Defaults fills in the documented defaults of unset keys.
func (p *Pipeline) Defaults() {
	if p.State.Backend == "" {
		p.State.Backend = "memory"
	}
	if p.State.Backend == "disk" && p.State.Memory == 0 {
		p.State.Memory = DefaultStateMemory
	}
	if c := p.Checkpoint; c != nil {
		if c.Interval == 0 {
			c.Interval = Duration(10 * time.Second)
		}
		if c.Retain == 0 {
			c.Retain = 3
		}
	}
	et := &p.EventTime
	if et.Format == "" {
		if et.Layout != "" {
			et.Format = "layout"
		} else {
			et.Format = "rfc3339"
		}
	}
	if et.MaxFuture == nil {
		d := DefaultMaxFuture
		et.MaxFuture = &d
	}
	if d := p.Dedup; d != nil {
		if d.KeepPayloads == nil {
			n := DefaultKeepPayloads
			d.KeepPayloads = &n
		}
		if d.Ignore == nil && p.Source.ArrivalTimeField != "" {
			d.Ignore = []string{p.Source.ArrivalTimeField}
		}
	}
	if p.Source.Replay != nil {
		r := p.Source.Replay
		if r.Seed == 0 {
			r.Seed = 1
		}
		if r.Delay == 0 {
			r.Delay = Duration(30 * time.Second)
		}
		if r.MaxDelay == 0 {
			r.MaxDelay = r.Delay
		}
		if r.Partitions == 0 {
			r.Partitions = 1
		}
	}
	if src := &p.Source; src.Type == "postgres_cdc" {
		cdcDefaults(src)
	}
	if src := &p.Source; src.Type == "kafka" {
		if src.Format == "" || src.Format == "json" {
			src.Format = "jsonl" // record values are JSON objects
		}
		if src.Start == "" {
			src.Start = "earliest"
		}
		if src.Isolation == "" {
			src.Isolation = "read_committed"
		}
		if src.PollTimeout == 0 {
			src.PollTimeout = Duration(500 * time.Millisecond)
		}
		if src.DiscoveryInterval == 0 {
			src.DiscoveryInterval = Duration(10 * time.Second)
		}
		if src.Assignment == "" {
			src.Assignment = "direct"
		}
		if src.Assignment == "group" {
			if src.SessionTimeout == 0 {
				src.SessionTimeout = Duration(10 * time.Second)
			}
			if src.TransactionTimeout == 0 {
				src.TransactionTimeout = Duration(30 * time.Second)
			}
		}
	}
	if p.Source.Format == "" {
		switch {
		case hasAnySuffix(p.Source.Path, ".jsonl", ".json", ".ndjson"):
			p.Source.Format = "jsonl"
		case hasAnySuffix(p.Source.Path, ".csv"):
			p.Source.Format = "csv"
		case hasAnySuffix(p.Source.Path, ".avro"):
			p.Source.Format = "avro"
		}
	}
	if p.Source.CSV.Delimiter == "" {
		p.Source.CSV.Delimiter = ","
	}
	if p.Source.CSV.Header == nil {
		t := true
		p.Source.CSV.Header = &t
	}
	defaultStage := func(s *Stage) {
		if s.TopN != nil {
			if s.Emit.Mode == "" {
				s.Emit.Mode = "final"
			}
			if s.Window.Type == "" {
				s.Window.Type = "global"
			}
			if s.TopN.Rank == "" {
				s.TopN.Rank = "rn"
			}
		}
		if s.Emit.Mode == "" {
			s.Emit.Mode = "update"
		}
		if s.Late.Policy == "" {
			if s.Late.Sink != nil {
				s.Late.Policy = "side_output"
			} else {
				s.Late.Policy = "drop"
			}
		}
		if s.Window.Timezone == "" {
			s.Window.Timezone = "UTC"
		}
		for i := range s.Sinks {
			sk := &s.Sinks[i]
			if sk.Table == "" {
				sk.Table = DefaultTable(s.Name)
			}
			if sk.Type == "postgres" && sk.Mode == "" {
				sk.Mode = "results"
			}
			if sk.Mode == "ledger" && sk.LedgerTable == "" {
				sk.LedgerTable = sk.Table + "_ledger"
			}
		}
	}
	if len(p.Stages) == 0 {
		st := p.topStage()
		defaultStage(&st)
		p.Emit, p.Late, p.Window, p.Sinks = st.Emit, st.Late, st.Window, st.Sinks
	}
	for i := range p.Stages {
		defaultStage(&p.Stages[i])
		if et := p.Stages[i].EventTime; et != nil && et.Format == "" {
			et.Format = "rfc3339"
		}
		if j := p.Stages[i].Join; j != nil {
			defaultJoin(j)
		}
	}
	if readsReference(p) {
		// A temporal join over the versioned reference reads its file as
		// an input of versions (docs/semantics.md, "Temporal join").
		has := false
		for _, in := range p.Inputs {
			has = has || in.Name == ReferenceInput
		}
		if in, ok := referenceInput(p); ok && !has {
			p.Inputs = append(p.Inputs, in)
		}
	}
	for i := range p.Inputs {
		defaultInput(&p.Inputs[i])
	}
}

func hasAnySuffix(s string, suffixes ...string) bool {
	s = strings.ToLower(s)
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// topStage returns the single stage described by the top-level keys.
func (p *Pipeline) topStage() Stage {
	return Stage{
		Name:            p.Name,
		Input:           "source",
		Filter:          p.Filter,
		Fields:          p.Fields,
		Key:             p.Key,
		Window:          p.Window,
		AllowedLateness: p.AllowedLateness,
		Aggregates:      p.Aggregates,
		Select:          p.Select,
		TopN:            p.TopN,
		Contributions:   p.Contributions,
		Emit:            p.Emit,
		Late:            p.Late,
		Sinks:           p.Sinks,
	}
}

// StageList returns the pipeline's stages in order: the `stages:` list, or
// the single stage of the top-level keys. Inputs are resolved: an empty
// Input is the previous stage (the source for the first).
func (p *Pipeline) StageList() []Stage {
	if len(p.Stages) == 0 {
		return []Stage{p.topStage()}
	}
	out := make([]Stage, len(p.Stages))
	copy(out, p.Stages)
	for i := range out {
		if out[i].Input == "" {
			if i == 0 || out[i].Join != nil {
				out[i].Input = "source"
			} else {
				out[i].Input = out[i-1].Name
			}
		}
	}
	return out
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
var tableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var typeRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// qualifiedRE matches a SQL table name, optionally schema-qualified.
var qualifiedRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// Validate checks the pipeline and returns every problem found, each naming
// its key (e.g. "window.size: required for tumbling windows").
func (p *Pipeline) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if p.Name == "" {
		add("name", "required")
	} else if !nameRE.MatchString(p.Name) {
		add("name", "%q must start with a letter and hold only letters, digits, '_' and '-'", p.Name)
	}
	validateSource(&p.Source, add)
	validateSchemaComplete(&p.Source, add)
	validateChangeStream(p, add)
	validateEventTime("event_time", &p.EventTime, add)
	switch p.EventTime.From {
	case "", "payload":
	case "kafka_timestamp":
		if p.Source.Type != "kafka" {
			add("event_time.from", "kafka_timestamp needs a kafka source")
		}
	default:
		add("event_time.from", "%q: want payload or kafka_timestamp", p.EventTime.From)
	}
	if p.KeyGroups < 0 || p.KeyGroups > MaxKeyGroups {
		add("key_groups", "%d is out of range: want 1 to %d (default %d)", p.KeyGroups, MaxKeyGroups, DefaultKeyGroups)
	}
	if p.ExchangeMemory != 0 && p.ExchangeMemory < MinExchangeMemory {
		add("exchange_memory", "%s is below the least, %s", p.ExchangeMemory, MinExchangeMemory)
	}
	if p.Parallelism < 0 {
		add("parallelism", "%d is negative (0 means one task per CPU)", p.Parallelism)
	} else if kg := p.EffectiveKeyGroups(); p.Parallelism > kg {
		add("parallelism", "%d tasks over %d key groups: a task owns at least one key group (raise key_groups, which a new checkpoint.dir allows)", p.Parallelism, kg)
	}
	if p.Source.Type == "kafka" && p.Source.Assignment == "group" {
		validateGroup(p, add)
	}
	if c := p.Checkpoint; c != nil {
		switch {
		case c.Store != "":
			validateStore(p, add)
		case c.Dir == "":
			add("checkpoint.dir", "required: the directory that holds the checkpoints")
		}
		if c.Interval < Duration(time.Millisecond) {
			add("checkpoint.interval", "must be at least 1ms")
		}
		if c.Retain < 1 {
			add("checkpoint.retain", "must be at least 1")
		}
	}
	validateState(&p.State, add)
	if r := p.Reference; r != nil {
		switch {
		case r.Path == "" && r.Topic == "":
			add("reference.path", "required: the lookup file (CSV with a header, or JSON lines), or reference.topic (a Kafka topic)")
		case r.Path != "" && r.Topic != "":
			add("reference.topic", "set either reference.path (a file) or reference.topic (a Kafka topic), not both")
		case r.Topic != "" && len(r.Brokers) == 0:
			add("reference.brokers", "required with reference.topic: the seed brokers, host:port")
		}
		if r.Topic == "" && len(r.Brokers) > 0 {
			add("reference.brokers", "only with reference.topic")
		}
		for i, b := range r.Brokers {
			if _, _, ok := strings.Cut(b, ":"); !ok || b == "" {
				add(fmt.Sprintf("reference.brokers[%d]", i), "%q is not host:port", b)
			}
		}
		if r.Key == "" {
			add("reference.key", "required: the source field looked up in the file's column of the same name")
		}
		if len(r.Fields) == 0 {
			add("reference.fields", "required: the file's columns to add, with their types, e.g. {region: string}")
		}
		if r.ValidFrom != "" && r.ValidFrom == r.Key {
			add("reference.valid_from", "%q is the key: the version time is a column of its own", r.ValidFrom)
		}
		for _, f := range r.Fields {
			if _, err := parseTypeName(f.Type); err != nil {
				add("reference.fields."+f.Name, "%v", err)
			}
			if f.Name == r.Key {
				add("reference.fields."+f.Name, "is the key")
			}
			if f.Name == r.ValidFrom {
				add("reference.fields."+f.Name, "is the version-time column (reference.valid_from)")
			}
			if _, ok := p.Source.Schema.Lookup(f.Name); ok {
				add("reference.fields."+f.Name, "also a source field (source.schema): rename one")
			}
		}
	}
	validateInputs(p, add)
	if s := p.SLO; s != nil {
		if s.EventTimeLagP95 < 0 {
			add("slo.event_time_lag_p95", "must not be negative")
		}
		if s.SinkCommitP95 < 0 {
			add("slo.sink_commit_p95", "must not be negative")
		}
		for _, x := range []struct {
			key string
			r   *Ratio
		}{{"slo.late_ratio", s.LateRatio}, {"slo.checkpoint_success", s.CheckpointSuccess}} {
			if x.r != nil && !(*x.r >= 0 && *x.r <= 1) {
				add(x.key, "%g is not between 0 and 1 (0%% and 100%%)", float64(*x.r))
			}
		}
		if s.CheckpointSuccess != nil && p.Checkpoint == nil {
			add("slo.checkpoint_success", "the pipeline takes no checkpoints (add a checkpoint section)")
		}
	}
	if f := p.Quarantine.MaxFraction; f != nil && (*f < 0 || *f >= 1 || *f != *f) {
		add("quarantine.max_fraction", "%v: want a share from 0 (no quarantined record tolerated) to below 1 (0.01: fail above 1 %%)", *f)
	} else if f != nil && p.Source.Assignment == "group" {
		add("quarantine.max_fraction", "not for a group run (source.assignment: group): each instance sees only its partitions' share")
	}
	if p.Conflicts.MaxFraction != nil {
		add("conflicts.max_fraction", "only for quarantine (conflicting redeliveries are not invalid records)")
	}
	if p.Quarantine.Sink != nil {
		validateSink("quarantine.sink", p.Quarantine.Sink, false, add)
	}
	if p.Conflicts.Sink != nil {
		validateSink("conflicts.sink", p.Conflicts.Sink, false, add)
	}
	if d := p.Dedup; d != nil {
		if d.Key == "" {
			add("dedup.key", "required (an event id field or expression), or name a contract with an event_id")
		}
		if d.TTL <= 0 {
			add("dedup.ttl", "required and positive: how long in event time an id is remembered (e.g. 24h)")
		}
		wholeMs("dedup.ttl", d.TTL, add)
		if d.KeepPayloads != nil && *d.KeepPayloads < 0 {
			add("dedup.keep_payloads", "must not be negative")
		}
	}
	if o := p.OrderBy; o != nil {
		if o.Key == "" {
			add("order_by.key", "required (the entity field, e.g. order_id), or name a contract with an ordering")
		}
		if o.Version == "" {
			add("order_by.version", "required (an int field that grows with each state change)")
		}
		if o.TTL < 0 {
			add("order_by.ttl", "must not be negative")
		}
		wholeMs("order_by.ttl", o.TTL, add)
	}
	if len(p.Stages) > 0 {
		if p.Filter != "" || len(p.Fields) > 0 || len(p.Key) > 0 || p.Window != (Window{}) ||
			len(p.Aggregates) > 0 || len(p.Select) > 0 || p.TopN != nil || len(p.Sinks) > 0 || p.Contributions != nil || p.AllowedLateness != 0 ||
			p.Emit != (Emit{}) || p.Late.Policy != "" || p.Late.Sink != nil {
			add("stages", "use either stages or the top-level stage keys (filter, fields, key, window, allowed_lateness, aggregates, emit, late, sinks), not both")
		}
	}
	// Kafka sinks: one topic each (it names the sink's transactions).
	topics := map[string]string{}
	kafkaTopic := func(key string, s *Sink) {
		if s.Type != "kafka" || s.Topic == "" {
			return
		}
		if other, ok := topics[s.Topic]; ok {
			add(key+".topic", "%q is also the topic of %s", s.Topic, other)
			return
		}
		topics[s.Topic] = key
	}
	// SQL sinks: one table each (it names the sink's commit marker).
	tables := map[string]string{}
	sqlTable := func(key string, s *Sink) {
		if (s.Type != "sqlite" && s.Type != "postgres") || s.Table == "" {
			return
		}
		db := s.Path
		if s.Type == "postgres" {
			db = s.DSN
		}
		names := []string{s.Table}
		if s.LedgerTable != "" && s.LedgerTable != s.Table { // equal ones are refused apart
			names = append(names, s.LedgerTable)
		}
		for _, t := range names {
			id := s.Type + "\x00" + db + "\x00" + t
			if other, ok := tables[id]; ok {
				add(key+".table", "%q is also a table of %s in the same database: each output needs its own table", t, other)
				return
			}
			tables[id] = key
		}
	}
	outputs := func(key string, s *Sink) {
		kafkaTopic(key, s)
		sqlTable(key, s)
	}
	if p.Quarantine.Sink != nil {
		outputs("quarantine.sink", p.Quarantine.Sink)
	}
	if p.Conflicts.Sink != nil {
		outputs("conflicts.sink", p.Conflicts.Sink)
	}
	seen := map[string]bool{"source": true}
	unions := map[string]bool{}
	for i, st := range p.StageList() {
		prefix := ""
		if len(p.Stages) > 0 {
			prefix = fmt.Sprintf("stages[%d].", i)
			if st.Name == "" {
				add(prefix+"name", "required")
			} else if !nameRE.MatchString(st.Name) {
				add(prefix+"name", "%q must start with a letter and hold only letters, digits, '_' and '-'", st.Name)
			} else if seen[st.Name] {
				add(prefix+"name", "%q used twice (or is the reserved name \"source\")", st.Name)
			}
			if !seen[st.Input] {
				add(prefix+"input", "%q is neither \"source\" nor an earlier stage", st.Input)
			}
			if st.EventTime != nil {
				validateEventTime(prefix+"event_time", st.EventTime, add)
			}
		}
		seen[st.Name] = true
		if unions[st.Input] && len(st.Union) == 0 && st.Join == nil {
			add(prefix+"input", "%q is a union stage: its rows go to its sinks only (read the stages it unites instead)", st.Input)
		}
		if j := st.Join; j != nil {
			for _, side := range []struct {
				key, input string
			}{{"join.left.input", j.Left.Input}, {"join.right.input", j.Right.Input}} {
				if unions[side.input] {
					add(prefix+side.key, "%q is a union stage: its rows go to its sinks only", side.input)
				}
			}
		}
		switch {
		case len(st.Union) > 0:
			validateUnionStage(prefix, p, &st, seen, unions, add)
			unions[st.Name] = true
		case st.Join != nil:
			validateJoinStage(prefix, p, &st, add)
		default:
			validateStage(prefix, &st, add)
		}
		for j := range st.Sinks {
			outputs(fmt.Sprintf("%ssinks[%d]", prefix, j), &st.Sinks[j])
		}
		if st.Late.Sink != nil {
			outputs(prefix+"late.sink", st.Late.Sink)
		}
		for j := range st.Sinks {
			if st.Sinks[j].Type == "postgres" && st.Sinks[j].Mode == "ledger" {
				validateLedger(fmt.Sprintf("%ssinks[%d]", prefix, j), p, &st, add)
			}
		}
	}
	return errors.Join(errs...)
}

// validateLedger checks what a postgres ledger sink needs of its stage and
// pipeline: each accepted source event adds its deltas to exactly one
// window, identified by an event id. The aggregate functions (sum(x),
// count()) are checked when the plan compiles.
func validateLedger(key string, p *Pipeline, st *Stage, add func(key, format string, args ...any)) {
	if p.Dedup == nil {
		add(key+".mode", "ledger needs event ids: add dedup: {key: <event id field>, ttl: ...} (or a contract with an event_id)")
	}
	if p.OrderBy != nil {
		add(key+".mode", "ledger adds each event once and cannot take back a superseded version: not available with order_by")
	}
	if st.Window.Type != "tumbling" {
		add(key+".mode", "ledger needs tumbling windows (each event counts in exactly one window), not %q", st.Window.Type)
	}
}

func validateSource(s *Source, add func(key, format string, args ...any)) {
	if f := s.ProcessingTimeField; f != "" && (f == s.ArrivalTimeField || f == s.PartitionField || s.Ordinal != nil && f == s.Ordinal.Field) {
		add("source.processing_time_field", "%q is another key's field: name a field of its own", f)
	}
	switch s.Type {
	case "":
		add("source.type", "required (file, kafka, postgres_cdc or nexmark)")
		return
	case "file":
	case "kafka":
		validateKafkaSource(s, add)
		return
	case "postgres_cdc":
		validateCDCSource(s, add)
		return
	case "nexmark":
		validateNexmarkSource(s, add)
		return
	default:
		add("source.type", "unknown source type %q (want file, kafka, postgres_cdc or nexmark)", s.Type)
		return
	}
	notFor(s.Type, s, add, "kafka", "postgres_cdc", "nexmark")
	if s.Path == "" {
		add("source.path", "required for a file source")
	}
	switch s.Format {
	case "jsonl", "csv":
	case "avro":
		if s.SchemaRegistry != nil {
			validateRegistry("source.schema_registry", s.SchemaRegistry, add)
		}
	case "":
		add("source.format", "required when the path has no .jsonl, .csv or .avro extension")
	default:
		add("source.format", "unknown format %q (want jsonl, csv or avro)", s.Format)
	}
	for _, f := range s.Schema {
		if _, err := parseTypeName(f.Type); err != nil {
			add("source.schema."+f.Name, "%v", err)
		}
	}
	if len([]rune(s.CSV.Delimiter)) != 1 {
		add("source.csv.delimiter", "must be one character, got %q", s.CSV.Delimiter)
	}
	if s.CSV.Header != nil && !*s.CSV.Header && len(s.CSV.Columns) == 0 && s.Format == "csv" {
		add("source.csv.columns", "required when csv.header is false")
	}
	if s.Ordinal != nil && s.Ordinal.Field == "" {
		add("source.ordinal.field", "required")
	}
	if r := s.Replay; r != nil {
		if r.Delay < 0 || r.MaxDelay < 0 {
			add("source.replay", "delays must not be negative")
		}
		if r.MaxDelay < r.Delay {
			add("source.replay.max_delay", "%s is less than delay %s", r.MaxDelay, r.Delay)
		}
		// Written so that NaN (YAML .nan) fails too.
		if !(r.StragglerFraction >= 0 && r.StragglerFraction <= 1) {
			add("source.replay.straggler_fraction", "must be between 0 and 1")
		}
		if !(r.RedeliverFraction >= 0 && r.RedeliverFraction <= 1) {
			add("source.replay.redeliver_fraction", "must be between 0 and 1")
		}
		if r.Partitions < 1 || r.Partitions > 4096 {
			add("source.replay.partitions", "must be between 1 and 4096")
		}
		if s.ArrivalTimeField != "" {
			add("source.replay", "replay records its own arrival times; drop arrival_time_field")
		}
		if s.PartitionField != "" {
			add("source.replay", "replay assigns partitions itself; use replay.partition_by instead of partition_field")
		}
	}
}

// CanonicalType returns the canonical name of a declared field type —
// "bool", "int", "decimal", "string" or "timestamp" — for the name or
// one of its accepted aliases (boolean; integer, int64, long; number,
// numeric; text; time: docs/pipeline.md, source.schema), and t itself
// for any other text. Two schemas that differ only in aliases declare
// the same types: the engine compares specs (restore, the plan
// fingerprint) by these names.
func CanonicalType(t string) string {
	switch t {
	case "boolean":
		return "bool"
	case "integer", "int64", "long":
		return "int"
	case "number", "numeric":
		return "decimal"
	case "text":
		return "string"
	case "time":
		return "timestamp"
	}
	return t
}

// parseTypeName checks a declared type name — a canonical name or an
// alias (CanonicalType) — without importing package row's parser into
// the spec's public surface (row.ParseKind accepts the same names).
func parseTypeName(t string) (string, error) {
	switch CanonicalType(t) {
	case "bool", "int", "decimal", "string", "timestamp":
		return t, nil
	}
	return "", fmt.Errorf("unknown type %q (want bool, int, decimal, string or timestamp)", t)
}

func validateEventTime(key string, et *EventTime, add func(key, format string, args ...any)) {
	if et.Field == "" {
		add(key+".field", "required")
	}
	switch et.Format {
	case "rfc3339", "epoch_ms", "epoch_s":
		if et.Layout != "" {
			add(key+".layout", "only with format layout")
		}
	case "":
		add(key+".format", "required (rfc3339, epoch_ms, epoch_s or layout)")
	case "layout":
		if et.Layout == "" {
			add(key+".layout", "required with format layout")
		} else if why := checkLayout(et.Layout); why != "" {
			add(key+".layout", "%s", why)
		}
		if et.Timezone == "" {
			add(key+".timezone", "required with a layout: timestamps without an offset need a zone")
		}
	default:
		add(key+".format", "unknown format %q (want rfc3339, epoch_ms, epoch_s or layout)", et.Format)
	}
	if et.Timezone != "" {
		if err := checkZone(et.Timezone); err != "" {
			add(key+".timezone", "%s", err)
		}
	}
	if et.OutOfOrderness < 0 {
		add(key+".out_of_orderness", "must not be negative")
	}
	wholeMs(key+".out_of_orderness", et.OutOfOrderness, add)
	wholeMs(key+".idle_timeout", et.IdleTimeout, add)
	if et.IdleTimeout < 0 {
		add(key+".idle_timeout", "must not be negative")
	}
	if et.IdleAdvance && et.IdleTimeout <= 0 {
		add(key+".idle_advance", "needs idle_timeout: the watermark advances with processing time only once every partition is idle, and without idle_timeout none ever is")
	}
	for _, r := range []struct {
		name string
		d    *Duration
	}{{"max_future", et.MaxFuture}, {"max_past", et.MaxPast}} {
		if r.d == nil {
			continue
		}
		if *r.d < 0 {
			add(key+"."+r.name, "must not be negative (0s turns the rule off)")
		}
		wholeMs(key+"."+r.name, *r.d, add)
	}
	if et.IngestTimeField != "" && et.IngestTimeField == et.Field {
		add(key+".ingest_time_field", "%q is the event-time field itself: name the field that says when the event was produced or ingested (produced_at)", et.IngestTimeField)
	}
}

func validateStage(prefix string, s *Stage, add func(key, format string, args ...any)) {
	if len(s.Select) > 0 {
		validateSelectStage(prefix, s, add)
		return
	}
	w := &s.Window
	day := 24 * time.Hour
	switch w.Type {
	case "":
		add(prefix+"window.type", "required (tumbling, sliding, session, cumulate or global)")
	case "tumbling":
		if w.Size <= 0 {
			add(prefix+"window.size", "required and positive for tumbling windows")
		}
		if w.Slide != 0 || w.Gap != 0 || w.Step != 0 {
			add(prefix+"window", "slide, step and gap are not used by tumbling windows")
		}
	case "cumulate":
		switch {
		case w.Size <= 0 || w.Step <= 0:
			add(prefix+"window", "size and step are required and positive for cumulate windows")
		case w.Step > w.Size:
			add(prefix+"window.step", "%s is longer than size %s", w.Step, w.Size)
		case w.Size%w.Step != 0:
			add(prefix+"window.size", "%s is not a multiple of step %s: a cumulate window grows by whole steps to its size", w.Size, w.Step)
		case w.Size/w.Step > 1000:
			add(prefix+"window.step", "size/step is %d windows per event; at most 1000", w.Size/w.Step)
		case w.Size.D()%day == 0 && w.Size > 0:
			add(prefix+"window.size", "cumulate windows of whole days are not supported (their steps would not follow local midnights)")
		}
		if w.Slide != 0 || w.Gap != 0 {
			add(prefix+"window", "slide and gap are not used by cumulate windows")
		}
	case "global":
		if w.Size != 0 || w.Slide != 0 || w.Gap != 0 || w.Step != 0 || w.Offset != 0 {
			add(prefix+"window", "size, slide, step, gap and offset are not used by the global window")
		}
	case "sliding":
		if w.Size <= 0 || w.Slide <= 0 {
			add(prefix+"window", "size and slide are required and positive for sliding windows")
		} else if w.Slide > w.Size {
			add(prefix+"window.slide", "%s is longer than size %s: an event between two windows would belong to none (use a filter to sample)", w.Slide, w.Size)
		} else if n := (w.Size + w.Slide - 1) / w.Slide; n > 1000 {
			add(prefix+"window.slide", "size/slide is up to %d windows per event; at most 1000", n)
		}
		if w.Gap != 0 || w.Step != 0 {
			add(prefix+"window", "gap and step are not used by sliding windows")
		}
	case "session":
		if w.Gap <= 0 {
			add(prefix+"window.gap", "required and positive for session windows")
		}
		if w.Size != 0 || w.Slide != 0 || w.Offset != 0 || w.Step != 0 {
			add(prefix+"window", "size, slide, step and offset are not used by session windows")
		}
	default:
		add(prefix+"window.type", "unknown window type %q (want tumbling, sliding, session, cumulate or global)", w.Type)
	}
	if w.Size > 0 && w.Size.D()%time.Millisecond != 0 || w.Slide.D()%time.Millisecond != 0 || w.Gap.D()%time.Millisecond != 0 || w.Step.D()%time.Millisecond != 0 {
		add(prefix+"window", "sizes are in whole milliseconds")
	}
	if w.Offset < 0 {
		add(prefix+"window.offset", "must not be negative")
	}
	if w.Timezone != "" {
		if err := checkZone(w.Timezone); err != "" {
			add(prefix+"window.timezone", "%s", err)
		}
	}
	if w.Offset != 0 && w.Size.D()%day == 0 && w.Size > 0 {
		add(prefix+"window.offset", "calendar (whole-day) windows align to local midnight; use timezone instead of offset")
	}
	if s.AllowedLateness < 0 {
		add(prefix+"allowed_lateness", "must not be negative")
	}
	wholeMs(prefix+"allowed_lateness", s.AllowedLateness, add)
	wholeMs(prefix+"emit.early_every", s.Emit.EarlyEvery, add)
	wholeMs(prefix+"window.offset", w.Offset, add)
	if s.TopN != nil {
		validateTopN(prefix, s, add)
	} else if len(s.Aggregates) == 0 {
		add(prefix+"aggregates", "at least one aggregate is required, e.g. {events: count()}")
	}
	names := map[string]bool{}
	for _, k := range s.Key {
		if k == "" {
			add(prefix+"key", "empty field name")
		}
		if names[k] {
			add(prefix+"key", "%q listed twice", k)
		}
		names[k] = true
	}
	aggs := map[string]bool{}
	for _, a := range s.Aggregates {
		switch {
		case names[a.Name]:
			add(prefix+"aggregates."+a.Name, "name also used by a key column")
		case aggs[a.Name]:
			// Only from Go code: YAML rejects a repeated mapping key.
			add(prefix+"aggregates."+a.Name, "listed twice")
		}
		aggs[a.Name] = true
		if reserved[strings.ToLower(a.Name)] {
			add(prefix+"aggregates."+a.Name, "%q is a reserved output column", a.Name)
		}
	}
	for _, k := range s.Key {
		if reserved[strings.ToLower(k)] {
			add(prefix+"key", "%q is a reserved output column; rename it with fields", k)
		}
	}
	switch s.Emit.Mode {
	case "final", "update", "retract":
	default:
		add(prefix+"emit.mode", "unknown mode %q (want final, update or retract)", s.Emit.Mode)
	}
	if s.Emit.EarlyEvery < 0 {
		add(prefix+"emit.early_every", "must not be negative")
	}
	if s.Emit.EarlyEvery > 0 && s.Emit.Mode == "final" {
		add(prefix+"emit.early_every", "early firings emit provisional rows; mode final emits only final rows (use update or retract)")
	}
	switch s.Late.Policy {
	case "drop":
		if s.Late.Sink != nil {
			add(prefix+"late.sink", "policy drop writes nothing; remove the sink or use policy side_output")
		}
	case "side_output":
		if s.Late.Sink == nil {
			add(prefix+"late.sink", "required with policy side_output")
		}
	default:
		add(prefix+"late.policy", "unknown policy %q (want drop or side_output)", s.Late.Policy)
	}
	if s.Late.Sink != nil {
		validateSink(prefix+"late.sink", s.Late.Sink, false, add)
	}
	for i := range s.Sinks {
		validateSink(fmt.Sprintf("%ssinks[%d]", prefix, i), &s.Sinks[i], true, add)
	}
	if c := s.Contributions; c != nil {
		switch {
		case c.Sink == nil:
			add(prefix+"contributions.sink", "required: where the contributing events go, e.g. {type: jsonl, path: out/revenue.events.jsonl}")
		case c.Sink.Type != "jsonl":
			add(prefix+"contributions.sink.type", "%q: contributions go to a jsonl file (tidemark explain reads it)", c.Sink.Type)
		default:
			validateSink(prefix+"contributions.sink", c.Sink, false, add)
		}
	}
}

// MaxSinkRetries bounds Sink.Retries: with the backoff capped at 8 s, 20
// retries wait about two minutes.
const MaxSinkRetries = 20

// reserved are the output columns every result row carries.
var reserved = map[string]bool{
	"window_start": true, "window_end": true, "version": true, "is_final": true,
	"watermark_at": true, "updated_at": true, "op": true, "lineage": true,
}

func validateSink(key string, s *Sink, results bool, add func(key, format string, args ...any)) {
	switch s.Delivery {
	case "", "exactly_once", "at_least_once":
	default:
		add(key+".delivery", "%q: want exactly_once or at_least_once", s.Delivery)
	}
	files := s.Type == "parquet" || s.Type == "iceberg"
	if s.Type != "kafka" {
		for _, k := range setKeys("format", s.Format != "", "schema_registry", s.SchemaRegistry != nil, "decimal_scale", s.DecimalScale != nil && !files) {
			add(key+"."+k, "only for kafka sinks")
		}
	}
	if !files {
		for _, k := range setKeys("partition_by", len(s.PartitionBy) > 0, "compression", s.Compression != "", "row_group_rows", s.RowGroupRows != 0, "roll_bytes", s.RollBytes != 0) {
			add(key+"."+k, "only for parquet and iceberg sinks")
		}
	}
	if s.Catalog != nil && s.Type != "iceberg" {
		add(key+".catalog", "only for iceberg sinks")
	}
	sql := s.Type == "sqlite" || s.Type == "postgres"
	if s.Replace && !sql {
		add(key+".replace", "only for sqlite and postgres (a table tidemark created)")
	}
	if s.Lineage != nil && (!sql || !results) {
		add(key+".lineage", "only for sqlite and postgres result sinks")
	}
	if s.Retries != nil && s.Type != "postgres" {
		add(key+".retries", "only for postgres")
	} else if s.Retries != nil && (*s.Retries < 0 || *s.Retries > MaxSinkRetries) {
		add(key+".retries", "%d: want 0 to %d", *s.Retries, MaxSinkRetries)
	}
	if sql && !results && s.Table == "" {
		add(key+".table", "required for a %s side output: the table of its records, e.g. revenue_late", s.Type)
	}
	switch s.Type {
	case "sqlite":
		if s.Path == "" {
			add(key+".path", "required for sqlite")
		}
		if s.Table != "" && !tableRE.MatchString(s.Table) {
			add(key+".table", "%q is not a plain SQL identifier (letters, digits, '_')", s.Table)
		}
	case "postgres":
		if s.DSN == "" {
			add(key+".dsn", "required for postgres, e.g. postgres://user@localhost:5432/db or ${PGURL}")
		}
		if s.Table != "" && !qualifiedRE.MatchString(s.Table) {
			add(key+".table", "%q is not a plain SQL identifier, optionally schema-qualified (letters, digits, '_')", s.Table)
		}
		switch s.Mode {
		case "", "results":
			if s.LedgerTable != "" {
				add(key+".ledger_table", "only for mode ledger")
			}
		case "ledger":
			if !results {
				add(key+".mode", "a side output is a table of records; ledger is for result sinks")
			}
			if s.LedgerTable != "" && !qualifiedRE.MatchString(s.LedgerTable) {
				add(key+".ledger_table", "%q is not a plain SQL identifier, optionally schema-qualified (letters, digits, '_')", s.LedgerTable)
			}
			if s.LedgerTable != "" && s.LedgerTable == s.Table {
				add(key+".ledger_table", "must differ from table (the aggregate table)")
			}
		default:
			add(key+".mode", "%q: want results or ledger", s.Mode)
		}
	case "kafka":
		if len(s.Brokers) == 0 {
			add(key+".brokers", "required for kafka")
		}
		switch s.Format {
		case "", "json":
			if s.SchemaRegistry != nil {
				add(key+".schema_registry", "only with format avro or protobuf")
			}
			if s.DecimalScale != nil {
				add(key+".decimal_scale", "only with format avro or protobuf")
			}
		case "avro", "protobuf":
			validateRegistry(key+".schema_registry", s.SchemaRegistry, add)
			if s.DecimalScale != nil && (*s.DecimalScale < 0 || *s.DecimalScale > 19) {
				add(key+".decimal_scale", "%d: want 0 to 19", *s.DecimalScale)
			}
		default:
			add(key+".format", "%q: want json, avro or protobuf", s.Format)
		}
		if s.Topic == "" {
			add(key+".topic", "required for kafka")
		}
		if s.TransactionTimeout < 0 {
			add(key+".transaction_timeout", "must not be negative")
		}
	case "jsonl":
		if s.Path == "" {
			add(key+".path", "required for jsonl")
		}
	case "parquet", "iceberg":
		validateFileSink(key, s, results, add)
	case "stdout":
	case "":
		if results {
			add(key+".type", "required (sqlite, postgres, jsonl, kafka, parquet, iceberg or stdout)")
		} else {
			add(key+".type", "required (sqlite, postgres, jsonl, kafka, parquet or stdout)")
		}
	default:
		// Other types resolve through the engine's registry, which may hold
		// sinks added by a library user; an unknown type fails when the
		// run opens its sinks, naming this key.
		if !typeRE.MatchString(s.Type) {
			add(key+".type", "%q is not a sink type name", s.Type)
		}
	}
}

// validateFileSink checks the keys of a parquet or iceberg sink.
func validateFileSink(key string, s *Sink, results bool, add func(key, format string, args ...any)) {
	if s.Path == "" {
		add(key+".path", "required for %s: the %s", s.Type, map[string]string{"parquet": "output directory", "iceberg": "warehouse directory"}[s.Type])
	}
	if s.DecimalScale != nil && (*s.DecimalScale < 0 || *s.DecimalScale > 19) {
		add(key+".decimal_scale", "%d: want 0 to 19", *s.DecimalScale)
	}
	switch s.Compression {
	case "", "zstd", "snappy", "none":
	default:
		add(key+".compression", "%q: want zstd, snappy or none", s.Compression)
	}
	if s.RowGroupRows < 0 {
		add(key+".row_group_rows", "%d: must be at least 1", s.RowGroupRows)
	}
	if s.RollBytes < 0 {
		add(key+".roll_bytes", "%d: must be at least 1", s.RollBytes)
	}
	seen := map[string]bool{}
	for i, b := range s.PartitionBy {
		if seen[b] {
			add(fmt.Sprintf("%s.partition_by[%d]", key, i), "%q twice", b)
		}
		seen[b] = true
		if !results && s.Type == "parquet" && b != "kind" && b != "day" {
			add(fmt.Sprintf("%s.partition_by[%d]", key, i), "%q: a side output is partitioned by kind or day", b)
		}
	}
	if s.Type == "parquet" {
		return
	}
	if !results {
		add(key+".type", "iceberg takes result rows; a side output goes to parquet, jsonl, kafka or a table")
	}
	if s.Table != "" && !icebergTableRE.MatchString(s.Table) {
		add(key+".table", "%q: want <table> or <namespace>.<table> (letters, digits, '_')", s.Table)
	}
	if c := s.Catalog; c != nil {
		switch c.Type {
		case "", "hadoop":
			if c.URI != "" {
				add(key+".catalog.uri", "only for catalog type sql")
			}
		case "sql":
			if c.URI == "" {
				add(key+".catalog.uri", "required for catalog type sql: a postgres:// URL or a SQLite file")
			}
		case "rest":
			if !strings.HasPrefix(c.URI, "http://") && !strings.HasPrefix(c.URI, "https://") {
				add(key+".catalog.uri", "%q: catalog type rest needs the catalog's http:// or https:// URL", c.URI)
			}
		default:
			add(key+".catalog.type", "%q: want hadoop, sql or rest", c.Type)
		}
		if c.Token != "" && c.Type != "rest" {
			add(key+".catalog.token", "only for catalog type rest")
		}
	}
}

// icebergTableRE is an iceberg sink's table: <table> or <namespace>.<table>.
var icebergTableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$`)

// validateRegistry checks a schema_registry mapping.
func validateRegistry(key string, r *SchemaRegistry, add func(key, format string, args ...any)) {
	if r == nil {
		add(key, "required with format avro or protobuf: the registry holding the schemas, e.g. {url: http://127.0.0.1:8081}")
		return
	}
	if strings.TrimSpace(r.URL) == "" {
		add(key+".url", "required, e.g. http://127.0.0.1:8081")
	}
	for _, u := range strings.Split(r.URL, ",") {
		if u = strings.TrimSpace(u); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			add(key+".url", "%q: want an http:// or https:// URL", u)
		}
	}
	if r.Timeout < 0 {
		add(key+".timeout", "must not be negative")
	}
	wholeMs(key+".timeout", r.Timeout, add)
	switch {
	case r.MaxWait != 0 && !strings.HasPrefix(key, "source.") && !strings.HasPrefix(key, "inputs["):
		add(key+".max_wait", "only for a source: a sink's registration that fails fails its checkpoint")
	case r.MaxWait < 0:
		add(key+".max_wait", "must not be negative")
	}
	wholeMs(key+".max_wait", r.MaxWait, add)
}

// checkZone returns why zone is not usable, or "". "Local" is refused: it
// would make results depend on the machine that runs the pipeline.
func checkZone(zone string) string {
	if zone == "Local" {
		return `"Local" depends on the machine; name an IANA zone such as "Europe/London" or "UTC"`
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Sprintf("unknown zone %q", zone)
	}
	return ""
}

// wholeMs refuses a duration with a fraction of a millisecond: tidemark's
// clocks count milliseconds, and 999µs would silently mean 0.
func wholeMs(key string, d Duration, add func(key, format string, args ...any)) {
	if d.D()%time.Millisecond != 0 {
		add(key, "%s is not a whole number of milliseconds", d)
	}
}

// notFor reports the keys set in s that belong to source types other than
// typ (among those listed).
func notFor(typ string, s *Source, add func(key, format string, args ...any), others ...string) {
	set := map[string][]string{
		"file": setKeys(
			"path", s.Path != "", "partition_field", s.PartitionField != "", "arrival_time_field", s.ArrivalTimeField != "",
			"ordinal", s.Ordinal != nil, "replay", s.Replay != nil),
		"kafka": setKeys(
			"brokers", len(s.Brokers) > 0, "topics", len(s.Topics) > 0, "group", s.Group != "", "start", s.Start != "" && typ != "kafka",
			"start_timestamp", s.StartTimestamp != "", "isolation", s.Isolation != "" && typ != "kafka",
			"poll_timeout", s.PollTimeout != 0 && typ != "kafka" && typ != "postgres_cdc", "discovery_interval", s.DiscoveryInterval != 0 && typ != "kafka",
			"stop_at_end", s.StopAtEnd, "client_id", s.ClientID != "", "schema_registry", s.SchemaRegistry != nil && !(typ == "file" && s.Format == "avro"),
			"message", s.Message != "", "assignment", s.Assignment != "" && typ != "kafka",
			"repartition_partitions", s.RepartitionPartitions != 0, "session_timeout", s.SessionTimeout != 0,
			"transaction_timeout", s.TransactionTimeout != 0),
		"postgres_cdc": setKeys(
			"dsn", s.DSN != "", "table", s.Table != "", "publication", s.Publication != "", "slot", s.Slot != "",
			"snapshot", s.Snapshot != "" && typ != "postgres_cdc", "key_columns", len(s.KeyColumns) > 0 && !(typ == "kafka" && s.ChangeStream()), "timezone", s.Timezone != "",
			"status_interval", s.StatusInterval != 0 && typ != "postgres_cdc", "heartbeat_interval", s.HeartbeatInterval != 0,
			"heartbeat_table", s.HeartbeatTable != ""),
		"nexmark": setKeys(
			"events", s.Events != 0, "rate", s.Rate != 0, "seed", s.Seed != 0, "base_time", s.BaseTime != "", "delay", s.Delay != nil),
	}
	for _, o := range others {
		for _, k := range set[o] {
			add("source."+k, "only for a %s source, not %s", o, typ)
		}
	}
}

// setKeys returns the keys whose flag is true, from pairs (key, flag).
func setKeys(pairs ...any) []string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1].(bool) {
			out = append(out, pairs[i].(string))
		}
	}
	return out
}

func validateKafkaSource(s *Source, add func(key, format string, args ...any)) {
	notFor("kafka", s, add, "file", "postgres_cdc", "nexmark")
	if len(s.Brokers) == 0 {
		add("source.brokers", "required for a kafka source, e.g. [localhost:9092]")
	}
	for i, b := range s.Brokers {
		if _, _, ok := strings.Cut(b, ":"); !ok || b == "" {
			add(fmt.Sprintf("source.brokers[%d]", i), "%q is not host:port", b)
		}
	}
	if len(s.Topics) == 0 {
		add("source.topics", "required for a kafka source: the topics to read")
	}
	seen := map[string]bool{}
	for i, t := range s.Topics {
		if t == "" || seen[t] {
			add(fmt.Sprintf("source.topics[%d]", i), "%q: empty or listed twice", t)
		}
		seen[t] = true
	}
	switch s.Format {
	case "jsonl", "debezium_json":
		if s.SchemaRegistry != nil {
			add("source.schema_registry", "only with format avro, protobuf or debezium_avro")
		}
	case "avro", "protobuf", "debezium_avro":
		validateRegistry("source.schema_registry", s.SchemaRegistry, add)
	default:
		add("source.format", "%q: a kafka source reads jsonl (JSON values), avro, protobuf, debezium_json or debezium_avro", s.Format)
	}
	if s.ChangeStream() && len(s.KeyColumns) == 0 {
		add("source.key_columns", "required with format %s: the columns that identify a row (the table's primary key)", s.Format)
	}
	if s.Message != "" && s.Format != "protobuf" {
		add("source.message", "only with format protobuf")
	}
	switch s.Start {
	case "earliest", "latest":
		if s.StartTimestamp != "" {
			add("source.start_timestamp", "only with start: timestamp")
		}
	case "timestamp":
		if s.StartTimestamp == "" {
			add("source.start_timestamp", "required with start: timestamp (RFC 3339, e.g. 2026-09-01T00:00:00+09:00)")
		} else if _, err := time.Parse(time.RFC3339Nano, s.StartTimestamp); err != nil {
			add("source.start_timestamp", "%q is not an RFC 3339 time with an offset", s.StartTimestamp)
		}
	default:
		add("source.start", "%q: want earliest, latest or timestamp", s.Start)
	}
	switch s.Isolation {
	case "read_committed", "read_uncommitted":
	default:
		add("source.isolation", "%q: want read_committed or read_uncommitted", s.Isolation)
	}
	if s.PollTimeout < Duration(time.Millisecond) {
		add("source.poll_timeout", "must be at least 1ms")
	}
	if s.DiscoveryInterval < Duration(time.Millisecond) {
		add("source.discovery_interval", "must be at least 1ms")
	}
	switch s.Assignment {
	case "direct":
		for k, set := range map[string]bool{"repartition_partitions": s.RepartitionPartitions != 0,
			"session_timeout": s.SessionTimeout != 0, "transaction_timeout": s.TransactionTimeout != 0} {
			if set {
				add("source."+k, "only with assignment: group")
			}
		}
	case "group":
		if s.Group == "" {
			add("source.group", "required with assignment: group: the consumer group the instances share")
		}
		if s.RepartitionPartitions < 0 {
			add("source.repartition_partitions", "must not be negative (0: the input topics' partition count)")
		}
		if s.SessionTimeout < Duration(time.Millisecond) {
			add("source.session_timeout", "must be at least 1ms")
		}
		if s.TransactionTimeout < Duration(time.Millisecond) {
			add("source.transaction_timeout", "must be at least 1ms")
		}
	default:
		add("source.assignment", "%q: want direct or group", s.Assignment)
	}
	for _, f := range s.Schema {
		if _, err := parseTypeName(f.Type); err != nil {
			add("source.schema."+f.Name, "%v", err)
		}
	}
}

func validateNexmarkSource(s *Source, add func(key, format string, args ...any)) {
	notFor("nexmark", s, add, "file", "kafka", "postgres_cdc")
	if s.Events <= 0 {
		add("source.events", "required and positive for a nexmark source: the number of events")
	}
	if s.Rate < 0 {
		add("source.rate", "must not be negative")
	}
	if s.BaseTime != "" {
		if _, err := time.Parse(time.RFC3339Nano, s.BaseTime); err != nil {
			add("source.base_time", "%q is not an RFC 3339 time with an offset", s.BaseTime)
		}
	}
	if d := s.Delay; d != nil {
		if !(d.Fraction >= 0 && d.Fraction <= 1) {
			add("source.delay.fraction", "must be between 0 and 1")
		}
		if d.Max < 0 || (d.Fraction > 0 && d.Max < Duration(time.Millisecond)) {
			add("source.delay.max", "must be at least 1ms when fraction > 0")
		}
	}
	if len(s.Schema) > 0 {
		add("source.schema", "a nexmark source has a fixed schema (docs/nexmark.md)")
	}
}

// validateSelectStage checks a stateless select stage: none of the keys of
// a windowed aggregation, and sinks that append rows (a select row has no
// key an upsert table could use).
func validateSelectStage(prefix string, s *Stage, add func(key, format string, args ...any)) {
	notHere := func(key string, set bool) {
		if set {
			add(prefix+key, "not used by a select stage (it has no window: every record is emitted as it comes)")
		}
	}
	w := s.Window
	w.Timezone = ""
	notHere("window", w != (Window{}))
	notHere("key", len(s.Key) > 0)
	notHere("aggregates", len(s.Aggregates) > 0)
	notHere("top_n", s.TopN != nil)
	notHere("allowed_lateness", s.AllowedLateness != 0)
	notHere("emit.early_every", s.Emit.EarlyEvery != 0)
	seen := map[string]bool{}
	for _, item := range s.Select {
		field, f := SelectItem(item)
		if field == "" || f == "" || seen[f] {
			add(prefix+"select", "%q: empty or listed twice", item)
		}
		seen[f] = true
		if reserved[strings.ToLower(f)] || f == "event_time" {
			add(prefix+"select", "%q is a reserved output column; rename it (%s as other)", f, field)
		}
	}
	for i := range s.Sinks {
		key := fmt.Sprintf("%ssinks[%d]", prefix, i)
		switch s.Sinks[i].Type {
		case "sqlite", "postgres":
			add(key+".type", "a select stage's rows have no key for an upsert table: write them to jsonl, parquet, iceberg (appends), stdout or kafka")
		default:
			validateSink(key, &s.Sinks[i], true, add)
		}
	}
}

// DefaultTable is the table of a SQL sink that names none: the stage's
// name with '-' replaced by '_'.
func DefaultTable(stage string) string { return strings.ReplaceAll(stage, "-", "_") }

// validateGroup checks what a pipeline run by a group of instances needs
// (docs/scale-out.md): checkpoints (the handover of state), a repartition
// topic within the key groups, a transaction timeout above the
// checkpoint interval, and outputs every instance reaches and writes
// exactly once with the others: kafka topics and postgres tables.
func validateGroup(p *Pipeline, add func(key, format string, args ...any)) {
	s := &p.Source
	if p.Checkpoint == nil {
		add("checkpoint", "required with source.assignment: group: a partition's state moves to its new owner through the checkpoint store")
	} else if s.TransactionTimeout != 0 && s.TransactionTimeout <= p.Checkpoint.Interval {
		add("source.transaction_timeout", "%s must exceed checkpoint.interval (%s): a transaction stays open from one checkpoint to the next", s.TransactionTimeout, p.Checkpoint.Interval)
	}
	if kg := p.EffectiveKeyGroups(); s.RepartitionPartitions > kg {
		add("source.repartition_partitions", "%d partitions over %d key groups: each partition owns at least one key group (raise key_groups)", s.RepartitionPartitions, kg)
	}
	check := func(key string, sk *Sink) {
		if sk == nil {
			return
		}
		switch {
		case sk.Delivery == "at_least_once" && (sk.Type == "kafka" || sk.Type == "postgres"):
			add(key, "delivery at_least_once: a group hands partitions from instance to instance through transactions; its outputs take part in them (leave delivery at its default, exactly_once)")
		case sk.Type == "kafka":
		case sk.Type == "postgres" && sk.Mode != "ledger":
		case sk.Type == "postgres":
			add(key, "mode ledger is not supported with source.assignment: group")
		default:
			add(key, "type %s: with source.assignment: group every instance writes the outputs, so they must be kafka topics or postgres tables", sk.Type)
		}
	}
	check("quarantine.sink", p.Quarantine.Sink)
	check("conflicts.sink", p.Conflicts.Sink)
	stages := p.Stages
	if len(stages) == 0 {
		stages = []Stage{{Sinks: p.Sinks, Late: p.Late, Contributions: p.Contributions}}
	}
	for i, st := range stages {
		prefix := ""
		if len(p.Stages) > 0 {
			prefix = fmt.Sprintf("stages[%d].", i)
		}
		for j := range st.Sinks {
			check(fmt.Sprintf("%ssinks[%d]", prefix, j), &st.Sinks[j])
		}
		check(prefix+"late.sink", st.Late.Sink)
		if st.Contributions != nil {
			check(prefix+"contributions.sink", st.Contributions.Sink)
		}
	}
}

// Validate checks the state keys alone (the rest of a pipeline checked
// elsewhere): run --state-backend and --memory.
func (s *State) Validate() error {
	var errs []error
	validateState(s, func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

// validateState checks the state keys.
func validateState(s *State, add func(key, format string, args ...any)) {
	switch s.Backend {
	case "", "memory":
		if s.Memory != 0 {
			add("state.memory", "only with state.backend: disk (the memory backend keeps its state in the Go heap, unbounded)")
		}
		if s.Dir != "" {
			add("state.dir", "only with state.backend: disk")
		}
	case "disk":
		if s.Memory != 0 && s.Memory < MinStateMemory {
			add("state.memory", "%s is below the least budget, %s", s.Memory, MinStateMemory)
		}
	default:
		add("state.backend", "%q: want memory or disk", s.Backend)
	}
}

// SelectItem splits an item of a select stage's list into the field it
// reads and the column it writes: "bid.price as price" gives bid.price
// and price, "bid.price" gives bid.price twice. The "as" is a word
// between spaces, in any case.
func SelectItem(item string) (field, name string) {
	lower := strings.ToLower(item)
	if i := strings.LastIndex(lower, " as "); i >= 0 {
		return strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+4:])
	}
	item = strings.TrimSpace(item)
	return item, item
}

// MaxUnion is the most stages a union stage unites (Stage.Union).
const MaxUnion = 64

// validateUnionStage checks a union stage (Stage.Union): earlier stages,
// each once, none itself a union, and no stage key but name and sinks.
// The stages' columns are compared when the plan compiles.
func validateUnionStage(prefix string, p *Pipeline, s *Stage, seen, unions map[string]bool, add func(key, format string, args ...any)) {
	if len(s.Union) < 2 || len(s.Union) > MaxUnion {
		add(prefix+"union", "lists %d stages: a union unites 2 to %d", len(s.Union), MaxUnion)
	}
	listed := map[string]bool{}
	for i, n := range s.Union {
		key := fmt.Sprintf("%sunion[%d]", prefix, i)
		switch {
		case n == "source" || !seen[n] || n == s.Name:
			add(key, "%q is not an earlier stage (a union unites stages' rows; read the source in a stage of its own)", n)
		case unions[n]:
			add(key, "%q is itself a union: list its stages instead", n)
		case listed[n]:
			add(key, "%q listed twice", n)
		}
		listed[n] = true
	}
	w := s.Window
	if w.Timezone == "UTC" {
		w.Timezone = "" // the default
	}
	if s.Filter != "" || len(s.Fields) > 0 || len(s.Key) > 0 || w != (Window{}) || s.AllowedLateness != 0 ||
		len(s.Aggregates) > 0 || len(s.Select) > 0 || s.TopN != nil || s.Contributions != nil || s.Join != nil || s.EventTime != nil {
		add(prefix+"union", "a union stage has only name and sinks (its rows are its stages' rows as they are): filter, fields, key, window, allowed_lateness, aggregates, select, contributions, join and event_time belong in the stages it unites")
	}
	if s.Emit.EarlyEvery != 0 || s.Emit.Mode != "" && s.Emit.Mode != "update" || s.Late.Sink != nil || s.Late.Policy != "" && s.Late.Policy != "drop" {
		add(prefix+"union", "a union stage's rows keep their stages' emit mode and late handling: set emit and late on the stages it unites")
	}
	if p.Source.Assignment == "group" {
		add(prefix+"union", "a union stage does not run with source.assignment group yet: give each stage its own sinks")
	}
}

// MaxTopN is the most rows a Top-N stage keeps per window and key
// (TopN.N): aggregate.MaxNth.
const MaxTopN = 1000

// validateTopN checks a Top-N stage (Stage.TopN): n, the order, the
// columns' and the rank's names (none a key, a reserved column or
// another's), no aggregates, emit mode final without early firings. The
// expressions are compiled with the plan.
func validateTopN(prefix string, s *Stage, add func(key, format string, args ...any)) {
	t := s.TopN
	if t.N < 1 || t.N > MaxTopN {
		add(prefix+"top_n.n", "%d: a Top-N keeps 1 to %d rows per key", t.N, MaxTopN)
	}
	if len(t.Order) == 0 {
		add(prefix+"top_n.order", "required: the expressions the rows sort by, e.g. [desc(price), date_time]")
	}
	for _, o := range t.Order {
		if strings.TrimSpace(o) == "" {
			add(prefix+"top_n.order", "an empty expression")
		}
	}
	if len(s.Aggregates) > 0 {
		add(prefix+"aggregates", "a Top-N stage has no aggregates: its rows are the kept rows' top_n.columns")
	}
	if s.Emit.Mode != "" && s.Emit.Mode != "final" && s.Window.Type != "" && s.Window.Type != "global" {
		add(prefix+"emit.mode", "%q: a Top-N stage of window %s emits its ranks when each window closes (final); emit modes update and retract are for a Top-N over the global window (Flink's Rank operator's updating result; its window Top-N is final too)", s.Emit.Mode, s.Window.Type)
	}
	if s.Emit.EarlyEvery != 0 {
		add(prefix+"emit.early_every", "a Top-N stage has no early firings: in emit mode update or retract each record that enters the N first emits the ranks it changed at once")
	}
	names := map[string]string{} // column name → what uses it
	for _, k := range s.Key {
		names[k] = "a key column"
	}
	if strings.TrimSpace(t.Rank) == "" {
		add(prefix+"top_n.rank", "empty")
	} else if reserved[strings.ToLower(t.Rank)] {
		add(prefix+"top_n.rank", "%q is a reserved output column", t.Rank)
	} else if why, ok := names[t.Rank]; ok {
		add(prefix+"top_n.rank", "%q is also %s", t.Rank, why)
	}
	if names[t.Rank] == "" {
		names[t.Rank] = "the rank column"
	}
	for _, item := range t.Columns {
		field, f := SelectItem(item)
		switch {
		case field == "" || f == "":
			add(prefix+"top_n.columns", "%q: empty", item)
		case reserved[strings.ToLower(f)]:
			add(prefix+"top_n.columns", "%q is a reserved output column; rename it (%s as other)", f, field)
		case names[f] != "":
			add(prefix+"top_n.columns", "%q is also %s", f, names[f])
		}
		names[f] = "a column"
	}
}

// javaLayout rewrites the common elements of a Java (Flink SQL,
// DateTimeFormatter) date pattern as Go's reference time, for the hint
// of a layout Go reads as text: yyyy-MM-dd HH:mm:ss → 2006-01-02 15:04:05.
var javaLayout = strings.NewReplacer("yyyy", "2006", "yy", "06", "MM", "01", "dd", "02", "HH", "15", "hh", "03", "mm", "04", "ss", "05", "SSS", "000", "'T'", "T")

// checkLayout returns why a Go time layout cannot read timestamps, or "":
// a layout without any element of time.Layout's reference time (Mon Jan
// 2 15:04:05 2006) formats every instant alike, so every record would be
// quarantined — what a Java pattern such as "yyyy-MM-dd HH:mm:ss" is to
// Go, which reads its letters as text.
func checkLayout(layout string) string {
	if tellsApart(layout) {
		return ""
	}
	why := fmt.Sprintf("%q has no element of Go's reference time (Mon Jan 2 15:04:05 2006, e.g. \"2006-01-02 15:04:05\"): it reads no timestamp", layout)
	if j := javaLayout.Replace(layout); j != layout && tellsApart(j) {
		why += fmt.Sprintf("; as a Java pattern it is %q", j)
	}
	return why
}

// tellsApart reports whether layout formats two instants that differ in
// every element (year, month, day, hour, minute, second, millisecond)
// differently.
func tellsApart(layout string) bool {
	a := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	b := time.Date(2011, 12, 25, 8, 30, 40, 123e6, time.UTC)
	return a.Format(layout) != b.Format(layout)
}
