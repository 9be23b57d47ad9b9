package spec

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// basePipeline is the smallest valid single-stage pipeline, one top-level
// key per line, in the order pipe renders them.
var basePipeline = []string{
	"name: p",
	"source: {type: file, path: events.jsonl}",
	"event_time: {field: ts}",
	"window: {type: tumbling, size: 1m}",
	"aggregates: {n: count()}",
}

// pipe returns basePipeline with changes, each a top-level YAML line:
// "key: value" replaces the line of that key (or is appended), "-key"
// removes it.
func pipe(changes ...string) string {
	lines := append([]string(nil), basePipeline...)
	for _, c := range changes {
		if key, ok := strings.CutPrefix(c, "-"); ok {
			lines = slicesDeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, key+":") })
			continue
		}
		key, _, _ := strings.Cut(c, ":")
		replaced := false
		for i, l := range lines {
			if strings.HasPrefix(l, key+":") {
				lines[i], replaced = c, true
			}
		}
		if !replaced {
			lines = append(lines, c)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func slicesDeleteFunc(s []string, del func(string) bool) []string {
	out := s[:0]
	for _, x := range s {
		if !del(x) {
			out = append(out, x)
		}
	}
	return out
}

func mustParse(t *testing.T, src string) *Pipeline {
	t.Helper()
	p, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", src, err)
	}
	return p
}

func ptrTrue() *bool { t := true; return &t }

// TestTimestampRuleDefaults: max_future defaults to 24h and an explicit 0s
// turns it off (it is not taken for the default); max_past is off unless
// set.
func TestTimestampRuleDefaults(t *testing.T) {
	p := mustParse(t, pipe())
	if got := p.EventTime.MaxFutureMs(); got != 24*3600*1000 {
		t.Fatalf("default max_future %d ms", got)
	}
	if p.EventTime.MaxPastMs() != 0 || p.EventTime.MaxPast != nil {
		t.Fatalf("default max_past %v", p.EventTime.MaxPast)
	}
	p = mustParse(t, pipe("event_time: {field: ts, max_future: 0s, max_past: 720h}"))
	if p.EventTime.MaxFuture == nil || p.EventTime.MaxFutureMs() != 0 {
		t.Fatalf("max_future: 0s gave %v", p.EventTime.MaxFuture)
	}
	if p.EventTime.MaxPastMs() != 720*3600*1000 {
		t.Fatalf("max_past %d ms", p.EventTime.MaxPastMs())
	}
	var unset EventTime // Go API before Defaults
	if unset.MaxFutureMs() != DefaultMaxFuture.Ms() {
		t.Fatal("unset max_future is not the default")
	}
}

func TestParseDefaults(t *testing.T) {
	p := mustParse(t, pipe())
	day := Duration(24 * time.Hour) // event_time.max_future
	want := &Pipeline{
		Name: "p",
		Source: Source{
			Type: "file", Path: "events.jsonl", Format: "jsonl",
			CSV: CSVOptions{Delimiter: ",", Header: ptrTrue()},
		},
		EventTime:  EventTime{Field: "ts", Format: "rfc3339", MaxFuture: &day},
		Window:     Window{Type: "tumbling", Size: Duration(time.Minute), Timezone: "UTC"},
		Aggregates: NamedExprs{{Name: "n", Expr: "count()"}},
		Emit:       Emit{Mode: "update"},
		Late:       Late{Policy: "drop"},
		State:      State{Backend: "memory"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *p, *want)
	}
	st := p.StageList()
	if len(st) != 1 || st[0].Name != "p" || st[0].Input != "source" || st[0].Emit.Mode != "update" {
		t.Errorf("StageList() = %+v, want one stage p reading the source", st)
	}
}

func TestParseDefaultCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		check func(t *testing.T, p *Pipeline)
	}{
		{"format from .JSONL", pipe("source: {type: file, path: data/E.JSONL}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.format", p.Source.Format, "jsonl")
		}},
		{"format from .ndjson", pipe("source: {type: file, path: e.ndjson}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.format", p.Source.Format, "jsonl")
		}},
		{"format from .json", pipe("source: {type: file, path: e.json}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.format", p.Source.Format, "jsonl")
		}},
		{"format from a .csv glob", pipe("source: {type: file, path: data/*.csv}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.format", p.Source.Format, "csv")
			eq(t, "source.csv.delimiter", p.Source.CSV.Delimiter, ",")
			eq(t, "source.csv.header", *p.Source.CSV.Header, true)
		}},
		{"explicit format wins", pipe("source: {type: file, path: e.csv, format: jsonl}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.format", p.Source.Format, "jsonl")
		}},
		{"csv header false with columns", pipe(`source: {type: file, path: e.csv, csv: {header: false, columns: [a, ts], delimiter: "\t"}}`), func(t *testing.T, p *Pipeline) {
			eq(t, "source.csv.header", *p.Source.CSV.Header, false)
			eq(t, "source.csv.delimiter", p.Source.CSV.Delimiter, "\t")
			eq(t, "source.csv.columns", p.Source.CSV.Columns, []string{"a", "ts"})
		}},
		{"csv header false is fine for jsonl", pipe("source: {type: file, path: e.jsonl, csv: {header: false}}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.csv.header", *p.Source.CSV.Header, false)
		}},
		{"layout selects format layout", pipe(`event_time: {field: ts, layout: "2006-01-02 15:04:05", timezone: Europe/London}`), func(t *testing.T, p *Pipeline) {
			eq(t, "event_time.format", p.EventTime.Format, "layout")
		}},
		{"empty replay takes every default", pipe("source: {type: file, path: e.jsonl, replay: {}}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.replay", *p.Source.Replay, Replay{Seed: 1, Delay: Duration(30 * time.Second), MaxDelay: Duration(30 * time.Second), Partitions: 1})
		}},
		{"null replay is off", pipe("source: {type: file, path: e.jsonl, replay: null}"), func(t *testing.T, p *Pipeline) {
			if p.Source.Replay != nil {
				t.Errorf("source.replay = %+v, want nil", p.Source.Replay)
			}
		}},
		{"zero replay values mean the defaults", pipe("source: {type: file, path: e.jsonl, replay: {seed: 0, delay: 0s, max_delay: 0s, partitions: 0}}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.replay", *p.Source.Replay, Replay{Seed: 1, Delay: Duration(30 * time.Second), MaxDelay: Duration(30 * time.Second), Partitions: 1})
		}},
		{"max_delay defaults to delay", pipe("source: {type: file, path: e.jsonl, replay: {seed: 7, delay: 2m, straggler_fraction: 0.03, partitions: 4, partition_by: k}}"), func(t *testing.T, p *Pipeline) {
			eq(t, "source.replay", *p.Source.Replay, Replay{Seed: 7, Delay: Duration(2 * time.Minute), StragglerFraction: 0.03, MaxDelay: Duration(2 * time.Minute), Partitions: 4, PartitionBy: "k"})
		}},
		{"late sink selects side_output", pipe("late: {sink: {type: jsonl, path: l.jsonl}}"), func(t *testing.T, p *Pipeline) {
			eq(t, "late.policy", p.Late.Policy, "side_output")
			eq(t, "late.sink.table", p.Late.Sink.Table, "")
		}},
		{"table from the pipeline name", pipe("name: daily-revenue", "sinks: [{type: sqlite, path: a.db}, {type: jsonl, path: a.jsonl}, {type: sqlite, path: b.db, table: t2}]"), func(t *testing.T, p *Pipeline) {
			eq(t, "sinks[0].table", p.Sinks[0].Table, "daily_revenue")
			eq(t, "sinks[1].table", p.Sinks[1].Table, "daily_revenue")
			eq(t, "sinks[2].table", p.Sinks[2].Table, "t2")
		}},
		{"durations", pipe("allowed_lateness: 1h30m", "emit: {mode: retract, early_every: 250ms}", "event_time: {field: ts, out_of_orderness: ' 5m ', idle_timeout: ~}"), func(t *testing.T, p *Pipeline) {
			eq(t, "allowed_lateness", p.AllowedLateness, Duration(90*time.Minute))
			eq(t, "emit.early_every", p.Emit.EarlyEvery, Duration(250*time.Millisecond))
			eq(t, "event_time.out_of_orderness", p.EventTime.OutOfOrderness, Duration(5*time.Minute))
			eq(t, "event_time.idle_timeout", p.EventTime.IdleTimeout, Duration(0))
		}},
		{"unknown sink type passes to the registry", pipe("sinks: [{type: pulsar}]"), func(t *testing.T, p *Pipeline) {
			eq(t, "sinks[0].type", p.Sinks[0].Type, "pulsar")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, mustParse(t, tc.src)) })
	}
}

func eq[T any](t *testing.T, key string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", key, got, want)
	}
}

const twoStages = `name: p
source: {type: file, path: e.jsonl}
event_time: {field: ts}
stages:
  - name: per-store
    key: [store]
    window: {type: tumbling, size: 1m}
    aggregates: {revenue: sum(amount)}
    emit: {mode: retract}
    late: {sink: {type: jsonl, path: late.jsonl}}
    sinks: [{type: sqlite, path: a.db}]
  - name: overall
    window: {type: tumbling, size: 1h}
    aggregates: {revenue: sum(revenue)}
    sinks: [{type: sqlite, path: a.db}]
  - name: again
    input: per-store
    event_time: {field: window_start, format: rfc3339}
    window: {type: session, gap: 5m}
    aggregates: {n: count()}
`

func TestParseStageDefaults(t *testing.T) {
	p := mustParse(t, twoStages)
	st := p.StageList()
	if len(st) != 3 {
		t.Fatalf("StageList() has %d stages, want 3", len(st))
	}
	for i, want := range []struct {
		name, input, mode, policy, table string
	}{
		{"per-store", "source", "retract", "side_output", "per_store"},
		{"overall", "per-store", "update", "drop", "overall"},
		{"again", "per-store", "update", "drop", ""},
	} {
		s := st[i]
		eq(t, "name", s.Name, want.name)
		eq(t, s.Name+".input", s.Input, want.input)
		eq(t, s.Name+".emit.mode", s.Emit.Mode, want.mode)
		eq(t, s.Name+".late.policy", s.Late.Policy, want.policy)
		eq(t, s.Name+".window.timezone", s.Window.Timezone, "UTC")
		if len(s.Sinks) > 0 {
			eq(t, s.Name+".sinks[0].table", s.Sinks[0].Table, want.table)
		}
	}
	// The raw list keeps inputs unresolved; the top-level stage keys stay
	// empty.
	eq(t, "stages[1].input", p.Stages[1].Input, "")
	eq(t, "emit", p.Emit, Emit{})
	eq(t, "stages[2].event_time", *p.Stages[2].EventTime, EventTime{Field: "window_start", Format: "rfc3339"})
}

