package engine

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/task"
)

// writerLoop is the writer: round after round, it waits for the router's
// part and every task's, writes their outputs to the sinks in step order,
// adds their counts to the totals, and takes the checkpoint the round
// asks for. It hands the round's buffers back to their owners.
func (rt *runtime) writerLoop(ctx context.Context, pl *pipeline) error {
	pending := map[uint64][]*taskOut{}
	for {
		var ro *routerOut
		select {
		case ro = <-pl.fromRoute:
		case <-pl.done:
			return nil
		}
		id := ro.round.ID
		for len(pending[id]) < rt.par {
			select {
			case o := <-pl.toWriter:
				pending[o.round] = append(pending[o.round], o)
			case <-pl.done:
				return nil
			}
		}
		outs := make([]*taskOut, rt.par)
		for _, o := range pending[id] {
			outs[o.task] = o
		}
		delete(pending, id)
		if err := rt.finishRound(ctx, ro, outs); err != nil {
			return err
		}
		last := ro.flags.last
		for i, o := range outs {
			pl.taskFree[i] <- o
		}
		releaseBatches(pl, ro)
		pl.roundFree <- ro
		if last {
			return nil
		}
	}
}

// finishRound writes a round's outputs, then flushes, checkpoints and
// publishes what the round asks for.
func (rt *runtime) finishRound(ctx context.Context, ro *routerOut, outs []*taskOut) error {
	if err := rt.writeRound(ctx, ro, outs); err != nil {
		return err
	}
	rt.written++
	if ro.flags.snapshot {
		if err := rt.takeCheckpoint(ctx, ro, outs); err != nil {
			return err
		}
	} else if rt.ck == nil && (rt.written%rt.opts.FlushEvery == 0 || ro.flags.last) {
		if err := rt.flush(ctx); err != nil {
			return err
		}
	}
	if ro.flags.stats || ro.flags.last {
		rt.absorbStats(ro, outs)
		rt.publishLive(ro.flags.last)
	}
	return nil
}

// writeRound writes one round's logs — the router's, then each task's
// nodes' — merged by step (ties in that order), and adds up the counts.
func (rt *runtime) writeRound(ctx context.Context, ro *routerOut, outs []*taskOut) error {
	logs := make([]*task.Log, 0, 1+len(outs)*len(rt.g.Nodes))
	logs = append(logs, ro.log)
	rt.cnt.Add(&ro.cnt)
	for _, o := range outs {
		logs = append(logs, o.logs...)
		rt.cnt.Add(&o.cnt)
	}
	pos := make([]int, len(logs))
	// The pending run of rows for one output, written with one Write.
	runOut := task.Output(-1)
	rows := rt.wrows[:0]
	flushRows := func() error {
		if len(rows) == 0 {
			return nil
		}
		err := rt.writeRows(ctx, runOut, rows)
		clear(rows)
		rows = rows[:0]
		return err
	}
	for {
		// The log with the least head (step, log index), and the head
		// after which another log's entries come.
		best, next := -1, -1
		for k, l := range logs {
			if pos[k] == len(l.Entries) {
				continue
			}
			switch s := l.Entries[pos[k]].Step; {
			case best < 0 || s < logs[best].Entries[pos[best]].Step:
				next, best = best, k
			case next < 0 || s < logs[next].Entries[pos[next]].Step:
				next = k
			}
		}
		if best < 0 {
			break
		}
		l := logs[best]
		limit := ^uint64(0)
		if next >= 0 {
			limit = logs[next].Entries[pos[next]].Step
			if next < best {
				limit-- // equal steps: the lower log first
			}
		}
		for pos[best] < len(l.Entries) && l.Entries[pos[best]].Step <= limit {
			e := &l.Entries[pos[best]]
			pos[best]++
			if e.Kind != task.EntryRow || e.Out != runOut {
				if err := flushRows(); err != nil {
					return err
				}
			}
			switch e.Kind {
			case task.EntryRow:
				runOut = e.Out
				rows = append(rows, l.Rows[e.A])
			case task.EntryRecord:
				runOut = -1
				if err := rt.writeRecord(ctx, e.Out, l.Record(e)); err != nil {
					return err
				}
			case task.EntryLedger:
				runOut = -1
				ev := &l.Ledger[e.A]
				for _, ls := range rt.stages[ev.Stage].ledger {
					ls.add(ev)
				}
			}
		}
	}
	if err := flushRows(); err != nil {
		return err
	}
	rt.wrows = rows
	return rt.applyLedgers(ctx, ledgerBatch)
}

