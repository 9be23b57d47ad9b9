package engine_test

import (
	"testing"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// compiled fills p's defaults, validates it and compiles it, failing the
// test on an error.
func compiled(t *testing.T, p *spec.Pipeline) *plan.Plan {
	t.Helper()
	p.Defaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}
