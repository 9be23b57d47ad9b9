package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
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
	"github.com/tidemark/tidemark/state/disk"
)

// diskRun runs p on the disk backend at parallelism par with a hot tier
// of hot bytes per task; stopAfter > 0 stops it once that many records
// are read.
func diskRun(t *testing.T, p *spec.Pipeline, par, hot int, stopAfter int64, clock func() time.Time) *engine.Summary {
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
	opts := engine.Options{Parallelism: par, BatchSize: 100, HotTier: hot, WallClock: clock}
	if stopAfter > 0 {
		opts.ProgressEvery = stopAfter
		opts.Progress = func(engine.Progress) { cancel() }
	}
	sum, err := engine.Run(ctx, pl, opts)
	if err != nil {
		t.Fatalf("disk backend at parallelism %d: %v", par, err)
	}
	return sum
}

// diskInput writes n events with exact redeliveries (the same payload,
// another arrival and partition) and conflicting ones, out of order.
func diskInput(t *testing.T, path string, n int) {
	var b []byte
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		id, amount := i, i%90
		ts := base.Add(time.Duration(i*700+(i%13)*9000) * time.Millisecond)
		switch {
		case i%11 == 0 && i > 1500: // a redelivery of an event 1500 before
			id = i - 1500
			amount = id % 90
			ts = base.Add(time.Duration(id*700+(id%13)*9000) * time.Millisecond)
		case i%29 == 0 && i > 250: // a conflicting copy of an event 250 before
			id = i - 250
			amount = id%90 + 1
			ts = base.Add(time.Duration(id*700+(id%13)*9000) * time.Millisecond)
		}
		b = fmt.Appendf(b, `{"at":"%s","ts":"%s","id":"e%d","store":"s%d","amount":%d,"p":"%d"}`+"\n",
			base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), ts.Format(time.RFC3339Nano), id, (id*7)%50, amount, i%3)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// diskPipeline is rescalePipeline whose dedup ignores the delivery
// fields and forgets ids after 20 minutes of event time.
func diskPipeline(in, out, ck string) *spec.Pipeline {
	p := rescalePipeline(in, out, ck)
	p.Dedup.TTL = spec.Duration(20 * time.Minute)
	p.Dedup.Ignore = []string{"at", "p"}
	return p
}

// sameOutputs fails t where the outputs in dir differ from want.
func sameOutputs(t *testing.T, want map[string]string, dir, than string) {
	t.Helper()
	got := canonDir(t, dir)
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if got[f] != want[f] {
			t.Errorf("%s differs from %s", f, than)
		}
	}
}

// TestDiskBackendEqualsMemory: the dedup ids on the disk backend — a hot
// tier small enough that generations turn every few hundred records and
// most lookups of earlier ids go to the store, with sweeps deleting
// expired buckets — and the two tumbling-window stages' panes, written to
// the store every 256 records, give the rows, late, conflict and
// quarantine records of the memory backend, at parallelism 1, 2 and 4.
//
// The sliding variant makes both stages sliding windows (per_store 5
// minutes every minute, per_minute 2 minutes every minute): their slices
// go through the store, read back before each window closes or fires and
// before every retraction (per_minute's input).
func TestDiskBackendEqualsMemory(t *testing.T) {
	for _, kind := range []string{"tumbling", "sliding"} {
		t.Run(kind, func(t *testing.T) { checkDiskBackendEqualsMemory(t, kind) })
	}
}

// slidingStages makes p's two stages sliding windows of size×slide
// (per_store) and 2×slide (per_minute).
func slidingStages(p *spec.Pipeline, size, slide time.Duration) {
	p.Stages[0].Window = spec.Window{Type: "sliding", Size: spec.Duration(size), Slide: spec.Duration(slide)}
	p.Stages[1].Window = spec.Window{Type: "sliding", Size: spec.Duration(2 * slide), Slide: spec.Duration(slide)}
}

