package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
)

// Source-contract rules (TM1xx): what is read, with what duplicates, where
// the position is kept, how long the source keeps it.

// redelivers reports whether the file source's replay delivers copies of
// records (at-least-once redeliveries or conflicting copies).
func (ck *checker) redelivers() bool {
	r := ck.p.Source.Replay
	return ck.p.Source.Type == "file" && r != nil && (r.RedeliverFraction > 0 || r.ConflictFraction > 0)
}

// dedupMissing is TM101: no dedup on a source that may deliver an event
// twice.
func (ck *checker) dedupMissing() {
	if ck.p.Dedup != nil || ck.p.Source.ChangeStream() {
		// A change stream knows a change seen again by its LSN and key.
		return
	}
	const fix = "add dedup: {key: <event id>, ttl: <longer than the latest redelivery>} (with a contract, dedup: {ttl: ...} takes its event_id)"
	switch {
	case ck.c != nil && ck.c.DuplicatesPossible:
		ck.add(ruleDedupMissing, Error, "dedup",
			fmt.Sprintf("contract %s says duplicates are possible and nothing removes them: a redelivered event is counted twice", ck.c.Product), fix)
	case ck.redelivers():
		ck.add(ruleDedupMissing, Error, "dedup",
			"source.replay redelivers records and nothing removes the copies: each is counted again", fix)
	case ck.c == nil && ck.p.Source.Type == "kafka":
		ck.add(ruleDedupMissing, Warning, "dedup",
			"Kafka delivers at least once (producer retries, restarts) and no contract says this topic has no duplicates: a copy is counted twice", fix+", or name a contract with duplicates_possible: false")
	case ck.c == nil && ck.p.Source.Type == "file":
		ck.add(ruleDedupMissing, Info, "dedup",
			"no contract says whether the events can be duplicated, and the pipeline does not deduplicate", "name a contract (duplicates_possible, event_id), or add dedup")
	}
}

// dedupKey is TM102: the pipeline deduplicates by something other than the
// contract's event id.
func (ck *checker) dedupKey() {
	if ck.p.Dedup == nil || ck.c == nil || ck.p.Dedup.Key == ck.c.EventID {
		return
	}
	ck.add(ruleDedupKey, Warning, "dedup.key",
		fmt.Sprintf("dedup.key %q is not the event id %q of contract %s: a retry that keeps the business id but changes this key is counted twice", ck.p.Dedup.Key, ck.c.EventID, ck.c.Product),
		"remove dedup.key to use the contract's event_id, or correct the contract's event_id")
}

// noCheckpoint is TM103: a Kafka source without checkpoints.
func (ck *checker) noCheckpoint() {
	s := ck.p.Source
	if s.Type != "kafka" || ck.p.Checkpoint != nil {
		return
	}
	const fix = "add checkpoint: {dir: ..., interval: 10s}: offsets, windows and dedup state are then restored together"
	if s.StopAtEnd && s.Start == "earliest" {
		ck.add(ruleNoCheckpoint, Warning, "checkpoint",
			"without checkpoints a bounded Kafka read starts again from the log start after a failure: correct only while the topic still holds every event, and a Kafka sink gets every row again", fix)
		return
	}
	ck.add(ruleNoCheckpoint, Error, "checkpoint",
		fmt.Sprintf("a Kafka source keeps its offsets only in checkpoints: after a restart it reads from start %q again, re-reading (earliest) or skipping (latest) events, with window and dedup state lost", s.Start), fix)
}

// retention is TM104: the source keeps events for less than the range the
// pipeline re-reads. Only a Kafka source has a retention (a file source is
// its own log); it comes from the contract.
func (ck *checker) retention() {
	s := ck.p.Source
	if s.Type != "kafka" {
		return
	}
	var ret time.Duration
	if ck.c != nil {
		ret = ck.c.Retention.D()
	}
	if ret <= 0 {
		ck.add(ruleRetention, Info, "source",
			"unknown: no contract states how long the topics keep events, so nothing says a replay or backfill can still read them",
			"name a contract with retention (e.g. 4320h), and keep it longer than any reprocessing range")
		return
	}
	if s.Start == "timestamp" {
		if t, err := time.Parse(time.RFC3339Nano, s.StartTimestamp); err == nil {
			if age := ck.now.Sub(t); age > ret {
				ck.add(ruleRetention, Error, "source.start_timestamp",
					fmt.Sprintf("the run re-reads from %s, %s ago, but contract %s keeps events for %s: the oldest part is already deleted", s.StartTimestamp, dur(age.Truncate(time.Hour)), ck.c.Product, dur(ret)),
					"start within the retention, or recompute the older range from an archive of the events")
			}
			return
		}
	}
	ck.add(ruleRetention, Info, "source",
		fmt.Sprintf("unknown: contract %s keeps events for %s, but nothing states how far back this pipeline must be able to reprocess", ck.c.Product, dur(ret)),
		"agree on the reprocessing range and keep it within the retention (or archive the events)")
}

