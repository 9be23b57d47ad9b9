package operator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
	"github.com/tidemark/tidemark/window"
	"pgregory.net/rapid"
)

// updatingRankedOp builds an updating Top-N (Config.Ranked in mode):
// top_n(n, desc(v)) over the columns s and v, keyed by k, over the
// global window.
func updatingRankedOp(t interface{ Fatal(...any) }, f snapFields, n int, mode Mode) *Operator {
	c, err := aggregate.New(aggregate.Spec{Name: "top", Func: "top_n", N: n, Order: []row.Field{f.v}, Desc: []bool{true}, Cols: []row.Field{f.s, f.v}, Versions: mode != Final})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Assigner: window.Global{}, Key: []row.Field{f.k}, Aggs: []aggregate.Column{c}, Mode: mode, Ranked: true})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// rankRec is one record of the ranked tests: key, order value, name.
type rankRec struct {
	k string
	v int64
	s string
}

func feedRanked(t interface{ Fatal(...any) }, f snapFields, o *Operator, recs []rankRec, ts int64) []changelog.Row {
	var out []changelog.Row
	for i, x := range recs {
		r := f.schema.NewRow()
		r.Set(f.k, row.Str(x.k))
		r.Set(f.v, row.Int(x.v))
		r.Set(f.s, row.Str(x.s))
		if _, err := o.Process(r, ts+int64(i), 1, 0); err != nil {
			t.Fatal(err)
		}
		out = append(out, cloneRows(o.Drain())...)
	}
	return out
}

func cloneRows(rows []changelog.Row) []changelog.Row {
	out := make([]changelog.Row, len(rows))
	for i, r := range rows {
		r.Key, r.Values = slices.Clone(r.Key), slices.Clone(r.Values)
		out[i] = r
	}
	return out
}

func closeRanked(t interface{ Fatal(...any) }, o *Operator) []changelog.Row {
	if err := o.AdvanceWatermark(changelog.WatermarkInfinity, 0); err != nil {
		t.Fatal(err)
	}
	return cloneRows(o.Drain())
}

func rankedLines(rows []changelog.Row) []string {
	var out []string
	for _, r := range rows {
		var k, v []string
		for _, x := range r.Key {
			k = append(k, x.String())
		}
		for _, x := range r.Values {
			v = append(v, x.String())
		}
		fin := ""
		if r.IsFinal {
			fin = " final"
		}
		out = append(out, fmt.Sprintf("%s %s: %s v%d%s", r.Op, strings.Join(k, ","), strings.Join(v, ","), r.Version, fin))
	}
	return out
}

