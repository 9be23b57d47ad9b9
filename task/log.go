package task

import (
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// Log is what one node of one task (or the runner) outputs in a round, in
// step order: result rows, side-output records and ledger events, each
// tagged with its step and Output. The runner merges the logs of a round
// by step and writes them to the sinks. A Log owns its memory; Reset
// keeps the capacity.
type Log struct {
	Entries []Entry
	// Rows are the result rows (their Values owned by the log, the lineage
	// value last when the run records lineage, or — a select row made
	// beside the router, Sender.SelectPrepared — held by the round's
	// source batch; Key shared with the operator's key table, which never
	// changes a key's values).
	Rows []changelog.Row
	// Bytes holds the records (JSON objects) back to back.
	Bytes []byte
	// Ledger holds the events for postgres ledger sinks.
	Ledger []LedgerEvent
	vals   []row.Value
	// one is the row row hands to W: a field, not a local, which passing
	// it through the interface would move to the heap per row.
	one [1]changelog.Row

	// W, when set, takes every output at once instead of the log (one
	// task in push mode, whose outputs are in step order as they come):
	// nothing is copied or kept. Err holds W's first error.
	W   Writer
	err error
}

// Writer takes a log's outputs at once (Log.W). The rows and the record
// are only valid during the call; rows come without the lineage value.
type Writer interface {
	WriteRows(out Output, rows []changelog.Row) error
	WriteRecord(out Output, rec []byte) error
	WriteLedger(ev *LedgerEvent)
}

// Err returns the first error of the log's Writer.
func (l *Log) Err() error { return l.err }

func (l *Log) fail(err error) {
	if err != nil && l.err == nil {
		l.err = err
	}
}

// ledger appends a ledger event.
func (l *Log) ledger(step uint64, ev LedgerEvent) {
	if l.W != nil {
		l.W.WriteLedger(&ev)
		return
	}
	l.Entries = append(l.Entries, Entry{Step: step, Out: ResultsOf(ev.Stage), Kind: EntryLedger, A: uint32(len(l.Ledger))})
	l.Ledger = append(l.Ledger, ev)
}

// EntryKind says what an Entry holds.
type EntryKind uint8

// The entry kinds.
const (
	EntryRow    EntryKind = iota // Rows[A]
	EntryRecord                  // Bytes[A:B]
	EntryLedger                  // Ledger[A]
)

// Entry is one output of a Log.
type Entry struct {
	Step uint64
	Out  Output
	Kind EntryKind
	A, B uint32
}

// Reset empties the log for reuse.
func (l *Log) Reset() {
	l.Entries = l.Entries[:0]
	clear(l.Rows)
	l.Rows = l.Rows[:0]
	l.Bytes = l.Bytes[:0]
	clear(l.Ledger)
	l.Ledger = l.Ledger[:0]
	clear(l.vals)
	l.vals = l.vals[:0]
}

// Record returns the bytes of a record entry.
func (l *Log) Record(e *Entry) []byte { return l.Bytes[e.A:e.B] }

// record appends a record; the caller has appended its bytes to l.Bytes
// from offset start.
func (l *Log) record(step uint64, out Output, start int) {
	if l.W != nil {
		l.fail(l.W.WriteRecord(out, l.Bytes[start:]))
		l.Bytes = l.Bytes[:start]
		return
	}
	l.Entries = append(l.Entries, Entry{Step: step, Out: out, Kind: EntryRecord, A: uint32(start), B: uint32(len(l.Bytes))})
}

// row appends r, its values not copied (they must stay valid until the
// log is written), as an entry of out at step; no lineage value is
// added (the caller's run records none).
func (l *Log) row(step uint64, out Output, r changelog.Row) {
	if l.W != nil {
		l.one[0] = r
		l.fail(l.W.WriteRows(out, l.one[:]))
		return
	}
	l.Entries = append(l.Entries, Entry{Step: step, Out: out, Kind: EntryRow, A: uint32(len(l.Rows))})
	l.Rows = append(l.Rows, r)
}

// rows appends copies of rows (values copied, with lin appended when it is
// a string: at(row) instead of lin when at is set) as entries of out at
// step.
func (l *Log) rows(step uint64, out Output, rows []changelog.Row, lin row.Value, at func(*changelog.Row) row.Value) {
	if l.W != nil {
		l.fail(l.W.WriteRows(out, rows))
		return
	}
	extra := 0
	if lin.Kind == row.KindString {
		extra = 1
	}
	n := 0
	for i := range rows {
		n += len(rows[i].Values) + extra
	}
	if len(l.vals)+n > cap(l.vals) {
		// Replace rather than grow: earlier rows keep the old array.
		l.vals = make([]row.Value, 0, max(2*cap(l.vals), 1024, n))
	}
	for i := range rows {
		r := rows[i]
		start := len(l.vals)
		l.vals = append(l.vals, r.Values...)
		if extra > 0 {
			if at != nil {
				l.vals = append(l.vals, at(&rows[i]))
			} else {
				l.vals = append(l.vals, lin)
			}
		}
		r.Values = l.vals[start:len(l.vals):len(l.vals)]
		l.Entries = append(l.Entries, Entry{Step: step, Out: out, Kind: EntryRow, A: uint32(len(l.Rows))})
		l.Rows = append(l.Rows, r)
	}
}

// LedgerEvent is one source event a stage accepted, for its postgres
// ledger sinks (engine/ledger.go): its id and payload hash from the dedup
// step, its window, its key values and aggregate deltas (owned), its JSON
// and position.
type LedgerEvent struct {
	Stage       int
	EventID     string
	PayloadHash uint32
	EventTime   int64
	Now         int64 // processing time when the event was accepted (ms)
	WindowStart int64
	WindowEnd   int64
	Key, Deltas []row.Value
	JSON        []byte
	Position    changelog.Position
}

// StageCounters are a stage's record counters. Every input record (weight
// +1) ends in exactly one of Quarantined, Filtered, OnTime, LateAccepted or
// TooLate*. Retractions (weight −1: a superseded version, or an upstream
// update_before/delete) are counted apart.
type StageCounters struct {
	In                int64 // records that reached the stage
	Quarantined       int64 // invalid: decode, type, event time or expression errors
	Filtered          int64 // valid records the filter dropped
	OnTime            int64 // entered windows that had not fired
	LateAccepted      int64 // updated a window that had already fired (within allowed lateness)
	TooLateDropped    int64 // beyond allowed lateness, policy drop
	TooLateSideOutput int64 // beyond allowed lateness, written to the late side output
	Retractions       int64 // retractions that reached the stage
	RetractMissing    int64 // retractions for rows no window held
	RetractTooLate    int64 // retractions whose windows had all closed (their final rows stay)
	RowsEmitted       int64 // result rows emitted (all ops)
	FinalRows         int64 // rows emitted with is_final = true
}

// Fields lists the counters in a fixed order (checkpoints, sums).
func (c *StageCounters) Fields() []*int64 {
	return []*int64{&c.In, &c.Quarantined, &c.Filtered, &c.OnTime, &c.LateAccepted, &c.TooLateDropped,
		&c.TooLateSideOutput, &c.Retractions, &c.RetractMissing, &c.RetractTooLate, &c.RowsEmitted, &c.FinalRows}
}

// Add adds o's counts to c.
func (c *StageCounters) Add(o *StageCounters) {
	a, b := c.Fields(), o.Fields()
	for i := range a {
		*a[i] += *b[i]
	}
}

// Counters are the record fates a task (or the runner) counted.
type Counters struct {
	Stages []StageCounters
	// Before the stages (counted once, not per stage).
	Quarantined, Duplicates, Conflicts, StaleVersions, Superseded int64
	// Deletes counts a change stream's deletes (each retracts its key's
	// row, if the key has one: Superseded counts those rows).
	Deletes int64
	// ByRule counts Quarantined by rule, and each stage's Quarantined by
	// rule ("join_key", "expression", "event_time", "join_bound",
	// "aggregate") under StageRuleKey(stage, rule); one map so that a
	// checkpoint carries both in its section of rules.
	ByRule map[string]int64
	// First notes the first quarantined record, pipeline-level (index 0)
	// and per stage (index 1 + stage).
	First []Note
}

// StageRuleKey is the ByRule key of a rule of stage si: a NUL, the
// stage's index, a NUL and the rule (no pipeline-level rule name starts
// with a NUL: contract rule names are YAML keys, the others fixed words).
func StageRuleKey(si int, rule string) string {
	return "\x00" + strconv.Itoa(si) + "\x00" + rule
}

// SplitRuleKey splits a ByRule key: the stage's index and rule for a key
// of StageRuleKey (stage true), else the pipeline-level rule.
func SplitRuleKey(k string) (si int, rule string, stage bool) {
	if !strings.HasPrefix(k, "\x00") {
		return 0, k, false
	}
	n, r, ok := strings.Cut(k[1:], "\x00")
	si, err := strconv.Atoi(n)
	if !ok || err != nil || si < 0 {
		return 0, k, false
	}
	return si, r, true
}

// Note is a text noted at a step (the earliest wins when notes merge).
type Note struct {
	Step uint64
	Set  bool
	Text string
}

// note records text at step if nothing earlier is noted.
func (n *Note) note(step uint64, text string) {
	if !n.Set || step < n.Step {
		*n = Note{Step: step, Set: true, Text: text}
	}
}

// Merge keeps the earlier of n and o.
func (n *Note) Merge(o Note) {
	if o.Set {
		n.note(o.Step, o.Text)
	}
}

// NewCounters returns zero counters for stages stages.
func NewCounters(stages int) Counters {
	return Counters{Stages: make([]StageCounters, stages), First: make([]Note, stages+1)}
}

// Add adds o to c.
func (c *Counters) Add(o *Counters) {
	for i := range c.Stages {
		c.Stages[i].Add(&o.Stages[i])
	}
	c.Quarantined += o.Quarantined
	c.Duplicates += o.Duplicates
	c.Conflicts += o.Conflicts
	c.StaleVersions += o.StaleVersions
	c.Superseded += o.Superseded
	c.Deletes += o.Deletes
	for k, v := range o.ByRule {
		if c.ByRule == nil {
			c.ByRule = map[string]int64{}
		}
		c.ByRule[k] += v
	}
	for i := range c.First {
		c.First[i].Merge(o.First[i])
	}
}

// Reset zeroes the counters, keeping their shape.
func (c *Counters) Reset() {
	clear(c.Stages)
	c.Quarantined, c.Duplicates, c.Conflicts, c.StaleVersions, c.Superseded, c.Deletes = 0, 0, 0, 0, 0, 0
	clear(c.ByRule)
	clear(c.First)
}

// firstText renders a quarantine note as the summary shows it:
// "file:line: rule R: reason" (pipeline) or "file:line: field F: reason"
// (a stage).
func firstText(pos changelog.Position, rule, field, reason string, stage bool) string {
	s := pos.String() + ": "
	if stage {
		if field != "" && !strings.Contains(reason, field) {
			s += "field " + field + ": "
		}
	} else if rule != "" {
		s += "rule " + rule + ": "
	}
	return s + reason
}
