// Package window assigns event times to windows.
//
// In the data flow it is core, below the operators: plan builds a stage's
// assigner from its spec, and the window operator (package operator), the
// window joins (package join) and the task ask it which windows and
// slices an event time belongs to. It holds no state and reads no clock.
//
// A window is the half-open event-time interval [Start, End) in ms since the
// epoch. Assigners (after Flink's TumblingEventTimeWindows,
// SlidingEventTimeWindows and EventTimeSessionWindows):
//
//   - Tumbling (size): fixed-length, non-overlapping windows aligned to the
//     Unix epoch plus offset. An event belongs to exactly one window.
//   - Sliding (size, slide): fixed-length windows starting every slide; an
//     event at t belongs to every window [s, s+size) with s a multiple of
//     slide (plus the offset) and s ≤ t < s+size (Flink's
//     SlidingEventTimeWindows, Kafka Streams' hopping windows). When size
//     is a multiple of slide that is size/slide windows (1h/30m: 12:40 is
//     in [12:00, 13:00) and [12:30, 13:30)); otherwise ⌊size/slide⌋ or
//     ⌈size/slide⌉ of them (90s/60s: 0:50 is in [0:00, 1:30) only, 1:10 in
//     [0:00, 1:30) and [1:00, 2:30)). The slide must not exceed the size:
//     an event between two windows would belong to none.
//   - Calendar (tumbling or sliding whose size and slide are whole days):
//     windows start at local midnight in the configured IANA zone, so a day
//     window in a zone with daylight saving is 23 or 25 hours long. Day
//     numbers count from 1970-01-01 (local), and N-day windows align to
//     multiples of N from there. Precisely, day n begins at the first
//     instant whose local date is day n or later: at the transition when
//     clocks skip midnight, at the first occurrence when midnight repeats.
//     Day windows tile the time line without gaps or overlaps.
//   - Cumulate (size, step; cumulate.go): windows of one start growing by
//     step up to size (Flink's CUMULATE). Global: one window over all
//     event time, closed when the input ends.
//   - Session (gap): per key, an event opens [t, t+gap); overlapping or
//     touching sessions merge (Flink's TimeWindow.intersects). Merging lives
//     in the window operator, which owns per-key state; this package gives
//     the proto-window.
//
// Slices (Slicer): the fixed-length, calendar and cumulate assigners also cut the
// time line at every window boundary — each window start and each window
// end — into slices. A window is a run of consecutive slices, and the
// windows containing any instant of a slice are those containing the whole
// slice, so an aggregate kept per slice and merged when a window fires
// equals the window's aggregate: the window slicing of Flink's
// SlicingWindowOperator and of Scotty (Traub et al., "Scotty: General and
// Efficient Open-Source Window Aggregation for Stream Processing Systems",
// ACM TODS 46(1), 2021), which cut at the same boundaries. When size is a
// multiple of slide the slices are the slide-long panes (1h/30m: [12:00,
// 12:30), [12:30, 13:00) …); otherwise each slide is cut in two where a
// window ends (7s/3s, windows starting at multiples of 3 s and ending at
// 1 s past them: [0, 1), [1, 3), [3, 4), [4, 6) …), at most 2⌊size/slide⌋ + 1
// slices per window, where slicing at gcd(size, slide) would make up to
// size slices of 1 s for 1000s/999s windows.
package window

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/spec"
)

// Window is the event-time interval [Start, End) in ms since the epoch.
type Window struct {
	Start int64
	End   int64
}

// Contains reports whether ts (ms) lies in [Start, End).
func (w Window) Contains(ts int64) bool { return ts >= w.Start && ts < w.End }

// String renders the window in UTC.
func (w Window) String() string {
	return fmt.Sprintf("[%s, %s)", time.UnixMilli(w.Start).UTC().Format(time.RFC3339), time.UnixMilli(w.End).UTC().Format(time.RFC3339))
}

// Assigner maps an event time to the windows that contain it.
type Assigner interface {
	// Assign appends to dst the windows containing ts, in ascending order of
	// Start, and returns the extended slice.
	Assign(ts int64, dst []Window) []Window
	// MaxWindows is the largest number of windows Assign can return for one
	// event (⌈size/slide⌉).
	MaxWindows() int
	// Clone returns an assigner of the same windows with state of its own:
	// an assigner may cache (Calendar's last day) and is not safe for
	// concurrent use, so each task uses a clone.
	Clone() Assigner
}

// Slicer is implemented by assigners whose windows can be cut into slices
// (the package comment, "Slices"): Fixed and Calendar.
type Slicer interface {
	Assigner
	// SliceOf returns the slice containing ts: [b, b') for the latest
	// window boundary (a window's start or end) b ≤ ts and the next one
	// b'. Every window Assign returns for ts contains the whole slice, and
	// Assign returns the same windows for every instant of it.
	SliceOf(ts int64) Window
	// MaxSlices is the largest number of slices a window is made of:
	// size/slide when size is a multiple of slide, else 2⌊size/slide⌋ + 1.
	MaxSlices() int
}

