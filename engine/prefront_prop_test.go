package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// preFrontContract is the contract of preFrontPipeline's records: an
// amount never negative; an ingest time (ing), so that the rules are the
// record's alone when it has one (the decoders check them).
const preFrontContract = `product: prefront
owner: tests
schema_version: "1"
event_id: id
event_time:
  field: ts
ingest_time: ing
fields:
  id: {type: string, required: true}
  amount: {type: int}
  d: {type: int}
  ts: {type: timestamp}
  ing: {type: timestamp}
rules:
  - name: amount_not_negative
    check: amount >= 0
`

// preFrontInput writes n random JSON lines to path: out of order event
// times (so the watermark_at of the rows moves unevenly and some records
// are behind the watermark), a few lines that do not decode, without an
// event time, breaking the contract's rule (a negative amount) or the
// timestamp rule (max_future), and divisors of 0 for an expression
// error in the derived field; an ingest time after the event time, null
// in a tenth of the lines; and redeliveries and conflicting copies of
// earlier ids, and a few null ids (the contract requires one).
func preFrontInput(t *testing.T, path string, rng *rand.Rand, n int) {
	t.Helper()
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	var lines []string
	for i := range n {
		if len(lines) > 0 && rng.IntN(100) < 3 {
			b.WriteString(lines[rng.IntN(len(lines))]) // a redelivery: the same line again
			continue
		}
		ts := base.Add(time.Duration(i*500-rng.IntN(20_000)) * time.Millisecond)
		amount := rng.IntN(100)
		d := rng.IntN(10)
		tsText := `"` + ts.Format(time.RFC3339Nano) + `"`
		switch k := rng.IntN(100); {
		case k < 4:
			fmt.Fprintf(&b, `{"id":"e%d","amount":%d,`+"\n", i, amount) // does not decode
			continue
		case k < 8:
			tsText = "null"
		case k < 12:
			amount = -amount - 1 // the contract's rule
		case k < 15:
			tsText = `"` + time.UnixMilli(fixedNow).Add(48*time.Hour).UTC().Format(time.RFC3339) + `"` // max_future
		}
		id := fmt.Sprintf(`"e%d"`, i)
		switch k := rng.IntN(100); {
		case k < 6 && i > 50:
			id = fmt.Sprintf(`"e%d"`, i-rng.IntN(50)) // a conflicting copy of an earlier event
		case k < 8:
			id = "null"
		}
		ing := "null"
		if rng.IntN(10) > 0 {
			ing = `"` + ts.Add(time.Duration(rng.IntN(3000))*time.Millisecond).Format(time.RFC3339Nano) + `"`
		}
		line := fmt.Sprintf(`{"id":%s,"amount":%d,"d":%d,"ts":%s,"ing":%s,"name":"n%d"}`+"\n", id, amount, d, tsText, ing, rng.IntN(7))
		b.WriteString(line)
		lines = append(lines, line)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// preFrontPipeline is a select stage over one unpartitioned JSONL file
// (a source the decoders decode at more than one task) with a contract,
// a timestamp rule and quarantine: with derived, a filter the router
// evaluates as an expression and a derived field dividing by d (an
// error for d = 0); else a filter that is a direct int test.
func preFrontPipeline(dir, in, out string, derived bool) *spec.Pipeline {
	maxFuture := spec.Duration(time.Hour)
	st := spec.Stage{Name: "sel", Filter: "amount > 20",
		Select: []string{"id", "amount", "ts", "name"},
		Sinks:  []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "sel.jsonl")}}}
	if derived {
		st.Filter = "amount % 3 != 1"
		st.Fields = spec.NamedExprs{{Name: "q", Expr: "amount / d"}}
		st.Select = []string{"id", "q", "ts", "name"}
	}
	return &spec.Pipeline{
		Name:       "prefront",
		Contract:   filepath.Join(dir, "contract.yaml"),
		Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "name", Type: "string"}, {Name: "amount", Type: "int"}, {Name: "d", Type: "int"}}},
		EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(5 * time.Second), MaxFuture: &maxFuture},
		Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "quarantine.jsonl")}},
		Stages:     []spec.Stage{st},
	}
}

