package task

import (
	"math"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// recordWriter keeps the side-output records a log hands on.
type recordWriter struct{ recs []string }

func (w *recordWriter) WriteRows(Output, []changelog.Row) error { return nil }
func (w *recordWriter) WriteRecord(_ Output, rec []byte) error {
	w.recs = append(w.recs, string(rec))
	return nil
}
func (w *recordWriter) WriteLedger(*LedgerEvent) {}

// TestLateAtInfiniteWatermark: a record that reaches a windowed stage and
// a join after their watermark went to +∞ (a group run's keyed task whose
// every upstream partition ended) is a late record whose reason prints
// the watermark as "+inf", never as the year 292278994, whose
// current_watermark is "infinity" (the outputs' spelling), and whose
// lateness_ms is +∞ − event time, saturated: an event time before 1970
// does not overflow it into a negative lateness.
func TestLateAtInfiniteWatermark(t *testing.T) {
	y := `name: inf
source: {type: file, path: in.jsonl, schema: {order: string, amount: int, ts: timestamp}}
event_time: {field: ts}
stages:
  - name: counts
    key: [order]
    window: {type: tumbling, size: 1m}
    aggregates: {n: count()}
    late: {sink: {type: jsonl, path: late.jsonl}}
  - name: pairs
    join:
      type: interval
      left: {as: p, filter: 'amount > 0'}
      right: {as: q, filter: 'amount < 0'}
      on: ["p.order = q.order"]
      between: {lower: 0s, upper: 10m}
      select: {order: p.order, paid: p.amount}
    late: {sink: {type: jsonl, path: late.jsonl}}
`
	sp, err := spec.Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGraph(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	g.HasLate[0], g.HasLate[1] = true, true
	g.EventJSON = func(dst []byte, _ *record.Meta) []byte { return append(dst, `{"order":"o1"}`...) }
	tk, err := New(g, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &recordWriter{}
	cnt := NewCounters(len(p.Stages))
	logs := make([]*Log, len(g.Nodes))
	for i := range logs {
		logs[i] = &Log{W: w}
	}
	tk.SetOutput(logs, &cnt)
	s := NewSender(g, &Log{W: w}, &cnt)
	s.PushInto(tk)
	if err := tk.PushMarker(&Marker{Step: 1, Kind: Advance, WM: changelog.WatermarkInfinity, Now: 5000}); err != nil {
		t.Fatal(err)
	}
	sc := p.SourceSchema
	for i, ts := range []int64{60_000, -86_400_000} {
		r := sc.NewRow()
		for name, v := range map[string]row.Value{"order": row.Str("o1"), "amount": row.Int(5), "ts": row.Time(ts)} {
			f, _ := sc.Lookup(name)
			if err := r.Set(f, v); err != nil {
				t.Fatal(err)
			}
		}
		s.ToRoots(uint64(2+i), nil, 5000, r, &record.Meta{}, ts, 1, &ID{}, true)
	}
	if err := tk.Err(); err != nil {
		t.Fatal(err)
	}
	if len(w.recs) != 4 {
		t.Fatalf("%d late records, want 4 (two records, each late for the stage and the join's left side):\n%s", len(w.recs), strings.Join(w.recs, "\n"))
	}
	for i, rec := range w.recs {
		lateness := `"lateness_ms":9223372036854715807,` // +∞ − 60 000 ms
		if i >= 2 {
			lateness = `"lateness_ms":9223372036854775807,` // saturated
		}
		if !strings.Contains(rec, `"current_watermark":"infinity"`) || !strings.Contains(rec, lateness) ||
			!strings.Contains(rec, "watermark +inf passed") || strings.Contains(rec, "292278994") {
			t.Errorf("late record %d: %s\nwant current_watermark infinity, %s and a reason naming +inf", i, rec, lateness)
		}
	}
	if got := changelog.Lateness(math.MinInt64+5, 10); got != math.MinInt64 {
		t.Errorf("Lateness(−∞+5, 10) = %d, want saturated to the least int64", got)
	}
	if got := changelog.FormatWatermark(changelog.WatermarkNone, nil); got != "-inf" {
		t.Errorf("FormatWatermark(none) = %q", got)
	}
}
