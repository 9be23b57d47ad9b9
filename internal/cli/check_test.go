package cli

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkPipeline is the README's ten-line pipeline: late payments dropped
// from a revenue sum (an error), no quarantine sink and key fields no
// schema declares (two warnings), and four infos.
const checkPipeline = `name: revenue_minute
source: {type: file, path: orders.jsonl, schema: {amount: decimal}}
event_time: {field: paid_at, out_of_orderness: 2m, idle_timeout: 1m}
filter: 'event_type in ["PAYMENT", "REFUND"]'
fields: {delta: 'event_type == "REFUND" ? -amount : amount'}
key: [store_id, currency]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
allowed_lateness: 3m
aggregates: {order_count: count(), revenue_amount: sum(delta)}
sinks: [{type: sqlite, path: out/tidemark.db, table: revenue_minute}]
`

// checkPipelineText is docs/check.md's example output.
const checkPipelineText = `error TM203 drop-money-metric
  key  late.policy
  why  late.policy drop discards events after allowed_lateness, but revenue_amount sums money: dropped payments or refunds make the totals wrong with no record of what is missing
  fix  keep them: late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}, and correct the totals from that output

warning TM106 quarantine-not-kept
  key  quarantine.sink
  why  records that do not decode, have no valid event time or break a contract rule are only counted: their bytes and the reason are lost
  fix  add quarantine: {sink: {type: jsonl, path: out/quarantine.jsonl}} (or a kafka topic)

warning TM109 key-field-undeclared
  key  key
  why  key fields "store_id", "currency" are declared in no schema (no contract, and source.schema lists only some fields): a misspelt name reads as null in every record, and every row falls into one null group without an error
  fix  declare every field in source.schema and set source.schema_complete: true (or name a contract that declares the fields): a field that is not among them then stops the run before anything is written

info TM101 dedup-missing
  key  dedup
  why  no contract says whether the events can be duplicated, and the pipeline does not deduplicate
  fix  name a contract (duplicates_possible, event_id), or add dedup

info TM115 quarantine-share-unbounded
  key  quarantine.max_fraction
  why  nothing bounds the share of records the run may quarantine: a source read in the wrong format (Avro over a JSON topic) quarantines every record, and the run exits 0
  fix  set quarantine.max_fraction: 0.01 (or the share the source may really have) to fail the run above it

info TM202 lateness-below-delay
  key  allowed_lateness
  why  unknown: nothing states how late events normally arrive, and late.policy drop discards those after 5m
  fix  name a contract with max_normal_delay (measured), or keep late events with late: {policy: side_output, sink: ...}

info TM402 provisional-rows
  key  sinks[0]
  why  revenue_minute holds provisional rows (is_final = false) until allowed_lateness 3m after each window's end; each revision raises version
  fix  show rows with is_final = false as provisional; settlement and exports read WHERE is_final (or use emit.mode final)

pipeline.yaml: 1 error, 2 warnings, 4 info
`

// checkClean answers every question of the checklist.
const checkClean = `name: revenue_minute
source: {type: file, path: orders.jsonl, schema: {amount: decimal, store_id: string}}
event_time: {field: paid_at, out_of_orderness: 2m}
dedup: {key: event_id, ttl: 24h}
conflicts: {sink: {type: jsonl, path: out/conflicts.jsonl}}
quarantine: {max_fraction: 0.01, sink: {type: jsonl, path: out/quarantine.jsonl}}
key: [store_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 3m
aggregates: {revenue: sum(amount)}
emit: {mode: final}
late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
sinks: [{type: sqlite, path: out/revenue.db}]
`

// checkWarnOnly has warnings and infos but no error: exit 0.
const checkWarnOnly = `name: revenue_minute
source: {type: file, path: orders.jsonl, schema: {amount: decimal, store_id: string}}
event_time: {field: paid_at, out_of_orderness: 2m}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
`

