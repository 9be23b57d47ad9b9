package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// Several inputs (docs/pipeline.md, "inputs"; docs/semantics.md, "Joins").
// A pipeline with inputs beside its source reads them all on the router's
// goroutine, one record at a time in a fixed order, so that the same
// inputs in the same arrival order give the same outputs:
//
//   - when every input records arrival times (arrival_time_field, replay,
//     the Nexmark generator), by arrival time across the inputs, each
//     input's own order kept, ties in input order (the source first, then
//     inputs[] in order);
//   - otherwise in turns, one record of each input in input order; an
//     input that has ended leaves the turn, and one whose read returned
//     nothing (a Kafka topic with nothing new) gives its turn away until
//     the next round.
//
// Each input keeps its partitions and watermark tracker; its watermark
// reaches the tasks as Advance markers of its own (task.Marker.In). An
// input that ends is advanced to +∞ right after its last record.
//
// Rounds: a round routes up to BatchSize records and ends early when an
// input's batch is used up (it is read again at the start of the next
// round); a batch is released with the round that finished it, so every
// record a round routed stays valid until the round is written. A
// checkpoint stores, for each input, its position before its current
// batch and how many records of that batch were routed: a restore seeks
// there and skips them. An input whose reads after a seek may be cut into
// other batches (source.PartialResumable: a Kafka topic of several
// partitions) stores instead its position after exactly the records
// routed — each partition at its first record not routed — and nothing
// to skip.

// input is one input of a run with several.
type inputRT struct {
	idx  int
	name string
	src  source.Source
	// For inputs ≥ 1 (the source's are the runtime's own fields):
	tracker *watermark.Tracker
	rules   routerRules
	etField row.Field
	time    plan.TimeRules
	parts   int
	wm      int64
	// arrival: the input's records carry arrival times.
	arrival bool
	// first: the versioned reference read as an input (a temporal join's
	// join.right.input: reference): read whole before any other input's
	// record, its records at the current processing time (a file of
	// versions, known before the first event, as reference data is).
	first bool
	// versions: only temporal joins read the input, as their versions
	// (right side). A backfill keeps its records before the range: the
	// version valid at the range's start is among them.
	versions bool
	// The merge.
	cur     *source.Batch
	pos     int
	before  []byte // the source's position before cur was read
	eof     bool   // Next said source.End: cur is the last batch
	done    bool   // every record routed; watermark +∞
	empty   bool   // the last read returned nothing (a log with nothing new)
	skip    int    // after a restore: records of the next batches routed before
	clock   int64  // Options.Clock at cur's read, for records without arrival times
	lastArr int64  // the latest arrival time routed (records without one take it)
}

func (in *inputRT) head() (*row.Row, *source.Meta, bool) {
	if in.cur == nil || in.pos >= in.cur.Len() {
		return nil, nil, false
	}
	return &in.cur.Rows[in.pos], &in.cur.Meta[in.pos], true
}

// hasArrival reports whether a source spec records arrival times.
func hasArrival(s *spec.Source) bool {
	return s.Type == "nexmark" || s.Type == "file" && (s.ArrivalTimeField != "" || s.Replay != nil)
}

