package check_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/check"
)

// now is the tests' current time (retention-short compares a Kafka
// start_timestamp with it).
var now = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// findings loads the pipeline at path as `tidemark check` does and checks
// it at now.
func findings(t *testing.T, path string) []check.Finding {
	t.Helper()
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	return check.RunAt(pl.Spec, pl.Contract, now)
}

// brief renders findings as "severity id key", in order.
func brief(fs []check.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.ID+" "+f.Key)
	}
	return out
}

// ruleCases are the examples of every rule: testdata/<rule name>/<file>,
// with the exact findings of that rule ("severity id key", in order).
// Pass files have none.
var ruleCases = []struct {
	file string
	want []string
}{
	{"dedup-missing/fail.yaml", []string{"error TM101 dedup"}},
	{"dedup-missing/fail-replay.yaml", []string{"error TM101 dedup"}},
	{"dedup-missing/fail-kafka.yaml", []string{"warning TM101 dedup"}},
	{"dedup-missing/fail-unknown.yaml", []string{"info TM101 dedup"}},
	{"dedup-missing/pass.yaml", nil},

	{"dedup-key-not-event-id/fail.yaml", []string{"warning TM102 dedup.key"}},
	{"dedup-key-not-event-id/pass.yaml", nil},

	{"no-checkpoint-unreplayable-source/fail.yaml", []string{"error TM103 checkpoint"}},
	{"no-checkpoint-unreplayable-source/fail-bounded.yaml", []string{"warning TM103 checkpoint"}},
	{"no-checkpoint-unreplayable-source/pass.yaml", nil},

	{"retention-short/fail.yaml", []string{"error TM104 source.start_timestamp"}},
	{"retention-short/fail-unknown.yaml", []string{"info TM104 source"}},
	{"retention-short/pass.yaml", nil},

	{"timestamp-rules-missing/fail.yaml", []string{"warning TM105 event_time.max_past"}},
	{"timestamp-rules-missing/fail-max-future-off.yaml", []string{"warning TM105 event_time.max_future"}},
	{"timestamp-rules-missing/pass.yaml", nil},

	{"quarantine-not-kept/fail.yaml", []string{"warning TM106 quarantine.sink"}},
	{"quarantine-not-kept/pass.yaml", nil},

	{"conflicts-not-kept/fail.yaml", []string{"warning TM107 conflicts.sink"}},
	{"conflicts-not-kept/pass.yaml", nil},

	{"ordering-unused/fail.yaml", []string{"info TM108 order_by"}},
	{"ordering-unused/pass.yaml", nil},

	{"key-field-undeclared/fail.yaml", []string{"warning TM109 key"}},
	{"key-field-undeclared/fail-stages.yaml", []string{"warning TM109 stages[0].key", "warning TM109 stages[1].key"}},
	{"key-field-undeclared/pass.yaml", nil},
	{"key-field-undeclared/pass-contract.yaml", nil},
	{"key-field-undeclared/pass-csv.yaml", nil},
	{"key-field-undeclared/pass-declared.yaml", nil},

	{"registry-compatibility-weaker/fail.yaml", []string{"info TM110 source.schema_registry"}},
	{"registry-compatibility-weaker/pass.yaml", nil},

	{"deprecated-version-produced/fail.yaml", []string{"info TM111 source.topics"}},
	{"deprecated-version-produced/pass.yaml", nil},

	{"output-overlaps-input/fail.yaml", []string{"error TM404 conflicts.sink.path"}},
	{"output-overlaps-input/fail-checkpoint.yaml", []string{"error TM404 late.sink.path"}},
	{"output-overlaps-input/pass.yaml", nil},

	{"processing-time-window/fail.yaml", []string{"error TM201 event_time.field"}},
	{"processing-time-window/fail-ingest-time.yaml", []string{"error TM201 event_time.field"}},
	{"processing-time-window/fail-kafka-timestamp-contract.yaml", []string{"error TM201 event_time.from"}},
	{"processing-time-window/fail-kafka-timestamp.yaml", []string{"warning TM201 event_time.from"}},
	{"processing-time-window/fail-name.yaml", []string{"warning TM201 event_time.field"}},
	{"processing-time-window/pass.yaml", nil},

	{"lateness-below-delay/fail.yaml", []string{"error TM202 allowed_lateness"}},
	{"lateness-below-delay/fail-replay.yaml", []string{"error TM202 allowed_lateness"}},
	{"lateness-below-delay/fail-unknown.yaml", []string{"info TM202 allowed_lateness"}},
	{"lateness-below-delay/pass.yaml", nil},
	{"lateness-below-delay/pass-side-output.yaml", nil},

	{"drop-money-metric/fail.yaml", []string{"error TM203 late.policy"}},
	{"drop-money-metric/fail-derived.yaml", []string{"error TM203 late.policy"}},
	{"drop-money-metric/pass.yaml", nil},
	{"drop-money-metric/pass-count.yaml", nil},

	{"idle-timeout-missing/fail.yaml", []string{"warning TM204 event_time.idle_timeout"}},
	{"idle-timeout-missing/fail-kafka.yaml", []string{"warning TM204 event_time.idle_timeout"}},
	{"idle-timeout-missing/fail-partition-field.yaml", []string{"warning TM204 event_time.idle_timeout"}},
	{"idle-timeout-missing/pass.yaml", nil},

	{"calendar-window-zone/fail.yaml", []string{"warning TM205 window.timezone"}},
	{"calendar-window-zone/fail-unknown.yaml", []string{"info TM205 window.timezone"}},
	{"calendar-window-zone/pass.yaml", nil},

	{"stage-lateness-chain/fail.yaml", []string{"error TM206 stages[1].allowed_lateness"}},
	{"stage-lateness-chain/pass.yaml", nil},

	{"dedup-ttl-short/fail.yaml", []string{"error TM301 dedup.ttl"}},
	{"dedup-ttl-short/fail-replay.yaml", []string{"error TM301 dedup.ttl"}},
	{"dedup-ttl-short/fail-backfill.yaml", []string{"warning TM301 dedup.ttl"}},
	{"dedup-ttl-short/pass.yaml", nil},
	{"dedup-ttl-short/pass-ledger.yaml", nil},

	{"checkpoint-settings/fail.yaml", []string{"error TM302 sinks[0].transaction_timeout", "warning TM302 checkpoint.retain"}},
	{"checkpoint-settings/pass.yaml", nil},
	{"checkpoint-settings/pass-timeout.yaml", nil},

	{"join-key-undeclared/fail.yaml", []string{"warning TM112 stages[0].join.on[0]"}},
	{"join-key-undeclared/pass.yaml", nil},
	{"join-key-undeclared/pass-string.yaml", nil},

	{"cdc-without-checkpoints/fail.yaml", []string{"warning TM113 checkpoint"}},
	{"cdc-without-checkpoints/pass.yaml", nil},

	{"cdc-database-not-ready/fail.yaml", []string{"info TM114 source.dsn"}},
	{"cdc-database-not-ready/pass.yaml", nil},

	{"join-input-can-stall/fail.yaml", []string{"warning TM207 stages[0].join.right.input"}},
	{"join-input-can-stall/pass.yaml", nil},

	{"join-state-bound/fail.yaml", []string{"info TM303 stages[0].join.ttl"}},
	{"join-state-bound/pass.yaml", nil},

	{"state-estimate/fail.yaml", []string{"warning TM304 state.backend"}},
	{"state-estimate/fail-windows.yaml", []string{"info TM304 state.backend"}},
	{"state-estimate/fail-disk.yaml", []string{"info TM304 state.backend"}},
	{"state-estimate/pass.yaml", nil},
	{"state-estimate/pass-disk.yaml", nil},
	{"state-estimate/pass-no-rate.yaml", nil},

	{"append-sink-duplicates/fail.yaml", []string{"error TM401 sinks[0]"}},
	{"append-sink-duplicates/fail-at-least-once.yaml", []string{"warning TM401 sinks[0].delivery", "warning TM401 sinks[1].delivery", "warning TM401 sinks[2].delivery"}},
	{"append-sink-duplicates/pass.yaml", nil},
	{"append-sink-duplicates/pass-exactly-once.yaml", nil},

	{"provisional-rows/fail.yaml", []string{"info TM402 sinks[0]", "info TM402 sinks[1]", "info TM402 sinks[2]"}},
	{"provisional-rows/fail-early.yaml", []string{"info TM402 sinks[0]", "info TM402 sinks[1]", "info TM402 sinks[2]"}},
	{"provisional-rows/pass.yaml", nil},
	{"provisional-rows/pass-no-lateness.yaml", nil},

	{"shared-output/fail.yaml", []string{"error TM403 stages[1].sinks[0].table", "error TM403 stages[1].late.sink.path"}},
	{"shared-output/pass.yaml", nil},
	{"shared-output/fail-lake.yaml", []string{"error TM403 stages[1].sinks[0].path", "error TM403 stages[1].sinks[1].table"}},
	{"shared-output/pass-lake.yaml", nil},

	{"quarantine-share-unbounded/fail.yaml", []string{"info TM115 quarantine.max_fraction"}},
	{"quarantine-share-unbounded/pass.yaml", nil},

	{"small-files/fail.yaml", []string{"warning TM405 sinks[0].partition_by", "warning TM405 sinks[1].partition_by"}},
	{"small-files/pass.yaml", nil},

	{"update-rows-need-identity/fail.yaml", []string{"warning TM406 sinks[0]"}},
	{"update-rows-need-identity/pass.yaml", nil},
}

