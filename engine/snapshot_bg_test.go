package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// diskRunFS is diskRun with the stores on fs; it returns the run's error.
func diskRunFS(t *testing.T, p *spec.Pipeline, par int, stopAfter int64, clock func() time.Time, fs vfs.FS) (*engine.Summary, error) {
	t.Helper()
	p.State = spec.State{Backend: "disk", Memory: 16 << 20, Dir: p.State.Dir}
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
	opts := engine.Options{Parallelism: par, BatchSize: 100, HotTier: 1, WallClock: clock, StateFS: fs}
	if stopAfter > 0 {
		opts.ProgressEvery = stopAfter
		opts.Progress = func(engine.Progress) { cancel() }
	}
	return engine.Run(ctx, pl, opts)
}

// inSnapshot reports whether op creates a file in a snapshot's directory
// (pebble's checkpoint copying a store's MANIFEST and OPTIONS: the
// background part of a checkpoint's snapshot).
func inSnapshot(op errorfs.Op) bool {
	return op.Kind == errorfs.OpCreate && strings.Contains(op.Path, string(filepath.Separator)+"snap-")
}

// TestDiskSlowSnapshots: with every snapshot's background part slowed
// (each file pebble's checkpoint creates takes 15 ms more), the tasks go
// on under the overlay while checkpoints follow each other a round apart
// — a barrier arrives while the snapshot before is still running and
// waits for it — and a run stopped three times and resumed at another
// parallelism each time (1 → 2 → 1 → 2: a store split and excised, two
// joined, then taken whole, right after such checkpoints) ends with the
// outputs of an uninterrupted run on the memory backend.
func TestDiskSlowSnapshots(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 4000)
	build := func(out, ck string) *spec.Pipeline {
		p := diskPipeline(in, out, ck)
		p.Stages[0].Window.Size = spec.Duration(20 * time.Minute) // partials open across the stops
		if ck != "" {
			p.Checkpoint.Interval = spec.Duration(time.Millisecond)
			p.Checkpoint.Retain = 3
		}
		return p
	}
	want, clock := referenceRun(t, dir, build)
	slow := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if inSnapshot(op) {
			time.Sleep(15 * time.Millisecond)
		}
		return nil
	}))
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	var waited time.Duration
	restored := 0
	for k, step := range []struct {
		stop int64
		par  int
	}{{1000, 1}, {2000, 2}, {3000, 1}, {0, 2}} {
		sum, err := diskRunFS(t, build(out, ck), step.par, step.stop, clock, slow)
		if err != nil {
			t.Fatalf("parallelism %d: %v", step.par, err)
		}
		if step.stop > 0 && !sum.Stopped {
			t.Fatalf("the run at parallelism %d did not stop", step.par)
		}
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
		if r := sum.DiskState.Restore; k == 1 && (r.Stores != 2 || r.Excised != 2) {
			t.Errorf("1 → 2: %d stores, %d excised; want 2 and 2 (each task half of the one store)", r.Stores, r.Excised)
		}
		checkDiskCheckpoints(t, sum)
		for _, c := range sum.DiskState.Checkpoints {
			waited += c.Wait
		}
		t.Logf("parallelism %d: %d checkpoints, restored %d, restore %+v", step.par, sum.Checkpoints.Taken, sum.Checkpoints.Restored, sum.DiskState.Restore)
	}
	if restored != 3 {
		t.Fatalf("%d restores, want 3", restored)
	}
	if waited == 0 {
		t.Fatal("no checkpoint waited for the snapshot before: the snapshots did not overlap the tasks")
	}
	sameOutputs(t, want, out, "the uninterrupted run's")
}

// TestDiskSnapshotFaultInBackground: ENOSPC in a snapshot's background
// part (pebble's checkpoint creating the MANIFEST's copy) stops the run
// with an error naming the state store; the checkpoint in progress is not
// published, and a restart without the fault resumes from the newest
// complete checkpoint and ends with the outputs of an uninterrupted run.
func TestDiskSnapshotFaultInBackground(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 4000)
	build := func(out, ck string) *spec.Pipeline {
		p := diskPipeline(in, out, ck)
		if ck != "" {
			p.Checkpoint.Interval = spec.Duration(time.Millisecond)
			p.Checkpoint.Retain = 3
		}
		return p
	}
	want, clock := referenceRun(t, dir, build)
	for _, par := range []int{1, 2} {
		t.Run(map[int]string{1: "1", 2: "2"}[par], func(t *testing.T) {
			out, ck := filepath.Join(dir, "out", t.Name()), filepath.Join(dir, "ck", t.Name())
			var snaps atomic.Int64
			fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if inSnapshot(op) && strings.Contains(filepath.Base(op.Path), "MANIFEST") && snaps.Add(1) > 6 {
					return syscall.ENOSPC
				}
				return nil
			}))
			_, err := diskRunFS(t, build(out, ck), par, 0, clock, fs)
			if err == nil || !strings.Contains(err.Error(), "state store ") || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("got %v, want an error naming the state store and ENOSPC", err)
			}
			t.Logf("the run stopped: %v", err)
			ids, _ := checkpoint.List(ck)
			if len(ids) == 0 {
				t.Fatal("no checkpoint before the fault")
			}
			sum, err := diskRunFS(t, build(out, ck), 2, 0, clock, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Checkpoints.Restored != ids[0] {
				t.Fatalf("restored checkpoint %d, the newest was %d", sum.Checkpoints.Restored, ids[0])
			}
			sameOutputs(t, want, out, "the uninterrupted run's")
		})
	}
}
