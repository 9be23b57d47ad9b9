package aggregate

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// distinctModel is count_distinct by the book: each slot's values with
// their multiplicities in a map.
type distinctModel map[int32]map[string]int

func (m distinctModel) add(s int32, v string, n int) {
	if m[s] == nil {
		m[s] = map[string]int{}
	}
	m[s][v] += n
}

func (m distinctModel) retract(s int32, v string) {
	if m[s][v] > 1 {
		m[s][v]--
	} else {
		delete(m[s], v)
	}
}

// TestDistinctMatchesModel drives count_distinct over strings, ints and
// decimals with random adds, retractions (of values present or not),
// merges, resets and checkpoint round trips of a slot, and compares every
// result with the model. Few values and long runs make multiplicities
// pass 255 (the over map), many values make tables grow and shrink.
func TestDistinctMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, fs := snapSchema(t)
		arg := rapid.IntRange(0, 2).Draw(t, "arg")
		f := fs[arg]
		c, err := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true, Retract: true})
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(4)
		s := row.NewSchema()
		g, _ := s.Add(f.Name, f.Kind)
		nvals := rapid.SampledFrom([]int{1, 3, 40, 3000}).Draw(t, "values")
		// value returns the row of value i and its model text: 2.0 and
		// 2.00 are one decimal value.
		value := func(i int) (*row.Row, string) {
			r := s.NewRow()
			switch f.Kind {
			case row.KindInt:
				r.Set(g, row.Int(int64(i)-int64(nvals/2)))
				return r, fmt.Sprint(int64(i) - int64(nvals/2))
			case row.KindDecimal:
				text := fmt.Sprintf("%d.%d", i/2, 5*(i%2))
				if i%3 == 0 {
					text += "0"
				}
				d, err := row.ParseDecimal([]byte(text))
				if err != nil {
					t.Fatal(err)
				}
				r.Set(g, row.Dec(d))
				return r, d.String()
			}
			r.Set(g, row.Str(fmt.Sprintf("ord-%07d", i)))
			return r, fmt.Sprintf("ord-%07d", i)
		}
		m := distinctModel{}
		ops := rapid.IntRange(1, 3000).Draw(t, "ops")
		for range ops {
			sl := rapid.Int32Range(0, 3).Draw(t, "slot")
			switch k := rapid.IntRange(0, 99).Draw(t, "op"); {
			case k < 60:
				r, v := value(rapid.IntRange(0, nvals-1).Draw(t, "v"))
				c.Add(sl, r)
				m.add(sl, v, 1)
			case k < 88:
				r, v := value(rapid.IntRange(0, nvals-1).Draw(t, "v"))
				c.Retract(sl, r)
				m.retract(sl, v)
			case k < 91:
				src := rapid.Int32Range(0, 3).Draw(t, "src")
				c.Merge(sl, src)
				for v, n := range m[src] {
					m.add(sl, v, n)
				}
			case k < 93:
				c.Reset(sl)
				delete(m, sl)
			case k < 96:
				var e state.Encoder
				c.AppendSlot(&e, sl)
				d := state.NewDecoder(e.Bytes())
				c.RestoreSlot(d, sl)
				if d.Err() != nil || d.Len(1, 0) != 0 {
					t.Fatalf("restore: %v", d.Err())
				}
			default:
				// Retract every occurrence of one value.
				i := rapid.IntRange(0, nvals-1).Draw(t, "v")
				r, v := value(i)
				for range m[sl][v] {
					c.Retract(sl, r)
				}
				delete(m[sl], v)
			}
			for s := int32(0); s < 4; s++ {
				if got, want := c.Result(s).I, int64(len(m[s])); got != want {
					t.Fatalf("slot %d: %d distinct, want %d", s, got, want)
				}
			}
		}
	})
}

