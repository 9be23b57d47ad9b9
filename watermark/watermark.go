// Package watermark tracks event-time progress per source partition and
// derives the pipeline watermark.
//
// In the data flow it is core, used by the runner: the router (package
// engine; engine/group for a group of instances) observes every record
// that passes its checks and sends the tracker's advances to the tasks as
// markers, in band with the records; the tracker's state is checkpointed
// with the run. It imports only changelog and state.
//
// Definitions (docs/semantics.md, "Watermarks"; Flink's
// BoundedOutOfOrdernessWatermarks and WatermarkStrategy.withIdleness):
//
//   - A watermark W is a statement that events with event time < W have
//     (mostly) arrived: a window [start, end) may fire once W ≥ end.
//   - Partition watermark = largest event time seen on the partition −
//     out_of_orderness. Before its first record a partition's watermark is
//     WatermarkNone (−∞).
//   - A partition is idle when it has had no record for idle_timeout of
//     processing time; it stays idle until its next record. Idle partitions
//     do not hold the pipeline watermark back. With idle_timeout 0 a
//     partition is never idle.
//   - Pipeline watermark = min over non-idle partitions; it never goes
//     backwards. When every partition is idle it holds its value, or,
//     with idle advance (SetIdleAdvance), follows processing time:
//     processing time − out_of_orderness, capped by a limit the caller
//     derives from the newest event time seen.
//   - A partition registered with AddPartition counts from then on: until
//     its first record its watermark is None and holds the pipeline
//     watermark back (until it turns idle). One registered with
//     AddDiscovered (a partition found in the data, such as a file's
//     partition_field) counts from its first record: until then it is
//     idle.
//   - At the end of a bounded input it becomes WatermarkInfinity.
//
// The Tracker is a pure, single-threaded state machine: time enters only
// through the now arguments (processing time, ms), so runs are
// deterministic. Snapshot and RestoreState checkpoint it exactly.
package watermark

import (
	"fmt"
	"math"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/state"
)

// None is the watermark before any event (−∞).
const None = changelog.WatermarkNone

// Infinity is the watermark after the end of a bounded input (+∞).
const Infinity = changelog.WatermarkInfinity

// Partition is the progress of one source partition.
type Partition struct {
	MaxEventTime int64 // largest event time seen (ms); None before the first record
	LastArrival  int64 // processing time of the last record (ms), or when the partition was added
	Idle         bool  // excluded from the pipeline watermark until its next record
	Records      int64 // records observed
}

// Watermark returns the partition's watermark given out-of-orderness ooo (ms).
// It saturates at None rather than wrap: an event time within ooo of
// math.MinInt64 must not turn into a watermark near +∞.
func (p *Partition) Watermark(ooo int64) int64 {
	if p.MaxEventTime == None || (ooo > 0 && p.MaxEventTime < None+ooo) {
		return None
	}
	return p.MaxEventTime - ooo
}

// Tracker derives the pipeline watermark from per-partition progress.
type Tracker struct {
	ooo       int64 // out_of_orderness, ms
	idle      int64 // idle_timeout, ms; 0 = never idle
	parts     []Partition
	current   int64 // pipeline watermark, monotone
	min       int64 // min over non-idle partition watermarks at the last recompute
	nextCheck int64 // earliest processing time at which a partition can turn idle
	maxET     int64 // largest event time seen on any partition; None before any
	// limit, when set, turns on idle advance (SetIdleAdvance).
	limit func(newest int64) int64
}

// New returns a tracker with out-of-orderness and idle timeout in ms.
func New(outOfOrdernessMs, idleTimeoutMs int64) *Tracker {
	return &Tracker{ooo: outOfOrdernessMs, idle: idleTimeoutMs, current: None, min: None, nextCheck: Infinity, maxET: None}
}

// SetIdleAdvance turns on idle advance (docs/semantics.md, "When the
// input stops"): while every partition is idle, Tick moves the pipeline
// watermark to min(now − out_of_orderness, limit(newest)), where newest is
// the largest event time seen on any partition (ms) and limit returns the
// watermark that closes every window such an event can be in. The
// watermark still never goes back. It does nothing before the first
// record, or with an idle timeout of 0 (no partition turns idle). limit
// must be pure (time enters only as its argument).
func (t *Tracker) SetIdleAdvance(limit func(newest int64) int64) { t.limit = limit }

