package group

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The exactly-once guarantees a group run takes from franz-go and the
// broker (docs/scale-out.md, "Rebalances"), checked at that level: the
// sessions below are configured as Run configures its own
// (groupRun.clientOpts: cooperative-sticky, read_committed,
// require_stable, a transactional id per instance).

// fenceCluster starts a broker with topic in (3 partitions, 30 records
// each, values "p/i") and topic out, and a short minimum session.
func fenceCluster(t *testing.T) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "in"), kfake.SeedTopics(1, "out"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
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
	for p := range 3 {
		for i := range 30 {
			cl.Produce(context.Background(), &kgo.Record{Topic: "in", Partition: int32(p), Value: fmt.Appendf(nil, "%d/%d", p, i)}, nil)
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, brokers
}

// fenceMember is one transactional group member: its session and what
// its assignment callbacks reported.
type fenceMember struct {
	sess    *kgo.GroupTransactSession
	mu      sync.Mutex
	owned   map[int32]bool
	revokes int
}

func newFenceMember(t *testing.T, brokers []string, name string, session time.Duration) *fenceMember {
	t.Helper()
	m := &fenceMember{owned: map[int32]bool{}}
	change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range tps["in"] {
				m.owned[p] = add
			}
			if !add && len(tps["in"]) > 0 {
				m.revokes++
			}
		}
	}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup("g"),
		kgo.ConsumeTopics("in"),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.TransactionalID("tidemark-fence-"+name),
		kgo.TransactionTimeout(10*time.Second),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(session/4),
		kgo.RebalanceTimeout(2*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.OnPartitionsAssigned(change(true)),
		kgo.OnPartitionsRevoked(change(false)),
		kgo.OnPartitionsLost(change(false)),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	m.sess = sess
	return m
}

func (m *fenceMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p, ok := range m.owned {
		if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// pollSome polls until it has at least one record, at most 5 s.
func (m *fenceMember) pollSome(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := m.sess.PollRecords(ctx, 10)
		cancel()
		if n := len(fs.Records()); n > 0 {
			return n
		}
	}
	t.Fatal("no record polled in 5 s")
	return 0
}

// produce writes value to topic out in the open transaction.
func (m *fenceMember) produce(t *testing.T, value string) {
	t.Helper()
	if err := m.sess.ProduceSync(context.Background(), &kgo.Record{Topic: "out", Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("producing %s: %v", value, err)
	}
}

// committedOut returns the values of topic out a read_committed consumer
// sees, in order.
func committedOut(t *testing.T, brokers []string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for empty := 0; empty < 3; {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { n++; out = append(out, string(r.Value)) })
		if n == 0 {
			empty++
		}
	}
	return out
}

// waitUntil polls cond every 20 ms for at most d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGroupZombieFenced: a member that is paused (its heartbeats do not
// reach the broker) while its transaction is open loses its partitions
// to another member when its session expires; when it resumes, its
// transaction cannot commit — the broker refuses its TxnOffsetCommit
// (the group no longer knows it) and the session aborts — so a
// read_committed reader never sees what it produced, and the offsets it
// consumed stay as the new owner commits them.
func TestGroupZombieFenced(t *testing.T) {
	c, brokers := fenceCluster(t)
	a := newFenceMember(t, brokers, "a", 500*time.Millisecond)
	// A first transaction of a commits.
	a.pollSome(t)
	if err := a.sess.Begin(); err != nil {
		t.Fatal(err)
	}
	a.produce(t, "a-committed")
	if ok, err := a.sess.End(context.Background(), kgo.TryCommit); err != nil || !ok {
		t.Fatalf("a's first transaction: committed %v, %v", ok, err)
	}
	// a opens a second transaction and is paused: from now on its
	// heartbeats do not reach the group (the group expires its session),
	// yet each is answered "ok", so that a's client, as a process stopped
	// by SIGSTOP or a long pause that resumes, notices nothing until it
	// tries to commit.
	if err := a.sess.Begin(); err != nil {
		t.Fatal(err)
	}
	a.pollSome(t)
	a.produce(t, "a-zombie")
	memberA, _ := a.sess.Client().GroupMetadata()
	var paused sync.Mutex
	pausing := true
	c.ControlKey(int16(kmsg.Heartbeat), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		paused.Lock()
		defer paused.Unlock()
		if req := kreq.(*kmsg.HeartbeatRequest); pausing && req.MemberID == memberA {
			// Answered without reaching the group: a's client believes
			// its session is fine, the group expires a's session.
			return req.ResponseKind(), nil, true
		}
		return nil, nil, false
	})
	// b joins and, once a's session expired, is given every partition;
	// its transaction commits.
	b := newFenceMember(t, brokers, "b", 500*time.Millisecond)
	waitUntil(t, 10*time.Second, "b owning the three partitions", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		b.sess.PollRecords(ctx, 1) // drives the group
		cancel()
		return len(b.partitions()) == 3
	})
	if err := b.sess.Begin(); err != nil {
		t.Fatal(err)
	}
	b.pollSome(t)
	b.produce(t, "b-committed")
	if ok, err := b.sess.End(context.Background(), kgo.TryCommit); err != nil || !ok {
		t.Fatalf("b's transaction: committed %v, %v", ok, err)
	}
	// a resumes and at once tries to commit the transaction it opened
	// before the pause (its heartbeats still answered "ok": the broker's
	// refusal of the commit is what stops it, not its client noticing).
	a.mu.Lock()
	aRevokes := a.revokes
	a.mu.Unlock()
	if aRevokes != 0 {
		t.Fatalf("a noticed it lost its partitions (%d revocations): it is not a zombie", aRevokes)
	}
	ok, err := a.sess.End(context.Background(), kgo.TryCommit)
	if ok {
		t.Fatalf("the zombie's transaction committed (err %v)", err)
	}
	t.Logf("the zombie's End: committed %v, %v", ok, err)
	if got, want := committedOut(t, brokers), []string{"a-committed", "b-committed"}; !slices.Equal(got, want) {
		t.Errorf("read_committed out: %q, want %q", got, want)
	}
}

