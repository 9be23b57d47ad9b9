package cli

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// TestBenchJSON runs every bundled query briefly with its baseline: the
// report has the figures, and the engine and the hand-written loop read
// the same events and write the same number of rows.
func TestBenchJSON(t *testing.T) {
	for _, q := range []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11"} {
		t.Run(q, func(t *testing.T) {
			code, out, errOut := run(t, "bench", q, "--events", "20000", "--repeat", "2", "--vs-baseline", "--format", "json")
			if code != 0 {
				t.Fatalf("code %d, stderr %q", code, errOut)
			}
			var rep benchReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if rep.File != "examples/nexmark/"+q+".yaml" || rep.Source.Events != 20000 || len(rep.Tidemark.Runs) != 2 || rep.Baseline == nil || len(rep.Baseline.Runs) != 2 {
				t.Fatalf("report %+v", rep)
			}
			tm, bl := rep.Tidemark.Median, rep.Baseline.Median
			if tm.Events != 20000 || bl.Events != 20000 {
				t.Errorf("events: tidemark %d, baseline %d, want 20000", tm.Events, bl.Events)
			}
			if tm.Rows == 0 || tm.Rows != bl.Rows {
				t.Errorf("rows: tidemark %d, baseline %d", tm.Rows, bl.Rows)
			}
			if tm.EventsPerSec <= 0 || tm.WallSeconds <= 0 || tm.PeakRSSBytes <= 0 || rep.Ratio == nil || rep.Ratio.EventsPerSec <= 0 {
				t.Errorf("figures missing: %+v, ratio %+v", tm, rep.Ratio)
			}
			if tm.Phases == nil || rep.Baseline.Median.Phases != nil {
				t.Errorf("phases: tidemark %+v, baseline %+v (the loop is not profiled)", tm.Phases, rep.Baseline.Median.Phases)
			}
			// Each round's ratio is its tidemark run over the loop's run.
			if len(rep.RoundRatios) != 2 {
				t.Fatalf("round ratios %v, want 2", rep.RoundRatios)
			}
			for i, r := range rep.RoundRatios {
				if want := rep.Tidemark.Runs[i].EventsPerCore / rep.Baseline.Runs[i].EventsPerCore; r != want {
					t.Errorf("round %d ratio %v, want %v", i+1, r, want)
				}
			}
		})
	}
}