// AddDiscovered registers partition index p (and any index below it not
// yet known) as a partition found in the data, at processing time now: it
// does not hold the pipeline watermark back until its first record
// (Observe), so when the runner learns of it — in the same read batch as
// its first record or an earlier one — does not matter. Adding a known
// partition is a no-op.
func (t *Tracker) AddDiscovered(p int, now int64) {
	if len(t.parts) == 0 && p >= 0 {
		t.min = Infinity // no active partition (as recompute would find)
	}
	for len(t.parts) <= p {
		t.parts = append(t.parts, Partition{MaxEventTime: None, LastArrival: now, Idle: true})
	}
}

// AddPartition registers partition index p (indexes are dense from 0) at
// processing time now; it counts as active from now, so a partition that
// never delivers turns idle after idle_timeout. Adding a known partition is
// a no-op.
func (t *Tracker) AddPartition(p int, now int64) {
	for len(t.parts) <= p {
		t.parts = append(t.parts, Partition{MaxEventTime: None, LastArrival: now})
		t.min = None // a partition without records holds the watermark
		if t.idle > 0 && now+t.idle < t.nextCheck {
			t.nextCheck = now + t.idle
		}
	}
}

// Observe records an event with event time ts (ms) on partition p at
// processing time now, and returns the pipeline watermark afterwards.
// Callers observe only valid records: a quarantined record never moves the
// watermark.
func (t *Tracker) Observe(p int, ts, now int64) int64 {
	if p >= len(t.parts) {
		t.AddPartition(p, now)
	}
	pt := &t.parts[p]
	pt.Records++
	pt.LastArrival = now
	wasIdle := pt.Idle
	pt.Idle = false
	if t.idle > 0 && now+t.idle < t.nextCheck {
		t.nextCheck = now + t.idle
	}
	if ts > t.maxET {
		t.maxET = ts
	}
	if ts <= pt.MaxEventTime && !wasIdle {
		return t.current
	}
	old := pt.Watermark(t.ooo)
	if ts > pt.MaxEventTime {
		pt.MaxEventTime = ts
	}
	// Raising a partition that was above the minimum cannot move the
	// minimum: skip the O(partitions) scan on the common path.
	if wasIdle || old <= t.min {
		t.recompute()
	}
	return t.current
}

// Tick advances processing time to now: partitions without a record for
// idle_timeout turn idle; with idle advance, a watermark all of whose
// partitions are idle follows now. It returns the pipeline watermark
// afterwards.
func (t *Tracker) Tick(now int64) int64 {
	if t.idle <= 0 {
		return t.current
	}
	return t.tick(now)
}

// tick is Tick's work with an idle timeout, out of line so that Tick
// (called once per record) inlines.
func (t *Tracker) tick(now int64) int64 {
	if now >= t.nextCheck {
		t.markIdle(now)
	}
	if t.limit != nil && t.min == Infinity && t.maxET != None && now > None+t.ooo {
		w := min(now-t.ooo, t.limit(t.maxET))
		if w > t.current && w < Infinity {
			t.current = w
		}
	}
	return t.current
}

// markIdle turns idle the partitions without a record since now −
// idle_timeout.
func (t *Tracker) markIdle(now int64) {
	changed := false
	next := Infinity
	for i := range t.parts {
		pt := &t.parts[i]
		if pt.Idle {
			continue
		}
		if now-pt.LastArrival >= t.idle {
			pt.Idle = true
			changed = true
			continue
		}
		if d := pt.LastArrival + t.idle; d < next {
			next = d
		}
	}
	t.nextCheck = next
	if changed {
		t.recompute()
	}
}

// recompute sets the pipeline watermark to max(current, min over non-idle
// partitions).
func (t *Tracker) recompute() {
	min := Infinity
	active := 0
	for i := range t.parts {
		pt := &t.parts[i]
		if pt.Idle {
			continue
		}
		active++
		if w := pt.Watermark(t.ooo); w < min {
			min = w
		}
	}
	if active == 0 {
		t.min = Infinity
		return // every partition idle: hold
	}
	t.min = min
	if min > t.current {
		t.current = min
	}
}

// End marks the end of a bounded input: the watermark becomes Infinity.
func (t *Tracker) End() int64 {
	t.current = Infinity
	return t.current
}

// Current returns the pipeline watermark (ms), None before any event.
func (t *Tracker) Current() int64 { return t.current }