// sliceIn returns the slice containing point p of the slide period
// starting at the window start last: the period [last, last+slide) is cut
// where the windows starting one size earlier end, rem = size mod slide
// past last (not at all when rem is 0).
func sliceIn(p, last, slide, rem int64) (start, end int64) {
	switch {
	case rem == 0:
		return last, last + slide
	case p-last < rem:
		return last, last + rem
	}
	return last + rem, last + slide
}

// maxSlices is MaxSlices for size and slide in any unit.
func maxSlices(size, slide int64) int {
	if size%slide == 0 {
		return int(size / slide)
	}
	return int(2*(size/slide) + 1)
}

// day is 24 hours in ms.
const day = int64(24 * time.Hour / time.Millisecond)

// New returns the assigner for a tumbling, sliding, cumulate or global
// window spec. Tumbling and sliding sizes that are whole days (with a
// slide of whole days) give calendar windows in the spec's timezone. It
// returns an error for session windows (use Gap), non-positive sizes, a
// slide longer than the size, a cumulate size that is not a multiple of
// its step, or an unknown zone.
func New(w spec.Window) (Assigner, error) {
	size, slide := w.Size.Ms(), w.Size.Ms()
	switch w.Type {
	case "tumbling":
	case "sliding":
		slide = w.Slide.Ms()
	case "cumulate":
		step := w.Step.Ms()
		if size <= 0 || step <= 0 || size%step != 0 {
			return nil, fmt.Errorf("cumulate window size %dms and step %dms must be positive, the size a multiple of the step", size, step)
		}
		return &Cumulate{Size: size, Step: step, Offset: w.Offset.Ms() % size}, nil
	case "global":
		return Global{}, nil
	default:
		return nil, fmt.Errorf("window type %q has no fixed assigner", w.Type)
	}
	if size <= 0 || slide <= 0 || slide > size {
		return nil, fmt.Errorf("window size %dms and slide %dms must be positive, the slide at most the size", size, slide)
	}
	if size%day == 0 && slide%day == 0 {
		loc, err := time.LoadLocation(zoneOrUTC(w.Timezone))
		if err != nil {
			return nil, fmt.Errorf("window.timezone: %w", err)
		}
		return &Calendar{SizeDays: size / day, SlideDays: slide / day, Loc: loc}, nil
	}
	return &Fixed{Size: size, Slide: slide, Offset: w.Offset.Ms() % slide}, nil
}

func zoneOrUTC(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}

// Fixed assigns fixed-length windows of Size ms starting every Slide ms at
// epoch + Offset (Slide == Size for tumbling windows; 0 < Slide ≤ Size,
// Size need not be a multiple of Slide).
type Fixed struct {
	Size, Slide, Offset int64
}

// floorDiv is floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Assign implements Assigner. Event times within a window size of the ends
// of int64 have windows that int64 cannot hold (eventtime keeps event
// times far from them); Assign still returns MaxWindows windows.
func (f *Fixed) Assign(ts int64, dst []Window) []Window {
	last := floorDiv(ts-f.Offset, f.Slide)*f.Slide + f.Offset // latest start ≤ ts
	n := windowsBack(ts-last, f.Size, f.Slide)
	first := last - (n-1)*f.Slide // earliest start with end > ts
	// Count the windows rather than compare starts with last: near
	// math.MaxInt64, s += Slide would wrap and never pass last.
	for i := int64(0); i < n; i++ {
		s := first + i*f.Slide
		dst = append(dst, Window{Start: s, End: s + f.Size})
	}
	return dst
}

// windowsBack returns how many windows of size, one slide apart, contain a
// point d (0 ≤ d < slide ≤ size) past the latest window start: the starts
// last, last − slide, … down to the last one whose end is after the point,
// ⌈(size − d) / slide⌉ of them (size/slide when size is a multiple).
func windowsBack(d, size, slide int64) int64 {
	return (size - d + slide - 1) / slide
}

// MaxWindows implements Assigner.
func (f *Fixed) MaxWindows() int { return int((f.Size + f.Slide - 1) / f.Slide) }

// Clone returns a copy of f.
func (f *Fixed) Clone() Assigner { c := *f; return &c }

// SliceOf implements Slicer.
func (f *Fixed) SliceOf(ts int64) Window {
	last := floorDiv(ts-f.Offset, f.Slide)*f.Slide + f.Offset
	s, e := sliceIn(ts, last, f.Slide, f.Size%f.Slide)
	return Window{Start: s, End: e}
}

// MaxSlices implements Slicer.
func (f *Fixed) MaxSlices() int { return maxSlices(f.Size, f.Slide) }

