package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// rescaleInput writes n order events of 50 stores with event ids (some
// redelivered, some conflicting), out of order over 3 partitions.
func rescaleInput(t *testing.T, path string, n int) {
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		id := i
		if i%17 == 0 && i > 300 {
			id = i - 300 // a redelivery (or a conflict when the amount differs)
		}
		ts := base.Add(time.Duration(i*700+(i%13)*9000) * time.Millisecond)
		fmt.Fprintf(&b, `{"at":"%s","ts":"%s","id":"e%d","store":"s%d","amount":%d,"p":"%d"}`+"\n",
			base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), ts.Format(time.RFC3339Nano), id, (i*7)%50, id%90+i%2, i%3)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rescalePipeline(in, out, ck string) *spec.Pipeline {
	p := &spec.Pipeline{
		Name: "rescale",
		Source: spec.Source{Type: "file", Path: in, Format: "jsonl", ArrivalTimeField: "at", PartitionField: "p",
			Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
		EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)},
		Dedup:      &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)},
		Conflicts:  spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "conflicts.jsonl")}},
		Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "quarantine.jsonl")}},
		Stages: []spec.Stage{{
			Name: "per_store", Key: []string{"store"}, Window: spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			AllowedLateness: spec.Duration(30 * time.Second),
			Aggregates:      spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
			Emit:            spec.Emit{Mode: "retract"},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "per_store.jsonl")}},
		}, {
			Name: "per_minute", Input: "per_store", Fields: spec.NamedExprs{{Name: "w", Expr: "window_start"}}, Key: []string{"w"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "stores", Expr: "count()"}, {Name: "total", Expr: "sum(total)"}},
			Emit:       spec.Emit{Mode: "update"},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "per_minute.jsonl")}},
		}},
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Hour), Retain: 2}
	}
	return p
}

// runPart runs the pipeline at parallelism par; stopAfter > 0 stops it
// (as SIGTERM would) once that many records have been read.
// referenceRun runs build's pipeline uninterrupted (no checkpoints) at
// one task into dir/ref and returns its outputs (canonDir), which the
// interrupted runs must equal, and a wall clock for those runs that moves
// one second at each reading (so every checkpoint interval has passed).
func referenceRun(t *testing.T, dir string, build func(out, ck string) *spec.Pipeline) (map[string]string, func() time.Time) {
	t.Helper()
	refOut := filepath.Join(dir, "ref")
	runPart(t, build(refOut, ""), 1, 0)
	var tick atomic.Int64
	return canonDir(t, refOut), func() time.Time { return time.Unix(tick.Add(1), 0) }
}

func runPart(t *testing.T, p *spec.Pipeline, par int, stopAfter int64) *engine.Summary {
	t.Helper()
	p.Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := engine.Options{Parallelism: par, BatchSize: 100}
	if stopAfter > 0 {
		opts.ProgressEvery = stopAfter
		opts.Progress = func(engine.Progress) { cancel() }
	}
	sum, err := engine.Run(ctx, pl, opts)
	if err != nil {
		t.Fatalf("parallelism %d: %v", par, err)
	}
	return sum
}

// canonDir reads the JSONL outputs of dir: result files grouped by
// (window_start, key) in order, side outputs sorted.
func canonDir(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"per_store.jsonl", "per_minute.jsonl", "late.jsonl", "conflicts.jsonl", "quarantine.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if !strings.HasPrefix(f, "per_") {
			slices.Sort(lines)
			out[f] = strings.Join(lines, "\n")
			continue
		}
		groups := map[string][]string{}
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprint(m["window_start"], m["store"], m["w"])
			groups[k] = append(groups[k], l)
		}
		var sb strings.Builder
		for _, k := range slices.Sorted(maps.Keys(groups)) {
			sb.WriteString(k + "\n" + strings.Join(groups[k], "\n") + "\n")
		}
		out[f] = sb.String()
	}
	return out
}

