package engine

import (
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/source"
)

// Live is a snapshot of a running pipeline for monitoring (package
// metrics, the status page): watermarks per source partition, record
// fates, state sizes, checkpoints and sink commits. The runner builds one
// at a batch boundary at most every Options.LiveEvery of wall-clock time,
// and at the end of the run, and hands it to Options.Live; the snapshot is
// the callee's (the runner never touches it again).
type Live struct {
	Pipeline string
	// Parallelism is the number of tasks the pipeline runs as.
	Parallelism int
	// At is the wall-clock time of the snapshot.
	At time.Time
	// ProcessingTime is the runner's processing time (ms since the epoch):
	// the records' arrival times or the clock.
	ProcessingTime int64
	// Watermark is the pipeline watermark (ms), changelog.WatermarkNone
	// before any, changelog.WatermarkInfinity after a bounded input.
	Watermark int64
	// OutOfOrderness is the watermark delay (ms) of every partition.
	OutOfOrderness int64
	// IdleTimeout is event_time.idle_timeout (ms), 0 for none.
	IdleTimeout int64
	Partitions  []LivePartition
	// Ended is true in the snapshot taken when the run ends.
	Ended bool

	// Record fates before the stages (as in Summary).
	EventsRead, Redeliveries, Quarantined, Duplicates, Conflicts, StaleVersions, Superseded int64
	// Deletes counts a change stream's deletes.
	Deletes int64

	Stages      []LiveStage
	Checkpoints LiveCheckpoints
	// SinkCommits are the sink commits of checkpoints since the previous
	// snapshot, in order.
	SinkCommits []SinkCommit
	// Ledgers reports the postgres ledger sinks (totals of the run).
	Ledgers []LedgerSummary
	// Waits are the services the sources' records wait on (a schema
	// registry that cannot be reached: source.Wait), none while records
	// flow.
	Waits []source.Wait
	// DiskState reports the disk backend's stores (nil on the memory
	// backend).
	DiskState *LiveDiskState
	// Group reports the instance of a group run (source.assignment:
	// group); nil otherwise. Partitions are then the instance's source
	// tasks' partitions, Watermark the lowest watermark of its keyed
	// tasks' nodes, and the counters those of the tasks it holds.
	Group *LiveGroup
}

// LiveDiskState is the disk backend's stores, summed over the tasks
// (docs/state.md; pebble's metrics).
type LiveDiskState struct {
	// DiskBytes is the size of the stores' live files; MemTableBytes of
	// their memtables; CacheBytes the shared block cache's use; HotBudget
	// the hot tiers' budget (state.memory's half).
	DiskBytes, MemTableBytes, CacheBytes, HotBudget int64
	// CacheHits and CacheMisses count block cache lookups.
	CacheHits, CacheMisses int64
	// Flushes and Compactions count memtable flushes and compactions;
	// FlushTime and CompactionTime their cumulative time.
	Flushes, Compactions      int64
	FlushTime, CompactionTime time.Duration
	// Files counts the stores' tables.
	Files int64
}

// LivePartition is one source partition.
type LivePartition struct {
	Name string
	// Watermark is the partition's own watermark (ms): its largest event
	// time minus out-of-orderness; changelog.WatermarkNone before any.
	Watermark int64
	// MaxEventTime is its largest event time (ms), WatermarkNone before any.
	MaxEventTime int64
	// LastArrival is the processing time of its last record (ms).
	LastArrival int64
	Idle        bool
	Records     int64
	// ConsumerLag is the number of records in the log after the next one
	// to read (Kafka: end offset − next offset); -1 when the source does
	// not know (files).
	ConsumerLag int64
}

// LiveStage is one stage's counters and state.
type LiveStage struct {
	Name string
	Counters
	OpenWindows int   // panes or sessions holding state
	Entries     int   // live (window, key) instances
	Keys        int   // distinct live keys
	StateBytes  int64 // estimated heap bytes of the operator's state
	// HotKeys are the keys holding the most state, largest first (at
	// most Options.HotKeys).
	HotKeys []operator.KeyState
}

// LiveCheckpoints reports checkpoints.
type LiveCheckpoints struct {
	Enabled      bool
	Taken        int   // by this run
	Failures     int   // checkpoints that failed (the run stops at the first)
	LastID       int64 // newest checkpoint id, 0 for none
	LastBytes    int
	LastDuration time.Duration
	// LastPause is the time the last checkpoint held up processing: the
	// whole protocol runs at a batch boundary (aligned), so it equals
	// LastDuration.
	LastPause time.Duration
	LastAt    time.Time // wall clock, zero before any
}

// SinkCommit is one sink's commit of one checkpoint.
type SinkCommit struct {
	Sink     string // "<stage>: sinks[i]", "quarantine.sink", …
	ID       int64
	Duration time.Duration
	Err      bool
}

// routerLive is the router's part of a snapshot, taken after a round.
type routerLive struct {
	now, wm    int64
	events     int64
	redeliver  int64
	partitions []LivePartition
	waits      []source.Wait
}

