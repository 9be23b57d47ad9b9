package nexmarkq_test

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/engine"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestQueriesDiskEqualsMemory: every bundled query on the disk backend
// with a hot tier of one byte — tumbling windows' panes written to the
// store every 256 records, the interval joins' tiers turning as often —
// gives the rows per (window, key), the versions and the counters of the
// memory backend at one task, at 1, 2 and 4 tasks; the windows of q4,
// q5 (its sliding first stage's slices and its tumbling second stage's
// panes), q7 and q9 go through the store, every partial written read
// back (q11's sessions stay in memory: docs/state.md), and so do the
// joins' rows of q3 (a regular join), q4 and q9 (interval joins) and q13
// (a temporal join's versions); q8's window join stays in memory.
func TestQueriesDiskEqualsMemory(t *testing.T) {
	r := runs[0]
	spilled := map[string]bool{}
	joined := map[string]bool{}
	for _, name := range nexmarkq.Names() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			build := func(disk bool) *spec.Pipeline {
				p, err := nexmarkq.Load(name)
				if err != nil {
					t.Fatal(err)
				}
				p.Source.Events, p.Source.Rate, p.Source.Seed = r.events, r.rate, r.seed
				if err := nexmarkq.WriteInputs(p, dir); err != nil {
					t.Fatal(err)
				}
				partest.Prepare(p)
				if disk {
					p.State = spec.State{Backend: "disk", Memory: 16 << 20}
				}
				p.Defaults()
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				return p
			}
			want := partest.Run(t, build(false), nil, 1, engine.Options{})
			for _, par := range []int{1, 2, 4} {
				got, sum := partest.RunSummary(t, build(true), nil, par, engine.Options{HotTier: 1})
				partest.Equal(t, fmt.Sprintf("memory vs disk at parallelism %d", par), want, got)
				if d := sum.DiskState; d != nil && d.WindowWrites > 0 {
					if d.WindowReads != d.WindowWrites {
						t.Fatalf("parallelism %d: %d partials written, %d read back", par, d.WindowWrites, d.WindowReads)
					}
					spilled[name] = true
				}
				if d := sum.DiskState; d != nil && d.JoinRowsWritten > 0 {
					joined[name] = true
				}
			}
		})
	}
	for _, q := range []string{"q4", "q5", "q7", "q9"} {
		if _, ok := spilled[q]; !ok && !t.Failed() {
			t.Errorf("%s: no window partial went through the store", q)
		}
	}
	for _, q := range []string{"q3", "q4", "q9", "q13"} {
		if _, ok := joined[q]; !ok && !t.Failed() {
			t.Errorf("%s: no join row went through the store", q)
		}
	}
	t.Logf("queries whose windows went through the store: %v; whose joins did: %v", spilled, joined)
}
