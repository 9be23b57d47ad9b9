// Package check is `tidemark check`: the pre-deploy checklists of the two
// source articles as static rules over a pipeline spec and its data
// contract. It reads no data and opens no connection (the facts of
// RunWith, which `tidemark check --connect` gathers from the schema
// registry and the topics, come from its caller); it answers "which of
// the four contracts (source, time, state, sink) does this pipeline leave
// unanswered, or answer in a way that loses or doubles results?".
//
// Every rule has a stable id (TM1xx source, TM2xx time, TM3xx state, TM4xx
// sink) and a name; each finding names the rule, a severity, the pipeline
// key it concerns (as written in the file, "stages[0].late.policy"), a
// one-line why and a one-line fix. docs/check.md defines every rule and
// cites the article section it comes from.
package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// Severity says how bad a finding is.
type Severity string

// The severities, from worst to mildest. Only Error makes `tidemark check`
// exit non-zero.
const (
	// Error: results are lost, doubled or wrong in a way the pipeline
	// cannot notice.
	Error Severity = "error"
	// Warning: a risk that depends on the data or on how outputs are
	// read; decide and document.
	Warning Severity = "warning"
	// Info: a question the pipeline leaves unanswered, or a property a
	// reader of its outputs must know.
	Info Severity = "info"
)

// rank orders severities: errors first.
func (s Severity) rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Finding is one rule's verdict on one pipeline key.
type Finding struct {
	// ID is the rule's stable id ("TM201").
	ID string `json:"id"`
	// Rule is the rule's name ("processing-time-window").
	Rule string `json:"rule"`
	// Severity is error, warning or info.
	Severity Severity `json:"severity"`
	// Key is the pipeline key the finding concerns, dotted as in error
	// messages and docs/pipeline.md ("event_time.from",
	// "stages[1].sinks[0].delivery"). A key may be absent from the file
	// (a default, or a section the fix adds, such as "dedup").
	Key string `json:"key"`
	// Why says in one line what goes wrong.
	Why string `json:"why"`
	// Fix says in one line what to change.
	Fix string `json:"fix"`
}

// String renders the finding on one line: "error TM201 event_time.from: why".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s", f.Severity, f.ID, f.Key, f.Why)
}

// Rule describes one rule.
type Rule struct {
	// ID is the stable id: TM, then the contract's digit (1 source, 2
	// time, 3 state, 4 sink), then two digits. Ids are never reused.
	ID string
	// Name is a short kebab-case name, also stable.
	Name string
	// Contract is the contract the rule belongs to: source, time, state
	// or sink.
	Contract string
	// Summary says in one line what the rule looks for.
	Summary string
}

