package aggregate

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

// TestMergedPartialsMatchOneSlot: for every function whose results depend
// only on the rows a slot holds (not HistoryDependent), rows added and
// retracted across several partial slots — as the window operator's slices
// hold a window's rows — and merged into one slot give the Result of one
// slot that took every add and retraction, whatever the order of the
// merges; so do the partials merged into a slot that already holds rows.
// Retractions only take back rows the same partial holds (the rows of a
// changelog, retracted in the slice they were added to), and a slot whose
// rows are all retracted is Reset, as the operator frees it.
func TestMergedPartialsMatchOneSlot(t *testing.T) {
	schema, fs := snapSchema(t)
	type fn struct {
		name string
		arg  int // index into fs, -1 for none
		arg2 int
	}
	fns := []fn{{"count", -1, -1}, {"count", 0, -1}, {"sum", 0, -1}, {"sum", 1, -1}, {"avg", 0, -1}, {"avg", 1, -1},
		{"min", 0, -1}, {"max", 0, -1}, {"min", 1, -1}, {"max", 1, -1}, {"min", 2, -1}, {"max", 2, -1},
		{"count_distinct", 0, -1}, {"count_distinct", 1, -1}, {"count_distinct", 2, -1},
		{"arg_max", 0, 2}, {"arg_min", 1, 0}}
	rapid.Check(t, func(t *rapid.T) {
		f := rapid.SampledFrom(fns).Draw(t, "fn")
		retract := rapid.Bool().Draw(t, "retract")
		sp := Spec{Name: "x", Func: f.name, Retract: retract}
		if f.arg >= 0 {
			sp.Arg, sp.HasArg = fs[f.arg], true
		}
		if f.arg2 >= 0 {
			sp.Arg2, sp.HasArg2 = fs[f.arg2], true
		}
		c, err := New(sp)
		if err != nil {
			if retract && (f.name == "arg_max" || f.name == "arg_min") {
				return // not retractable
			}
			t.Fatal(err)
		}
		if h, ok := c.(HistoryDependent); ok && h.HistoryDependent() {
			return
		}
		const parts = 4
		one, merged := int32(parts), int32(parts+1)
		c.Grow(parts + 2)
		type added struct {
			part int32
			r    *row.Row
		}
		var live []added
		var rows [parts + 1]int
		n := rapid.IntRange(0, 40).Draw(t, "ops")
		for i := range n {
			if retract && len(live) > 0 && rapid.IntRange(0, 3).Draw(t, "retract?") == 0 {
				j := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				a := live[j]
				live = append(live[:j], live[j+1:]...)
				if err := c.Retract(a.part, a.r); err != nil {
					t.Fatal(err)
				}
				if err := c.Retract(one, a.r); err != nil {
					t.Fatal(err)
				}
				if rows[a.part]--; rows[a.part] == 0 {
					c.Reset(a.part)
				}
				if rows[one]--; rows[one] == 0 {
					c.Reset(one)
				}
				continue
			}
			r := schema.NewRow()
			r.Set(fs[0], row.Int(rapid.Int64Range(-5, 5).Draw(t, "i")))
			d, _ := row.ParseDecimal([]byte(rapid.SampledFrom(snapDecimals).Draw(t, "d")))
			r.Set(fs[1], row.Dec(d))
			r.Set(fs[2], row.Str(rapid.SampledFrom([]string{"", "a", "b", "ab"}).Draw(t, "s")))
			for k := range 3 {
				if rapid.IntRange(0, 5).Draw(t, "null") == 0 {
					r.SetNull(fs[k].Index)
				}
			}
			p := int32(rapid.IntRange(0, parts-1).Draw(t, "part"))
			if err := c.Add(p, r); err != nil {
				t.Fatal(err)
			}
			if err := c.Add(one, r); err != nil {
				t.Fatal(err)
			}
			live = append(live, added{p, r})
			rows[p]++
			rows[one]++
			_ = i
		}
		for _, p := range rapid.Permutation([]int32{0, 1, 2, 3}).Draw(t, "merge order") {
			if err := c.Merge(merged, p); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := show(c, merged), show(c, one); got != want {
			t.Fatalf("%s(retract %v): merged partials %s, one slot %s", f.name, retract, got, want)
		}
	})
}

// TestSumIntPartialsBeyondInt64: partial int sums merge in 128 bits, so a
// window total that fits int64 comes out exact even when a running total
// of its partials does not; CheckMerge reports a result outside int64;
// Magnitude and RowMagnitude bound what a slot and a row add.
func TestSumIntPartialsBeyondInt64(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("n", row.KindInt)
	c, _ := New(Spec{Name: "total", Func: "sum", Arg: f, HasArg: true, Retract: true})
	ch := c.(Checker)
	c.Grow(4)
	r := s.NewRow()
	add := func(slot int32, x int64) {
		t.Helper()
		r.Set(f, row.Int(x))
		if err := c.Add(slot, r); err != nil {
			t.Fatal(err)
		}
	}
	add(0, math.MaxInt64)
	add(1, math.MaxInt64)
	add(2, math.MinInt64)
	r.Set(f, row.Int(-1))
	if c.Add(2, r) == nil {
		t.Fatal("MinInt64 − 1 did not overflow")
	}
	if ch.CheckMerge(3, 0) != nil {
		t.Fatal("MaxInt64 into an empty slot refused")
	}
	c.Merge(3, 0)
	if ch.CheckMerge(3, 1) == nil {
		t.Fatal("MaxInt64 + MaxInt64: CheckMerge said it fits")
	}
	c.Merge(3, 1) // 2^64 − 2: beyond int64, held in 128 bits
	if m := ch.Magnitude(3); m != math.MaxUint64-1 {
		t.Fatalf("Magnitude of 2^64 − 2 = %d", m)
	}
	if ch.CheckMerge(3, 2) != nil {
		t.Fatal("2^64 − 2 − 2^63 fits int64, CheckMerge refused")
	}
	c.Merge(3, 2)
	if got := c.Result(3).String(); got != "9223372036854775806" {
		t.Fatalf("merged total %s, want 2^63 − 2", got)
	}
	if m := ch.Magnitude(2); m != 1<<63 {
		t.Fatalf("Magnitude of −2^63 = %d", m)
	}
	r.Set(f, row.Int(math.MinInt64))
	if m := ch.RowMagnitude(r); m != 1<<63 {
		t.Fatalf("RowMagnitude of MinInt64 = %d", m)
	}
}
