package group

import (
	"github.com/tidemark/tidemark/engine"

	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/task"
)

// live builds the instance's snapshot and hands it to Options.Live.
func (gr *groupRun) live(ended bool) {
	if gr.opts.Live == nil || gr.in == nil {
		return
	}
	l := &engine.Live{Pipeline: gr.plan.Spec.Name, Parallelism: 1, At: gr.opts.WallClock(), Ended: ended,
		OutOfOrderness: gr.plan.Spec.EventTime.OutOfOrderness.Ms(), IdleTimeout: gr.plan.Spec.EventTime.IdleTimeout.Ms(),
		Watermark: changelog.WatermarkNone, ProcessingTime: gr.opts.Clock()}
	lg := &engine.LiveGroup{Group: gr.group, Instance: gr.sum.Instance, Topic: gr.repart, Partitions: gr.P,
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
			kt := engine.LiveKeyedTask{Partition: e.key.index, Lag: lag, Done: e.kt.done()}
			for n := range gr.in.g.Nodes {
				ln := engine.LiveNode{Name: names[n], Watermark: e.kt.wm[n]}
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
		c.Add(rt.Counters())
		events, redeliveries := rt.Read()
		l.EventsRead += events
		l.Redeliveries += redeliveries
		lg.Sources = append(lg.Sources, engine.LiveSourceTask{Partition: e.src.name, Watermark: e.src.reported, Idle: e.src.reportedIdle,
			Records: events, Lag: lag, Done: e.src.ended})
		lp := engine.LivePartition{Name: e.src.name, Watermark: rt.Watermark(), MaxEventTime: changelog.WatermarkNone, ConsumerLag: lag, Records: events}
		if pt, ok := rt.Partition(); ok {
			lp.MaxEventTime, lp.LastArrival, lp.Idle = pt.MaxEventTime, pt.LastArrival, pt.Idle
		}
		l.Partitions = append(l.Partitions, lp)
	}
	if len(lg.Keyed) > 0 {
		l.Watermark = wm // the lowest watermark of the keyed nodes the instance holds
	}
	l.Quarantined, l.Duplicates, l.Conflicts, l.StaleVersions, l.Superseded, l.Deletes = c.Quarantined, c.Duplicates, c.Conflicts, c.StaleVersions, c.Superseded, c.Deletes
	for si, st := range gr.plan.Stages {
		l.Stages = append(l.Stages, engine.LiveStage{Name: st.Name, Counters: c.Stages[si]})
	}
	l.Checkpoints = engine.LiveCheckpoints{Enabled: true, Taken: gr.sum.Commits, LastAt: gr.lastCommitAt, LastDuration: gr.lastCommitDur, LastPause: gr.lastCommitDur}
	slices.SortFunc(l.Partitions, func(a, b engine.LivePartition) int {
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
