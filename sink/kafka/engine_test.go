package kafka_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/kafka"
	"github.com/tidemark/tidemark/spec"
)

// crash is the panic that stands for a process dying at a protocol point.
type crash struct{}

// TestEngineKafkaToKafkaExactlyOnce runs a pipeline from a two-partition
// topic through a tumbling sum to a transactional result topic, with a
// checkpoint after about every batch, once straight through and once
// dying after a checkpoint is written and before the Kafka transaction
// commits, then resuming. A read_committed reader sees the same rows in
// both, each once.
func TestEngineKafkaToKafkaExactlyOnce(t *testing.T) {
	brokers := kafka.Cluster(t, "orders:2", "ref", "out")
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	kafka.Must(t, err)
	defer prod.Close()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range 20 {
			at := base.Add(time.Duration(i) * 30 * time.Second)
			v := fmt.Sprintf(`{"ts":"%s","store":"S%d","amount":%d}`, at.Format(time.RFC3339), i%2, 10*i+int(p))
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(v)})
		}
		// Far ahead: closes every window above.
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, `{"ts":"%s","store":"S9","amount":0}`, base.Add(time.Hour).Format(time.RFC3339))})
	}
	kafka.Must(t, prod.ProduceSync(context.Background(), recs...).FirstErr())

	run := func(topic, dir string, crashAt func(*kafka.Results) bool) (crashed bool) {
		// The source is bounded (stop_at_end): the run ends with the
		// records produced above, as a file run would.
		p := &spec.Pipeline{
			Name: "kshop",
			Source: spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"orders"}, StopAtEnd: true,
				PollTimeout: spec.Duration(20 * time.Millisecond), Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime:  spec.EventTime{Field: "ts"},
			Key:        []string{"store"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "total", Expr: "sum(amount)"}, {Name: "n", Expr: "count()"}},
			Emit:       spec.Emit{Mode: "final"},
			Sinks:      []spec.Sink{{Type: "kafka", Brokers: brokers, Topic: topic}},
			Checkpoint: &spec.Checkpoint{Dir: dir, Interval: spec.Duration(time.Millisecond)},
		}
		p.Defaults()
		kafka.Must(t, p.Validate())
		pl, err := plan.Compile(p, nil)
		kafka.Must(t, err)
		var res *kafka.Results
		reg := engine.DefaultRegistry()
		open := reg.Results["kafka"]
		reg.Results["kafka"] = func(ctx context.Context, s spec.Sink, d changelog.Desc, env *engine.Env) (sink.Results, error) {
			r, err := open(ctx, s, d, env)
			if err == nil {
				res = r.(*kafka.Results)
			}
			return r, err
		}
		ctx := context.Background()
		hook := func(point string, id int64) {
			if point == "written" && crashAt != nil && crashAt(res) {
				panic(crash{})
			}
		}
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(crash); !ok {
					panic(v)
				}
				crashed = true
			}
		}()
		_, err = engine.Run(ctx, pl, engine.Options{Registry: reg, BatchSize: 4, FaultHook: hook, Clock: func() int64 { return base.UnixMilli() }})
		kafka.Must(t, err)
		return false
	}

	run("ref", t.TempDir(), nil)
	dir := t.TempDir()
	checkpoints := 0
	if !run("out", dir, func(r *kafka.Results) bool {
		// The first checkpoint with rows: its transaction is flushed,
		// the checkpoint written, and the process dies before EndTxn.
		if kafka.PreparedRows(r) {
			checkpoints++
		}
		return checkpoints == 1
	}) {
		t.Fatal("the run did not crash")
	}
	if run("out", dir, nil) {
		t.Fatal("the resumed run crashed")
	}

	// watermark_at depends on how fetches interleave the partitions; the
	// rows' identity and values do not.
	strip := regexp.MustCompile(`,"watermark_at":"[^"]*"`)
	rows := func(topic string) []string {
		var out []string
		for _, r := range kafka.CommittedRecords(t, brokers, topic) {
			out = append(out, strip.ReplaceAllString(r, ""))
		}
		slices.Sort(out)
		return out
	}
	ref, out := rows("ref"), rows("out")
	if len(ref) != 21 || len(slices.Compact(slices.Clone(ref))) != 21 {
		t.Fatalf("reference run: %d rows, want 21 distinct (10 one-minute windows × 2 stores, and S9 at 10:00: the bounded read ends the input):\n%q", len(ref), ref)
	}
	kafka.Equal(t, "rows after a crash between checkpoint and commit", out, ref)
	// The dead run's transaction is in the log, aborted: Recover published
	// the checkpoint's rows again.
	if all, _ := kafka.Consume(t, brokers, "out", false, 10*time.Second); len(all) <= len(ref) {
		t.Errorf("read_uncommitted sees %d records: no aborted attempt", len(all))
	}
	want := `["2026-03-01T09:00:00Z","S0"] => {"op":"insert","window_start":"2026-03-01T09:00:00Z","window_end":"2026-03-01T09:01:00Z","store":"S0","total":1,"n":2,"version":1,"is_final":true,"updated_at":"2026-03-01T09:00:00Z"}`
	if !slices.Contains(ref, want) {
		t.Errorf("no row %s in\n%q", want, ref)
	}
}