// timestampRules is TM105: a timestamp rule turned off. max_future is on
// by default (24h) for every source; max_past is off by default, and a
// live source (Kafka, or a realtime contract) needs it.
func (ck *checker) timestampRules() {
	et := ck.p.EventTime
	if et.MaxFutureMs() == 0 {
		ck.add(ruleTimestampRules, Warning, "event_time.max_future",
			"max_future is off: one record from a clock that runs ahead moves the watermark forward and makes every on-time event after it late",
			"remove event_time.max_future: 0s (the default quarantines events more than 24h after their processing time)")
	}
	live := ck.p.Source.Type == "kafka" || (ck.c != nil && ck.c.Realtime)
	if live && et.MaxPastMs() == 0 {
		what := "a Kafka source"
		if ck.c != nil && ck.c.Realtime {
			what = fmt.Sprintf("contract %s is realtime", ck.c.Product)
		}
		ck.add(ruleTimestampRules, Warning, "event_time.max_past",
			what+", and max_past is off: a backfill published into the topic is taken for current traffic, as late data past the dedup TTL",
			"set event_time.max_past: 720h (or a contract rule {name: not_older_than_30d, max_age: 720h}) and send backfills to their own topic and job")
	}
}

// quarantine is TM106: records that are invalid are only counted.
func (ck *checker) quarantine() {
	if ck.p.Quarantine.Sink != nil {
		return
	}
	ck.add(ruleQuarantine, Warning, "quarantine.sink",
		"records that do not decode, have no valid event time or break a contract rule are only counted: their bytes and the reason are lost",
		"add quarantine: {sink: {type: jsonl, path: out/quarantine.jsonl}} (or a kafka topic)")
}

// quarantineShare is TM115: nothing bounds the share of records a run
// may quarantine, so a run reading the wrong format quarantines every
// record and exits 0.
func (ck *checker) quarantineShare() {
	if ck.p.Quarantine.MaxFraction != nil || ck.p.Source.Assignment == "group" {
		return // (a group run cannot have one: each instance sees only its partitions)
	}
	ck.add(ruleQuarantineShare, Info, "quarantine.max_fraction",
		"nothing bounds the share of records the run may quarantine: a source read in the wrong format (Avro over a JSON topic) quarantines every record, and the run exits 0",
		"set quarantine.max_fraction: 0.01 (or the share the source may really have) to fail the run above it")
}

// conflicts is TM107: deliveries that reuse an event id with another
// payload are only counted.
func (ck *checker) conflicts() {
	if ck.p.Dedup == nil || ck.p.Conflicts.Sink != nil {
		return
	}
	ck.add(ruleConflicts, Warning, "conflicts.sink",
		"an event id delivered again with a different payload is a data error, but it is only counted: nobody can see either payload",
		"add conflicts: {sink: {type: jsonl, path: out/conflicts.jsonl}} and alert its owner")
}

// ordering is TM108: the contract declares per-key versions that the
// pipeline ignores.
func (ck *checker) ordering() {
	if ck.c == nil || ck.c.Ordering == nil || ck.p.OrderBy != nil {
		return
	}
	ck.add(ruleOrdering, Info, "order_by",
		fmt.Sprintf("contract %s orders the events of one %s by %s, but the pipeline aggregates every event as a delta: if these are state events, a cancel that arrives before its create is counted, and older versions too", ck.c.Product, ck.c.Ordering.Key, ck.c.Ordering.Version),
		"for state events add order_by: {} (key and version from the contract); for delta events (payments, refunds) nothing")
}