// Partitions returns the per-partition progress (read-only view).
func (t *Tracker) Partitions() []Partition { return t.parts }

// OutOfOrderness returns the configured out-of-orderness in ms.
func (t *Tracker) OutOfOrderness() int64 { return t.ooo }

// Restore sets the tracker's state (for checkpoint restore).
func (t *Tracker) Restore(parts []Partition, current int64) {
	t.parts = append(t.parts[:0], parts...)
	t.current = current
	t.nextCheck = None
	t.deriveMax()
	t.recompute()
}

// deriveMax sets the largest event time seen from the partitions.
func (t *Tracker) deriveMax() {
	t.maxET = None
	for i := range t.parts {
		t.maxET = max(t.maxET, t.parts[i].MaxEventTime)
	}
}

// snapshotVersion is the tracker section's format version.
const snapshotVersion = 1

// Snapshot appends the tracker's state to e, format version 1 (state
// package encoding):
//
//	Byte(1) Int(pipeline watermark) Int(next idleness check)
//	Uint(#partitions) then per partition, by index:
//	  Int(max event time) Int(last arrival) Bool(idle) Int(records)
//
// Times are ms (event time for the watermark and max event times,
// processing time for the arrivals and the idleness check). The
// configuration (out-of-orderness, idle timeout) is not written: it comes
// from New. The minimum over active partitions is derived on restore. The
// tracker is unchanged, and equal states give equal bytes.
func (t *Tracker) Snapshot(e *state.Encoder) {
	e.Byte(snapshotVersion)
	e.Int(t.current)
	e.Int(t.nextCheck)
	e.Uint(uint64(len(t.parts)))
	for i := range t.parts {
		p := &t.parts[i]
		e.Int(p.MaxEventTime)
		e.Int(p.LastArrival)
		e.Bool(p.Idle)
		e.Int(p.Records)
	}
}

// maxPartitions bounds the partition count a snapshot may declare (each
// partition also takes at least four bytes of input, which bounds it
// first).
const maxPartitions = math.MaxInt32

// RestoreState replaces the tracker's state with one Snapshot wrote. The
// tracker should come from New with the configuration of the snapshotted
// one: it then behaves exactly as that tracker would have (same watermarks
// from Observe, Tick and End, same partitions), and its Snapshot equals
// the input. Under a changed configuration the state is still consistent:
// the minimum over active partitions is recomputed with the new
// out-of-orderness (the watermark never goes back), and the next idleness
// check is brought forward if the new idle timeout makes a partition due
// earlier.
//
// Errors: input that is not a version-1 tracker snapshot (wrapping
// state.ErrTruncated when it is short), a negative record count, a
// partition count above the input's size. Corrupt input never panics and
// allocates at most in proportion to its size. On error the tracker is
// unchanged. RestoreState differs from Restore, which takes partitions and
// a watermark directly and re-derives the idleness schedule.
func (t *Tracker) RestoreState(d *state.Decoder) error {
	d.Section("watermark", snapshotVersion)
	current := d.Int()
	nextCheck := d.Int()
	n := d.Len(maxPartitions, 4)
	if d.Err() != nil {
		return fmt.Errorf("watermark: restore: %w", d.Err())
	}
	parts := make([]Partition, n)
	for i := range parts {
		p := &parts[i]
		p.MaxEventTime = d.Int()
		p.LastArrival = d.Int()
		p.Idle = d.Bool()
		p.Records = d.Int()
		if d.Err() == nil && p.Records < 0 {
			d.Fail("partition %d: %d records", i, p.Records)
		}
		if d.Err() != nil {
			return fmt.Errorf("watermark: restore: %w", d.Err())
		}
	}
	t.parts, t.current, t.nextCheck = parts, current, nextCheck
	if t.idle > 0 {
		// Under the snapshot's configuration nextCheck is already at or
		// before every active partition's deadline; this only matters
		// when the idle timeout changed.
		for i := range t.parts {
			if p := &t.parts[i]; !p.Idle && p.LastArrival+t.idle < t.nextCheck {
				t.nextCheck = p.LastArrival + t.idle
			}
		}
	}
	// The minimum is derived (recompute keeps the watermark, which a
	// consistent snapshot has at or above it). A tracker without
	// partitions keeps New's minimum.
	t.min = None
	t.deriveMax()
	if len(t.parts) > 0 {
		t.recompute()
	}
	return nil
}
