package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// TestDamagedSegment: the newest checkpoint's segment file damaged (a
// byte flipped) or missing is detected and named, the previous complete
// checkpoint is restored instead, and the outputs equal an uninterrupted
// run's.
func TestDamagedSegment(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rescaleInput(t, in, 6000)
	refOut := filepath.Join(dir, "ref")
	runPart(t, rescalePipeline(in, refOut, ""), 1, 0)
	want := canonDir(t, refOut)
	for _, damage := range []string{"flipped", "missing"} {
		t.Run(damage, func(t *testing.T) {
			out, ck := filepath.Join(dir, "out-"+damage), filepath.Join(dir, "ck-"+damage)
			var tick atomic.Int64
			clock := func() time.Time { return time.Unix(tick.Add(1), 0) }
			run := func(stop int64) (*engine.Summary, []string) {
				p := rescalePipeline(in, out, ck)
				p.Checkpoint.Interval, p.Checkpoint.Retain = spec.Duration(time.Millisecond), 3
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
				var mu sync.Mutex
				var logs []string
				opts := engine.Options{Parallelism: 2, BatchSize: 100, WallClock: clock, Logf: func(f string, a ...any) {
					mu.Lock()
					logs = append(logs, fmt.Sprintf(f, a...))
					mu.Unlock()
				}}
				if stop > 0 {
					opts.ProgressEvery = stop
					opts.Progress = func(engine.Progress) { cancel() }
				}
				sum, err := engine.Run(ctx, pl, opts)
				if err != nil {
					t.Fatal(err)
				}
				return sum, logs
			}
			run(2500)
			ids, err := checkpoint.List(ck)
			if err != nil || len(ids) < 2 {
				t.Fatalf("checkpoints %v, %v", ids, err)
			}
			// The newest segment: the checkpoints from its id on reference
			// it (a checkpoint whose key groups did not change writes none).
			segs, err := checkpoint.DirStore{Dir: ck}.Segments()
			if err != nil || len(segs) == 0 {
				t.Fatalf("segments %v, %v", segs, err)
			}
			newest, _ := checkpoint.SegmentID(segs[len(segs)-1])
			if newest <= ids[len(ids)-1] {
				t.Fatalf("the newest segment %d is not newer than the oldest checkpoint kept %v", newest, ids)
			}
			seg := filepath.Join(ck, checkpoint.SegmentName(newest))
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if damage == "flipped" {
				b[len(b)/2] ^= 0x40
				err = os.WriteFile(seg, b, 0o600)
			} else {
				err = os.Remove(seg)
			}
			if err != nil {
				t.Fatal(err)
			}
			sum, logs := run(0)
			if sum.Checkpoints.Restored == 0 || sum.Checkpoints.Restored >= newest {
				t.Fatalf("restored checkpoint %d, want one before %d", sum.Checkpoints.Restored, newest)
			}
			named := false
			for _, l := range logs {
				named = named || (strings.Contains(l, "unusable") && strings.Contains(l, checkpoint.SegmentName(newest)))
			}
			if !named {
				t.Fatalf("no log line names the damaged checkpoint and its segment: %q", logs)
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
