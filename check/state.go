package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/source/nexmark"
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

// Bytes of keyed state in the memory backend's structures, from which
// TM304 estimates a pipeline's state (amd64).
const (
	// dedupBytesPerID is a remembered id in a dedup table: 16-byte slots
	// in an open-addressing table kept 37.5–75 % full (21 to 43 bytes per
	// id), 33.5 measured at 1M ids (dedup.BenchmarkBytesPerID), rounded
	// up.
	dedupBytesPerID = 34
	// windowEntryBytes is a (window, key) entry of a window operator
	// without its accumulators: the pane's entry (40 bytes) and its index
	// entry (24 bytes), as the operator's own state estimate counts them
	// (operator/panes.go).
	windowEntryBytes = 64
	// windowKeyBytes is a group key's entry in an operator's key table:
	// the entry (32 bytes) and its map entry (48 bytes), its encoding not
	// counted (operator/keys.go).
	windowKeyBytes = 80
	// distinctValueBytes is one value in a count_distinct set: an 8-byte
	// hash in a table at most half full.
	distinctValueBytes = 16
)

// stateRate returns the events per second TM304 estimates with, and where
// it comes from: the contract's rate, else a Nexmark source's rate (its
// default when unset); 0 when neither states one.
func (ck *checker) stateRate() (int64, string) {
	if ck.c != nil && ck.c.Rate > 0 {
		return ck.c.Rate, fmt.Sprintf("the rate of contract %s", ck.c.Product)
	}
	if s := ck.p.Source; s.Type == "nexmark" {
		if s.Rate > 0 {
			return s.Rate, "source.rate"
		}
		return nexmark.DefaultRate, "source.rate's default"
	}
	return 0, ""
}

// windowState is TM304's bound on one stage's window state.
type windowState struct {
	stage   string
	entries int64 // (window, key) entries at most
	keys    int64 // keys at most; -1: bounded by the events only
	bytes   int64
}

// keyCardinality is the product of the contract's cardinalities of the
// stage's key fields, or -1 when a key field has none.
func (ck *checker) keyCardinality(key []string) int64 {
	if ck.c == nil || len(key) == 0 {
		return -1
	}
	k := int64(1)
	for _, name := range key {
		f, ok := ck.c.Field(name)
		if !ok || f.Cardinality <= 0 {
			return -1
		}
		if k > (1<<62)/f.Cardinality {
			return -1
		}
		k *= f.Cardinality
	}
	return k
}

// windowBound bounds the window state of stage i, which reads the source
// at rate events/s. A window's entries live from its first event until
// the watermark passes its end + allowed lateness, so ⌈(size +
// out_of_orderness + allowed_lateness) / slide⌉ windows are open at once
// (the slide is the size for tumbling windows; a cumulate period's
// size/step windows per open period); each holds at most a key per event
// of its size, and at most the key fields' cardinalities multiplied. A
// session holds an event's key for gap + out_of_orderness +
// allowed_lateness. ok is false for a stage it cannot bound (a global
// window, a join, a stage reading another stage, whose rate is not the
// source's).
func (ck *checker) windowBound(i int, rate int64) (windowState, bool) {
	st := ck.stages[i]
	if st.Join != nil || st.Window.Type == "" || st.Window.Type == "global" {
		return windowState{}, false
	}
	if in := st.Input; (in != "" && in != "source") || (i > 0 && in == "") {
		return windowState{}, false
	}
	w := st.Window
	late := ck.p.EventTime.OutOfOrderness.D() + st.AllowedLateness.D()
	events := func(d time.Duration) int64 { return rate * int64(d/time.Millisecond) / 1000 }
	keys := ck.keyCardinality(st.Key)
	capKeys := func(n int64) int64 {
		if keys >= 0 && keys < n {
			return keys
		}
		return n
	}
	ceil := func(a, b time.Duration) int64 { return int64((a + b - 1) / b) }
	var open, perWindow, live int64
	switch w.Type {
	case "session":
		open, perWindow = 1, capKeys(events(w.Gap.D()+late))
		live = perWindow
	case "cumulate":
		if w.Step <= 0 || w.Size <= 0 {
			return windowState{}, false
		}
		open = ceil(w.Size.D()+late, w.Size.D()) * int64(w.Size.D()/w.Step.D())
		perWindow = capKeys(events(w.Size.D()))
		live = capKeys(events(w.Size.D() + late))
	default:
		slide := w.Size.D()
		if w.Type == "sliding" && w.Slide > 0 {
			slide = w.Slide.D()
		}
		if slide <= 0 {
			return windowState{}, false
		}
		open = ceil(w.Size.D()+late, slide)
		perWindow = capKeys(events(w.Size.D()))
		live = capKeys(events(w.Size.D() + late))
	}
	entry := int64(windowEntryBytes)
	if ck.plan != nil && i < len(ck.plan.Stages) {
		ps := ck.plan.Stages[i]
		for j, c := range ps.Operator.Aggs {
			entry += int64(c.SlotBytes())
			if j < len(ps.Aggs) && ps.Aggs[j].Func == "count_distinct" {
				// A set holds up to the window's events.
				entry += distinctValueBytes * max(events(w.Size.D())/max(perWindow, 1), 1)
			}
		}
	}
	ws := windowState{stage: st.Name, entries: open * perWindow, keys: keys}
	ws.bytes = ws.entries*entry + live*windowKeyBytes
	return ws, true
}