// TestValidateErrors checks every message of Validate, exactly. Each case
// produces exactly the listed errors, in order.
func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"name missing", pipe("-name"), []string{"name: required"}},
		{"name bad", pipe("name: 2x"), []string{`name: "2x" must start with a letter and hold only letters, digits, '_' and '-'`}},

		{"source type missing", pipe("source: {path: e.jsonl}"), []string{"source.type: required (file, kafka, postgres_cdc or nexmark)"}},
		{"kafka without brokers and topics", pipe("source: {type: kafka}"), []string{"source.brokers: required for a kafka source, e.g. [localhost:9092]", "source.topics: required for a kafka source: the topics to read"}},
		{"kafka with file keys", pipe("source: {type: kafka, brokers: [k:9092], topics: [t], path: x.jsonl, replay: {seed: 1}}"), []string{"source.path: only for a file source, not kafka", "source.replay: only for a file source, not kafka"}},
		{"kafka bad broker and start", pipe("source: {type: kafka, brokers: [k], topics: [t, t], start: now}"), []string{`source.brokers[0]: "k" is not host:port`, `source.topics[1]: "t": empty or listed twice`, `source.start: "now": want earliest, latest or timestamp`}},
		{"kafka start timestamp", pipe(`source: {type: kafka, brokers: ["k:1"], topics: [t], start: timestamp, start_timestamp: yesterday}`), []string{`source.start_timestamp: "yesterday" is not an RFC 3339 time with an offset`}},
		{"reference file and topic", pipe("reference: {path: r.csv, topic: t, brokers: [k:1], key: a, fields: {region: string}}"), []string{"reference.topic: set either reference.path (a file) or reference.topic (a Kafka topic), not both"}},
		{"reference topic without brokers", pipe("reference: {topic: t, key: a, fields: {region: string}}"), []string{"reference.brokers: required with reference.topic: the seed brokers, host:port"}},
		{"reference neither", pipe("reference: {brokers: [k], key: a, valid_from: a, fields: {region: string}}"), []string{"reference.path: required: the lookup file (CSV with a header, or JSON lines), or reference.topic (a Kafka topic)", "reference.brokers: only with reference.topic", `reference.brokers[0]: "k" is not host:port`, `reference.valid_from: "a" is the key: the version time is a column of its own`}},
		{"kafka_timestamp on a file", pipe("event_time: {field: ts, from: kafka_timestamp}"), []string{"event_time.from: kafka_timestamp needs a kafka source"}},
		{"file with kafka keys", pipe(`source: {type: file, path: e.jsonl, brokers: ["k:1"], stop_at_end: true}`), []string{"source.brokers: only for a kafka source, not file", "source.stop_at_end: only for a kafka source, not file"}},
		{"nexmark without events", pipe("source: {type: nexmark, delay: {fraction: 2, max: 1s}}"), []string{"source.events: required and positive for a nexmark source: the number of events", "source.delay.fraction: must be between 0 and 1"}},
		{"source path missing", pipe("source: {type: file}"), []string{
			"source.path: required for a file source",
			"source.format: required when the path has no .jsonl, .csv or .avro extension"}},
		{"source format from directory", pipe("source: {type: file, path: data/}"), []string{"source.format: required when the path has no .jsonl, .csv or .avro extension"}},
		{"source format unknown", pipe("source: {type: file, path: e.txt, format: parquet}"), []string{`source.format: unknown format "parquet" (want jsonl, csv or avro)`}},
		{"schema type unknown", pipe("source: {type: file, path: e.jsonl, schema: {amount: float, n: int, ok: boolean}}"), []string{`source.schema.amount: unknown type "float" (want bool, int, decimal, string or timestamp)`}},
		{"csv delimiter long", pipe(`source: {type: file, path: e.csv, csv: {delimiter: ";;"}}`), []string{`source.csv.delimiter: must be one character, got ";;"`}},
		{"csv columns missing", pipe("source: {type: file, path: e.csv, csv: {header: false}}"), []string{"source.csv.columns: required when csv.header is false"}},
		{"ordinal field missing", pipe("source: {type: file, path: e.jsonl, ordinal: {per: invoice}}"), []string{"source.ordinal.field: required"}},
		{"replay negative delay", pipe("source: {type: file, path: e.jsonl, replay: {delay: -1s}}"), []string{"source.replay: delays must not be negative"}},
		{"replay max below delay", pipe("source: {type: file, path: e.jsonl, replay: {delay: 2m, max_delay: 1m}}"), []string{"source.replay.max_delay: 1m0s is less than delay 2m0s"}},
		{"replay straggler above 1", pipe("source: {type: file, path: e.jsonl, replay: {straggler_fraction: 1.5}}"), []string{"source.replay.straggler_fraction: must be between 0 and 1"}},
		{"replay straggler NaN", pipe("source: {type: file, path: e.jsonl, replay: {straggler_fraction: .nan}}"), []string{"source.replay.straggler_fraction: must be between 0 and 1"}},
		{"replay redeliver negative", pipe("source: {type: file, path: e.jsonl, replay: {redeliver_fraction: -0.1}}"), []string{"source.replay.redeliver_fraction: must be between 0 and 1"}},
		{"replay redeliver NaN", pipe("source: {type: file, path: e.jsonl, replay: {redeliver_fraction: .NaN}}"), []string{"source.replay.redeliver_fraction: must be between 0 and 1"}},
		{"replay partitions", pipe("source: {type: file, path: e.jsonl, replay: {partitions: 5000}}"), []string{"source.replay.partitions: must be between 1 and 4096"}},
		{"replay partitions negative", pipe("source: {type: file, path: e.jsonl, replay: {partitions: -1}}"), []string{"source.replay.partitions: must be between 1 and 4096"}},
		{"replay with arrival_time_field", pipe("source: {type: file, path: e.jsonl, arrival_time_field: at, replay: {}}"), []string{"source.replay: replay records its own arrival times; drop arrival_time_field"}},
		{"replay with partition_field", pipe("source: {type: file, path: e.jsonl, partition_field: p, replay: {}}"), []string{"source.replay: replay assigns partitions itself; use replay.partition_by instead of partition_field"}},

		{"event_time missing", pipe("-event_time"), []string{"event_time.field: required"}},
		{"layout with epoch", pipe("event_time: {field: ts, format: epoch_ms, layout: '2006'}"), []string{"event_time.layout: only with format layout"}},
		{"format layout without layout", pipe("event_time: {field: ts, format: layout}"), []string{
			"event_time.layout: required with format layout",
			"event_time.timezone: required with a layout: timestamps without an offset need a zone"}},
		{"layout without zone", pipe("event_time: {field: ts, layout: '2006-01-02'}"), []string{"event_time.timezone: required with a layout: timestamps without an offset need a zone"}},
		{"a Java pattern as the layout", pipe("event_time: {field: ts, layout: \"yyyy-MM-dd'T'HH:mm:ss\", timezone: UTC}"), []string{`event_time.layout: "yyyy-MM-dd'T'HH:mm:ss" has no element of Go's reference time (Mon Jan 2 15:04:05 2006, e.g. "2006-01-02 15:04:05"): it reads no timestamp; as a Java pattern it is "2006-01-02T15:04:05"`}},
		{"a layout of text", pipe("event_time: {field: ts, layout: 'date', timezone: UTC}"), []string{`event_time.layout: "date" has no element of Go's reference time (Mon Jan 2 15:04:05 2006, e.g. "2006-01-02 15:04:05"): it reads no timestamp`}},
		{"event_time zone unknown", pipe("event_time: {field: ts, timezone: Mars/Olympus}"), []string{`event_time.timezone: unknown zone "Mars/Olympus"`}},
		{"out_of_orderness negative", pipe("event_time: {field: ts, out_of_orderness: -1s}"), []string{"event_time.out_of_orderness: must not be negative"}},
		{"idle_timeout negative", pipe("event_time: {field: ts, idle_timeout: -1s}"), []string{"event_time.idle_timeout: must not be negative"}},
		{"idle_advance without idle_timeout", pipe("event_time: {field: ts, idle_advance: true}"), []string{"event_time.idle_advance: needs idle_timeout: the watermark advances with processing time only once every partition is idle, and without idle_timeout none ever is"}},
		{"max_future negative", pipe("event_time: {field: ts, max_future: -1h}"), []string{"event_time.max_future: must not be negative (0s turns the rule off)"}},
		{"max_past negative", pipe("event_time: {field: ts, max_past: -1h}"), []string{"event_time.max_past: must not be negative (0s turns the rule off)"}},
		{"max_past sub-millisecond", pipe("event_time: {field: ts, max_past: 1500us}"), []string{"event_time.max_past: 1.5ms is not a whole number of milliseconds"}},
		{"ingest time is the event time", pipe("event_time: {field: ts, ingest_time_field: ts}"), []string{`event_time.ingest_time_field: "ts" is the event-time field itself: name the field that says when the event was produced or ingested (produced_at)`}},

		{"window missing", pipe("-window"), []string{"window.type: required (tumbling, sliding, session, cumulate or global)"}},
		{"tumbling without size", pipe("window: {type: tumbling}"), []string{"window.size: required and positive for tumbling windows"}},
		{"tumbling with slide", pipe("window: {type: tumbling, size: 1m, slide: 1m}"), []string{"window: slide, step and gap are not used by tumbling windows"}},
		{"sliding without slide", pipe("window: {type: sliding, size: 1h}"), []string{"window: size and slide are required and positive for sliding windows"}},
		{"sliding slide above size", pipe("window: {type: sliding, size: 1m, slide: 2m}"), []string{"window.slide: 2m0s is longer than size 1m0s: an event between two windows would belong to none (use a filter to sample)"}},
		{"sliding too many windows", pipe("window: {type: sliding, size: 24h, slide: 1m}"), []string{"window.slide: size/slide is up to 1440 windows per event; at most 1000"}},
		{"sliding too many windows, not a multiple", pipe("window: {type: sliding, size: 1000s, slide: 999ms}"), []string{"window.slide: size/slide is up to 1002 windows per event; at most 1000"}},
		{"sliding with gap", pipe("window: {type: sliding, size: 1h, slide: 30m, gap: 1m}"), []string{"window: gap and step are not used by sliding windows"}},
		{"session without gap", pipe("window: {type: session}"), []string{"window.gap: required and positive for session windows"}},
		{"session with size", pipe("window: {type: session, gap: 5m, size: 1h}"), []string{"window: size, slide, step and offset are not used by session windows"}},
		{"sub-millisecond size", pipe("window: {type: tumbling, size: 1500us}"), []string{"window: sizes are in whole milliseconds"}},
		{"cumulate without step", pipe("window: {type: cumulate, size: 1h}"), []string{"window: size and step are required and positive for cumulate windows"}},
		{"cumulate step longer", pipe("window: {type: cumulate, size: 1h, step: 2h}"), []string{"window.step: 2h0m0s is longer than size 1h0m0s"}},
		{"cumulate not a multiple", pipe("window: {type: cumulate, size: 10m, step: 3m}"), []string{"window.size: 10m0s is not a multiple of step 3m0s: a cumulate window grows by whole steps to its size"}},
		{"cumulate many steps", pipe("window: {type: cumulate, size: 1h, step: 1s}"), []string{"window.step: size/step is 3600 windows per event; at most 1000"}},
		{"cumulate days", pipe("window: {type: cumulate, size: 48h, step: 24h}"), []string{"window.size: cumulate windows of whole days are not supported (their steps would not follow local midnights)"}},
		{"cumulate with gap", pipe("window: {type: cumulate, size: 1h, step: 10m, gap: 1m}"), []string{"window: slide and gap are not used by cumulate windows"}},
		{"global with size", pipe("window: {type: global, size: 1h}"), []string{"window: size, slide, step, gap and offset are not used by the global window"}},
		{"sliding with step", pipe("window: {type: sliding, size: 1h, slide: 30m, step: 1m}"), []string{"window: gap and step are not used by sliding windows"}},
		{"offset negative", pipe("window: {type: tumbling, size: 1h, offset: -1m}"), []string{"window.offset: must not be negative"}},
		{"window zone unknown", pipe("window: {type: tumbling, size: 1h, timezone: Mars/Olympus}"), []string{`window.timezone: unknown zone "Mars/Olympus"`}},
		{"calendar offset", pipe("window: {type: tumbling, size: 24h, offset: 1h}"), []string{"window.offset: calendar (whole-day) windows align to local midnight; use timezone instead of offset"}},
		{"allowed_lateness negative", pipe("allowed_lateness: -1m"), []string{"allowed_lateness: must not be negative"}},

		{"aggregates missing", pipe("-aggregates"), []string{"aggregates: at least one aggregate is required, e.g. {events: count()}"}},
		{"key empty name", pipe(`key: [""]`), []string{"key: empty field name"}},
		{"key twice", pipe("key: [a, a]"), []string{`key: "a" listed twice`}},
		{"key reserved", pipe("key: [version]"), []string{`key: "version" is a reserved output column; rename it with fields`}},
		{"aggregate named like a key", pipe("key: [store]", "aggregates: {store: count()}"), []string{"aggregates.store: name also used by a key column"}},
		{"aggregate reserved", pipe("aggregates: {op: count()}"), []string{`aggregates.op: "op" is a reserved output column`}},
		{"early_every negative", pipe("emit: {early_every: -1s}"), []string{"emit.early_every: must not be negative"}},
		{"early_every with final", pipe("emit: {mode: final, early_every: 1m}"), []string{"emit.early_every: early firings emit provisional rows; mode final emits only final rows (use update or retract)"}},

		{"late drop with sink", pipe("late: {policy: drop, sink: {type: jsonl, path: l.jsonl}}"), []string{"late.sink: policy drop writes nothing; remove the sink or use policy side_output"}},
		{"late side_output without sink", pipe("late: {policy: side_output}"), []string{"late.sink: required with policy side_output"}},
		{"late sink sqlite without table", pipe("late: {sink: {type: sqlite, path: l.db}}"), []string{"late.sink.table: required for a sqlite side output: the table of its records, e.g. revenue_late"}},
		{"late sink sqlite lineage", pipe("late: {sink: {type: sqlite, path: l.db, table: late, lineage: false}}"), []string{"late.sink.lineage: only for sqlite and postgres result sinks"}},
		{"late sink without type", pipe("late: {sink: {path: l.jsonl}}"), []string{"late.sink.type: required (sqlite, postgres, jsonl, kafka, parquet or stdout)"}},
		{"late sink jsonl without path", pipe("late: {sink: {type: jsonl}}"), []string{"late.sink.path: required for jsonl"}},
		{"quarantine sink sqlite without path", pipe("quarantine: {sink: {type: sqlite, table: q}}"), []string{"quarantine.sink.path: required for sqlite"}},
		{"quarantine sink without type", pipe("quarantine: {sink: {path: q.jsonl}}"), []string{"quarantine.sink.type: required (sqlite, postgres, jsonl, kafka, parquet or stdout)"}},
		{"quarantine max_fraction out of range", pipe("quarantine: {max_fraction: 1.5}"), []string{"quarantine.max_fraction: 1.5: want a share from 0 (no quarantined record tolerated) to below 1 (0.01: fail above 1 %)"}},
		{"conflicts max_fraction", pipe("conflicts: {max_fraction: 0.1}"), []string{"conflicts.max_fraction: only for quarantine (conflicting redeliveries are not invalid records)"}},

		{"sink without type", pipe("sinks: [{path: a.db}]"), []string{"sinks[0].type: required (sqlite, postgres, jsonl, kafka, parquet, iceberg or stdout)"}},
		{"parquet sink keys", pipe("sinks: [{type: parquet, path: out/r, decimal_scale: 20, partition_by: [day, day]}]"),
			[]string{"sinks[0].decimal_scale: 20: want 0 to 19", `sinks[0].partition_by[1]: "day" twice`}},
		{"file keys on another sink", pipe("sinks: [{type: jsonl, path: r.jsonl, partition_by: [day], catalog: {type: hadoop}}]"),
			[]string{"sinks[0].partition_by: only for parquet and iceberg sinks", "sinks[0].catalog: only for iceberg sinks"}},
		{"iceberg side output", pipe("late: {policy: side_output, sink: {type: iceberg, path: w}}"),
			[]string{"late.sink.type: iceberg takes result rows; a side output goes to parquet, jsonl, kafka or a table"}},
		{"iceberg catalogs", pipe("sinks: [{type: iceberg, path: w, table: a.b.c, catalog: {type: rest, uri: catalog:8181}}, {type: iceberg, path: w, catalog: {type: sql, token: t}}]"),
			[]string{`sinks[0].table: "a.b.c": want <table> or <namespace>.<table> (letters, digits, '_')`, `sinks[0].catalog.uri: "catalog:8181": catalog type rest needs the catalog's http:// or https:// URL`,
				"sinks[1].catalog.uri: required for catalog type sql: a postgres:// URL or a SQLite file", "sinks[1].catalog.token: only for catalog type rest"}},
		{"sink type malformed", pipe(`sinks: [{type: "Kafka!"}]`), []string{`sinks[0].type: "Kafka!" is not a sink type name`}},
		{"sqlite without path", pipe("sinks: [{type: sqlite}]"), []string{"sinks[0].path: required for sqlite"}},
		{"jsonl without path", pipe("sinks: [{type: stdout}, {type: jsonl}]"), []string{"sinks[1].path: required for jsonl"}},
		{"table not an identifier", pipe("sinks: [{type: sqlite, path: a.db, table: a-b}]"), []string{`sinks[0].table: "a-b" is not a plain SQL identifier (letters, digits, '_')`}},
		{"kafka sink without brokers and topic", pipe("sinks: [{type: kafka}]"), []string{"sinks[0].brokers: required for kafka", "sinks[0].topic: required for kafka"}},
		{"kafka sinks share a topic", pipe(`sinks: [{type: kafka, brokers: "k:1", topic: revenue}]`, `late: {policy: side_output, sink: {type: kafka, brokers: "k:1", topic: revenue}}`), []string{`late.sink.topic: "revenue" is also the topic of sinks[0]`}},
		{"select with window and key", pipe("select: [a]", "key: [k]", "-aggregates"), []string{"window: not used by a select stage (it has no window: every record is emitted as it comes)", "key: not used by a select stage (it has no window: every record is emitted as it comes)"}},
		{"select renames", pipe("select: [a as b, c AS b, d as version]", "-window", "-aggregates"), []string{`select: "c AS b": empty or listed twice`, `select: "version" is a reserved output column; rename it (d as other)`}},
		{"select into sqlite", pipe("select: [a, a, version]", "-window", "-aggregates", "sinks: [{type: sqlite, path: x.db}]"), []string{`select: "a": empty or listed twice`, `select: "version" is a reserved output column; rename it (version as other)`, "sinks[0].type: a select stage's rows have no key for an upsert table: write them to jsonl, parquet, iceberg (appends), stdout or kafka"}},
		{"postgres without dsn", pipe("sinks: [{type: postgres}]"), []string{"sinks[0].dsn: required for postgres, e.g. postgres://user@localhost:5432/db or ${PGURL}"}},
		{"postgres table", pipe("sinks: [{type: postgres, dsn: x, table: a.b.c}]"), []string{`sinks[0].table: "a.b.c" is not a plain SQL identifier, optionally schema-qualified (letters, digits, '_')`}},
		{"postgres mode", pipe("sinks: [{type: postgres, dsn: x, mode: append}]"), []string{`sinks[0].mode: "append": want results or ledger`}},
		{"postgres ledger_table in results mode", pipe("sinks: [{type: postgres, dsn: x, ledger_table: l}]"), []string{"sinks[0].ledger_table: only for mode ledger"}},
		{"postgres ledger tables equal", pipe("dedup: {key: id, ttl: 1h}", "sinks: [{type: postgres, dsn: x, mode: ledger, table: t, ledger_table: t}]"), []string{"sinks[0].ledger_table: must differ from table (the aggregate table)"}},
		{"postgres ledger without dedup", pipe("sinks: [{type: postgres, dsn: x, mode: ledger}]"), []string{"sinks[0].mode: ledger needs event ids: add dedup: {key: <event id field>, ttl: ...} (or a contract with an event_id)"}},
		{"postgres ledger sliding", pipe("dedup: {key: id, ttl: 1h}", "window: {type: sliding, size: 2m, slide: 1m}", "sinks: [{type: postgres, dsn: x, mode: ledger}]"), []string{`sinks[0].mode: ledger needs tumbling windows (each event counts in exactly one window), not "sliding"`}},
		{"postgres side output without table", pipe("quarantine: {sink: {type: postgres, dsn: x}}"), []string{"quarantine.sink.table: required for a postgres side output: the table of its records, e.g. revenue_late"}},
		{"postgres side output ledger", pipe("conflicts: {sink: {type: postgres, dsn: x, table: c, mode: ledger}}"), []string{"conflicts.sink.mode: a side output is a table of records; ledger is for result sinks"}},
		{"retries out of range", pipe("sinks: [{type: postgres, dsn: x, retries: 21}]"), []string{"sinks[0].retries: 21: want 0 to 20"}},
		{"retries on sqlite", pipe("sinks: [{type: sqlite, path: a.db, retries: 2}]"), []string{"sinks[0].retries: only for postgres"}},
		{"two outputs share a table", pipe("sinks: [{type: sqlite, path: a.db, table: t}]", "quarantine: {sink: {type: sqlite, path: a.db, table: t}}"), []string{`sinks[0].table: "t" is also a table of quarantine.sink in the same database: each output needs its own table`}},
		{"replace on jsonl", pipe("sinks: [{type: jsonl, path: a.jsonl, replace: true}]"), []string{"sinks[0].replace: only for sqlite and postgres (a table tidemark created)"}},

		{"several at once", pipe("-name", "window: {type: tumbling}", "-aggregates"), []string{
			"name: required",
			"window.size: required and positive for tumbling windows",
			"aggregates: at least one aggregate is required, e.g. {events: count()}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			want := "x.yaml: " + strings.Join(tc.want, "\n")
			if err == nil || err.Error() != want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant:\n%s", tc.src, err, want)
			}
		})
	}
}

