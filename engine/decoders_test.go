package engine_test

import (
	"context"
	"errors"
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
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/spec"
)

// decodedPipeline is rescalePipeline over one unpartitioned JSONL file
// without arrival times (a source whose batches decoders decode at more
// than one task), processing time from a fixed clock.
func decodedPipeline(in, out, ck string) *spec.Pipeline {
	p := rescalePipeline(in, out, ck)
	p.Source.ArrivalTimeField, p.Source.PartitionField = "", ""
	return p
}

// finishedPipeline is rescalePipeline over rescaleInput's lines split
// into three files, its partitions (partition_field) and arrival times
// (arrival_time_field) read from decoded fields and an ordinal per store
// (summed by per_store): a source whose claimed batches the router
// finishes in order after the decoders decoded them (source.Finisher).
func finishedPipeline(in, out, ck string) *spec.Pipeline {
	p := rescalePipeline(filepath.Join(filepath.Dir(in), "parts", "*.jsonl"), out, ck)
	p.Source.Ordinal = &spec.Ordinal{Field: "line", Per: "store"}
	p.Stages[0].Aggregates = append(p.Stages[0].Aggregates, spec.NamedExpr{Name: "lines", Expr: "sum(line)"})
	return p
}

// replayPipeline is finishedPipeline delivered by a seeded replay
// (delays, stragglers, redeliveries, conflicting copies, three
// partitions by store) instead of partition_field and
// arrival_time_field: a source whose claimed, decoded batches the router
// feeds to the replay in order (source.Reorderer).
func replayPipeline(in, out, ck string) *spec.Pipeline {
	p := finishedPipeline(in, out, ck)
	p.Source.PartitionField, p.Source.ArrivalTimeField = "", ""
	p.Source.Replay = &spec.Replay{Seed: 9, Delay: spec.Duration(20 * time.Second), StragglerFraction: 0.05,
		MaxDelay: spec.Duration(5 * time.Minute), RedeliverFraction: 0.02, ConflictFraction: 0.01,
		ConflictField: "amount", Partitions: 3, PartitionBy: "store"}
	return p
}

// splitInput writes the lines of the file in into files parts/0.jsonl,
// parts/1.jsonl and parts/2.jsonl beside it, in order, a third each.
func splitInput(t *testing.T, in string) {
	t.Helper()
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	dir := filepath.Join(filepath.Dir(in), "parts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f := range 3 {
		part := strings.Join(lines[f*len(lines)/3:(f+1)*len(lines)/3], "")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(f, ".jsonl")), []byte(part), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// decodedSources are the pipelines TestDecodersRestore and
// TestDecodersCrash run: a source that splits, and one that also
// finishes its batches.
var decodedSources = []struct {
	name string
	mk   func(in, out, ck string) *spec.Pipeline
}{{"split", decodedPipeline}, {"finished", finishedPipeline}, {"replay", replayPipeline}}

// fixedNow is the processing time of runDecoded's runs: after every
// event time of rescaleInput, within the default timestamp rules.
var fixedNow = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC).UnixMilli()

// runDecoded runs p at parallelism par with a fixed processing-time
// clock and the wall clock given; stop > 0 stops it (as SIGTERM would)
// after that many records.
func runDecoded(t *testing.T, p *spec.Pipeline, par int, stop int64, wall func() time.Time) *engine.Summary {
	return runDecodedFault(t, p, par, stop, wall, nil)
}

// errCrash is the panic of a crash runDecodedFault's hook makes.
var errCrash = errors.New("crash")

// crashed runs f and reports whether it panicked with errCrash.
func crashed(f func()) (c bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != errCrash {
				panic(v)
			}
			c = true
		}
	}()
	f()
	return false
}

