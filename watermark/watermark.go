// Package watermark tracks event-time progress per source partition and
// derives the pipeline watermark.
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
//     backwards. When every partition is idle it holds its value.
//   - At the end of a bounded input it becomes WatermarkInfinity.
//
// The Tracker is a pure, single-threaded state machine: time enters only
// through the now arguments (processing time, ms), so runs are
// deterministic.
package watermark

import (
	"github.com/tidemark/tidemark/changelog"
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
}

// New returns a tracker with out-of-orderness and idle timeout in ms.
func New(outOfOrdernessMs, idleTimeoutMs int64) *Tracker {
	return &Tracker{ooo: outOfOrdernessMs, idle: idleTimeoutMs, current: None, min: None, nextCheck: Infinity}
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
// idle_timeout turn idle. It returns the pipeline watermark afterwards.
func (t *Tracker) Tick(now int64) int64 {
	if t.idle <= 0 || now < t.nextCheck {
		return t.current
	}
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
	return t.current
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
	t.recompute()
}
