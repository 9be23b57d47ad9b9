// Package operator implements the keyed event-time window aggregation
// operator: tidemark's core step function.
//
// In the data flow it is core, below the task: every window stage of a
// task (package task) holds one Operator over the task's key groups, fed
// the rows routed to it and the watermark markers, and the task logs the
// rows it drains for the writer and the sinks; plan builds it from a
// stage's spec. It imports only core packages (row, window, aggregate,
// changelog, keygroup, state, u64map).
//
// The operator is a pure, single-threaded state machine (no goroutines, no
// clock, no IO). Inputs arrive through three calls:
//
//   - Process(row, event time, weight, now): a record (weight +1) or a
//     retraction of an earlier record (weight −1) enters its windows;
//   - AdvanceWatermark(wm, now): windows fire (wm ≥ end) and close
//     (wm ≥ end + allowed lateness);
//   - OnProcessingTime(now): early (provisional) firings every early_every.
//
// Each call appends result rows to an output buffer that the caller takes
// with Drain. docs/semantics.md states the rules; the short form:
//
//   - A window [start, end) fires when the watermark reaches end. An event
//     whose windows have all fired but not all closed updates the open ones
//     and re-fires them (late but accepted). An event all of whose windows
//     have closed is too late: Process returns TooLate and the caller applies
//     the late policy. For sessions, an event that would merge into a
//     closed session of its key is too late too: sessions of one key never
//     overlap (sessions.go, "Closed sessions").
//   - Emit modes: Final emits one row per window and key when it closes;
//     Update emits at the on-time firing, at every late update and at close
//     (is_final = true), with versions 1, 2, 3 …; Retract emits the same
//     firings as changelog pairs (update_before, update_after) and deletes.
//   - Output order is deterministic: windows in order of (end, start), keys
//     within a window in order of first arrival, sessions by (end, start,
//     creation).
//
// State: tumbling windows keep one accumulator per (window, key) in panes
// (panes.go); sliding windows are sliced (slices.go, window.Slicer): one
// partial aggregate per (slice, key), where a slice is the interval between
// consecutive window boundaries (the slide-long panes when size is a
// multiple of slide), so a record updates one accumulator instead of
// ⌈size/slide⌉, and a window's rows are merged from its slices when it
// fires or closes (Flink's SlicingWindowOperator, Scotty). The rows are
// exactly those of one accumulator per window (Config.NoSlicing, which
// tests compare against), also across restores and rescaling; a stage
// with an aggregate whose result depends on the order of its updates
// (aggregate.HistoryDependent) is not sliced. Sessions merge per key
// (sessions.go).
//
// Checkpoints: Snapshot writes the whole state (after Drain, between
// calls) and Restore reads it into a fresh operator built with the same
// Config, which then continues exactly as the snapshotted one would have
// (snapshot.go describes the format).
package operator

import (
	"fmt"
	"math"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// Mode is the emit mode.
type Mode uint8

// The emit modes.
const (
	Final   Mode = iota // one insert per window and key, at close
	Update              // upsert stream: insert, update_after, delete; versions and is_final
	Retract             // full changelog: insert, update_before, update_after, delete
)

// ParseMode maps "final", "update" and "retract" to a Mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "final":
		return Final, nil
	case "update", "":
		return Update, nil
	case "retract":
		return Retract, nil
	}
	return 0, fmt.Errorf("unknown emit mode %q", s)
}

// RejectError says that a record was refused, leaving the state unchanged:
// applying it would make an aggregate fail (an int64 sum overflow). The
// caller quarantines the record.
type RejectError struct {
	Err    error
	Window window.Window
	Key    []row.Value
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("%v in window %s for key %v", e.Err, e.Window, e.Key)
}

func (e *RejectError) Unwrap() error { return e.Err }

// Outcome says what happened to a processed record.
type Outcome uint8

// The outcomes.
const (
	OnTime         Outcome = iota // entered windows that had not fired
	LateAccepted                  // updated at least one window that had already fired
	TooLate                       // every window of the record had closed; nothing changed
	RetractMissing                // a retraction for which no window holds the row; ignored
	RetractTooLate                // a retraction whose windows have all closed; their final rows stay
)