// openInputs opens the inputs beside the source (after the source: a run
// that cannot read one of its inputs writes nothing).
func (rt *runtime) openInputs() error {
	p := rt.plan
	if len(p.Inputs) == 0 {
		return nil
	}
	rt.ins = []*inputRT{{idx: 0, name: "source", src: rt.src, arrival: hasArrival(&p.Spec.Source), lastArr: changelog.WatermarkNone}}
	for i, pi := range p.Inputs {
		in := &inputRT{idx: i + 1, name: pi.Name, arrival: hasArrival(&pi.Spec.Source), etField: pi.EventTime, time: pi.Time, wm: watermark.None, lastArr: changelog.WatermarkNone}
		// The input's source is opened as a pipeline's source would be.
		q := &plan.Plan{Spec: &spec.Pipeline{Name: p.Spec.Name, Source: pi.Spec.Source, EventTime: pi.Spec.EventTime},
			SourceSchema: pi.Schema, TimeParsers: pi.TimeParsers, EventTimeField: pi.EventTime.Name}
		sub := &runtime{plan: q, opts: rt.opts}
		src, err := sub.openSource()
		if err != nil {
			return fmt.Errorf("inputs[%d] (%s): source: %w", i, pi.Name, err)
		}
		in.src = src
		in.versions = onlyVersions(p.Spec, pi.Name)
		in.first = pi.Name == spec.ReferenceInput
		et := pi.Spec.EventTime
		in.tracker = watermark.New(et.OutOfOrderness.Ms(), et.IdleTimeout.Ms())
		sp := &pi.Spec.Source
		in.rules = routerRules{
			discovered: sp.Type == "file" && sp.PartitionField != "" && sp.Replay == nil,
			fileClock:  sp.Type == "file",
			timeRules:  in.time.MaxFuture > 0 || in.time.MaxPast > 0 || in.time.HasIngest,
			start:      rt.rules.start,
		}
		if in.rules.fileClock && in.rules.timeRules && in.rules.start == 0 {
			in.rules.start = rt.opts.Clock()
		}
		rt.ins = append(rt.ins, in)
	}
	return nil
}

// closeInputs closes the inputs beside the source.
func (rt *runtime) closeInputs() error {
	var errs []error
	for _, in := range rt.ins {
		if in.idx > 0 && in.src != nil {
			errs = append(errs, in.src.Close())
		}
	}
	return errors.Join(errs...)
}

// routeInputs is the router of a run with several inputs (routeAll's
// counterpart): round after round it reads the inputs whose batch is used
// up and routes their records in the merge order until every input has
// ended or ctx is cancelled.
func (rt *runtime) routeInputs(ctx context.Context, pl *pipeline) (stopped bool, err error) {
	rt.nextProgress = rt.opts.ProgressEvery
	rt.progressStart = time.Now()
	byArrival := true
	for _, in := range rt.ins {
		byArrival = byArrival && (in.arrival || in.first)
	}
	turn := 0
	for {
		ro := rt.beginRound(pl)
		ro.batches = ro.batches[:0]
		if ctx.Err() != nil {
			ro.flags = roundFlags{last: true, snapshot: rt.ck != nil, stats: true}
			return true, rt.endRound(pl, ro)
		}
		// Read the inputs whose batch is used up.
		for _, in := range rt.ins {
			if in.done || in.eof {
				continue
			}
			if _, _, ok := in.head(); ok {
				continue
			}
			stop, err := rt.refill(ctx, pl, ro, in)
			if err != nil {
				return false, err
			}
			if stop {
				ro.flags = roundFlags{last: true, snapshot: rt.ck != nil, stats: true}
				return true, rt.endRound(pl, ro)
			}
		}
		routed := 0
		for routed < rt.opts.BatchSize {
			k, refill := rt.pick(byArrival, &turn)
			if k < 0 {
				if !refill {
					break
				}
				break // an input needs reading: the next round reads it
			}
			in := rt.ins[k]
			r, m, _ := in.head()
			in.pos++
			now := m.Arrival
			switch {
			case in.first:
				now = rt.now // before every other record: no time passes
			case now == source.NoArrival:
				now = in.clock
				if in.arrival {
					now = max(in.lastArr, rt.now)
				}
			}
			in.lastArr = max(in.lastArr, now)
			if k == 0 {
				if err := rt.record(r, m, now, len(rt.src.Partitions())); err != nil {
					return false, err
				}
			} else if err := rt.recordInput(in, r, m, now); err != nil {
				return false, err
			}
			routed++
		}
		all := true
		for _, in := range rt.ins {
			all = all && in.done
		}
		if routed == 0 && !all {
			// Nothing to route (logs with nothing new): processing time
			// still advances — idleness, checkpoints.
			rt.tick(rt.opts.Clock())
		}
		if all {
			ro.flags = roundFlags{last: true, end: true, snapshot: rt.ck != nil, stats: true}
		} else {
			ro.flags.snapshot = rt.ck != nil && rt.due()
			ro.flags.stats = rt.liveDue()
		}
		if err := rt.pushErr; err != nil {
			return false, err
		}
		if err := rt.endRound(pl, ro); err != nil {
			return false, err
		}
		rt.progress()
		if all {
			return false, nil
		}
	}
}

