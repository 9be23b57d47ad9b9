package group

import (
	"github.com/tidemark/tidemark/engine"

	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/plan"
)

// groupKafkaCluster starts an in-process broker with topic orders (3
// partitions) loaded with groupInput and the output topics of
// groupKafkaPipeline, and a short minimum session timeout.
func groupKafkaCluster(t *testing.T, seed uint64, n int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"), kfake.GroupMinSessionTimeout(250*time.Millisecond),
		kfake.SeedTopics(1, "per_store", "per_minute", "late", "quarantine", "conflicts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p, lines := range groupInput(rand.New(rand.NewPCG(seed, 2)), n, 3, false) {
		for _, l := range lines {
			cl.Produce(context.Background(), &kgo.Record{Topic: "orders", Partition: int32(p), Value: l}, nil)
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return brokers
}

// compileGroup compiles groupKafkaPipeline after edit.
func compileGroup(t *testing.T, brokers []string, ck string, edit func(*plan.Plan)) *plan.Plan {
	t.Helper()
	pl := compilePipeline(t, groupKafkaPipeline(brokers, ck))
	if edit != nil {
		edit(pl)
	}
	return pl
}

// TestGroupStopDuringCommit: SIGTERM (the run's context cancelled) that
// arrives while an instance is committing — after its checkpoints are
// written, before the transaction ends — is a graceful stop: the
// transaction commits, the instance leaves and Run reports Stopped
// without an error (it returned "committing the transaction: context
// canceled", and the CLI exited 1). The committed offsets name the
// checkpoints of that last transaction.
func TestGroupStopDuringCommit(t *testing.T) {
	brokers := groupKafkaCluster(t, 7, 600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := compileGroup(t, brokers, t.TempDir(), func(pl *plan.Plan) { pl.Spec.Source.StopAtEnd = false })
	var stoppedAt int64
	hook := func(point string, n int64) {
		if point == "prepared" && n == 3 {
			stoppedAt = n
			cancel() // as the signal handler does
		}
	}
	sum, err := Run(ctx, pl, engine.Options{InstanceID: "a", FaultHook: hook, Logf: t.Logf})
	if err != nil {
		t.Fatalf("stopped during commit %d: %v", stoppedAt, err)
	}
	if !sum.Stopped || sum.Group.Commits < 3 {
		t.Fatalf("stopped %v after %d commits, %d aborts; want a stop after the 3rd commit", sum.Stopped, sum.Group.Commits, sum.Group.Aborts)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	offs.Each(func(o kadm.OffsetResponse) {
		n++
		if !strings.HasPrefix(o.Metadata, "m-") {
			t.Errorf("%s/%d: committed at %d with metadata %q, not a checkpoint manifest", o.Topic, o.Partition, o.At, o.Metadata)
		}
	})
	if n != 3+3 {
		t.Errorf("%d committed partitions, want the 3 inputs and 3 repartition partitions", n)
	}
}

// TestGroupStoreUnreachable: when the checkpoint store cannot be reached
// (here its directory is replaced by a file once the first transaction
// committed: removing the old checkpoints fails, before the next is
// written), the instance stops with an error naming the checkpoint
// store and commits nothing more: the group's committed offsets stay those of the first
// transaction, naming checkpoints the store holds, and a read_committed
// reader of the outputs sees only what that transaction produced.
func TestGroupStoreUnreachable(t *testing.T) {
	brokers := groupKafkaCluster(t, 7, 600)
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	pl := compileGroup(t, brokers, ck, func(pl *plan.Plan) { pl.Spec.Source.StopAtEnd = false })
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var first kadm.OffsetResponses
	var firstRows []string
	hook := func(point string, n int64) {
		if point != "committed" || n != 1 {
			return
		}
		var err error
		if first, err = adm.FetchOffsets(context.Background(), "g"); err != nil {
			t.Error(err)
		}
		firstRows = readCommittedRows(t, brokers, map[string]string{"per_store": "per_store", "per_minute": "per_minute"})
		// The store goes away.
		if err := os.Rename(ck, ck+".gone"); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(ck, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := Run(ctx, pl, engine.Options{InstanceID: "a", FaultHook: hook, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "checkpoint store "+ck) {
		t.Fatalf("with the store gone: %+v, %v; want an error naming the checkpoint store", sum, err)
	}
	t.Logf("the instance stopped: %v", err)
	if first == nil {
		t.Fatal("the first transaction did not commit")
	}
	after, err := adm.FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	first.Each(func(o kadm.OffsetResponse) {
		a, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || a.At != o.At || a.Metadata != o.Metadata {
			t.Errorf("%s/%d: committed %d %q after the failure, %d %q after the first transaction", o.Topic, o.Partition, a.At, a.Metadata, o.At, o.Metadata)
		}
		name, _, _ := strings.Cut(o.Metadata, " ")
		task := fmt.Sprintf("source-%d", o.Partition)
		if strings.HasSuffix(o.Topic, "-repartition") {
			task = fmt.Sprintf("keyed-%d", o.Partition)
		}
		if _, err := os.Stat(filepath.Join(ck+".gone", task, name)); err != nil {
			t.Errorf("%s/%d: the committed checkpoint %s: %v", o.Topic, o.Partition, name, err)
		}
	})
	if got := readCommittedRows(t, brokers, map[string]string{"per_store": "per_store", "per_minute": "per_minute"}); !slices.Equal(got, firstRows) {
		t.Errorf("read_committed rows after the failure: %d, after the first transaction %d", len(got), len(firstRows))
	}
}

// TestGroupStopDuringCommitPGStore: TestGroupStopDuringCommit with the
// checkpoint store in PostgreSQL, the signal arriving between the
// checkpoints and the transaction's end and, in another run, while the
// tasks restart after an aborted transaction (the second instance's
// arrival): each instance stops without an error.
func TestGroupStopDuringCommitPGStore(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	store := dsn + "&search_path=" + schema
	if !strings.Contains(dsn, "?") {
		store = dsn + "?search_path=" + schema
	}
	for _, at := range []int64{2, 3, 4} {
		t.Run(fmt.Sprintf("prepared-%d", at), func(t *testing.T) {
			brokers := groupKafkaCluster(t, 7, 600)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pl := compileGroup(t, brokers, t.TempDir(), func(pl *plan.Plan) {
				pl.Spec.Source.StopAtEnd = false
				pl.Spec.Checkpoint.Dir, pl.Spec.Checkpoint.Store = "", store
				pl.Spec.Name = fmt.Sprintf("grp%d", at)
			})
			hook := func(point string, n int64) {
				if point == "prepared" && n == at {
					cancel()
				}
			}
			sum, err := Run(ctx, pl, engine.Options{InstanceID: "a", FaultHook: hook, Logf: t.Logf})
			if err != nil {
				t.Fatalf("stopped during commit %d: %v", at, err)
			}
			if !sum.Stopped {
				t.Fatalf("not stopped: %+v", sum.Group)
			}
		})
	}
}