// Config configures an Operator.
type Config struct {
	// Assigner gives tumbling or sliding windows; nil with Gap > 0 for
	// session windows.
	Assigner window.Assigner
	// Gap is the session gap in ms (session windows only).
	Gap int64
	// AllowedLateness in ms.
	AllowedLateness int64
	// Mode is the emit mode.
	Mode Mode
	// EarlyEvery is the early-firing period in ms of processing time; 0 for
	// none.
	EarlyEvery int64
	// Key lists the group-key fields of the input rows.
	Key []row.Field
	// Aggs are the aggregate columns, in output order.
	Aggs []aggregate.Column
	// KeyGroups is the number of key groups keys hash into (Flink's max
	// parallelism); 0 means 128.
	KeyGroups int
	// Order is the order of the rows of one firing; OrderGroup and
	// OrderBirth also record each row's EmitOrder (DrainOrder). Default
	// OrderArrival.
	Order Order
	// NoSlicing keeps one accumulator per sliding window and key, updated
	// by every record of the window (⌈size/slide⌉ updates per record),
	// instead of slicing (slices.go), which is the default for sliding
	// windows. The emitted rows are the same; tests and benchmarks compare
	// the two. Tumbling windows and sessions are never sliced.
	NoSlicing bool
	// Ranked makes the operator a Top-N: its only column is an
	// aggregate.Ranker (top_n), and a (window, key) emits one row per row
	// the column keeps, in rank order, instead of one row of results: its
	// key is the group key followed by the rank (an int, 1-based), its
	// values the kept row's (Ranker.AppendRank). Without early firings.
	// In mode Final the rows come when the window closes; in Update and
	// Retract (the global window only, window.Global; the top_n built
	// with aggregate.Spec.Versions) each record that enters the N first
	// emits the ranks it changed at once, and the close emits every
	// rank's row again as final (emitRanks, closeRanks).
	Ranked bool
}

// Order is how a firing (on time, early, close) orders its rows
// (Config.Order). Windows always come by (end, start) and session timers
// by (time, kind); within a window:
//
//   - OrderArrival: keys by first arrival into the window.
//   - OrderGroup: by key group, then first arrival within the key group
//     (sessions: key group, then creation).
//   - OrderBirth: by the step at which the (window, key) instance was
//     created (SetStep before Process): the caller's global sequence. With
//     one record per step, that is first arrival over the whole input,
//     whichever key groups the operator holds.
//
// OrderGroup and OrderBirth are canonical: the same whichever key groups
// an operator holds and whether it was restored, so the rows of several
// operators that split the key groups between them merge (by EmitOrder)
// into exactly the rows one operator holding every key group emits.
// OrderBirth keeps the emission in arrival order, which is in memory
// order and cheaper; it needs steps that are distinct for the instances
// of one window (a stage reading the source). OrderGroup needs nothing
// (a stage reading another stage's changelog, whose inputs of one step
// can create many instances).
type Order uint8

// The orders.
const (
	OrderArrival Order = iota
	OrderGroup
	OrderBirth
)

// EmitOrder places a row of a firing in the canonical order
// (Config.Order): rows of one firing sort by (A, B, C), and rows with equal
// keys come from one operator, in its order. For panes A and B are the
// window's end and start; for session timers A is the timer's time and B
// its kind (0 fire, 1 close); for early firings of sessions the window's
// end and start. C is the key group (OrderGroup) or the instance's birth
// step (OrderBirth).
type EmitOrder struct {
	A, B int64
	C    uint64
}

// Operator is the window aggregation operator. Not safe for concurrent use.
type Operator struct {
	cfg      Config
	lateness int64
	wm       int64 // current watermark
	// closedThrough is the largest window end that has closed: the most
	// wm − allowed lateness ever reached, also under another lateness
	// before a restore (Globals.ClosedThrough), so that a window closed
	// under a smaller lateness stays closed under a larger one.
	closedThrough int64
	now           int64 // processing time of the current call

	keys  *keyTable
	slots slotTable
	panes paneStore
	sl    sliceStore // the slices of sliced sliding windows (slices.go)
	sess  sessionStore
	padv  paneAdvance    // an advance of the panes in progress
	vadv  virtualAdvance // a close of a window held in slices, in progress

	keyBuf []byte
	// keyInt is the current record's key when keyByValue: a sliced
	// operator's key of one int, bool or time field that is not null, read
	// from the row, its encoding in keyBuf only once needed (encodeKey).
	keyInt     uint64
	keyByValue bool
	kid        uint32 // the current record's key id (multi-window panes, slices), when kidOK
	kidOK      bool
	wins       []window.Window
	// pwin is the slice of processPanes' last record and its windows
	// (assignPanes), when ok.
	pwin struct {
		slice window.Window
		wins  []window.Window
		ok    bool
	}

	out      []changelog.Row
	vals     []row.Value // backing for out[i].Values
	keyArena []row.Value // backing for out[i].Key (rowKey): never reused unless transientKeys
	// transientKeys says drained rows' keys need not outlive the next call
	// (SetTransientKeys): keyArena is reused after each Drain.
	transientKeys bool
	ord           []EmitOrder // out[i]'s place in the canonical order (Config.Canonical)
	ordA          int64       // EmitOrder of the rows being pushed
	ordB          int64
	ordC          uint64 // the birth of the row being pushed (OrderBirth)
	nextEarly     int64
	canon         canonScratch // buffers of the canonical order
	step          uint64       // the caller's step (SetStep): births
	spill         *spillState  // the disk backend's state (spill.go); nil in memory

	// changed marks the key groups whose state changed since the last
	// ClearChanged (one bit per key group).
	changed []uint64

	emitted int64 // rows emitted, total

	partial        int64 // records in time for some of their windows, too late for others
	skippedWindows int64 // window updates those records could not make
}

