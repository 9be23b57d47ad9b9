package group

import (
	"github.com/tidemark/tidemark/internal/cputime"

	"github.com/tidemark/tidemark/engine"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	sinkkafka "github.com/tidemark/tidemark/sink/kafka"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/kafka"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
)

// groupRun is one instance's runner.
type groupRun struct {
	plan   *plan.Plan
	opts   engine.Options
	sp     *spec.Source
	group  string
	repart string
	P      int
	inputs []string
	index  map[tpKey]int
	stops  map[int]int64
	sess   *kgo.GroupTransactSession
	adm    *kadm.Client
	store  checkpoint.TaskStore
	dec    *kafka.RecordDecoder
	in     *instance
	owned  map[taskKey]bool // partitions assigned to the instance
	// hosts holds, per task, what the runner keeps for it: its position,
	// and for a source task its batch and decoder (tasks run on several
	// goroutines: each owns its own).
	hosts  map[taskKey]*hostTask
	srcCfg kafka.Config
	events *assignEvents
	err    errBox
	sum    engine.GroupSummary
	env    engine.Env
	batch  source.Batch
	// total, events and redeliver: the counts of the tasks held at the
	// end (collect).
	total           *task.Counters
	read, redeliver int64
	// ends is each partition's end (last stable offset) at the last fetch;
	// lastLive, lastCommitAt and lastCommitDur feed the snapshots.
	ends      map[taskKey]int64
	purged    map[int]int64 // repartition partition → offset deleted up to
	promiseFn func(*kgo.Record, error)
	// startAt is, per task about to start, the committed offset and
	// metadata both the task and franz-go's consumer start from (one
	// read of the group's offsets: see startOffsets).
	startMu       sync.Mutex
	startAt       map[taskKey]committedOffset
	admCl         *kgo.Client
	lastLive      time.Time
	lastCommitAt  time.Time
	lastCommitDur time.Duration
	// txnID is the session's transactional id (FencedError).
	txnID string
	// txnBegun is when the open transaction began (wall clock) and
	// txnMember the session's member id then; commits0 the commits of
	// the instance's earlier sessions (rejoinable).
	txnBegun  time.Time
	txnMember string
	commits0  int
}

type tpKey struct {
	topic string
	p     int32
}

// assignEvents collects the group's assignment changes, which franz-go
// reports on its own goroutines, for the runner's loop.
type assignEvents struct {
	mu  sync.Mutex
	evs []assignEvent
}

type assignEvent struct {
	assigned bool
	// full: tps is the member's whole assignment of a new generation
	// (every partition it keeps or gains), from the SyncGroup answer.
	full bool
	tps  map[string][]int32
}

// syncBalancer is the cooperative-sticky balancer that also reports the
// member's whole assignment of every generation (ParseSyncAssignment).
// franz-go's GroupTransactSession calls OnPartitionsRevoked once per
// transaction: a second revocation before the transaction ends (a
// second rebalance) never reached the runner, which kept running and
// restarting a task whose partition another instance owned — reading a
// checkpoint the owner then deleted. A partition the instance holds
// that its whole assignment lacks is revoked.
type syncBalancer struct {
	kgo.GroupBalancer
	events *assignEvents
}

func (b syncBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	tps, err := b.GroupBalancer.ParseSyncAssignment(assignment)
	if err == nil {
		full := make(map[string][]int32, len(tps))
		for t, ps := range tps {
			full[t] = slices.Clone(ps)
		}
		b.events.mu.Lock()
		b.events.evs = append(b.events.evs, assignEvent{full: true, tps: full})
		b.events.mu.Unlock()
	}
	return tps, err
}

func (a *assignEvents) add(assigned bool, tps map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.evs = append(a.evs, assignEvent{assigned: assigned, tps: tps})
}

// revoked reports whether a revocation of topic's partition p waits to
// be applied.
func (a *assignEvents) revoked(topic string, p int32) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range a.evs {
		if ev.full && !slices.Contains(ev.tps[topic], p) || !ev.full && !ev.assigned && slices.Contains(ev.tps[topic], p) {
			return true
		}
	}
	return false
}

func (a *assignEvents) take() []assignEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	evs := a.evs
	a.evs = nil
	return evs
}

// errBox keeps the first error of a produce callback.
type errBox struct {
	mu  sync.Mutex
	err error
}