func checkDiskBackendEqualsMemory(t *testing.T, kind string) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 6000)
	build := func(out string) *spec.Pipeline {
		p := diskPipeline(in, out, "")
		if kind == "sliding" {
			slidingStages(p, 5*time.Minute, time.Minute)
		}
		return p
	}
	refOut := filepath.Join(dir, "ref")
	ref := runPart(t, build(refOut), 1, 0)
	want := canonDir(t, refOut)
	if ref.Duplicates < 200 || ref.Conflicts < 100 {
		t.Fatalf("%d duplicates, %d conflicts: the input does not exercise dedup", ref.Duplicates, ref.Conflicts)
	}
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprint("disk", par))
			sum := diskRun(t, build(out), par, 1, 0, nil)
			sameOutputs(t, want, out, "the memory backend's")
			if sum.Duplicates != ref.Duplicates || sum.Conflicts != ref.Conflicts {
				t.Errorf("%d duplicates, %d conflicts; the memory backend counted %d, %d", sum.Duplicates, sum.Conflicts, ref.Duplicates, ref.Conflicts)
			}
			d := sum.DiskState
			if d == nil || d.Reads == 0 || d.Hits == 0 || d.Writes < 5000 {
				t.Fatalf("disk state %+v: the ids did not go through the store", d)
			}
			// The tumbling windows' panes (per_store: retract mode, an int
			// sum; per_minute: retractions from per_store's changelog)
			// spill every 256 records under the tiny tier; every partial
			// written is read back as its window fires or is retracted.
			if d.WindowWrites < 100 || d.WindowReads != d.WindowWrites {
				t.Fatalf("disk state %+v: the windows did not go through the store", d)
			}
			// per_store's fired windows wait 30 s for late rows: their
			// instances are written too, each read back once (by a late
			// row of its key group or the close).
			if kind == "tumbling" && (d.WindowFiredWrites == 0 || d.WindowFiredReads != d.WindowFiredWrites) {
				t.Fatalf("disk state %+v: the fired windows did not go through the store", d)
			}
			t.Logf("store: %+v", *d)
		})
	}
}

// TestDiskRestoreChains: a disk-backend run with a checkpoint after every
// round, stopped four times and resumed at another parallelism each time
// (2, 1, 4, 3, 2: stores restored locally, split, excised and joined),
// gives the outputs of an uninterrupted run on the memory backend. The
// first stage's windows are 20 minutes long, so that the partials its
// panes wrote to the stores are open at the stops and cross the restores
// (read back by a later run).
//
// The sliding variant's first stage slides a 20-minute window every 10
// minutes in mode final (its slices stay virtual until the windows close,
// so their partials cross the restores, keeping their arrival numbers),
// its second 20 minutes every 10.
//
// The late variant keeps the first stage's 1-minute windows open 30
// minutes after they fire (allowed lateness): most of its state is fired
// windows waiting for late rows, whose instances are written to the
// stores, cross the restores and are read back by a later run (by late
// rows, the most 108 s late, or the close).
func TestDiskRestoreChains(t *testing.T) {
	for _, kind := range []string{"tumbling", "sliding", "late"} {
		t.Run(kind, func(t *testing.T) { checkDiskRestoreChains(t, kind) })
	}
}