// refill reads in's next batch. stop is true for a graceful stop (ctx
// cancelled during the read: the round ends in a final checkpoint).
func (rt *runtime) refill(ctx context.Context, pl *pipeline, ro *routerOut, in *inputRT) (stop bool, err error) {
	var b *source.Batch
	for {
		if in.cur != nil {
			// Its records may be in flight: released with this round.
			ro.batches = append(ro.batches, in.cur)
			in.cur = nil
		}
		if b == nil {
			select {
			case b = <-pl.batchFree:
			case <-pl.done:
				return false, errStopped
			}
		}
		b.Reset()
		in.before = nil
		if res, ok := in.src.(source.Resumable); ok && rt.ck != nil && !isPartial(in) {
			in.before = res.Position()
		}
		st, rerr := in.src.Next(ctx, b, rt.opts.BatchSize)
		in.cur, in.pos = b, 0
		if err := rt.checkFirstBatch(b, in.idx, in.src); err != nil {
			return false, err
		}
		in.clock = changelog.WatermarkNone
		for i := range b.Meta {
			if b.Meta[i].Arrival == source.NoArrival {
				in.clock = rt.opts.Clock()
				break
			}
		}
		switch {
		case rerr == nil && st == source.End: // the input's own end, never an error's
			in.eof = true
		case rerr != nil && ctx.Err() != nil && errors.Is(rerr, ctx.Err()):
			b.Reset()
			return true, nil
		case rerr != nil:
			return false, fmt.Errorf("%s: %w", rt.inputKey(in), rerr)
		}
		in.empty = b.Len() == 0 && !in.eof
		if in.skip > 0 {
			n := min(in.skip, b.Len())
			in.pos, in.skip = n, in.skip-n
			if in.pos == b.Len() && !in.eof && !in.empty {
				// Skipped whole (routed before the restore): nothing of it
				// is in flight, so the batch is read into again.
				in.cur = nil
				continue
			}
		}
		if in.idx > 0 && in.parts < len(in.src.Partitions()) {
			rt.addInputPartitions(in, -1, max(rt.now, in.clock))
		}
		return false, nil
	}
}

// inputKey names an input in errors.
func (rt *runtime) inputKey(in *inputRT) string {
	if in.idx == 0 {
		return "source"
	}
	return fmt.Sprintf("inputs[%d] (%s): source", in.idx-1, in.name)
}

// pick returns the input whose record comes next, ending the inputs that
// are used up (their watermark to +∞); −1 when an input's batch is used up
// and must be read first (refill), or when nothing is left to route in
// this round.
func (rt *runtime) pick(byArrival bool, turn *int) (k int, refill bool) {
	for i, in := range rt.ins {
		if !in.first || in.done {
			continue
		}
		// The reference's versions, whole, before anything else.
		if _, _, ok := in.head(); ok {
			return i, false
		}
		if !in.eof {
			return -1, true
		}
		rt.endInput(in)
	}
	best := -1
	var bestArr int64
	n := len(rt.ins)
	for j := range n {
		i := j
		if !byArrival {
			i = (*turn + j) % n
		}
		in := rt.ins[i]
		if in.done {
			continue
		}
		_, m, ok := in.head()
		if !ok {
			switch {
			case in.eof:
				rt.endInput(in)
				continue
			case in.empty:
				continue // nothing new: its turn goes to the others
			}
			return -1, true
		}
		if !byArrival {
			*turn = (i + 1) % n
			return i, false
		}
		arr := m.Arrival
		if arr == source.NoArrival {
			arr = in.lastArr
		}
		arr = max(arr, in.lastArr)
		if best < 0 || arr < bestArr {
			best, bestArr = i, arr
		}
	}
	return best, false
}

