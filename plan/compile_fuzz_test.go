package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// FuzzCompile: no pipeline that spec.Parse accepts makes Compile panic;
// it compiles or returns an error. Seeds: the bundled example pipelines
// and multi-stage pipelines whose later stages read failing ones.
//
//	go test -run XXX -fuzz=FuzzCompile -fuzztime=60s ./plan
func FuzzCompile(f *testing.F) {
	for _, glob := range []string{"../examples/nexmark/*.yaml", "../examples/online-retail/pipeline.yaml", "../examples/article/pipeline.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("name: p\nsource: {type: file, path: e.jsonl}\nevent_time: {field: ts}\nstages:\n  - {name: a, window: {type: tumbling, size: 1m}, aggregates: {n: count()}}\n  - {name: b, window: {type: tumbling, size: 1m}, aggregates: {m: max(n)}, emit: {mode: retract}}\n  - {name: c, window: {type: tumbling, size: 1m}, aggregates: {k: sum(m)}}\n"))
	f.Add([]byte("name: p\nsource: {type: file, path: e.jsonl, schema: {id: int}}\nevent_time: {field: ts}\ninputs:\n  - {name: r, source: {type: file, path: r.jsonl, schema: {id: int}}, event_time: {field: ts}}\nstages:\n  - {name: j, join: {type: interval, kind: left, left: {as: L}, right: {input: r, as: R}, on: ['L.k = R.k'], between: {lower: 0s, upper: 1m}, select: {a: L.id, b: R.id}}, emit: {mode: retract}}\n  - {name: s, input: j, key: [a], window: {type: tumbling, size: 1m}, aggregates: {n: count(), x: sum(b)}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := spec.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		_, _ = Compile(p, nil)
	})
}