// runPreFront runs p at parallelism par and batch size batch, processing
// time from a fixed clock, and returns its summary and output files.
func runPreFront(t *testing.T, p *spec.Pipeline, par, batch int) (*engine.Summary, map[string]string) {
	t.Helper()
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: par, BatchSize: batch, Clock: func() int64 { return fixedNow }})
	if err != nil {
		t.Fatalf("parallelism %d, batch %d: %v", par, batch, err)
	}
	files := map[string]string{}
	for _, f := range []string{"sel.jsonl", "quarantine.jsonl"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(p.Stages[0].Sinks[0].Path), f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	return sum, files
}

// TestPreFrontEqualsRouter: the front of a select stage computed by the
// decoders (at two tasks or more, engine/prefront.go) gives what the
// router's own gives (one task: the router runs every record's front):
// for random inputs with undecodable lines, null event times, contract
// and timestamp rule violations, expression errors and records behind
// the watermark, at random parallelism and batch sizes, the same result
// rows in the same order (their watermark_at included), the same
// quarantine records and the same counters — and the decoders' path ran.
func TestPreFrontEqualsRouter(t *testing.T) {
	for seed := range uint64(6) {
		derived := seed%2 == 0
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 27))
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(preFrontContract), 0o644); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.jsonl")
			preFrontInput(t, in, rng, 1500+rng.IntN(1500))
			refSum, ref := runPreFront(t, preFrontPipeline(dir, in, filepath.Join(dir, "ref"), derived), 1, 64)
			rc := refSum.Stages[0].Counters
			rules := map[string]int64{}
			for _, r := range refSum.Rules {
				rules[r.Rule] = r.Count
			}
			if rc.Filtered == 0 || rc.OnTime < 100 || refSum.Quarantined == 0 || rules["amount_not_negative"] == 0 ||
				rules["max_future"] == 0 || rules["event_time"] == 0 || derived && rc.Quarantined == 0 {
				t.Fatalf("the reference run lacks some case: %+v, quarantined %d %v", rc, refSum.Quarantined, refSum.Rules)
			}
			if n := strings.Count(ref["sel.jsonl"], "\n"); int64(n) != rc.RowsEmitted {
				t.Fatalf("%d rows written, %d counted", n, rc.RowsEmitted)
			}
			for run := range 3 {
				par, batch := 2+rng.IntN(3), 1+rng.IntN(200)
				before := engine.PreRouted.Load()
				sum, got := runPreFront(t, preFrontPipeline(dir, in, filepath.Join(dir, fmt.Sprint("out", run)), derived), par, batch)
				if engine.PreRouted.Load() == before {
					t.Fatalf("parallelism %d: no batch was routed with the decoders' front", par)
				}
				for f, want := range ref {
					if got[f] != want {
						t.Errorf("parallelism %d, batch %d: %s differs from the one-task run's", par, batch, f)
					}
				}
				if sum.Stages[0].Counters != rc || sum.Quarantined != refSum.Quarantined || fmt.Sprint(sum.Rules) != fmt.Sprint(refSum.Rules) {
					t.Errorf("parallelism %d, batch %d: counters %+v %d %v, want %+v %d %v", par, batch,
						sum.Stages[0].Counters, sum.Quarantined, sum.Rules, rc, refSum.Quarantined, refSum.Rules)
				}
			}
		})
	}
}