// runDecodedFault is runDecoded with a hook at the checkpoint
// protocol's points (Options.FaultHook).
func runDecodedFault(t *testing.T, p *spec.Pipeline, par int, stop int64, wall func() time.Time, hook func(string, int64)) *engine.Summary {
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
	opts := engine.Options{Parallelism: par, BatchSize: 64, Clock: func() int64 { return fixedNow }, WallClock: wall, FaultHook: hook}
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

// TestDecodersRestore: a file source decoded by decoder goroutines (at
// 2, 3 and 4 tasks; one task reads with Next) gives the outputs of a
// one-task run, uninterrupted, and stopped four times with a checkpoint
// after every round and resumed each time at another parallelism: the
// position each checkpoint holds is the source's after the last batch
// routed, not after the batches the router claimed ahead.
//
// The same for a file source with partitions, arrival times and an
// ordinal read from its decoded fields, over three files
// (finishedPipeline), and for a replay of them fed by the decoders
// (replayPipeline: its checkpoints name the claimed batch and the
// records the replay took of it).
func TestDecodersRestore(t *testing.T) {
	for _, src := range decodedSources {
		t.Run(src.name, func(t *testing.T) { testDecodersRestore(t, src.mk) })
	}
}

func testDecodersRestore(t *testing.T, decodedPipeline func(in, out, ck string) *spec.Pipeline) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 5000)
	splitInput(t, in)
	refOut := filepath.Join(dir, "ref")
	events := runDecoded(t, decodedPipeline(in, refOut, ""), 1, 0, nil).EventsRead // 5000, and a replay's copies
	want := canonDir(t, refOut)
	if strings.Count(want["per_store.jsonl"], "\n") < 1000 || want["late.jsonl"] == "" || want["conflicts.jsonl"] == "" {
		t.Fatalf("the reference run lacks rows or side outputs")
	}
	same := func(out, what string) {
		t.Helper()
		got := canonDir(t, out)
		for _, f := range slices.Sorted(maps.Keys(want)) {
			if got[f] != want[f] {
				t.Errorf("%s: %s differs from the one-task run's", what, f)
			}
		}
	}
	for _, par := range []int{2, 4} {
		out := filepath.Join(dir, "whole", string(rune('0'+par)))
		runDecoded(t, decodedPipeline(in, out, ""), par, 0, nil)
		same(out, "uninterrupted at "+string(rune('0'+par)))
	}
	var tick atomic.Int64
	clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	restored := 0
	for _, step := range []struct {
		stop int64
		par  int
	}{{700, 2}, {1500, 4}, {2300, 1}, {3800, 3}, {0, 2}} {
		p := decodedPipeline(in, out, ck)
		p.Checkpoint.Interval = spec.Duration(time.Millisecond)
		sum := runDecoded(t, p, step.par, step.stop, clock)
		if step.stop > 0 && (!sum.Stopped || sum.EventsRead >= events) {
			t.Fatalf("the run at parallelism %d did not stop (%d events)", step.par, sum.EventsRead)
		}
		if step.stop == 0 && sum.EventsRead != events {
			t.Fatalf("the last run read %d events in all", sum.EventsRead)
		}
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
	}
	if restored != 4 {
		t.Fatalf("%d restores", restored)
	}
	same(out, "stopped and resumed")
}

// TestDecodersCrash: runs decoded by decoder goroutines that crash right
// after a checkpoint mid-run is written (the router has claimed batches
// ahead of the round it took the checkpoint after), each restarted at
// another parallelism from that checkpoint, end with the outputs of an
// uninterrupted one-task run.
//
// The same for finishedPipeline's and replayPipeline's sources.
func TestDecodersCrash(t *testing.T) {
	for _, src := range decodedSources {
		t.Run(src.name, func(t *testing.T) { testDecodersCrash(t, src.mk) })
	}
}

func testDecodersCrash(t *testing.T, decodedPipeline func(in, out, ck string) *spec.Pipeline) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 5000)
	splitInput(t, in)
	refOut := filepath.Join(dir, "ref")
	runDecoded(t, decodedPipeline(in, refOut, ""), 1, 0, nil)
	want := canonDir(t, refOut)
	var tick atomic.Int64
	clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	crashes := 0
	for i, par := range []int{2, 4, 3, 2, 4, 2} {
		p := decodedPipeline(in, out, ck)
		p.Checkpoint.Interval = spec.Duration(time.Millisecond)
		p.Checkpoint.Retain = 3
		at := int64(7 + 5*i) // checkpoint ids go on across restarts
		var sum *engine.Summary
		if crashed(func() {
			sum = runDecodedFault(t, p, par, 0, clock, func(point string, id int64) {
				if point == "written" && id == at && i < 5 {
					panic(errCrash)
				}
			})
		}) {
			crashes++
			continue
		}
		if i < 5 {
			t.Fatalf("run %d at parallelism %d ended (%d events) before checkpoint %d", i, par, sum.EventsRead, at)
		}
	}
	if crashes != 5 {
		t.Fatalf("%d crashes", crashes)
	}
	got := canonDir(t, out)
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if got[f] != want[f] {
			t.Errorf("%s differs from the one-task run's", f)
		}
	}
}

// panicky decodes its third batch with a panic.
type panicky struct {
	*file.Source
	n atomic.Int64
}

func (p *panicky) Decode(b *source.Batch) {
	if p.n.Add(1) == 3 {
		panic("decoder broke")
	}
	p.Source.Decode(b)
}

// TestDecoderPanicStopsTheRun: a panic on a decoder goroutine stops the
// run at every parallelism that decodes on decoders, raised again on
// Run's goroutine, and leaves no goroutine behind (goleak in TestMain),
// for a source that splits and one that finishes its batches.
func TestDecoderPanicStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 3000)
	splitInput(t, in)
	for i, par := range []int{2, 3, 2, 3, 2, 3} {
		src := decodedSources[i/2]
		p := src.mk(in, filepath.Join(dir, fmt.Sprint("out", i)), "")
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := file.New(file.Config{Spec: p.Source, Fields: format.Fields{Schema: pl.SourceSchema, Time: pl.TimeParsers}, EventTimeField: pl.EventTimeField})
		if err != nil {
			t.Fatal(err)
		}
		ps := &panicky{Source: fs}
		name := src.name
		var got any
		func() {
			defer func() { got = recover() }()
			engine.Run(context.Background(), pl, engine.Options{Parallelism: par, BatchSize: 64, Source: ps, Clock: func() int64 { return fixedNow }})
		}()
		if got != "decoder broke" {
			t.Fatalf("%s, parallelism %d: recovered %v", name, par, got)
		}
		if ps.n.Load() < 3 {
			t.Fatalf("%s, parallelism %d: %d batches decoded on decoders", name, par, ps.n.Load())
		}
		fs.Close()
	}
}