// The rules, in the order they run and are documented.
var (
	ruleDedupMissing       = Rule{"TM101", "dedup-missing", "source", "no dedup on a source that may deliver an event twice"}
	ruleDedupKey           = Rule{"TM102", "dedup-key-not-event-id", "source", "dedup.key differs from the contract's event_id"}
	ruleNoCheckpoint       = Rule{"TM103", "no-checkpoint-unreplayable-source", "source", "a Kafka source without checkpoints: positions are not kept"}
	ruleRetention          = Rule{"TM104", "retention-short", "source", "the source keeps events for less than the range the pipeline re-reads"}
	ruleTimestampRules     = Rule{"TM105", "timestamp-rules-missing", "source", "a timestamp rule turned off: event_time.max_future, or event_time.max_past for a live source"}
	ruleQuarantine         = Rule{"TM106", "quarantine-not-kept", "source", "invalid records are only counted: no quarantine.sink"}
	ruleConflicts          = Rule{"TM107", "conflicts-not-kept", "source", "conflicting redeliveries are only counted: no conflicts.sink"}
	ruleOrdering           = Rule{"TM108", "ordering-unused", "source", "the contract orders state events by version, the pipeline has no order_by"}
	ruleKeyFieldUndeclared = Rule{"TM109", "key-field-undeclared", "source", "a group-key field that no schema declares: a misspelt name reads as null in every record"}
	ruleJoinKeyUndeclared  = Rule{"TM112", "join-key-undeclared", "source", "a join key whose field neither side declares: compared by its text, so 1 and 1.0 do not match"}
	ruleQuarantineShare    = Rule{"TM115", "quarantine-share-unbounded", "source", "no quarantine.max_fraction: a run whose every record is quarantined (a wrong format) exits 0"}
	ruleProcessingTime     = Rule{"TM201", "processing-time-window", "time", "windows over a processing or ingestion time instead of the event time"}
	ruleLatenessBelowDelay = Rule{"TM202", "lateness-below-delay", "time", "out_of_orderness + allowed_lateness below the normal delay, and late events not kept"}
	ruleDropMoney          = Rule{"TM203", "drop-money-metric", "time", "late.policy drop on a stage that sums money"}
	ruleIdleTimeout        = Rule{"TM204", "idle-timeout-missing", "time", "no idle_timeout on a source with several partitions"}
	ruleCalendarZone       = Rule{"TM205", "calendar-window-zone", "time", "day windows in UTC"}
	ruleStageLateness      = Rule{"TM206", "stage-lateness-chain", "time", "a stage accepts less lateness than the stage it reads"}
	ruleJoinInputStall     = Rule{"TM207", "join-input-can-stall", "time", "a join reads a live Kafka input: when it stops producing, its watermark holds the join"}
	ruleDedupTTL           = Rule{"TM301", "dedup-ttl-short", "state", "dedup.ttl shorter than the time in which a copy of an event can arrive"}
	ruleCheckpointSettings = Rule{"TM302", "checkpoint-settings", "state", "checkpoint settings that conflict with sink transactions or leave no fallback"}
	ruleJoinStateBound     = Rule{"TM303", "join-state-bound", "state", "a regular join: only its ttl bounds its state, and rows further apart never pair"}
	ruleStateEstimate      = Rule{"TM304", "state-estimate", "state", "the keyed state an event rate implies (dedup ids per ttl, window entries) against the memory budget: when the disk backend is needed"}
	ruleAppendSink         = Rule{"TM401", "append-sink-duplicates", "sink", "an append-only sink that writes rows again after a restart or re-run"}
	ruleProvisionalRows    = Rule{"TM402", "provisional-rows", "sink", "an upsert table that holds provisional rows (is_final = false)"}
	ruleSharedOutput       = Rule{"TM403", "shared-output", "sink", "two outputs write the same file or table"}
	ruleOutputOverlap      = Rule{"TM404", "output-overlaps-input", "sink", "an output that is an input, or another output, through a link or another spelling of its path"}
	ruleSmallFiles         = Rule{"TM405", "small-files", "sink", "a parquet or iceberg sink whose partitions and checkpoint interval make many small files"}
	ruleUpdateIdentity     = Rule{"TM406", "update-rows-need-identity", "sink", "update or retract rows in append-only Parquet files: the reader must apply the row identity"}
)

// Rules returns every rule, in the order they run.
func Rules() []Rule {
	return []Rule{
		ruleDedupMissing, ruleDedupKey, ruleNoCheckpoint, ruleRetention, ruleTimestampRules,
		ruleQuarantine, ruleConflicts, ruleOrdering, ruleKeyFieldUndeclared, ruleRegistryCompat, ruleDeprecatedProduced, ruleJoinKeyUndeclared, ruleCDCNoCheckpoint, ruleCDCDatabase, ruleQuarantineShare,
		ruleProcessingTime, ruleLatenessBelowDelay, ruleDropMoney, ruleIdleTimeout, ruleCalendarZone, ruleStageLateness, ruleJoinInputStall,
		ruleDedupTTL, ruleCheckpointSettings, ruleJoinStateBound, ruleStateEstimate,
		ruleAppendSink, ruleProvisionalRows, ruleSharedOutput, ruleOutputOverlap, ruleSmallFiles, ruleUpdateIdentity,
	}
}

