// Package slo evaluates a pipeline's service-level objectives (spec.SLO)
// from the runner's snapshots (engine.Live), continuously over the run:
//
//   - event_time_lag_p95: the 95th percentile (nearest rank) of the
//     event-time lag, processing time − pipeline watermark, one sample per
//     snapshot while the watermark is finite;
//   - late_ratio: records that arrived after their window fired (late
//     accepted + too late, every stage) over valid records that reached
//     the stages;
//   - checkpoint_success: checkpoints taken / (taken + failed);
//   - sink_commit_p95: the 95th percentile of sink commit durations.
//
// An objective with no sample yet is "no data", which is not a miss. The
// definitions and how to read them: docs/slo.md.
package slo

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// State is one objective's evaluation.
type State struct {
	Name   string  // event_time_lag_p95, late_ratio, checkpoint_success, sink_commit_p95
	Target float64 // seconds for the p95s, a share for the ratios
	Value  float64 // the current value, in the same unit; NaN without data
	// Met is whether Value satisfies Target (≤ for lag, ratio and commit
	// time; ≥ for checkpoint success); true without data.
	Met     bool
	NoData  bool
	Unit    string // "seconds" or "ratio"
	Samples int    // observations behind Value
}

// String renders the state for people: "late_ratio 0.12% (target ≤ 0.1%): MISSED".
func (s State) String() string {
	verdict := "met"
	if s.NoData {
		verdict = "no data"
	} else if !s.Met {
		verdict = "MISSED"
	}
	cmp := "≤"
	if s.Name == "checkpoint_success" {
		cmp = "≥"
	}
	if s.Unit == "ratio" {
		return fmt.Sprintf("%s %s (target %s %s): %s", s.Name, pct(s.Value, s.NoData), cmp, pct(s.Target, false), verdict)
	}
	return fmt.Sprintf("%s %s (target %s %s): %s", s.Name, dur(s.Value, s.NoData), cmp, dur(s.Target, false), verdict)
}

func pct(v float64, none bool) string {
	if none {
		return "-"
	}
	return fmt.Sprintf("%.4g%%", v*100)
}

func dur(v float64, none bool) string {
	if none {
		return "-"
	}
	return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
}

// Evaluator accumulates snapshots and evaluates the objectives. It is safe
// for concurrent use.
type Evaluator struct {
	mu      sync.Mutex
	slo     spec.SLO
	lags    []float64 // seconds
	commits []float64 // seconds
	last    *engine.Live
}

// New returns an evaluator of s (nil: no objectives).
func New(s *spec.SLO) *Evaluator {
	e := &Evaluator{}
	if s != nil {
		e.slo = *s
	}
	return e
}

// Update adds a snapshot (chain it with other engine.Options.Live
// consumers).
func (e *Evaluator) Update(l *engine.Live) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last = l
	if l.Watermark != changelog.WatermarkNone && l.Watermark != changelog.WatermarkInfinity {
		e.lags = append(e.lags, float64(l.ProcessingTime-l.Watermark)/1000)
	}
	for _, c := range l.SinkCommits {
		if !c.Err {
			e.commits = append(e.commits, c.Duration.Seconds())
		}
	}
}

// p95 is the nearest-rank 95th percentile of xs (which it sorts).
func p95(xs []float64) float64 {
	slices.Sort(xs)
	i := int(math.Ceil(0.95*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

// States evaluates every stated objective, in a fixed order.
func (e *Evaluator) States() []State {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []State
	if t := e.slo.EventTimeLagP95; t > 0 {
		out = append(out, judge(State{Name: "event_time_lag_p95", Target: time.Duration(t).Seconds(), Unit: "seconds"},
			len(e.lags), func() float64 { return p95(slices.Clone(e.lags)) }, false))
	}
	if r := e.slo.LateRatio; r != nil {
		var late, valid int64
		if l := e.last; l != nil {
			for _, st := range l.Stages {
				late += st.LateAccepted + st.TooLateDropped + st.TooLateSideOutput
				valid += st.OnTime + st.LateAccepted + st.TooLateDropped + st.TooLateSideOutput
			}
		}
		out = append(out, judge(State{Name: "late_ratio", Target: float64(*r), Unit: "ratio"},
			int(valid), func() float64 { return float64(late) / float64(valid) }, false))
	}
	if r := e.slo.CheckpointSuccess; r != nil {
		var ok, failed int
		if l := e.last; l != nil {
			ok, failed = l.Checkpoints.Taken, l.Checkpoints.Failures
		}
		out = append(out, judge(State{Name: "checkpoint_success", Target: float64(*r), Unit: "ratio"},
			ok+failed, func() float64 { return float64(ok) / float64(ok+failed) }, true))
	}
	if t := e.slo.SinkCommitP95; t > 0 {
		out = append(out, judge(State{Name: "sink_commit_p95", Target: time.Duration(t).Seconds(), Unit: "seconds"},
			len(e.commits), func() float64 { return p95(slices.Clone(e.commits)) }, false))
	}
	return out
}

// judge fills s from n observations: no data (met, NaN) when n is 0, else
// value() against the target, at most (atLeast false) or at least.
func judge(s State, n int, value func() float64, atLeast bool) State {
	s.Samples = n
	if n == 0 {
		s.NoData, s.Met, s.Value = true, true, math.NaN()
		return s
	}
	s.Value = value()
	if atLeast {
		s.Met = s.Value >= s.Target
	} else {
		s.Met = s.Value <= s.Target
	}
	return s
}

// Missed returns the objectives not met.
func (e *Evaluator) Missed() []State {
	var out []State
	for _, s := range e.States() {
		if !s.Met {
			out = append(out, s)
		}
	}
	return out
}