// set keeps the first error (the Kafka sink's producer keeps its first
// record error alike, inside its own lock: the two guard other state).
func (b *errBox) set(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

func (b *errBox) get() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// RepartitionTopic is the name of a group pipeline's repartition topic.
func RepartitionTopic(pipeline string) string { return pipeline + "-repartition" }

// Run runs pl, whose source has assignment: group (engine.IsGroup), as one
// instance of its group until ctx is cancelled or, with stop_at_end, until
// the whole group has read its input to the end offsets and committed
// everything. The face sets it as engine.Options.Group, so that engine.Run
// hands it such a plan; called directly it applies opts' defaults
// (engine.Options.WithDefaults). Errors: a *engine.ConfigError for a plan
// that is not a group's, the disk state backend, or a source.start other
// than earliest; a *engine.StartInterruptedError when ctx ends while
// joining; a *FencedError when another process with the same instance id
// took the instance's place; the broker's, the sinks' and the checkpoint
// store's errors otherwise.
func Run(ctx context.Context, pl *plan.Plan, opts engine.Options) (*engine.Summary, error) {
	if !engine.IsGroup(pl) {
		return nil, &engine.ConfigError{Err: fmt.Errorf("source.assignment: %q: not a group of instances (source.type: kafka, source.assignment: group)", pl.Spec.Source.Assignment)}
	}
	if pl.Spec.State.Backend == state.BackendDisk {
		return nil, &engine.ConfigError{Err: fmt.Errorf("state.backend: disk: a group of instances (source.assignment: group) keeps its tasks' state in memory in this build (docs/state.md, \"Status\")")}
	}
	opts = opts.WithDefaults()
	start := time.Now()
	cpu0 := cputime.Process()
	sp := &pl.Spec.Source
	if sp.Start != "earliest" {
		return nil, &engine.ConfigError{Err: fmt.Errorf("source.start: %s: a group reads from the earliest offset where it has no committed one", sp.Start)}
	}
	var prev *engine.GroupSummary
	for fails := 0; ; {
		gr := newGroupRun(pl, opts)
		gr.sum.Group, gr.sum.Topic = sp.Group, gr.repart
		if prev != nil {
			gr.sum.Commits, gr.sum.Aborts, gr.sum.Rebalances, gr.sum.Rejoins = prev.Commits, prev.Aborts, prev.Rebalances, prev.Rejoins
			gr.sum.Restores, gr.sum.RestoreBytes, gr.sum.RestoreTime = prev.Restores, prev.RestoreBytes, prev.RestoreTime
		}
		if err := gr.setup(ctx); err != nil {
			gr.close()
			if ctx.Err() != nil {
				return nil, &engine.StartInterruptedError{Phase: fmt.Sprintf("joining group %s", gr.group), Group: gr.group, Err: err}
			}
			if prev != nil && fails < maxRejoins && gr.rejoinable(err) {
				fails++
				gr.logf("group %s: rejoining failed (%v); trying again", gr.group, err)
				time.Sleep(rejoinBackoff)
				continue
			}
			return nil, err
		}
		stopped, err := gr.loop(ctx)
		if err != nil {
			if gr.sum.Commits > gr.commits0 {
				fails = 0
			}
			if ctx.Err() == nil && fails < maxRejoins && gr.rejoinable(err) {
				fails++
				gr.sum.Rejoins++
				gr.logf("group %s: instance %s lost its group session (%v); it leaves the group and joins again, its tasks starting from their committed checkpoints", gr.group, gr.sum.Instance, err)
				gr.close()
				sum := gr.sum
				prev = &sum
				continue
			}
			if ctx.Err() != nil && gr.rejoinable(err) {
				// Stopped while the session was lost (a broker paused past
				// transaction_timeout answered the last commit with a
				// fence of the pause): the run ends as a stop does — the
				// open transaction is aborted and the group reads its
				// records again from the last commit — not as a fence.
				gr.logf("group %s: instance %s stopped while its group session was lost (%v); its open transaction is aborted and the group reads the records since its last commit again", gr.group, gr.sum.Instance, err)
				stopped = true
			} else {
				ferr := gr.fencedError(err)
				gr.close()
				return nil, ferr
			}
		} else {
			gr.live(true)
		}
		s := gr.summary()
		gr.close()
		s.Stopped = stopped
		s.Wall = time.Since(start)
		s.CPU = cputime.Process() - cpu0
		return s, nil
	}
}

// maxRejoins is how many times in a row an instance joins its group
// again (rejoinable) without a commit in between before it stops with
// the error; rejoinBackoff is the wait before a join that failed is
// tried again.
const (
	maxRejoins    = 10
	rejoinBackoff = 500 * time.Millisecond
)

// rejoinable reports whether err ends only the instance's group session,
// not the run: the instance then leaves the group and joins it again,
// its tasks starting from their committed checkpoints, as a restarted
// process would (docs/scale-out.md, "Broker pauses"). That is the case
// for a session the group expired (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// franz-go's ErrGroupSession), for a broker that stopped answering (a
// dead connection, a request timed out, any error the broker marks
// retriable) — a broker stopped for longer than the session timeout
// expires every member when it runs again — and for a fenced producer
// whose transaction was open longer than source.transaction_timeout:
// the broker aborted it and bumped the producer's epoch, which reads as
// a fence but is no other process; so is FENCED_INSTANCE_ID then (the
// client joined again under a new member id during the pause). A fence
// within the transaction timeout of the last commit is another process
// with the same --instance-id (FencedError): not rejoinable.
func (gr *groupRun) rejoinable(err error) bool {
	if errors.Is(err, kerr.FencedInstanceID) {
		// Another process has the instance's --instance-id — or, after a
		// pause, the instance's own client joined again under a new
		// member id while its commit still named the one the transaction
		// began with.
		return gr.txnOutlived() || gr.memberChanged()
	}
	if _, ok := errors.AsType[*kgo.ErrGroupSession](err); ok {
		return true
	}
	if kgo.IsRetryableBrokerErr(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, e := range []error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.RebalanceInProgress, kerr.NotCoordinator,
		kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions} {
		if errors.Is(err, e) {
			return true
		}
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok && ke.Retriable {
		return true
	}
	if _, fenced := gr.fencedError(err).(*FencedError); fenced {
		return gr.txnOutlived()
	}
	return false
}

// txnOutlived reports whether the open transaction began longer than
// source.transaction_timeout ago: the instance or its broker was paused
// past it, and a fence answered now is the pause's, not another
// process's.
func (gr *groupRun) txnOutlived() bool {
	return gr.opts.WallClock().Sub(gr.txnBegun) > gr.sp.TransactionTimeout.D()
}

// memberChanged reports whether the session's member id is no longer the
// one the open transaction began with: the client joined the group again
// (an expired session), so a FENCED_INSTANCE_ID answered to the
// transaction's commit names the instance's own former member.
func (gr *groupRun) memberChanged() bool {
	if gr.sess == nil || gr.txnMember == "" {
		return false
	}
	m, _ := gr.sess.Client().GroupMetadata()
	return m != "" && m != gr.txnMember
}

// began notes when and under which member id a transaction began.
func (gr *groupRun) began() {
	gr.txnBegun = gr.opts.WallClock()
	gr.txnMember, _ = gr.sess.Client().GroupMetadata()
}

// newGroupRun returns the runner of an instance of pl's group, not yet
// set up.
func newGroupRun(pl *plan.Plan, opts engine.Options) *groupRun {
	sp := &pl.Spec.Source
	gr := &groupRun{plan: pl, opts: opts, sp: sp, group: sp.Group, repart: RepartitionTopic(pl.Spec.Name),
		owned: map[taskKey]bool{}, hosts: map[taskKey]*hostTask{}, events: &assignEvents{}, ends: map[taskKey]int64{}, purged: map[int]int64{},
		startAt: map[taskKey]committedOffset{}}
	gr.promiseFn = gr.promise
	return gr
}

// setup opens the store, checks the topics, creates the repartition topic
// if needed, checks the pipeline's spec against the group's, and joins
// the group.
func (gr *groupRun) setup(ctx context.Context) error {
	pl, sp := gr.plan, gr.sp
	store, err := checkpoint.OpenTaskStore(ctx, pl.Spec.Checkpoint, pl.Spec.Name)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	gr.store = store
	if err := gr.checkSpec(ctx); err != nil {
		return err
	}
	// The admin client lists topics from cached metadata (kadm), kept for
	// MetadataMinAge: at the default 5 s, the repartition topic this
	// instance just created stayed "unknown" for 5 s.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(sp.Brokers...), kgo.ClientID(clientID(sp)), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	gr.adm, gr.admCl = kadm.NewClient(admCl), admCl
	if err := gr.topics(ctx); err != nil {
		return err
	}
	cfg, err := kafkaSourceConfig(pl)
	if err != nil {
		return err
	}
	gr.srcCfg = cfg
	if gr.dec, err = kafka.NewRecordDecoder(cfg); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	g, err := task.NewGraph(pl, gr.P)
	if err != nil {
		return err
	}
	g.FireChunk = gr.opts.FireChunk
	g.Incremental = true
	g.EventJSON = gr.dec.EventJSON
	g.Lineage = row.Null
	g.HasQuarantine = pl.Spec.Quarantine.Sink != nil
	g.HasConflicts = pl.Spec.Conflicts.Sink != nil
	for si, st := range pl.Stages {
		g.HasSinks[si] = len(st.Sinks) > 0
		g.HasLate[si] = st.Late.Policy == "side_output" && st.Late.Sink != nil
		g.HasContrib[si] = st.Contributions != nil && st.Contributions.Sink != nil && st.Input < 0 && !st.Desc.Stateless
	}
	gr.env = engine.Env{Stdout: gr.opts.Stdout, Pipeline: pl.Spec.Name, Checkpoints: true, Group: gr.group}
	name := gr.opts.InstanceID
	if name == "" {
		name = randomName()
	}
	gr.sum.Instance = name
	// Checkpoint objects name the process, not only the instance: a
	// restart with the same --instance-id keeps the group generation
	// (static membership) and would otherwise name its first checkpoint
	// as its killed predecessor named an uncommitted one.
	writer := name + "." + randomName()
	gr.in = &instance{plan: pl, g: g, opts: gr.opts, host: gr, inputs: gr.inputs, json: gr.dec.EventJSON,
		tasks: map[taskKey]*groupEntry{}, writer: writer}
	if sp.StopAtEnd {
		gr.in.stops = func(i int) int64 { return gr.stops[i] }
	}
	txnID := "tidemark-" + pl.Spec.Name + "-" + name
	gr.txnID = txnID
	sess, err := kgo.NewGroupTransactSession(gr.clientOpts(txnID)...)
	if err != nil {
		return fmt.Errorf("source: joining group %s: %w", gr.group, err)
	}
	gr.sess = sess
	return nil
}

// clientOpts are the session client's options.
func (gr *groupRun) clientOpts(txnID string) []kgo.Opt {
	sp := gr.sp
	topics := append(slices.Clone(sp.Topics), gr.repart)
	session := sp.SessionTimeout.D()
	opts := []kgo.Opt{
		kgo.SeedBrokers(sp.Brokers...),
		kgo.ClientID(clientID(sp)),
		kgo.ConsumerGroup(gr.group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(syncBalancer{GroupBalancer: kgo.CooperativeStickyBalancer(), events: gr.events}),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(sp.TransactionTimeout.D()),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(max(session/4, 100*time.Millisecond)),
		kgo.RebalanceTimeout(max(session, sp.TransactionTimeout.D())),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(min(sp.PollTimeout.D(), 500*time.Millisecond)),
		kgo.RecordPartitioner(groupPartitioner{repart: gr.repart, keyed: kgo.StickyKeyPartitioner(nil)}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { gr.events.add(true, m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { gr.events.add(false, m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { gr.events.add(false, m) }),
		kgo.AdjustFetchOffsetsFn(gr.adjustOffsets),
	}
	if gr.opts.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(gr.opts.InstanceID))
	}
	if os.Getenv("TIDEMARK_KAFKA_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	}
	return opts
}

// groupPartitioner sends repartition records to the partition the runner
// chose and sink records by key (murmur2, as the Java client).
type groupPartitioner struct {
	repart string
	keyed  kgo.Partitioner
}

func (p groupPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if t == p.repart {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.keyed.ForTopic(t)
}

func clientID(sp *spec.Source) string {
	if sp.ClientID != "" {
		return sp.ClientID
	}
	return "tidemark"
}

// randomName names a process without an --instance-id.
func randomName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkSpec stores the pipeline's spec in the store the first time and
// refuses a spec that differs from the stored one: every instance of a
// group must run the same computation.
func (gr *groupRun) checkSpec(ctx context.Context) error {
	mine, err := engine.SpecJSON(gr.plan.Spec)
	if err != nil {
		return err
	}
	const task, name = "pipeline", "spec"
	err = gr.store.Put(ctx, task, name, mine)
	if err == nil {
		return nil
	}
	if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	stored, err := gr.store.Get(ctx, task, name, 0, -1)
	if err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	if changed := groupSpecChanges(stored, mine); len(changed) > 0 {
		return fmt.Errorf("the group %s runs pipeline %s with another spec: %s changed; an instance must run the same spec as the group's (stop every instance and start them with the new spec and a new checkpoint store, or keep the spec)", gr.group, gr.plan.Spec.Name, strings.Join(changed, ", "))
	}
	return nil
}

// topics lists the input partitions, creates the repartition topic when
// it does not exist (or checks its partition count), and with stop_at_end
// lists the end offsets.
func (gr *groupRun) topics(ctx context.Context) error {
	sp := gr.sp
	td, err := gr.adm.ListTopics(ctx, sp.Topics...)
	if err != nil {
		return fmt.Errorf("source: listing topics %v: %w", sp.Topics, err)
	}
	gr.index = map[tpKey]int{}
	for _, t := range sp.Topics {
		d, ok := td[t]
		if !ok || d.Err != nil {
			return fmt.Errorf("source.topics: topic %s does not exist (or cannot be described: %v)", t, d.Err)
		}
		for _, p := range d.Partitions.Numbers() {
			gr.index[tpKey{t, p}] = len(gr.inputs)
			gr.inputs = append(gr.inputs, fmt.Sprintf("%s/%d", t, p))
		}
	}
	gr.P = sp.RepartitionPartitions
	if gr.P == 0 {
		gr.P = min(len(gr.inputs), gr.plan.Spec.EffectiveKeyGroups())
	}
	for try := 0; ; try++ {
		rd, err := gr.adm.ListTopics(ctx, gr.repart)
		if err != nil {
			return fmt.Errorf("repartition topic %s: %w", gr.repart, err)
		}
		if d, ok := rd[gr.repart]; ok && d.Err == nil {
			if n := len(d.Partitions); n != gr.P {
				return fmt.Errorf("repartition topic %s has %d partitions, the pipeline wants %d (source.repartition_partitions): the partitions of the keyed state are fixed once the topic exists; keep %d, or start the group anew with a new topic name (another pipeline name) and checkpoint store", gr.repart, n, gr.P, n)
			}
			break
		}
		if try > 0 {
			if try > 100 {
				return fmt.Errorf("repartition topic %s: created, but not listed within 10 s", gr.repart)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		// Records are kept until the group has consumed them (retention
		// off): the instances delete what they committed (DeleteRecords,
		// as Kafka Streams purges its repartition topics), so no record is
		// lost to retention before its keyed task read it.
		resp, err := gr.adm.CreateTopic(ctx, int32(gr.P), -1, map[string]*string{"cleanup.policy": strPtr("delete"), "retention.ms": strPtr("-1")}, gr.repart)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("repartition topic %s: cannot create it with %d partitions: %w", gr.repart, gr.P, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("repartition topic %s: cannot create it with %d partitions: %w", gr.repart, gr.P, resp.Err)
		}
	}
	gr.sum.Partitions = gr.P
	if sp.StopAtEnd {
		stops, err := gr.groupEnds(ctx)
		if err != nil {
			return err
		}
		gr.stops = stops
	}
	return nil
}

// groupEnds returns the end offsets of a bounded group run (stop_at_end),
// per input partition index: the ones the group recorded at its start.
// The first instance lists each input partition's last stable offset
// and stores them in the checkpoint store (object pipeline/ends, written
// once); every other instance — one joining later, one restarted, one
// rejoining after a broker pause — reads them. So a partition's end is
// the group's, whoever holds the partition and whenever its task starts
// fresh, and records appended after the group started are not read by
// some owners and left by others. A partition whose end offset cannot be
// listed is an error naming it: its end was -1 before, which declared
// the partition ended at once (+inf for it, and its records late).
func (gr *groupRun) groupEnds(ctx context.Context) (map[int]int64, error) {
	const task, name = "pipeline", "ends"
	data, err := gr.store.Get(ctx, task, name, 0, -1)
	if errors.Is(err, os.ErrNotExist) {
		listed, lerr := gr.listEnds(ctx)
		if lerr != nil {
			return nil, lerr
		}
		var b strings.Builder
		for i, in := range gr.inputs {
			fmt.Fprintf(&b, "%s %d\n", in, listed[i])
		}
		data = []byte(b.String())
		if err = gr.store.Put(ctx, task, name, data); errors.Is(err, os.ErrExist) {
			// Another instance recorded them first: the group's are its.
			data, err = gr.store.Get(ctx, task, name, 0, -1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: the group's end offsets (%s/%s): %w", task, name, err)
	}
	stops := map[int]int64{}
	for n, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		part, off, ok := strings.Cut(line, " ")
		var o int64
		if _, serr := fmt.Sscan(off, &o); !ok || serr != nil || o < 0 {
			return nil, fmt.Errorf("checkpoint store: the group's end offsets (%s/%s) line %d: %q is not \"topic/partition offset\"", task, name, n+1, line)
		}
		i := slices.Index(gr.inputs, part)
		if i < 0 {
			return nil, fmt.Errorf("checkpoint store: the group's end offsets (%s/%s) line %d: partition %s is not an input partition of the pipeline", task, name, n+1, part)
		}
		stops[i] = o
	}
	for i, in := range gr.inputs {
		if _, ok := stops[i]; !ok {
			return nil, fmt.Errorf("checkpoint store: the group's end offsets (%s/%s), recorded when the group started, lack input partition %s (the topic gained partitions since): a bounded group reads the partitions it started with; start the group anew with a new checkpoint store", task, name, in)
		}
	}
	return stops, nil
}

// listEnds lists every input partition's last stable offset, per input
// index; a partition the broker answers with an error is an error
// naming it.
func (gr *groupRun) listEnds(ctx context.Context) (map[int]int64, error) {
	ends, err := gr.adm.ListCommittedOffsets(ctx, gr.sp.Topics...)
	if err != nil {
		return nil, fmt.Errorf("source: listing end offsets: %w", err)
	}
	out := map[int]int64{}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		i, ok := gr.index[tpKey{o.Topic, o.Partition}]
		if !ok {
			return
		}
		if o.Err != nil || o.Offset < 0 {
			e := o.Err
			if e == nil {
				e = fmt.Errorf("the broker answered offset %d", o.Offset)
			}
			errs = append(errs, fmt.Errorf("source: topic %s partition %d: listing its end offset: %w", o.Topic, o.Partition, e))
			return
		}
		out[i] = o.Offset
	})
	for i, in := range gr.inputs {
		if _, ok := out[i]; !ok && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("source: partition %s: no end offset listed", in))
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func strPtr(s string) *string { return &s }

// fault calls Options.FaultHook (crash tests) at a point of the commit
// protocol — "prepared": the tasks' checkpoints are written, the
// transaction not ended; "committed": the transaction committed, the SQL
// sinks not yet — with the number of the instance's transaction.
func (gr *groupRun) fault(point string, n int64) {
	if gr.opts.FaultHook != nil {
		gr.opts.FaultHook(point, n)
	}
}

func (gr *groupRun) logf(format string, args ...any) {
	if gr.opts.Logf != nil {
		gr.opts.Logf(format, args...)
	}
}

// debugf logs with TIDEMARK_GROUP_DEBUG set (a development aid).
func (gr *groupRun) debugf(format string, args ...any) {
	if os.Getenv("TIDEMARK_GROUP_DEBUG") != "" {
		gr.logf("[%s] "+format, append([]any{gr.sum.Instance}, args...)...)
	}
}

// Repartition produces value to partition q of the repartition topic, in
// the open transaction.
func (gr *groupRun) Repartition(q int, value []byte) {
	rec := &kgo.Record{Topic: gr.repart, Partition: int32(q), Value: slices.Clone(value)}
	gr.sess.Produce(context.Background(), rec, gr.promiseFn)
}

// promise takes every produced record's outcome (one function for all:
// no closure per record).
func (gr *groupRun) promise(r *kgo.Record, err error) {
	if err != nil {
		gr.err.set(fmt.Errorf("topic %s partition %d: %w", r.Topic, r.Partition, err))
	}
}

// Store is the group's checkpoint store.
func (gr *groupRun) Store() checkpoint.TaskStore { return gr.store }

// loop polls, routes records to their tasks, ticks processing time,
// commits at every checkpoint interval, and follows the assignment.
func (gr *groupRun) loop(ctx context.Context) (stopped bool, err error) {
	gr.commits0 = gr.sum.Commits
	if err := gr.sess.Begin(); err != nil {
		return false, fmt.Errorf("beginning a transaction: %w", err)
	}
	gr.began()
	interval := gr.plan.Spec.Checkpoint.Interval.D()
	lastCommit := gr.opts.WallClock()
	lastDone := lastCommit
	// A stop (ctx cancelled) ends the loop where it checks ctx; the steps
	// of an iteration after the poll — processing, committing, asking
	// whether the group is done — run to their end without it (a commit
	// cut off by the stop failed the run).
	work := context.WithoutCancel(ctx)
	for {
		if ctx.Err() != nil {
			if _, err := gr.commit(context.WithoutCancel(ctx)); err != nil {
				return true, err
			}
			return true, nil
		}
		pctx, cancel := context.WithTimeout(ctx, min(gr.sp.PollTimeout.D(), 500*time.Millisecond))
		fs := gr.sess.PollRecords(pctx, gr.opts.BatchSize*4)
		cancel()
		if ctx.Err() != nil {
			// Stopped (SIGINT, SIGTERM) while polling: what was polled is
			// read again by the next owner; the work before it commits.
			if _, err := gr.commit(context.WithoutCancel(ctx)); err != nil {
				return true, err
			}
			return true, nil
		}
		if err := gr.applyAssignment(ctx); err != nil {
			if ctx.Err() != nil {
				return true, nil // stopped while starting tasks: nothing of theirs to commit
			}
			return false, err
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			if errors.Is(fe.Err, kgo.ErrClientClosed) {
				return false, errors.New("kafka client closed")
			}
			return false, fmt.Errorf("kafka: topic %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var polled []kgo.FetchTopicPartition
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if k, ok := gr.key(p.Topic, p.Partition); ok {
				if p.LastStableOffset >= 0 {
					gr.ends[k] = p.LastStableOffset
				} else if p.HighWatermark >= 0 {
					gr.ends[k] = p.HighWatermark
				}
			}
			if len(p.Records) > 0 {
				polled = append(polled, p)
			}
		})
		if err := gr.process(work, polled); err != nil {
			return false, err
		}
		if err := gr.tick(); err != nil {
			return false, err
		}
		if err := gr.err.get(); err != nil {
			return false, err
		}
		now := gr.opts.WallClock()
		if now.Sub(gr.lastLive) >= gr.opts.LiveEvery {
			gr.lastLive = now
			gr.live(false)
		}
		if now.Sub(lastCommit) >= interval {
			lastCommit = now
			if _, err := gr.commit(work); err != nil {
				return false, err
			}
		}
		if gr.sp.StopAtEnd && now.Sub(lastDone) >= 500*time.Millisecond {
			lastDone = now
			if _, err := gr.commit(work); err != nil {
				return false, err
			}
			done, err := gr.groupDone(work)
			if err != nil {
				return false, err
			}
			if done {
				return false, nil
			}
		}
	}
}

// applyAssignment follows the assignment changes franz-go reported:
// revoked partitions' tasks go, assigned ones start from their committed
// checkpoints.
func (gr *groupRun) applyAssignment(ctx context.Context) error {
	evs := gr.events.take()
	if len(evs) == 0 {
		return nil
	}
	gr.sum.Rebalances++
	for _, ev := range evs {
		if !ev.full {
			gr.logf("group %s: %s %s", gr.group, map[bool]string{true: "assigned", false: "revoked"}[ev.assigned], partitionList(ev.tps))
		}
	}
	var add []taskKey
	for _, ev := range evs {
		if ev.full {
			// Whatever the instance holds outside its whole assignment is
			// revoked (a revocation franz-go did not report).
			for _, k := range slices.Collect(maps.Keys(gr.owned)) {
				if t, p := gr.tp(k); !slices.Contains(ev.tps[t], p) {
					if gr.in.tasks[k] != nil {
						gr.logf("group %s: %s/%d revoked (not in the generation's assignment)", gr.group, t, p)
					}
					delete(gr.owned, k)
					gr.in.drop(ctx, k)
					delete(gr.hosts, k)
					gr.forgetStart(k)
				}
			}
			continue
		}
		for t, ps := range ev.tps {
			for _, p := range ps {
				k, ok := gr.key(t, p)
				if !ok {
					continue
				}
				if ev.assigned {
					gr.owned[k] = true
					add = append(add, k)
				} else {
					delete(gr.owned, k)
					gr.in.drop(ctx, k)
					delete(gr.hosts, k)
					gr.forgetStart(k)
				}
			}
		}
	}
	var start []taskKey
	for _, k := range add {
		if gr.owned[k] && gr.in.tasks[k] == nil {
			start = append(start, k)
		}
	}
	return gr.startTasks(ctx, start)
}

// key maps a partition to its task.
func (gr *groupRun) key(topic string, p int32) (taskKey, bool) {
	if topic == gr.repart {
		return taskKey{keyed: true, index: int(p)}, int(p) < gr.P
	}
	i, ok := gr.index[tpKey{topic, p}]
	return taskKey{index: i}, ok
}

// tp maps a task to its partition.
func (gr *groupRun) tp(k taskKey) (string, int32) {
	if k.keyed {
		return gr.repart, int32(k.index)
	}
	t, n, _ := strings.Cut(gr.inputs[k.index], "/")
	var p int32
	fmt.Sscan(n, &p)
	return t, p
}

// startTasks starts tasks from the checkpoints committed with their
// partitions' offsets (waiting for a transaction still open on them).
func (gr *groupRun) startTasks(ctx context.Context, keys []taskKey) error {
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b taskKey) int {
		if a.keyed != b.keyed {
			if a.keyed {
				return 1
			}
			return -1
		}
		return a.index - b.index
	})
	committed, err := gr.startOffsets(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		c := committed[k]
		manifest, _, _ := strings.Cut(c.meta, " ")
		if err := gr.in.add(ctx, k, manifest); err != nil {
			if t, p := gr.tp(k); gr.events.revoked(t, p) {
				// Revoked while it started: its new owner may have
				// replaced the checkpoint it read. The revocation aborts
				// the transaction; the partition is not this instance's.
				gr.logf("group %s: task %s revoked while it started (%v)", gr.group, k, err)
				continue
			}
			return err
		}
		if manifest != "" {
			gr.sum.Restores++
			gr.sum.RestoreTime += gr.in.tasks[k].restored
			gr.sum.RestoreBytes += gr.in.tasks[k].ck.loaded
		}
		h := &hostTask{pos: c.offset}
		if !k.keyed {
			// A decoder of its own, with its own timestamp parsers (a
			// parser with a layout caches a zone period: not safe for
			// concurrent use).
			cfg := gr.srcCfg
			cfg.Fields.Time = map[int]*eventtime.Parser{}
			for i, tp := range gr.srcCfg.Fields.Time {
				c := *tp
				cfg.Fields.Time[i] = &c
			}
			if h.dec, err = kafka.NewRecordDecoder(cfg); err != nil {
				return err
			}
		}
		gr.hosts[k] = h
	}
	return nil
}

// hostTask is what the runner keeps for one task.
type hostTask struct {
	pos   int64 // the offset of the next record of the task's partition
	batch source.Batch
	dec   *kafka.RecordDecoder // a source task's
}

// pos returns task k's position (0 for a task not started).
func (gr *groupRun) pos(k taskKey) int64 {
	if h := gr.hosts[k]; h != nil {
		return h.pos
	}
	return 0
}

// committedOffset is a partition's committed offset and metadata.
type committedOffset struct {
	offset int64
	meta   string
}

// startOffsets returns where tasks keys start: the committed offset and
// its metadata (the manifest of the checkpoint to restore). A task and
// franz-go's consumer of its partition must start from the same read of
// the group's offsets — franz-go reads them itself when the group
// assigns a partition, and a commit between its read and the task's (a
// former owner's transaction ending) made the task restore a checkpoint
// of one offset while its records came from another: the records
// between were lost or counted twice. So the first of the two to ask —
// startTasks, or adjustOffsets, which franz-go calls with the offsets
// it read before it fetches — reads them (fetchCommitted), and both use
// that read until the task is dropped.
func (gr *groupRun) startOffsets(ctx context.Context, keys []taskKey) (map[taskKey]committedOffset, error) {
	out := map[taskKey]committedOffset{}
	var missing []taskKey
	gr.startMu.Lock()
	for _, k := range keys {
		if c, ok := gr.startAt[k]; ok {
			out[k] = c
		} else {
			missing = append(missing, k)
		}
	}
	gr.startMu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	fetched, err := gr.fetchCommitted(ctx, missing)
	if err != nil {
		return nil, err
	}
	gr.startMu.Lock()
	defer gr.startMu.Unlock()
	for _, k := range missing {
		c, ok := gr.startAt[k]
		if !ok {
			c = fetched[k]
			gr.startAt[k] = c
		}
		out[k] = c
	}
	return out, nil
}

// forgetStart forgets where tasks keys started (dropped tasks), or every
// task's with no keys (an aborted transaction: franz-go rewinds to the
// committed offsets, which the tasks read again).
func (gr *groupRun) forgetStart(keys ...taskKey) {
	gr.startMu.Lock()
	defer gr.startMu.Unlock()
	if len(keys) == 0 {
		clear(gr.startAt)
	}
	for _, k := range keys {
		delete(gr.startAt, k)
	}
}

// adjustOffsets is franz-go's AdjustFetchOffsetsFn: the partitions the
// group assigned are consumed from startOffsets' offsets.
func (gr *groupRun) adjustOffsets(ctx context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var keys []taskKey
	for t, ps := range offs {
		for p := range ps {
			if k, ok := gr.key(t, p); ok {
				keys = append(keys, k)
			}
		}
	}
	at, err := gr.startOffsets(ctx, keys)
	if err != nil {
		return nil, err
	}
	for t, ps := range offs {
		for p := range ps {
			if k, ok := gr.key(t, p); ok {
				ps[p] = kgo.NewOffset().At(at[k].offset).WithEpoch(-1)
			}
		}
	}
	return offs, nil
}

// fetchCommitted reads the group's committed offsets and metadata of the
// tasks' partitions with require_stable (KIP-447: a partition whose
// offsets are in an open transaction answers once it ended).
func (gr *groupRun) fetchCommitted(ctx context.Context, keys []taskKey) (map[taskKey]committedOffset, error) {
	out := map[taskKey]committedOffset{}
	for try := 0; ; try++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = gr.group
		req.RequireStable = true
		byTopic := map[string][]int32{}
		for _, k := range keys {
			t, p := gr.tp(k)
			byTopic[t] = append(byTopic[t], p)
		}
		for _, t := range slices.Sorted(mapsKeys(byTopic)) {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = t
			rt.Partitions = byTopic[t]
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, gr.admCl)
		if err != nil {
			return nil, fmt.Errorf("group %s: fetching committed offsets: %w", gr.group, err)
		}
		unstable := false
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnstableOffsetCommit) {
				unstable = true
			} else {
				return nil, fmt.Errorf("group %s: fetching committed offsets: %w", gr.group, err)
			}
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					if errors.Is(err, kerr.UnstableOffsetCommit) {
						unstable = true
						continue
					}
					return nil, fmt.Errorf("group %s: topic %s partition %d: fetching the committed offset: %w", gr.group, t.Topic, p.Partition, err)
				}
				k, ok := gr.key(t.Topic, p.Partition)
				if !ok {
					continue
				}
				c := committedOffset{offset: p.Offset}
				if p.Metadata != nil {
					c.meta = *p.Metadata
				}
				if c.offset < 0 {
					c.offset = 0
				}
				out[k] = c
			}
		}
		if !unstable {
			return out, nil
		}
		if try > 600 {
			return nil, fmt.Errorf("group %s: a transaction stays open on the offsets of the partitions to start (source.transaction_timeout is %s)", gr.group, gr.sp.TransactionTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// process hands a poll's records to their tasks: on up to the run's
// parallelism goroutines (Options.Parallelism, default GOMAXPROCS), each
// task's records on one goroutine and in order. Tasks share nothing but
// the producer, which is safe for concurrent use: each has its own state,
// sinks, batch and decoder.
func (gr *groupRun) process(ctx context.Context, work []kgo.FetchTopicPartition) error {
	workers := gr.opts.Parallelism
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	if workers <= 1 || len(work) <= 1 {
		for _, p := range work {
			if err := gr.partition(ctx, p); err != nil {
				return err
			}
		}
		return nil
	}
	// A task's fetches stay together and in order: one group per task.
	byTask := map[tpKey][]kgo.FetchTopicPartition{}
	var order []tpKey
	for _, p := range work {
		k := tpKey{p.Topic, p.Partition}
		if _, ok := byTask[k]; !ok {
			order = append(order, k)
		}
		byTask[k] = append(byTask[k], p)
	}
	next := make(chan []kgo.FetchTopicPartition)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ps := range next {
				for _, p := range ps {
					if err := gr.partition(ctx, p); err != nil {
						errs <- err
						for range next { // drain: the run stops
						}
						return
					}
				}
			}
		}()
	}
	for _, k := range order {
		next <- byTask[k]
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// partition hands a fetch's records to their task.
func (gr *groupRun) partition(ctx context.Context, p kgo.FetchTopicPartition) error {
	k, ok := gr.key(p.Topic, p.Partition)
	if !ok {
		return nil
	}
	e, h := gr.in.tasks[k], gr.hosts[k]
	if e == nil || h == nil {
		return nil // revoked in this poll: its records are read again by its new owner
	}
	if k.keyed {
		for _, rec := range p.Records {
			if rec.Offset < h.pos {
				continue
			}
			h.pos = rec.Offset + 1
			if rec.Attrs.IsControl() {
				continue
			}
			if err := e.kt.record(rec.Value); err != nil {
				return fmt.Errorf("repartition topic %s partition %d offset %d: %w", p.Topic, p.Partition, rec.Offset, err)
			}
		}
		return nil
	}
	st := e.src
	b := &h.batch
	b.Reset()
	stop := int64(-1)
	if gr.sp.StopAtEnd {
		stop = st.stop
	}
	next := h.pos
	for _, rec := range p.Records {
		if rec.Offset < next || (stop >= 0 && rec.Offset >= stop) {
			continue
		}
		if rec.Attrs.IsControl() {
			next = rec.Offset + 1
			continue
		}
		if err := h.dec.Append(ctx, rec, 0, b); err != nil {
			return err // not judged: the run stops; its offset is read again
		}
		next = rec.Offset + 1
	}
	if err := st.records(b, next); err != nil {
		return err
	}
	h.pos = next
	if stop >= 0 && next >= stop {
		return st.end()
	}
	return nil
}

// tick advances every task's processing time; a bounded source task at
// its end (also an empty partition) reports +inf.
func (gr *groupRun) tick() error {
	now := gr.opts.Clock()
	for _, e := range gr.in.sortedTasks() {
		if e.kt != nil {
			if err := e.kt.tick(now); err != nil {
				return err
			}
			continue
		}
		if gr.sp.StopAtEnd && gr.pos(e.key) >= e.src.stop {
			if err := e.src.end(); err != nil {
				return err
			}
		}
		if err := e.src.tick(now); err != nil {
			return err
		}
	}
	return nil
}

// commit checkpoints every task, ends the transaction — offsets with
// their manifests, and everything produced — and begins the next. When
// the transaction aborted (a rebalance), every task starts again from its
// committed checkpoint. It reports whether it committed.
func (gr *groupRun) commit(ctx context.Context) (bool, error) {
	t0 := time.Now()
	defer func() {
		gr.lastCommitAt, gr.lastCommitDur = gr.opts.WallClock(), time.Since(t0)
	}()
	_, gen := gr.sess.Client().GroupMetadata()
	metas, err := gr.in.checkpoint(ctx, int64(max(gen, 0)))
	if err != nil {
		return false, err
	}
	byTP := map[tpKey]string{}
	for k, m := range metas {
		t, p := gr.tp(k)
		if e := gr.in.tasks[k]; e != nil && e.done() {
			m += " done"
		}
		byTP[tpKey{t, p}] = m
	}
	cctx := kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		seen := map[tpKey]bool{}
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				k := tpKey{t.Topic, p.Partition}
				seen[k] = true
				if m, ok := byTP[k]; ok {
					// The offset committed is the task's position — where
					// the checkpoint named beside it stands — not
					// franz-go's: after a rewind franz-go may have
					// delivered only records before it (skipped).
					tk, _ := gr.key(k.topic, k.p)
					p.Offset, p.LeaderEpoch, p.Metadata = gr.pos(tk), -1, strPtr(m)
				}
			}
		}
		// Tasks that read nothing since the last commit commit their new
		// checkpoint at their current offset.
		for k, m := range byTP {
			if seen[k] {
				continue
			}
			tk, _ := gr.key(k.topic, k.p)
			idx := slices.IndexFunc(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return t.Topic == k.topic })
			if idx < 0 {
				t := kmsg.NewTxnOffsetCommitRequestTopic()
				t.Topic = k.topic
				req.Topics = append(req.Topics, t)
				idx = len(req.Topics) - 1
			}
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = k.p, gr.pos(tk), -1, strPtr(m)
			req.Topics[idx].Partitions = append(req.Topics[idx].Partitions, p)
		}
		return nil
	})
	n := int64(gr.sum.Commits + gr.sum.Aborts + 1)
	gr.fault("prepared", n)
	committed, err := gr.sess.End(cctx, kgo.TryCommit)
	if err != nil {
		return false, fmt.Errorf("committing the transaction: %w", err)
	}
	if committed {
		gr.fault("committed", n)
		gr.sum.Commits++
		if err := gr.in.committed(ctx, int64(max(gen, 0))); err != nil {
			return true, err
		}
		gr.purge(ctx)
	} else {
		gr.sum.Aborts++
		gr.logf("group %s: the transaction aborted (a rebalance); the tasks start again from their committed checkpoints", gr.group)
		gr.in.dropAll(ctx)
		gr.hosts = map[taskKey]*hostTask{}
		gr.forgetStart()
		// The rebalance that aborted the transaction may have revoked
		// partitions whose events the loop has not applied yet: apply
		// them first. A task restarted on a revoked partition read the
		// checkpoint its new owner was replacing, and failed the run
		// when the new owner's commit deleted it ("the checkpoint store
		// does not hold").
		if err := gr.applyAssignment(ctx); err != nil {
			return false, err
		}
		var keys []taskKey
		for k := range gr.owned {
			if gr.in.tasks[k] == nil {
				keys = append(keys, k)
			}
		}
		if err := gr.startTasks(ctx, keys); err != nil {
			return false, err
		}
	}
	if err := gr.sess.Begin(); err != nil {
		return committed, fmt.Errorf("beginning a transaction: %w", err)
	}
	gr.began()
	return committed, nil
}

// purge deletes the records of the repartition partitions the instance
// holds up to their committed offsets: they are consumed for good.
func (gr *groupRun) purge(ctx context.Context) {
	offs := kadm.Offsets{}
	for k := range gr.owned {
		if h, ok := gr.hosts[k]; ok && k.keyed && h.pos > gr.purged[k.index] {
			p := h.pos
			offs.Add(kadm.Offset{Topic: gr.repart, Partition: int32(k.index), At: p})
		}
	}
	if len(offs) == 0 {
		return
	}
	resp, err := gr.adm.DeleteRecords(ctx, offs)
	if err != nil {
		gr.logf("repartition topic %s: deleting consumed records: %v", gr.repart, err)
		return
	}
	resp.Each(func(r kadm.DeleteRecordsResponse) {
		if r.Err == nil {
			gr.purged[int(r.Partition)] = r.LowWatermark
		}
	})
}

// groupDone reports whether every partition of the group — inputs and
// repartition topic — has a committed checkpoint marked done: a source
// task that read its partition to the end offset, a keyed task whose
// every node is at +inf, after which no record can reach its partition
// (every task that feeds a node sends its records before its +inf).
func (gr *groupRun) groupDone(ctx context.Context) (bool, error) {
	offs, err := gr.adm.FetchOffsets(ctx, gr.group)
	if err != nil {
		return false, nil // the group is rebalancing: ask again later
	}
	for i := range gr.inputs {
		t, p := gr.tp(taskKey{index: i})
		o, ok := offs.Lookup(t, p)
		if !ok || !strings.HasSuffix(o.Metadata, " done") {
			gr.debugf("not done: input %s/%d at %d %q", t, p, o.At, o.Metadata)
			return false, nil
		}
	}
	for q := range gr.P {
		o, ok := offs.Lookup(gr.repart, int32(q))
		if !ok || !strings.HasSuffix(o.Metadata, " done") {
			gr.debugf("not done: repartition %d at %d %q", q, o.At, o.Metadata)
			return false, nil
		}
	}
	return true, nil
}

// close commits nothing: it leaves the group and closes the store and the
// tasks' sinks.
func (gr *groupRun) close() {
	ctx := context.Background()
	if gr.in != nil {
		for _, e := range gr.in.sortedTasks() {
			if e.kt != nil {
				gr.sum.Keyed = append(gr.sum.Keyed, e.key.index)
			} else {
				gr.sum.Sources = append(gr.sum.Sources, e.key.index)
			}
		}
		gr.collect()
		gr.in.dropAll(ctx)
	}
	if gr.sess != nil {
		gr.sess.Close()
	}
	if gr.adm != nil {
		gr.adm.Close()
	}
	if gr.store != nil {
		gr.store.Close()
	}
}

// collect sums the counters of the tasks the instance holds into the
// summary's (once, at close).
func (gr *groupRun) collect() {
	if gr.total != nil {
		return
	}
	c := task.NewCounters(len(gr.plan.Stages))
	gr.total = &c
	for _, e := range gr.in.sortedTasks() {
		if e.kt != nil {
			c.Add(&e.kt.cnt)
			continue
		}
		c.Add(e.src.rt.Counters())
		events, redeliveries := e.src.rt.Read()
		gr.read += events
		gr.redeliver += redeliveries
	}
}

// summary is the instance's summary: the counters of the tasks it held at
// the end (each with the counts of its earlier owners).
func (gr *groupRun) summary() *engine.Summary {
	gr.collect()
	c := gr.total
	s := &engine.Summary{Pipeline: gr.plan.Spec.Name, Parallelism: 1, EventsRead: gr.read, Redeliveries: gr.redeliver,
		Partitions: len(gr.inputs), Quarantined: c.Quarantined, Duplicates: c.Duplicates, Conflicts: c.Conflicts,
		StaleVersions: c.StaleVersions, Superseded: c.Superseded, Deletes: c.Deletes, FirstViolation: c.First[0].Text, Group: &gr.sum,
		FinalWatermark: changelog.WatermarkNone}
	var stageRules [][]engine.RuleCount
	s.Rules, stageRules = engine.SplitRules(c.ByRule, len(gr.plan.Stages))
	for si, st := range gr.plan.Stages {
		s.Stages = append(s.Stages, engine.StageSummary{Name: st.Name, Counters: c.Stages[si], Rules: stageRules[si]})
	}
	return s
}

// Writer opens task key's outputs: Kafka sinks produce into the
// instance's transaction; PostgreSQL sinks are opened for the task, with
// its own commit markers.
func (gr *groupRun) Writer(key taskKey) (groupWriter, error) {
	ctx := context.Background()
	pl := gr.plan
	env := gr.env
	env.Task = key.String()
	w := &kafkaGroupWriter{gr: gr}
	openRec := func(role string, s *spec.Sink) (recOut, error) {
		if s == nil {
			return recOut{}, nil
		}
		if s.Type == "kafka" {
			enc, err := engine.KafkaRecordEncoder(*s)
			if err != nil {
				return recOut{}, fmt.Errorf("%s: %w", role, err)
			}
			return recOut{topic: s.Topic, enc: enc}, nil
		}
		r, err := gr.opts.Registry.OpenRecords(ctx, *s, &env)
		if err != nil {
			return recOut{}, fmt.Errorf("%s: %w", role, err)
		}
		c, ok := r.(sink.Committer)
		if !ok {
			return recOut{}, fmt.Errorf("%s: the %s sink cannot take part in checkpoints", role, s.Type)
		}
		w.committers = append(w.committers, namedCommitter{role, c})
		w.closers = append(w.closers, r.Close)
		return recOut{sink: r}, nil
	}
	var err error
	if w.quarantine, err = openRec("quarantine.sink", pl.Spec.Quarantine.Sink); err != nil {
		w.Close(ctx)
		return nil, err
	}
	if w.conflicts, err = openRec("conflicts.sink", pl.Spec.Conflicts.Sink); err != nil {
		w.Close(ctx)
		return nil, err
	}
	for _, st := range pl.Stages {
		so := stageOut{}
		for i, sk := range st.Sinks {
			role := fmt.Sprintf("%s: sinks[%d]", st.Name, i)
			if sk.Type == "kafka" {
				enc, err := engine.KafkaRowEncoder(ctx, sk, st.Desc)
				if err != nil {
					w.Close(ctx)
					return nil, fmt.Errorf("%s: %w", role, err)
				}
				so.results = append(so.results, resOut{topic: sk.Topic, enc: enc})
				continue
			}
			r, err := gr.opts.Registry.OpenResults(ctx, sk, st.Desc, &env)
			if err != nil {
				w.Close(ctx)
				return nil, fmt.Errorf("%s: %w", role, err)
			}
			c, ok := r.(sink.Committer)
			if !ok {
				w.Close(ctx)
				return nil, fmt.Errorf("%s: the %s sink cannot take part in checkpoints", role, sk.Type)
			}
			w.committers = append(w.committers, namedCommitter{role, c})
			w.closers = append(w.closers, r.Close)
			so.results = append(so.results, resOut{sink: r})
		}
		if st.Late.Policy == "side_output" {
			if so.late, err = openRec(st.Name+": late.sink", st.Late.Sink); err != nil {
				w.Close(ctx)
				return nil, err
			}
		}
		if c := st.Contributions; c != nil {
			if so.contrib, err = openRec(st.Name+": contributions.sink", c.Sink); err != nil {
				w.Close(ctx)
				return nil, err
			}
		}
		w.stages = append(w.stages, so)
	}
	return w, nil
}

// kafkaGroupWriter is a task's outputs in a group run.
type kafkaGroupWriter struct {
	gr                    *groupRun
	quarantine, conflicts recOut
	stages                []stageOut
	committers            []namedCommitter
	closers               []func(context.Context) error
}

type stageOut struct {
	results       []resOut
	late, contrib recOut
}

// resOut is a result sink: a Kafka topic (produced in the transaction) or
// an opened sink.
type resOut struct {
	topic string
	enc   *sinkkafka.RowEncoder
	sink  sink.Results
}

type recOut struct {
	topic string
	enc   *sinkkafka.RecordEncoder
	sink  sink.Records
}

type namedCommitter struct {
	id string
	c  sink.Committer
}

func (w *kafkaGroupWriter) produce(topic string, key, value []byte) {
	rec := &kgo.Record{Topic: topic, Key: slices.Clone(key), Value: slices.Clone(value)}
	if value != nil && rec.Value == nil {
		rec.Value = []byte{}
	}
	w.gr.sess.Produce(context.Background(), rec, w.gr.promiseFn)
}

// WriteRows writes a stage's result rows.
func (w *kafkaGroupWriter) WriteRows(out task.Output, rows []changelog.Row) error {
	st := w.stages[out.Stage()]
	for _, r := range st.results {
		if r.sink != nil {
			if err := r.sink.Write(context.Background(), rows); err != nil {
				return err
			}
			continue
		}
		for i := range rows {
			key, value, skip, err := r.enc.Encode(&rows[i])
			if err != nil {
				return fmt.Errorf("topic %s: %w", r.topic, err)
			}
			if !skip {
				w.produce(r.topic, key, value)
			}
		}
	}
	return nil
}

// WriteRecord writes a side-output record.
func (w *kafkaGroupWriter) WriteRecord(out task.Output, rec []byte) error {
	var o recOut
	switch out {
	case task.OutQuarantine:
		o = w.quarantine
	case task.OutConflicts:
		o = w.conflicts
	default:
		st := w.stages[out.Stage()]
		if out == task.LateOf(out.Stage()) {
			o = st.late
		} else {
			o = st.contrib
		}
	}
	switch {
	case o.sink != nil:
		return o.sink.WriteRecord(context.Background(), rec)
	case o.topic != "":
		v, err := o.enc.Encode(context.Background(), rec)
		if err != nil {
			return err
		}
		w.produce(o.topic, nil, v)
	}
	return nil
}

// WriteLedger is not reached: ledger sinks are refused in a group.
func (w *kafkaGroupWriter) WriteLedger(*task.LedgerEvent) {}

// Prepare stages the task's SQL sinks' output: Uint(#) (String(sink)
// Bytes8(prepared))….
func (w *kafkaGroupWriter) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if len(w.committers) == 0 {
		return nil, nil
	}
	e := state.NewEncoder(nil)
	e.Uint(uint64(len(w.committers)))
	for _, c := range w.committers {
		p, err := c.c.Prepare(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s: prepare: %w", c.id, err)
		}
		e.String(c.id)
		e.Bytes8(p)
	}
	return e.Bytes(), nil
}