func checkDiskRestoreChains(t *testing.T, kind string) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 6000)
	keep := 256
	build := func(out, ck string) *spec.Pipeline {
		p := diskPipeline(in, out, ck)
		switch kind {
		case "late":
			p.Stages[0].AllowedLateness = spec.Duration(30 * time.Minute)
		default:
			p.Stages[0].Window.Size = spec.Duration(20 * time.Minute)
		}
		if kind == "sliding" {
			slidingStages(p, 20*time.Minute, 10*time.Minute)
			p.Stages[0].Emit.Mode = "final"
		}
		p.Dedup.KeepPayloads = &keep
		if ck != "" {
			p.Checkpoint.Interval = spec.Duration(time.Millisecond)
			p.Checkpoint.Retain = 3
		}
		return p
	}
	want, clock := referenceRun(t, dir, build)
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	restored, carried, firedCarried := 0, 0, 0
	for k, step := range []struct {
		stop int64
		par  int
	}{{900, 2}, {1700, 1}, {2600, 4}, {3900, 3}, {0, 2}} {
		sum := diskRun(t, build(out, ck), step.par, 1, step.stop, clock)
		if step.stop > 0 && !sum.Stopped {
			t.Fatalf("the run at parallelism %d did not stop", step.par)
		}
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
		if d := sum.DiskState; d != nil && d.WindowReads > d.WindowWrites {
			carried++ // read back window partials an earlier run wrote: restored with the stores
		}
		if d := sum.DiskState; d != nil && d.WindowFiredReads > d.WindowFiredWrites {
			firedCarried++ // and fired windows' instances
		}
		checkDiskCheckpoints(t, sum)
		// What the restores took: 2 → 1, both stores whole; 1 (holding
		// those two stores) → 4, each task a half of one of them, excised;
		// every table by a link (one file system), none copied.
		r := sum.DiskState.Restore
		t.Logf("parallelism %d: restore %+v", step.par, r)
		switch {
		case r.CopiedBytes != 0:
			t.Errorf("step %d: %d bytes of tables copied within one file system", k, r.CopiedBytes)
		case k > 0 && (r.Tables == 0 || r.TableBytes == 0):
			t.Errorf("step %d: the restore took no table", k)
		case k == 1 && (r.Stores != 2 || r.Excised != 0):
			t.Errorf("2 → 1: %d stores, %d excised; want 2 and 0", r.Stores, r.Excised)
		case k == 2 && (r.Stores != 4 || r.Excised != 4):
			t.Errorf("1 → 4: %d stores, %d excised; want 4 and 4", r.Stores, r.Excised)
		}
		t.Logf("parallelism %d: %+v", step.par, sum.DiskState)
	}
	if restored != 4 {
		t.Fatalf("%d restores, want 4", restored)
	}
	sameOutputs(t, want, out, "the uninterrupted run's")
	if carried == 0 {
		t.Fatal("no run read back window partials written before its restore: the windows' state on disk did not cross a checkpoint")
	}
	if kind == "late" && firedCarried == 0 {
		t.Fatal("no run read back fired windows' instances written before its restore")
	}
}

// TestDiskRescaleCopiesAcrossFileSystems: with the checkpoint directory
// on another file system than the state (a tmpfs), a restore cannot link
// the tables: a rescale 2 → 1 copies every table it takes — the bytes
// copied equal the tables' bytes, and both tasks' stores come whole
// (none excised) — and ends with the outputs of an uninterrupted run.
func TestDiskRescaleCopiesAcrossFileSystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "tidemark-ck-")
	if err != nil {
		t.Skipf("no tmpfs at /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	dir := t.TempDir()
	var a, b syscall.Stat_t
	if syscall.Stat(shm, &a) != nil || syscall.Stat(dir, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the temporary directory's file system")
	}
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 3000)
	build := func(out, ck string) *spec.Pipeline {
		p := diskPipeline(in, out, ck)
		if ck != "" {
			p.Checkpoint.Interval = spec.Duration(time.Millisecond)
			p.Checkpoint.Retain = 2
			p.State.Dir = filepath.Join(dir, "state") // not beside the checkpoints
		}
		return p
	}
	want, clock := referenceRun(t, dir, build)
	out, ck := filepath.Join(dir, "out"), filepath.Join(shm, "ck")
	if sum := diskRun(t, build(out, ck), 2, 1, 1500, clock); !sum.Stopped {
		t.Fatal("the run at parallelism 2 did not stop")
	}
	sum := diskRun(t, build(out, ck), 1, 1, 0, clock)
	r := sum.DiskState.Restore
	t.Logf("2 → 1 across file systems: %+v", r)
	if sum.Checkpoints.Restored == 0 || r.Tables == 0 || r.CopiedBytes != r.TableBytes || r.Stores != 2 || r.Excised != 0 {
		t.Fatalf("restore %+v from checkpoint %d: want both stores whole, every table's bytes copied", r, sum.Checkpoints.Restored)
	}
	sameOutputs(t, want, out, "the uninterrupted run's")
}