// TestPreFrontRestore: a select stage, or a stage with state, whose
// front the decoders compute, stopped three times with a checkpoint
// after every round and resumed each time at another parallelism (one
// task among them, where the router runs the front), ends with the
// files of an uninterrupted one-task run (a stage with state: the same
// lines, which rows of different keys may interleave differently): the
// checkpoints' positions, the rows logged from the select front and the
// items routed by the keyed front agree.
func TestPreFrontRestore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(dir, in, out string) *spec.Pipeline
		files []string
		keyed bool
	}{
		{"select", func(dir, in, out string) *spec.Pipeline { return preFrontPipeline(dir, in, out, false) }, []string{"sel.jsonl", "quarantine.jsonl"}, false},
		{"select-derived", func(dir, in, out string) *spec.Pipeline { return preFrontPipeline(dir, in, out, true) }, []string{"sel.jsonl", "quarantine.jsonl"}, false},
		{"tumbling", func(dir, in, out string) *spec.Pipeline { return preFrontKeyedPipeline(dir, in, out, 0) }, []string{"sel.jsonl", "quarantine.jsonl", "late.jsonl"}, true},
		{"sliding-derived-key", func(dir, in, out string) *spec.Pipeline { return preFrontKeyedPipeline(dir, in, out, 1) }, []string{"sel.jsonl", "quarantine.jsonl", "late.jsonl"}, true},
		{"session", func(dir, in, out string) *spec.Pipeline { return preFrontKeyedPipeline(dir, in, out, 2) }, []string{"sel.jsonl", "quarantine.jsonl", "late.jsonl"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(preFrontContract), 0o644); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.jsonl")
			preFrontInput(t, in, rand.New(rand.NewPCG(7, 27)), 4000)
			refOut := filepath.Join(dir, "ref")
			refSum, ref := runPreFrontFiles(t, tc.make(dir, in, refOut), 1, 64, refOut, tc.files, tc.keyed)
			out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
			var tick atomic.Int64
			restored := 0
			var last *engine.Summary
			for _, step := range []struct {
				stop int64
				par  int
			}{{600, 2}, {1700, 1}, {2600, 4}, {0, 3}} {
				p := tc.make(dir, in, out)
				p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Millisecond), Retain: 2}
				pl, err := tidemark.Compile(p)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				opts := engine.Options{Parallelism: step.par, BatchSize: 64, Clock: func() int64 { return fixedNow },
					WallClock: func() time.Time { return time.Unix(tick.Add(1), 0) }}
				if step.stop > 0 {
					opts.ProgressEvery = step.stop
					opts.Progress = func(engine.Progress) { cancel() }
				}
				before := engine.PreRouted.Load()
				sum, err := engine.Run(ctx, pl, opts)
				cancel()
				if err != nil {
					t.Fatalf("parallelism %d: %v", step.par, err)
				}
				if used := engine.PreRouted.Load() > before; used != (step.par > 1) {
					t.Fatalf("parallelism %d: the decoders' front used: %v", step.par, used)
				}
				if step.stop > 0 && !sum.Stopped {
					t.Fatalf("the run at parallelism %d did not stop", step.par)
				}
				if sum.Checkpoints.Restored > 0 {
					restored++
				}
				last = sum
			}
			if restored != 3 || last.EventsRead != refSum.EventsRead {
				t.Fatalf("%d restores, %d events read in all (want 3, %d)", restored, last.EventsRead, refSum.EventsRead)
			}
			for _, f := range tc.files {
				b, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				got := string(b)
				if tc.keyed {
					got = sortedText(got)
				}
				if got != ref[f] {
					t.Errorf("%s differs from the uninterrupted one-task run's", f)
				}
			}
		})
	}
}

// preFrontDedupPipeline reads preFrontInput's file with dedup by id
// (conflicts to their sink) into a tumbling count and sum per name with
// late records to a side output: the decoders check the contract's rules
// and compute the event ids, the window's front stays on the router.
func preFrontDedupPipeline(dir, in, out string) *spec.Pipeline {
	p := preFrontPipeline(dir, in, out, false)
	p.Dedup = &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)}
	p.Conflicts = spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "conflicts.jsonl")}}
	p.Stages = []spec.Stage{{Name: "sel", Key: []string{"name"}, Filter: "amount > 20",
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(10 * time.Second)},
		Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
		Emit:       spec.Emit{Mode: "update"},
		Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
		Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "sel.jsonl")}}}}
	return p
}

