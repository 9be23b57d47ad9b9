package operator

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/window"
)

// BenchmarkSnapshot measures checkpointing 1M open (window, key) states:
// 10 one-minute tumbling windows × 100,000 keys, count() and a decimal
// sum, update mode, every window open. It reports the snapshot's size per
// state and the time per state of Snapshot and of Restore (into a fresh
// operator from New).
func BenchmarkSnapshot(b *testing.B) {
	const windows, keys = 10, 100_000
	const states = windows * keys
	schema := row.NewSchema()
	kf, _ := schema.Add("store_id", row.KindString)
	af, _ := schema.Add("amount", row.KindDecimal)
	build := func() *Operator {
		cnt, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
		sum, _ := aggregate.New(aggregate.Spec{Name: "revenue", Func: "sum", Arg: af, HasArg: true})
		op, err := New(Config{Assigner: &window.Fixed{Size: 60_000, Slide: 60_000}, AllowedLateness: 1 << 40, Mode: Update,
			Key: []row.Field{kf}, Aggs: []aggregate.Column{cnt, sum}})
		if err != nil {
			b.Fatal(err)
		}
		return op
	}
	op := build()
	r := schema.NewRow()
	base := int64(1_790_000_000_000)
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("store-%d", k)
		for w := 0; w < windows; w++ {
			schema.Shape(r)
			r.Set(kf, row.Str(key))
			d, _ := row.ParseDecimal([]byte(fmt.Sprintf("%d.%02d", (k*7+w)%500, (k+w)%100)))
			r.Set(af, row.Dec(d))
			if _, err := op.Process(r, base+int64(w)*60_000+int64(k%60_000), 1, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	if st := op.Stats(); st.Entries != states {
		b.Fatalf("%d states, want %d", st.Entries, states)
	}
	var e state.Encoder
	op.Snapshot(&e)
	snap := append([]byte(nil), e.Bytes()...)

	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e = *state.NewEncoder(e.Bytes())
			op.Snapshot(&e)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/states, "ns/state")
		b.ReportMetric(float64(len(snap))/states, "bytes/state")
	})
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fresh := build()
			if err := fresh.Restore(state.NewDecoder(snap)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/states, "ns/state")
		b.ReportMetric(float64(len(snap))/states, "bytes/state")
	})
}
