package operator

import (
	"fmt"
	"sort"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
	"pgregory.net/rapid"
)

// testSchema is {k string, v int}.
func testSchema(t interface{ Fatal(...any) }) (*row.Schema, row.Field, row.Field) {
	s := row.NewSchema()
	k, err := s.Add("k", row.KindString)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Add("v", row.KindInt)
	if err != nil {
		t.Fatal(err)
	}
	return s, k, v
}

type ev struct {
	key string
	ts  int64
	v   int64
}

// step is one input: an event, or a watermark advance.
type step struct {
	isWM bool
	wm   int64
	e    ev
}

type wkey struct {
	start, end int64
	key        string
}

type tableRow struct {
	vals    []string
	version uint64
	final   bool
	end     int64
}

// applyChangelog folds emitted rows into a table keyed by (window, key),
// checking version order and changelog well-formedness.
// Rows are identified by (window_start, key) as in sinks; for sessions
// (byStart) window_end is a value that may change.
func applyChangelog(t *rapid.T, table map[wkey]tableRow, rows []changelog.Row, mode Mode, byStart bool) {
	applyChangelogV(t, table, nil, rows, mode, byStart)
}

// applyChangelogV is applyChangelog that also checks, with last, that the
// versions of an identity keep growing across deletes and re-inserts (a
// version-guarded sink would otherwise drop the re-insert).
func applyChangelogV(t *rapid.T, table map[wkey]tableRow, last map[wkey]uint64, rows []changelog.Row, mode Mode, byStart bool) {
	for _, r := range rows {
		k := wkey{r.WindowStart, r.WindowEnd, r.Key[0].S}
		if byStart {
			k.end = 0
		}
		vals := make([]string, len(r.Values))
		for i, v := range r.Values {
			vals[i] = v.String()
		}
		old, had := table[k]
		if last != nil && r.Op != changelog.UpdateBefore {
			if r.Version <= last[k] {
				t.Fatalf("%v %v v%d after v%d", r.Op, k, r.Version, last[k])
			}
			last[k] = r.Version
		}
		switch r.Op {
		case changelog.Insert:
			if had {
				t.Fatalf("insert over live row %v", k)
			}
			table[k] = tableRow{vals, r.Version, r.IsFinal, r.WindowEnd}
		case changelog.UpdateBefore:
			if mode != Retract {
				t.Fatalf("update_before in mode %d", mode)
			}
			if !had || old.version != r.Version || fmt.Sprint(old.vals) != fmt.Sprint(vals) || old.end != r.WindowEnd {
				t.Fatalf("update_before %v v%d %v does not match live row %+v", k, r.Version, vals, old)
			}
		case changelog.UpdateAfter:
			if !had || r.Version <= old.version {
				t.Fatalf("update_after %v v%d over %+v", k, r.Version, old)
			}
			if old.final {
				t.Fatalf("update after final row %v", k)
			}
			table[k] = tableRow{vals, r.Version, r.IsFinal, r.WindowEnd}
		case changelog.Delete:
			if !had || r.Version <= old.version || old.end != r.WindowEnd {
				t.Fatalf("delete %v end %d v%d over %+v", k, r.WindowEnd, r.Version, old)
			}
			delete(table, k)
		}
		// Sessions continue their key's versions across sessions
		// (docs/semantics.md, "Emission"): version 1 only for panes.
		if mode == Final && (r.Op != changelog.Insert || !r.IsFinal || (!byStart && r.Version != 1)) {
			t.Fatalf("final mode emitted %v %v v%d final=%v", r.Op, k, r.Version, r.IsFinal)
		}
	}
}

// bruteWindows is every window [s, s+size) with s a multiple of slide that
// contains ts, by trying every start from ts − size to ts (the model of
// window assignment, independent of package window's arithmetic).
func bruteWindows(ts, size, slide int64) []window.Window {
	var out []window.Window
	for s := ts - size; s <= ts; s++ {
		if (s%slide+slide)%slide == 0 && ts < s+size {
			out = append(out, window.Window{Start: s, End: s + size})
		}
	}
	return out
}

