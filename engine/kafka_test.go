package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// liveCapture keeps a live run's final rows and late records for a test that
// polls them from another goroutine.
type liveCapture struct {
	mu    sync.Mutex
	final []string // "10:00 n=2 wm=10:03:10"
	late  []string // late records as JSON
}

func (c *liveCapture) Write(_ context.Context, rows []changelog.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		if r.IsFinal {
			wm := "inf"
			if r.WatermarkAt != changelog.WatermarkInfinity {
				wm = time.UnixMilli(r.WatermarkAt).UTC().Format("15:04:05")
			}
			c.final = append(c.final, fmt.Sprintf("%s n=%s wm=%s", time.UnixMilli(r.WindowStart).UTC().Format("15:04"), r.Values[0], wm))
		}
	}
	return nil
}
func (c *liveCapture) WriteRecord(_ context.Context, obj []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.late = append(c.late, string(obj))
	return nil
}
func (c *liveCapture) Flush(context.Context) error { return nil }
func (c *liveCapture) Close(context.Context) error { return nil }

func (c *liveCapture) snapshot() (final, late []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.final...), append([]string(nil), c.late...)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKafkaIdleSlowAndWakingPartitions runs a live (unbounded) Kafka
// pipeline against an in-process broker, with an injected processing-time
// clock:
//
//  1. a slow partition holds the pipeline watermark back: partition 1's
//     only record (10:00:20) keeps every window open while partition 0
//     moves to 10:03:10;
//  2. once partition 1 has been silent for longer than idle_timeout (1m of
//     processing time), it stops holding the watermark: the windows up to
//     10:03 fire;
//  3. partition 1 wakes up with an old record (10:01:30): it is a late
//     record for the closed window, and the watermark does not go back.
func TestKafkaIdleSlowAndWakingPartitions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(p int32, ts string) {
		t.Helper()
		v := fmt.Sprintf(`{"ts":"2026-09-01T%sZ","store":"s1"}`, ts)
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	p := &spec.Pipeline{
		Name:       "idle",
		Source:     spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"orders"}, PollTimeout: spec.Duration(20 * time.Millisecond)},
		EventTime:  spec.EventTime{Field: "ts", IdleTimeout: spec.Duration(time.Minute)},
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
		Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
		Emit:       spec.Emit{Mode: "final"},
		Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "capture"}},
		Sinks:      []spec.Sink{{Type: "capture"}},
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := &liveCapture{}
	reg := DefaultRegistry()
	reg.Results["capture"] = func(context.Context, spec.Sink, changelog.Desc, *Env) (sink.Results, error) { return out, nil }
	reg.Records["capture"] = func(context.Context, spec.Sink, *Env) (sink.Records, error) { return out, nil }
	var clock atomic.Int64
	clock.Store(time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC).UnixMilli())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var sum *Summary
	go func() {
		var err error
		sum, err = Run(ctx, pl, Options{Registry: reg, Clock: clock.Load, BatchSize: 16})
		done <- err
	}()

	// 1. Both partitions active: partition 1 is slow.
	send(1, "10:00:20")
	send(0, "10:00:10")
	for _, ts := range []string{"10:01:10", "10:02:10", "10:03:10"} {
		send(0, ts)
	}
	time.Sleep(300 * time.Millisecond) // many polls, empty reads included
	if final, _ := out.snapshot(); len(final) != 0 {
		t.Fatalf("windows fired while partition 1 (10:00:20) held the watermark back: %v", final)
	}

	// 2. 61 s of processing time later, partition 1 is idle; partition 0
	// goes on (when every partition is idle the watermark stays, as in
	// Flink: idleness only stops a partition from holding others back).
	clock.Add(61_000)
	send(0, "10:03:20")
	want := []string{"10:00 n=2 wm=10:03:20", "10:01 n=1 wm=10:03:20", "10:02 n=1 wm=10:03:20"}
	waitFor(t, "the windows to fire once partition 1 is idle", func() bool {
		final, _ := out.snapshot()
		return len(final) >= len(want)
	})
	if final, _ := out.snapshot(); strings.Join(final, "; ") != strings.Join(want, "; ") {
		t.Fatalf("final rows %q, want %q", final, want)
	}

	// 3. Partition 1 wakes up with an old record: late, no regression.
	send(1, "10:01:30")
	waitFor(t, "the late record", func() bool {
		_, late := out.snapshot()
		return len(late) == 1
	})
	_, late := out.snapshot()
	for _, f := range []string{`"event_time":"2026-09-01T10:01:30Z"`, `"current_watermark":"2026-09-01T10:03:20Z"`, `"source":"orders[1]@1"`} {
		if !strings.Contains(late[0], f) {
			t.Errorf("late record lacks %s: %s", f, late[0])
		}
	}
	// Awake again, partition 1 holds the watermark at its own 10:01:30
	// (the pipeline watermark stays 10:03:20, it never goes back) until it
	// is idle once more.
	send(0, "10:04:10")
	time.Sleep(200 * time.Millisecond)
	if final, _ := out.snapshot(); len(final) != 3 {
		t.Fatalf("window 10:03 fired while partition 1 (awake at 10:01:30) held the watermark: %q", final)
	}
	clock.Add(61_000)
	send(0, "10:04:20")
	waitFor(t, "window 10:03", func() bool {
		final, _ := out.snapshot()
		return len(final) == 4
	})
	if final, _ := out.snapshot(); final[3] != "10:03 n=2 wm=10:04:20" {
		t.Errorf("after the wake-up: %q", final)
	}
	cancel()
	if err := <-done; err == nil || ctx.Err() == nil {
		t.Fatalf("run: %v", err)
	}
	_ = sum
}
