package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// The router's per-record work (docs/semantics.md, "Order of operations"),
// in arrival order:
//
//  1. processing time advances to the record's arrival (or the clock):
//     idle partitions stop holding the watermark, early firings fire;
//  2. an undecodable record, a null event time, one outside the backfill
//     range, one breaking a contract rule or a timestamp rule
//     (event_time.max_future, max_past, ingest_time_field), or one with a
//     null event id or entity goes to quarantine (or is skipped) and never
//     moves the watermark;
//  3. the record goes to the task owning its key group: of its event id
//     (dedup), else of its entity (order_by), else of each root stage's
//     group key (after the stage's filter and derived fields);
//  4. its partition's watermark observes its event time; if the pipeline
//     watermark advanced, every task receives the advance after the
//     record.
//
// Steps 1 and 4 make markers; each record and marker takes the next step.
//
// Partitions (docs/semantics.md, "Watermarks"): a partition the source
// knows before reading its records (a Kafka partition, a replay
// partition) counts from when the router learns of it, holding the
// watermark back until its first record or its idle timeout; one found in
// the data (a file's partition_field) counts from its first valid record,
// so where the read batches begin and end does not matter.

// routerRules is what the router derives from the plan once, at open.
type routerRules struct {
	// discovered: the source's partitions are found in the data (a file
	// with partition_field and no replay): they count from their first
	// record (watermark.Tracker.AddDiscovered).
	discovered bool
	// fileClock: the source is a file, whose records without a recorded
	// arrival time are judged by the timestamp rules against start.
	fileClock bool
	start     int64 // Options.Clock when the run started (ms)
	// timeRules: a timestamp rule is on.
	timeRules bool
}

// initRouter builds the watermark tracker (with idle advance) and the
// router's rules from the plan.
func (rt *runtime) initRouter() {
	p := rt.plan
	et := p.Spec.EventTime
	rt.tracker = watermark.New(et.OutOfOrderness.Ms(), et.IdleTimeout.Ms())
	if et.IdleAdvance {
		rt.tracker.SetIdleAdvance(p.IdleAdvanceLimit())
	}
	src := p.Spec.Source
	tr := p.Time
	rt.rules = routerRules{
		discovered: src.Type == "file" && src.PartitionField != "" && src.Replay == nil,
		fileClock:  src.Type == "file",
		timeRules:  tr.MaxFuture > 0 || tr.MaxPast > 0 || tr.HasIngest,
	}
	if rt.rules.fileClock && rt.rules.timeRules {
		rt.rules.start = rt.opts.Clock()
	}
}

// checkTime runs the pipeline's timestamp rules (docs/semantics.md,
// "Timestamp rules") on a record with event time ts that arrived at
// processing time now: max_future and max_past against the record's
// recorded arrival time, else (a file source) the time the run started,
// else now; then the ingest time. It returns the broken rule's name, the
// field and the reason, or ok.
func (rt *runtime) checkTime(r *row.Row, m *source.Meta, ts, now int64) (rule, field, reason string, ok bool) {
	return checkTimeRules(&rt.plan.Time, &rt.rules, rt.etField.Name, r, m, ts, now)
}

// checkTimeRules is checkTime for the rules tr of an input whose event-time
// field is et.
func checkTimeRules(tr *plan.TimeRules, rules *routerRules, et string, r *row.Row, m *source.Meta, ts, now int64) (rule, field, reason string, ok bool) {
	broken, pt := brokenTimeRule(tr, rules, r, m, ts, now)
	switch broken {
	case ruleMaxFuture:
		d, _ := exceeds(ts, pt, tr.MaxFuture)
		return "max_future", et, fmt.Sprintf("event time %s is %s after its processing time %s; event_time.max_future is %s",
			row.FormatTime(ts, nil), formatMs(d), row.FormatTime(pt, nil), formatMs(uint64(tr.MaxFuture))), false
	case ruleMaxPast:
		d, _ := exceeds(pt, ts, tr.MaxPast)
		return "max_past", et, fmt.Sprintf("event time %s is %s before its processing time %s; event_time.max_past is %s",
			row.FormatTime(ts, nil), formatMs(d), row.FormatTime(pt, nil), formatMs(uint64(tr.MaxPast))), false
	case ruleIngest:
		in := r.I[tr.Ingest.Slot]
		return "ingest_time", tr.Ingest.Name, fmt.Sprintf("event time %s is after its ingest time %s %s: an event cannot be produced before it happened (event_time.ingest_time_field)",
			row.FormatTime(ts, nil), tr.Ingest.Name, row.FormatTime(in, nil)), false
	}
	return "", "", "", true
}