// New returns an operator. It returns an error when neither an assigner
// nor a positive gap is given, or when there are no aggregates.
func New(cfg Config) (*Operator, error) {
	if (cfg.Assigner == nil) == (cfg.Gap <= 0) {
		return nil, fmt.Errorf("operator: need exactly one of a window assigner or a session gap")
	}
	if len(cfg.Aggs) == 0 {
		return nil, fmt.Errorf("operator: no aggregates")
	}
	if cfg.AllowedLateness < 0 || cfg.EarlyEvery < 0 {
		return nil, fmt.Errorf("operator: negative allowed lateness or early firing period")
	}
	if cfg.Ranked {
		if _, ok := cfg.Aggs[0].(aggregate.Ranker); !ok || len(cfg.Aggs) != 1 {
			return nil, fmt.Errorf("operator: a ranked operator has one column, a top_n")
		}
		if cfg.EarlyEvery > 0 {
			return nil, fmt.Errorf("operator: a ranked operator has no early firings")
		}
		if _, global := cfg.Assigner.(window.Global); cfg.Mode != Final && !global {
			return nil, fmt.Errorf("operator: a ranked operator in mode update or retract ranks over the global window")
		}
	}
	if cfg.KeyGroups <= 0 {
		cfg.KeyGroups = 128
	}
	o := &Operator{
		cfg:           cfg,
		lateness:      cfg.AllowedLateness,
		wm:            changelog.WatermarkNone,
		closedThrough: changelog.WatermarkNone,
		keys:          newKeyTable(cfg.Key, cfg.KeyGroups),
		slots:         slotTable{cols: cfg.Aggs, keep: cfg.Mode == Retract},
		changed:       make([]uint64, (cfg.KeyGroups+63)/64),
	}
	o.keys.perGroup = cfg.Gap > 0
	for _, c := range cfg.Aggs {
		if ch, ok := c.(aggregate.Checker); ok {
			o.slots.chk = append(o.slots.chk, ch)
		}
	}
	o.panes.init()
	o.panes.multi = cfg.Assigner != nil && cfg.Assigner.MaxWindows() > 1
	if sl, ok := cfg.Assigner.(window.Slicer); ok && o.panes.multi && !cfg.NoSlicing && !historyDependent(cfg.Aggs) {
		o.sl.init(sl)
		o.sl.birthFirst = cfg.Order == OrderBirth
		o.panes.multi = false // panes (windows that fired and stay open) find keys through their index
		o.panes.words = (cfg.KeyGroups + 63) / 64
	}
	o.keys.extra = cfg.Gap > 0 || o.panes.multi
	o.sess.keys = o.keys
	return o, nil
}

// historyDependent reports whether a column's results depend on the order
// of its updates (aggregate.HistoryDependent): such a stage is not sliced.
func historyDependent(cols []aggregate.Column) bool {
	for _, c := range cols {
		if h, ok := c.(aggregate.HistoryDependent); ok && h.HistoryDependent() {
			return true
		}
	}
	return false
}

// Sliced reports whether the operator keeps its sliding windows in slices
// (slices.go): sliding windows, NoSlicing off, and no aggregate whose
// result depends on the order of its updates.
func (o *Operator) Sliced() bool { return o.sl.on }

// SetStep tells the operator the caller's step of the next Process call:
// the birth of the instances it creates (OrderBirth).
func (o *Operator) SetStep(step uint64) { o.step = step }

// Assigner returns the operator's window assigner (nil for sessions).
func (o *Operator) Assigner() window.Assigner { return o.cfg.Assigner }

// Watermark returns the operator's current watermark (ms).
func (o *Operator) Watermark() int64 { return o.wm }