// routerLive captures the router's view for a snapshot.
func (rt *runtime) routerLive() *routerLive {
	l := &routerLive{now: rt.now, wm: rt.tracker.Current(), events: rt.events, redeliver: rt.redeliver}
	var lag []int64
	if s, ok := rt.src.(interface{ Lag() []int64 }); ok {
		lag = s.Lag()
	}
	l.waits = waiting(rt.waiters())
	names := rt.src.Partitions()
	for i, pt := range rt.tracker.Partitions() {
		lp := LivePartition{Watermark: pt.Watermark(rt.tracker.OutOfOrderness()), MaxEventTime: pt.MaxEventTime,
			LastArrival: pt.LastArrival, Idle: pt.Idle, Records: pt.Records, ConsumerLag: -1}
		if i < len(names) {
			lp.Name = names[i]
		}
		if i < len(lag) {
			lp.ConsumerLag = lag[i]
		}
		l.partitions = append(l.partitions, lp)
	}
	return l
}

// live builds the snapshot from the newest router view and the writer's
// totals (on the writer's goroutine).
func (rt *runtime) live(ended bool) *Live {
	p := rt.plan
	r := &rt.rtLive
	c := &rt.cnt
	l := &Live{
		Pipeline:       p.Spec.Name,
		At:             rt.opts.WallClock(),
		ProcessingTime: r.now,
		Watermark:      r.wm,
		OutOfOrderness: p.Spec.EventTime.OutOfOrderness.Ms(),
		IdleTimeout:    p.Spec.EventTime.IdleTimeout.Ms(),
		Ended:          ended,
		EventsRead:     r.events,
		Redeliveries:   r.redeliver,
		Quarantined:    c.Quarantined,
		Duplicates:     c.Duplicates,
		Conflicts:      c.Conflicts,
		StaleVersions:  c.StaleVersions,
		Superseded:     c.Superseded,
		Deletes:        c.Deletes,
		SinkCommits:    rt.commits,
		Ledgers:        rt.ledgerSummaries(),
		Partitions:     r.partitions,
		Waits:          r.waits,
		Parallelism:    rt.par,
		DiskState:      rt.liveDisk(),
	}
	rt.commits = nil
	for i, st := range rt.stages {
		ls := LiveStage{Name: st.p.Name, Counters: c.Stages[i]}
		if i < len(rt.stats) {
			s := rt.stats[i]
			ls.OpenWindows, ls.Entries, ls.Keys, ls.StateBytes = s.OpenWindows, s.Entries, s.Keys, s.StateBytes
			ls.HotKeys = s.HotKeys
		}
		l.Stages = append(l.Stages, ls)
	}
	if ck := rt.ck; ck != nil {
		l.Checkpoints = LiveCheckpoints{Enabled: true, Taken: ck.taken, Failures: ck.failures, LastID: ck.lastID, LastBytes: ck.bytes,
			LastDuration: ck.duration, LastPause: ck.duration, LastAt: ck.last}
		if ck.taken == 0 {
			l.Checkpoints.LastAt = time.Time{}
		}
	}
	return l
}

// publishLive hands a snapshot to Options.Live (on the writer's
// goroutine).
func (rt *runtime) publishLive(ended bool) {
	if rt.opts.Live == nil {
		return
	}
	rt.opts.Live(rt.live(ended))
}

// mergeHot merges two lists of hot keys (most first, ties by key text)
// into the n largest.
func mergeHot(a, b []operator.KeyState, n int) []operator.KeyState {
	if len(b) == 0 {
		return a
	}
	out := append(append([]operator.KeyState(nil), a...), b...)
	slices.SortStableFunc(out, func(x, y operator.KeyState) int {
		if x.Entries != y.Entries {
			return y.Entries - x.Entries
		}
		return strings.Compare(x.Key, y.Key)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// LiveGroup is the part of a snapshot (Live.Group) of one instance of a
// group run (docs/scale-out.md): the tasks it holds, its transactions and
// rebalances, what restoring tasks took, and per keyed task the lag of its
// repartition partition and the watermark each upstream task reported.
type LiveGroup struct {
	Group, Instance string
	// Topic is the repartition topic, Partitions its partition count.
	Topic      string
	Partitions int
	Sources    []LiveSourceTask
	Keyed      []LiveKeyedTask
	// Commits and Aborts count the instance's transactions, Rebalances its
	// assignment changes, Restores the tasks it started from a checkpoint
	// (RestoreBytes read in RestoreTime).
	Commits, Aborts, Rebalances, Restores int
	RestoreBytes                          int64
	RestoreTime                           time.Duration
}

// LiveSourceTask is a source task: one input partition.
type LiveSourceTask struct {
	Partition string // "topic/N"
	// Watermark is the watermark it reported to the keyed tasks (ms);
	// Idle whether it reported the partition idle.
	Watermark int64
	Idle      bool
	Records   int64 // records it routed (with those of earlier owners)
	// Lag is the records of the partition after its position (from the
	// last fetch's last stable offset); -1 when not known yet.
	Lag int64
	// Done: a bounded run read the partition to its end.
	Done bool
}

// LiveKeyedTask is a keyed task: one partition of the repartition topic.
type LiveKeyedTask struct {
	Partition int
	// Lag is the records of its repartition partition after its position;
	// -1 when not known yet.
	Lag int64
	// Nodes are its keyed nodes' watermarks, in graph order.
	Nodes []LiveNode
	Done  bool
}

// LiveNode is one keyed node of a keyed task.
type LiveNode struct {
	Name string // "dedup", "order_by" or the stage's name
	// Watermark is the node's watermark (ms): the minimum over Upstream.
	Watermark int64
	// Upstream is the watermark each task that feeds the node reported
	// (ms; changelog.WatermarkNone before it did): the input partitions
	// for the nodes the source feeds, the repartition partitions for the
	// others.
	Upstream []int64
}