// sortedText is the lines of s, sorted: the rows of different keys
// may interleave differently at another parallelism.
func sortedText(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestPreFrontDedupEqualsRouter: with dedup, the contract's rules and
// the event ids computed by the decoders (engine/prefront.go) give the
// outputs and counters of one task, where the router computes them, for
// random inputs with null and repeated ids (duplicates and conflicts),
// records without an ingest time (whose rules the router checks), rule
// violations and late records, at random parallelism and batch sizes.
func TestPreFrontDedupEqualsRouter(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 91))
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(preFrontContract), 0o644); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.jsonl")
			preFrontInput(t, in, rng, 2000+rng.IntN(1000))
			files := []string{"sel.jsonl", "quarantine.jsonl", "conflicts.jsonl", "late.jsonl"}
			run := func(out string, par, batch int) (*engine.Summary, map[string]string) {
				p := preFrontDedupPipeline(dir, in, out)
				pl, err := tidemark.Compile(p)
				if err != nil {
					t.Fatal(err)
				}
				sum, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: par, BatchSize: batch, Clock: func() int64 { return fixedNow }})
				if err != nil {
					t.Fatalf("parallelism %d: %v", par, err)
				}
				got := map[string]string{}
				for _, f := range files {
					b, err := os.ReadFile(filepath.Join(out, f))
					if err != nil {
						t.Fatal(err)
					}
					got[f] = sortedText(string(b))
				}
				return sum, got
			}
			refSum, ref := run(filepath.Join(dir, "ref"), 1, 64)
			rules := map[string]int64{}
			for _, r := range refSum.Rules {
				rules[r.Rule] = r.Count
			}
			if refSum.Duplicates == 0 || refSum.Conflicts == 0 || rules["id_required"] == 0 || rules["amount_not_negative"] == 0 ||
				refSum.Stages[0].TooLateSideOutput == 0 || refSum.Stages[0].RowsEmitted < 50 {
				t.Fatalf("the reference run lacks some case: %+v, %v, %d duplicates, %d conflicts", refSum.Stages[0].Counters, refSum.Rules, refSum.Duplicates, refSum.Conflicts)
			}
			for k := range 3 {
				par, batch := 2+rng.IntN(3), 1+rng.IntN(200)
				before := engine.PreRouted.Load()
				sum, got := run(filepath.Join(dir, fmt.Sprint("out", k)), par, batch)
				if engine.PreRouted.Load() == before {
					t.Fatalf("parallelism %d: no batch was routed with the decoders' front", par)
				}
				for _, f := range files {
					if got[f] != ref[f] {
						t.Errorf("parallelism %d, batch %d: %s differs from the one-task run's", par, batch, f)
					}
				}
				if sum.Stages[0].Counters != refSum.Stages[0].Counters || sum.Quarantined != refSum.Quarantined ||
					sum.Duplicates != refSum.Duplicates || sum.Conflicts != refSum.Conflicts || fmt.Sprint(sum.Rules) != fmt.Sprint(refSum.Rules) {
					t.Errorf("parallelism %d, batch %d: counters differ from the one-task run's", par, batch)
				}
			}
		})
	}
}

// preFrontKeyedPipeline reads preFrontInput's file (with the contract,
// the timestamp rule and quarantine of preFrontPipeline) into one stage
// with state, whose front the decoders compute at two tasks or more
// (task.KeyedFront): kind 0 a tumbling count and sum per name behind a
// direct int test, update mode, late records to a side output; kind 1 a
// sliding window keyed by a derived field (amount / d mod 4: an
// expression error for d = 0) behind a filter evaluated as an
// expression; kind 2 sessions per name and derived bucket, final mode;
// kind 3 a tumbling window without a key (one owner).
func preFrontKeyedPipeline(dir, in, out string, kind int) *spec.Pipeline {
	p := preFrontPipeline(dir, in, out, false)
	st := spec.Stage{Name: "sel", Key: []string{"name"}, Filter: "amount > 20",
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(10 * time.Second)},
		Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
		Emit:       spec.Emit{Mode: "update"},
		Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
		Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "sel.jsonl")}}}
	switch kind {
	case 1:
		st.Filter = "amount % 3 != 1"
		st.Fields = spec.NamedExprs{{Name: "g", Expr: "amount / d % 4"}}
		st.Key = []string{"g"}
		st.Window = spec.Window{Type: "sliding", Size: spec.Duration(10 * time.Second), Slide: spec.Duration(2 * time.Second)}
	case 2:
		st.Fields = spec.NamedExprs{{Name: "g", Expr: "amount / d % 3"}}
		st.Key = []string{"name", "g"}
		st.Window = spec.Window{Type: "session", Gap: spec.Duration(3 * time.Second)}
		st.Emit = spec.Emit{Mode: "final"}
	case 3:
		st.Key = nil
	}
	p.Stages = []spec.Stage{st}
	return p
}

