package operator

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// TestFiringInBoundedChunks: when the watermark passes the end of 1,000
// open windows (one per key, tumbling and session), AdvanceWatermarkLimit
// with limit 64 emits them in 16 chunks — 15 of 64 rows and one of 40 —
// each drained before the next ContinueAdvance, so a firing never holds
// more than about limit rows (the peak memory of the end of a bounded
// input); together the chunks are every window once.
func TestFiringInBoundedChunks(t *testing.T) {
	const keys, limit = 1000, 64
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"tumbling", Config{Assigner: &window.Fixed{Size: minute, Slide: minute}}},
		{"session", Config{Gap: 10 * minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, kf, vf := testSchema(t)
			count, _ := aggregate.New(aggregate.Spec{Name: "n", Func: "count"})
			cfg := tc.cfg
			cfg.Mode, cfg.Key, cfg.Aggs = Final, []row.Field{kf}, []aggregate.Column{count}
			op, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := schema.NewRow()
			for i := range keys {
				schema.Shape(r)
				r.Set(kf, row.Str(fmt.Sprintf("k%04d", i)))
				r.Set(vf, row.Int(1))
				if _, err := op.Process(r, 30_000, 1, 0); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(op.Drain()); n != 0 {
				t.Fatalf("final mode emitted %d rows before the watermark", n)
			}
			seen := map[string]bool{}
			var sizes []int
			more := op.AdvanceWatermarkLimit(60*minute, 0, limit)
			for {
				rows := op.Drain()
				sizes = append(sizes, len(rows))
				for _, rw := range rows {
					seen[rw.Key[0].S] = true
				}
				if !more {
					break
				}
				more = op.ContinueAdvance(limit)
			}
			want := "[64 64 64 64 64 64 64 64 64 64 64 64 64 64 64 40]"
			if fmt.Sprint(sizes) != want || len(seen) != keys {
				t.Fatalf("chunks %v (%d keys), want %s (%d keys)", sizes, len(seen), want, keys)
			}
		})
	}
}