// TestRescale: a run as 4 tasks stopped midway, its checkpoint restored
// into 1 task and into 2 (and a run as 1 restored into 3), gives the
// outputs of an uninterrupted run at parallelism 1: every key group's
// state moves to the task that owns it at the new parallelism.
func TestRescale(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 6000)
	refOut := filepath.Join(dir, "ref")
	runPart(t, rescalePipeline(in, refOut, ""), 1, 0)
	want := canonDir(t, refOut)
	if strings.Count(want["per_store.jsonl"], "\n") < 1000 || want["late.jsonl"] == "" || want["conflicts.jsonl"] == "" {
		t.Fatalf("the reference run lacks rows or side outputs")
	}
	for _, c := range []struct{ first, then int }{{4, 1}, {4, 2}, {1, 3}} {
		t.Run(fmt.Sprintf("%d then %d", c.first, c.then), func(t *testing.T) {
			out, ck := filepath.Join(dir, fmt.Sprintf("out%d%d", c.first, c.then)), filepath.Join(dir, fmt.Sprintf("ck%d%d", c.first, c.then))
			s1 := runPart(t, rescalePipeline(in, out, ck), c.first, 2500)
			if !s1.Stopped || s1.EventsRead >= 6000 {
				t.Fatalf("first run: stopped %v after %d events", s1.Stopped, s1.EventsRead)
			}
			if ids, _ := checkpoint.List(ck); len(ids) == 0 {
				t.Fatal("no checkpoint")
			}
			s2 := runPart(t, rescalePipeline(in, out, ck), c.then, 0)
			if s2.Checkpoints.Restored == 0 || s2.EventsRead != 6000 || s2.Parallelism != c.then {
				t.Fatalf("second run: restored %d, %d events, parallelism %d", s2.Checkpoints.Restored, s2.EventsRead, s2.Parallelism)
			}
			got := canonDir(t, out)
			for _, f := range slices.Sorted(maps.Keys(want)) {
				if got[f] != want[f] {
					t.Errorf("%s differs from the uninterrupted run's", f)
				}
			}
		})
	}
}

// TestRestoreDeltaChains: checkpoints after every round (a wall clock that
// moves a second per reading, interval 1 ms) make the dedup key groups
// write delta sections; a run stopped four times and resumed each time at
// another parallelism — restoring chains of full and delta sections,
// with a payload cache of 2 entries per key group that evicts — gives the
// outputs of an uninterrupted run.
func TestRestoreDeltaChains(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 6000)
	keep := 256
	build := func(out, ck string) *spec.Pipeline {
		p := rescalePipeline(in, out, ck)
		p.Dedup.KeepPayloads = &keep
		if ck != "" {
			p.Checkpoint.Interval = spec.Duration(time.Millisecond)
			p.Checkpoint.Retain = 3
		}
		return p
	}
	want, clock := referenceRun(t, dir, build)
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	var deltas, restored int
	for _, step := range []struct {
		stop int64
		par  int
	}{{900, 2}, {1700, 1}, {2600, 4}, {3900, 3}, {0, 2}} {
		p := build(out, ck)
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		opts := engine.Options{Parallelism: step.par, BatchSize: 100, WallClock: clock}
		if step.stop > 0 {
			opts.ProgressEvery = step.stop
			opts.Progress = func(engine.Progress) { cancel() }
		}
		sum, err := engine.Run(ctx, pl, opts)
		cancel()
		if err != nil {
			t.Fatalf("parallelism %d: %v", step.par, err)
		}
		if step.stop > 0 && !sum.Stopped {
			t.Fatalf("the run at parallelism %d did not stop", step.par)
		}
		deltas += sum.Checkpoints.Deltas
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
	}
	if deltas == 0 || restored != 4 {
		t.Fatalf("%d delta sections written, %d restores: the test does not restore chains", deltas, restored)
	}
	got := canonDir(t, out)
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if got[f] != want[f] {
			t.Errorf("%s differs from the uninterrupted run's", f)
		}
	}
}
