// Package engine runs a compiled plan: it reads the source in batches,
// drives the watermark tracker and each stage's window operator, and writes
// results and side outputs to sinks.
//
// The engine is the one place that touches clocks and IO; the operator and
// the watermark tracker it drives are pure state machines. Processing time
// comes from each record's recorded arrival time when the source has one
// (file replay, arrival_time_field), otherwise from Options.Clock, read
// once per batch.
//
// Per record, in order (docs/semantics.md, "Order of operations"):
//
//  1. processing time advances: idle partitions are detected and early
//     firings run;
//  2. an undecodable record, a null event time or an expression error sends
//     the record to quarantine (it never moves the watermark);
//  3. the filter drops records (they still move the watermark);
//  4. derived fields are computed and the record enters its windows, judged
//     against the watermark as it was before the record;
//  5. the source partition's watermark observes the event time and the
//     pipeline watermark, if it advanced, fires and closes windows.
//
// Rows a stage emits go to its sinks and, in the same order, to the stages
// that read its changelog, before those stages see the new watermark.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/watermark"
)

// MaxPartitions bounds the source partitions of a run: each keeps a
// watermark, and the pipeline watermark is their minimum.
const MaxPartitions = 10_000

// Options configures a run. The zero value is usable.
type Options struct {
	// Clock returns the processing time in ms since the epoch for records
	// without a recorded arrival time. Default: the wall clock.
	Clock func() int64
	// Stdout receives stdout sinks. Default os.Stdout.
	Stdout io.Writer
	// Registry maps sink types to constructors. Default DefaultRegistry().
	Registry *Registry
	// Source replaces the source the spec describes (library use). It must
	// decode rows shaped by Plan.SourceSchema.
	Source source.Source
	// BatchSize is the number of records read per source call. Default 1024.
	BatchSize int
	// Progress, when set, is called about every ProgressEvery records.
	Progress func(Progress)
	// ProgressEvery is in records. Default 200,000.
	ProgressEvery int64
	// FlushEvery is the number of batches between sink flushes. Default 512.
	FlushEvery int

	// CheckpointNow, when the pipeline has checkpoints, makes the run take
	// one at the next batch boundary for every value received (a
	// savepoint on demand).
	CheckpointNow <-chan struct{}
	// WallClock times checkpoint intervals. Default time.Now.
	WallClock func() time.Time
	// Logf receives log lines (restores, unusable checkpoints). Default:
	// none.
	Logf func(format string, args ...any)
	// FaultHook, for crash tests, is called at named points of the
	// checkpoint protocol: "prepared" (sinks prepared, checkpoint not yet
	// written), "written" (checkpoint written, no sink committed) and
	// "committed:<sink id>" (after that sink's commit), with the
	// checkpoint id.
	FaultHook func(point string, id int64)

	// Lineage makes every result row record where it comes from, in the
	// last column "lineage" (LineageColumn; Lineage.String): the
	// pipeline, its spec hash, the tidemark build, the contract's
	// schema_version and the reference data's version. `tidemark run`
	// sets it. Default false.
	Lineage bool
	// ReplayID tags a backfill's rows (the lineage's replay=…).
	ReplayID string

	// Range, when set, keeps only the records whose event time is in
	// [Range.From, Range.To) ms (a backfill); the others are counted
	// (Summary.OutsideRange) and skipped before the contract, dedup and
	// the stages, and do not move the watermark.
	Range *TimeRange

	// Live, when set, receives a snapshot of the run for monitoring
	// (package metrics): at a batch boundary at most every LiveEvery of
	// wall-clock time, after each checkpoint, and when the run ends. It is
	// called on the runner's goroutine: it must return quickly.
	Live func(*Live)
	// LiveEvery is the least wall-clock time between two snapshots.
	// Default 1s.
	LiveEvery time.Duration
	// HotKeys is how many of each stage's keys holding the most state a
	// snapshot lists (Live.Stages[].HotKeys). Default 0: none (listing
	// walks every key).
	HotKeys int
}

// TimeRange is an interval of event time, [From, To) in ms since the epoch.
type TimeRange struct{ From, To int64 }

// Progress is a progress report during a run.
type Progress struct {
	Events    int64         // records read so far
	Watermark int64         // pipeline watermark (ms)
	Elapsed   time.Duration // wall time since the start
	// Done and Total measure the input read so far when the source knows
	// its size (files: bytes; the Nexmark generator: events); Total is 0
	// otherwise (an unbounded log).
	Done, Total int64
}