// keyFieldUndeclared is TM109: a group-key field of a stage that reads the
// source is declared nowhere. When the source's fields are listed (a
// contract, source.schema_complete, CSV columns, Nexmark) the plan refuses
// such a field, and a CSV header is checked when the file opens; otherwise
// a misspelt key reads as null in every record, and every row falls into
// one null group without an error.
func (ck *checker) keyFieldUndeclared() {
	src := ck.p.Source
	if plan.SourceFields(ck.p, ck.c) != nil {
		return
	}
	if src.Type == "file" && src.Format == "csv" && (src.CSV.Header == nil || *src.CSV.Header) {
		return // the file source refuses a column its header lacks
	}
	declared := map[string]bool{}
	for _, f := range src.Schema {
		declared[f.Name] = true
	}
	if o := src.Ordinal; o != nil {
		declared[o.Field] = true
	}
	if r := ck.p.Reference; r != nil {
		for _, f := range r.Fields {
			declared[f.Name] = true
		}
	}
	for i, st := range ck.stages {
		if st.Input != "source" {
			continue
		}
		derived := map[string]bool{}
		for _, f := range st.Fields {
			derived[f.Name] = true
		}
		var names []string
		for _, k := range st.Key {
			if !declared[k] && !derived[k] {
				names = append(names, strconv.Quote(k))
			}
		}
		if len(names) == 0 {
			continue
		}
		what := "key field " + names[0] + " is"
		if len(names) > 1 {
			what = "key fields " + strings.Join(names, ", ") + " are"
		}
		ck.add(ruleKeyFieldUndeclared, Warning, ck.prefix(i)+"key",
			what+" declared in no schema (no contract, and source.schema lists only some fields): a misspelt name reads as null in every record, and every row falls into one null group without an error",
			"declare every field in source.schema and set source.schema_complete: true (or name a contract that declares the fields): a field that is not among them then stops the run before anything is written")
	}
}

// joinKeyUndeclared is TM112: an equality key of a join stage
// (join.on) whose field neither side's schema declares. A misspelt name
// reads as null in every record (the run stops at its first batch when a
// key is null in every record a side keeps: engine/keycheck.go, as for a
// stage's key, TM109). An undeclared field is read as text, so the key
// compares the values' text: the JSON
// numbers 1 and 1.0 (or 10 and 1e1, or "7" and 7.0) do not match, and the
// rows stay unjoined without an error. Flink SQL requires the key's two
// sides to have comparable declared types; tidemark refuses two declared
// types that differ (plan), and warns here when neither side declares
// one. A computed key (an expression) and a key read from an upstream
// stage are typed and not reported.
func (ck *checker) joinKeyUndeclared() {
	if ck.plan == nil {
		return
	}
	for i, st := range ck.plan.Stages {
		j := st.Join
		if j == nil {
			continue
		}
		l, r := &j.Sides[0], &j.Sides[1]
		for k := range l.Key {
			if k >= len(r.Key) || l.KeyExprs[k] != nil || r.KeyExprs[k] != nil || l.Key[k].Kind != row.KindString {
				continue
			}
			if ck.declares(l.Input, l.Key[k].Name) || ck.declares(r.Input, r.Key[k].Name) {
				continue
			}
			ck.add(ruleJoinKeyUndeclared, Warning, fmt.Sprintf("%sjoin.on[%d]", ck.prefix(i), k),
				fmt.Sprintf("the join key %s.%s = %s.%s is declared in no schema (no contract, and source.schema lists only some fields): a misspelt name reads as null in every record (the run stops at the first batch where it is null in all the side keeps), and both sides are read as text and compared by their text: the numbers 1 and 1.0 (or 10 and 1e1) do not match, and such rows stay unjoined without an error",
					l.Alias, l.Key[k].Name, r.Alias, r.Key[k].Name),
				fmt.Sprintf("declare %s in the source.schema of %s and of %s (int, decimal or string: string keeps comparing text, on purpose), or in the contract; with source.schema_complete: true a misspelt key is refused before the run, naming the fields close to it",
					l.Key[k].Name, l.Name, r.Name))
		}
	}
}

// declares reports whether input in (0: the source) declares a type for
// field name: in its source.schema, or (the source) in the contract.
func (ck *checker) declares(in int, name string) bool {
	src := &ck.p.Source
	if in > 0 {
		if in-1 >= len(ck.p.Inputs) {
			return true // not a source: typed
		}
		src = &ck.p.Inputs[in-1].Source
	}
	if _, ok := src.Schema.Lookup(name); ok {
		return true
	}
	if in == 0 && ck.c != nil {
		if _, ok := ck.c.Fields.Lookup(name); ok {
			return true
		}
	}
	if o := src.Ordinal; o != nil && o.Field == name {
		return true
	}
	return false
}