// TestCheckText: the text report of docs/check.md, exit 1 on an error.
func TestCheckText(t *testing.T) {
	doc := readFile(t, "../../docs/check.md")
	inDir(t, map[string]string{"pipeline.yaml": checkPipeline})
	code, out, errOut := run(t, "check", "pipeline.yaml")
	if code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out != checkPipelineText {
		t.Errorf("report:\n%s\nwant:\n%s", out, checkPipelineText)
	}
	if want := "tidemark: check: pipeline.yaml has 1 error\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.Contains(doc, "```\n"+checkPipelineText+"```\n") {
		t.Errorf("docs/check.md does not show the report of the README pipeline as it is now")
	}
}

// TestCheckJSON: --format json is an array of objects with the keys id,
// rule, severity, key, why, fix, in that order; the same findings as the
// text report.
func TestCheckJSON(t *testing.T) {
	inDir(t, map[string]string{"pipeline.yaml": checkPipeline, "clean.yaml": checkClean})
	code, out, _ := run(t, "check", "--format", "json", "pipeline.yaml")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasSuffix(out, "]\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("want one JSON array on one line, got %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var fs []struct {
		ID       string `json:"id"`
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
		Key      string `json:"key"`
		Why      string `json:"why"`
		Fix      string `json:"fix"`
	}
	if err := dec.Decode(&fs); err != nil {
		t.Fatalf("not an array of findings: %v\n%s", err, out)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Severity+" "+f.ID+" "+f.Rule+" "+f.Key)
		if f.Why == "" || f.Fix == "" {
			t.Errorf("finding without why or fix: %+v", f)
		}
	}
	want := []string{
		"error TM203 drop-money-metric late.policy",
		"warning TM106 quarantine-not-kept quarantine.sink",
		"warning TM109 key-field-undeclared key",
		"info TM101 dedup-missing dedup",
		"info TM115 quarantine-share-unbounded quarantine.max_fraction",
		"info TM202 lateness-below-delay allowed_lateness",
		"info TM402 provisional-rows sinks[0]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	// Key order, as documented.
	var raw []json.RawMessage
	json.Unmarshal([]byte(out), &raw)
	for _, r := range raw {
		var keys []string
		d := json.NewDecoder(bytes.NewReader(r))
		d.Token() // {
		for d.More() {
			k, _ := d.Token()
			keys = append(keys, k.(string))
			var v any
			d.Decode(&v)
		}
		if want := []string{"id", "rule", "severity", "key", "why", "fix"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("keys %q, want %q", keys, want)
		}
	}

	code, out, errOut := run(t, "check", "--format", "json", "clean.yaml")
	if code != 0 || out != "[]\n" || errOut != "" {
		t.Errorf("clean: exit %d, stdout %q, stderr %q; want 0, []", code, out, errOut)
	}
}

// TestCheckExitCodes: 0 without errors (warnings do not fail), 1 with
// one, 2 for usage and load errors with the loader's message.
func TestCheckExitCodes(t *testing.T) {
	inDir(t, map[string]string{
		"pipeline.yaml": checkPipeline,
		"clean.yaml":    checkClean,
		"warn.yaml":     checkWarnOnly,
		"invalid.yaml":  "name: p\nsource: {type: file, path: x.jsonl}\nevent_time: {field: ts}\nwindow: {type: tumbling}\naggregates: {n: count()}\n",
		"unknown.yaml":  "name: p\nbogus: 1\n",
		"uncompiled.yaml": "name: p\nsource: {type: file, path: x.jsonl}\nevent_time: {field: ts}\n" +
			"window: {type: tumbling, size: 1m}\naggregates: {n: sum(amount)}\n",
		"with-contract.yaml": "name: p\ncontract: missing.yaml\nsource: {type: file, path: x.jsonl}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n",
		"contract.yaml":      readFile(t, orderContract),
		"bad-contract.yaml":  "product: p\n",
	})
	cases := []struct {
		args   []string
		code   int
		stderr string // a part of stderr
		stdout string // a part of stdout
	}{
		{[]string{"check", "clean.yaml"}, 0, "", "clean.yaml: 0 errors, 0 warnings, 0 info\n"},
		{[]string{"check", "warn.yaml"}, 0, "", "warn.yaml: 0 errors, 1 warning, 2 info\n"},
		{[]string{"check", "pipeline.yaml"}, 1, "pipeline.yaml has 1 error", "1 error, 2 warnings, 4 info"},
		{[]string{"check"}, 2, "accepts 1 arg(s), received 0", ""},
		{[]string{"check", "a.yaml", "b.yaml"}, 2, "accepts 1 arg(s), received 2", ""},
		{[]string{"check", "--format", "xml", "clean.yaml"}, 2, `check: --format "xml": want text or json`, ""},
		{[]string{"check", "--bogus", "clean.yaml"}, 2, "unknown flag: --bogus", ""},
		{[]string{"check", "nowhere.yaml"}, 2, "nowhere.yaml: no such file or directory", ""},
		{[]string{"check", "invalid.yaml"}, 2, "window.size: required and positive for tumbling windows", ""},
		{[]string{"check", "unknown.yaml"}, 2, `unknown field "bogus"`, ""},
		{[]string{"check", "uncompiled.yaml"}, 2, "uncompiled.yaml: p: aggregates.n:", ""},
		{[]string{"check", "with-contract.yaml"}, 2, "contract: open missing.yaml", ""},
		{[]string{"check", "--contract", "bad-contract.yaml", "clean.yaml"}, 2, "bad-contract.yaml: owner: required", ""},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.stderr) || !strings.Contains(out, tc.stdout) {
			t.Errorf("%q: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", tc.args, code, tc.code, out, tc.stdout, errOut, tc.stderr)
		}
		if tc.code == 2 && out != "" {
			t.Errorf("%q: a load error prints no report, got %q", tc.args, out)
		}
	}
}

