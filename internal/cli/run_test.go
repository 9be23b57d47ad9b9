package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
)

// TestRunMissingData: a source whose files are missing says where the data
// comes from and exits non-zero.
func TestRunMissingData(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`
name: demo
source:
  type: file
  path: `+filepath.Join(dir, "nowhere", "*.csv")+`
  about: the demo data set, from example.org
event_time: {field: ts}
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
`), 0o644)
	code, _, errOut := run(t, "run", p)
	if code != 1 || !strings.Contains(errOut, "no files match") || !strings.Contains(errOut, "about this source: the demo data set, from example.org") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

// TestRunConfigError: configuration errors name the key and exit 2.
func TestRunConfigError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`
name: demo
source: {type: file, path: x.jsonl}
event_time: {field: ts}
window: {type: tumbling}
aggregates: {n: count()}
`), 0o644)
	code, _, errOut := run(t, "run", p)
	if code != 2 || !strings.Contains(errOut, "window.size: required and positive for tumbling windows") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

// TestRunPrintsSummary runs a small pipeline end to end and checks the
// summary's counts and the rows in the output file.
func TestRunPrintsSummary(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "orders.jsonl")
	os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:02:00+09:00","store":"S1","amount":25000}
{"ts":"2026-09-01T10:05:00+09:00","store":"S1","amount":-5000}
{"ts":"2026-09-01T10:05:00","store":"S1","amount":1}
`), 0o644)
	p := filepath.Join(dir, "p.yaml")
	out := filepath.Join(dir, "rows.jsonl")
	os.WriteFile(p, []byte(`
name: demo
source: {type: file, path: `+in+`, schema: {amount: decimal}}
event_time: {field: ts}
key: [store]
window: {type: tumbling, size: 10m, timezone: Asia/Seoul}
aggregates: {revenue: sum(amount)}
emit: {mode: final}
sinks: [{type: jsonl, path: `+out+`}]
`), 0o644)
	code, stdout, errOut := run(t, "run", p)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{"events read                     3", "quarantined                     1", "on time                         2", "rows emitted                    1  (1 final)", "+inf"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	rows, _ := os.ReadFile(out)
	// Every row records its lineage: the pipeline, the spec's hash, the
	// build, no contract, no reference data.
	sp, err := tidemark.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tidemark.Compile(sp); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"insert","window_start":"2026-09-01T10:00:00+09:00","window_end":"2026-09-01T10:10:00+09:00","store":"S1","revenue":20000,` +
		`"lineage":"pipeline=demo;spec=` + engine.SpecHash(sp) + `;tidemark=` + engine.BuildVersion() + `;contract=-;reference=-","version":1,"is_final":true,"watermark_at":"infinity",`
	if !strings.HasPrefix(string(rows), want) {
		t.Fatalf("rows:\n%s\nwant prefix\n%s", rows, want)
	}
}

// TestOutputInsideSourceRefused: an output path that is, or lies under, the
// source path is refused before anything is written.
func TestOutputInsideSourceRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "data", "in.jsonl")
	os.MkdirAll(filepath.Dir(in), 0o755)
	os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:02:00+09:00"}`+"\n"), 0o644)
	for _, tc := range []struct{ source, sinks, key string }{
		{in, "sinks: [{type: jsonl, path: " + in + "}]", "sinks[0].path"},
		{filepath.Join(dir, "data"), "quarantine: {sink: {type: jsonl, path: " + filepath.Join(dir, "data", "q.jsonl") + "}}", "quarantine.sink.path"},
		{filepath.Join(dir, "data", "*.jsonl"), "late: {sink: {type: jsonl, path: " + filepath.Join(dir, "data", "late.jsonl") + "}}", "late.sink.path"},
	} {
		p := filepath.Join(dir, "p.yaml")
		os.WriteFile(p, []byte("name: demo\nsource: {type: file, format: jsonl, path: "+tc.source+"}\nevent_time: {field: ts}\nwindow: {type: tumbling, size: 1m}\naggregates: {n: count()}\n"+tc.sinks+"\n"), 0o644)
		code, _, errOut := run(t, "run", p)
		if code != 2 || !strings.Contains(errOut, tc.key+": ") || !strings.Contains(errOut, "is also an input of source.path") {
			t.Errorf("%s: code %d, stderr %q", tc.key, code, errOut)
		}
		if b, _ := os.ReadFile(in); len(b) == 0 {
			t.Fatalf("%s: the input was truncated", tc.key)
		}
	}
}

// TestRunFailOnSLO: a late ratio over its objective fails the run with
// --fail-on-slo (exit 1, naming the objective) and not without it; the
// summary lists every objective; --metrics-addr serves the metrics, the
// status document and the page while the run is on.
func TestRunFailOnSLO(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "orders.jsonl")
	// The third record is 10 minutes late: too late (1 of 3 valid records).
	os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:02:00+09:00","at":"2026-09-01T10:02:00+09:00","amount":1}
{"ts":"2026-09-01T10:25:00+09:00","at":"2026-09-01T10:25:00+09:00","amount":1}
{"ts":"2026-09-01T10:03:00+09:00","at":"2026-09-01T10:26:00+09:00","amount":1}
`), 0o644)
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`
name: demo
source: {type: file, path: `+in+`, arrival_time_field: at, schema: {amount: decimal}}
event_time: {field: ts}
window: {type: tumbling, size: 10m}
aggregates: {revenue: sum(amount)}
slo: {late_ratio: 10%, event_time_lag_p95: 1h}
`), 0o644)
	code, stdout, errOut := run(t, "run", "--metrics-addr", "127.0.0.1:0", p)
	if code != 0 {
		t.Fatalf("without --fail-on-slo: code %d: %s", code, errOut)
	}
	for _, want := range []string{"slo late_ratio 33.33% (target ≤ 10%): MISSED", "slo event_time_lag_p95"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(errOut, "/metrics, status at http://127.0.0.1:") {
		t.Errorf("no server line: %s", errOut)
	}
	code, _, errOut = run(t, "run", "--quiet", "--fail-on-slo", p)
	if code != 1 || !strings.Contains(errOut, "--fail-on-slo: 1 objective(s) missed: late_ratio 33.33% (target ≤ 10%): MISSED") {
		t.Errorf("with --fail-on-slo: code %d, stderr %s", code, errOut)
	}
}
