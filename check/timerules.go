package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// Time-contract rules (TM2xx): which field is event time, how long to
// wait, what happens to late events.

// ingestWords mark a field name as an ingestion or processing time
// ([A2] ch. 5 ingested_at, ch. 14 received_at; [A1] produced_at).
var ingestWords = []string{"ingest", "receiv", "arriv", "produced", "publish", "processed"}

// ingestLike reports whether a field name reads as an ingestion time.
func ingestLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range ingestWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// processingTime is TM201: windows over a processing or ingestion time.
func (ck *checker) processingTime() {
	et, src := ck.p.EventTime, ck.p.Source
	const fix = "set event_time.field to the field that says when the business event happened (paid_at, occurred_at)"
	switch {
	case src.ArrivalTimeField != "" && et.Field == src.ArrivalTimeField:
		ck.add(ruleProcessingTime, Error, "event_time.field",
			fmt.Sprintf("event_time.field %q is source.arrival_time_field, the processing time: a delayed batch lands in the window of its arrival, not of its events", et.Field), fix)
	case ck.c != nil && ck.c.IngestTime != "" && et.Field == ck.c.IngestTime:
		ck.add(ruleProcessingTime, Error, "event_time.field",
			fmt.Sprintf("event_time.field %q is the ingest_time of contract %s, whose event time is %q: windows follow when events were ingested, not when they happened", et.Field, ck.c.Product, ck.c.EventTime.Field), fix)
	case et.From == "kafka_timestamp" && ck.c != nil:
		ck.add(ruleProcessingTime, Error, "event_time.from",
			fmt.Sprintf("kafka_timestamp replaces the event time with when the record reached Kafka, but contract %s says %q is when the event happened: re-produced or retried records move to the current windows", ck.c.Product, ck.c.EventTime.Field),
			"remove event_time.from (payload is the default)")
	case et.From == "kafka_timestamp":
		ck.add(ruleProcessingTime, Warning, "event_time.from",
			"kafka_timestamp is when the record reached Kafka (an ingestion time): after an outage or a re-produce, old events are counted in the current windows",
			"read the event's own time from the payload (event_time.from: payload, event_time.field: ...), or accept ingestion-time windows for operational metrics only")
	case ingestLike(et.Field) && !(ck.c != nil && ck.c.EventTime.Field == et.Field):
		ck.add(ruleProcessingTime, Warning, "event_time.field",
			fmt.Sprintf("event_time.field %q reads as an ingestion or delivery time: windows would follow when events arrived, not when they happened", et.Field),
			fix+", or name a contract whose event_time is this field")
	}
}

// normalDelay returns how late events normally arrive and where that
// figure comes from, or 0.
func (ck *checker) normalDelay() (time.Duration, string) {
	if ck.c != nil && ck.c.MaxNormalDelay > 0 {
		return ck.c.MaxNormalDelay.D(), fmt.Sprintf("the max_normal_delay of contract %s", ck.c.Product)
	}
	if r := ck.p.Source.Replay; ck.p.Source.Type == "file" && r != nil && r.Delay > 0 {
		return r.Delay.D(), "source.replay.delay"
	}
	return 0, ""
}

// latenessBelowDelay is TM202: a stage reading the source waits less than
// the normal delay and does not keep what arrives later.
func (ck *checker) latenessBelowDelay() {
	d, from := ck.normalDelay()
	ooo := ck.p.EventTime.OutOfOrderness.D()
	for i, st := range ck.stages {
		if st.Input != "source" || st.Late.Policy == "side_output" {
			continue
		}
		wait := ooo + st.AllowedLateness.D()
		key := ck.prefix(i) + "allowed_lateness"
		switch {
		case d > 0 && wait < d:
			ck.add(ruleLatenessBelowDelay, Error, key,
				fmt.Sprintf("out_of_orderness %s + allowed_lateness %s = %s is less than %s (%s), and late.policy drop discards what arrives later: normally delayed events are lost", dur(ooo), sd(st.AllowedLateness), dur(wait), dur(d), from),
				fmt.Sprintf("raise allowed_lateness to at least %s, or keep late events with late: {policy: side_output, sink: ...}", dur(d-ooo)))
		case d == 0:
			ck.add(ruleLatenessBelowDelay, Info, key,
				fmt.Sprintf("unknown: nothing states how late events normally arrive, and late.policy drop discards those after %s", dur(wait)),
				"name a contract with max_normal_delay (measured), or keep late events with late: {policy: side_output, sink: ...}")
		}
	}
}

