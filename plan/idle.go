package plan

import "github.com/tidemark/tidemark/window"

// IdleAdvanceLimit returns the limit of idle advance
// (event_time.idle_advance, watermark.Tracker.SetIdleAdvance;
// docs/semantics.md, "When the input stops"): given the newest event time
// seen (ms), the watermark at which every window holding an event at or
// before it has closed, at every stage. For a stage reading the source
// that is the end of the latest window containing the newest event time
// (a session: it + gap) plus the stage's allowed lateness; a stage reading
// another stage receives rows whose times (window_end, window_start, and
// the upstream's event times) are at most the upstream's latest window
// end (window_end − 1 ms as an event time, Stage.EventTimeShift), so its
// own latest window is the one containing that. The limit
// is the latest of these over the stages; it never decreases as the
// newest event time grows. The function holds its own copies of the
// window assigners (they cache) and is safe to call from one goroutine.
func (p *Plan) IdleAdvanceLimit() func(newest int64) int64 {
	type st struct {
		input    int
		shift    int64
		assigner window.Assigner
		gap      int64
		lateness int64
		stateful bool
	}
	stages := make([]st, len(p.Stages))
	for i, s := range p.Stages {
		c := st{input: s.Input, shift: s.EventTimeShift, gap: s.Operator.Gap, lateness: s.Operator.AllowedLateness, stateful: !s.Desc.Stateless}
		if s.Operator.Assigner != nil {
			c.assigner = s.Operator.Assigner.Clone()
		}
		if j := s.Join; j != nil {
			// A join's rows wait at most its window (its bounds) and
			// lateness behind the newest event; its output watermark
			// trails by its hold-back.
			c.stateful, c.input = true, -1
			if j.Config.Assigner != nil {
				c.assigner = j.Config.Assigner.Clone()
			} else {
				c.gap = max(j.Config.Upper, -j.Config.Lower, 0)
			}
			c.lateness = j.Config.Lateness + max(j.Hold[0], j.Hold[1])
		}
		stages[i] = c
	}
	var buf []window.Window
	ends := make([]int64, len(stages))
	return func(newest int64) int64 {
		limit := newest
		for i := range stages {
			s := &stages[i]
			bound := newest
			if s.input >= 0 {
				bound = ends[s.input] + s.shift
			}
			end := bound
			switch {
			case !s.stateful:
			case s.assigner != nil:
				buf = s.assigner.Assign(bound, buf[:0])
				for _, w := range buf {
					end = max(end, w.End)
				}
			default:
				end = bound + s.gap
			}
			ends[i] = end
			if s.stateful {
				limit = max(limit, end+s.lateness)
			}
		}
		return limit
	}
}
