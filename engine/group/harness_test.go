package group

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// The set-up the group runner's tests share: compiling a pipeline, a
// groupRun before its setup, and the single-process reference a group
// run's final rows are compared with.

// compilePipeline sets p's defaults, validates it and compiles it,
// failing t on an error.
func compilePipeline(t testing.TB, p *spec.Pipeline) *plan.Plan {
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

// newTestGroupRun returns a groupRun of p before its setup, for tests
// of its steps; it is closed when the test ends.
func newTestGroupRun(t *testing.T, p *spec.Pipeline) *groupRun {
	t.Helper()
	gr := newGroupRun(compilePipeline(t, p), engine.Options{})
	t.Cleanup(gr.close)
	return gr
}

// groupReference runs the single-process reference of a group run over
// input (each partition's JSON lines, in partition order) and returns its
// final rows (groupFinal): the partitions' lines interleaved one by one,
// as a consumer of the partitions reads them, written to dir/in.jsonl
// with the partition as partition_field "p", through
// groupPipeline(lateness).
func groupReference(t *testing.T, dir string, input [][][]byte, lateness time.Duration) map[string]string {
	t.Helper()
	var all []string
	for i := 0; ; i++ {
		more := false
		for p, lines := range input {
			if i < len(lines) {
				more = true
				all = append(all, strings.Replace(string(lines[i]), "{", fmt.Sprintf(`{"p":"%d",`, p), 1))
			}
		}
		if !more {
			break
		}
	}
	path := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := groupPipeline(lateness)
	ref.Source.Path, ref.Source.PartitionField = path, "p"
	want, _ := groupFinal(t, runCapture(t, ref))
	return want
}
