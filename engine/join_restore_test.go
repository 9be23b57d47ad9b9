package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// joinInputs writes n payments (with redeliveries) into payments.jsonl
// and refunds of about a third of them, some late, into refunds.jsonl,
// both with arrival times.
func joinInputs(t *testing.T, dir string, n int) (pay, ref string) {
	var p, r strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		ts := base.Add(time.Duration(i) * time.Second)
		at := ts.Add(time.Duration(i%7) * time.Second)
		fmt.Fprintf(&p, `{"at":"%s","ts":"%s","id":"e%d","order":"o%d","amount":%d}`+"\n", at.Format(time.RFC3339), ts.Format(time.RFC3339), i, i, 10+i%90)
		if i%11 == 0 && i > 20 { // a redelivery of an earlier payment
			j := i - 20
			fmt.Fprintf(&p, `{"at":"%s","ts":"%s","id":"e%d","order":"o%d","amount":%d}`+"\n", at.Format(time.RFC3339),
				base.Add(time.Duration(j)*time.Second).Format(time.RFC3339), j, j, 10+j%90)
		}
		if i%3 == 0 {
			rts := ts.Add(time.Duration(30+i%200) * time.Second)
			rat := rts.Add(time.Duration(i%5) * time.Second)
			if i%13 == 0 {
				rat = rat.Add(3 * time.Minute) // late: behind the refunds' watermark
			}
			fmt.Fprintf(&r, `{"at":"%s","ts":"%s","order":"o%d","amount":%d}`+"\n", rat.Format(time.RFC3339), rts.Format(time.RFC3339), i, 1+i%9)
		}
	}
	pay, ref = filepath.Join(dir, "payments.jsonl"), filepath.Join(dir, "refunds.jsonl")
	// The refunds file in arrival order, as a log would deliver it.
	lines := strings.Split(strings.TrimSuffix(r.String(), "\n"), "\n")
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(a[7:27], b[7:27]) })
	if err := os.WriteFile(pay, []byte(p.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return pay, ref
}

func joinRestorePipeline(pay, ref, out, ck string) *spec.Pipeline {
	up := spec.Duration(4 * time.Minute)
	p := &spec.Pipeline{
		Name:      "joinrestore",
		KeyGroups: 16,
		Source: spec.Source{Type: "file", Path: pay, Format: "jsonl", ArrivalTimeField: "at",
			Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
		EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)},
		Dedup:     &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)},
		Inputs: []spec.Input{{Name: "refunds",
			Source: spec.Source{Type: "file", Path: ref, Format: "jsonl", ArrivalTimeField: "at",
				Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)}}},
		Stages: []spec.Stage{{
			Name: "refunds_joined",
			Join: &spec.Join{Type: "interval", Kind: "left",
				Left: spec.JoinSide{As: "p"}, Right: spec.JoinSide{Input: "refunds", As: "r"},
				On: []string{"p.order = r.order"}, Between: &spec.JoinBounds{Upper: &up},
				Select: spec.NamedExprs{{Name: "order", Expr: "p.order"}, {Name: "paid", Expr: "p.amount"}, {Name: "refunded", Expr: "r.amount"}}},
			AllowedLateness: spec.Duration(2 * time.Minute),
			Emit:            spec.Emit{Mode: "retract"},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "joined.jsonl")}},
		}, {
			Name: "per_minute", Input: "refunds_joined",
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "paid", Expr: "sum(paid)"}, {Name: "refunded", Expr: "sum(refunded)"}, {Name: "rows", Expr: "count()"}},
			Emit:       spec.Emit{Mode: "final"},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "per_minute.jsonl")}},
		}},
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Millisecond), Retain: 3}
	}
	return p
}

// sortedLines reads a file's lines, sorted (without updated_at, a
// processing time).
func sortedLines(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if k := strings.Index(l, `,"updated_at"`); k > 0 {
			lines[i] = l[:k]
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestJoinRestore: a join of two inputs (the source behind dedup, and a
// refunds input), read in rounds of 37 records — so that checkpoints
// (after every round) fall in the middle of the inputs' batches — stopped
// four times and resumed each time at another parallelism, gives the
// joined rows, the late rows and the downstream sums of an uninterrupted
// run: each input resumes from its position before its batch, skipping
// the records routed before the checkpoint, and the join's key groups
// move to their new tasks.
func TestJoinRestore(t *testing.T) {
	dir := t.TempDir()
	pay, ref := joinInputs(t, dir, 3000)
	files := []string{"joined.jsonl", "late.jsonl", "per_minute.jsonl"}
	run := func(p *spec.Pipeline, par int, stop int64, clock func() time.Time) *engine.Summary {
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
		opts := engine.Options{Parallelism: par, BatchSize: 37, WallClock: clock}
		if stop > 0 {
			opts.ProgressEvery = stop
			opts.Progress = func(engine.Progress) { cancel() }
		}
		sum, err := engine.Run(ctx, pl, opts)
		if err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		return sum
	}
	refOut := filepath.Join(dir, "ref")
	sum := run(joinRestorePipeline(pay, ref, refOut, ""), 1, 0, nil)
	want := map[string]string{}
	for _, f := range files {
		want[f] = sortedLines(t, filepath.Join(refOut, f))
	}
	st := sum.Stages[0]
	if st.RowsEmitted < 1000 || st.TooLateSideOutput == 0 || st.LateAccepted == 0 || sum.Duplicates == 0 || !strings.Contains(want["joined.jsonl"], `"op":"update_before"`) {
		t.Fatalf("the reference run lacks cases: %d rows, %d too late, %d late accepted, %d duplicates", st.RowsEmitted, st.TooLateSideOutput, st.LateAccepted, sum.Duplicates)
	}
	var tick atomic.Int64
	clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	restored := 0
	for _, step := range []struct {
		stop int64
		par  int
	}{{700, 2}, {1500, 1}, {2400, 4}, {3300, 3}, {0, 2}} {
		s := run(joinRestorePipeline(pay, ref, out, ck), step.par, step.stop, clock)
		if step.stop > 0 && !s.Stopped {
			t.Fatalf("the run at parallelism %d did not stop", step.par)
		}
		if s.Checkpoints.Restored > 0 {
			restored++
		}
	}
	if restored != 4 {
		t.Fatalf("%d restores", restored)
	}
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if got := sortedLines(t, filepath.Join(out, f)); got != want[f] {
			t.Errorf("%s differs from the uninterrupted run's", f)
		}
	}
}
