package tidemark_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
)

// compileJob loads the pipeline file at path (YAML or SQL, by its
// extension) and compiles it, failing t on either error.
func compileJob(t *testing.T, path string) *plan.Plan {
	t.Helper()
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// runJob runs a compiled plan to the end of its input at par tasks, its
// log discarded, failing t on an error.
func runJob(t *testing.T, pl *plan.Plan, par int) {
	t.Helper()
	if _, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: par, Logf: func(string, ...any) {}}); err != nil {
		t.Fatal(err)
	}
}

// readJSONL reads a JSONL sink's file into one map per line, in file
// order, failing t on a line that is not a JSON object. It returns the
// file's bytes too, for a failure message.
func readJSONL(t *testing.T, path string) ([]map[string]any, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		rows = append(rows, m)
	}
	return rows, data
}