// TestPanesMatchBatchModel checks the operator against a naive model: an
// event counts in window w iff w had not closed (watermark < end +
// lateness) when the event arrived; its windows are those a brute-force
// search finds, for any size and slide (size a multiple of slide or not). Every window/key ends with one final
// row holding exactly the model's count and sum, whatever the emit mode.
func TestPanesMatchBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		size := rapid.SampledFrom([]int64{7, 10, 20}).Draw(t, "size")
		slide := size
		if rapid.Bool().Draw(t, "sliding") {
			// Any slide up to the size: 10/5, and 10/3 or 7/3, where size
			// is not a multiple of slide.
			slide = rapid.Int64Range(1, size).Draw(t, "slide")
		}
		lateness := rapid.SampledFrom([]int64{0, 5, 15, 1000}).Draw(t, "lateness")
		mode := Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true})
		mx, _ := aggregate.New(aggregate.Spec{Name: "m", Func: "max", Arg: vf, HasArg: true})
		op, err := New(Config{
			Assigner:        &window.Fixed{Size: size, Slide: slide},
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
				return step{isWM: true, wm: rapid.Int64Range(0, 120).Draw(t, "wm")}
			}
			return step{e: ev{
				key: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "key"),
				ts:  rapid.Int64Range(0, 100).Draw(t, "ts"),
				v:   rapid.Int64Range(-5, 50).Draw(t, "v"),
			}}
		}), 1, 80).Draw(t, "steps")

		type agg struct{ n, s, m int64 }
		model := map[wkey]*agg{}
		table := map[wkey]tableRow{}
		r := schema.NewRow()
		wm := int64(-1 << 62)
		var tooLate int
		for i, st := range steps {
			now := int64(i)
			if st.isWM {
				if st.wm > wm {
					wm = st.wm
				}
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
				for _, w := range bruteWindows(st.e.ts, size, slide) {
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
				if out == TooLate {
					tooLate++
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

// TestSessionsMatchBatchModel: with lateness large enough that no session
// closes before the end, sessions equal the batch sessionization of each
// key's events (consecutive events at most gap apart share a session), in
// any arrival order and emit mode.
func TestSessionsMatchBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		gap := rapid.Int64Range(1, 15).Draw(t, "gap")
		mode := Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true})
		op, err := New(Config{Gap: gap, AllowedLateness: 1 << 40, Mode: mode, Key: []row.Field{kf}, Aggs: []aggregate.Column{count, sum}})
		if err != nil {
			t.Fatal(err)
		}
		evs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) ev {
			return ev{
				key: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"),
				ts:  rapid.Int64Range(0, 200).Draw(t, "ts"),
				v:   rapid.Int64Range(0, 9).Draw(t, "v"),
			}
		}), 1, 60).Draw(t, "events")
		table := map[wkey]tableRow{}
		r := schema.NewRow()
		wm := int64(0)
		for i, e := range evs {
			schema.Shape(r)
			r.Set(kf, row.Str(e.key))
			r.Set(vf, row.Int(e.v))
			if _, err := op.Process(r, e.ts, 1, int64(i)); err != nil {
				t.Fatal(err)
			}
			// Advance the watermark now and then so sessions fire and
			// late events re-fire and merge fired sessions.
			if rapid.IntRange(0, 3).Draw(t, "adv") == 0 {
				wm += rapid.Int64Range(0, 60).Draw(t, "by")
				op.AdvanceWatermark(wm, int64(i))
			}
			applyChangelog(t, table, op.Drain(), mode, true)
		}
		op.AdvanceWatermark(changelog.WatermarkInfinity, int64(len(evs)))
		applyChangelog(t, table, op.Drain(), mode, true)

		// Batch model.
		byKey := map[string][]ev{}
		for _, e := range evs {
			byKey[e.key] = append(byKey[e.key], e)
		}
		want := map[wkey][]string{}
		for k, es := range byKey {
			sort.Slice(es, func(i, j int) bool { return es[i].ts < es[j].ts })
			start, last, n, s := es[0].ts, es[0].ts, int64(0), int64(0)
			for i, e := range es {
				if i > 0 && e.ts-last > gap {
					want[wkey{start, last + gap, k}] = []string{fmt.Sprint(n), fmt.Sprint(s)}
					start, n, s = e.ts, 0, 0
				}
				last = e.ts
				n++
				s += e.v
			}
			want[wkey{start, last + gap, k}] = []string{fmt.Sprint(n), fmt.Sprint(s)}
		}
		if len(table) != len(want) {
			t.Fatalf("table %v\nwant %v", table, want)
		}
		for k, w := range want {
			got, ok := table[wkey{k.start, 0, k.key}]
			if !ok || fmt.Sprint(got.vals) != fmt.Sprint(w) || !got.final || got.end != k.end {
				t.Fatalf("session %v: got %+v, want %v\ntable %v", k, got, w, table)
			}
		}
	})
}