// endInput ends an input whose every record was routed: its watermark
// goes to +∞.
func (rt *runtime) endInput(in *inputRT) {
	in.done = true
	if in.idx == 0 {
		rt.advance(rt.tracker.End())
		return
	}
	rt.advanceInput(in, in.tracker.End())
}

// recordInput is record for an input beside the source: the router's
// checks (decoding, event time, the backfill range, the timestamp rules),
// then the joins reading it, then its watermark.
func (rt *runtime) recordInput(in *inputRT, r *row.Row, m *source.Meta, now int64) error {
	recNow := now
	rt.events++
	if m.Redelivery {
		rt.redeliver++
	}
	if err := rt.addInputPartitions(in, m.Partition, now); err != nil {
		return err
	}
	rt.tick(now)
	now = rt.now
	step := rt.nextStep()
	snd := rt.rsnd
	if m.Err != nil {
		snd.QuarantineInput(in.idx, step, m, m.Err.Reason, m.Err.Field, m.Err.Rule)
		return nil
	}
	et := in.etField
	if r.IsNull(et.Index) {
		snd.QuarantineInput(in.idx, step, m, "event-time field "+et.Name+" is null or missing", et.Name, "event_time")
		return nil
	}
	ts := r.I[et.Slot]
	if rg := rt.opts.Range; rg != nil && (ts < rg.From && !in.versions || ts >= rg.To) {
		rt.outside++
		return nil
	}
	if in.rules.timeRules {
		if rule, field, reason, ok := checkTimeRules(&in.time, &in.rules, et.Name, r, m, ts, recNow); !ok {
			snd.QuarantineInput(in.idx, step, m, reason, field, rule)
			return nil
		}
	}
	snd.ToInput(in.idx, step, now, r, m, ts)
	if wm := in.tracker.Observe(m.Partition, ts, now); wm > in.wm {
		rt.advanceInput(in, wm)
	}
	return nil
}

// onlyVersions reports whether every join side reading input name is the
// right side of a temporal join (and one is).
func onlyVersions(p *spec.Pipeline, name string) bool {
	n := 0
	for _, st := range p.Stages {
		j := st.Join
		if j == nil {
			continue
		}
		if j.Left.Input == name || j.Right.Input == name && j.Type != "temporal" {
			return false
		}
		if j.Right.Input == name {
			n++
		}
	}
	return n > 0
}

// addInputPartitions starts tracking an input's partitions.
func (rt *runtime) addInputPartitions(in *inputRT, p int, now int64) error {
	now = max(now, rt.now)
	for in.parts < len(in.src.Partitions()) || in.parts <= p {
		if in.parts == MaxPartitions {
			return fmt.Errorf("%s: more than %d partitions", rt.inputKey(in), MaxPartitions)
		}
		if in.rules.discovered {
			in.tracker.AddDiscovered(in.parts, now)
		} else {
			in.tracker.AddPartition(in.parts, now)
		}
		in.parts++
	}
	return nil
}

// advanceInput hands input in's new watermark to every task.
func (rt *runtime) advanceInput(in *inputRT, wm int64) {
	in.wm = wm
	rt.marker(task.Marker{Step: rt.nextStep(), Kind: task.Advance, WM: wm, In: in.idx, Now: rt.now})
}

// tickInputs advances the inputs' processing time (idleness).
func (rt *runtime) tickInputs(now int64) {
	for _, in := range rt.ins {
		if in.idx == 0 || in.done {
			continue
		}
		if wm := in.tracker.Tick(now); wm > in.wm {
			rt.advanceInput(in, wm)
		}
	}
}

// inputState is an input's part of a checkpoint (a run with several).
type inputState struct {
	before  []byte
	taken   int
	done    bool
	wm      int64
	parts   int
	tracker []byte
	lastArr int64
}

// isPartial reports whether input in's position is taken inside its
// batch (source.PartialResumable: a log of several partitions, whose
// reads after a seek may be cut into other batches) rather than as the
// position before the batch and the records of it routed. An input still
// skipping the records of a checkpoint that stored the latter is not.
func isPartial(in *inputRT) bool {
	_, ok := in.src.(source.PartialResumable)
	return ok && in.skip == 0
}

