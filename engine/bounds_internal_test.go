package engine

import (
	"math"
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// TestTimeBounds checks the timestamp rules' bounds (timeOK, setBounds)
// by hand — max_future 10 and max_past 20 at processing time 100 pass
// event times 80 … 110 — at the int64 bounds, where they saturate, and
// against brokenTimeRule, which decides exactly: timeOK must never pass a
// record brokenTimeRule rejects, and (without an ingest-time rule) must
// pass every record it accepts.
func TestTimeBounds(t *testing.T) {
	const mn, mx = math.MinInt64, math.MaxInt64
	r := &row.Row{}
	for _, tc := range []struct {
		tr      plan.TimeRules
		pt      int64
		lo, hi  int64
		arrival int64 // Meta.Arrival (NoArrival: judged against pt)
	}{
		{plan.TimeRules{MaxFuture: 10, MaxPast: 20}, 100, 80, 110, source.NoArrival},
		{plan.TimeRules{MaxFuture: 10}, 100, mn, 110, source.NoArrival},
		{plan.TimeRules{MaxPast: 20}, 100, 80, mx, source.NoArrival},
		{plan.TimeRules{MaxFuture: 10, MaxPast: 20}, mx - 5, mx - 25, mx, source.NoArrival},
		{plan.TimeRules{MaxFuture: 10, MaxPast: 20}, mn + 5, mn, mn + 15, source.NoArrival},
		{plan.TimeRules{MaxFuture: mx, MaxPast: mx}, 0, -mx, mx, source.NoArrival},
		{plan.TimeRules{MaxFuture: mx, MaxPast: mx}, -1, mn, mx - 1, source.NoArrival},
		// Arrival recorded: judged against it (300), not the clock (100).
		{plan.TimeRules{MaxFuture: 10, MaxPast: 20}, 300, 280, 310, 300},
	} {
		rt := &runtime{plan: &plan.Plan{Time: tc.tr}}
		rt.rules.timeRules = true
		m := &source.Meta{Arrival: tc.arrival}
		now := tc.pt
		if tc.arrival != source.NoArrival {
			now = 100
		}
		rt.timeOK(m, 0, now)
		if b := rt.bounds; !b.set || b.pt != tc.pt || b.lo != tc.lo || b.hi != tc.hi {
			t.Errorf("%+v at %d: bounds %+v; want [%d, %d]", tc.tr, tc.pt, b, tc.lo, tc.hi)
		}
		for _, ts := range []int64{mn, mn + 1, tc.lo - 1, tc.lo, tc.lo + 1, tc.pt, tc.hi - 1, tc.hi, tc.hi + 1, mx - 1, mx} {
			ok := rt.timeOK(m, ts, now)
			broken, _ := brokenTimeRule(&rt.plan.Time, &rt.rules, r, m, ts, now)
			if want := ts >= tc.lo && ts <= tc.hi; ok != want || ok != (broken == ruleNone) {
				t.Errorf("%+v at %d: timeOK(%d) = %v, brokenTimeRule %d; want %v", tc.tr, tc.pt, ts, ok, broken, want)
			}
		}
	}
	// A file source is judged against the run's start, and an ingest-time
	// rule always goes to brokenTimeRule.
	rt := &runtime{plan: &plan.Plan{Time: plan.TimeRules{MaxFuture: 10}}}
	rt.rules = routerRules{fileClock: true, start: 1000, timeRules: true}
	m := &source.Meta{Arrival: source.NoArrival}
	if !rt.timeOK(m, 1010, 0) || rt.timeOK(m, 1011, 0) || rt.bounds.pt != 1000 {
		t.Errorf("file clock: bounds %+v; want [MinInt64, 1010] at 1000", rt.bounds)
	}
	rt = &runtime{plan: &plan.Plan{Time: plan.TimeRules{MaxFuture: 10, HasIngest: true}}}
	if rt.timeOK(m, 5, 5) {
		t.Error("ingest-time rule: timeOK passed a record")
	}
}
