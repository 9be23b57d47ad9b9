package engine_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestDenseJoinsEqualBatch is TestRandomJoinsEqualBatch over crowded
// state and both ways rows cross tasks: many events of one event time per
// key (times on a whole-minute grid, bursts of one key), one to a dozen
// keys, keys of type int (the rows carry no strings: encoded in the
// packet's arena) or string, a nullable int and a nullable string of the
// left side selected beside the ids (nulls crossing tasks), at
// parallelism 1, 2, 3 and 8.
func TestDenseJoinsEqualBatch(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var rows int
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
		intKey := rapid.Bool().Draw(rt, "intKey")
		withStr := rapid.Bool().Draw(rt, "withStr")
		nkeys := rapid.SampledFrom([]int{1, 2, 12}).Draw(rt, "keys")
		n := rapid.IntRange(1, 120).Draw(rt, "events")
		var evs []jEvent
		at := base
		burst, burstKey := 0, 0
		for i := range n {
			at = at.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "gap")) * time.Second)
			ts := at.Add(-time.Duration(rapid.IntRange(0, 120).Draw(rt, "delay")) * time.Second)
			if rapid.IntRange(0, 4).Draw(rt, "far") == 0 {
				ts = ts.Add(-time.Duration(rapid.IntRange(0, 12).Draw(rt, "behind")) * time.Minute)
			}
			ts = ts.Truncate(time.Minute)
			key := rapid.IntRange(0, nkeys-1).Draw(rt, "key")
			if burst == 0 && rapid.IntRange(0, 10).Draw(rt, "burst?") == 0 {
				burst, burstKey = rapid.IntRange(5, 25).Draw(rt, "burst"), key
			}
			if burst > 0 {
				burst--
				key = burstKey
			}
			e := jEvent{right: rapid.Bool().Draw(rt, "right"), id: i, key: key, ts: ts, at: at}
			e.tomb = typ == "temporal" && e.right && rapid.IntRange(0, 4).Draw(rt, "tomb") == 0
			evs = append(evs, e)
		}
		var left, right strings.Builder
		for _, e := range evs {
			w := &left
			if e.right {
				w = &right
			}
			k := `"k` + strconv.Itoa(e.key) + `"`
			if intKey {
				k = strconv.Itoa(e.key)
			}
			x := "null"
			if e.id%3 != 0 {
				x = strconv.Itoa(e.id * 7)
			}
			fmt.Fprintf(w, `{"at":"%s","ts":"%s","id":%d,"k":%s,"deleted":%v,"x":%s`, e.at.Format(time.RFC3339), e.ts.Format(time.RFC3339), e.id, k, e.tomb, x)
			if withStr && e.id%4 != 0 {
				fmt.Fprintf(w, `,"s":"s%d"`, e.id)
			}
			w.WriteString("}\n")
		}
		lp, rp := filepath.Join(dir, "left.jsonl"), filepath.Join(dir, "right.jsonl")
		if err := os.WriteFile(lp, []byte(left.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		if err := os.WriteFile(rp, []byte(right.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		build := func() *spec.Pipeline {
			kt := "string"
			if intKey {
				kt = "int"
			}
			schema := spec.FieldTypes{{Name: "id", Type: "int"}, {Name: "deleted", Type: "bool"}, {Name: "k", Type: kt}, {Name: "x", Type: "int"}, {Name: "s", Type: "string"}}
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
			// Padded to three columns before the left side's extras.
			if len(j.Select) < 3 {
				j.Select = append(j.Select, spec.NamedExpr{Name: "pad", Expr: "L.id"})
			}
			j.Select = append(j.Select, spec.NamedExpr{Name: "lx", Expr: "L.x"})
			if withStr {
				j.Select = append(j.Select, spec.NamedExpr{Name: "ls", Expr: "L.s"})
			}
			p := &spec.Pipeline{
				Name:      "densejoin",
				KeyGroups: 8,
				Source:    spec.Source{Type: "file", Path: lp, Format: "jsonl", ArrivalTimeField: "at", Schema: schema},
				EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Minute)},
				Inputs: []spec.Input{{Name: "right",
					Source:    spec.Source{Type: "file", Path: rp, Format: "jsonl", ArrivalTimeField: "at", Schema: schema},
					EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Minute)}}},
				Stages: []spec.Stage{{Name: "j", Join: j, AllowedLateness: spec.Duration(lateness),
					Emit: spec.Emit{Mode: mode}, Late: spec.Late{Policy: "side_output"}}},
			}
			return p
		}
		padded := typ != "window" || kind == "semi" || kind == "anti"
		ref := partest.Check(rt, build, nil, engine.Options{}, 2, 3, 8)
		raw := netRows(rt, ref.Sets["j select"])
		// Check the left side's extras against the left id, then drop them.
		got := map[string]int{}
		for k, c := range raw {
			f := strings.Split(k, "|")
			nx := 5
			if withStr {
				nx = 6
			}
			if len(f) != nx {
				rt.Fatalf("row %q: %d fields, want %d", k, len(f), nx)
			}
			wantX, wantS := "null", "null"
			if id, err := strconv.Atoi(f[1]); err == nil {
				if id%3 != 0 {
					wantX = strconv.Itoa(id * 7)
				}
				if id%4 != 0 {
					wantS = "s" + strconv.Itoa(id)
				}
			}
			if f[4] != wantX || withStr && f[5] != wantS {
				rt.Fatalf("row %q: left extras %v, want x %s s %s", k, f[4:], wantX, wantS)
			}
			if padded {
				f[3] = "-"
			}
			got[strings.Join(f[:4], "|")] += c
		}
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
	})
	if rows == 0 {
		t.Fatal("no rows")
	}
}
