package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tidemark/tidemark/spec"
)

// setupGroupRun returns a groupRun of groupKafkaPipeline against brokers
// before its setup, for tests of its steps.
func setupGroupRun(t *testing.T, brokers []string, repartitions int) *groupRun {
	t.Helper()
	p := groupKafkaPipeline(brokers, t.TempDir())
	p.Source.RepartitionPartitions = repartitions
	return newTestGroupRun(t, p)
}

// TestGroupRepartitionTopicCreated: the first instance of a group creates
// the repartition topic with source.repartition_partitions partitions and
// goes on at once — it does not wait for the admin client's cached
// "unknown topic" metadata to expire (MetadataMinAge, 5 s: every fresh
// group started 5 s late). A later instance finds the topic; one whose
// pipeline wants another partition count is refused, naming the topic,
// both counts and the key.
func TestGroupRepartitionTopicCreated(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ctx := context.Background()

	gr := setupGroupRun(t, brokers, 4)
	start := time.Now()
	if err := gr.setup(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("creating the repartition topic took %v (the admin client's cached metadata?)", took)
	}
	if gr.P != 4 || len(gr.inputs) != 3 {
		t.Fatalf("P %d, inputs %v", gr.P, gr.inputs)
	}
	td, err := gr.adm.ListTopics(ctx, gr.repart)
	if err != nil || td[gr.repart].Err != nil || len(td[gr.repart].Partitions) != 4 {
		t.Fatalf("the repartition topic: %v %+v", err, td[gr.repart])
	}

	again := setupGroupRun(t, brokers, 4)
	if err := again.setup(ctx); err != nil {
		t.Fatalf("a second instance: %v", err)
	}
	other := setupGroupRun(t, brokers, 2)
	err = other.setup(ctx)
	want := "repartition topic grp-repartition has 4 partitions, the pipeline wants 2 (source.repartition_partitions)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another partition count: %v, want %q", err, want)
	}
}

// TestGroupSpecDiffers: the first instance of a group stores its spec in
// the checkpoint store; an instance whose spec differs in the
// computation (another window size) refuses to start, naming the key
// and why, and one that differs only in checkpoint.interval starts.
func TestGroupSpecDiffers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ctx := context.Background()
	ck := t.TempDir()
	start := func(edit func(*spec.Pipeline)) error {
		p := groupKafkaPipeline(brokers, ck)
		if edit != nil {
			edit(p)
		}
		gr := newGroupRun(compilePipeline(t, p), engine.Options{})
		defer gr.close()
		return gr.setup(ctx)
	}
	if err := start(nil); err != nil {
		t.Fatalf("the first instance: %v", err)
	}
	err = start(func(p *spec.Pipeline) { p.Stages[0].Window.Size = spec.Duration(2 * time.Minute) })
	want := `the group g runs pipeline grp with another spec: stages[0].window.size ("1m0s" → "2m0s") changed; an instance must run the same spec as the group's`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another window size: %v, want %q", err, want)
	}
	// What a restore accepts (docs/semantics.md, "Upgrades") is still
	// another spec for a group: two instances with other lateness or
	// other sinks would split the group's results.
	err = start(func(p *spec.Pipeline) {
		p.Stages[0].AllowedLateness = spec.Duration(5 * time.Hour)
		p.Stages[0].Sinks[0].Topic = "per_store_2"
	})
	want = `another spec: stages[0].allowed_lateness ("1h0m0s" → "5h0m0s"), stages[0].sinks[0].topic ("per_store" → "per_store_2") changed;`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another lateness and sink: %v, want %q", err, want)
	}
	if err := start(func(p *spec.Pipeline) {
		p.Checkpoint.Interval = spec.Duration(time.Second)
		p.Checkpoint.Retain = 7
	}); err != nil {
		t.Errorf("another checkpoint.interval and retain: %v", err)
	}
}
