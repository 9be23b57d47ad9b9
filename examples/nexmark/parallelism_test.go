package nexmarkq_test

import (
	"testing"

	"github.com/tidemark/tidemark/engine"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestQueriesAnyParallelism: every bundled query gives the same rows per
// (window, key), the same versions and the same counters at 1, 2, 4 and 8
// tasks (docs/parallelism.md, "Determinism"), on both seeded runs.
func TestQueriesAnyParallelism(t *testing.T) {
	for _, name := range nexmarkq.Names() {
		for _, r := range runs {
			t.Run(name+"/"+r.name, func(t *testing.T) {
				dir := t.TempDir()
				build := func() *spec.Pipeline {
					p, err := nexmarkq.Load(name)
					if err != nil {
						t.Fatal(err)
					}
					p.Source.Events, p.Source.Rate, p.Source.Seed = r.events, r.rate, r.seed
					if err := nexmarkq.WriteInputs(p, dir); err != nil {
						t.Fatal(err)
					}
					return p
				}
				out := partest.Check(t, build, nil, engine.Options{}, 2, 4, 8)
				n := out.Rows()
				for _, recs := range out.Sets {
					n += len(recs) // stateless queries' rows
				}
				if n == 0 {
					t.Fatal("no rows")
				}
			})
		}
	}
}