func TestValidateStageErrors(t *testing.T) {
	const head = "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\n"
	const ok = "{name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}, emit: {mode: retract}}"
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"stages and top-level window", head + "window: {type: tumbling, size: 1m}\nstages: [" + ok + "]\n",
			[]string{"stages: use either stages or the top-level stage keys (filter, fields, key, window, allowed_lateness, aggregates, emit, late, sinks), not both"}},
		{"stages and top-level emit", head + "emit: {mode: final}\nstages: [" + ok + "]\n",
			[]string{"stages: use either stages or the top-level stage keys (filter, fields, key, window, allowed_lateness, aggregates, emit, late, sinks), not both"}},
		{"stages and top-level late", head + "late: {policy: drop}\nstages: [" + ok + "]\n",
			[]string{"stages: use either stages or the top-level stage keys (filter, fields, key, window, allowed_lateness, aggregates, emit, late, sinks), not both"}},
		{"stage name missing", head + "stages: [{window: {type: tumbling, size: 1m}, aggregates: {n: count()}}]\n",
			[]string{"stages[0].name: required"}},
		{"stage name bad", head + "stages: [{name: 1st, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}]\n",
			[]string{`stages[0].name: "1st" must start with a letter and hold only letters, digits, '_' and '-'`}},
		{"stage name twice", head + "stages: [" + ok + ", " + ok + "]\n",
			[]string{`stages[1].name: "a" used twice (or is the reserved name "source")`}},
		{"stage named source", head + "stages: [{name: source, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}]\n",
			[]string{`stages[0].name: "source" used twice (or is the reserved name "source")`}},
		{"input unknown", head + "stages: [{name: a, input: later, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}]\n",
			[]string{`stages[0].input: "later" is neither "source" nor an earlier stage`}},
		{"stage event_time without field", head + "stages: [" + ok + ", {name: b, event_time: {format: rfc3339}, window: {type: tumbling, size: 1h}, aggregates: {n: count()}}]\n",
			[]string{"stages[1].event_time.field: required"}},
		{"stage keys prefixed", head + "stages: [" + ok + ", {name: b, window: {type: sliding, size: 1h}, key: [op], sinks: [{type: sqlite}]}]\n",
			[]string{
				"stages[1].window: size and slide are required and positive for sliding windows",
				"stages[1].aggregates: at least one aggregate is required, e.g. {events: count()}",
				`stages[1].key: "op" is a reserved output column; rename it with fields`,
				"stages[1].sinks[0].path: required for sqlite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			want := "x.yaml: " + strings.Join(tc.want, "\n")
			if err == nil || err.Error() != want {
				t.Errorf("Parse:\n%s\nerror:\n%v\nwant:\n%s", tc.src, err, want)
			}
		})
	}
}