// Calendar assigns windows of SizeDays local days starting every SlideDays
// local days at local midnight in Loc (0 < SlideDays ≤ SizeDays).
type Calendar struct {
	SizeDays, SlideDays int64
	Loc                 *time.Location
	// cache of the last day computed: local day [cStart, cEnd) is day number cDay
	cStart, cEnd, cDay int64
	cValid             bool
}

// civilDay returns the number of days since 1970-01-01 of the civil date.
func civilDay(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// midnight returns the first instant (ms) of local day n (days since
// 1970-01-01) in loc: the first instant whose local date is day n or
// later. That is local midnight, except where a zone transition skips or
// repeats midnight: when clocks jump over it (America/Sao_Paulo,
// 2018-11-04) the day begins at the transition; when midnight occurs twice
// (Asia/Amman, 2014-10-31) at its first occurrence; a day skipped entirely
// (Pacific/Apia, 2011-12-30) is empty. time.Date is no help there: it
// returns either side of the transition.
//
// An instant u shows day n or later iff u + offset(u) ≥ n days, so within
// one zone period [start, end) with offset off the first such instant is
// max(start, n days − off). The answer is the least of these over the
// periods around local midnight (offsets are within ±maxOffset).
func (c *Calendar) midnight(n int64) int64 {
	l := n * 86400 // local midnight of day n, seconds, as if UTC
	first := l + maxOffset
	for u := l - maxOffset; u <= first; {
		t := time.Unix(u, 0).In(c.Loc)
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		open := end.IsZero() // the last period: no end
		s, e := start.Unix(), end.Unix()
		if !open && e <= u {
			// Past a zone's last transition (its rule string), Go's
			// ZoneBounds can answer a period that ended before u
			// (Africa/Cairo on 1 January after a leap year, from
			// 2041): u's offset holds for [u, u+zoneStep), and asking
			// again at the period's end would loop for ever.
			s, e = u, u+zoneStep
		}
		cand := l - int64(off)
		if !start.IsZero() && cand < s {
			cand = s
		}
		if (open || cand < e) && cand < first {
			first = cand
		}
		if open {
			break
		}
		u = e
	}
	return first * 1000
}

// zoneStep is how far midnight steps (seconds) where ZoneBounds gives no
// period containing the instant asked: no zone period is shorter.
const zoneStep = 900

// maxOffset bounds the UTC offset of any zone (seconds; the largest in the
// tz database are under 16 h).
const maxOffset = 30 * 3600

// dayOf returns the number of the local day whose window [midnight(n),
// midnight(n+1)) contains ts. That is ts's local date, except after clocks
// go back across midnight (America/St_Johns until 2011: 00:01 back to
// 23:01): those instants show the previous date but come after the next
// day began, and belong to it.
func (c *Calendar) dayOf(ts int64) int64 {
	if c.cValid && ts >= c.cStart && ts < c.cEnd {
		return c.cDay
	}
	t := time.UnixMilli(ts).In(c.Loc)
	n := civilDay(t.Date())
	start, end := c.midnight(n), c.midnight(n+1)
	for ts >= end { // only after a transition back across midnight
		n++
		start, end = end, c.midnight(n+1)
	}
	c.cDay, c.cStart, c.cEnd, c.cValid = n, start, end, true
	return n
}

// Assign implements Assigner.
func (c *Calendar) Assign(ts int64, dst []Window) []Window {
	n := c.dayOf(ts)
	if c.SizeDays == 1 && c.SlideDays == 1 {
		return append(dst, Window{Start: c.cStart, End: c.cEnd})
	}
	last := floorDiv(n, c.SlideDays) * c.SlideDays
	first := last - (windowsBack(n-last, c.SizeDays, c.SlideDays)-1)*c.SlideDays
	for s := first; s <= last; s += c.SlideDays {
		dst = append(dst, Window{Start: c.midnight(s), End: c.midnight(s + c.SizeDays)})
	}
	return dst
}

// MaxWindows implements Assigner.
func (c *Calendar) MaxWindows() int { return int((c.SizeDays + c.SlideDays - 1) / c.SlideDays) }

// SliceOf implements Slicer: the slices of local days, from local midnight
// (as the windows) to local midnight.
func (c *Calendar) SliceOf(ts int64) Window {
	n := c.dayOf(ts)
	last := floorDiv(n, c.SlideDays) * c.SlideDays
	s, e := sliceIn(n, last, c.SlideDays, c.SizeDays%c.SlideDays)
	return Window{Start: c.midnight(s), End: c.midnight(e)}
}

// MaxSlices implements Slicer.
func (c *Calendar) MaxSlices() int { return maxSlices(c.SizeDays, c.SlideDays) }

// Clone returns a copy of c with an empty cache.
func (c *Calendar) Clone() Assigner { d := *c; d.cValid = false; return &d }