// inputStates captures the inputs' states for a snapshot round.
func (rt *runtime) inputStates() []inputState {
	var out []inputState
	for _, in := range rt.ins {
		s := inputState{before: in.before, taken: in.pos, done: in.done, wm: in.wm, parts: in.parts, lastArr: in.lastArr}
		if in.cur == nil {
			s.taken = 0
		}
		if in.skip > 0 {
			s.taken += in.skip
		}
		switch {
		case in.cur != nil && isPartial(in):
			// The position of the records routed, in every partition: a
			// read from the position before the batch may return the
			// records of other partitions first (fetches come back cut
			// and ordered as they come), so skipping the first in.pos of
			// it would skip records never routed and route some twice.
			s.before, s.taken = in.src.(source.PartialResumable).PositionAt(in.cur, in.pos), 0
		case in.cur != nil && in.pos == in.cur.Len() && !in.eof:
			// The batch is used up: resume after it.
			if res, ok := in.src.(source.Resumable); ok {
				s.before, s.taken = res.Position(), 0
			}
		}
		if in.idx > 0 {
			var e state.Encoder
			in.tracker.Snapshot(&e)
			s.tracker = e.Bytes()
		}
		out = append(out, s)
	}
	return out
}

// Manifest inputs (version 7), after the sinks: Uint(#inputs: 0 for a
// pipeline whose only input is its source) per input, the source first:
// Bytes8(position before its current batch) Uint(records of that batch
// routed) Bool(ended) Int(watermark) Uint(partitions) Bytes8(tracker; empty
// for the source, whose tracker is the router's) Int(latest arrival).

func encodeInputs(e *state.Encoder, ins []inputState) {
	e.Uint(uint64(len(ins)))
	for _, s := range ins {
		e.Bytes8(s.before)
		e.Uint(uint64(s.taken))
		e.Bool(s.done)
		e.Int(s.wm)
		e.Uint(uint64(s.parts))
		e.Bytes8(s.tracker)
		e.Int(s.lastArr)
	}
}

func decodeInputs(d *state.Decoder) []inputState {
	n := d.Len(1<<10, 6)
	var out []inputState
	for i := 0; i < n && d.Err() == nil; i++ {
		s := inputState{before: d.Bytes8(), taken: d.Len(1<<31-1, 0), done: d.Bool(), wm: d.Int(), parts: d.Len(MaxPartitions, 0)}
		s.tracker = d.Bytes8()
		s.lastArr = d.Int()
		out = append(out, s)
	}
	return out
}

// restoreInputs brings the inputs to a checkpoint: each seeks to the
// position before its batch and skips the records routed from it.
func (rt *runtime) restoreInputs(ctx context.Context, ins []inputState) error {
	if len(ins) != len(rt.ins) {
		return fmt.Errorf("the checkpoint holds %d inputs, the pipeline has %d", len(ins), len(rt.ins))
	}
	for i, s := range ins {
		in := rt.ins[i]
		if len(s.before) > 0 {
			res, ok := in.src.(source.Resumable)
			if !ok {
				return fmt.Errorf("%s: it cannot resume from a position", rt.inputKey(in))
			}
			if err := res.Seek(ctx, s.before); err != nil {
				return fmt.Errorf("%s: %w", rt.inputKey(in), err)
			}
		}
		in.skip, in.done, in.lastArr = s.taken, s.done, s.lastArr
		in.before = s.before
		if in.idx == 0 {
			continue
		}
		in.wm, in.parts = s.wm, s.parts
		if err := in.tracker.RestoreState(state.NewDecoder(s.tracker)); err != nil {
			return fmt.Errorf("%s: %w", rt.inputKey(in), err)
		}
	}
	return nil
}

// inputWatermarks returns each input's watermark (the source first), for
// the tasks' restore.
func (rt *runtime) inputWatermarks() []int64 {
	out := []int64{rt.wm}
	for _, in := range rt.ins[1:] {
		out = append(out, in.wm)
	}
	return out
}
