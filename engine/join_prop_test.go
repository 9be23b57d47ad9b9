package engine_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
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

// drawer is what the join case generator draws from: rapid's draws in
// the property test, a seeded generator for the fixed cases.
type drawer interface {
	// intn returns an int in [lo, hi].
	intn(lo, hi int, label string) int
}

type rapidDraws struct{ t *rapid.T }

func (d rapidDraws) intn(lo, hi int, label string) int {
	return rapid.IntRange(lo, hi).Draw(d.t, label)
}

type seededDraws struct{ r *rand.Rand }

func (d seededDraws) intn(lo, hi int, _ string) int { return lo + d.r.IntN(hi-lo+1) }

// joinCase is one generated case of testRandomJoins.
type joinCase struct {
	typ, kind, mode string
	lateness        time.Duration
	dedupLeft       bool
	evs             []jEvent
}

// joinSeen is what cases exercised: rows emitted, rows too late,
// retractions; on the disk backend, join rows written to the store and
// keys loaded back at one task.
type joinSeen struct {
	rows, tooLate, retracted int
	written, loads           int64
}

func (a *joinSeen) add(b joinSeen) {
	a.rows, a.tooLate, a.retracted = a.rows+b.rows, a.tooLate+b.tooLate, a.retracted+b.retracted
	a.written, a.loads = a.written+b.written, a.loads+b.loads
}

// fixedJoinCases are the cases every run of testRandomJoins starts with,
// each with what it must exercise: a left interval join in retract mode
// under a lateness of 10 minutes (a late right row revises a padded left
// row: retractions), and an inner one without lateness (rows more than a
// minute behind the newest are too late), their events drawn by the same
// generator from fixed seeds; on the disk backend each must also write
// rows to the store and load keys back. So the test's guarantee holds at
// every run, not by the luck of the random cases.
func fixedJoinCases(disk bool) []fixedJoinCase {
	out := []fixedJoinCase{
		{joinCase{typ: "interval", kind: "left", mode: "retract", lateness: 10 * time.Minute}, func(s joinSeen) bool { return s.rows > 0 && s.retracted > 0 }},
		{joinCase{typ: "interval", kind: "inner", mode: "final"}, func(s joinSeen) bool { return s.rows > 0 && s.tooLate > 0 }},
	}
	for i := range out {
		genJoinEvents(seededDraws{rand.New(rand.NewPCG(uint64(i+1), 26))}, &out[i].c, disk)
	}
	return out
}

// fixedJoinCase is a fixed case and what it must exercise.
type fixedJoinCase struct {
	c    joinCase
	want func(joinSeen) bool
}

// genJoinCase draws a case: the join's type, kind, mode, lateness and
// dedup, and its events (genJoinEvents).
func genJoinCase(d drawer, disk bool) joinCase {
	types := []string{"window", "interval", "regular", "temporal"}
	c := joinCase{typ: types[d.intn(0, 3, "type")]}
	kinds := []string{"inner", "left", "full"}
	switch c.typ {
	case "window":
		kinds = append(kinds, "semi", "anti")
	case "temporal":
		kinds = kinds[:2]
	}
	c.kind = kinds[d.intn(0, len(kinds)-1, "kind")]
	c.mode = []string{"final", "update", "retract"}[d.intn(0, 2, "mode")]
	c.lateness = time.Duration([]int{0, 3, 10}[d.intn(0, 2, "lateness")]) * time.Minute
	c.dedupLeft = d.intn(0, 1, "dedup") == 1
	genJoinEvents(d, &c, disk)
	return c
}

// genJoinEvents draws c's events: 1–60; 300–600 on the disk backend but
// for a window join, so that a join's tier, checked every 256 rows,
// turns at one task.
func genJoinEvents(d drawer, c *joinCase, disk bool) {
	n := d.intn(1, 60, "events")
	if disk && c.typ != "window" {
		n = d.intn(300, 600, "events")
	}
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		at = at.Add(time.Duration(d.intn(0, 50, "gap")) * time.Second)
		ts := at.Add(-time.Duration(d.intn(0, 120, "delay")) * time.Second)
		if d.intn(0, 2, "far") == 0 {
			ts = ts.Add(-time.Duration(d.intn(0, 12, "behind")) * time.Minute)
		}
		e := jEvent{right: d.intn(0, 1, "right") == 1, id: i, key: d.intn(0, 3, "key"), ts: ts, at: at}
		e.tomb = c.typ == "temporal" && e.right && d.intn(0, 4, "tomb") == 0
		c.evs = append(c.evs, e)
	}
}