// moneyWords mark a field or column name as an amount of money.
var moneyWords = []string{"amount", "price", "revenue", "sales", "cost", "fee", "payment", "refund", "gmv"}

// moneyName reports whether a name reads as an amount of money.
func moneyName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range moneyWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// moneySums returns the aggregates of stage i that are money metrics:
// sum(x) where x is decimal, or where the column name, x, or a field x
// derives from reads as money (moneyWords).
func (ck *checker) moneySums(i int) []string {
	st := ck.stages[i]
	derived := map[string][]string{}
	for _, f := range st.Fields {
		if p, err := expr.Parse(f.Expr); err == nil {
			derived[f.Name] = p.Identifiers()
		}
	}
	// names returns the identifiers of x and, transitively, of the derived
	// fields it reads.
	var names func(ids []string, seen map[string]bool) []string
	names = func(ids []string, seen map[string]bool) []string {
		var out []string
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, id)
			out = append(out, names(derived[id], seen)...)
		}
		return out
	}
	var out []string
	for j, a := range st.Aggregates {
		fn, args, err := expr.ParseCall(a.Expr)
		if err != nil || fn != "sum" || len(args) != 1 {
			continue
		}
		money := moneyName(a.Name)
		for _, n := range names(args[0].Identifiers(), map[string]bool{}) {
			money = money || moneyName(n)
		}
		if ck.plan != nil && i < len(ck.plan.Stages) {
			if aggs := ck.plan.Stages[i].Aggs; j < len(aggs) && aggs[j].Name == a.Name && aggs[j].Arg.Kind == row.KindDecimal {
				money = true
			}
		}
		if money {
			out = append(out, a.Name)
		}
	}
	return out
}

// dropMoney is TM203: late.policy drop on a stage that sums money.
func (ck *checker) dropMoney() {
	for i, st := range ck.stages {
		if st.Late.Policy != "drop" {
			continue
		}
		if m := ck.moneySums(i); len(m) > 0 {
			ck.add(ruleDropMoney, Error, ck.prefix(i)+"late.policy",
				fmt.Sprintf("late.policy drop discards events after allowed_lateness, but %s sums money: dropped payments or refunds make the totals wrong with no record of what is missing", strings.Join(m, ", ")),
				"keep them: late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}, and correct the totals from that output")
		}
	}
}

// idleTimeout is TM204: a source with several partitions and no idle
// timeout.
func (ck *checker) idleTimeout() {
	s := ck.p.Source
	var what string
	switch {
	case s.Type == "kafka":
		what = "every Kafka partition has its own watermark"
	case s.Type == "file" && s.PartitionField != "":
		what = fmt.Sprintf("source.partition_field %q makes a partition per value, each with its own watermark", s.PartitionField)
	case s.Type == "file" && s.Replay != nil && s.Replay.Partitions > 1:
		what = fmt.Sprintf("source.replay.partitions is %d, each with its own watermark", s.Replay.Partitions)
	default:
		return
	}
	if ck.p.EventTime.IdleTimeout > 0 {
		return
	}
	ck.add(ruleIdleTimeout, Warning, "event_time.idle_timeout",
		what+", and without idle_timeout a silent partition holds the pipeline watermark back: windows stop closing (lag 0, no results) and state grows",
		"set event_time.idle_timeout (e.g. 1m): longer than the normal gap between a partition's records")
}

