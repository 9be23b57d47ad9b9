package engine_test

import (
	"testing"

	"github.com/tidemark/tidemark/backfill"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// TestSpecHashBackfill: a backfill computes what its pipeline computes, so
// its rows' lineage names the same spec hash — whatever outputs it moves
// to the result version, the contributions output among them; a change
// of the computation (the window's size) changes the hash.
func TestSpecHashBackfill(t *testing.T) {
	for _, src := range []string{`name: revenue
source: {type: file, path: events.jsonl}
event_time: {field: ts}
key: [store]
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
contributions: {sink: {type: jsonl, path: out/contrib.jsonl}}
late: {policy: side_output, sink: {type: jsonl, path: out/late.jsonl}}
sinks: [{type: sqlite, path: out/t.db}]
`, `name: revenue
source: {type: file, path: events.jsonl}
event_time: {field: ts}
quarantine: {sink: {type: jsonl, path: out/q.jsonl}}
stages:
  - name: per-store
    key: [store]
    window: {type: tumbling, size: 1m}
    aggregates: {n: count()}
    contributions: {sink: {type: jsonl, path: out/contrib.jsonl}}
    sinks: [{type: jsonl, path: out/rows.jsonl}]
`} {
		decode := func(text string) *spec.Pipeline {
			p, err := spec.Decode("p.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			p.Defaults()
			return p
		}
		run, bf := decode(src), decode(src)
		if err := backfill.Apply(bf, "v2"); err != nil {
			t.Fatal(err)
		}
		if got, want := engine.SpecHash(bf), engine.SpecHash(run); got != want {
			t.Errorf("the backfill's spec hash %s, the run's %s (spec %q)", got, want, src[:40])
		}
		other := decode(src)
		if len(other.Stages) > 0 {
			other.Stages[0].Window.Size = spec.Duration(2 * 60_000_000_000)
		} else {
			other.Window.Size = spec.Duration(2 * 60_000_000_000)
		}
		if engine.SpecHash(other) == engine.SpecHash(run) {
			t.Errorf("a 2m window hashes as the 1m window")
		}
	}
}