// TestRules: each example yields exactly the findings listed for its rule.
func TestRules(t *testing.T) {
	byName := map[string]check.Rule{}
	for _, r := range check.Rules() {
		byName[r.Name] = r
	}
	for _, tc := range ruleCases {
		t.Run(tc.file, func(t *testing.T) {
			r, ok := byName[filepath.Dir(tc.file)]
			if !ok {
				t.Fatalf("no rule named %q", filepath.Dir(tc.file))
			}
			var got []string
			for _, f := range findings(t, filepath.Join("testdata", tc.file)) {
				if f.ID != r.ID {
					continue
				}
				got = append(got, string(f.Severity)+" "+f.ID+" "+f.Key)
				if f.Rule != r.Name || f.Why == "" || f.Fix == "" || strings.Contains(f.Why, "\n") || strings.Contains(f.Fix, "\n") {
					t.Errorf("malformed finding %+v", f)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings of %s %s:\n got %q\nwant %q", r.ID, r.Name, got, tc.want)
			}
		})
	}
}

// TestEveryRuleHasExamples: every rule has testdata/<name>/fail.yaml and
// pass.yaml, every example file is in ruleCases, every fail file finds
// something and every pass file nothing.
func TestEveryRuleHasExamples(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range ruleCases {
		listed[tc.file] = true
		base := filepath.Base(tc.file)
		if strings.HasPrefix(base, "fail") != (len(tc.want) > 0) {
			t.Errorf("%s: a fail file must find something, a pass file nothing", tc.file)
		}
	}
	for _, r := range check.Rules() {
		for _, f := range []string{"fail.yaml", "pass.yaml"} {
			if !listed[r.Name+"/"+f] {
				t.Errorf("rule %s %s: no example %s in ruleCases", r.ID, r.Name, f)
			}
		}
		files, _ := filepath.Glob(filepath.Join("testdata", r.Name, "*.yaml"))
		for _, f := range files {
			rel := r.Name + "/" + filepath.Base(f)
			if strings.HasPrefix(filepath.Base(f), "contract") {
				continue
			}
			if !listed[rel] {
				t.Errorf("%s is not in ruleCases", rel)
			}
		}
	}
}

// TestRuleIDs: ids follow the scheme and are unique, and so are names.
func TestRuleIDs(t *testing.T) {
	id := regexp.MustCompile(`^TM[1-4][0-9]{2}$`)
	name := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	digit := map[string]byte{"source": '1', "time": '2', "state": '3', "sink": '4'}
	seen := map[string]bool{}
	prev := ""
	for _, r := range check.Rules() {
		if !id.MatchString(r.ID) || !name.MatchString(r.Name) || r.Summary == "" {
			t.Errorf("rule %+v", r)
		}
		if d, ok := digit[r.Contract]; !ok || r.ID[2] != d {
			t.Errorf("rule %s: contract %q does not match its id", r.ID, r.Contract)
		}
		if seen[r.ID] || seen[r.Name] {
			t.Errorf("rule %s %s: id or name used twice", r.ID, r.Name)
		}
		seen[r.ID], seen[r.Name] = true, true
		if r.ID <= prev {
			t.Errorf("rule %s after %s: rules are listed in id order", r.ID, prev)
		}
		prev = r.ID
	}
}

// TestClean: a pipeline that answers every question has no finding.
func TestClean(t *testing.T) {
	if got := findings(t, "testdata/clean.yaml"); len(got) != 0 {
		t.Errorf("clean.yaml: %q", brief(got))
	}
}

// TestOrder: errors first, then warnings, then infos.
func TestOrder(t *testing.T) {
	got := brief(findings(t, "testdata/processing-time-window/fail-kafka-timestamp.yaml"))
	want := []string{"warning TM105 event_time.max_past", "warning TM109 key", "warning TM201 event_time.from", "info TM104 source", "info TM115 quarantine.max_fraction"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestBundledExamples: the exact findings on the bundled pipelines. None
// has an error: `tidemark check` passes them.
func TestBundledExamples(t *testing.T) {
	t.Chdir("..") // the examples name their contract relative to the repository root
	cases := map[string][]string{
		"examples/online-retail/pipeline.yaml": {
			"info TM115 quarantine.max_fraction",
			"info TM402 sinks[0]",
		},
		"examples/online-retail/regions.yaml": {
			"info TM115 quarantine.max_fraction",
			"info TM402 stages[1].sinks[0]",
		},
		"examples/online-retail/kafka.yaml": {
			"warning TM101 dedup",
			"warning TM105 event_time.max_past",
			"warning TM106 quarantine.sink",
			"warning TM109 key",
			"info TM104 source",
			"info TM115 quarantine.max_fraction",
			"info TM402 sinks[1]",
		},
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if got := brief(findings(t, n)); !reflect.DeepEqual(got, cases[n]) {
			t.Errorf("%s:\n got %q\nwant %q", n, got, cases[n])
		}
	}
}

// TestKeyFieldMessage pins TM109's text (the misspelt key).
func TestKeyFieldMessage(t *testing.T) {
	var got []check.Finding
	for _, f := range findings(t, "testdata/key-field-undeclared/fail.yaml") {
		if f.ID == "TM109" {
			got = append(got, f)
		}
	}
	want := []check.Finding{{
		ID: "TM109", Rule: "key-field-undeclared", Severity: check.Warning, Key: "key",
		Why: `key fields "stor_id", "currency" are declared in no schema (no contract, and source.schema lists only some fields): a misspelt name reads as null in every record, and every row falls into one null group without an error`,
		Fix: "declare every field in source.schema and set source.schema_complete: true (or name a contract that declares the fields): a field that is not among them then stops the run before anything is written",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	got = got[:0]
	for _, f := range findings(t, "testdata/key-field-undeclared/fail-stages.yaml") {
		if f.ID == "TM109" {
			got = append(got, f)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0].Why, `key field "region" is declared in no schema`) || !strings.HasPrefix(got[1].Why, `key field "channel" is declared`) {
		t.Errorf("stages: %+v", got)
	}
}

// TestMessages pins one finding's text.
func TestMessages(t *testing.T) {
	fs := findings(t, "testdata/lateness-below-delay/fail.yaml")
	var got check.Finding
	for _, f := range fs {
		if f.ID == "TM202" {
			got = f
		}
	}
	want := check.Finding{
		ID: "TM202", Rule: "lateness-below-delay", Severity: check.Error, Key: "allowed_lateness",
		Why: "out_of_orderness 2m + allowed_lateness 3m = 5m is less than 30m (the max_normal_delay of contract order_event), and late.policy drop discards what arrives later: normally delayed events are lost",
		Fix: "raise allowed_lateness to at least 28m, or keep late events with late: {policy: side_output, sink: ...}",
	}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestDocCoversEveryRule: docs/check.md documents every rule with its id,
// name and severity, and names no other id.
func TestDocCoversEveryRule(t *testing.T) {
	doc, err := os.ReadFile("../docs/check.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	ids := map[string]bool{}
	for _, r := range check.Rules() {
		ids[r.ID] = true
		if !strings.Contains(text, "### "+r.ID+" `"+r.Name+"`") {
			t.Errorf("docs/check.md has no heading \"### %s `%s`\"", r.ID, r.Name)
		}
	}
	for _, m := range regexp.MustCompile(`TM[0-9]{3}`).FindAllString(text, -1) {
		if !ids[m] {
			t.Errorf("docs/check.md names %s, which is not a rule", m)
		}
	}
}

// TestJoinStateBound pins TM303's texts: a regular join bounded by its ttl
// (an info naming the bound), and one without a ttl — which spec.Validate
// refuses, so `tidemark check` stops at that error — as an error when
// check.Run is given the spec as it is.
func TestJoinStateBound(t *testing.T) {
	var got []check.Finding
	for _, f := range findings(t, "testdata/join-state-bound/fail.yaml") {
		if f.ID == "TM303" {
			got = append(got, f)
		}
	}
	want := check.Finding{
		ID: "TM303", Rule: "join-state-bound", Severity: check.Info, Key: "stages[0].join.ttl",
		Why: "stage matched is a regular join bounded by its ttl: a row is kept until the other side's watermark passes its event time + ttl 15m + allowed lateness 5m, and two rows more than 15m apart in event time never pair (no late record reports the match that was not made)",
		Fix: "check that ttl covers the longest real gap between matching rows of the two sides (e.g. a refund's delay after its payment)",
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	p, err := tidemark.Load("testdata/join-state-bound/fail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Stages[0].Join.TTL = 0
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "stages[0].join.ttl: required with type regular") {
		t.Errorf("Validate without a ttl: %v", err)
	}
	got = got[:0]
	for _, f := range check.RunAt(p, nil, now) {
		if f.ID == "TM303" {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Severity != check.Error || got[0].Key != "stages[0].join.ttl" || !strings.Contains(got[0].Why, "nothing bounds its state, every row of both sides would be kept for ever") {
		t.Errorf("without a ttl: %+v", got)
	}
}

// TestOutputOverlapThroughLinks: TM404 compares files by identity, as the
// run does: a result sink that is a symbolic link to the input, and one
// that is a hard link to it, are each the input (TM403's path strings
// differ); an output of its own is not.
func TestOutputOverlapThroughLinks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "orders.jsonl")
	if err := os.WriteFile(in, []byte(`{"event_id":"e1","store_id":"s1","amount":1,"paid_at":"2026-09-01T10:00:00Z"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(in, filepath.Join(dir, "soft.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, filepath.Join(dir, "hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sink, want string }{
		{"soft.jsonl", "soft.jsonl is also an input of source.path " + in + ": the same file, through a symbolic or hard link; writing it would destroy or re-read the input: choose an output path outside the inputs"},
		{"hard.jsonl", "hard.jsonl is also an input of source.path " + in + ": the same file, through a symbolic or hard link; writing it would destroy or re-read the input: choose an output path outside the inputs"},
		{"rows.jsonl", ""},
	} {
		y := "name: revenue\nsource: {type: file, path: " + in + ", schema: {amount: decimal}}\nevent_time: {field: paid_at}\n" +
			"key: [store_id]\nwindow: {type: tumbling, size: 1m}\naggregates: {revenue: sum(amount)}\n" +
			"sinks: [{type: jsonl, path: " + filepath.Join(dir, tc.sink) + "}]\n"
		p := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range findings(t, p) {
			if f.ID == "TM404" {
				got = append(got, f.Key+": "+f.Why)
			}
		}
		want := []string(nil)
		if tc.want != "" {
			want = []string{"sinks[0].path: " + filepath.Join(dir, tc.want)}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("sink %s: TM404 %q, want %q", tc.sink, got, want)
		}
	}
	if b, err := os.ReadFile(in); err != nil || len(b) == 0 {
		t.Fatalf("check changed the input: %q, %v", b, err)
	}
}

// TestCDCDatabaseFacts: with --connect, each problem the database has is
// an error with its fix; none, nothing.
func TestCDCDatabaseFacts(t *testing.T) {
	p, err := tidemark.Load("testdata/cdc-database-not-ready/fail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	facts := &check.Facts{Asked: true, Database: []check.DatabaseProblem{{What: "wal_level is replica; logical replication needs logical", Fix: "ALTER SYSTEM SET wal_level = logical; then restart PostgreSQL (as a superuser)"}}}
	var got []check.Finding
	for _, f := range check.RunWith(pl.Spec, pl.Contract, now, facts) {
		if f.ID == "TM114" {
			got = append(got, f)
		}
	}
	want := []check.Finding{{ID: "TM114", Rule: "cdc-database-not-ready", Severity: check.Error, Key: "source",
		Why: facts.Database[0].What, Fix: facts.Database[0].Fix}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	facts.Database = nil
	for _, f := range check.RunWith(pl.Spec, pl.Contract, now, facts) {
		if f.ID == "TM114" {
			t.Fatalf("a database with everything: %+v", f)
		}
	}
}

// TestStateEstimate pins TM304's texts, worked out by hand. fail.yaml: the
// contract's 10,000 events/s × (24 h + 2 m) = 865,200,000 ids × 34 bytes
// = 29,416,800,000 bytes (27.4 GiB); its 1-minute windows with 2 m of
// out-of-orderness and 30 m of lateness are ⌈33 m / 1 m⌉ = 33 open, each
// with at most the 2,000 stores of the contract: 66,000 entries of 64 +
// 48 (a decimal sum's slot, aggregate/count_sum.go) + 32 (a
// count_distinct's) + 16 × 600,000 / 2,000 (its set: a minute's events
// over the stores) = 4,944 bytes, and 2,000 keys of 80 bytes: 326,464,000
// bytes (311 MiB), 29,743,264,000 in all (27.7 GiB, 27.7× 1 GiB). fail-windows.yaml: Nexmark's 10,000,000
// events/s, ⌈(10 s + 4 s) / 2 s⌉ = 7 windows open, each at most the
// 100,000,000 events of its 10 s: 700,000,000 entries of 64 + 8 (a count)
// bytes and 140,000,000 keys of 80 bytes: 61,600,000,000 bytes (57.4
// GiB). fail-disk.yaml: 7,200,000 ids (244,800,000 bytes, 233 MiB) and
// 66,000 entries of 64 + 48 bytes with 2,000 keys (7,552,000 bytes, 7.2
// MiB): 252,352,000 bytes (241 MiB) is within half the 1 GiB budget.
func TestStateEstimate(t *testing.T) {
	want := map[string]check.Finding{
		"fail.yaml": {ID: "TM304", Rule: "state-estimate", Severity: check.Warning, Key: "state.backend",
			Why: "at 10,000 events/s (the rate of contract order_event) the keyed state is about 27.7GiB: dedup 865,200,000 ids (10,000 events/s × (ttl 24h + out_of_orderness 2m)) × 34 bytes = 27.4GiB, stage revenue at most 66,000 window entries (2,000 keys by the contract's cardinalities; 311MiB); the memory backend keeps it all in the Go heap, 27.7× state.memory's default budget, 1GiB",
			Fix: "set state: {backend: disk, memory: 1GiB} (docs/state.md): the state goes to local disk and memory stays within the budget"},
		"fail-windows.yaml": {ID: "TM304", Rule: "state-estimate", Severity: check.Info, Key: "state.backend",
			Why: "at 10,000,000 events/s (source.rate's default) the keyed state is at most 57.4GiB: stage bids at most 700,000,000 window entries (every event a key of its own; 57.4GiB); above state.memory's default budget, 1GiB, but only if the group keys are that many",
			Fix: "state the key fields' cardinality in the contract (fields.<name>.cardinality) for an estimate, or set state: {backend: disk} (docs/state.md)"},
		"fail-disk.yaml": {ID: "TM304", Rule: "state-estimate", Severity: check.Info, Key: "state.backend",
			Why: "at 10,000 events/s (the rate of contract order_event) the keyed state is at most 241MiB: dedup 7,200,000 ids (10,000 events/s × (ttl 10m + out_of_orderness 2m)) × 34 bytes = 233MiB, stage revenue at most 66,000 window entries (2,000 keys by the contract's cardinalities; 7.2MiB); within half the budget state.memory 1GiB, the memory backend holds it and is faster",
			Fix: "keep state.backend memory (the default) unless the state outgrows this estimate"},
	}
	for file, w := range want {
		var got []check.Finding
		for _, f := range findings(t, "testdata/state-estimate/"+file) {
			if f.ID == "TM304" {
				got = append(got, f)
			}
		}
		if len(got) != 1 || got[0] != w {
			t.Errorf("%s:\n got  %+v\n want %+v", file, got, w)
		}
	}
}