// TestRankedUpdating: an updating Top-N (top_n(2, desc(v))) emits, as
// each record enters a key's two first rows, the ranks it changed, and
// at the close every rank's row again as final. Rows worked out by hand:
//
//	a1 (a, 5): a's ranks [a1]          → rank 1 inserted
//	b1 (b, 7): b's ranks [b1]          → rank 1 inserted
//	a2 (a, 9): [a2, a1]                → rank 1 now a2 (v2), rank 2 a1 inserted
//	a3 (a, 5): ties a1, comes after it → past the 2nd: nothing
//	a4 (a, 9): ties a2, after it       → rank 2 now a4 (v2); a1 leaves
//	a5 (a, 1):                         → nothing
//
// In mode retract each update_after follows an update_before of the
// rank's previous row and version (rank 1 before a2 was a1 v1; rank 2
// before a4 was a1 v1, the row pushed out). A snapshot after three
// records, restored into a new operator, continues with the same rows.
func TestRankedUpdating(t *testing.T) {
	f := newSnapFields(t)
	first := []rankRec{{"a", 5, "a1"}, {"b", 7, "b1"}, {"a", 9, "a2"}}
	second := []rankRec{{"a", 5, "a3"}, {"a", 9, "a4"}, {"a", 1, "a5"}}
	want := map[Mode][]string{
		Update: {
			"insert a,1: a1,5 v1",
			"insert b,1: b1,7 v1",
			"update_after a,1: a2,9 v2",
			"insert a,2: a1,5 v1",
			"update_after a,2: a4,9 v2",
			// the close, keys in order of first arrival
			"update_after a,1: a2,9 v3 final",
			"update_after a,2: a4,9 v3 final",
			"update_after b,1: b1,7 v2 final",
		},
		Retract: {
			"insert a,1: a1,5 v1",
			"insert b,1: b1,7 v1",
			"update_before a,1: a1,5 v1",
			"update_after a,1: a2,9 v2",
			"insert a,2: a1,5 v1",
			"update_before a,2: a1,5 v1",
			"update_after a,2: a4,9 v2",
			"update_before a,1: a2,9 v2",
			"update_after a,1: a2,9 v3 final",
			"update_before a,2: a4,9 v2",
			"update_after a,2: a4,9 v3 final",
			"update_before b,1: b1,7 v1",
			"update_after b,1: b1,7 v2 final",
		},
		Final: {
			"insert a,1: a2,9 v1 final",
			"insert a,2: a4,9 v1 final",
			"insert b,1: b1,7 v1 final",
		},
	}
	for _, mode := range []Mode{Update, Retract, Final} {
		o := updatingRankedOp(t, f, 2, mode)
		got := feedRanked(t, f, o, first, 1)
		got = append(got, feedRanked(t, f, o, second, 10)...)
		got = append(got, closeRanked(t, o)...)
		if g := rankedLines(got); strings.Join(g, "\n") != strings.Join(want[mode], "\n") {
			t.Errorf("mode %d:\n%s\nwant\n%s", mode, strings.Join(g, "\n"), strings.Join(want[mode], "\n"))
		}
		// Stopped after the first three records and restored.
		o = updatingRankedOp(t, f, 2, mode)
		got = feedRanked(t, f, o, first, 1)
		var e state.Encoder
		o.Snapshot(&e)
		restored := updatingRankedOp(t, f, 2, mode)
		if err := restored.Restore(state.NewDecoder(e.Bytes())); err != nil {
			t.Fatal(err)
		}
		got = append(got, feedRanked(t, f, restored, second, 10)...)
		got = append(got, closeRanked(t, restored)...)
		if g := rankedLines(got); strings.Join(g, "\n") != strings.Join(want[mode], "\n") {
			t.Errorf("mode %d, restored:\n%s\nwant\n%s", mode, strings.Join(g, "\n"), strings.Join(want[mode], "\n"))
		}
	}
	// Updating ranks need the global window and no early firings.
	top, _ := aggregate.New(aggregate.Spec{Name: "top", Func: "top_n", N: 2, Order: []row.Field{f.v}, Versions: true})
	for _, cfg := range []Config{
		{Assigner: &window.Fixed{Size: 10, Slide: 10}, Aggs: []aggregate.Column{top}, Ranked: true, Mode: Update},
		{Assigner: window.Global{}, Aggs: []aggregate.Column{top}, Ranked: true, Mode: Retract, EarlyEvery: 10},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "ranked operator") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// batchTopN is the Top-N recomputed from scratch: per key, the records
// stably sorted by v descending (ties: the one that came first), the n
// first, as "s,v" values by rank.
func batchTopN(recs []rankRec, n int) map[string][]string {
	by := map[string][]rankRec{}
	for _, r := range recs {
		by[r.k] = append(by[r.k], r)
	}
	out := map[string][]string{}
	for k, rs := range by {
		slices.SortStableFunc(rs, func(a, b rankRec) int {
			switch {
			case a.v > b.v:
				return -1
			case a.v < b.v:
				return 1
			}
			return 0
		})
		for _, r := range rs[:min(n, len(rs))] {
			out[k] = append(out[k], fmt.Sprintf("%s,%d", r.s, r.v))
		}
	}
	return out
}

// TestRankedUpdatingProp checks an updating Top-N against a batch
// recomputation: after every record, the changelog emitted so far,
// replayed into a table keyed by (key, rank) — insert and update_after
// set a rank's row, update_before must name the live row and version —
// holds exactly the Top-N of the records so far; every rank's versions
// count 1, 2, 3 …; mode retract emits mode update's rows with the
// update_befores between; the close makes every rank final with the
// Top-N of the whole input, as mode final does; and a snapshot at a
// random record, restored, gives the same rows.
func TestRankedUpdatingProp(t *testing.T) {
	f := newSnapFields(t)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "n")
		count := rapid.IntRange(0, 40).Draw(t, "records")
		recs := make([]rankRec, count)
		for i := range recs {
			recs[i] = rankRec{
				k: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "k"),
				v: rapid.Int64Range(0, 6).Draw(t, "v"),
				s: fmt.Sprintf("r%d", i),
			}
		}
		cut := rapid.IntRange(0, count).Draw(t, "snapshot")
		byMode := map[Mode][]changelog.Row{}
		for _, mode := range []Mode{Update, Retract} {
			o := updatingRankedOp(t, f, n, mode)
			type live struct {
				vals string
				ver  uint64
			}
			table := map[string]live{} // "key,rank" → row
			var all []changelog.Row
			for i := range recs {
				if i == cut {
					var e state.Encoder
					o.Snapshot(&e)
					r := updatingRankedOp(t, f, n, mode)
					if err := r.Restore(state.NewDecoder(e.Bytes())); err != nil {
						t.Fatal(err)
					}
					o = r
				}
				rows := feedRanked(t, f, o, recs[i:i+1], int64(i))
				all = append(all, rows...)
				for _, r := range rows {
					id := r.Key[0].String() + "," + r.Key[1].String()
					vals := r.Values[0].String() + "," + r.Values[1].String()
					cur, ok := table[id]
					switch r.Op {
					case changelog.Insert:
						if ok || r.Version != 1 {
							t.Fatalf("record %d: insert of %s v%d over %v", i, id, r.Version, cur)
						}
					case changelog.UpdateBefore:
						if mode != Retract || !ok || cur.vals != vals || cur.ver != r.Version {
							t.Fatalf("record %d: update_before %s %s v%d, live %v", i, id, vals, r.Version, cur)
						}
						continue
					case changelog.UpdateAfter:
						if !ok || r.Version != cur.ver+1 {
							t.Fatalf("record %d: update_after %s v%d, live %v", i, id, r.Version, cur)
						}
					default:
						t.Fatalf("record %d: %s", i, r.Op)
					}
					if r.IsFinal {
						t.Fatalf("record %d: a final row before the close", i)
					}
					table[id] = live{vals, r.Version}
				}
				want := batchTopN(recs[:i+1], n)
				got := map[string][]string{}
				for k, ranks := range want {
					for j := range ranks {
						got[k] = append(got[k], table[fmt.Sprintf("%s,%d", k, j+1)].vals)
					}
				}
				size := 0
				for _, ranks := range want {
					size += len(ranks)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || len(table) != size {
					t.Fatalf("after record %d: table %v, want %v", i, table, want)
				}
			}
			closing := closeRanked(t, o)
			for _, r := range closing {
				if r.Op == changelog.UpdateBefore {
					continue
				}
				id := r.Key[0].String() + "," + r.Key[1].String()
				if !r.IsFinal || r.Op != changelog.UpdateAfter || r.Version != table[id].ver+1 || r.Values[0].String()+","+r.Values[1].String() != table[id].vals {
					t.Fatalf("close: %v, live %v", rankedLines([]changelog.Row{r}), table[id])
				}
				table[id] = live{table[id].vals, r.Version}
			}
			byMode[mode] = append(all, closing...)
			// On the disk backend with no hot tier, the state of every
			// key written to the store after each record and read back
			// before the next: the same rows.
			st, err := disk.Open(disk.Options{Dir: "st", FS: vfs.NewMem()})
			if err != nil {
				t.Fatal(err)
			}
			d := updatingRankedOp(t, f, n, mode)
			if !d.UseStore(st, 7, 0) {
				t.Fatal("an updating Top-N runs on the disk backend")
			}
			d.spill.every = 1
			dr := feedRanked(t, f, d, recs, 0)
			dr = append(dr, closeRanked(t, d)...)
			if g, w := rankedLines(dr), rankedLines(byMode[mode]); strings.Join(g, "\n") != strings.Join(w, "\n") {
				t.Fatalf("mode %d on disk:\n%s\nin memory:\n%s", mode, strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			if w, r, _ := d.SpillStats(); count > 1 && (w == 0 || r == 0) {
				t.Fatalf("on disk: %d writes, %d reads: the store was not used", w, r)
			}
			st.Close()
		}
		// Retract mode is update mode with the update_befores.
		var ups []changelog.Row
		for _, r := range byMode[Retract] {
			if r.Op != changelog.UpdateBefore {
				ups = append(ups, r)
			}
		}
		if g, w := rankedLines(ups), rankedLines(byMode[Update]); strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Fatalf("retract without update_before:\n%s\nupdate:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		// The final rows are mode final's.
		fo := updatingRankedOp(t, f, n, Final)
		feedRanked(t, f, fo, recs, 0)
		var finals []string
		for _, r := range byMode[Update] {
			if r.IsFinal {
				finals = append(finals, fmt.Sprintf("%v %v", r.Key, r.Values))
			}
		}
		var want []string
		for _, r := range closeRanked(t, fo) {
			want = append(want, fmt.Sprintf("%v %v", r.Key, r.Values))
		}
		if strings.Join(finals, "\n") != strings.Join(want, "\n") {
			t.Fatalf("final rows:\n%s\nmode final:\n%s", strings.Join(finals, "\n"), strings.Join(want, "\n"))
		}
	})
}
