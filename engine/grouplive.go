package engine

import (
	"slices"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/task"
)

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

// live builds the instance's snapshot and hands it to Options.Live.
func (gr *groupRun) live(ended bool) {
	if gr.opts.Live == nil || gr.in == nil {
		return
	}
	l := &Live{Pipeline: gr.plan.Spec.Name, Parallelism: 1, At: gr.opts.WallClock(), Ended: ended,
		OutOfOrderness: gr.plan.Spec.EventTime.OutOfOrderness.Ms(), IdleTimeout: gr.plan.Spec.EventTime.IdleTimeout.Ms(),
		Watermark: changelog.WatermarkNone, ProcessingTime: gr.opts.Clock()}
	lg := &LiveGroup{Group: gr.group, Instance: gr.sum.Instance, Topic: gr.repart, Partitions: gr.P,
		Commits: gr.sum.Commits, Aborts: gr.sum.Aborts, Rebalances: gr.sum.Rebalances, Restores: gr.sum.Restores,
		RestoreBytes: gr.sum.RestoreBytes, RestoreTime: gr.sum.RestoreTime}
	c := task.NewCounters(len(gr.plan.Stages))
	names := make([]string, len(gr.in.g.Nodes))
	for i, n := range gr.in.g.Nodes {
		switch n.Kind {
		case task.KindDedup:
			names[i] = "dedup"
		case task.KindOrder:
			names[i] = "order_by"
		default:
			names[i] = gr.plan.Stages[n.Stage].Name
		}
	}
	wm := changelog.WatermarkInfinity
	for _, e := range gr.in.sortedTasks() {
		lag := int64(-1)
		if end, ok := gr.ends[e.key]; ok {
			lag = max(0, end-gr.pos(e.key))
		}
		if e.kt != nil {
			c.Add(&e.kt.cnt)
			kt := LiveKeyedTask{Partition: e.key.index, Lag: lag, Done: e.kt.done()}
			for n := range gr.in.g.Nodes {
				ln := LiveNode{Name: names[n], Watermark: e.kt.wm[n]}
				for _, r := range e.kt.reps[n] {
					w := changelog.WatermarkNone
					if r.seen {
						w = r.wm
					}
					ln.Upstream = append(ln.Upstream, w)
				}
				kt.Nodes = append(kt.Nodes, ln)
				wm = min(wm, e.kt.wm[n])
			}
			lg.Keyed = append(lg.Keyed, kt)
			continue
		}
		rt := e.src.rt
		c.Add(rt.counters())
		events, redeliveries := rt.read()
		l.EventsRead += events
		l.Redeliveries += redeliveries
		lg.Sources = append(lg.Sources, LiveSourceTask{Partition: e.src.name, Watermark: e.src.reported, Idle: e.src.reportedIdle,
			Records: events, Lag: lag, Done: e.src.ended})
		lp := LivePartition{Name: e.src.name, Watermark: rt.watermark(), MaxEventTime: changelog.WatermarkNone, ConsumerLag: lag, Records: events}
		if pt, ok := rt.partition(); ok {
			lp.MaxEventTime, lp.LastArrival, lp.Idle = pt.MaxEventTime, pt.LastArrival, pt.Idle
		}
		l.Partitions = append(l.Partitions, lp)
	}
	if len(lg.Keyed) > 0 {
		l.Watermark = wm // the lowest watermark of the keyed nodes the instance holds
	}
	l.Quarantined, l.Duplicates, l.Conflicts, l.StaleVersions, l.Superseded, l.Deletes = c.Quarantined, c.Duplicates, c.Conflicts, c.StaleVersions, c.Superseded, c.Deletes
	for si, st := range gr.plan.Stages {
		l.Stages = append(l.Stages, LiveStage{Name: st.Name, Counters: c.Stages[si]})
	}
	l.Checkpoints = LiveCheckpoints{Enabled: true, Taken: gr.sum.Commits, LastAt: gr.lastCommitAt, LastDuration: gr.lastCommitDur, LastPause: gr.lastCommitDur}
	slices.SortFunc(l.Partitions, func(a, b LivePartition) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	l.Group = lg
	gr.opts.Live(l)
}