// WriteRows implements task.Writer (push mode): rows of one stage, with
// the lineage value appended when the run records lineage.
func (rt *runtime) WriteRows(out task.Output, rows []changelog.Row) error {
	if rt.linVal.Kind == row.KindString {
		rt.linRows = append(rt.linRows[:0], rows...)
		clear(rt.linVals)
		rt.linVals = rt.linVals[:0]
		for i := range rows {
			rt.linVals = append(rt.linVals, rows[i].Values...)
			if at := rt.g.LineageAt; at != nil {
				rt.linVals = append(rt.linVals, at(&rows[i]))
			} else {
				rt.linVals = append(rt.linVals, rt.linVal)
			}
		}
		off := 0
		for i := range rt.linRows {
			n := len(rows[i].Values) + 1
			rt.linRows[i].Values = rt.linVals[off : off+n : off+n]
			off += n
		}
		rows = rt.linRows
	}
	return rt.writeRows(rt.wctx, out, rows)
}

// WriteRecord implements task.Writer (push mode).
func (rt *runtime) WriteRecord(out task.Output, rec []byte) error {
	return rt.writeRecord(rt.wctx, out, rec)
}

// WriteLedger implements task.Writer (push mode).
func (rt *runtime) WriteLedger(ev *task.LedgerEvent) {
	for _, ls := range rt.stages[ev.Stage].ledger {
		ls.add(ev)
	}
}

// writeRows hands rows to every result sink of the output's stage.
func (rt *runtime) writeRows(ctx context.Context, out task.Output, rows []changelog.Row) error {
	si := out.Stage()
	st := rt.stages[si]
	for _, s := range st.sinks {
		if err := s.Write(ctx, rows); err != nil {
			return fmt.Errorf("%s: sink: %w", st.p.Name, err)
		}
	}
	for _, s := range st.unionSinks {
		if err := s.Write(ctx, rows); err != nil {
			return fmt.Errorf("%s: sink of a union: %w", st.p.Name, err)
		}
	}
	return nil
}

// writeRecord hands a side-output record to its sink.
func (rt *runtime) writeRecord(ctx context.Context, out task.Output, rec []byte) error {
	var s sink.Records
	var what string
	switch out {
	case task.OutQuarantine:
		s, what = rt.quarantine, "quarantine sink"
	case task.OutConflicts:
		s, what = rt.conflictS, "conflicts sink"
	default:
		st := rt.stages[out.Stage()]
		if out == task.LateOf(out.Stage()) {
			s, what = st.late, st.p.Name+": late sink"
		} else {
			s, what = st.contrib, st.p.Name+": contributions sink"
		}
	}
	if s == nil {
		return nil
	}
	if err := s.WriteRecord(ctx, rec); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// flush makes every sink's output durable (runs without checkpoints).
func (rt *runtime) flush(ctx context.Context) error {
	// Ledger conflicts go to the conflict output, flushed below.
	if err := rt.applyLedgers(ctx, 0); err != nil {
		return err
	}
	for _, st := range rt.stages {
		for _, s := range st.sinks {
			if err := s.Flush(ctx); err != nil {
				return fmt.Errorf("%s: sink: %w", st.p.Name, err)
			}
		}
		if st.late != nil {
			if err := st.late.Flush(ctx); err != nil {
				return fmt.Errorf("%s: late sink: %w", st.p.Name, err)
			}
		}
		if st.contrib != nil {
			if err := st.contrib.Flush(ctx); err != nil {
				return fmt.Errorf("%s: contributions sink: %w", st.p.Name, err)
			}
		}
	}
	if rt.quarantine != nil {
		if err := rt.quarantine.Flush(ctx); err != nil {
			return fmt.Errorf("quarantine sink: %w", err)
		}
	}
	if rt.conflictS != nil {
		if err := rt.conflictS.Flush(ctx); err != nil {
			return fmt.Errorf("conflicts sink: %w", err)
		}
	}
	return nil
}

// absorbStats keeps the newest state sizes and globals of a round that
// reported them.
func (rt *runtime) absorbStats(ro *routerOut, outs []*taskOut) {
	if ro.live != nil {
		rt.rtLive = *ro.live
	}
	var globals []task.Globals
	stats := make([]task.StageStats, len(rt.plan.Stages))
	ids, mem := 0, 0
	for _, o := range outs {
		globals = append(globals, o.globals)
		for i, s := range o.stats {
			a := &stats[i]
			a.OpenWindows = max(a.OpenWindows, s.OpenWindows)
			a.Entries += s.Entries
			a.Keys += s.Keys
			a.StateBytes += s.StateBytes
			a.RowsEmitted += s.RowsEmitted
			a.PartlyTooLate += s.PartlyTooLate
			a.SkippedWindows += s.SkippedWindows
			a.HotKeys = mergeHot(a.HotKeys, s.HotKeys, rt.opts.HotKeys)
		}
		ids += o.dedupIDs
		mem += o.dedupMem
	}
	rt.stats, rt.dedupIDs, rt.dedupMem = stats, ids, mem
	rt.opGlob = task.SumGlobals(globals)
}
