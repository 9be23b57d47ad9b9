package window

// Cumulate assigns cumulate windows (Flink's CUMULATE window table
// function, FLIP-145): the time line is cut into periods of Size ms from
// the epoch plus Offset, and each period [p, p+Size) holds the windows
// [p, p+Step), [p, p+2·Step), …, [p, p+Size) — a window that keeps its
// start and grows by Step, emitting its running aggregate at each step's
// end ("revenue since midnight, every hour"). An event at t belongs to
// every window of its period that ends after t: Size/Step − ⌊(t−p)/Step⌋
// of them. Size is a multiple of Step.
//
// The slices are the steps [p + j·Step, p + (j+1)·Step): every window is
// the run of its period's first slices, so the sliced operator keeps one
// partial aggregate per step and key, as Flink's SliceAssigners.cumulative
// does.
type Cumulate struct {
	Size, Step, Offset int64
}

// period returns the start of the period containing ts.
func (c *Cumulate) period(ts int64) int64 {
	return floorDiv(ts-c.Offset, c.Size)*c.Size + c.Offset
}

// Assign implements Assigner: the windows of ts's period ending after ts,
// by ascending end (all share one start).
func (c *Cumulate) Assign(ts int64, dst []Window) []Window {
	p := c.period(ts)
	j := (ts - p) / c.Step // ts's step within the period
	for k := j + 1; k <= c.Size/c.Step; k++ {
		dst = append(dst, Window{Start: p, End: p + k*c.Step})
	}
	return dst
}

// MaxWindows implements Assigner.
func (c *Cumulate) MaxWindows() int { return int(c.Size / c.Step) }

// Clone returns a copy of c.
func (c *Cumulate) Clone() Assigner { d := *c; return &d }

// SliceOf implements Slicer: ts's step.
func (c *Cumulate) SliceOf(ts int64) Window {
	p := c.period(ts)
	s := p + (ts-p)/c.Step*c.Step
	return Window{Start: s, End: s + c.Step}
}

// MaxSlices implements Slicer.
func (c *Cumulate) MaxSlices() int { return int(c.Size / c.Step) }

// Global is the one window per key over all the event times tidemark
// accepts (eventtime: the years 0000 to 9999): [GlobalStart, GlobalEnd).
// It fires when the watermark reaches GlobalEnd, that is when the input
// ends (the watermark at +∞), or at early firings: SQL's GROUP BY without
// a window, whose results are final when the input is.
type Global struct{}

// The global window's bounds: 0000-01-01T00:00:00Z and
// 10000-01-01T00:00:00Z, eventtime's range.
const (
	GlobalStart = -62_167_219_200_000
	GlobalEnd   = 253_402_300_800_000
)

// Assign implements Assigner.
func (Global) Assign(ts int64, dst []Window) []Window {
	return append(dst, Window{Start: GlobalStart, End: GlobalEnd})
}

// MaxWindows implements Assigner.
func (Global) MaxWindows() int { return 1 }

// Clone implements Assigner.
func (g Global) Clone() Assigner { return g }
