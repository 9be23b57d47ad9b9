package task

import (
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// TestToRootsStageAndJoin: a source record read by one windowed stage and
// by both sides of a join goes, in push mode, to the stage's node and then
// to the join's node once per side it passes; a retraction goes to the
// stage only (joins take source records, not retractions).
func TestToRootsStageAndJoin(t *testing.T) {
	y := `name: rj
source: {type: file, path: in.jsonl, schema: {order: string, type: string, amount: int, ts: timestamp}}
event_time: {field: ts}
stages:
  - name: counts
    key: [type]
    window: {type: tumbling, size: 1m}
    aggregates: {n: count()}
  - name: pairs
    join:
      type: interval
      kind: inner
      left: {as: p, filter: 'amount > 0'}
      right: {as: q, filter: 'amount > 1'}
      on: ["p.order = q.order"]
      between: {lower: 0s, upper: 10m}
      select: {order: p.order, paid: p.amount}
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
	if len(g.Roots) != 1 || len(g.JoinSides[0]) != 2 {
		t.Fatalf("roots %v, join sides of the source %d; want one root, two sides", g.Roots, len(g.JoinSides[0]))
	}
	type got struct {
		node   int
		side   int8
		weight int8
	}
	var items []got
	cnt := NewCounters(len(p.Stages))
	s := NewSender(g, &Log{}, &cnt)
	s.SetDirect(func(n int, _ *Packet, it *Item) error {
		items = append(items, got{n, it.Side, it.Weight})
		return nil
	})
	sc := p.SourceSchema
	r := sc.NewRow()
	for name, v := range map[string]row.Value{"order": row.Str("o1"), "type": row.Str("PAY"), "amount": row.Int(5), "ts": row.Time(1000)} {
		f, _ := sc.Lookup(name)
		if err := r.Set(f, v); err != nil {
			t.Fatal(err)
		}
	}
	s.ToRoots(1, nil, 0, r, &record.Meta{}, 1000, 1, &ID{}, true)
	s.ToRoots(2, nil, 0, r, &record.Meta{}, 1000, -1, &ID{}, false)
	stage, join := g.StageNode[0], g.StageNode[1]
	want := []got{{stage, 0, 1}, {join, 0, 1}, {join, 1, 1}, {stage, 0, -1}}
	if len(items) != len(want) {
		t.Fatalf("items %v, want %v", items, want)
	}
	for i := range want {
		if items[i] != want[i] {
			t.Errorf("item %d = %+v, want %+v", i, items[i], want[i])
		}
	}
}
