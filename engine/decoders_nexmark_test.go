package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/spec"
)

// nexmarkDecodedPipeline counts bids per bidder in 1-second tumbling
// windows (emit update) over 30,000 Nexmark events at 1,000 events/s,
// a quarter of them delivered up to 3 s late, with a watermark 500 ms
// behind: late bids go to the late output, so the outputs depend on
// the exact delivery order. At two tasks or more the generator's batches
// are claimed as ranges of event ids and generated on the decoders.
func nexmarkDecodedPipeline(out, ck string) *spec.Pipeline {
	p := &spec.Pipeline{
		Name: "nexmark_decoded",
		Source: spec.Source{Type: "nexmark", Events: 30_000, Rate: 1000, Seed: 3,
			Delay: &spec.NexmarkDelay{Fraction: 0.25, Max: spec.Duration(3 * time.Second)}},
		EventTime:  spec.EventTime{Field: "date_time", OutOfOrderness: spec.Duration(500 * time.Millisecond)},
		Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "quarantine.jsonl")}},
		Stages: []spec.Stage{{
			Name: "bids", Filter: "event_type == 2", Key: []string{"bid.bidder"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Second)},
			Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "top", Expr: "max(bid.price)"}},
			Emit:       spec.Emit{Mode: "update"},
			Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "bids.jsonl")}},
		}},
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Millisecond), Retain: 3}
	}
	return p
}

// nexmarkOutputs reads nexmarkDecodedPipeline's outputs in dir, each
// file's lines sorted (every row carries its window, key and version).
func nexmarkOutputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"bids.jsonl", "late.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(lines)
		out[f] = strings.Join(lines, "\n")
	}
	return out
}

// TestDecodersNexmarkRestore: the Nexmark generator claimed as ranges of
// event ids and generated on the decoders (2 and 4 tasks) gives the
// outputs of a one-task run reading with Next — uninterrupted, stopped
// four times with a checkpoint after every round and resumed each time
// at another parallelism, and crashed right after a checkpoint mid-run
// (the router has claimed batches ahead of it) five times, each restart
// at another parallelism: every checkpoint holds the generator's
// position after the last batch routed.
func TestDecodersNexmarkRestore(t *testing.T) {
	dir := t.TempDir()
	refOut := filepath.Join(dir, "ref")
	events := runDecoded(t, nexmarkDecodedPipeline(refOut, ""), 1, 0, nil).EventsRead
	want := nexmarkOutputs(t, refOut)
	if events != 30_000 || strings.Count(want["bids.jsonl"], "\n") < 1000 || strings.Count(want["late.jsonl"], "\n") < 100 {
		t.Fatalf("the reference run read %d events, wrote %d rows and %d late bids", events,
			strings.Count(want["bids.jsonl"], "\n"), strings.Count(want["late.jsonl"], "\n"))
	}
	same := func(out, what string) {
		t.Helper()
		got := nexmarkOutputs(t, out)
		for _, f := range []string{"bids.jsonl", "late.jsonl"} {
			if got[f] != want[f] {
				t.Errorf("%s: %s differs from the one-task run's", what, f)
			}
		}
	}
	for _, par := range []int{2, 4} {
		out := filepath.Join(dir, "whole", string(rune('0'+par)))
		runDecoded(t, nexmarkDecodedPipeline(out, ""), par, 0, nil)
		same(out, "uninterrupted at "+string(rune('0'+par)))
	}
	var tick atomic.Int64
	clock := func() time.Time { return time.Unix(tick.Add(1), 0) }

	out, ck := filepath.Join(dir, "stopped"), filepath.Join(dir, "ck-stopped")
	restored := 0
	for _, step := range []struct {
		stop int64
		par  int
	}{{4000, 2}, {9000, 4}, {14000, 1}, {21000, 3}, {0, 2}} {
		sum := runDecoded(t, nexmarkDecodedPipeline(out, ck), step.par, step.stop, clock)
		if step.stop > 0 && (!sum.Stopped || sum.EventsRead >= events) {
			t.Fatalf("the run at parallelism %d did not stop (%d events)", step.par, sum.EventsRead)
		}
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
	}
	if restored != 4 {
		t.Fatalf("%d restores", restored)
	}
	same(out, "stopped and resumed")

	out, ck = filepath.Join(dir, "crashed"), filepath.Join(dir, "ck-crashed")
	crashes := 0
	for i, par := range []int{2, 4, 3, 2, 4, 2} {
		at := int64(7 + 5*i) // checkpoint ids go on across restarts
		var sum any
		if crashed(func() {
			sum = runDecodedFault(t, nexmarkDecodedPipeline(out, ck), par, 0, clock, func(point string, id int64) {
				if point == "written" && id == at && i < 5 {
					panic(errCrash)
				}
			})
		}) {
			crashes++
			continue
		}
		if i < 5 {
			t.Fatalf("run %d at parallelism %d ended (%v) before checkpoint %d", i, par, sum, at)
		}
	}
	if crashes != 5 {
		t.Fatalf("%d crashes", crashes)
	}
	same(out, "crashed and restarted")
}
