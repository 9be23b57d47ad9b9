package task

import (
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/spec"
)

// TestDirectItemFields: in push mode the sender reuses one item; an item
// pushed after one with a tail, an event id and a join side carries none
// of them, and each item holds its own step, times, weight, row and meta.
func TestDirectItemFields(t *testing.T) {
	y := `name: win
source: {type: file, path: in.jsonl, schema: {a: int, ts: timestamp}}
event_time: {field: ts}
key: [a]
window: {type: tumbling, size: 1s}
aggregates: {n: count()}
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
	type got struct {
		it       Item
		tail, id string
	}
	var items []got
	cnt := NewCounters(len(p.Stages))
	s := NewSender(g, &Log{}, &cnt)
	s.SetDirect(func(_ int, pk *Packet, it *Item) error {
		items = append(items, got{*it, string(pk.Tail(it)), string(pk.ID(it))})
		return nil
	})
	r1, r2 := p.SourceSchema.NewRow(), p.SourceSchema.NewRow()
	m1, m2 := &record.Meta{}, &record.Meta{}
	s.dit.Side = 1 // as a join item leaves it
	s.ToRoots(1, []byte("tl"), 10, r1, m1, 100, 1, &ID{Text: []byte("ev-1"), Hash: 77, Payload: 5, Has: true}, true)
	s.ToRoots(2, nil, 20, r2, m2, 200, -1, &ID{}, true)
	if len(items) != 2 {
		t.Fatalf("%d items, want 2", len(items))
	}
	a, b := items[0], items[1]
	if a.it.Step != 1 || a.it.Now != 10 || a.it.TS != 100 || a.it.Weight != 1 || a.it.Row != r1 || a.it.Meta != m1 ||
		a.tail != "tl" || a.id != "ev-1" || !a.it.HasID || a.it.IDHash != 77 || a.it.Payload != 5 || a.it.Side != 0 {
		t.Errorf("first item %+v, tail %q, id %q", a.it, a.tail, a.id)
	}
	if b.it.Step != 2 || b.it.Now != 20 || b.it.TS != 200 || b.it.Weight != -1 || b.it.Row != r2 || b.it.Meta != m2 || b.it.CR != nil ||
		b.tail != "" || b.id != "" || b.it.HasID || b.it.IDHash != 0 || b.it.Payload != 0 || b.it.Side != 0 {
		t.Errorf("second item %+v, tail %q, id %q; want no tail, id or side", b.it, b.tail, b.id)
	}
}