// TestRetractionsMatchBatchModel: an upsert-like input (rows added and
// later retracted, as order_by produces) with lateness large enough that
// nothing closes early ends with exactly the aggregates of the rows still
// standing; (window, key)s whose rows were all retracted have no row; and
// versions of an identity grow across deletes and re-inserts.
func TestRetractionsMatchBatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		mode := Mode(rapid.IntRange(1, 2).Draw(t, "mode")) // update or retract
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count", Retract: true})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true, Retract: true})
		mx, _ := aggregate.New(aggregate.Spec{Name: "m", Func: "max", Arg: vf, HasArg: true, Retract: true})
		size := int64(10)
		op, err := New(Config{Assigner: &window.Fixed{Size: size, Slide: size}, AllowedLateness: 1 << 40, Mode: mode,
			Key: []row.Field{kf}, Aggs: []aggregate.Column{count, sum, mx}})
		if err != nil {
			t.Fatal(err)
		}
		var live []ev
		table := map[wkey]tableRow{}
		last := map[wkey]uint64{}
		r := schema.NewRow()
		wm := int64(0)
		for i, n := 0, rapid.IntRange(1, 80).Draw(t, "n"); i < n; i++ {
			weight := 1
			var e ev
			if len(live) > 0 && rapid.IntRange(0, 2).Draw(t, "retract") == 0 {
				j := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				e = live[j]
				live = append(live[:j], live[j+1:]...)
				weight = -1
			} else {
				e = ev{key: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"), ts: rapid.Int64Range(0, 40).Draw(t, "ts"), v: rapid.Int64Range(0, 9).Draw(t, "v")}
				live = append(live, e)
			}
			schema.Shape(r)
			r.Set(kf, row.Str(e.key))
			r.Set(vf, row.Int(e.v))
			if _, err := op.Process(r, e.ts, weight, int64(i)); err != nil {
				t.Fatal(err)
			}
			if rapid.IntRange(0, 4).Draw(t, "adv") == 0 {
				wm += rapid.Int64Range(0, 15).Draw(t, "by")
				op.AdvanceWatermark(wm, int64(i))
			}
			applyChangelogV(t, table, last, op.Drain(), mode, false)
		}
		op.AdvanceWatermark(changelog.WatermarkInfinity, 1<<40)
		applyChangelogV(t, table, last, op.Drain(), mode, false)
		type agg struct{ n, s, m int64 }
		model := map[wkey]*agg{}
		for _, e := range live {
			k := wkey{e.ts - e.ts%size, e.ts - e.ts%size + size, e.key}
			a := model[k]
			if a == nil {
				a = &agg{m: e.v}
				model[k] = a
			}
			a.n++
			a.s += e.v
			a.m = max(a.m, e.v)
		}
		if len(table) != len(model) {
			t.Fatalf("table %v\nmodel has %d rows", table, len(model))
		}
		for k, a := range model {
			got, ok := table[k]
			want := []string{fmt.Sprint(a.n), fmt.Sprint(a.s), fmt.Sprint(a.m)}
			if !ok || fmt.Sprint(got.vals) != fmt.Sprint(want) || !got.final {
				t.Fatalf("window %v: got %+v, want %v final", k, got, want)
			}
		}
	})
}

// mSession is a session of the brute-force model: its events, window and
// whether it has closed.
type mSession struct {
	start, end int64
	n, s       int64
	closed     bool
}

