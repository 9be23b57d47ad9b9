package engine_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// jEvent is a generated event of the join property test.
type jEvent struct {
	right bool
	id    int
	key   int
	ts    time.Time
	at    time.Time
	tomb  bool
}

// TestRandomJoinsEqualBatch: random events on two inputs (the source,
// behind dedup when drawn, and an input of its own), in a random arrival
// order with rows late and too late, through a random join — window
// (tumbling), interval, regular or temporal; every kind; modes final,
// update, retract — give the same canonical outputs at parallelism 1, 2
// and 3 over 8 key groups (a random join pipeline for partest), and, net
// of retractions, the join of the rows that were not too late (every row
// in the late output is too late, and only those) as a batch computes it:
// nested loops, per-window grouping, as-of search.
func TestRandomJoinsEqualBatch(t *testing.T) { testRandomJoins(t, false) }

// TestRandomJoinsEqualBatchDisk is TestRandomJoinsEqualBatch on the disk
// backend under a hot tier of one byte (every check of a join's tier
// turns it): the interval, regular and temporal joins keep their rows in
// the task's store (window joins stay in memory), at parallelism 1, 2
// and 3, and give the batch join; with 300–600 events a join's tier
// turns at one task, and keys must be loaded back from the store.
func TestRandomJoinsEqualBatchDisk(t *testing.T) { testRandomJoins(t, true) }

