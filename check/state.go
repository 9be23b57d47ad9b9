package check

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/spec"
)

// State-contract rules (TM3xx): how long state is kept, how it is
// snapshotted.

// hasLedger reports whether a stage writes a PostgreSQL event ledger, which
// is idempotent by event id for as long as it keeps its rows.
func (ck *checker) hasLedger() bool {
	for _, st := range ck.stages {
		for _, s := range st.Sinks {
			if s.Type == "postgres" && s.Mode == "ledger" {
				return true
			}
		}
	}
	return false
}

// dedupTTL is TM301: dedup.ttl shorter than the time in which a copy of an
// event can still arrive.
func (ck *checker) dedupTTL() {
	d := ck.p.Dedup
	if d == nil {
		return
	}
	ttl := d.TTL.D()
	// The latest a normal copy arrives after its event time.
	var need time.Duration
	var from string
	if ck.c != nil && ck.c.MaxNormalDelay.D() > need {
		need, from = ck.c.MaxNormalDelay.D(), fmt.Sprintf("the max_normal_delay of contract %s", ck.c.Product)
	}
	if ck.redelivers() {
		// A first delivery is up to max_delay late, its copy up to
		// max_delay after it.
		if r := 2 * ck.p.Source.Replay.MaxDelay.D(); r > need {
			need, from = r, "2 × source.replay.max_delay (a copy arrives up to max_delay after a first delivery that is up to max_delay late)"
		}
	}
	if ttl < need {
		ck.add(ruleDedupTTL, Error, "dedup.ttl",
			fmt.Sprintf("dedup.ttl %s is shorter than %s (%s): an id is forgotten before its copy arrives, and the copy is counted again", dur(ttl), dur(need), from),
			fmt.Sprintf("set dedup.ttl to at least %s", dur(need)))
	}
	// The oldest event the contract admits: what a backfill or a producer
	// re-sending old events can deliver.
	if ck.c == nil || ck.hasLedger() {
		return
	}
	var age spec.Duration
	var rule string
	for _, r := range ck.c.Rules {
		if r.MaxAge > age {
			age, rule = r.MaxAge, r.Name
		}
	}
	if age.D() > ttl {
		ck.add(ruleDedupTTL, Warning, "dedup.ttl",
			fmt.Sprintf("contract %s admits events up to %s old (rule %s), but ids are remembered for %s: a backfill or re-sent event older than that is counted again", ck.c.Product, sd(age), rule, dur(ttl)),
			fmt.Sprintf("set dedup.ttl to %s, or make the output idempotent by event id (a postgres sink with mode: ledger)", sd(age)))
	}
}

// kafkaTxnTimeout is the default transaction_timeout of a Kafka sink.
const kafkaTxnTimeout = 60 * time.Second

// namedSink is a sink with its pipeline key.
type namedSink struct {
	key  string
	sink *spec.Sink
}

// allSinks lists every sink of the pipeline with its key: per stage its
// result sinks and its late sink, then quarantine.sink and conflicts.sink.
func (ck *checker) allSinks() []namedSink {
	var out []namedSink
	for i, st := range ck.stages {
		pre := ck.prefix(i)
		for j := range st.Sinks {
			out = append(out, namedSink{fmt.Sprintf("%ssinks[%d]", pre, j), &st.Sinks[j]})
		}
		if st.Late.Sink != nil {
			out = append(out, namedSink{pre + "late.sink", st.Late.Sink})
		}
	}
	if s := ck.p.Quarantine.Sink; s != nil {
		out = append(out, namedSink{"quarantine.sink", s})
	}
	if s := ck.p.Conflicts.Sink; s != nil {
		out = append(out, namedSink{"conflicts.sink", s})
	}
	return out
}

// checkpointSettings is TM302: checkpoints that outlast a Kafka sink's
// transactions, or leave no checkpoint to fall back on.
func (ck *checker) checkpointSettings() {
	cp := ck.p.Checkpoint
	if cp == nil {
		return
	}
	for _, ns := range ck.allSinks() {
		s := ns.sink
		if s.Type != "kafka" || s.Delivery == "at_least_once" {
			continue
		}
		t := s.TransactionTimeout.D()
		if t == 0 {
			t = kafkaTxnTimeout
		}
		if t <= cp.Interval.D() {
			ck.add(ruleCheckpointSettings, Error, ns.key+".transaction_timeout",
				fmt.Sprintf("the Kafka transaction times out after %s, but it commits only at the next checkpoint, %s later: the broker aborts it and the run fails", dur(t), sd(cp.Interval)),
				fmt.Sprintf("set transaction_timeout above checkpoint.interval plus a checkpoint's duration (e.g. %s)", dur(2*cp.Interval.D()+10*time.Second)))
		}
	}
	if cp.Retain == 1 {
		ck.add(ruleCheckpointSettings, Warning, "checkpoint.retain",
			"only one checkpoint is kept: if it is damaged there is none to fall back to, and the run cannot resume",
			"keep checkpoint.retain at 2 or more (the default is 3)")
	}
}

// joinStateBound is TM303: a regular join (an equi-join without a time
// condition of its own) keeps its rows only as long as its ttl: an error
// without one (spec.Validate refuses it too: Flink's regular join keeps
// every row for ever), otherwise an info naming the bound, since a match
// further apart than the ttl is never made and nothing reports it.
func (ck *checker) joinStateBound() {
	for i, st := range ck.p.Stages {
		j := st.Join
		if j == nil || j.Type != "regular" {
			continue
		}
		key := fmt.Sprintf("stages[%d].join.ttl", i)
		if j.TTL <= 0 {
			ck.add(ruleJoinStateBound, Error, key,
				fmt.Sprintf("stage %s is a regular join without a ttl: nothing bounds its state, every row of both sides would be kept for ever (Flink's regular join) and the state grows with the input", st.Name),
				"set join.ttl to the longest event-time gap between two rows that must pair (or use an interval join with between bounds, or a window join)")
			continue
		}
		ck.add(ruleJoinStateBound, Info, key,
			fmt.Sprintf("stage %s is a regular join bounded by its ttl: a row is kept until the other side's watermark passes its event time + ttl %s + allowed lateness %s, and two rows more than %s apart in event time never pair (no late record reports the match that was not made)", st.Name, sd(j.TTL), sd(st.AllowedLateness), sd(j.TTL)),
			"check that ttl covers the longest real gap between matching rows of the two sides (e.g. a refund's delay after its payment)")
	}
}