// utc reports whether a zone name is UTC.
func utc(zone string) bool {
	switch zone {
	case "", "UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal", "Etc/Universal":
		return true
	}
	return false
}

// calendarZone is TM205: windows of whole days in UTC.
func (ck *checker) calendarZone() {
	const day = 24 * time.Hour
	ez := ck.p.EventTime.Timezone
	for i, st := range ck.stages {
		w := st.Window
		if (w.Type != "tumbling" && w.Type != "sliding") || w.Size <= 0 || w.Size.D()%day != 0 || !utc(w.Timezone) {
			continue
		}
		key := ck.prefix(i) + "window.timezone"
		if ez != "" && !utc(ez) {
			ck.add(ruleCalendarZone, Warning, key,
				fmt.Sprintf("%s windows are UTC days, but the event times are local times in %s: each business day is split across two windows", sd(w.Size), ez),
				fmt.Sprintf("set window.timezone: %s", ez))
			continue
		}
		ck.add(ruleCalendarZone, Info, key,
			fmt.Sprintf("%s windows are UTC days (window.timezone defaults to UTC): in any other zone a business day starts and ends mid-window", sd(w.Size)),
			"set window.timezone to the zone of the business day (e.g. Asia/Seoul), or to UTC to say it is meant")
	}
}

// stageLateness is TM206: a stage that reads another stage accepts less
// lateness than it: the upstream's late updates (and, in mode final, its
// rows) arrive after the downstream window closed.
func (ck *checker) stageLateness() {
	for i, st := range ck.stages {
		if st.Input == "source" {
			continue
		}
		u := ck.stageIndex(st.Input)
		if u < 0 {
			continue
		}
		up := ck.stages[u]
		if st.AllowedLateness >= up.AllowedLateness {
			continue
		}
		ck.add(ruleStageLateness, Error, ck.prefix(i)+"allowed_lateness",
			fmt.Sprintf("stage %s revises its rows for %s after a window ends, but stage %s closes its windows %s after they end: the later revisions are too late here and its results miss them", up.Name, sd(up.AllowedLateness), st.Name, sd(st.AllowedLateness)),
			fmt.Sprintf("set allowed_lateness of stage %s to at least %s", st.Name, sd(up.AllowedLateness)))
	}
}

// joinInputStall is TM207: a join stage reading a live Kafka input (no
// stop_at_end). The join's watermark is the minimum of its sides'
// (docs/semantics.md, "Joins"); an input's watermark leaves its idle
// partitions out but holds when none is active, and
// event_time.idle_advance is not available for inputs, so an input that
// stops producing holds every row of the join behind it. A warning per
// side, naming the input.
func (ck *checker) joinInputStall() {
	for i, st := range ck.p.Stages {
		j := st.Join
		if j == nil {
			continue
		}
		seen := map[string]bool{}
		for _, side := range []struct {
			name string
			s    spec.JoinSide
		}{{"left", j.Left}, {"right", j.Right}} {
			name := side.s.Input
			if name == "" {
				name = "source"
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			src := &ck.p.Source
			for k := range ck.p.Inputs {
				if ck.p.Inputs[k].Name == name {
					src = &ck.p.Inputs[k].Source
				}
			}
			if name == "reference" || src.Type != "kafka" || src.StopAtEnd {
				continue
			}
			ck.add(ruleJoinInputStall, Warning, fmt.Sprintf("stages[%d].join.%s.input", i, side.name),
				fmt.Sprintf("stage %s joins %s, a live Kafka input: the join's watermark is the lower of its sides', and an input none of whose partitions produces holds its watermark (event_time.idle_advance is not available for inputs), so while %s is quiet the join emits nothing past its last record", st.Name, name, name),
				fmt.Sprintf("keep %s producing (e.g. periodic heartbeat records per partition), or read it bounded (stop_at_end on its source) for a backfill", name))
		}
	}
}