// Process applies one record with event time ts (ms) to its windows: weight
// +1 adds it, −1 retracts an earlier identical record. now is the
// processing time (ms). It returns the outcome. A record an aggregate
// cannot take (an int sum would overflow) is refused with a *RejectError
// before any state changes; any other error leaves the state undefined.
func (o *Operator) Process(r *row.Row, ts int64, weight int, now int64) (Outcome, error) {
	o.now = now
	if o.sl.on && o.cfg.Gap <= 0 {
		if o.spill != nil {
			return o.processSlicedDisk(r, ts, weight)
		}
		return o.processSliced(r, ts, weight) // encodes the key when it needs it
	}
	o.keyBuf = AppendKey(o.keyBuf[:0], r, o.cfg.Key)
	if o.cfg.Gap > 0 {
		return o.processSession(r, ts, weight)
	}
	if o.spill != nil {
		return o.processSpilled(r, ts, weight)
	}
	return o.processPanes(r, ts, weight)
}

// closed reports whether a window ending at end has closed: the watermark
// has passed end + allowed lateness, now or under the lateness of an
// earlier run (closedThrough).
func (o *Operator) closed(end int64) bool { return end <= o.closedThrough }

// horizon returns the largest window end that has closed at watermark wm
// under the operator's allowed lateness (wm − lateness, saturating).
func (o *Operator) horizon(wm int64) int64 {
	switch {
	case wm == changelog.WatermarkInfinity:
		return wm
	case wm < changelog.WatermarkNone+o.lateness:
		return changelog.WatermarkNone
	}
	return wm - o.lateness
}

// fired reports whether a window ending at end has fired.
func (o *Operator) firedAt(end int64) bool { return end <= o.wm }

// AdvanceWatermark moves the watermark to wm (ignored unless it is later)
// at processing time now, firing and closing windows. Errors: none today;
// the signature leaves room for sinks of state.
func (o *Operator) AdvanceWatermark(wm, now int64) error {
	o.AdvanceWatermarkLimit(wm, now, math.MaxInt)
	return nil
}

// AdvanceWatermarkLimit is AdvanceWatermark in bounded steps: it stops
// once at least limit rows are pending and returns true; the caller then
// drains them and calls ContinueAdvance (with no other call in between)
// until it returns false. The rows are those AdvanceWatermark emits, in
// the same order, so a firing of a million windows never holds a million
// rows at once.
func (o *Operator) AdvanceWatermarkLimit(wm, now int64, limit int) (more bool) {
	if wm <= o.wm {
		return false
	}
	o.wm = wm
	o.closedThrough = max(o.closedThrough, o.horizon(wm))
	o.now = now
	return o.ContinueAdvance(limit)
}

// ContinueAdvance goes on with an advance AdvanceWatermarkLimit left
// unfinished; see there. It returns false when the advance is complete.
func (o *Operator) ContinueAdvance(limit int) (more bool) {
	limit = max(limit, 1)
	switch {
	case o.cfg.Gap > 0:
		more = o.advanceSessions(limit)
	case o.sl.on:
		more = o.advanceSliced(limit)
	default:
		more = o.advancePanes(limit)
	}
	if !more {
		o.keys.sweep(o.markChanged)
	}
	return more
}

// OnProcessingTime runs early firings due at processing time now (ms), on
// the schedule EarlySchedule describes.
func (o *Operator) OnProcessingTime(now int64) {
	if o.cfg.EarlyEvery <= 0 || o.cfg.Mode == Final {
		return
	}
	sch := EarlySchedule{Every: o.cfg.EarlyEvery, Next: o.nextEarly}
	due := sch.Due(now)
	o.nextEarly = sch.Next
	if due {
		o.FireEarly(now)
	}
}

// FireEarly runs an early firing at processing time now (ms) whatever the
// schedule: every window that has not fired emits its keys that changed
// since their last row. A runner that keeps the schedule itself (one
// EarlySchedule for the operators of every task) calls it when the
// schedule is due. It does nothing without early firings (EarlyEvery 0)
// or in mode final.
func (o *Operator) FireEarly(now int64) {
	if o.cfg.EarlyEvery <= 0 || o.cfg.Mode == Final {
		return
	}
	o.now = now
	switch {
	case o.cfg.Gap > 0:
		o.earlySessions()
	case o.sl.on:
		o.earlySliced()
	default:
		o.earlyPanes()
	}
}