// runPreFrontFiles runs p at parallelism par and batch size batch (a
// fixed clock), and returns its summary and files in out, their lines
// sorted when sorted is set (the rows of different keys may interleave
// differently at another parallelism).
func runPreFrontFiles(t *testing.T, p *spec.Pipeline, par, batch int, out string, files []string, sorted bool) (*engine.Summary, map[string]string) {
	t.Helper()
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: par, BatchSize: batch, Clock: func() int64 { return fixedNow }})
	if err != nil {
		t.Fatalf("parallelism %d, batch %d: %v", par, batch, err)
	}
	got := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		got[f] = string(b)
		if sorted {
			got[f] = sortedText(got[f])
		}
	}
	return sum, got
}

// TestPreFrontKeyedEqualsRouter: the front of a stage with state
// computed by the decoders (its filter, derived fields, group key and
// key group's owner; engine/prefront.go, task.KeyedFront) gives the
// outputs of one task, where the router computes it, for random inputs
// with undecodable lines, null event times, contract and timestamp rule
// violations, expression errors in a derived key and records behind the
// watermark, at random parallelism (2–5) and batch sizes, for tumbling,
// sliding and session windows, keyed by a source field, a derived one,
// both, or not keyed: the same rows (each (window, key)'s rows in the
// same order with the same versions), the same late and quarantine
// records and the same counters — and the decoders' path ran.
func TestPreFrontKeyedEqualsRouter(t *testing.T) {
	files := []string{"sel.jsonl", "quarantine.jsonl", "late.jsonl"}
	for seed := range uint64(8) {
		kind := int(seed % 4)
		t.Run(fmt.Sprint("seed", seed, "/kind", kind), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 43))
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(preFrontContract), 0o644); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.jsonl")
			preFrontInput(t, in, rng, 2000+rng.IntN(1500))
			refOut := filepath.Join(dir, "ref")
			refSum, ref := runPreFrontFiles(t, preFrontKeyedPipeline(dir, in, refOut, kind), 1, 64, refOut, files, true)
			rc := refSum.Stages[0].Counters
			if rc.OnTime < 100 || rc.RowsEmitted < 20 || refSum.Quarantined == 0 || kind != 2 && rc.Filtered == 0 ||
				kind == 0 && refSum.Stages[0].TooLateSideOutput == 0 || (kind == 1 || kind == 2) && rc.Quarantined == 0 {
				t.Fatalf("the reference run lacks some case: %+v, quarantined %d, too late %d", rc, refSum.Quarantined, refSum.Stages[0].TooLateSideOutput)
			}
			for run := range 3 {
				par, batch := 2+rng.IntN(4), 1+rng.IntN(200)
				out := filepath.Join(dir, fmt.Sprint("out", run))
				before := engine.PreRouted.Load()
				sum, got := runPreFrontFiles(t, preFrontKeyedPipeline(dir, in, out, kind), par, batch, out, files, true)
				if engine.PreRouted.Load() == before {
					t.Fatalf("parallelism %d: no batch was routed with the decoders' front", par)
				}
				for _, f := range files {
					if got[f] != ref[f] {
						t.Errorf("parallelism %d, batch %d: %s differs from the one-task run's", par, batch, f)
					}
				}
				if sum.Stages[0].Counters != rc || sum.Quarantined != refSum.Quarantined || fmt.Sprint(sum.Rules) != fmt.Sprint(refSum.Rules) {
					t.Errorf("parallelism %d, batch %d: counters %+v %d %v, want %+v %d %v", par, batch,
						sum.Stages[0].Counters, sum.Quarantined, sum.Rules, rc, refSum.Quarantined, refSum.Rules)
				}
			}
		})
	}
}