// splitPrepared reads Prepare's bytes back, by sink.
func (w *kafkaGroupWriter) splitPrepared(prepared []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(prepared) == 0 {
		return out, nil
	}
	d := state.NewDecoder(prepared)
	n := d.Len(1<<16, 2)
	for range n {
		id := d.String()
		p := d.Bytes8()
		if len(p) == 0 {
			p = nil
		}
		out[id] = p
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("prepared sink state: %w", err)
	}
	return out, nil
}

// Commit publishes what Prepare staged.
func (w *kafkaGroupWriter) Commit(ctx context.Context, id int64, prepared []byte) error {
	m, err := w.splitPrepared(prepared)
	if err != nil {
		return err
	}
	for _, c := range w.committers {
		if err := c.c.Commit(ctx, id, m[c.id]); err != nil {
			return fmt.Errorf("%s: commit: %w", c.id, err)
		}
	}
	return nil
}

// Recover brings the task's SQL sinks to checkpoint id.
func (w *kafkaGroupWriter) Recover(ctx context.Context, id int64, prepared []byte) error {
	m, err := w.splitPrepared(prepared)
	if err != nil {
		return err
	}
	for _, c := range w.committers {
		p := m[c.id]
		if id == 0 {
			p = nil
		}
		if err := c.c.Recover(ctx, id, p); err != nil {
			return fmt.Errorf("%s: recover: %w", c.id, err)
		}
	}
	return nil
}