// EarlySchedule is the processing-time schedule of early firings: the
// first call of Due starts it (the first firing is Every ms later), and a
// firing is due at the first call at or after Next; the next one is then
// the first multiple of Every after now counted from the previous
// schedule, so the schedule does not drift. Next 0 means not started.
type EarlySchedule struct {
	Every int64 // ms of processing time between early firings; > 0
	Next  int64 // ms: processing time of the next firing; 0 before the first call
}

// Due advances the schedule to processing time now (ms) and reports whether
// an early firing is due.
func (s *EarlySchedule) Due(now int64) bool {
	if s.Next == 0 {
		s.Next = now + s.Every
		return false
	}
	if now < s.Next {
		return false
	}
	s.Next += ((now-s.Next)/s.Every + 1) * s.Every
	return true
}

// Drain returns the rows emitted since the last Drain, in order. The slice
// and the rows' Values are valid until the next call into the operator.
func (o *Operator) Drain() []changelog.Row {
	out := o.out
	o.out = o.out[:0]
	o.vals = o.vals[:0]
	if o.transientKeys {
		o.keyArena = o.keyArena[:0]
	}
	o.ord = o.ord[:0]
	return out
}

// SetTransientKeys tells the operator whether its caller keeps no drained
// row's Key past the next call into the operator, as for Values (a stage
// whose rows only feed other stages, which copy what they keep). The
// operator then decodes the keys of the rows it emits into memory it
// reuses after each Drain; otherwise each row keeps its key's memory (a
// writer may hold the rows), 64 bytes a key value, which becomes garbage
// with the row. Default false.
func (o *Operator) SetTransientKeys(on bool) { o.transientKeys = on }

// DrainOrder returns the EmitOrder of each row the next Drain returns, in
// the same order (Config.Canonical; nil otherwise). The slice is valid
// until the next call into the operator. Call it before Drain.
func (o *Operator) DrainOrder() []EmitOrder {
	if o.cfg.Order == OrderArrival {
		return nil
	}
	return o.ord
}

// Pending reports how many rows wait to be drained.
func (o *Operator) Pending() int { return len(o.out) }

// Stats is a snapshot of the operator's state size.
type Stats struct {
	// OpenWindows counts the panes (tumbling and sliding windows holding
	// state; for sliced sliding windows, those that fired and stay open
	// or fired early), the slices holding state (sliced sliding windows)
	// or the open sessions.
	OpenWindows int
	// Entries counts the accumulators held: live (window, key) instances
	// of panes and sessions, and live (slice, key) entries of slices (a
	// key in a slice counts once however many windows read the slice).
	Entries     int
	Keys        int   // distinct live keys
	StateBytes  int64 // estimated heap bytes of operator state
	RowsEmitted int64 // result rows emitted so far
	// PartlyTooLate counts records (sliding windows) that entered some of
	// their windows but were too late for others; SkippedWindows counts
	// the window updates they could not make.
	PartlyTooLate  int64
	SkippedWindows int64
}

// Stats returns the current state size. It walks the state: call it for
// reports, not per record.
func (o *Operator) Stats() Stats {
	st := Stats{Keys: o.keys.live(), RowsEmitted: o.emitted, PartlyTooLate: o.partial, SkippedWindows: o.skippedWindows}
	var extra int64
	if o.cfg.Gap > 0 {
		st.OpenWindows, st.Entries = o.sess.live, o.sess.live
		for _, s := range o.sess.all(OrderArrival) {
			extra += int64(o.slots.extraBytes(s.slot))
		}
		st.StateBytes = int64(st.Entries) * int64(sessionBytes)
	} else {
		st.OpenWindows = len(o.panes.list) + len(o.sl.list)
		for _, s := range o.sl.list {
			st.Entries += s.live
			st.StateBytes += int64(sliceBytes) + int64(s.ents.len())*int64(sliceEntBytes+entIndexBytes)
			for i := range s.ents.len() {
				if s.ents.at(i).slot >= 0 {
					extra += int64(o.slots.extraBytes(s.ents.at(i).slot))
				}
			}
		}
		for _, p := range o.panes.list {
			st.Entries += p.live
			st.StateBytes += int64(paneBytes) + int64(len(p.ents))*int64(entryBytes) + int64(len(p.idx))*mapEntryBytes
			if o.panes.multi {
				st.StateBytes += int64(len(p.ents)) * paneRefBytes
			}
			for i := range p.ents {
				if p.ents[i].slot >= 0 {
					extra += int64(o.slots.extraBytes(p.ents[i].slot))
				}
			}
		}
	}
	st.StateBytes += int64(o.slots.n)*int64(o.slots.slotBytes()) + extra + o.keys.bytes()
	return st
}
