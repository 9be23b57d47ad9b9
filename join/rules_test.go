package join

import (
	"testing"

	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/window"
)

// rulesOp builds a one-key-group operator of type ty, kind and mode (allowed lateness 5 ms; interval bounds [0, 10] ms; window joins
// tumbling 60 ms) keeping one int column per side.
func rulesOp(t *testing.T, ty Type, kind Kind, mode operator.Mode) *Operator {
	t.Helper()
	c := Config{Type: ty, Kind: kind, Mode: mode, Lateness: 5, Lower: 0, Upper: 10, UpperCol: -1, TombCol: -1,
		Keep: [2][]row.Kind{{row.KindInt}, {row.KindInt}}, Columns: []Column{{Side: L, Col: 0}, {Side: R, Col: 0}},
		KeyGroups: 1, Groups: keygroup.Range{Lo: 0, Hi: 1}}
	if ty == Window {
		a, err := window.New(spec.Window{Type: "tumbling", Size: spec.Duration(60 * 1e6)})
		if err != nil {
			t.Fatal(err)
		}
		c.Assigner = a
	}
	op, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// process offers op one row of key 1 on side at event time ts.
func process(t *testing.T, op *Operator, side int, ts int64, seq uint64) Outcome {
	t.Helper()
	s := row.NewSchema()
	k, _ := s.Add("k", row.KindInt)
	v, _ := s.Add("v", row.KindInt)
	var r row.Row
	s.Shape(&r)
	_ = r.Set(k, row.Int(1))
	_ = r.Set(v, row.Int(ts))
	out, err := op.Process(side, 0, operator.AppendKey(nil, &r, []row.Field{k}), ts, seq, &r, []row.Field{v}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var outcomeNames = map[Outcome]string{OnTime: "on time", LateAccepted: "late accepted", TooLate: "too late"}

// TestTooLateRule pins docs/semantics.md, "Late rows", at its boundaries
// (allowed lateness 5 ms): a row at event time t is too late exactly when
// the watermark that judges it is strictly greater than t + 5 — for
// interval and temporal joins its own side's watermark, whatever the other
// side's; for a window join min(W_left, W_right) against each of its
// windows' last instant (end − 1 ms) + 5, i.e. the window is closed once
// min(W_left, W_right) ≥ end + 5.
func TestTooLateRule(t *testing.T) {
	for _, c := range []struct {
		name        string
		ty          Type
		left, right int64 // the watermarks before the row
		side        int
		ts          int64
		want        Outcome
	}{
		// Interval: a right row at 100 is judged by W_right alone.
		{"interval right W=t+L", Interval, 0, 105, R, 100, LateAccepted},
		{"interval right W=t+L+1", Interval, 0, 106, R, 100, TooLate},
		{"interval right W=t", Interval, 0, 100, R, 100, OnTime},
		{"interval right W=t+1", Interval, 0, 101, R, 100, LateAccepted},
		// A left row at 100 is judged by W_left: the other side far ahead
		// does not make it late.
		{"interval left, W_right far ahead", Interval, 100, 1000, L, 100, OnTime},
		{"interval left W=t+L", Interval, 105, 0, L, 100, LateAccepted},
		{"interval left W=t+L+1", Interval, 106, 0, L, 100, TooLate},
		// Temporal: a probe (left) by W_left, a version (right) by W_right.
		{"temporal probe W=t+L", Temporal, 105, 0, L, 100, LateAccepted},
		{"temporal probe W=t+L+1", Temporal, 106, 0, L, 100, TooLate},
		{"temporal probe, W_right far ahead", Temporal, 0, 1000, L, 100, OnTime},
		{"temporal version W=t+L", Temporal, 0, 105, R, 100, LateAccepted},
		{"temporal version W=t+L+1", Temporal, 0, 106, R, 100, TooLate},
		// Window [0, 60), lateness 5: open while min(W) ≤ 64 = 59 + 5.
		{"window min(W)=end-1+L", Window, 64, 64, L, 10, LateAccepted},
		{"window min(W)=end+L", Window, 65, 65, L, 10, TooLate},
		// The own side's watermark past the window does not close it while
		// the other side's holds it open (min), on either side.
		{"window own side past, other holds", Window, 1000, 64, L, 10, LateAccepted},
		{"window own side past, other holds (right)", Window, 64, 1000, R, 10, LateAccepted},
		{"window other side past, own holds", Window, 64, 1000, L, 10, LateAccepted},
		{"window both past", Window, 1000, 65, L, 10, TooLate},
		// Late or on time is still by the row's own side.
		{"window own side not past", Window, 5, 1000, L, 10, OnTime},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := rulesOp(t, c.ty, Inner, operator.Update)
			op.Advance(c.left, c.right, 0)
			if got := process(t, op, c.side, c.ts, 1); got != c.want {
				t.Fatalf("W_left %d, W_right %d, side %d row at %d: %s, want %s",
					c.left, c.right, c.side, c.ts, outcomeNames[got], outcomeNames[c.want])
			}
		})
	}
}

// TestEndedSideCounts pins docs/semantics.md, "Watermarks and event time
// of a join" (an input's end counts at once): an input's end is its
// watermark at +∞, and the join acts on it at once, while the other input
// is still running. A left outer interval join's
// left row at 100 (bounds [0, 10] ms, lateness 5 ms) comes out padded
// with nulls as soon as the right input ends, with W_left still at 100;
// before the end, W_right at 114 (= 100 + 10 + 5 − 1) keeps it waiting.
// And once the left input has ended, the right side's rows are still
// judged by W_right alone: a right row at 50 with W_right 55 joins.
func TestEndedSideCounts(t *testing.T) {
	op := rulesOp(t, Interval, Left, operator.Final)
	op.Advance(100, 0, 0)
	if got := process(t, op, L, 100, 1); got != OnTime {
		t.Fatalf("left row at W_left 100: %s, want on time", outcomeNames[got])
	}
	op.Advance(100, 114, 0)
	if rows, _ := op.Drain(); len(rows) != 0 {
		t.Fatalf("W_right 114: %d rows, want none yet (a match at 110 may still come within the lateness)", len(rows))
	}
	op.Advance(100, Inf, 0) // the right input ended
	rows, _ := op.Drain()
	if len(rows) != 1 || rows[0].Values[0].I != 100 || !rows[0].Values[1].IsNull() || rows[0].WindowStart != 100 {
		t.Fatalf("after the right input's end: %+v, want the left row 100 padded with nulls at 100", rows)
	}

	op = rulesOp(t, Interval, Inner, operator.Final)
	op.Advance(Inf, 55, 0) // the left input ended
	if got := process(t, op, R, 50, 1); got != LateAccepted {
		t.Fatalf("right row at 50, W_right 55, left ended: %s, want late accepted", outcomeNames[got])
	}
	if got := process(t, op, R, 49, 2); got != TooLate {
		t.Fatalf("right row at 49, W_right 55, left ended: %s, want too late", outcomeNames[got])
	}
}