func TestBenchText(t *testing.T) {
	code, out, errOut := run(t, "bench", "q11", "--events", "20000", "--repeat", "1")
	if code != 0 {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"tidemark bench q11 (examples/nexmark/q11.yaml; stages q11): 20,000 events per run", "events/s/core", "median",
		"CPU by phase", "read+decode", "serial (router + writer)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchPipelineFile benchmarks a pipeline file: its sinks are
// replaced (nothing is written), and a query without a loop has no
// baseline.
func TestBenchPipelineFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.yaml")
	out := filepath.Join(dir, "out.jsonl")
	os.WriteFile(p, []byte(`
name: bids_per_second
source: {type: nexmark, events: 5000}
event_time: {field: date_time, out_of_orderness: 4s}
filter: event_type == 2
window: {type: tumbling, size: 1s}
aggregates: {n: count()}
sinks: [{type: jsonl, path: `+out+`}]
`), 0o644)
	if code, _, errOut := run(t, "bench", p, "--repeat", "1"); code != 0 {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the jsonl sink was written: %v", err)
	}
	if code, _, errOut := run(t, "bench", p, "--vs-baseline"); code != 2 || !strings.Contains(errOut, "no hand-written loop for pipeline bids_per_second") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

func TestBenchErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	os.WriteFile(file, []byte(`
name: f
source: {type: file, path: x.jsonl}
event_time: {field: ts}
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "q6"}, `no Nexmark query "q6" (queries: q0, q1, q2, q3, q4, q5, q7, q8, q9, q11, q13)`},
		{[]string{"bench", "q5", "--format", "xml"}, `--format "xml": want text or json`},
		{[]string{"bench", "q5", "--repeat", "0"}, `--repeat 0: at least 1`},
		{[]string{"bench", file, "--events", "10"}, `--events: only for a nexmark source (this pipeline reads file)`},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchArticle runs bench article at parallelism 1 and 2 beside its
// loop: the engine and the loop read the same generated file and write
// the same number of rows; --write-events writes the stream and exits.
func TestBenchArticle(t *testing.T) {
	code, out, errOut := run(t, "bench", "article", "--events", "20000", "--repeat", "2", "--parallelism", "1,2", "--vs-baseline", "--format", "json")
	if code != 0 {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a := rep.Source.Article
	if rep.File != "examples/article/pipeline.yaml" || rep.Source.Generator != "articlegen" || rep.Source.Events != 20000 || rep.Source.Seed != 1 ||
		a == nil || a.Lines != 20000 || a.Redeliveries == 0 || len(rep.Tidemark.Runs) != 2 || len(rep.Parallel) != 1 || rep.Baseline == nil || rep.Baseline.Name != "articlebase.Run" {
		t.Fatalf("report %+v", rep)
	}
	tm, p2, bl := rep.Tidemark.Median, rep.Parallel[0].Median, rep.Baseline.Median
	if rep.Tidemark.Parallelism != 1 || rep.Parallel[0].Parallelism != 2 {
		t.Errorf("parallelism %d, %d", rep.Tidemark.Parallelism, rep.Parallel[0].Parallelism)
	}
	if tm.Events != 20000 || p2.Events != 20000 || bl.Events != 20000 {
		t.Errorf("events: tidemark %d, ×2 %d, baseline %d, want 20000", tm.Events, p2.Events, bl.Events)
	}
	if tm.Rows == 0 || tm.Rows != bl.Rows || p2.Rows != bl.Rows {
		t.Errorf("rows: tidemark %d, ×2 %d, baseline %d", tm.Rows, p2.Rows, bl.Rows)
	}

	file := filepath.Join(t.TempDir(), "orders.jsonl")
	code, out, errOut = run(t, "bench", "article", "--events", "1000", "--seed", "5", "--write-events", file)
	if code != 0 || !strings.HasPrefix(out, "wrote 1,000 order events to "+file) {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil || strings.Count(string(data), "\n") != 1000 || !strings.HasPrefix(string(data), `{"event_id":"evt-20260624-0000000"`) {
		t.Errorf("events file: %v, %d lines", err, strings.Count(string(data), "\n"))
	}
	if code, _, errOut := run(t, "bench", "q5", "--write-events", file); code != 2 || !strings.Contains(errOut, "--write-events: only for bench article") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

// TestBenchArticlePostgres: bench article --sink postgres writes the
// results into PostgreSQL with checkpoints, reports the database's CPU,
// and leaves the rows the blackhole run counts, with their final values
// in the table.
func TestBenchArticlePostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	code, out, errOut := run(t, "bench", "article", "--events", "20000", "--repeat", "2", "--parallelism", "1", "--sink", "postgres", "--dsn", u.String(), "--format", "json")
	if code != 0 {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := rep.Tidemark.Median
	if rep.File != "examples/article/postgres.yaml" || rep.Source.Sink != "postgres" || m.Events != 20000 || m.Checkpoints < 1 || m.DBBackendCPU <= 0 {
		t.Fatalf("report %+v, median %+v", rep, m)
	}
	_, bh, _ := run(t, "bench", "article", "--events", "20000", "--repeat", "1", "--parallelism", "1", "--format", "json")
	var blackhole benchReport
	if err := json.Unmarshal([]byte(bh), &blackhole); err != nil {
		t.Fatal(err)
	}
	if m.Rows != blackhole.Tidemark.Median.Rows || m.Rows == 0 {
		t.Errorf("rows: postgres %d, blackhole %d", m.Rows, blackhole.Tidemark.Median.Rows)
	}
	// The table holds one row per window and key, each final.
	pgtest.Check(t, dsn, `SELECT count(*) = count(*) FILTER (WHERE is_final), count(*) > 0 FROM "`+schema+`".revenue_minute`, "t | t\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "q5", "--sink", "postgres"}, "--sink: only for bench article"},
		{[]string{"bench", "article", "--sink", "mysql"}, `--sink "mysql": want postgres`},
		{[]string{"bench", "article", "--sink", "postgres", "--vs-baseline"}, "--vs-baseline: the hand-written loop writes no database"},
		{[]string{"bench", "article", "--dsn", dsn}, "--dsn: only with --sink postgres"},
	} {
		if code, _, errOut := run(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}