func testRandomJoins(t *testing.T, disk bool) {
	var written, loads int64
	if disk {
		defer func() {
			if !t.Failed() && (written == 0 || loads == 0) {
				t.Errorf("%d join rows written to the store, %d keys loaded back: the store is not exercised", written, loads)
			}
		}()
	}
	dir := t.TempDir()
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var rows, tooLate, retracted int
	rapid.Check(t, func(rt *rapid.T) {
		typ := rapid.SampledFrom([]string{"window", "interval", "regular", "temporal"}).Draw(rt, "type")
		kinds := []string{"inner", "left", "full"}
		switch typ {
		case "window":
			kinds = append(kinds, "semi", "anti")
		case "temporal":
			kinds = kinds[:2]
		}
		kind := rapid.SampledFrom(kinds).Draw(rt, "kind")
		mode := rapid.SampledFrom([]string{"final", "update", "retract"}).Draw(rt, "mode")
		lateness := time.Duration(rapid.SampledFrom([]int{0, 3, 10}).Draw(rt, "lateness")) * time.Minute
		dedupLeft := rapid.Bool().Draw(rt, "dedup")
		n := rapid.IntRange(1, 60).Draw(rt, "events")
		if disk && typ != "window" {
			// A join's tier is checked every 256 of its rows: enough of
			// them that keys leave memory at one task.
			n = rapid.IntRange(300, 600).Draw(rt, "events")
		}
		var evs []jEvent
		at := base
		for i := range n {
			at = at.Add(time.Duration(rapid.IntRange(0, 50).Draw(rt, "gap")) * time.Second)
			ts := at.Add(-time.Duration(rapid.IntRange(0, 120).Draw(rt, "delay")) * time.Second)
			if rapid.IntRange(0, 2).Draw(rt, "far") == 0 {
				ts = ts.Add(-time.Duration(rapid.IntRange(0, 12).Draw(rt, "behind")) * time.Minute)
			}
			e := jEvent{right: rapid.Bool().Draw(rt, "right"), id: i, key: rapid.IntRange(0, 3).Draw(rt, "key"), ts: ts, at: at}
			e.tomb = typ == "temporal" && e.right && rapid.IntRange(0, 4).Draw(rt, "tomb") == 0
			evs = append(evs, e)
		}
		var left, right strings.Builder
		for _, e := range evs {
			w := &left
			if e.right {
				w = &right
			}
			fmt.Fprintf(w, `{"at":"%s","ts":"%s","id":%d,"k":"k%d","deleted":%v}`+"\n", e.at.Format(time.RFC3339), e.ts.Format(time.RFC3339), e.id, e.key, e.tomb)
		}
		lp, rp := filepath.Join(dir, "left.jsonl"), filepath.Join(dir, "right.jsonl")
		if err := os.WriteFile(lp, []byte(left.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		if err := os.WriteFile(rp, []byte(right.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		build := func() *spec.Pipeline {
			schema := spec.FieldTypes{{Name: "id", Type: "int"}, {Name: "deleted", Type: "bool"}}
			j := &spec.Join{Type: typ, Kind: kind,
				Left:   spec.JoinSide{Input: "source", As: "L"},
				Right:  spec.JoinSide{Input: "right", As: "R"},
				On:     []string{"L.k = R.k"},
				Select: spec.NamedExprs{{Name: "lid", Expr: "L.id"}, {Name: "rid", Expr: "R.id"}},
			}
			switch typ {
			case "window":
				j.Window = &spec.Window{Type: "tumbling", Size: spec.Duration(5 * time.Minute)}
				j.Select = append(j.Select, spec.NamedExpr{Name: "ws", Expr: "window_start"})
				if kind == "semi" || kind == "anti" {
					j.Select = j.Select[:1:1]
					j.Select = append(j.Select, spec.NamedExpr{Name: "ws", Expr: "window_start"})
				}
			case "interval":
				up := spec.Duration(4 * time.Minute)
				j.Between = &spec.JoinBounds{Lower: spec.Duration(-2 * time.Minute), Upper: &up}
			case "regular":
				j.TTL = spec.Duration(3 * time.Minute)
			case "temporal":
				j.Tombstone = "R.deleted"
			}
			p := &spec.Pipeline{
				Name:      "joinprop",
				KeyGroups: 8,
				Source:    spec.Source{Type: "file", Path: lp, Format: "jsonl", ArrivalTimeField: "at", Schema: schema},
				EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Minute)},
				Inputs: []spec.Input{{Name: "right",
					Source:    spec.Source{Type: "file", Path: rp, Format: "jsonl", ArrivalTimeField: "at", Schema: schema},
					EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Minute)}}},
				Stages: []spec.Stage{{Name: "j", Join: j, AllowedLateness: spec.Duration(lateness),
					Emit: spec.Emit{Mode: mode}, Late: spec.Late{Policy: "side_output"}}},
			}
			if dedupLeft {
				p.Dedup = &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)}
			}
			if disk {
				p.State = spec.State{Backend: "disk", Memory: 16 << 20}
			}
			return p
		}
		opts := engine.Options{}
		if disk {
			opts.HotTier = 1
			p := build()
			partest.Prepare(p)
			p.Defaults()
			_, sum := partest.RunSummary(rt, p, nil, 1, opts)
			if sum.DiskState != nil {
				written += sum.DiskState.JoinRowsWritten
				loads += sum.DiskState.JoinLoads
			}
		}
		ref := partest.Check(rt, build, nil, opts, 2, 3)
		got := netRows(rt, ref.Sets["j select"])
		late := map[int]bool{}
		for _, rec := range ref.Sets["late j"] {
			var m struct {
				Event struct{ ID int } `json:"event"`
			}
			if err := json.Unmarshal([]byte(rec), &m); err != nil {
				rt.Fatal(err)
			}
			late[m.Event.ID] = true
		}
		var acc []jEvent
		for _, e := range evs {
			if !late[e.id] {
				acc = append(acc, e)
			}
		}
		want := batchJoin(typ, kind, acc)
		if !maps.Equal(got, want) {
			rt.Fatalf("%s %s %s join of %d rows (%d too late): got %v, want %v", typ, kind, mode, len(evs), len(late), showRows(got), showRows(want))
		}
		rows += len(ref.Sets["j select"])
		tooLate += len(late)
		for _, r := range ref.Sets["j select"] {
			if strings.Contains(r, " delete ") || strings.Contains(r, " update_before ") {
				retracted++
			}
		}
	})
	// The draws make the cases the test is for.
	if rows == 0 || tooLate == 0 || retracted == 0 {
		t.Fatalf("rows %d, too late %d, retractions %d: the generator does not exercise the join", rows, tooLate, retracted)
	}
	t.Logf("%d rows, %d too late, %d retractions", rows, tooLate, retracted)
}