// BenchmarkKafkaToKafka reads 200,000 order events from a four-partition
// topic of an in-process broker (kfake), sums them per store in one-minute
// tumbling windows, and writes the changelog to a result topic, bounded
// (stop_at_end), once per iteration: exactly once (transactions committed
// with a checkpoint every second) and at least once. It reports events/s
// (wall clock) and events per CPU-second of the process, which includes
// the broker's own work.
func BenchmarkKafkaToKafka(b *testing.B) {
	const n = 200_000
	topics := []string{"orders:4"}
	for i := range 64 {
		topics = append(topics, fmt.Sprintf("out%d", i))
	}
	brokers := kafka.Cluster(b, topics...)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond))
	kafka.Must(b, err)
	defer prod.Close()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		v := fmt.Appendf(nil, `{"event_id":"e%d","ts":"%s","store":"S%d","amount":%d.%02d}`, i,
			base.Add(time.Duration(i)*10*time.Millisecond).Format(time.RFC3339Nano), i%1000, i%500, i%100)
		prod.Produce(context.Background(), &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprint(i % 1000)), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	kafka.Must(b, prod.Flush(context.Background()))
	out := 0
	for _, mode := range []string{"exactly_once", "at_least_once"} {
		b.Run(mode, func(b *testing.B) {
			var events int64
			var wall, cpu time.Duration
			for range b.N {
				p := &spec.Pipeline{
					Name: "kbench",
					Source: spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"orders"}, StopAtEnd: true,
						Schema: spec.FieldTypes{{Name: "amount", Type: "decimal"}}},
					EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)},
					Key:        []string{"store"},
					Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
					Aggregates: spec.NamedExprs{{Name: "total", Expr: "sum(amount)"}, {Name: "n", Expr: "count()"}},
					Emit:       spec.Emit{Mode: "update"},
					Sinks:      []spec.Sink{{Type: "kafka", Brokers: brokers, Topic: fmt.Sprintf("out%d", out%64), Delivery: mode}},
					Checkpoint: &spec.Checkpoint{Dir: b.TempDir(), Interval: spec.Duration(time.Second)},
				}
				out++
				p.Defaults()
				kafka.Must(b, p.Validate())
				pl, err := plan.Compile(p, nil)
				kafka.Must(b, err)
				sum, err := engine.Run(context.Background(), pl, engine.Options{})
				kafka.Must(b, err)
				if sum.EventsRead != n {
					b.Fatalf("read %d events, want %d", sum.EventsRead, n)
				}
				events += sum.EventsRead
				wall += sum.Wall
				cpu += sum.CPU
			}
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
			b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
		})
	}
}
