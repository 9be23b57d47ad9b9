package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// TestIncrementalCheckpointBytes: with 1M dedup ids held, a checkpoint
// after 10,000 new ids arrived in 10 of 1,024 key groups (1 %) writes the
// sections of those key groups (and of the one the stage's single key
// lives in) and a manifest: at most 5 % of the full state, which the
// first checkpoint wrote; after 10,000 new ids spread over every key
// group, delta sections of the additions: at most 10 % (docs/parallelism.md,
// "Checkpoints").
func TestIncrementalCheckpointBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1M-line file")
	}
	for _, c := range []struct {
		name   string
		spread bool
		max    float64
	}{{"1% of key groups", false, 0.05}, {"every key group", true, 0.10}} {
		t.Run(c.name, func(t *testing.T) { incrementalBytes(t, c.spread, c.max) })
	}
}

func incrementalBytes(t *testing.T, spread bool, maxShare float64) {
	const held, fresh, groups = 1_000_000, 10_000, 1024
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	line := func(i int, id string) {
		fmt.Fprintf(w, `{"ts":%d,"id":"%s","store":"s","amount":%d}`+"\n", base+int64(i/100), id, i%90)
	}
	for i := range held {
		line(i, fmt.Sprintf("a%d", i))
	}
	changed := map[int]bool{}
	for i, j := held, 0; i < held+fresh; j++ {
		id := fmt.Sprintf("b%d", j)
		if kg := keygroup.OfHash(dedup.IDHash([]byte(id)), groups); spread || kg%103 == 0 {
			changed[kg] = true
			line(i, id)
			i++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if want := map[bool]int{false: 10, true: groups}[spread]; len(changed) != want {
		t.Fatalf("%d key groups changed, want %d", len(changed), want)
	}

	build := func(t *testing.T) *plan.Plan {
		p := &spec.Pipeline{
			Name:      "incremental",
			KeyGroups: groups,
			Source: spec.Source{Type: "file", Path: in, Format: "jsonl",
				Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime:  spec.EventTime{Field: "ts", Format: "epoch_ms", OutOfOrderness: spec.Duration(time.Second)},
			Dedup:      &spec.Dedup{Key: "id", TTL: spec.Duration(24 * time.Hour)},
			Key:        []string{"store"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
			Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
			Emit:       spec.Emit{Mode: "final"},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(dir, "out.jsonl")}},
			Checkpoint: &spec.Checkpoint{Dir: filepath.Join(dir, "ck"), Interval: spec.Duration(time.Hour), Retain: 2},
		}
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
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "ck"))
			ctx, cancel := context.WithCancel(context.Background())
			first, err := engine.Run(ctx, build(t), engine.Options{Parallelism: par, BatchSize: 1000,
				ProgressEvery: held, Progress: func(engine.Progress) { cancel() }})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if !first.Stopped || first.EventsRead < held || first.EventsRead >= held+fresh/2 {
				t.Fatalf("the first run stopped %v after %d events", first.Stopped, first.EventsRead)
			}
			second, err := engine.Run(context.Background(), build(t), engine.Options{Parallelism: par, BatchSize: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if second.Checkpoints.Restored == 0 || second.EventsRead != held+fresh || second.Duplicates != 0 {
				t.Fatalf("second run: restored %d, read %d, %d duplicates", second.Checkpoints.Restored, second.EventsRead, second.Duplicates)
			}
			full, incr := first.Checkpoints.LastBytes, second.Checkpoints.LastBytes
			t.Logf("parallelism %d: full checkpoint %d bytes (%.1f bytes per id, %v), after %d new ids in %d key groups %d bytes (%.2f%%, %v)",
				par, full, float64(full)/held, first.Checkpoints.LastDuration, fresh, len(changed), incr, 100*float64(incr)/float64(full), second.Checkpoints.LastDuration)
			if full < 8*held || float64(incr) > maxShare*float64(full) {
				t.Fatalf("full checkpoint %d bytes, incremental %d bytes: want ≤ %.0f%%", full, incr, 100*maxShare)
			}
		})
	}
}
