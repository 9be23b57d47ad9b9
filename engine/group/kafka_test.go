package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// groupKafkaPipeline is groupPipeline reading topic orders through group
// g, with Kafka outputs.
func groupKafkaPipeline(brokers []string, ckDir string) *spec.Pipeline {
	p := groupPipeline(time.Hour)
	p.Source = spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"orders"}, Group: "g", Assignment: "group",
		StopAtEnd: true, SessionTimeout: spec.Duration(6 * time.Second), TransactionTimeout: spec.Duration(10 * time.Second),
		Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}}
	p.Quarantine.Sink = &spec.Sink{Type: "kafka", Brokers: brokers, Topic: "quarantine"}
	p.Conflicts.Sink = &spec.Sink{Type: "kafka", Brokers: brokers, Topic: "conflicts"}
	p.Stages[0].Sinks = []spec.Sink{{Type: "kafka", Brokers: brokers, Topic: "per_store"}}
	p.Stages[0].Late.Sink = &spec.Sink{Type: "kafka", Brokers: brokers, Topic: "late"}
	p.Stages[1].Sinks = []spec.Sink{{Type: "kafka", Brokers: brokers, Topic: "per_minute"}}
	p.Checkpoint = &spec.Checkpoint{Dir: ckDir, Interval: spec.Duration(300 * time.Millisecond)}
	return p
}

// TestGroupOverKafka: two instances of a group over an in-process broker
// (3 input partitions, 4 repartition partitions) read the input to its end
// and stop; the final rows they committed to the output topics (read
// committed) equal a single-process run's, with versions that only grow.
func TestGroupOverKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"),
		kfake.SeedTopics(1, "per_store", "per_minute", "late", "quarantine", "conflicts"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	rng := rand.New(rand.NewPCG(4, 2))
	input := groupInput(rng, 1500, 3, false)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p, lines := range input {
		for _, l := range lines {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: int32(p), Value: l}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	dir := t.TempDir()
	want := groupReference(t, dir, input, time.Hour)

	ck := filepath.Join(dir, "ck")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	sums := make([]*engine.Summary, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, id := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := groupKafkaPipeline(brokers, ck)
			p.Defaults()
			if err := p.Validate(); err != nil {
				errs[i] = err
				return
			}
			pl, err := plan.Compile(p, nil)
			if err != nil {
				errs[i] = err
				return
			}
			sums[i], errs[i] = Run(ctx, pl, engine.Options{InstanceID: id, Logf: t.Logf})
		}()
		time.Sleep(300 * time.Millisecond)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	for _, s := range sums {
		t.Logf("instance %s: %d commits, %d aborts, %d rebalances, %d restores; sources %v, keyed %v",
			s.Group.Instance, s.Group.Commits, s.Group.Aborts, s.Group.Rebalances, s.Group.Restores, s.Group.Sources, s.Group.Keyed)
	}
	got := readCommittedRows(t, brokers, map[string]string{"per_store": "per_store", "per_minute": "per_minute"})
	gotRows, _ := groupFinal(t, got)
	for k, v := range want {
		if gotRows[k] != v {
			t.Errorf("%s: %q from the group, %q from one process", k, gotRows[k], v)
		}
	}
	if len(gotRows) != len(want) {
		t.Errorf("%d rows from the group, %d from one process", len(gotRows), len(want))
	}
}

// readCommittedRows reads the result topics (read_committed) and renders
// their rows as the model does.
func readCommittedRows(t *testing.T, brokers []string, topics map[string]string) []string {
	t.Helper()
	var names []string
	for tp := range topics {
		names = append(names, tp)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(names...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	idle := 0
	for idle < 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("%s: %s: %v", r.Topic, r.Value, err)
			}
			out = append(out, rowLine(topics[r.Topic], m))
		})
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out
}

// rowLine renders a JSON result row as the model's line:
// stage|window_start ms|op|[key]|[values]|version|final.
func rowLine(stage string, m map[string]any) string {
	ws, _ := time.Parse(time.RFC3339Nano, m["window_start"].(string))
	var key, vals string
	switch stage {
	case "per_store":
		key = fmt.Sprintf("[%v]", m["store"])
		vals = fmt.Sprintf("[%v %v]", m["n"], m["total"])
	default:
		w, _ := time.Parse(time.RFC3339Nano, m["w"].(string))
		key = fmt.Sprintf("[%s]", w.UTC().Format(time.RFC3339))
		vals = fmt.Sprintf("[%v %v]", m["stores"], m["total"])
	}
	return fmt.Sprintf("%s|%d|%s|%s|%s|%v|%v", stage, ws.UnixMilli(), m["op"], key, vals, m["version"], m["is_final"])
}
