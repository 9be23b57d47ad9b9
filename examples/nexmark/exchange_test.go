package nexmarkq_test

import (
	"testing"

	"github.com/tidemark/tidemark/engine"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestQueriesTinyExchange: every bundled query, on the first seeded run,
// gives one task's rows, versions and counters at 2 and 3 tasks with an
// exchange of one byte and firings of 16 rows (docs/parallelism.md, "The
// exchange"): each sending node hands its packets on at every check and
// waits until they are taken, so every merge of a node's inputs is
// decided as they stream, by the senders' promises. A schedule that
// could deadlock would hang here.
func TestQueriesTinyExchange(t *testing.T) {
	r := runs[0]
	for _, name := range nexmarkq.Names() {
		t.Run(name, func(t *testing.T) {
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
			partest.Check(t, build, nil, engine.Options{ExchangeMemory: 1, FireChunk: 16}, 2, 3)
		})
	}
}
