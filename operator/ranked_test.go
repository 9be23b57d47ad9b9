package operator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// rankedOp builds a ranked operator (Config.Ranked): top_n(2, desc(v))
// over the columns s and v, keyed by k, over tumbling windows of 10 ms.
func rankedOp(t *testing.T, f snapFields) *Operator {
	t.Helper()
	c, err := aggregate.New(aggregate.Spec{Name: "top", Func: "top_n", N: 2, Order: []row.Field{f.v}, Desc: []bool{true}, Cols: []row.Field{f.s, f.v}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Assigner: &window.Fixed{Size: 10, Slide: 10}, Key: []row.Field{f.k}, Aggs: []aggregate.Column{c}, Mode: Final, Ranked: true})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRanked: a ranked operator emits, when a window closes, each key's
// kept rows in rank order, keyed by the key and the rank (1, 2), with the
// rows' column values; a key with fewer rows than N emits those it has;
// ties go to the row that came first. A snapshot taken mid-window and
// restored into a new operator gives the same rows. Rows by hand.
func TestRanked(t *testing.T) {
	f := newSnapFields(t)
	type in struct {
		k  string
		v  int64
		s  string
		ts int64
	}
	first := []in{{"a", 5, "a1", 1}, {"b", 7, "b1", 2}, {"a", 9, "a2", 3}, {"a", 5, "a3", 4}}
	second := []in{{"a", 9, "a4", 5}, {"c", 1, "c1", 12}}
	feed := func(o *Operator, ins []in) {
		for _, x := range ins {
			r := f.schema.NewRow()
			r.Set(f.k, row.Str(x.k))
			r.Set(f.v, row.Int(x.v))
			r.Set(f.s, row.Str(x.s))
			if _, err := o.Process(r, x.ts, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func(o *Operator) []string {
		if err := o.AdvanceWatermark(100, 0); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range o.Drain() {
			var k, v []string
			for _, x := range r.Key {
				k = append(k, x.String())
			}
			for _, x := range r.Values {
				v = append(v, x.String())
			}
			out = append(out, fmt.Sprintf("[%d,%d) %s: %s v%d %v", r.WindowStart, r.WindowEnd, strings.Join(k, ","), strings.Join(v, ","), r.Version, r.IsFinal))
		}
		return out
	}
	want := []string{
		"[0,10) a,1: a2,9 v1 true",
		"[0,10) a,2: a4,9 v1 true", // a4 ties a2 on 9: after it; a1, a3 (5) leave
		"[0,10) b,1: b1,7 v1 true", // b has one row
		"[10,20) c,1: c1,1 v1 true",
	}
	straight := rankedOp(t, f)
	feed(straight, first)
	feed(straight, second)
	got := rows(straight)
	// A snapshot after the first rows, restored into a new operator.
	o := rankedOp(t, f)
	feed(o, first)
	var e state.Encoder
	o.Snapshot(&e)
	restored := rankedOp(t, f)
	if err := restored.Restore(state.NewDecoder(e.Bytes())); err != nil {
		t.Fatal(err)
	}
	feed(restored, second)
	got2 := rows(restored)
	for name, g := range map[string][]string{"straight": got, "restored": got2} {
		if strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s run:\n%s\nwant\n%s", name, strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
	}
	// What a ranked operator needs.
	c, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
	top, _ := aggregate.New(aggregate.Spec{Name: "top", Func: "top_n", N: 2, Order: []row.Field{f.v}})
	for _, cfg := range []Config{
		{Assigner: &window.Fixed{Size: 10, Slide: 10}, Aggs: []aggregate.Column{c}, Ranked: true},
		{Assigner: &window.Fixed{Size: 10, Slide: 10}, Aggs: []aggregate.Column{top, c}, Ranked: true},
		{Assigner: &window.Fixed{Size: 10, Slide: 10}, Aggs: []aggregate.Column{top}, Ranked: true, Mode: Update},
	} {
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "ranked operator") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
