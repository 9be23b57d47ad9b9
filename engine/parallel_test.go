package engine_test

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestScenariosAnyParallelism runs every scenario of testdata/scenarios at
// parallelism 1, 2, 4 and 8 and requires the same canonical outputs: for
// every (stage, window, key) the same rows in the same order, the same
// side-output records, the same counters (docs/semantics.md,
// "Parallelism").
func TestScenariosAnyParallelism(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		var y string
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "pipeline":
				y = td.Input
				return td.Expected
			case "run":
				if strings.HasPrefix(td.Expected, "error:") {
					return td.Expected // a run that stops with an error
				}
				dir := t.TempDir()
				p, err := engine.ScenarioSpec(t, y, td, dir)
				if err != nil {
					return td.Expected // a refused pipeline: nothing to compare
				}
				if err := engine.WriteScenarioInputs(p, td.Input); err != nil {
					t.Fatal(err)
				}
				build := func() *spec.Pipeline {
					q, err := engine.ScenarioSpec(t, y, td, dir)
					if err != nil {
						t.Fatal(err)
					}
					return q
				}
				partest.Check(t, build, nil, engine.Options{Clock: func() int64 { return engine.ScenarioClock }}, 2, 4, 8)
				return td.Expected
			}
			return td.Expected
		})
	})
}
