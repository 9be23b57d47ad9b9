package engine

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// TestTimeOKMatchesBrokenTimeRule runs one router's timeOK over a run of
// records — processing times that repeat (a batch's) and change (the next
// batch's, a recorded arrival time, the int64 bounds), event times near
// the bounds of each — and requires brokenTimeRule's verdict for every
// record: the bounds of one processing time must never judge a record of
// another. An ingest-time rule must send every record to brokenTimeRule.
func TestTimeOKMatchesBrokenTimeRule(t *testing.T) {
	const mn, mx = math.MinInt64, math.MaxInt64
	limit := rapid.SampledFrom([]int64{0, 0, 1, 10, 1000, mx - 1, mx})
	anyTime := rapid.OneOf(rapid.Int64Range(-5000, 5000), rapid.SampledFrom([]int64{mn, mn + 1, mx - 1, mx, 0}), rapid.Int64())
	rapid.Check(t, func(rt *rapid.T) {
		tr := plan.TimeRules{MaxFuture: limit.Draw(rt, "max_future"), MaxPast: limit.Draw(rt, "max_past")}
		tr.HasIngest = rapid.IntRange(0, 5).Draw(rt, "ingest") == 0
		if tr.MaxFuture == 0 && tr.MaxPast == 0 && !tr.HasIngest {
			tr.MaxFuture = 10
		}
		x := &runtime{plan: &plan.Plan{Time: tr}}
		x.rules.timeRules = true
		if rapid.Bool().Draw(rt, "file") {
			x.rules.fileClock, x.rules.start = true, anyTime.Draw(rt, "start")
		}
		// The ingest-time field, for brokenTimeRule to read.
		sc := row.NewSchema()
		f, err := sc.Add("ingest", row.KindTime)
		if err != nil {
			rt.Fatal(err)
		}
		x.plan.Time.Ingest, tr.Ingest = f, f
		r := sc.NewRow()
		if err := r.Set(f, row.Time(anyTime.Draw(rt, "ingestTime"))); err != nil {
			rt.Fatal(err)
		}
		now := anyTime.Draw(rt, "now0")
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		for i := range n {
			if rapid.IntRange(0, 3).Draw(rt, "newNow") == 0 {
				now = anyTime.Draw(rt, "now")
			}
			m := &source.Meta{Arrival: source.NoArrival}
			if rapid.IntRange(0, 3).Draw(rt, "arrival") == 0 {
				m.Arrival = anyTime.Draw(rt, "arr")
				if m.Arrival == source.NoArrival {
					m.Arrival++
				}
			}
			pt := now
			switch {
			case m.Arrival != source.NoArrival:
				pt = m.Arrival
			case x.rules.fileClock:
				pt = x.rules.start
			}
			// An event time at a bound of pt's range, or anywhere.
			var ts int64
			switch rapid.IntRange(0, 4).Draw(rt, "tsShape") {
			case 0:
				ts = satAdd(pt, tr.MaxFuture) + rapid.Int64Range(-1, 1).Draw(rt, "d")
			case 1:
				ts = satAdd(pt, -tr.MaxPast) + rapid.Int64Range(-1, 1).Draw(rt, "d")
			case 2:
				ts = pt
			default:
				ts = anyTime.Draw(rt, "ts")
			}
			ok := x.timeOK(m, ts, now)
			broken, _ := brokenTimeRule(&tr, &x.rules, r, m, ts, now)
			if tr.HasIngest && ok {
				rt.Fatalf("record %d: ingest-time rule: timeOK passed ts %d", i, ts)
			}
			if !tr.HasIngest && ok != (broken == ruleNone) {
				rt.Fatalf("record %d: %+v, pt %d (now %d, arrival %d): timeOK(%d) = %v, brokenTimeRule %d", i, tr, pt, now, m.Arrival, ts, ok, broken)
			}
		}
	})
}

// satAdd is a + b saturated at the int64 bounds.
func satAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}
