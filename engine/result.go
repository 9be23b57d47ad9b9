package engine

import (
	"maps"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/task"
)

// summary builds the run's Summary once every goroutine has stopped.
func (rt *runtime) summary() *Summary {
	c := &rt.cnt
	s := &Summary{
		Pipeline:          rt.plan.Spec.Name,
		Parallelism:       rt.par,
		EventsRead:        rt.events,
		Redeliveries:      rt.redeliver,
		Partitions:        rt.parts,
		FinalWatermark:    rt.tracker.Current(),
		Quarantined:       c.Quarantined,
		Duplicates:        c.Duplicates,
		Conflicts:         c.Conflicts,
		StaleVersions:     c.StaleVersions,
		Superseded:        c.Superseded,
		Deletes:           c.Deletes,
		FirstViolation:    c.First[0].Text,
		OutsideRange:      rt.outside,
		ResumedEvents:     rt.resumedEvents,
		Reference:         rt.refSummary(),
		Ledgers:           rt.ledgerSummaries(),
		DedupIDs:          rt.dedupIDs,
		DedupBytes:        rt.dedupMem,
		SinkNotes:         rt.sinkNotes(),
		ExchangePeakBytes: rt.exchangePeak,
	}
	if rt.disk != nil {
		d := &DiskStateSummary{Dir: rt.disk.dir, Memory: rt.disk.budget.Total, SentBytes: rt.disk.sent, Checkpoints: rt.disk.cks, Restore: rt.disk.restore}
		for _, t := range rt.tasks {
			cs := t.ColdStats()
			d.Reads += cs.Reads
			d.Hits += cs.Hits
			d.Writes += cs.Writes
			d.FilterSkips += cs.Skips
			d.JoinLoads += cs.JoinLoads
			d.JoinRowsRead += cs.JoinRowsRead
			d.JoinRowsWritten += cs.JoinRowsWritten
			d.WindowWrites += cs.WindowWrites
			d.WindowReads += cs.WindowReads
			d.WindowFiredWrites += cs.WindowFiredWrites
			d.WindowFiredReads += cs.WindowFiredReads
		}
		s.DiskState = d
	}
	var stageRules [][]RuleCount
	s.Rules, stageRules = SplitRules(c.ByRule, len(rt.plan.Stages))
	if ck := rt.ck; ck != nil {
		s.Checkpoints = CheckpointSummary{Dir: ck.dir, Restored: ck.restored, Taken: ck.taken, Last: ck.lastID,
			LastBytes: ck.bytes, LastDuration: ck.duration, Total: ck.total, Bytes: ck.allBytes, Longest: ck.longest,
			Sections: ck.sections, Deltas: ck.deltas}
	}
	if rt.events > c.Quarantined { // fields absent from the records that decoded, when some did
		change := rt.plan.Changes != nil
		for i, seen := range rt.present {
			// A change stream's metadata fields are no misspelling
			// (__unchanged is null in most changes).
			if n := rt.plan.SourceSchema.Fields[i].Name; !seen && !(change && record.IsChangeField(n)) {
				s.AbsentFields = append(s.AbsentFields, n)
			}
		}
	}
	for i, st := range rt.stages {
		ss := StageSummary{Name: st.p.Name, Counters: c.Stages[i], FirstQuarantine: c.First[1+i].Text, Rules: stageRules[i]}
		if i < len(rt.stats) {
			ss.OpenWindows, ss.StateBytes = rt.stats[i].OpenWindows, rt.stats[i].StateBytes
			ss.Entries, ss.Keys = rt.stats[i].Entries, rt.stats[i].Keys
		}
		if i < len(rt.opGlob.Ops) {
			ss.PartlyTooLate, ss.SkippedWindows = rt.opGlob.Ops[i].PartlyTooLate, rt.opGlob.Ops[i].SkippedWindows
		}
		for _, in := range st.p.Union {
			// A union stage's rows are those of the stages it unites.
			ss.RowsEmitted += c.Stages[in].RowsEmitted
			ss.FinalRows += c.Stages[in].FinalRows
		}
		s.Stages = append(s.Stages, ss)
	}
	return s
}

// SplitRules splits the counters' ByRule into the pipeline-level rules
// and each of stages stages' rules (task.StageRuleKey), each sorted by
// rule name.
func SplitRules(byRule map[string]int64, stages int) (pipeline []RuleCount, perStage [][]RuleCount) {
	perStage = make([][]RuleCount, stages)
	for _, k := range slices.Sorted(maps.Keys(byRule)) {
		si, rule, ok := task.SplitRuleKey(k)
		switch {
		case !ok:
			pipeline = append(pipeline, RuleCount{Rule: rule, Count: byRule[k]})
		case si < stages:
			perStage[si] = append(perStage[si], RuleCount{Rule: rule, Count: byRule[k]})
		}
	}
	for _, r := range perStage {
		slices.SortFunc(r, func(a, b RuleCount) int { return strings.Compare(a.Rule, b.Rule) })
	}
	return pipeline, perStage
}
