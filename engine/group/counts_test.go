package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/plan"
)

// TestGroupRestoresReadCounts: the events read and the duplicates found
// travel in the tasks' checkpoints, so that an instance restored from a
// group's checkpoints reports the whole input's counts, not only what it
// read itself. The first run reads groupInput(seed 7, 600 events, 3
// partitions): 600 events and a second copy of every 13th (i = 0, 13, …,
// 598: 47 copies), 647 records; it stops (a graceful stop) once its
// commits cover them all. Then 90 more records are written (60 new
// events, 30 copies of them) and the second run, restored from the
// first's checkpoints, reads only those and stops once its commits cover
// them: it reports 737 records read and 77 duplicates. (Both runs are
// unbounded: a bounded group's end is fixed by its first start, so a
// bounded restart would not read the new records.)
func TestGroupRestoresReadCounts(t *testing.T) {
	brokers := groupKafkaCluster(t, 7, 600)
	total := 0
	for _, lines := range groupInput(rand.New(rand.NewPCG(7, 2)), 600, 3, false) {
		total += len(lines)
	}
	if total != 647 {
		t.Fatalf("the input has %d records, want 647", total)
	}
	ck := t.TempDir()
	s1 := runUntilCommitted(t, brokers, ck, 647)
	if s1.EventsRead != 647 || s1.Duplicates != 47 {
		t.Fatalf("the first run: %d records read, %d duplicates; want 647 and 47", s1.EventsRead, s1.Duplicates)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 60 {
		line := fmt.Appendf(nil, `{"id":"x%d","ts":"2026-09-01T10:06:%02dZ","store":"s%d","amount":%d}`, i, i, i%10, 1+i)
		for c := range 1 + i%2 { // every odd one twice, on another partition
			cl.Produce(context.Background(), &kgo.Record{Topic: "orders", Partition: int32((i + c) % 3), Value: line}, nil)
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := runUntilCommitted(t, brokers, ck, 737)
	if s2.Group == nil || s2.Group.Restores == 0 {
		t.Fatal("the second run restored no task from a checkpoint")
	}
	t.Logf("second: read %d, duplicates %d, redeliveries %d, restores %d", s2.EventsRead, s2.Duplicates, s2.Redeliveries, s2.Group.Restores)
	if s2.EventsRead != 647+90 || s2.Duplicates != 47+30 {
		t.Fatalf("restored, then read 90 more: %d records read, %d duplicates; want 737 and 77", s2.EventsRead, s2.Duplicates)
	}
}

// runUntilCommitted runs an unbounded instance of groupKafkaPipeline until
// the input offsets group g has committed add up to want, then stops it
// gracefully (its transaction in progress commits).
func runUntilCommitted(t *testing.T, brokers []string, ck string, want int64) *engine.Summary {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hook := func(point string, _ int64) {
		if point != "prepared" {
			return
		}
		offs, err := adm.FetchOffsets(context.Background(), "g")
		if err != nil {
			return
		}
		var at int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "orders" {
				at += o.At
			}
		})
		if at >= want {
			cancel()
		}
	}
	pl := compileGroup(t, brokers, ck, func(pl *plan.Plan) { pl.Spec.Source.StopAtEnd = false })
	sum, err := Run(ctx, pl, engine.Options{InstanceID: "a", FaultHook: hook, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Stopped || ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("the run did not stop once its commits covered %d records (stopped %v, %v)", want, sum.Stopped, ctx.Err())
	}
	return sum
}