// judgedAt is the processing time a record with meta m arriving at now
// is judged against by the timestamp rules: its recorded arrival time,
// else (a file source) the time the run started, else now.
func (rules *routerRules) judgedAt(m *source.Meta, now int64) int64 {
	switch {
	case m.Arrival != source.NoArrival:
		return m.Arrival
	case rules.fileClock:
		return rules.start
	}
	return now
}

// The timestamp rules brokenTimeRule reports.
const (
	ruleNone = iota
	ruleMaxFuture
	ruleMaxPast
	ruleIngest
)

// brokenTimeRule returns the first timestamp rule of tr (max_future,
// max_past, ingest time) a record with event time ts, arriving at
// processing time now, breaks (ruleNone: none), and the processing time
// pt it was judged against: the record's recorded arrival time, else (a
// file source) the time the run started, else now. It is the check
// alone, for every record; checkTimeRules words a broken rule.
func brokenTimeRule(tr *plan.TimeRules, rules *routerRules, r *row.Row, m *source.Meta, ts, now int64) (broken int, pt int64) {
	pt = rules.judgedAt(m, now)
	if _, over := exceeds(ts, pt, tr.MaxFuture); tr.MaxFuture > 0 && over {
		return ruleMaxFuture, pt
	}
	if _, over := exceeds(pt, ts, tr.MaxPast); tr.MaxPast > 0 && over {
		return ruleMaxPast, pt
	}
	if tr.HasIngest && !r.IsNull(tr.Ingest.Index) && ts > r.I[tr.Ingest.Slot] {
		return ruleIngest, pt
	}
	return ruleNone, pt
}

// timeBounds is the range of event times that break no timestamp rule
// of a record judged against processing time pt (brokenTimeRule), when
// the rules are max_future and max_past only: [lo, hi].
type timeBounds struct {
	set    bool // pt, lo and hi hold
	pt     int64
	lo, hi int64
}

// timeOK reports whether a record with event time ts, meta m, arriving
// at processing time now certainly breaks no timestamp rule: its event
// time is within the bounds of its processing time (those of the
// previous record, most often: a batch's records share it). It is false
// with an ingest-time rule, which reads the record. brokenTimeRule
// decides when it is false.
func (rt *runtime) timeOK(m *source.Meta, ts, now int64) bool {
	pt := rt.rules.judgedAt(m, now)
	tb := &rt.bounds
	if !tb.set || tb.pt != pt {
		rt.setBounds(pt)
	}
	return ts >= tb.lo && ts <= tb.hi
}

// setBounds sets rt.bounds for processing time pt: ts ≤ pt + max_future
// and ts ≥ pt − max_past (saturated at the int64 bounds, where every ts
// passes), an empty range with an ingest-time rule.
func (rt *runtime) setBounds(pt int64) {
	tr := &rt.plan.Time
	tb := timeBounds{set: true, pt: pt, lo: math.MinInt64, hi: math.MaxInt64}
	if tr.MaxFuture > 0 && pt <= math.MaxInt64-tr.MaxFuture {
		tb.hi = pt + tr.MaxFuture
	}
	if tr.MaxPast > 0 && pt >= math.MinInt64+tr.MaxPast {
		tb.lo = pt - tr.MaxPast
	}
	if tr.HasIngest {
		tb.lo, tb.hi = 1, 0
	}
	rt.bounds = tb
}

// exceeds reports whether a − b > limit (limit ≥ 0), and a − b, without
// overflowing for any a and b.
func exceeds(a, b, limit int64) (uint64, bool) {
	if a <= b {
		return 0, false
	}
	d := uint64(a) - uint64(b) // the true difference: it fits in uint64
	return d, d > uint64(limit)
}

