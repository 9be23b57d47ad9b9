package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/datadriven"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// TestExchangePeakBytes: Summary.ExchangePeakBytes is 0 at one task (no
// packets) and, at two and three tasks, within the exchange's bound
// while one firing sends far more than the bound to the next stage:
// keys distinct keys in one hour-long window that closes at the end of
// the input, so the first stage's every row (RowsEmitted) crosses to the
// second stage in the last round — at least an item and its 29-byte
// firing tail each, 2.6 MB for 21,000 rows, where the bound is 64 KiB.
// Each sending node (the first stage's, one per task) may pass its share
// by what it makes between two checks: 64 rows of a firing, whatever its
// chunk (FireChunk 64, and the default 4,096, whose chunk of rows alone
// would be about 1.2 MB), or 64 items, each row one item of at most 512
// bytes here. The second stage's rows are exact: total t = i mod 7 of key i,
// so each total counts keys/7 keys. A bound larger than the firing (the
// default, 8 MiB) holds it whole. Mutation: the old exchange, which
// handed a node's whole round on at once, held 2.6 MB here.
func TestExchangePeakBytes(t *testing.T) {
	const keys = 21000
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range keys {
		fmt.Fprintf(&b, `{"ts":%q,"k":"k%d","amount":%d}`+"\n", base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i, i%7)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := func(out string) *spec.Pipeline {
		return &spec.Pipeline{
			Name: "exchange", KeyGroups: 16,
			Source: spec.Source{Type: "file", Path: in, Format: "jsonl",
				Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)},
			Stages: []spec.Stage{{
				Name: "per_key", Key: []string{"k"}, Window: spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
				Aggregates: spec.NamedExprs{{Name: "total", Expr: "sum(amount)"}},
				Emit:       spec.Emit{Mode: "final"},
			}, {
				Name: "per_total", Input: "per_key", Key: []string{"total"},
				Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
				Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
				Emit:       spec.Emit{Mode: "final"},
				Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "b.jsonl")}},
			}},
		}
	}
	const bound = 64 << 10
	for _, c := range []struct {
		par   int
		limit int64 // Options.ExchangeMemory, 0: the default
		chunk int   // Options.FireChunk, 0: the default (4,096 rows)
	}{{1, bound, 64}, {2, bound, 64}, {3, bound, 64}, {2, 0, 64}, {2, bound, 0}, {3, bound, 0}} {
		out := filepath.Join(dir, fmt.Sprint(c.par, "-", c.limit, "-", c.chunk))
		pl := compiled(t, pipeline(out))
		sum, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: c.par, BatchSize: 100,
			FireChunk: c.chunk, ExchangeMemory: c.limit})
		if err != nil {
			t.Fatalf("parallelism %d: %v", c.par, err)
		}
		if got := sum.Stages[0].RowsEmitted; got != keys {
			t.Fatalf("parallelism %d: per_key emitted %d rows, want %d", c.par, got, keys)
		}
		counts := map[int64]int64{}
		f, err := os.ReadFile(filepath.Join(out, "b.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(f)), "\n") {
			var r struct{ Total, N int64 }
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			counts[r.Total] += r.N
		}
		for tot := range int64(7) {
			if counts[tot] != keys/7 {
				t.Fatalf("parallelism %d: total %d counted %d keys, want %d (%v)", c.par, tot, counts[tot], keys/7, counts)
			}
		}
		if len(counts) != 7 {
			t.Fatalf("parallelism %d: totals %v, want 0..6", c.par, counts)
		}
		peak := sum.ExchangePeakBytes
		if c.par == 1 {
			if peak != 0 {
				t.Fatalf("parallelism 1: exchange peak %d bytes, want 0", peak)
			}
			continue
		}
		if peak <= 0 {
			t.Fatalf("parallelism %d: exchange peak %d bytes: the firing crossed no packet", c.par, peak)
		}
		whole := int64(keys) * int64(unsafe.Sizeof(task.Item{})+29)
		limit := c.limit
		if limit == 0 {
			limit = int64(spec.DefaultExchangeMemory)
		}
		// Each sender may pass its share by what it makes between two
		// checks: 64 rows of a firing (whatever FireChunk is) or 64
		// items, each well under 512 bytes in a packet (an Item, its
		// 29-byte tail, the input row's copy: 96 bytes and 6 slots).
		slack := int64(c.par) * (64 + 64) * 512
		if peak > limit+slack {
			t.Fatalf("parallelism %d: exchange peak %d bytes, above the bound %d + %d", c.par, peak, limit, slack)
		}
		if c.limit > 0 && limit+slack >= whole {
			t.Fatalf("the bound %d + %d holds the whole firing (%d): the test tests nothing", limit, slack, whole)
		}
		t.Logf("parallelism %d, bound %d: exchange peak %d bytes (the firing: at least %d)", c.par, limit, peak, whole)
	}
}

// TestScenariosTinyExchange runs every scenario of testdata/scenarios at
// 2, 3 and 5 tasks with an exchange of one byte and firings of two rows:
// every sending node hands on its packets at every check and waits until
// its receivers have taken them, so every node takes its inputs as they
// stream, with promises (task.Bound) deciding each merge. The outputs must
// equal one task's exactly (as TestScenariosAnyParallelism's), and no run
// may deadlock.
func TestScenariosTinyExchange(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		var y string
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "pipeline":
				y = td.Input
				return td.Expected
			case "run":
				if strings.HasPrefix(td.Expected, "error:") {
					return td.Expected
				}
				dir := t.TempDir()
				p, err := engine.ScenarioSpec(t, y, td, dir)
				if err != nil {
					return td.Expected
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
				partest.Check(t, build, nil, engine.Options{Clock: func() int64 { return engine.ScenarioClock },
					ExchangeMemory: 1, FireChunk: 2}, 2, 3, 5)
				return td.Expected
			}
			return td.Expected
		})
	})
}