// Close closes the task's SQL sinks (staged output is dropped).
func (w *kafkaGroupWriter) Close(ctx context.Context) error {
	var errs []error
	for _, c := range w.closers {
		errs = append(errs, c(ctx))
	}
	w.closers = nil
	return errors.Join(errs...)
}

// kafkaSourceConfig is the Kafka source's configuration of a pipeline
// (its decoding half is what a group run uses).
// Its fields' set-up repeats the direct runner's (engine/sources.go,
// openSource) but for source.processing_time_field, which that one also
// marks derived; kept apart until a group test shows which a group needs.
func kafkaSourceConfig(p *plan.Plan) (kafka.Config, error) {
	sp := &p.Spec.Source
	fields := format.Fields{Schema: p.SourceSchema, Time: p.TimeParsers}
	if r := p.Spec.Reference; r != nil {
		for _, f := range r.Fields {
			if fd, ok := p.SourceSchema.Lookup(f.Name); ok {
				fields.Derived = append(fields.Derived, fd.Index)
			}
		}
	}
	cfg := kafka.Config{Brokers: sp.Brokers, Topics: sp.Topics, EventTimeFrom: p.Spec.EventTime.From,
		Fields: fields, EventTimeField: p.EventTimeField}
	if cfg.EventTimeFrom == "" {
		cfg.EventTimeFrom = kafka.EventTimePayload
	}
	if err := engine.KafkaFormat(&cfg, p); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// groupSpecChanges lists every difference between the spec a group's
// first instance stored and an instance's (docs/scale-out.md, "Limits"):
// the instances of a group must run one computation with the same
// outputs, so unlike a restore (specChanges) nothing may differ but how
// often each instance checkpoints (checkpoint.interval) and how many
// checkpoints it keeps (checkpoint.retain). Each entry is "key (old →
// new)", sorted.
func groupSpecChanges(old, cur []byte) []string {
	var out []string
	for _, c := range engine.SpecChanges(old, cur) {
		if c.Key == "Checkpoint.Interval" || c.Key == "Checkpoint.Retain" {
			continue
		}
		out = append(out, c.Text)
	}
	return out
}
