package engine

import (
	"fmt"
	"io"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// Counters are a stage's record counters (task.StageCounters). Every
// input record (weight +1) ends in exactly one of Quarantined, Filtered,
// OnTime, LateAccepted or TooLate*. Retractions (weight −1: a superseded
// version, or an upstream update_before/delete) are counted apart.
type Counters = task.StageCounters

// StageSummary reports one stage.
type StageSummary struct {
	Name string
	Counters
	OpenWindows int // windows still holding state at the end (0 after a bounded run)
	// PartlyTooLate counts records (sliding windows) counted as on time or
	// late accepted that were too late for some of their windows;
	// SkippedWindows counts those window updates.
	PartlyTooLate  int64
	SkippedWindows int64
	StateBytes     int64 // estimated operator state at the end
	// Entries and Keys are what the stage's state still holds at the end:
	// live (window, key) instances and distinct keys; for a join stage,
	// buffered rows (both sides) and keys holding them. After a bounded
	// run (watermark +∞) both are 0: nothing outlives its last match.
	Entries, Keys int
	// FirstQuarantine is the reason of the first quarantined record, if any.
	FirstQuarantine string
	// Rules counts the stage's Quarantined by the rule the record broke
	// ("join_key": a null or unusable join key; "join_bound": an interval
	// join's bound; "expression": a filter or derived field that failed;
	// "event_time": a null event time from upstream; "aggregate"), sorted
	// by rule name.
	Rules []RuleCount
}

// Summary reports a run.
type Summary struct {
	Pipeline string
	// Parallelism is the number of tasks the run used.
	Parallelism int
	EventsRead  int64 // records delivered by the source (including redeliveries), over every run of a resumed pipeline
	// ResumedEvents is how many of EventsRead were read before the
	// checkpoint this run resumed from (0 for a fresh start); the run's
	// throughput counts the others.
	ResumedEvents  int64
	Redeliveries   int64 // records the source marked as redelivered copies
	Partitions     int   // source partitions seen
	FinalWatermark int64 // ms; changelog.WatermarkInfinity after a bounded input
	Wall           time.Duration
	CPU            time.Duration // process CPU time (user+system) during the run
	Stages         []StageSummary
	// AbsentFields are source fields the pipeline uses that were null or
	// missing in every record read: usually a misspelt name.
	AbsentFields []string

	// Before the stages (counted once, not per stage):
	Quarantined   int64 // invalid records (decode, event time, contract rules, dedup key)
	Duplicates    int64 // redeliveries of an event id with the same payload (not applied)
	Conflicts     int64 // deliveries of a known event id with a different payload (to the conflict output)
	StaleVersions int64 // state events not newer than their entity's current version (ignored)
	Superseded    int64 // versions replaced by a newer one (retracted from the stages)
	Deletes       int64 // a change stream's deletes (each retracts its key's row, if any)
	OutsideRange  int64 // records outside Options.Range (a backfill), skipped
	// Reference reports the reference data (spec.Reference), nil without.
	Reference      *ReferenceSummary
	DedupIDs       int // event ids remembered at the end
	DedupBytes     int // dedup table bytes at the end
	FirstViolation string
	// Rules counts the quarantined records of Quarantined by the rule
	// they broke (contract rules, "required", "dedup", "order_by"), sorted
	// by rule name; records that failed to decode have no rule. A stage's
	// rules are in its StageSummary.Rules.
	Rules []RuleCount

	// ExchangePeakBytes is the most bytes the packets between tasks held
	// at once (task.Packet.Bytes of every packet a task sent to a node of
	// a task, itself included, and the node had not yet taken): the
	// exchange's memory, beside the rounds' batches and the state. 0 at
	// one task (push mode: no packets).
	ExchangePeakBytes int64

	// Checkpoints reports checkpoints (zero without them).
	Checkpoints CheckpointSummary
	// DiskState reports the disk backend (nil on the memory backend).
	DiskState *DiskStateSummary
	// Stopped is true when the run was stopped (context cancelled) and
	// took a final checkpoint instead of reaching the end of its input.
	Stopped bool
	// Ledgers reports the postgres ledger sinks (mode ledger), in stage
	// and sink order.
	Ledgers []LedgerSummary
	// SinkNotes are what sinks did besides writing output (sink.Noter): a
	// table emptied at a fresh start with the rows removed, a table
	// replaced, the rows of a table tidemark did not create kept; each
	// prefixed by the sink ("revenue: sinks[0]: emptied table …").
	SinkNotes []string
	// Group reports the instance of a group run (source.assignment:
	// group); nil otherwise. The counters above are then those of the
	// tasks the instance held at the end, each with the counts of its
	// earlier owners.
	Group *GroupSummary
}

// LedgerSummary is what one ledger sink did in this run. Applied +
// Duplicates + Conflicts is the number of events the stage accepted.
type LedgerSummary struct {
	Sink       string // "<stage>: sinks[i]"
	Applied    int64  // new event ids: inserted and added to the aggregates
	Duplicates int64  // event ids already in the ledger with the same payload hash: nothing changed
	Conflicts  int64  // event ids in the ledger with another payload hash: to the conflict output
}

// CheckpointSummary reports a run's checkpoints.
type CheckpointSummary struct {
	Dir          string
	Restored     int64         // the checkpoint the run resumed from; 0 for a fresh start
	Taken        int           // checkpoints taken by this run
	Last         int64         // id of the newest checkpoint
	LastBytes    int           // bytes it wrote: its manifest and its new segment
	LastDuration time.Duration // how long it took (prepare, write, commit)
	Total        time.Duration // time spent in checkpoints by this run
	// Bytes is what this run's checkpoints wrote in all (manifests and
	// segments); Longest the longest checkpoint.
	Bytes   int64
	Longest time.Duration
	// Sections counts the key-group sections this run's checkpoints
	// wrote (each changed key group of each node, and the sections
	// compaction copied), Deltas those that were delta sections (the ids a
	// key group's dedup state added since its previous section).
	Sections, Deltas int
}

// DiskStateSummary reports the disk backend's work (docs/state.md).
type DiskStateSummary struct {
	// Dir is the state directory (state.dir, or the one the run chose);
	// Memory is state.memory, bytes.
	Dir    string
	Memory int64
	// Reads counts the keys looked up in the stores (the hot tiers'
	// misses where the store may hold the key; a dedup id is looked up in
	// each bucket its key group's filters do not rule out), Hits the ids
	// found there, Writes the entries written back, FilterSkips the
	// buckets a dedup lookup did not ask because their filter says the id
	// was never written there.
	Reads, Hits, Writes, FilterSkips int64
	// JoinLoads counts the keys the interval joins loaded back from
	// the stores (a row of a key the hot tier had let go), JoinRowsRead
	// the rows those loads read, JoinRowsWritten the rows the joins wrote
	// back.
	JoinLoads, JoinRowsRead, JoinRowsWritten int64
	// WindowWrites counts the window stages' partial aggregates written
	// to the stores (a hot tier full), WindowReads those read back (a
	// window firing, a retraction); WindowFiredWrites and
	// WindowFiredReads count the instances of fired windows waiting for
	// late rows among them (read back by a late row or the close).
	WindowWrites, WindowReads           int64
	WindowFiredWrites, WindowFiredReads int64
	// SentBytes is what this run's checkpoints sent of the stores' tables
	// (new tables only; the rest are referenced).
	SentBytes int64
	// Checkpoints lists this run's checkpoints in order, each with its
	// synchronous pause and the bytes of tables it sent.
	Checkpoints []DiskCheckpoint
	// Restore is what the run's restore took from its checkpoint (zero
	// for a run that restored none).
	Restore DiskRestore
}

// DiskRestore counts what a restore of the disk backend took from the
// checkpoint's stores: Stores is the stores it made (one per task and
// checkpoint store whose key groups overlap), Excised those of them that
// took only part of a checkpoint store's key groups (the rest removed by
// a range excise); Tables and TableBytes are the table files taken
// (only those holding a key of the task's key groups: a rescale takes
// only the tables of the key groups that move to a task); CopiedBytes
// the bytes of them copied because the checkpoint directory is on
// another file system (the rest are hard links, no bytes copied);
// Duration the wall time of making and opening the stores (links or
// copies, excises, pebble's opens: what a restore of the state costs
// before the first record, the checkpoint's manifest and sections not
// counted).
type DiskRestore struct {
	Stores, Excised int
	Tables          int
	TableBytes      int64
	CopiedBytes     int64
	Duration        time.Duration
}

// DiskCheckpoint is one checkpoint of the disk backend: ID is its
// number; Pause is the synchronous part, the longest of the tasks' times
// from the round's end to their stores' snapshots started (what holds
// back the task's next round); Sent is the bytes of the tables new since
// the checkpoint before (what it sent to the checkpoint store), a measure
// of the state changed in the interval.
//
// WriteBack and Wait split the Pause of the task that took it (the
// longest task's; the rest is the snapshots' start, microseconds):
// WriteBack is the task's hot tiers' dirty entries committed to its
// stores (task.Task.Flush: pebble batches into the memtable, including
// any wait for a memtable flush that a full memtable forces); Wait the
// time the task's stores waited for the snapshots of the checkpoint
// before, still in progress — at this start, or in commits since that
// snapshot's start whose overlay outgrew half a memtable
// (disk.Store.StartSnapshot).
//
// Flush, Checkpoint and List are the snapshots' parts, in the background
// of the tasks (disk.SnapshotTimes, the longest store's each): the
// memtables written to tables, pebble's checkpoint (hard links, MANIFEST
// and OPTIONS copied; a store syncs nothing, state/disk/nosync.go) and
// the files listed with their key groups. Snapshot is the checkpoint
// writer's wait for them; Upload its time to sync the new tables to
// stable storage and put them into the checkpoint store (a hard link each
// on one file system), before the manifest. With two or more tasks both
// run on the writer's goroutine while the tasks go on with the next
// rounds (up to the rounds in flight); with one task the writer's part
// runs on the router's goroutine, so there they hold back records too.
type DiskCheckpoint struct {
	ID    int64
	Pause time.Duration
	Sent  int64

	WriteBack, Wait         time.Duration
	Flush, Checkpoint, List time.Duration
	Snapshot, Upload        time.Duration
}

// ReferenceSummary reports the reference data.
type ReferenceSummary struct {
	Path    string // the file, or "kafka topic <name>"
	Version string // "sha256:" + 12 hex digits of the file's content (a topic: of its surviving records)
	Keys    int    // keys in the file
	Misses  int64  // records whose key the file lacks (their reference fields are null)
}

// RuleCount is how many records one rule quarantined.
type RuleCount struct {
	Rule  string
	Count int64
}

// EventsPerSecond is EventsRead over wall time.
func (s *Summary) EventsPerSecond() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.EventsRead-s.ResumedEvents) / s.Wall.Seconds()
}