// TestValidateGoOnly covers what YAML cannot express: a repeated aggregate
// name (YAML rejects a repeated mapping key) and Validate without Parse.
func TestValidateGoOnly(t *testing.T) {
	p := mustParse(t, pipe())
	p.Aggregates = append(p.Aggregates, NamedExpr{Name: "n", Expr: "count()"})
	if err := p.Validate(); err == nil || err.Error() != "aggregates.n: listed twice" {
		t.Errorf("Validate() = %v, want aggregates.n: listed twice", err)
	}
	var empty Pipeline
	empty.Defaults()
	want := strings.Join([]string{
		"name: required",
		"source.type: required (file, kafka, postgres_cdc or nexmark)",
		"event_time.field: required",
		"window.type: required (tumbling, sliding, session, cumulate or global)",
		"aggregates: at least one aggregate is required, e.g. {events: count()}",
	}, "\n")
	if err := empty.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() of the zero pipeline:\n%v\nwant:\n%s", err, want)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string // substrings of the error
	}{
		{"unknown top-level key", pipe("bogus: 1"), []string{"x.yaml: ", `[6:1] unknown field "bogus"`, ">  6 | bogus: 1"}},
		{"unknown nested key", pipe("emit: {mode: update, early: 1m}"), []string{`[6:22] unknown field "early"`}},
		{"unknown key in a list", "name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - name: a\n    windows: {type: tumbling}\n",
			[]string{`[6:5] unknown field "windows"`}},
		{"unknown replay key", pipe("source:\n  type: file\n  path: e.jsonl\n  replay:\n    jitter: 1s"), []string{`[6:5] unknown field "jitter"`}},
		{"key twice", pipe("name: q\nname: r"), []string{`mapping key "name" already defined`}},
		{"list for a string", pipe("key: Country"), []string{"[6:6] string was used where sequence is expected"}},
		{"sequence for the pipeline", "- 1\n", []string{"[1:1] sequence was used where mapping is expected"}},
		{"empty file", " \n\t\n", []string{"x.yaml: empty pipeline file"}},
		// goccy/go-yaml v1.19.2 panics on these (goccy/go-yaml#735); Parse
		// must return an error instead.
		{"tag without value for a list", pipe("key: !foo"), []string{"x.yaml: cannot decode the YAML (the decoder failed: "}},
		{"tag without value for a list in a stage", "stages:\n  - key: !00\n", []string{"x.yaml: cannot decode the YAML"}},
		{"expression null", pipe("fields: {a: }"), []string{"x.yaml: [6:10] a: the expression is empty"}},
		{"comma in a flow mapping", pipe("aggregates: {t: sum(round(x, 2))}"), []string{"2)): the expression is empty (in a flow mapping {a: f(x, y)} a comma ends the entry: quote expressions that hold commas)"}},
		{"schema type not a string", pipe("source: {type: file, path: e.jsonl, schema: {a: [int]}}"), []string{"a: type must be a string such as int or decimal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse:\n%s\nsucceeded, want an error", tc.src)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseDurations(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  Duration
		err   string
	}{
		{"90s", Duration(90 * time.Second), ""},
		{`"3m"`, Duration(3 * time.Minute), ""},
		{"1h30m", Duration(90 * time.Minute), ""},
		{"250ms", Duration(250 * time.Millisecond), ""},
		{"~", 0, ""},
		{"", 0, ""},
		{"30", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got 30 (a bare number has no unit)`},
		{"0", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got 0 (a bare number has no unit)`},
		{"1.5", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got 1.5 (a bare number has no unit)`},
		{"true", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got true`},
		{"[1m]", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got a list`},
		{"{m: 1}", 0, `x.yaml: [6:19] duration must be a Go duration string such as "90s" or "3m", got a mapping`},
		{`"30"`, 0, `x.yaml: [6:19] duration "30": want a Go duration string such as "90s", "3m" or "24h"`},
		{"5 minutes", 0, `x.yaml: [6:19] duration "5 minutes": want a Go duration string such as "90s", "3m" or "24h"`},
		{"1d", 0, `x.yaml: [6:19] duration "1d": want a Go duration string such as "90s", "3m" or "24h"`},
		{`""`, 0, `x.yaml: [6:19] duration "": want a Go duration string such as "90s", "3m" or "24h"`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			src := pipe("allowed_lateness: " + tc.value)
			p, err := Parse("x.yaml", []byte(src))
			switch {
			case tc.err != "":
				// The message, then the offending line shown with a caret.
				if err == nil || !strings.HasPrefix(err.Error(), tc.err+"\n") || !strings.Contains(err.Error(), ">  6 | allowed_lateness: "+tc.value) {
					t.Errorf("error = %v, want %s and the line", err, tc.err)
				}
			case err != nil:
				t.Errorf("Parse: %v", err)
			case p.AllowedLateness != tc.want:
				t.Errorf("allowed_lateness = %v, want %v", p.AllowedLateness, tc.want)
			}
		})
	}
}

func TestParseOrderedMaps(t *testing.T) {
	p := mustParse(t, pipe(
		"source: {type: file, path: e.jsonl, schema: {z: int, a: decimal, m: timestamp, b: bool}}",
		"fields:\n  zeta: a * 2\n  alpha: zeta + 1\n  mid: \"2.50\"\n  num: 2.50\n  yes: true",
		"aggregates:\n  z_last: max(a)\n  a_first: count()\n  m: sum(zeta)",
	))
	eq(t, "source.schema", p.Source.Schema, FieldTypes{{"z", "int"}, {"a", "decimal"}, {"m", "timestamp"}, {"b", "bool"}})
	// An unquoted number is read by YAML as a number: its written scale
	// is lost (documented in NamedExprs and docs/pipeline.md).
	eq(t, "fields", p.Fields, NamedExprs{{"zeta", "a * 2"}, {"alpha", "zeta + 1"}, {"mid", "2.50"}, {"num", "2.50"}, {"yes", "true"}})
	eq(t, "aggregates", p.Aggregates, NamedExprs{{"z_last", "max(a)"}, {"a_first", "count()"}, {"m", "sum(zeta)"}})
	if typ, ok := p.Source.Schema.Lookup("m"); !ok || typ != "timestamp" {
		t.Errorf("Lookup(m) = %q, %v", typ, ok)
	}
	if _, ok := p.Source.Schema.Lookup("nope"); ok {
		t.Errorf("Lookup(nope) found a type")
	}

	// Marshal keeps the order too, and the result parses back the same.
	out, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, string(out))
	eq(t, "round trip fields", back.Fields, p.Fields)
	eq(t, "round trip aggregates", back.Aggregates, p.Aggregates)
	eq(t, "round trip schema", back.Source.Schema, p.Source.Schema)
	eq(t, "round trip window", back.Window, p.Window)
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"DIR": "/data", "EMPTY": "", "N": "7"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		in, want, err string
	}{
		{"path: ${DIR}/x.csv", "path: /data/x.csv", ""},
		{"path: ${DIR:-/other}/x.csv", "path: /data/x.csv", ""},
		{"path: ${MISSING:-out}/x.csv", "path: out/x.csv", ""},
		{"path: ${EMPTY:-fallback}", "path: fallback", ""},
		{"path: ${MISSING:-}x", "path: x", ""},
		{"seed: ${N}${N}", "seed: 77", ""},
		{"# comment ${DIR}", "# comment ${DIR}", ""},
		{"  # ${UNSET_X}", "  # ${UNSET_X}", ""},
		{"plain $DIR and ${DIR-x} and ${1X}", "plain $DIR and ${DIR-x} and ${1X}", ""},
		{"path: ${MISSING}", "", "environment variable MISSING is not set (write ${MISSING:-default} to give a default)"},
		{"path: ${EMPTY}", "", "environment variable EMPTY is not set (write ${EMPTY:-default} to give a default)"},
		{"a: ${FIRST}\nb: ${SECOND}", "", "environment variable FIRST is not set (write ${FIRST:-default} to give a default)"},
	} {
		got, err := ExpandEnv([]byte(tc.in), lookup)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("ExpandEnv(%q) error = %v, want %s", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("ExpandEnv(%q): %v", tc.in, err)
		case string(got) != tc.want:
			t.Errorf("ExpandEnv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseEnv(t *testing.T) {
	t.Setenv("TIDEMARK_TEST_DIR", "in")
	t.Setenv("TIDEMARK_TEST_EMPTY", "")
	os.Unsetenv("TIDEMARK_TEST_UNSET")

	p := mustParse(t, pipe("source: {type: file, path: ${TIDEMARK_TEST_DIR}/e.jsonl}",
		"sinks: [{type: sqlite, path: '${TIDEMARK_TEST_UNSET:-out}/r.db'}, {type: jsonl, path: ${TIDEMARK_TEST_EMPTY:-log}/c.jsonl}]"))
	eq(t, "source.path", p.Source.Path, "in/e.jsonl")
	eq(t, "sinks[0].path", p.Sinks[0].Path, "out/r.db")
	eq(t, "sinks[1].path", p.Sinks[1].Path, "log/c.jsonl")

	// The extension is seen after expansion.
	t.Setenv("TIDEMARK_TEST_FILE", "events.csv")
	p = mustParse(t, pipe("source: {type: file, path: data/${TIDEMARK_TEST_FILE}}"))
	eq(t, "source.format", p.Source.Format, "csv")

	// A line that is only a comment is not expanded.
	mustParse(t, pipe("# a comment naming ${TIDEMARK_TEST_UNSET} is left alone"))
	for _, src := range []string{
		pipe("source: {type: file, path: ${TIDEMARK_TEST_UNSET}/e.jsonl}"),
	} {
		_, err := Parse("x.yaml", []byte(src))
		want := "x.yaml: environment variable TIDEMARK_TEST_UNSET is not set (write ${TIDEMARK_TEST_UNSET:-default} to give a default)"
		if err == nil || err.Error() != want {
			t.Errorf("Parse:\n%s\nerror = %v, want %s", src, err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("TIDEMARK_DATA", "")
	// The example names a contract, which fills in dedup.key: Load, which
	// validates without it, says so; Decode reads it.
	const example = "../examples/online-retail/pipeline.yaml"
	if _, err := Load(example); err == nil || !strings.Contains(err.Error(), "dedup.key: required") {
		t.Errorf("Load(%s) = %v, want the dedup.key error (the contract is not applied)", example, err)
	}
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(example, data)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	eq(t, "contract", p.Contract, "examples/online-retail/contract.yaml")
	eq(t, "source.path", p.Source.Path, "../shared/data/online-retail/by-day/*.csv")
	eq(t, "source.replay", *p.Source.Replay, Replay{Seed: 7, Delay: Duration(2 * time.Minute), StragglerFraction: 0.03,
		MaxDelay: Duration(3 * time.Hour), RedeliverFraction: 0.01, ConflictFraction: 0.0005, ConflictField: "Quantity",
		Partitions: 4, PartitionBy: "InvoiceNo"})
	eq(t, "event_time.format", p.EventTime.Format, "layout")
	eq(t, "late.policy", p.Late.Policy, "side_output")
	eq(t, "dedup.ttl", p.Dedup.TTL, Duration(24*time.Hour))
	eq(t, "contributions.sink", *p.Contributions.Sink, Sink{Type: "jsonl", Path: "out/revenue_hourly.events.jsonl"})

	if _, err := Load("testdata/does-not-exist.yaml"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// FuzzParse checks that no input makes Parse panic, and that a pipeline
// Parse accepts is valid, defaulted and has resolvable stages.
//
//	go test -fuzz=FuzzParse -fuzztime=60000x ./spec
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../examples/online-retail/pipeline.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(pipe()))
	f.Add([]byte(twoStages))
	f.Add([]byte(pipe("source: {type: file, path: e.csv, csv: {header: false, columns: [a, b]}, replay: {straggler_fraction: .nan}}")))
	f.Add([]byte(pipe("fields: {a: 1, b: [1], c: {d: e}}", "key: [a, b]")))
	f.Add([]byte(pipe("window: {type: sliding, size: 1h, slide: 1ms}", "allowed_lateness: 9223372036854775807ns")))
	f.Add([]byte("name: &a p\nsource: *a\n"))
	f.Add([]byte("{name: ${X:-p}, stages: [{input: q}, {name: q}]}\n"))
	f.Add([]byte("%YAML 1.2\n---\nname: p\n...\n---\nname: q\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse accepted a pipeline that Validate rejects: %v", err)
		}
		seen := map[string]bool{"source": true}
		for _, st := range p.StageList() {
			if st.Emit.Mode == "" || st.Late.Policy == "" || st.Window.Timezone == "" {
				t.Fatalf("stage %q lacks defaults: %+v", st.Name, st)
			}
			if !seen[st.Input] {
				t.Fatalf("stage %q reads %q, which is not earlier", st.Name, st.Input)
			}
			seen[st.Name] = true
		}
		if p.EventTime.Format == "" || p.Source.CSV.Header == nil || p.Source.CSV.Delimiter == "" {
			t.Fatalf("pipeline lacks defaults: %+v", p)
		}
	})
}