func testRandomJoins(t *testing.T, disk bool) {
	dir := t.TempDir()
	var seen joinSeen
	for i, f := range fixedJoinCases(disk) {
		c := f.c
		s := runJoinCase(t, c, dir, disk)
		if !f.want(s) || disk && (s.written == 0 || s.loads == 0) {
			t.Fatalf("fixed case %d (%s %s %s, %d events): %+v: it does not exercise the join", i, c.typ, c.kind, c.mode, len(c.evs), s)
		}
		seen.add(s)
	}
	rapid.Check(t, func(rt *rapid.T) {
		seen.add(runJoinCase(rt, genJoinCase(rapidDraws{rt}, disk), dir, disk))
	})
	t.Logf("%d rows, %d too late, %d retractions; %d join rows written to the store, %d keys loaded back", seen.rows, seen.tooLate, seen.retracted, seen.written, seen.loads)
}

// runJoinCase runs c's pipeline at parallelism 1 (on the disk backend:
// counting the store's use), 2 and 3, checks the outputs equal at each
// and, net of retractions, the batch join of the rows not too late, and
// returns what the case exercised.
func runJoinCase(rt partest.TB, c joinCase, dir string, disk bool) joinSeen {
	var left, right strings.Builder
	for _, e := range c.evs {
		w := &left
		if e.right {
			w = &right
		}
		fmt.Fprintf(w, `{"at":"%s","ts":"%s","id":%d,"k":"k%d","deleted":%v}`+"\n", e.at.Format(time.RFC3339), e.ts.Format(time.RFC3339), e.id, e.key, e.tomb)
	}
	lp, rp := filepath.Join(dir, "left.jsonl"), filepath.Join(dir, "right.jsonl")
	if err := os.WriteFile(lp, []byte(left.String()), 0o644); err != nil {
		rt.Fatalf("%v", err)
	}
	if err := os.WriteFile(rp, []byte(right.String()), 0o644); err != nil {
		rt.Fatalf("%v", err)
	}
	typ, kind, mode := c.typ, c.kind, c.mode
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
			Stages: []spec.Stage{{Name: "j", Join: j, AllowedLateness: spec.Duration(c.lateness),
				Emit: spec.Emit{Mode: mode}, Late: spec.Late{Policy: "side_output"}}},
		}
		if c.dedupLeft {
			p.Dedup = &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)}
		}
		if disk {
			p.State = spec.State{Backend: "disk", Memory: 16 << 20}
		}
		return p
	}
	var seen joinSeen
	opts := engine.Options{}
	if disk {
		opts.HotTier = 1
		p := build()
		partest.Prepare(p)
		p.Defaults()
		_, sum := partest.RunSummary(rt, p, nil, 1, opts)
		if sum.DiskState != nil {
			seen.written += sum.DiskState.JoinRowsWritten
			seen.loads += sum.DiskState.JoinLoads
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
			rt.Fatalf("%v", err)
		}
		late[m.Event.ID] = true
	}
	var acc []jEvent
	for _, e := range c.evs {
		if !late[e.id] {
			acc = append(acc, e)
		}
	}
	want := batchJoin(typ, kind, acc)
	if !maps.Equal(got, want) {
		rt.Fatalf("%s %s %s join of %d rows (%d too late): got %v, want %v", typ, kind, mode, len(c.evs), len(late), showRows(got), showRows(want))
	}
	seen.rows = len(ref.Sets["j select"])
	seen.tooLate = len(late)
	for _, r := range ref.Sets["j select"] {
		if strings.Contains(r, " delete ") || strings.Contains(r, " update_before ") {
			seen.retracted++
		}
	}
	return seen
}

// netRows reads partest's join rows ("ts=T op end=E <lid> <rid> [<ws>] v…")
// into a multiset "ts|lid|rid|ws" net of retractions.
func netRows(t partest.TB, rows []string) map[string]int {
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