// formatMs writes a positive number of milliseconds as a Go duration
// ("48h0m0s"), or in whole hours when it does not fit a time.Duration.
func formatMs(ms uint64) string {
	if ms <= math.MaxInt64/uint64(time.Millisecond) {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return strconv.FormatUint(ms/uint64(time.Hour/time.Millisecond), 10) + "h"
}

// nextStep returns a new step number.
func (rt *runtime) nextStep() uint64 {
	rt.step++
	return rt.step
}

// routeBatch routes the records of b; more is false at the end of a
// bounded input.
func (rt *runtime) routeBatch(b *source.Batch, more bool) error {
	if err := rt.checkFirstBatch(b, 0, rt.src); err != nil {
		return err
	}
	if b.Len() == 0 && more {
		// An empty read (a log source with nothing new): processing time
		// still advances — idleness, early firings, checkpoints.
		now := rt.opts.Clock()
		if err := rt.addPartitions(-1, now); err != nil {
			return err
		}
		rt.tick(now)
		return nil
	}
	clock := changelog.WatermarkNone
	// The source's partitions change only when it reads (Next): once
	// per batch.
	known := rt.sourceParts()
	if rt.disk != nil && rt.par == 1 {
		if err := rt.prefetchIDs(b); err != nil {
			return err
		}
	}
	for i := range b.Meta {
		m := &b.Meta[i]
		now := m.Arrival
		if now == source.NoArrival {
			if clock == changelog.WatermarkNone {
				clock = rt.opts.Clock()
			}
			now = clock
		}
		rt.preI = i
		if err := rt.record(&b.Rows[i], m, now, known); err != nil {
			return err
		}
	}
	return rt.pushErr
}

// record runs one source record through the router's checks and hands it
// to the tasks. known is the number of partitions the source knows
// (len(Source.Partitions())).
func (rt *runtime) record(r *row.Row, m *source.Meta, now int64, known int) error {
	recNow := now // the record's own processing time (the clock of its batch)
	rt.events++
	if m.Redelivery {
		rt.redeliver++
	}
	if rt.parts < known || rt.parts <= m.Partition {
		// addPartitions has partitions to add (its loop's condition).
		if err := rt.addPartitions(m.Partition, now); err != nil {
			return err
		}
	}
	rt.tick(now)
	now = rt.now
	step := rt.nextStep()
	snd := rt.rsnd
	if m.Err != nil {
		snd.QuarantineSource(step, m, m.Err.Reason, m.Err.Field, m.Err.Rule)
		return nil
	}
	if f := rt.ptField; f.Index >= 0 {
		// source.processing_time_field: the record's processing time.
		r.I[f.Slot] = recNow
		r.SetValid(f.Index)
	}
	if rt.ref != nil {
		rt.ref.fill(r, r.I[rt.etField.Slot], !r.IsNull(rt.etField.Index))
	}
	if rt.absent > 0 {
		for i, seen := range rt.present {
			if !seen && !r.IsNull(i) {
				rt.present[i] = true
				rt.absent--
			}
		}
	}
	if rt.plan.Changes != nil {
		rt.change(r, m, now, recNow, step)
		return nil
	}
	if r.IsNull(rt.etField.Index) {
		snd.QuarantineSource(step, m, "event-time field "+rt.etField.Name+" is null or missing", rt.etField.Name, "event_time")
		return nil
	}
	ts := r.I[rt.etField.Slot]
	if rg := rt.opts.Range; rg != nil && (ts < rg.From || ts >= rg.To) {
		// Skipped outright: it does not move the watermark either, so the
		// range's events are deduplicated over the whole range (the TTL
		// counts from the watermark) and none is too late because of an
		// event outside the range (docs/reprocessing.md).
		rt.outside++
		return nil
	}
	p := rt.plan
	pre := rt.pre
	if rules := p.Rules; rules != nil && (pre == nil || pre.flags[rt.preI]&preRulesOK == 0) {
		arrival := now
		if p.HasIngest && !r.IsNull(p.Ingest.Index) {
			arrival = r.I[p.Ingest.Slot]
		}
		if rule, field, reason, ok := rules.Check(r, ts, arrival); !ok {
			snd.QuarantineSource(step, m, reason, field, rule)
			return nil
		}
	}
	if rt.rules.timeRules && !rt.timeOK(m, ts, recNow) {
		if broken, _ := brokenTimeRule(&p.Time, &rt.rules, r, m, ts, recNow); broken != ruleNone {
			rule, field, reason, _ := rt.checkTime(r, m, ts, recNow)
			snd.QuarantineSource(step, m, reason, field, rule)
			return nil
		}
	}
	var id task.ID
	if d := p.Dedup; d != nil && pre != nil && pre.flags[rt.preI]&preID != 0 {
		id = pre.id(rt.preI) // computed by the decoder (prefront.go)
	} else if d != nil {
		v, err := d.Key.Eval(r)
		if err != nil || v.IsNull() {
			reason := "the event id (dedup.key) is null"
			if err != nil {
				reason = "the event id (dedup.key): " + err.Error()
			}
			snd.QuarantineSource(step, m, reason, "", "dedup")
			return nil
		}
		rt.idText = v.AppendText(rt.idText[:0], nil)
		id = task.ID{Text: rt.idText, Hash: dedup.IDHash(rt.idText), Has: true}
	}
	if o := p.OrderBy; o != nil {
		if r.IsNull(o.Key.Index) {
			snd.QuarantineSource(step, m, "order_by: the entity key "+o.Key.Name+" is null", o.Key.Name, "order_by")
			return nil
		}
		if r.IsNull(o.Version.Index) {
			snd.QuarantineSource(step, m, "order_by: the version "+o.Version.Name+" is null", o.Version.Name, "order_by")
			return nil
		}
	}
	switch {
	case rt.g.DedupNode >= 0:
		snd.ToDedup(step, now, r, m, ts, id)
	case rt.g.OrderNode >= 0:
		snd.ToOrder(step, now, r, m, ts, id)
	case pre != nil && len(pre.verdict) > 0 && pre.verdict[rt.preI] != task.PreRouter:
		// The decoder ran the root stage's front (prefront.go).
		si := rt.g.Roots[0]
		switch {
		case pre.verdict[rt.preI] == task.PreFiltered:
			snd.FrontFiltered(si)
		case pre.keyed:
			snd.KeyedPrepared(si, step, now, r, pre.input(rt.preI), m, ts, int(pre.owner[rt.preI]))
		default:
			snd.SelectPrepared(si, step, now, r, ts, pre.row(rt.preI))
		}
	default:
		snd.ToRoots(step, nil, now, r, m, ts, 1, &id, true)
	}
	if wm := rt.tracker.Observe(m.Partition, ts, now); wm > rt.wm {
		rt.advance(wm)
	}
	return nil
}

// change is record's path for a change stream (package source, "Change
// streams"), after the decoding and the reference data. A delete carries
// only its key: its event time may be null (its retraction goes to the
// windows of the key's previous row, at that row's event time), and
// neither the backfill range nor the timestamp rules judge it. The
// contract's rules run in the order_by step (task/order.go), once the
// values an update left unchanged are filled in from the key's previous
// row. A record with an event time moves the watermark.
func (rt *runtime) change(r *row.Row, m *source.Meta, now, recNow int64, step uint64) {
	p := rt.plan
	snd := rt.rsnd
	if o := p.OrderBy; r.IsNull(o.Key.Index) || r.IsNull(o.Version.Index) {
		snd.QuarantineSource(step, m, "the change has no key or version (__key, __lsn)", o.Key.Name, "key")
		return
	}
	op := p.Changes.Op
	del := !r.IsNull(op.Index) && r.S[op.Slot] == record.OpDelete
	hasTS := !r.IsNull(rt.etField.Index)
	var ts int64
	switch {
	case hasTS:
		ts = r.I[rt.etField.Slot]
	case !del:
		snd.QuarantineSource(step, m, "event-time field "+rt.etField.Name+" is null or missing", rt.etField.Name, "event_time")
		return
	}
	if !del {
		if rg := rt.opts.Range; rg != nil && (ts < rg.From || ts >= rg.To) {
			rt.outside++
			return
		}
		if rt.rules.timeRules && !rt.timeOK(m, ts, recNow) {
			if broken, _ := brokenTimeRule(&p.Time, &rt.rules, r, m, ts, recNow); broken != ruleNone {
				rule, field, reason, _ := rt.checkTime(r, m, ts, recNow)
				snd.QuarantineSource(step, m, reason, field, rule)
				return
			}
		}
	}
	snd.ToOrder(step, now, r, m, ts, task.ID{})
	if hasTS {
		if wm := rt.tracker.Observe(m.Partition, ts, now); wm > rt.wm {
			rt.advance(wm)
		}
	}
}

// addPartitions starts tracking the source's partitions seen so far (and
// partition p), at processing time now.
func (rt *runtime) addPartitions(p int, now int64) error {
	now = max(now, rt.now)
	for rt.parts < rt.sourceParts() || rt.parts <= p {
		if rt.parts == MaxPartitions {
			return fmt.Errorf("source: more than %d partitions: a partition (partition_field) stands for a log partition, a few dozen values each keeping a watermark, not an entity such as a customer (use it as a key instead)", MaxPartitions)
		}
		if rt.rules.discovered {
			rt.tracker.AddDiscovered(rt.parts, now)
		} else {
			rt.tracker.AddPartition(rt.parts, now)
		}
		rt.parts++
	}
	return nil
}

// sourceParts is the number of partitions the source knows after the
// batch being routed: len(Partitions()), or with decoders what it was
// right after the batch's claim (the source has claimed further since).
func (rt *runtime) sourceParts() int {
	if rt.split != nil {
		return rt.srcKnown
	}
	return len(rt.src.Partitions())
}

// tick advances processing time to now (it never goes back): idle
// partitions stop holding the watermark, early firings fire. The
// inputs' and early firings' work is tickMore's, out of the common path.
func (rt *runtime) tick(now int64) {
	if now > rt.now {
		rt.now = now
	}
	if wm := rt.tracker.Tick(rt.now); wm > rt.wm {
		rt.advance(wm)
	}
	if len(rt.ins) > 0 || rt.anyEarly {
		rt.tickMore(rt.now)
	}
}

// tickMore is tick's work for several inputs and early firings.
func (rt *runtime) tickMore(now int64) {
	if len(rt.ins) > 0 {
		rt.tickInputs(now)
	}
	if !rt.anyEarly || rt.midTxn {
		// Inside an upstream transaction an early firing would show part
		// of it (source.Transactional): it waits for the next boundary.
		return
	}
	var due []int
	for si, e := range rt.early {
		if e != nil && e.Due(now) {
			due = append(due, si)
		}
	}
	if len(due) > 0 {
		rt.marker(task.Marker{Step: rt.nextStep(), Kind: task.Early, Now: now, Stages: due})
	}
}

// marker hands a marker to the tasks: with the round, or (one task, push
// mode) at once.
func (rt *runtime) marker(m task.Marker) {
	if rt.groupMarker != nil {
		rt.groupMarker(m) // a group run's source task (PartRouter)
		return
	}
	if rt.inline {
		if err := rt.tasks[0].PushMarker(&m); err != nil && rt.pushErr == nil {
			rt.pushErr = err
		}
		return
	}
	rt.cur.round.Markers = append(rt.cur.round.Markers, m)
}

// advance hands a new pipeline watermark to every task.
func (rt *runtime) advance(wm int64) {
	rt.wm = wm
	rt.rsnd.SetWatermark(wm)
	rt.marker(task.Marker{Step: rt.nextStep(), Kind: task.Advance, WM: wm, Now: rt.now})
}

// due reports whether a periodic checkpoint is due.
func (rt *runtime) due() bool {
	ck := rt.ck
	if ck == nil {
		return false
	}
	select {
	case <-rt.opts.CheckpointNow:
		return true
	default:
	}
	return rt.opts.WallClock().Sub(ck.lastRouted) >= ck.interval
}

// liveDue reports whether a monitoring snapshot is due after this round.
func (rt *runtime) liveDue() bool {
	if rt.opts.Live == nil {
		return false
	}
	now := rt.opts.WallClock()
	if now.Sub(rt.lastLive) < rt.opts.LiveEvery {
		return false
	}
	rt.lastLive = now
	return true
}

// progress calls Options.Progress when due.
func (rt *runtime) progress() {
	if rt.opts.Progress == nil || rt.events < rt.nextProgress {
		return
	}
	pr := Progress{Events: rt.events, Watermark: rt.wm, Elapsed: time.Since(rt.progressStart)}
	if s, ok := rt.src.(interface{ Progress() (int64, int64) }); ok {
		pr.Done, pr.Total = s.Progress()
	}
	rt.opts.Progress(pr)
	rt.nextProgress = rt.events + rt.opts.ProgressEvery
}
