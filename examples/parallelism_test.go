package examples

import (
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestOnlineRetailAnyParallelism: the bundled pipeline over the real data
// (replayed late, out of order and partly twice) gives the same rows and
// versions per (hour, country), the same late, quarantine and conflict
// records and the same counters at 1, 2 and 4 tasks.
func TestOnlineRetailAnyParallelism(t *testing.T) {
	data := datatest.Dir(t)
	t.Setenv("TIDEMARK_DATA", data)
	c, err := contract.Load("online-retail/contract.yaml")
	if err != nil {
		t.Fatal(err)
	}
	build := func() *spec.Pipeline {
		p, err := tidemark.Load("online-retail/pipeline.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := contract.Apply(c, p); err != nil {
			t.Fatal(err)
		}
		// Captured in memory at each parallelism, the contributions (every
		// accepted line) would cost hundreds of MB; they change no row, and
		// TestOnlineRetailExplain checks them.
		p.Contributions = nil
		return p
	}
	out := partest.Check(t, build, c, engine.Options{}, 2, 4)
	if out.Rows() < 10_000 || len(out.Sets["quarantine"]) != 1347 || len(out.Sets["conflicts"]) == 0 {
		t.Fatalf("%d rows, %d quarantined, %d conflicts: not the example's outputs", out.Rows(), len(out.Sets["quarantine"]), len(out.Sets["conflicts"]))
	}
}