// checkDiskCheckpoints fails t unless sum lists each checkpoint the run
// took once, in order, with a measured pause, and the tables they sent add
// up to the run's SentBytes.
func checkDiskCheckpoints(t *testing.T, sum *engine.Summary) {
	t.Helper()
	d := sum.DiskState
	if d == nil {
		t.Fatal("no disk state summary")
	}
	if len(d.Checkpoints) != sum.Checkpoints.Taken {
		t.Fatalf("%d disk checkpoints listed, %d taken", len(d.Checkpoints), sum.Checkpoints.Taken)
	}
	var sent int64
	for i, c := range d.Checkpoints {
		if c.Pause <= 0 {
			t.Errorf("checkpoint %d: pause %v", c.ID, c.Pause)
		}
		// The pause's parts are of the pause's task, measured within it;
		// the snapshot's parts run in the background (not in the pause),
		// and a pebble checkpoint and a listing always take some time; the
		// writer waits for the snapshots and uploads.
		if parts := c.WriteBack + c.Wait; parts > c.Pause || c.WriteBack < 0 || c.Wait < 0 {
			t.Errorf("checkpoint %d: pause %v, parts write-back %v, wait %v", c.ID, c.Pause, c.WriteBack, c.Wait)
		}
		if c.Checkpoint <= 0 || c.Flush < 0 || c.List <= 0 || c.Snapshot <= 0 || c.Upload <= 0 {
			t.Errorf("checkpoint %d: snapshot's parts flush %v, checkpoint %v, list %v; the writer's wait %v, upload %v", c.ID, c.Flush, c.Checkpoint, c.List, c.Snapshot, c.Upload)
		}
		if i > 0 && c.ID <= d.Checkpoints[i-1].ID {
			t.Errorf("checkpoint %d listed after %d", c.ID, d.Checkpoints[i-1].ID)
		}
		sent += c.Sent
	}
	if n := len(d.Checkpoints); n > 0 && d.Checkpoints[n-1].ID != sum.Checkpoints.Last {
		t.Errorf("the last checkpoint listed is %d, the run's last %d", d.Checkpoints[n-1].ID, sum.Checkpoints.Last)
	}
	if sent != d.SentBytes {
		t.Errorf("the checkpoints sent %d bytes of tables in all, SentBytes %d", sent, d.SentBytes)
	}
	var text strings.Builder
	sum.WriteText(&text, time.UTC)
	if spec.Bytes(d.Memory) < spec.MinStateMemory || d.Dir == "" {
		t.Errorf("the summary's state.memory %d, state.dir %q", d.Memory, d.Dir)
	}
	if want := "state backend        disk (state.memory " + spec.Bytes(d.Memory).String() + ", state.dir " + d.Dir + ")"; !strings.Contains(text.String(), want) {
		t.Errorf("the summary does not say %q:\n%s", want, text.String())
	}
	if restored := strings.Contains(text.String(), "state restored"); restored != (d.Restore.Stores > 0) {
		t.Errorf("the summary says state restored: %v; the restore made %d stores", restored, d.Restore.Stores)
	}
}