// TestDistinctDoesNotAllocate: once the tables of its windows exist, a
// column adding values to windows that open and close (slots filled, then
// Reset) allocates nothing per event.
func TestDistinctDoesNotAllocate(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("order_id", row.KindString)
	c, _ := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true})
	c.Grow(64)
	rows := make([]*row.Row, 50)
	for i := range rows {
		rows[i] = s.NewRow()
		rows[i].Set(f, row.Str(fmt.Sprintf("ord-%07d", i)))
	}
	window := func() {
		for sl := int32(0); sl < 64; sl++ {
			for i, r := range rows {
				c.Add(sl, r)
				if i%3 == 0 {
					c.Add(sl, r) // a second payment of the order
				}
			}
		}
		for sl := int32(0); sl < 64; sl++ {
			if got := c.Result(sl).I; got != 50 {
				t.Fatalf("slot %d: %d distinct, want 50", sl, got)
			}
			c.Reset(sl)
		}
	}
	window()
	if n := testing.AllocsPerRun(20, window); n != 0 {
		t.Errorf("%v allocations per window of 64 keys × 67 events, want 0", n)
	}
	for i, r := range rows[:35] {
		c.Add(0, r)
		_ = i
	}
	// 35 values in a 64-word table: 8 bytes per word, under 16 per value.
	if b := c.ExtraBytes(0); b != 512 || float64(b)/35 > 16 {
		t.Errorf("35 distinct values take %d bytes", b)
	}
}

// BenchmarkCountDistinct adds the article's shape: 35 orders per window
// and key, one in three paid twice, 1,700 keys, windows closing (Reset)
// and opening again.
func BenchmarkCountDistinct(b *testing.B) {
	s := row.NewSchema()
	f, _ := s.Add("order_id", row.KindString)
	c, _ := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true})
	const keys, perKey = 1700, 35
	c.Grow(keys)
	vals := make([]*row.Row, keys*perKey)
	for i := range vals {
		vals[i] = s.NewRow()
		vals[i].Set(f, row.Str(fmt.Sprintf("ord-%07d", i)))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for k := int32(0); k < keys; k++ {
			for j := range perKey {
				r := vals[int(k)*perKey+j]
				c.Add(k, r)
				if j%3 == 0 {
					c.Add(k, r)
				}
				n += 1 + (j+2)/3 - (j+1)/3
			}
		}
		for k := int32(0); k < keys; k++ {
			c.Reset(k)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/add")
}

// TestDistinctLargeMultiplicities: multiplicities from 255 on live in the
// over map, through adds, merges, retractions, checkpoints and resets.
func TestDistinctLargeMultiplicities(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("customer", row.KindString)
	col, _ := New(Spec{Name: "d", Func: "count_distinct", Arg: f, HasArg: true, Retract: true})
	c := col.(*distinct)
	c.Grow(3)
	r := func(v string) *row.Row { x := s.NewRow(); x.Set(f, row.Str(v)); return x }
	a, b := r("a"), r("b")
	for range 300 {
		c.Add(0, a)
	}
	for range 254 {
		c.Add(1, a)
	}
	c.Add(1, b)
	want := func(sl int32, n int64, over int) {
		t.Helper()
		if got := c.Result(sl).I; got != n || len(c.over) != over {
			t.Fatalf("slot %d: %d distinct, %d in the over map; want %d, %d", sl, got, len(c.over), n, over)
		}
	}
	want(0, 1, 1)
	want(1, 2, 1)
	c.Merge(1, 0) // a: 254 + 300
	want(1, 2, 2)
	var e state.Encoder
	c.AppendSlot(&e, 1)
	c.RestoreSlot(state.NewDecoder(e.Bytes()), 2)
	want(2, 2, 3)
	for range 553 {
		c.Retract(1, a)
	}
	want(1, 2, 2) // one a left, inline again
	c.Retract(1, a)
	want(1, 1, 2)
	for range 299 {
		c.Retract(0, a)
	}
	want(0, 1, 1)
	c.Retract(0, a)
	want(0, 0, 1)
	c.Reset(2)
	want(2, 0, 0)
}