// Run executes the plan until the source is exhausted (a bounded input) or
// ctx is cancelled, and returns the summary. Errors: a source or sink
// failure, an aggregate overflow, or ctx's error; sinks are closed either
// way.
func Run(ctx context.Context, p *plan.Plan, opts Options) (sum *Summary, err error) {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Registry == nil {
		opts.Registry = DefaultRegistry()
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1024
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 200_000
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 512
	}
	if opts.WallClock == nil {
		opts.WallClock = time.Now
	}
	if opts.LiveEvery <= 0 {
		opts.LiveEvery = time.Second
	}
	start := time.Now()
	cpu0 := cpuTime()
	release, err := guardOutputs(p.Spec, opts.Source == nil) // outputs checked and locked (paths.go)
	if err != nil {
		return nil, err
	}
	defer release() // after the sinks close (deferred below)
	rt := &runtime{plan: p, opts: opts, now: changelog.WatermarkNone}
	defer func() {
		if cerr := rt.close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := rt.open(ctx); err != nil {
		return nil, err
	}
	if rt.ck != nil {
		if err := rt.restore(ctx); err != nil {
			return nil, err
		}
		rt.ck.last = opts.WallClock()
	}
	stopped := false
	if err := rt.loop(ctx); err != nil {
		if rt.ck == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return nil, err
		}
		// A graceful stop (SIGINT, SIGTERM): the loop stopped at a batch
		// boundary; a final checkpoint lets the next run resume here.
		stopped = true
		if err := rt.takeCheckpoint(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
	} else if err := rt.finish(ctx); err != nil {
		return nil, err
	}
	if c, ok := rt.src.(interface{ CommitOffsets(context.Context) error }); ok && rt.ck != nil {
		// The last checkpoint's positions, for lag monitoring (Kafka's
		// consumer group); not part of the protocol, so only logged.
		if err := c.CommitOffsets(context.WithoutCancel(ctx)); err != nil {
			rt.logf("committing the source's offsets for monitoring: %v", err)
		}
	}
	rt.publishLive(true, true)
	s := rt.summary()
	s.Stopped = stopped
	s.Wall = time.Since(start)
	s.CPU = cpuTime() - cpu0
	return s, nil
}

type runtime struct {
	plan       *plan.Plan
	opts       Options
	env        Env
	src        source.Source
	tracker    *watermark.Tracker
	stages     []*stage
	roots      []*stage
	quarantine sink.Records
	etField    row.Field

	now       int64 // processing time, ms (monotone)
	wm        int64 // pipeline watermark last pushed to the stages
	parts     int   // partitions registered with the tracker
	events    int64
	redeliver int64
	batches   int
	buf       []byte
	closed    bool

	// present marks source fields seen non-null in at least one record;
	// absent counts those not yet seen (a misspelt name stays absent).
	present []bool
	absent  int

	enc       *changelog.Encoder // for pipeline-level side outputs
	dedup     *dedupStep
	order     *orderStep
	conflictS sink.Records

	quarantined, dups, conflicts, stale, superseded int64
	outside                                         int64 // records outside Options.Range
	resumedEvents                                   int64 // records read before the restored checkpoint
	firstQ                                          string
	byRule                                          map[string]int64 // quarantined records per contract rule

	ck      *ckState      // nil without checkpoints
	ledgers []*ledgerSink // every stage's ledger sinks

	linVal     row.Value    // the lineage column's value, null without lineage
	contribErr error        // the first contributions sink error (reported at the batch's end)
	ref        *reference   // the reference data, nil without
	lastLive   time.Time    // wall clock of the last Live snapshot
	commits    []SinkCommit // sink commits since the last snapshot
}

func (rt *runtime) open(ctx context.Context) error {
	p := rt.plan
	rt.env = Env{Stdout: rt.opts.Stdout, Pipeline: p.Spec.Name}
	rt.wm = watermark.None
	et := p.Spec.EventTime
	rt.tracker = watermark.New(et.OutOfOrderness.Ms(), et.IdleTimeout.Ms())
	f, ok := p.SourceSchema.Lookup(p.EventTimeField)
	if !ok {
		return fmt.Errorf("event-time field %q missing from the source schema", p.EventTimeField)
	}
	rt.etField = f
	rt.present = make([]bool, p.SourceSchema.Len())
	rt.absent = len(rt.present)
	if r := p.Spec.Reference; r != nil {
		ref, err := rt.loadReference(r)
		if err != nil {
			return &ConfigError{Err: err}
		}
		rt.ref = ref
	}
	// The source opens first: a run that cannot read its input must not
	// truncate or replace the outputs of the previous run.
	if rt.opts.Source != nil {
		rt.src = rt.opts.Source
	} else {
		src, err := rt.openSource()
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		rt.src = src
	}
	if c := p.Spec.Checkpoint; c != nil {
		spec, err := specJSON(p.Spec)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		rt.ck = &ckState{dir: c.Dir, interval: c.Interval.D(), retain: c.Retain, spec: spec}
		rt.env.Checkpoints = true
		ids, err := checkpoint.List(c.Dir)
		if err != nil {
			return fmt.Errorf("checkpoint.dir: %w", err)
		}
		rt.env.Restoring = len(ids) > 0
	}
	if q := p.Spec.Quarantine.Sink; q != nil {
		s, err := rt.opts.Registry.openRecords(ctx, *q, &rt.env)
		if err != nil {
			return fmt.Errorf("quarantine.sink: %w", err)
		}
		rt.quarantine = s
		if err := rt.registerSink("quarantine.sink", q.Type, q.Delivery, s, s.Flush); err != nil {
			return err
		}
	}
	rt.enc = changelog.NewEncoder(p.Stages[0].Loc)
	if rt.opts.Lineage {
		rt.linVal = row.Str(rt.lineage().String())
	}
	if c := p.Spec.Conflicts.Sink; c != nil {
		s, err := rt.opts.Registry.openRecords(ctx, *c, &rt.env)
		if err != nil {
			return fmt.Errorf("conflicts.sink: %w", err)
		}
		rt.conflictS = s
		if err := rt.registerSink("conflicts.sink", c.Type, c.Delivery, s, s.Flush); err != nil {
			return err
		}
	}
	if d := p.Dedup; d != nil {
		rt.dedup = &dedupStep{
			p:        d,
			table:    dedup.New(d.TTL),
			hasher:   dedup.NewHasher(d.Ignore),
			payloads: payloadCache{capacity: d.KeepPayloads},
			sink:     rt.conflictS,
			enc:      rt.enc,
		}
	}
	if o := p.OrderBy; o != nil {
		rt.order = &orderStep{p: o, state: map[string]*version{}}
	}
	for _, sp := range p.Stages {
		var op *operator.Operator
		if !sp.Desc.Stateless {
			var err error
			if op, err = operator.New(sp.Operator); err != nil {
				return fmt.Errorf("%s: %w", sp.Name, err)
			}
		}
		st := &stage{rt: rt, p: sp, op: op, enc: changelog.NewEncoder(sp.Loc)}
		for i, sk := range sp.Sinks {
			var s sink.Results
			var err error
			if sk.Type == "postgres" && sk.Mode == "ledger" {
				var ls *ledgerSink
				ls, err = rt.openLedger(ctx, st, sk, fmt.Sprintf("%s: sinks[%d]", sp.Name, i))
				if err == nil {
					st.ledger = append(st.ledger, ls)
					rt.ledgers = append(rt.ledgers, ls)
					s = ls
				}
			} else {
				s, err = rt.opts.Registry.openResults(ctx, sk, st.sinkDesc(), &rt.env)
			}
			if err != nil {
				return fmt.Errorf("%s: sinks[%d] (%s): %w", sp.Name, i, sk.Type, err)
			}
			st.sinks = append(st.sinks, s)
			if err := rt.registerSink(fmt.Sprintf("%s: sinks[%d]", sp.Name, i), sk.Type, sk.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
		if c := sp.Contributions; c != nil && c.Sink != nil && sp.Input < 0 && !sp.Desc.Stateless {
			s, err := rt.opts.Registry.openRecords(ctx, *c.Sink, &rt.env)
			if err != nil {
				return fmt.Errorf("%s: contributions.sink: %w", sp.Name, err)
			}
			st.contrib = s
			if err := rt.registerSink(sp.Name+": contributions.sink", c.Sink.Type, c.Sink.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
		if sp.Late.Policy == "side_output" && sp.Late.Sink != nil {
			s, err := rt.opts.Registry.openRecords(ctx, *sp.Late.Sink, &rt.env)
			if err != nil {
				return fmt.Errorf("%s: late.sink: %w", sp.Name, err)
			}
			st.late = s
			if err := rt.registerSink(sp.Name+": late.sink", sp.Late.Sink.Type, sp.Late.Sink.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
		if sp.Input >= 0 {
			up := rt.stages[sp.Input]
			up.down = append(up.down, st)
			st.in = sp.Schema.NewRow()
		} else {
			rt.roots = append(rt.roots, st)
		}
		rt.stages = append(rt.stages, st)
	}
	return nil
}

func (rt *runtime) loop(ctx context.Context) error {
	var b source.Batch
	nextProgress := rt.opts.ProgressEvery
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.Reset()
		rerr := rt.src.Next(ctx, &b, rt.opts.BatchSize)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("source: %w", rerr)
		}
		clock := changelog.WatermarkNone
		if b.Len() == 0 && rerr == nil {
			// An empty read (a log source with nothing new): processing
			// time still advances — idleness, early firings, checkpoints.
			now := rt.opts.Clock()
			if err := rt.addPartitions(-1, now); err != nil {
				return err
			}
			if err := rt.tick(ctx, now); err != nil {
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
			if err := rt.record(ctx, &b.Rows[i], m, now); err != nil {
				return err
			}
		}
		rt.batches++
		if rt.contribErr != nil {
			return rt.contribErr
		}
		// Select stages write the batch's rows now: they point into it.
		for _, st := range rt.stages {
			if err := st.flushSelect(ctx); err != nil {
				return err
			}
		}
		if err := rt.applyLedgers(ctx, ledgerBatch); err != nil {
			return err
		}
		rt.publishLive(false, false)
		if rt.ck != nil {
			if rerr == nil && rt.due() {
				if err := rt.takeCheckpoint(ctx); err != nil {
					return err
				}
			}
		} else if rt.batches%rt.opts.FlushEvery == 0 {
			if err := rt.flush(ctx); err != nil {
				return err
			}
		}
		if rt.opts.Progress != nil && rt.events >= nextProgress {
			pr := Progress{Events: rt.events, Watermark: rt.wm, Elapsed: time.Since(start)}
			if s, ok := rt.src.(interface{ Progress() (int64, int64) }); ok {
				pr.Done, pr.Total = s.Progress()
			}
			rt.opts.Progress(pr)
			nextProgress = rt.events + rt.opts.ProgressEvery
		}
		if rerr != nil { // io.EOF
			return nil
		}
	}
}

// record runs one source record through the root stages.
func (rt *runtime) record(ctx context.Context, r *row.Row, m *source.Meta, now int64) error {
	rt.events++
	if m.Redelivery {
		rt.redeliver++
	}
	if err := rt.addPartitions(m.Partition, now); err != nil {
		return err
	}
	if err := rt.tick(ctx, now); err != nil {
		return err
	}
	now = rt.now
	if m.Err != nil {
		return rt.quarantineAll(ctx, m, m.Err.Reason, m.Err.Field, m.Err.Rule)
	}
	if rt.ref != nil {
		rt.ref.fill(r)
	}
	if rt.absent > 0 {
		for i, seen := range rt.present {
			if !seen && !r.IsNull(i) {
				rt.present[i] = true
				rt.absent--
			}
		}
	}
	if r.IsNull(rt.etField.Index) {
		return rt.quarantineAll(ctx, m, "event-time field "+rt.etField.Name+" is null or missing", rt.etField.Name, "event_time")
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
	if rules := rt.plan.Rules; rules != nil {
		arrival := now
		if rt.plan.HasIngest && !r.IsNull(rt.plan.Ingest.Index) {
			arrival = r.I[rt.plan.Ingest.Slot]
		}
		if rule, field, reason, ok := rules.Check(r, ts, arrival); !ok {
			return rt.quarantineAll(ctx, m, reason, field, rule)
		}
	}
	if rt.dedup != nil {
		first, err := rt.dedup.observe(ctx, rt, r, m, ts)
		if err != nil || !first {
			return err
		}
	}
	var valid bool
	if rt.order != nil {
		var err error
		if valid, err = rt.order.apply(ctx, rt, r, m, ts); err != nil {
			return err
		}
	} else {
		org := origin{meta: m, src: rt.src}
		for _, st := range rt.roots {
			org.loc = st.p.Loc
			ok, err := st.process(ctx, r, ts, 1, &org)
			if err != nil {
				return err
			}
			valid = valid || ok
		}
	}
	if !valid {
		return nil
	}
	if wm := rt.tracker.Observe(m.Partition, ts, now); wm > rt.wm {
		return rt.advance(ctx, wm)
	}
	return nil
}

// addPartitions starts tracking the source's partitions seen so far (and
// partition p), at processing time now.
func (rt *runtime) addPartitions(p int, now int64) error {
	now = max(now, rt.now)
	for rt.parts < len(rt.src.Partitions()) || rt.parts <= p {
		if rt.parts == MaxPartitions {
			return fmt.Errorf("source: more than %d partitions: a partition (partition_field) stands for a log partition, a few dozen values each keeping a watermark, not an entity such as a customer (use it as a key instead)", MaxPartitions)
		}
		rt.tracker.AddPartition(rt.parts, now)
		rt.parts++
	}
	return nil
}

// tick advances processing time to now (it never goes back): idle
// partitions stop holding the watermark, early firings fire.
func (rt *runtime) tick(ctx context.Context, now int64) error {
	if now > rt.now {
		rt.now = now
	}
	now = rt.now
	if wm := rt.tracker.Tick(now); wm > rt.wm {
		if err := rt.advance(ctx, wm); err != nil {
			return err
		}
	}
	for _, st := range rt.stages {
		if st.op == nil {
			continue
		}
		st.op.OnProcessingTime(now)
		if err := st.emitPending(ctx); err != nil {
			return err
		}
	}
	return nil
}

// advance pushes a new pipeline watermark through the stages.
func (rt *runtime) advance(ctx context.Context, wm int64) error {
	rt.wm = wm
	if rt.dedup != nil {
		rt.dedup.table.Expire(wm)
	}
	if rt.order != nil {
		rt.order.expire(wm)
	}
	for _, st := range rt.roots {
		if err := st.advance(ctx, wm); err != nil {
			return err
		}
	}
	return nil
}

func (rt *runtime) finish(ctx context.Context) error {
	if err := rt.advance(ctx, rt.tracker.End()); err != nil {
		return err
	}
	if rt.ck != nil {
		// The end of a bounded input: a last checkpoint commits the rest.
		return rt.takeCheckpoint(ctx)
	}
	return rt.flush(ctx)
}

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

func (rt *runtime) close(ctx context.Context) error {
	if rt.closed {
		return nil
	}
	rt.closed = true
	var errs []error
	for _, st := range rt.stages {
		for _, s := range st.sinks {
			errs = append(errs, s.Close(ctx))
		}
		if st.late != nil {
			errs = append(errs, st.late.Close(ctx))
		}
		if st.contrib != nil {
			errs = append(errs, st.contrib.Close(ctx))
		}
	}
	if rt.quarantine != nil {
		errs = append(errs, rt.quarantine.Close(ctx))
	}
	if rt.conflictS != nil {
		errs = append(errs, rt.conflictS.Close(ctx))
	}
	if rt.src != nil && rt.opts.Source == nil {
		errs = append(errs, rt.src.Close())
	}
	return errors.Join(errs...)
}

func (rt *runtime) summary() *Summary {
	s := &Summary{
		Pipeline:       rt.plan.Spec.Name,
		EventsRead:     rt.events,
		Redeliveries:   rt.redeliver,
		Partitions:     rt.parts,
		FinalWatermark: rt.tracker.Current(),
		Quarantined:    rt.quarantined,
		Duplicates:     rt.dups,
		Conflicts:      rt.conflicts,
		StaleVersions:  rt.stale,
		Superseded:     rt.superseded,
		FirstViolation: rt.firstQ,
		OutsideRange:   rt.outside,
		ResumedEvents:  rt.resumedEvents,
		Reference:      rt.refSummary(),
		Ledgers:        rt.ledgerSummaries(),
		SinkNotes:      rt.sinkNotes(),
	}
	for _, name := range slices.Sorted(maps.Keys(rt.byRule)) {
		s.Rules = append(s.Rules, RuleCount{Rule: name, Count: rt.byRule[name]})
	}
	if rt.dedup != nil {
		s.DedupIDs, s.DedupBytes = rt.dedup.table.Len(), rt.dedup.table.Bytes()
	}
	if ck := rt.ck; ck != nil {
		s.Checkpoints = CheckpointSummary{Dir: ck.dir, Restored: ck.restored, Taken: ck.taken, Last: ck.lastID,
			LastBytes: ck.bytes, LastDuration: ck.duration, Total: ck.total}
	}
	if rt.events > 0 {
		for i, seen := range rt.present {
			if !seen {
				s.AbsentFields = append(s.AbsentFields, rt.plan.SourceSchema.Fields[i].Name)
			}
		}
	}
	for _, st := range rt.stages {
		var os operator.Stats
		if st.op != nil {
			os = st.op.Stats()
		}
		s.Stages = append(s.Stages, StageSummary{
			Name:            st.p.Name,
			Counters:        st.cnt,
			OpenWindows:     os.OpenWindows,
			PartlyTooLate:   os.PartlyTooLate,
			SkippedWindows:  os.SkippedWindows,
			StateBytes:      os.StateBytes,
			FirstQuarantine: st.firstQ,
		})
	}
	return s
}