// stateEstimate is TM304: the keyed state a rate implies — dedup ids per
// TTL, window entries — against the memory budget, state.memory (its
// default for the memory backend, which has none): whether the disk
// backend is needed, or not.
func (ck *checker) stateEstimate() {
	rate, from := ck.stateRate()
	d := ck.p.Dedup
	if rate == 0 {
		return // docs/check.md, "What check cannot know"
	}
	budget, budgetFrom := int64(spec.DefaultStateMemory), "state.memory's default budget,"
	disk := ck.p.State.Backend == "disk"
	if disk && ck.p.State.Memory > 0 {
		budget, budgetFrom = int64(ck.p.State.Memory), "the budget state.memory"
	}
	ooo := ck.p.EventTime.OutOfOrderness.D()
	var parts []string
	var total, ids int64
	if d != nil {
		ids = rate * int64((d.TTL.D()+ooo)/time.Millisecond) / 1000
		total += ids * dedupBytesPerID
		parts = append(parts, fmt.Sprintf("dedup %s ids (%s events/s × (ttl %s + out_of_orderness %s)) × %d bytes = %s", thousands(ids), thousands(rate), sd(d.TTL), dur(ooo), dedupBytesPerID, bytesText(ids*dedupBytesPerID)))
	}
	var windows int64
	guessed := false // a window's keys bounded by its events only
	for i := range ck.stages {
		ws, ok := ck.windowBound(i, rate)
		if !ok {
			continue
		}
		windows += ws.bytes
		bound := "every event a key of its own"
		if ws.keys >= 0 {
			bound = fmt.Sprintf("%s keys by the contract's cardinalities", thousands(ws.keys))
		} else {
			guessed = true
		}
		parts = append(parts, fmt.Sprintf("stage %s at most %s window entries (%s; %s)", ws.stage, thousands(ws.entries), bound, bytesText(ws.bytes)))
	}
	total += windows
	if len(parts) == 0 {
		return
	}
	est := strings.Join(parts, ", ")
	at := fmt.Sprintf("at %s events/s (%s)", thousands(rate), from)
	switch {
	case !disk && total > budget && (!guessed || ids*dedupBytesPerID > budget):
		ck.add(ruleStateEstimate, Warning, "state.backend",
			fmt.Sprintf("%s the keyed state is about %s: %s; the memory backend keeps it all in the Go heap, %.1f× %s %s", at, bytesText(total), est, float64(total)/float64(budget), budgetFrom, bytesText(budget)),
			fmt.Sprintf("set state: {backend: disk, memory: %s} (docs/state.md): the state goes to local disk and memory stays within the budget", bytesText(budget)))
	case !disk && total > budget:
		ck.add(ruleStateEstimate, Info, "state.backend",
			fmt.Sprintf("%s the keyed state is at most %s: %s; above %s %s, but only if the group keys are that many", at, bytesText(total), est, budgetFrom, bytesText(budget)),
			"state the key fields' cardinality in the contract (fields.<name>.cardinality) for an estimate, or set state: {backend: disk} (docs/state.md)")
	case disk && total <= budget/2:
		ck.add(ruleStateEstimate, Info, "state.backend",
			fmt.Sprintf("%s the keyed state is at most %s: %s; within half %s %s, the memory backend holds it and is faster", at, bytesText(total), est, budgetFrom, bytesText(budget)),
			"keep state.backend memory (the default) unless the state outgrows this estimate")
	}
}

// thousands renders n with thousands separators: 864,000,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// bytesText renders n bytes in the largest binary unit it reaches, with
// one decimal below 100 of it: 27.4GiB, 512MiB, 900B.
func bytesText(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	switch {
	case u == 0:
		return fmt.Sprintf("%dB", n)
	case v < 100 && v != float64(int64(v)):
		return fmt.Sprintf("%.1f%s", v, units[u])
	}
	return fmt.Sprintf("%.0f%s", v, units[u])
}
