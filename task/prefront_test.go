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

// TestSelectFrontEqualsToRoots: a select stage's front evaluated apart
// (SelectFront.Eval, then FrontFiltered or SelectPrepared, or ToRoots
// for the records it leaves to the router) logs what ToRoots logs, for
// random records — nulls, divisors of 0 (an expression error, which
// ToRoots quarantines), strings — at a watermark that moves: the same
// entries, rows (values, watermark_at, updated_at, event time), quarantine
// records and counters; for a filter that is a direct int test, one
// evaluated as an expression, derived fields, an own event-time field
// and no filter. Every verdict occurs.
func TestSelectFrontEqualsToRoots(t *testing.T) {
	for ci, tc := range []struct{ front, sel string }{
		{"filter: a > 10\n", "[b, a, s]"},
		{"filter: a % 3 != 1\n", "[s, a]"},
		{"filter: a > 10\nfields: {q: b / d, t: s + \"x\"}\n", "[q, t, a]"},
		{"filter: b % 2 == 0\nfields: {q: a * 0.5 + b / d}\n", "[q, s]"},
		{"fields: {q: b / d}\n", "[q]"},
		{"", "[a, s, ts2]"},
	} {
		t.Run(fmt.Sprint(ci), func(t *testing.T) {
			y := "name: sel\nsource: {type: file, path: in.jsonl, schema: {a: int, b: int, d: int, s: string, ts: timestamp, ts2: timestamp}}\n" +
				"event_time: {field: ts}\n" + tc.front + "select: " + tc.sel + "\nquarantine: {sink: {type: jsonl, path: q.jsonl}}\n"
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
			g, err := NewGraph(p, 2)
			if err != nil {
				t.Fatal(err)
			}
			g.HasSinks[0] = true
			g.HasQuarantine = true
			sf, ok := NewSelectFront(g)
			if !ok {
				t.Fatal("no select front for a select stage reading the source")
			}
			cntA, cntB := NewCounters(1), NewCounters(1)
			logA, logB := &Log{}, &Log{}
			a, b := NewSender(g, logA, &cntA), NewSender(g, logB, &cntB)
			sc := p.SourceSchema
			field := func(n string) row.Field { f, _ := sc.Lookup(n); return f }
			fa, fb, fd, fs, fts, fts2 := field("a"), field("b"), field("d"), field("s"), field("ts"), field("ts2")
			rng := rand.New(rand.NewPCG(uint64(ci), 27))
			var verdicts [3]int
			var vals []row.Value
			wm := int64(0)
			for i := range 2000 {
				r := sc.NewRow()
				maybe := func(f row.Field, v row.Value) {
					if rng.IntN(10) > 0 {
						_ = r.Set(f, v)
					}
				}
				maybe(fa, row.Int(int64(rng.IntN(40)-5)))
				maybe(fb, row.Int(int64(rng.IntN(1000))))
				maybe(fd, row.Int(int64(rng.IntN(4))))
				maybe(fs, row.Str(fmt.Sprint("s", rng.IntN(5))))
				ts := int64(1000*i - rng.IntN(5000))
				_ = r.Set(fts, row.Time(ts))
				maybe(fts2, row.Time(ts+int64(rng.IntN(100))))
				m := &record.Meta{Pos: changelog.Position{Source: "in.jsonl", Line: int64(i + 1)}, Raw: []byte(fmt.Sprint(`{"line":`, i+1, "}"))}
				if rng.IntN(5) == 0 {
					wm += int64(rng.IntN(3000))
					a.SetWatermark(wm)
					b.SetWatermark(wm)
				}
				step, now := uint64(i+1), int64(50_000+i)
				a.ToRoots(step, nil, now, r, m, ts, 1, &ID{}, true)
				var v uint8
				v, vals = sf.Eval(r, vals[:0])
				verdicts[v]++
				switch v {
				case PreFiltered:
					b.FrontFiltered(sf.Stage())
				case PreKept:
					// The values must stay valid until the log is read:
					// each record's own.
					b.SelectPrepared(sf.Stage(), step, now, r, ts, append([]row.Value(nil), vals...))
				default:
					b.ToRoots(step, nil, now, r, m, ts, 1, &ID{}, true)
				}
			}
			if !reflect.DeepEqual(logA.Entries, logB.Entries) || string(logA.Bytes) != string(logB.Bytes) {
				t.Fatalf("the logs' entries or records differ: %d and %d entries", len(logA.Entries), len(logB.Entries))
			}
			if len(logA.Rows) != len(logB.Rows) {
				t.Fatalf("%d rows, want %d", len(logB.Rows), len(logA.Rows))
			}
			for i := range logA.Rows {
				if !reflect.DeepEqual(logA.Rows[i], logB.Rows[i]) {
					t.Fatalf("row %d: %+v, want %+v", i, logB.Rows[i], logA.Rows[i])
				}
			}
			if !reflect.DeepEqual(cntA, cntB) {
				t.Fatalf("counters %+v, want %+v", cntB.Stages[0], cntA.Stages[0])
			}
			c := cntA.Stages[0]
			if verdicts[PreKept] == 0 || c.Filtered != int64(verdicts[PreFiltered]) || c.OnTime != int64(verdicts[PreKept]) ||
				c.In != 2000 || len(logA.Rows) != verdicts[PreKept] {
				t.Fatalf("verdicts %v, counters %+v, %d rows", verdicts, c, len(logA.Rows))
			}
			if ci != 0 && ci != 5 && verdicts[PreRouter] == 0 && c.Filtered == 0 {
				t.Fatalf("verdicts %v: neither an expression error nor a record filtered", verdicts)
			}
			t.Logf("verdicts kept %d, filtered %d, router %d; quarantined %d", verdicts[PreKept], verdicts[PreFiltered], verdicts[PreRouter], c.Quarantined)
		})
	}
}
