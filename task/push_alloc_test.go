package task

import (
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// countWriter counts the rows a log with a Writer hands on, keeping the
// last row's values.
type countWriter struct {
	rows    int
	deletes int // rows with op delete
	last    []row.Value
}

func (w *countWriter) WriteRows(_ Output, rows []changelog.Row) error {
	w.rows += len(rows)
	for i := range rows {
		if rows[i].Op == changelog.Delete {
			w.deletes++
		}
	}
	w.last = append(w.last[:0], rows[len(rows)-1].Values...)
	return nil
}
func (w *countWriter) WriteRecord(Output, []byte) error { return nil }
func (w *countWriter) WriteLedger(*LedgerEvent)         {}

// TestSelectRowPushNoAlloc: in push mode (a log with a Writer), a select
// stage's record reaches the writer as one row with the selected values,
// and the sender allocates nothing for it (the row it hands through the
// Writer interface is the sender's own, not a local moved to the heap).
func TestSelectRowPushNoAlloc(t *testing.T) {
	y := `name: sel
source: {type: file, path: in.jsonl, schema: {a: int, b: int, ts: timestamp}}
event_time: {field: ts}
filter: a > 1
select: [b, a]
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
	g.HasSinks[0] = true
	w := &countWriter{}
	cnt := NewCounters(len(p.Stages))
	s := NewSender(g, &Log{W: w}, &cnt)
	s.SetDirect(func(int, *Packet, *Item) error { return nil })
	sc := p.SourceSchema
	r := sc.NewRow()
	for _, kv := range []struct {
		name string
		v    row.Value
	}{{"a", row.Int(7)}, {"b", row.Int(40)}, {"ts", row.Time(1000)}} {
		f, ok := sc.Lookup(kv.name)
		if !ok {
			t.Fatalf("no field %s", kv.name)
		}
		if err := r.Set(f, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	m := &record.Meta{}
	var step uint64
	send := func() {
		step++
		s.ToRoots(step, nil, 5, r, m, 1000, 1, &ID{}, true)
	}
	if n := testing.AllocsPerRun(1000, send); n != 0 {
		t.Errorf("allocs per select record: %v, want 0", n)
	}
	// AllocsPerRun calls send once more than its runs.
	if w.rows != 1001 || cnt.Stages[0].RowsEmitted != 1001 {
		t.Errorf("rows written %d, emitted %d; want 1001, 1001", w.rows, cnt.Stages[0].RowsEmitted)
	}
	if len(w.last) != 2 || !w.last[0].Equal(row.Int(40)) || !w.last[1].Equal(row.Int(7)) {
		t.Errorf("last row's values %v, want [40 7]", w.last)
	}
}