// Run checks pipeline p against its contract c (nil without one) and
// returns the findings, errors first, then warnings, then infos; within a
// severity in rule order and then in the order of the pipeline's keys.
//
// p must be as tidemark.Compile leaves it: the contract applied
// (contract.Apply), defaults filled in and validated. Run does not modify
// p. Rules that need "now" (a Kafka start_timestamp against the source's
// retention) use the wall clock; RunAt takes it as an argument.
func Run(p *spec.Pipeline, c *contract.Contract) []Finding {
	return RunAt(p, c, time.Now())
}

// RunAt is Run with the current time given.
func RunAt(p *spec.Pipeline, c *contract.Contract, now time.Time) []Finding {
	return RunWith(p, c, now, nil)
}

// RunWith is RunAt with the facts `tidemark check --connect` gathered from
// the schema registry and the source topics (nil: none; TM110 and TM111
// then say what they could not check).
func RunWith(p *spec.Pipeline, c *contract.Contract, now time.Time, facts *Facts) []Finding {
	ck := &checker{p: p, c: c, now: now, stages: p.StageList(), facts: facts}
	// The plan types aggregate arguments (a derived field's kind); a
	// pipeline that does not compile is checked by names alone.
	if pl, err := plan.Compile(p, c); err == nil {
		ck.plan = pl
	}
	for _, f := range []func(){
		ck.dedupMissing, ck.dedupKey, ck.noCheckpoint, ck.retention, ck.timestampRules,
		ck.quarantine, ck.conflicts, ck.ordering, ck.keyFieldUndeclared, ck.registryCompat, ck.deprecatedProduced, ck.joinKeyUndeclared, ck.cdcNoCheckpoint, ck.cdcDatabase, ck.quarantineShare,
		ck.processingTime, ck.latenessBelowDelay, ck.dropMoney, ck.idleTimeout, ck.calendarZone, ck.stageLateness, ck.joinInputStall,
		ck.dedupTTL, ck.checkpointSettings, ck.joinStateBound, ck.stateEstimate,
		ck.appendSink, ck.provisionalRows, ck.sharedOutput, ck.outputOverlap, ck.smallFiles, ck.updateIdentity,
	} {
		f()
	}
	sort.SliceStable(ck.out, func(i, j int) bool { return ck.out[i].Severity.rank() < ck.out[j].Severity.rank() })
	if ck.out == nil {
		ck.out = []Finding{}
	}
	return ck.out
}

// Count returns how many findings have each severity.
func Count(fs []Finding) (errors, warnings, infos int) {
	for _, f := range fs {
		switch f.Severity {
		case Error:
			errors++
		case Warning:
			warnings++
		default:
			infos++
		}
	}
	return
}

// checker holds what the rules read and the findings so far.
type checker struct {
	p      *spec.Pipeline
	c      *contract.Contract
	plan   *plan.Plan // nil when the pipeline does not compile
	now    time.Time
	stages []spec.Stage
	facts  *Facts // nil: nothing outside the files was asked
	out    []Finding
}

// add records a finding of rule r.
func (ck *checker) add(r Rule, sev Severity, key, why, fix string) {
	ck.out = append(ck.out, Finding{ID: r.ID, Rule: r.Name, Severity: sev, Key: key, Why: why, Fix: fix})
}

// prefix is the key prefix of stage i: "" for the single stage of the
// top-level keys, "stages[i]." otherwise (as spec.Validate names keys).
func (ck *checker) prefix(i int) string {
	if len(ck.p.Stages) == 0 {
		return ""
	}
	return fmt.Sprintf("stages[%d].", i)
}

// stageIndex returns the index of the stage named name, or -1.
func (ck *checker) stageIndex(name string) int {
	for i, st := range ck.stages {
		if st.Name == name {
			return i
		}
	}
	return -1
}

// dur renders a duration without zero units: 24h, 1h30m, 90s, 250ms.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sd renders a spec duration as dur does.
func sd(d spec.Duration) string { return dur(d.D()) }