// TestCheckContractFlag: --contract applies a contract as run does: its
// duplicates_possible turns the missing dedup into an error.
func TestCheckContractFlag(t *testing.T) {
	inDir(t, map[string]string{"contract.yaml": readFile(t, orderContract), "p.yaml": `name: revenue
source: {type: file, path: orders.jsonl}
event_time: {out_of_orderness: 2m}
quarantine: {sink: {type: jsonl, path: out/quarantine.jsonl}}
key: [store_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 30m
aggregates: {revenue: sum(amount)}
emit: {mode: final}
late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
`})
	code, out, _ := run(t, "check", "--format", "json", "p.yaml")
	if code != 2 || out != "" {
		// Without the contract there is no event_time.field.
		t.Fatalf("without --contract: exit %d, %q", code, out)
	}
	code, out, errOut := run(t, "check", "--format", "json", "--contract", "contract.yaml", "p.yaml")
	if code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var fs []map[string]string
	if err := json.Unmarshal([]byte(out), &fs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f["severity"]+" "+f["id"]+" "+f["key"])
	}
	want := []string{"error TM101 dedup", "info TM108 order_by", "info TM115 quarantine.max_fraction"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestGroupAtLeastOnceRefused: a pipeline run by a group of instances
// with a Kafka sink that does not take part in the transactions
// (delivery: at_least_once) is refused by tidemark check and by tidemark
// run, before it connects to anything, naming the sink's key.
func TestGroupAtLeastOnceRefused(t *testing.T) {
	inDir(t, map[string]string{"group.yaml": `name: alo
source: {type: kafka, brokers: ["127.0.0.1:1"], topics: [t], assignment: group, group: g, schema: {amount: int}}
event_time: {field: ts}
stages:
  - name: s
    key: [k]
    window: {type: tumbling, size: 1m}
    aggregates: {n: count()}
    sinks: [{type: kafka, brokers: ["127.0.0.1:1"], topic: out, delivery: at_least_once}]
checkpoint: {dir: ck, interval: 1s}
`})
	want := "group.yaml: stages[0].sinks[0]: delivery at_least_once: a group hands partitions from instance to instance through transactions"
	for _, cmd := range []string{"check", "run"} {
		code, out, errOut := run(t, cmd, "group.yaml")
		if code != 2 || !strings.Contains(errOut, want) || out != "" {
			t.Errorf("tidemark %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", cmd, code, out, errOut, want)
		}
	}
}