// netRows reads partest's join rows ("ts=T op end=E <lid> <rid> [<ws>] v…")
// into a multiset "ts|lid|rid|ws" net of retractions.
func netRows(t *rapid.T, rows []string) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		f := strings.Fields(r)
		ts, op := strings.TrimPrefix(f[0], "ts="), f[1]
		vals := []string{}
		for _, v := range f[3:] {
			if strings.HasPrefix(v, "v") {
				break
			}
			_, x, _ := strings.Cut(v, ":")
			vals = append(vals, x)
		}
		for len(vals) < 3 {
			vals = append(vals, "-")
		}
		if len(vals) == 2+1 && !strings.Contains(r, " ") {
			t.Fatalf("row %q", r)
		}
		k := ts + "|" + strings.Join(vals, "|")
		switch op {
		case "insert", "update_after":
			out[k]++
		default:
			out[k]--
		}
	}
	for k, n := range out {
		if n < 0 {
			t.Fatalf("row %s retracted more often than emitted", k)
		}
		if n == 0 {
			delete(out, k)
		}
	}
	return out
}

// batchJoin joins the accepted events directly.
func batchJoin(typ, kind string, evs []jEvent) map[string]int {
	out := map[string]int{}
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	put := func(ts time.Time, l, r *jEvent, ws string) {
		lid, rid := "null", "null"
		if l != nil {
			lid = strconv.Itoa(l.id)
		}
		if r != nil {
			rid = strconv.Itoa(r.id)
		}
		if kind == "semi" || kind == "anti" {
			rid = ws
			ws = "-"
		}
		out[ms(ts)+"|"+lid+"|"+rid+"|"+ws]++
	}
	later := func(a, b time.Time) time.Time {
		if a.After(b) {
			return a
		}
		return b
	}
	var ls, rs []*jEvent
	for i := range evs {
		if evs[i].right {
			rs = append(rs, &evs[i])
		} else {
			ls = append(ls, &evs[i])
		}
	}
	switch typ {
	case "interval", "regular":
		lo, hi := -2*time.Minute, 4*time.Minute
		if typ == "regular" {
			lo, hi = -3*time.Minute, 3*time.Minute
		}
		matched := map[*jEvent]bool{}
		for _, l := range ls {
			for _, r := range rs {
				if d := r.ts.Sub(l.ts); l.key == r.key && d >= lo && d <= hi {
					put(later(l.ts, r.ts), l, r, "-")
					matched[l], matched[r] = true, true
				}
			}
		}
		for _, l := range ls {
			if !matched[l] && kind != "inner" {
				put(l.ts, l, nil, "-")
			}
		}
		for _, r := range rs {
			if !matched[r] && kind == "full" {
				put(r.ts, nil, r, "-")
			}
		}
	case "window":
		win := func(t time.Time) time.Time { return t.Truncate(5 * time.Minute) }
		type wk struct {
			w   int64
			key int
		}
		groups := map[wk][2][]*jEvent{}
		for i := range evs {
			e := &evs[i]
			k := wk{win(e.ts).UnixMilli(), e.key}
			g := groups[k]
			s := 0
			if e.right {
				s = 1
			}
			g[s] = append(g[s], e)
			groups[k] = g
		}
		for k, g := range groups {
			ws := time.UnixMilli(k.w).UTC().Format(time.RFC3339)
			for _, l := range g[0] {
				switch kind {
				case "semi":
					if len(g[1]) > 0 {
						put(l.ts, l, nil, ws)
					}
				case "anti":
					if len(g[1]) == 0 {
						put(l.ts, l, nil, ws)
					}
				default:
					for _, r := range g[1] {
						put(later(l.ts, r.ts), l, r, ws)
					}
					if len(g[1]) == 0 && kind != "inner" {
						put(l.ts, l, nil, ws)
					}
				}
			}
			if kind == "full" && len(g[0]) == 0 {
				for _, r := range g[1] {
					put(r.ts, nil, r, ws)
				}
			}
		}
	case "temporal":
		for _, p := range ls {
			var best *jEvent
			for _, v := range rs {
				// The newest version at or before the probe; among equal
				// times the last to arrive (ids grow with arrival).
				if v.key == p.key && !v.ts.After(p.ts) && (best == nil || v.ts.After(best.ts) || v.ts.Equal(best.ts) && v.id > best.id) {
					best = v
				}
			}
			switch {
			case best != nil && !best.tomb:
				put(p.ts, p, best, "-")
			case kind == "left":
				put(p.ts, p, nil, "-")
			}
		}
	}
	return out
}

func showRows(m map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s = append(s, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(s, " ")
}
