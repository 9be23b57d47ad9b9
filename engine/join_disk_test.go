package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// diskJoinPipeline is joinRestorePipeline with an interval join of kind
// kind and, on the disk backend, a 16 MiB budget.
func diskJoinPipeline(pay, ref, out, ck, backend, kind string) *spec.Pipeline {
	p := joinRestorePipeline(pay, ref, out, ck)
	p.Stages[0].Join.Kind = kind
	if backend == "disk" {
		p.State = spec.State{Backend: "disk", Memory: 16 << 20}
	}
	return p
}

func runJoinDisk(t *testing.T, p *spec.Pipeline, par, hot int, stop int64, clock func() time.Time) *engine.Summary {
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
	opts := engine.Options{Parallelism: par, BatchSize: 37, HotTier: hot, WallClock: clock}
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

// TestDiskIntervalJoinEqualsMemory: an interval join of two inputs, inner,
// left and full (retract mode: a padded row retracted when a late match
// comes), on the disk backend, under a hot tier of one byte (every check
// of the tier turns it: keys leave memory and are loaded back from the
// store), gives the joined rows, the late rows and the downstream sums of
// the memory backend at parallelism 1, 2 and 4, uninterrupted and across
// a chain of checkpoints, stops and restores at other parallelisms (1 → 4
// → 2 → 3: the stores split, excised and joined as sets). The outer
// joins' padded rows of keys gone from memory come from the store (its
// pad index; the join test TestDiskOuterJoinPadsFromTheStore counts it).
func TestDiskIntervalJoinEqualsMemory(t *testing.T) {
	for _, kind := range []string{"inner", "left", "full"} {
		t.Run(kind, func(t *testing.T) { testDiskIntervalJoin(t, kind) })
	}
}

func testDiskIntervalJoin(t *testing.T, kind string) {
	dir := t.TempDir()
	pay, ref := joinInputs(t, dir, 3000)
	files := []string{"joined.jsonl", "late.jsonl", "per_minute.jsonl"}
	refOut := filepath.Join(dir, "ref")
	sum := runJoinDisk(t, diskJoinPipeline(pay, ref, refOut, "", "memory", kind), 1, 0, 0, nil)
	if st := sum.Stages[0]; st.RowsEmitted < 900 || st.TooLateSideOutput == 0 || st.LateAccepted == 0 {
		t.Fatalf("the reference run lacks cases: %d rows, %d too late, %d late accepted", st.RowsEmitted, st.TooLateSideOutput, st.LateAccepted)
	}
	want := map[string]string{}
	for _, f := range files {
		want[f] = sortedLines(t, filepath.Join(refOut, f))
	}
	same := func(t *testing.T, out string) {
		t.Helper()
		for _, f := range files {
			if got := sortedLines(t, filepath.Join(out, f)); got != want[f] {
				t.Errorf("%s differs from the memory backend's", f)
			}
		}
	}
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprint("disk", par))
			s := runJoinDisk(t, diskJoinPipeline(pay, ref, out, "", "disk", kind), par, 1, 0, nil)
			same(t, out)
			// At one task the tier turns often enough that refunds find their
			// payments' keys gone from memory; at more, each task turns
			// after 256 of its own rows, and fewer do.
			if d := s.DiskState; d == nil || par == 1 && (d.JoinLoads == 0 || d.JoinRowsRead == 0) || d.JoinRowsWritten < 1000 {
				t.Fatalf("disk state %+v: the join's rows did not go through the store", d)
			}
			t.Logf("store: %+v", *s.DiskState)
		})
	}
	t.Run("restores", func(t *testing.T) {
		var tick atomic.Int64
		clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
		out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
		restored := 0
		for _, step := range []struct {
			stop int64
			par  int
		}{{700, 1}, {1500, 4}, {2400, 2}, {0, 3}} {
			s := runJoinDisk(t, diskJoinPipeline(pay, ref, out, ck, "disk", kind), step.par, 1, step.stop, clock)
			if step.stop > 0 && !s.Stopped {
				t.Fatalf("the run at parallelism %d did not stop", step.par)
			}
			if s.Checkpoints.Restored > 0 {
				restored++
				if s.DiskState.JoinLoads == 0 {
					t.Fatalf("a restored run at parallelism %d loaded no key from the store", step.par)
				}
			}
		}
		if restored != 3 {
			t.Fatalf("%d restores, want 3", restored)
		}
		same(t, out)
	})
}