// TestGroupRebalanceAbortsTransaction: a rebalance during a transaction
// — another member joins and cooperative-sticky moves some of the
// partitions to it — aborts the transaction of the member that lost
// them: End does not commit, a read_committed reader never sees what it
// produced in it, and the offsets it consumed in it are not committed
// (the new owner starts from the last committed offsets).
func TestGroupRebalanceAbortsTransaction(t *testing.T) {
	_, brokers := fenceCluster(t)
	a := newFenceMember(t, brokers, "a", 2*time.Second)
	a.pollSome(t)
	if err := a.sess.Begin(); err != nil {
		t.Fatal(err)
	}
	a.produce(t, "a-committed")
	if ok, err := a.sess.End(context.Background(), kgo.TryCommit); err != nil || !ok {
		t.Fatalf("a's first transaction: committed %v, %v", ok, err)
	}
	adm := kadm.NewClient(a.sess.Client())
	before, err := adm.FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.sess.Begin(); err != nil {
		t.Fatal(err)
	}
	a.pollSome(t)
	a.produce(t, "a-aborted")
	b := newFenceMember(t, brokers, "b", 2*time.Second)
	waitUntil(t, 10*time.Second, "the rebalance revoking partitions from a", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		b.sess.PollRecords(ctx, 1)
		cancel()
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.revokes > 0
	})
	ok, err := a.sess.End(context.Background(), kgo.TryCommit)
	if err != nil || ok {
		t.Fatalf("a's transaction across the rebalance: committed %v, %v; want an abort", ok, err)
	}
	after, err := adm.FetchOffsets(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.OffsetResponse) {
		if g, ok := after.Lookup(o.Topic, o.Partition); !ok || g.At != o.At {
			t.Errorf("%s/%d: committed offset %d after the aborted transaction, %d before", o.Topic, o.Partition, g.At, o.At)
		}
	})
	if got, want := committedOut(t, brokers), []string{"a-committed"}; !slices.Equal(got, want) {
		t.Errorf("read_committed out: %q, want %q", got, want)
	}
	t.Logf("a holds %v, b %v after the rebalance", a.partitions(), b.partitions())
}
