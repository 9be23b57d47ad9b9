package task

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// TestKeyedFrontEqualsToRoots: the front of a stage with state evaluated
// apart (KeyedFront.Eval, then FrontFiltered or KeyedPrepared, or
// ToRoots for the records it leaves to the router) makes what ToRoots
// makes, for random records — nulls, divisors of 0 (an expression
// error, which ToRoots quarantines), strings — at 1, 2, 3 and 5 tasks:
// in every (node, task) packet the same items in the same order (step,
// processing time, event time, weight, meta, and the input row's values
// field by field: the derived ones too), the same quarantine records
// and the same counters; for a filter that is a direct int test, one
// evaluated as an expression, derived fields (one the key), a
// composite key, no key and no filter, a tumbling, a sliding and a
// session window. Every verdict occurs where it can, and at more than
// one task the items reach more than one task.
func TestKeyedFrontEqualsToRoots(t *testing.T) {
	for ci, tc := range []struct{ front string }{
		{"filter: a > 10\nkey: [s]\nwindow: {type: tumbling, size: 10s}\n"},
		{"filter: a % 3 != 1\nkey: [s, a]\nwindow: {type: sliding, size: 10s, slide: 2s}\n"},
		{"filter: a > 10\nfields: {q: b / d, t: s + \"x\"}\nkey: [t]\nwindow: {type: tumbling, size: 10s}\n"},
		{"filter: b % 2 == 0\nfields: {q: a * 2 + b / d}\nkey: [q]\nwindow: {type: session, gap: 5s}\n"},
		{"fields: {q: b / d}\nwindow: {type: tumbling, size: 10s}\n"},
		{"key: [b]\nwindow: {type: session, gap: 5s}\n"},
	} {
		for _, tasks := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprint(ci, "/tasks", tasks), func(t *testing.T) {
				y := "name: agg\nsource: {type: file, path: in.jsonl, schema: {a: int, b: int, d: int, s: string, ts: timestamp}}\n" +
					"event_time: {field: ts}\n" + tc.front + "aggregates: {n: count()}\nquarantine: {sink: {type: jsonl, path: q.jsonl}}\n" +
					"sinks: [{type: jsonl, path: out.jsonl}]\n"
				sp, err := spec.Parse("p.yaml", []byte(y))
				if err != nil {
					t.Fatal(err)
				}
				sp.Defaults()
				if err := sp.Validate(); err != nil {
					t.Fatal(err)
				}
				p, err := plan.Compile(sp, nil)
				if err != nil {
					t.Fatal(err)
				}
				g, err := NewGraph(p, tasks)
				if err != nil {
					t.Fatal(err)
				}
				g.HasSinks[0] = true
				g.HasQuarantine = true
				if _, ok := NewSelectFront(g); ok {
					t.Fatal("a select front for a stage with state")
				}
				kf, ok := NewKeyedFront(g)
				if !ok {
					t.Fatal("no keyed front for a stage with state reading the source")
				}
				st := p.Stages[kf.Stage()]
				if kf.Derived() != (len(st.Derived) > 0) {
					t.Fatalf("Derived %v with %d derived fields", kf.Derived(), len(st.Derived))
				}
				cntA, cntB := NewCounters(1), NewCounters(1)
				logA, logB := &Log{}, &Log{}
				a, b := NewSender(g, logA, &cntA), NewSender(g, logB, &cntB)
				for _, s := range []*Sender{a, b} {
					for n := range s.Out {
						s.Out[n] = make([]*Packet, tasks)
						for k := range s.Out[n] {
							s.Out[n][k] = &Packet{}
						}
					}
				}
				sc := p.SourceSchema
				field := func(n string) row.Field { f, _ := sc.Lookup(n); return f }
				fa, fb, fd, fs, fts := field("a"), field("b"), field("d"), field("s"), field("ts")
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(tasks)))
				var verdicts [3]int
				const n = 2000
				for i := range n {
					r := sc.NewRow()
					maybe := func(f row.Field, v row.Value) {
						if rng.IntN(10) > 0 {
							_ = r.Set(f, v)
						}
					}
					maybe(fa, row.Int(int64(rng.IntN(40)-5)))
					maybe(fb, row.Int(int64(rng.IntN(1000))))
					maybe(fd, row.Int(int64(rng.IntN(4))))
					maybe(fs, row.Str(fmt.Sprint("s", rng.IntN(50))))
					ts := int64(1000*i - rng.IntN(5000))
					_ = r.Set(fts, row.Time(ts))
					m := &record.Meta{Pos: changelog.Position{Source: "in.jsonl", Line: int64(i + 1)}, Raw: []byte(fmt.Sprint(`{"line":`, i+1, "}"))}
					step, now := uint64(i+1), int64(50_000+i)
					a.ToRoots(step, nil, now, r, m, ts, 1, &ID{}, true)
					var w *row.Row
					if kf.Derived() {
						w = kf.NewRow() // each record's own: the item holds it
					}
					v, owner := kf.Eval(r, w)
					verdicts[v]++
					switch v {
					case PreFiltered:
						b.FrontFiltered(kf.Stage())
					case PreKept:
						b.KeyedPrepared(kf.Stage(), step, now, r, w, m, ts, owner)
					default:
						b.ToRoots(step, nil, now, r, m, ts, 1, &ID{}, true)
					}
				}
				if !reflect.DeepEqual(logA.Entries, logB.Entries) || string(logA.Bytes) != string(logB.Bytes) {
					t.Fatalf("the logs' entries or records differ: %d and %d entries", len(logA.Entries), len(logB.Entries))
				}
				if !reflect.DeepEqual(cntA, cntB) {
					t.Fatalf("counters %+v, want %+v", cntB.Stages[0], cntA.Stages[0])
				}
				items, reached := 0, 0
				for nd := range a.Out {
					for k := range a.Out[nd] {
						pa, pb := a.Out[nd][k], b.Out[nd][k]
						if pa.Len() != pb.Len() {
							t.Fatalf("node %d, task %d: %d items, want %d", nd, k, pb.Len(), pa.Len())
						}
						if pa.Len() > 0 {
							reached++
						}
						for i := range pa.Len() {
							ia, ib := pa.At(i), pb.At(i)
							if ia.Step != ib.Step || ia.Now != ib.Now || ia.TS != ib.TS || ia.Weight != ib.Weight || ia.Meta != ib.Meta ||
								ia.HasID != ib.HasID || len(pa.Tail(ia)) != 0 || len(pb.Tail(ib)) != 0 {
								t.Fatalf("node %d, task %d, item %d: %+v, want %+v", nd, k, i, *ib, *ia)
							}
							for _, f := range st.Schema.Fields {
								if va, vb := ia.Row.Get(f), ib.Row.Get(f); !reflect.DeepEqual(va, vb) {
									t.Fatalf("node %d, task %d, item %d, field %s: %v, want %v", nd, k, i, f.Name, vb, va)
								}
							}
							items++
						}
					}
				}
				c := cntA.Stages[0]
				if c.In != n || c.Filtered != int64(verdicts[PreFiltered]) || items != verdicts[PreKept] || verdicts[PreKept] < 100 {
					t.Fatalf("verdicts %v, counters %+v, %d items", verdicts, c, items)
				}
				if len(st.Derived) > 0 && (verdicts[PreRouter] == 0 || c.Quarantined != int64(verdicts[PreRouter])) {
					t.Fatalf("verdicts %v, %d quarantined: want an expression error each left to the router", verdicts, c.Quarantined)
				}
				if st.Filter != nil && verdicts[PreFiltered] == 0 {
					t.Fatalf("verdicts %v: nothing filtered", verdicts)
				}
				if tasks > 1 && len(st.Key) > 0 && reached < 2 {
					t.Fatalf("at %d tasks the items reached %d task", tasks, reached)
				}
			})
		}
	}
}