// TestDiskFaults: ENOSPC writing a store's table and EIO syncing one stop
// the run (EIO reading one: state/disk's TestReadFault) with an error naming the state store and what
// failed; nothing of the checkpoint in progress is published, and a
// restart without the fault resumes from the last complete checkpoint
// and ends with the outputs of an uninterrupted run.
func TestDiskFaults(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 6000)
	refOut := filepath.Join(dir, "ref")
	runPart(t, diskPipeline(in, refOut, ""), 1, 0)
	want := canonDir(t, refOut)
	for _, tc := range []struct {
		name  string
		kind  errorfs.OpKind
		errno syscall.Errno
		want  string
	}{
		{"ENOSPC writing a table", errorfs.OpFileWrite, syscall.ENOSPC, "no space left on device"},
		{"EIO syncing a table", errorfs.OpFileSync, syscall.EIO, "input/output error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ck := filepath.Join(dir, "out-"+tc.name), filepath.Join(dir, "ck-"+tc.name)
			var on atomic.Bool
			var fired atomic.Int64
			inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
				kind := op.Kind
				if kind == errorfs.OpFileSyncData || kind == errorfs.OpFileSyncTo {
					kind = errorfs.OpFileSync
				}
				// A few faults: a failed flush or compaction is retried by
				// pebble, and once the faults stop the retry succeeds, so the
				// store closes (a read fault may first meet pebble's table
				// statistics, which only log it, before a lookup).
				if on.Load() && kind == tc.kind && strings.HasSuffix(op.Path, ".sst") && fired.Add(1) <= 50 {
					return tc.errno
				}
				return nil
			})
			build := func() *spec.Pipeline {
				p := diskPipeline(in, out, ck)
				p.Checkpoint.Interval = spec.Duration(time.Millisecond)
				p.State = spec.State{Backend: "disk", Memory: 16 << 20, Dir: p.State.Dir}
				p.Defaults()
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				return p
			}
			pl, err := plan.Compile(build(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var tick atomic.Int64
			clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
			opts := engine.Options{Parallelism: 2, BatchSize: 100, HotTier: 1, WallClock: clock, StateFS: errorfs.Wrap(vfs.Default, inj),
				ProgressEvery: 2000, Progress: func(engine.Progress) { on.Store(true) }}
			_, err = engine.Run(context.Background(), pl, opts)
			if err == nil || !strings.Contains(err.Error(), "state store ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming the state store and %q", err, tc.want)
			}
			t.Logf("the run stopped: %v", err)
			ids, _ := checkpoint.List(ck)
			if len(ids) == 0 {
				t.Fatal("no checkpoint before the fault")
			}
			sum := diskRun(t, build(), 2, 1, 0, clock)
			if sum.Checkpoints.Restored != ids[0] {
				t.Fatalf("restored checkpoint %d, the newest was %d", sum.Checkpoints.Restored, ids[0])
			}
			sameOutputs(t, want, out, "the uninterrupted run's")
		})
	}
}

// TestDiskMemoryLimitOnlyWhenAsked: a run on the disk backend leaves the
// process's Go memory limit alone unless Options.SetMemoryLimit asks;
// then the limit is the budget plus the overhead during the run and the
// previous one after it.
func TestDiskMemoryLimitOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	diskInput(t, in, 300)
	before := debug.SetMemoryLimit(-1)
	for _, set := range []bool{false, true} {
		p := diskPipeline(in, filepath.Join(dir, fmt.Sprint("out", set)), "")
		p.State = spec.State{Backend: "disk", Memory: 64 << 20}
		p.Defaults()
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		var during atomic.Int64
		opts := engine.Options{Parallelism: 2, BatchSize: 50, SetMemoryLimit: set, ProgressEvery: 100,
			Progress: func(engine.Progress) { during.Store(debug.SetMemoryLimit(-1)) }}
		if _, err := engine.Run(context.Background(), pl, opts); err != nil {
			t.Fatal(err)
		}
		want := before
		if set {
			want = min(before, 64<<20+disk.Overhead(64<<20))
		}
		if got := during.Load(); got != want {
			t.Errorf("SetMemoryLimit %v: the limit during the run is %d, want %d", set, got, want)
		}
		if after := debug.SetMemoryLimit(-1); after != before {
			t.Errorf("SetMemoryLimit %v: the limit after the run is %d, want the previous %d", set, after, before)
		}
	}
}