// WriteText prints the summary for people, in the zone loc.
func (s *Summary) WriteText(w io.Writer, loc *time.Location) {
	wm := "none"
	switch s.FinalWatermark {
	case changelog.WatermarkInfinity:
		wm = "+inf (end of input: every window fired and closed)"
	case changelog.WatermarkNone:
		if s.Group != nil {
			// A group instance's tasks each have their own watermark
			// (docs/scale-out.md); there is no one for the instance.
			wm = "per task (a group instance has no single watermark)"
		}
	default:
		wm = row.FormatTime(s.FinalWatermark, loc)
	}
	fmt.Fprintf(w, "pipeline %s\n", s.Pipeline)
	if g := s.Group; g != nil {
		fmt.Fprintf(w, "  instance             %12s  of group %s (repartition topic %s, %d partitions)\n", g.Instance, g.Group, g.Topic, g.Partitions)
		fmt.Fprintf(w, "  tasks at the end     %12d  (input partitions %v, repartition partitions %v; the counts below are theirs, with their earlier owners')\n", len(g.Sources)+len(g.Keyed), g.Sources, g.Keyed)
		fmt.Fprintf(w, "  transactions         %12d  committed, %d aborted by rebalances; %d assignment changes\n", g.Commits, g.Aborts, g.Rebalances)
		if g.Rejoins > 0 {
			fmt.Fprintf(w, "  group rejoins        %12d  (the group session lost: a broker pause, an expired member)\n", g.Rejoins)
		}
		if g.Restores > 0 {
			fmt.Fprintf(w, "  restored tasks       %12d  (%d bytes in %s)\n", g.Restores, g.RestoreBytes, g.RestoreTime.Round(time.Microsecond))
		}
	} else if s.Parallelism > 0 {
		fmt.Fprintf(w, "  parallelism          %12d  (tasks, each owning a range of the key groups)\n", s.Parallelism)
	}
	fmt.Fprintf(w, "  events read          %12d", s.EventsRead)
	if s.Redeliveries > 0 {
		fmt.Fprintf(w, "  (%d redelivered copies)", s.Redeliveries)
	}
	if s.ResumedEvents > 0 {
		fmt.Fprintf(w, "  (%d by this run; the counts below include the runs before the restored checkpoint)", s.EventsRead-s.ResumedEvents)
	}
	fmt.Fprintf(w, "\n  source partitions    %12d\n", s.Partitions)
	if s.Duplicates+s.Conflicts+int64(s.DedupIDs) > 0 {
		fmt.Fprintf(w, "  duplicates           %12d  (same event id and payload: not applied)\n", s.Duplicates)
		fmt.Fprintf(w, "  conflicts            %12d  (same event id, other payload: to the conflict output)\n", s.Conflicts)
	}
	if r := s.Reference; r != nil {
		fmt.Fprintf(w, "  reference data       %s (%s, %d keys; %d records with an unknown key)\n", r.Path, r.Version, r.Keys, r.Misses)
	}
	if s.OutsideRange > 0 {
		fmt.Fprintf(w, "  outside the range    %12d  (event time outside the backfill's range: skipped)\n", s.OutsideRange)
	}
	if s.StaleVersions+s.Superseded > 0 {
		fmt.Fprintf(w, "  stale versions       %12d  (not newer than the entity's current version: ignored)\n", s.StaleVersions)
		fmt.Fprintf(w, "  superseded versions  %12d  (retracted when a newer version arrived)\n", s.Superseded)
	}
	if s.Deletes > 0 {
		fmt.Fprintf(w, "  deletes              %12d  (a change stream's deletes: the key's row retracted)\n", s.Deletes)
	}
	q, first := s.Quarantined, s.FirstViolation
	for _, st := range s.Stages {
		q += st.Quarantined
		if first == "" {
			first = st.FirstQuarantine
		}
	}
	fmt.Fprintf(w, "  quarantined          %12d", q)
	if first != "" {
		fmt.Fprintf(w, "  (first: %s)", first)
	}
	fmt.Fprintln(w)
	for _, r := range s.Rules {
		fmt.Fprintf(w, "    rule %s: %d\n", r.Rule, r.Count)
	}
	for _, st := range s.Stages {
		for _, r := range st.Rules {
			fmt.Fprintf(w, "    stage %s, rule %s: %d\n", st.Name, r.Rule, r.Count)
		}
	}
	for _, st := range s.Stages {
		if len(s.Stages) > 1 {
			fmt.Fprintf(w, "  stage %s\n", st.Name)
		}
		if st.Filtered > 0 {
			fmt.Fprintf(w, "  filtered out         %12d\n", st.Filtered)
		}
		fmt.Fprintf(w, "  on time              %12d\n", st.OnTime)
		fmt.Fprintf(w, "  late, accepted       %12d\n", st.LateAccepted)
		fmt.Fprintf(w, "  too late, side output%12d\n", st.TooLateSideOutput)
		fmt.Fprintf(w, "  too late, dropped    %12d\n", st.TooLateDropped)
		if st.PartlyTooLate > 0 {
			fmt.Fprintf(w, "  too late for some of their windows %d  (%d window updates dropped)\n", st.PartlyTooLate, st.SkippedWindows)
		}
		if st.Retractions > 0 {
			fmt.Fprintf(w, "  retractions          %12d  (%d unmatched, %d after their window closed)\n", st.Retractions, st.RetractMissing, st.RetractTooLate)
		}
		fmt.Fprintf(w, "  rows emitted         %12d  (%d final)\n", st.RowsEmitted, st.FinalRows)
	}
	for _, l := range s.Ledgers {
		fmt.Fprintf(w, "  ledger %s: %d applied, %d already in the ledger, %d conflicts\n", l.Sink, l.Applied, l.Duplicates, l.Conflicts)
	}
	for _, n := range s.SinkNotes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  final watermark      %s\n", wm)
	if c := s.Checkpoints; c.Dir != "" {
		fmt.Fprintf(w, "  checkpoints          %12d  taken by this run (last: %d, %d bytes, %s", c.Taken, c.Last, c.LastBytes, c.LastDuration.Round(time.Microsecond))
		if c.Taken > 1 {
			fmt.Fprintf(w, "; mean %d bytes, longest %s", c.Bytes/int64(c.Taken), c.Longest.Round(time.Microsecond))
		}
		fmt.Fprint(w, ")")
		if c.Restored > 0 {
			fmt.Fprintf(w, "; resumed from checkpoint %d", c.Restored)
		}
		fmt.Fprintln(w)
	}
	if d := s.DiskState; d != nil {
		fmt.Fprintf(w, "  state backend        disk (state.memory %s, state.dir %s)\n", spec.Bytes(d.Memory), d.Dir)
	}
	if d := s.DiskState; d != nil && d.Restore.Stores > 0 {
		r := d.Restore
		fmt.Fprintf(w, "  state restored       %12d  tables, %d bytes (%d copied, the rest linked) into %d stores, %d of them excised to their key groups\n",
			r.Tables, r.TableBytes, r.CopiedBytes, r.Stores, r.Excised)
	}
	if s.EventsRead > 0 && s.Quarantined == s.EventsRead {
		// One reason, not a warning per field: no record decoded, so every
		// field is absent from the records that did.
		why := ""
		if len(s.Rules) > 0 {
			top := s.Rules[0]
			for _, r := range s.Rules[1:] {
				if r.Count > top.Count {
					top = r
				}
			}
			why = fmt.Sprintf(", %d of them by rule %s", top.Count, top.Rule)
		}
		fmt.Fprintf(w, "  warning: every record read was quarantined (%d of %d%s; first: %s): does source.format or the schema match the records? quarantine.max_fraction fails such a run\n",
			s.Quarantined, s.EventsRead, why, s.FirstViolation)
	}
	for _, f := range s.AbsentFields {
		fmt.Fprintf(w, "  warning: field %q was null or missing in every record (misspelt?)\n", f)
	}
	fmt.Fprintf(w, "  wall time            %12s\n", s.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "  throughput           %12.0f events/s", s.EventsPerSecond())
	if s.CPU > 0 {
		fmt.Fprintf(w, "  (%.0f events/s per CPU-second)", float64(s.EventsRead-s.ResumedEvents)/s.CPU.Seconds())
	}
	fmt.Fprintln(w)
}

// GroupSummary reports one instance of a group run.
type GroupSummary struct {
	Group, Instance string
	// Topic is the repartition topic; Partitions its partition count.
	Topic      string
	Partitions int
	// Sources and Keyed are the tasks the instance held at the end.
	Sources, Keyed []int
	// Commits and Aborts count the instance's transactions; Rebalances
	// the assignment changes it went through; Restores the tasks it
	// started from a checkpoint, RestoreBytes the bytes of their
	// checkpoints (manifests and sections) and RestoreTime the time
	// reading and applying them took (not opening the tasks' sinks).
	Commits, Aborts, Rebalances, Restores int
	// Rejoins counts the times the instance lost its group session (a
	// broker pause, an expired member) and joined the group again.
	Rejoins      int
	RestoreBytes int64
	RestoreTime  time.Duration
}
