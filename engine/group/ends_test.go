package group

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endsGroupRun returns a groupRun of groupKafkaPipeline (stop_at_end)
// against brokers with its checkpoints in ckDir, before its setup.
func endsGroupRun(t *testing.T, brokers []string, ckDir string) *groupRun {
	t.Helper()
	return newTestGroupRun(t, groupKafkaPipeline(brokers, ckDir))
}

// TestGroupEndsRecorded: the end offsets of a bounded group run
// (stop_at_end) are the group's, recorded by its first instance: an
// instance that starts after records were appended to the input (or
// restarts, or rejoins after a broker pause) stops each partition where
// the first one does — before, each instance listed the end offsets at
// its own start, so a partition's end depended on who held it when its
// task started fresh. And a partition whose end offset the broker
// answers with an error is an error naming it: before, its end was -1,
// which declared the partition ended at once (+inf for it, and every
// record of it late).
func TestGroupEndsRecorded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(p int32, n int) {
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(`{"amount": 1}`)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 5)
	produce(1, 3)
	dir := t.TempDir()
	first := endsGroupRun(t, brokers, dir)
	if err := first.setup(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[int]int64{first.index[tpKey{"orders", 0}]: 5, first.index[tpKey{"orders", 1}]: 3, first.index[tpKey{"orders", 2}]: 0}
	if !maps.Equal(first.stops, want) {
		t.Fatalf("the first instance's ends %v, want %v", first.stops, want)
	}
	produce(0, 4)
	produce(2, 2)
	later := endsGroupRun(t, brokers, dir)
	if err := later.setup(ctx); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(later.stops, want) {
		t.Errorf("an instance started after 6 more records: ends %v, want the group's %v", later.stops, want)
	}

	// A fresh group (another store) whose end offset listing fails for
	// partition 1.
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ListOffsetsRequest)
		if req.IsolationLevel != 1 {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Offset, sp.Timestamp = rp.Partition, 7, -1
				if rp.Partition == 1 {
					sp.ErrorCode, sp.Offset = kerr.UnknownServerError.Code, -1
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	broken := endsGroupRun(t, brokers, t.TempDir())
	err = broken.setup(ctx)
	if err == nil || !strings.Contains(err.Error(), "topic orders partition 1: listing its end offset") {
		t.Errorf("an end offset answered with an error: setup %v (ends %v), want an error naming orders/1", err, broken.stops)
	}
}
