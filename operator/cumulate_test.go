package operator

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
	"pgregory.net/rapid"
)

// bruteCumulate is every cumulate window containing ts: for each start s
// a multiple of size, the windows [s, s+k·step), k = 1 … size/step, that
// contain ts, found by trying every start from ts − size to ts (the model,
// independent of package window's arithmetic).
func bruteCumulate(ts, size, step int64) []window.Window {
	var out []window.Window
	for s := ts - size; s <= ts; s++ {
		if (s%size+size)%size != 0 {
			continue
		}
		for k := int64(1); k*step <= size; k++ {
			if w := (window.Window{Start: s, End: s + k*step}); w.Contains(ts) {
				out = append(out, w)
			}
		}
	}
	return out
}

// TestCumulateMatchesBatchModel checks cumulate windows (sliced by step)
// against the naive model of TestPanesMatchBatchModel: an event counts in
// every window of its period that ends after it and had not closed when
// it arrived; every window/key ends with one final row of the model's
// count, sum and max, in every emit mode, and no state is left.
func TestCumulateMatchesBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		stp := rapid.SampledFrom([]int64{1, 3, 5}).Draw(t, "step")
		size := stp * rapid.Int64Range(1, 5).Draw(t, "steps")
		lateness := rapid.SampledFrom([]int64{0, 4, 1000}).Draw(t, "lateness")
		mode := Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true})
		mx, _ := aggregate.New(aggregate.Spec{Name: "m", Func: "max", Arg: vf, HasArg: true})
		op, err := New(Config{
			Assigner:        &window.Cumulate{Size: size, Step: stp},
			AllowedLateness: lateness,
			Mode:            mode,
			Key:             []row.Field{kf},
			Aggs:            []aggregate.Column{count, sum, mx},
		})
		if err != nil {
			t.Fatal(err)
		}
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			if rapid.IntRange(0, 4).Draw(t, "kind") == 0 {
				return step{isWM: true, wm: rapid.Int64Range(0, 70).Draw(t, "wm")}
			}
			return step{e: ev{
				key: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"),
				ts:  rapid.Int64Range(0, 60).Draw(t, "ts"),
				v:   rapid.Int64Range(-5, 50).Draw(t, "v"),
			}}
		}), 1, 80).Draw(t, "steps")
		type agg struct{ n, s, m int64 }
		model := map[wkey]*agg{}
		table := map[wkey]tableRow{}
		r := schema.NewRow()
		wm := int64(-1 << 62)
		for i, st := range steps {
			now := int64(i)
			if st.isWM {
				wm = max(wm, st.wm)
				if err := op.AdvanceWatermark(st.wm, now); err != nil {
					t.Fatal(err)
				}
			} else {
				schema.Shape(r)
				r.Set(kf, row.Str(st.e.key))
				r.Set(vf, row.Int(st.e.v))
				out, err := op.Process(r, st.e.ts, 1, now)
				if err != nil {
					t.Fatal(err)
				}
				open := 0
				for _, w := range bruteCumulate(st.e.ts, size, stp) {
					if w.End+lateness <= wm {
						continue
					}
					open++
					k := wkey{w.Start, w.End, st.e.key}
					a := model[k]
					if a == nil {
						a = &agg{m: st.e.v}
						model[k] = a
					}
					a.n++
					a.s += st.e.v
					a.m = max(a.m, st.e.v)
				}
				if (open == 0) != (out == TooLate) {
					t.Fatalf("event %+v at watermark %d: outcome %d, model open windows %d", st.e, wm, out, open)
				}
			}
			applyChangelog(t, table, op.Drain(), mode, false)
		}
		if err := op.AdvanceWatermark(changelog.WatermarkInfinity, int64(len(steps))); err != nil {
			t.Fatal(err)
		}
		applyChangelog(t, table, op.Drain(), mode, false)
		if len(table) != len(model) {
			t.Fatalf("table has %d rows, model %d", len(table), len(model))
		}
		for k, a := range model {
			got, ok := table[k]
			want := []string{fmt.Sprint(a.n), fmt.Sprint(a.s), fmt.Sprint(a.m)}
			if !ok || fmt.Sprint(got.vals) != fmt.Sprint(want) || !got.final {
				t.Fatalf("window %v: got %+v, want %v final", k, got, want)
			}
		}
		if st := op.Stats(); st.Entries != 0 || st.OpenWindows != 0 || st.Keys != 0 {
			t.Fatalf("state left after the end: %+v", st)
		}
	})
}

// TestGlobalWindowMatchesBatchModel: the global window holds every event
// of its key whatever the watermark before the end (none is too late),
// emits nothing before the input ends but early firings, and ends with one
// final row per key of the key's count and sum.
func TestGlobalWindowMatchesBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		mode := Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true})
		op, err := New(Config{Assigner: window.Global{}, Mode: mode, Key: []row.Field{kf}, Aggs: []aggregate.Column{count, sum}})
		if err != nil {
			t.Fatal(err)
		}
		evs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ev {
			return ev{key: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "key"),
				ts: rapid.Int64Range(-1e12, 1e13).Draw(t, "ts"), v: rapid.Int64Range(-5, 9).Draw(t, "v")}
		}), 1, 60).Draw(t, "events")
		table := map[wkey]tableRow{}
		want := map[string][2]int64{}
		r := schema.NewRow()
		for i, e := range evs {
			schema.Shape(r)
			r.Set(kf, row.Str(e.key))
			r.Set(vf, row.Int(e.v))
			out, err := op.Process(r, e.ts, 1, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			if out == TooLate {
				t.Fatalf("event %+v too late for the global window", e)
			}
			w := want[e.key]
			want[e.key] = [2]int64{w[0] + 1, w[1] + e.v}
			if err := op.AdvanceWatermark(e.ts, int64(i)); err != nil {
				t.Fatal(err)
			}
			if rows := op.Drain(); len(rows) > 0 {
				t.Fatalf("rows before the end: %v", rows)
			}
		}
		op.AdvanceWatermark(changelog.WatermarkInfinity, int64(len(evs)))
		applyChangelog(t, table, op.Drain(), mode, false)
		if len(table) != len(want) {
			t.Fatalf("table %v, want %v", table, want)
		}
		for k, w := range want {
			got := table[wkey{window.GlobalStart, window.GlobalEnd, k}]
			if fmt.Sprint(got.vals) != fmt.Sprint([]string{fmt.Sprint(w[0]), fmt.Sprint(w[1])}) || !got.final {
				t.Fatalf("key %s: got %+v, want %v", k, got, w)
			}
		}
	})
}