// TestSessionsClosedMatchModel checks sessions that close before the end
// (small allowed lateness, random watermark advances) against a
// brute-force model that keeps every session of every key as a window:
// an event whose proto-window [t, t+gap) touches a closed session of its
// key is too late (it would merge into it); one touching only open
// sessions merges them; one touching none opens a session unless its own
// window has closed. The model forgets a key's closed sessions once the
// key has no open session and the watermark has passed their largest end
// + 2·gap + lateness (docs/semantics.md). Outcomes and every session's
// final row must match; no two sessions the model keeps overlap.
func TestSessionsClosedMatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		schema, kf, vf := testSchema(t)
		gap := rapid.Int64Range(1, 15).Draw(t, "gap")
		lateness := rapid.SampledFrom([]int64{0, 3, 10}).Draw(t, "lateness")
		mode := Mode(rapid.IntRange(0, 2).Draw(t, "mode"))
		count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "s", Func: "sum", Arg: vf, HasArg: true})
		op, err := New(Config{Gap: gap, AllowedLateness: lateness, Mode: mode, Key: []row.Field{kf}, Aggs: []aggregate.Column{count, sum}})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string][]*mSession{} // per key, by start: open and remembered closed sessions
		var done []wkey                   // closed sessions with their values
		doneVals := map[wkey][]string{}
		wm := int64(-1 << 62)
		advance := func(to int64, now int64) {
			if to <= wm {
				return
			}
			wm = to
			if err := op.AdvanceWatermark(to, now); err != nil {
				t.Fatal(err)
			}
			for k, list := range model {
				open, maxEnd := 0, int64(-1<<62)
				for _, s := range list {
					if !s.closed && s.end+lateness <= wm {
						s.closed = true
						w := wkey{s.start, s.end, k}
						done = append(done, w)
						doneVals[w] = []string{fmt.Sprint(s.n), fmt.Sprint(s.s)}
					}
					if s.closed {
						maxEnd = max(maxEnd, s.end)
					} else {
						open++
					}
				}
				if open == 0 && wm >= maxEnd+2*gap+lateness {
					delete(model, k)
				}
			}
		}
		table := map[wkey]tableRow{}
		r := schema.NewRow()
		n := rapid.IntRange(1, 80).Draw(t, "n")
		for i := 0; i < n; i++ {
			if rapid.IntRange(0, 2).Draw(t, "adv") == 0 {
				advance(wm+rapid.Int64Range(0, 25).Draw(t, "by"), int64(i))
				if wm < 0 {
					advance(rapid.Int64Range(0, 40).Draw(t, "first"), int64(i))
				}
				applyChangelog(t, table, op.Drain(), mode, true)
				continue
			}
			e := ev{key: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"), ts: rapid.Int64Range(0, 200).Draw(t, "ts"), v: rapid.Int64Range(0, 9).Draw(t, "v")}
			schema.Shape(r)
			r.Set(kf, row.Str(e.key))
			r.Set(vf, row.Int(e.v))
			out, err := op.Process(r, e.ts, 1, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			// The model.
			list := model[e.key]
			pStart, pEnd := e.ts, e.ts+gap
			var touch []*mSession
			closedTouch := false
			for _, s := range list {
				if s.start <= pEnd && s.end >= pStart {
					touch = append(touch, s)
					closedTouch = closedTouch || s.closed
				}
			}
			tooLate := closedTouch || (len(touch) == 0 && pEnd+lateness <= wm)
			if tooLate != (out == TooLate) {
				t.Fatalf("event %+v at watermark %d: outcome %d, model too late %v (touches %d sessions, a closed one: %v)", e, wm, out, tooLate, len(touch), closedTouch)
			}
			if !tooLate {
				m := &mSession{start: pStart, end: pEnd, n: 1, s: e.v}
				var rest []*mSession
				for _, s := range list {
					if s.start <= pEnd && s.end >= pStart {
						m.start, m.end = min(m.start, s.start), max(m.end, s.end)
						m.n += s.n
						m.s += s.s
						continue
					}
					rest = append(rest, s)
				}
				rest = append(rest, m)
				sort.Slice(rest, func(i, j int) bool { return rest[i].start < rest[j].start })
				for j := 1; j < len(rest); j++ {
					if rest[j].start <= rest[j-1].end {
						t.Fatalf("key %s: model sessions [%d, %d) and [%d, %d) overlap or touch", e.key, rest[j-1].start, rest[j-1].end, rest[j].start, rest[j].end)
					}
				}
				model[e.key] = rest
			}
			applyChangelog(t, table, op.Drain(), mode, true)
		}
		advance(changelog.WatermarkInfinity, int64(n))
		applyChangelog(t, table, op.Drain(), mode, true)
		if len(table) != len(done) {
			t.Fatalf("%d rows, model %d sessions\ntable %v\nmodel %v", len(table), len(done), table, doneVals)
		}
		for _, w := range done {
			got, ok := table[wkey{w.start, 0, w.key}]
			if !ok || fmt.Sprint(got.vals) != fmt.Sprint(doneVals[w]) || !got.final || got.end != w.end {
				t.Fatalf("session %v: got %+v, want %v final\ntable %v", w, got, doneVals[w], table)
			}
		}
		if st := op.Stats(); st.Entries != 0 || st.Keys != 0 {
			t.Fatalf("state left after the end: %+v", st)
		}
	})
}
