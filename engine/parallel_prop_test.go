package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestRandomPipelinesAnyParallelism: random events (late, out of order,
// redelivered, conflicting, in several versions, some far ahead of their
// arrival) through random pipeline shapes — dedup, order_by, tumbling,
// sliding (size a multiple of slide or not) and session windows, every
// emit mode, early firings, idle advance, a max_future that quarantines, a second stage keyed by the first's window
// whose event time is the upstream window_start (so upstream firings land
// in windows of the second stage that have fired: late updates whose order
// matters) — give the same canonical outputs at parallelism 1, 2, 3 and 5
// over 8 key groups, in batches of a random size, and read one record at
// a time. Half the cases read an unpartitioned file without arrival times
// (processing time from a fixed clock), JSONL or CSV (quoted fields with
// separators, doubled quotes and line breaks), which decoders decode
// beside the router at 2, 3 and 5 tasks (as many as tasks;
// engine/decoders.go): the outputs equal the one-task run's, which reads
// with Next. The other half, with partitions and arrival times read from
// the records, are decoded beside the router too and finished by it in
// claim order (source.Finisher); half of those are delivered by a
// seeded replay instead (delays, redeliveries, conflicting copies, an
// ordinal per order), fed the decoded batches in claim order
// (source.Reorderer).
func TestRandomPipelinesAnyParallelism(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 120).Draw(rt, "events")
		split := rapid.Bool().Draw(rt, "split")
		// A file without partitions or arrival times is decoded by
		// decoders as JSONL or as CSV (with quoted stores: separators,
		// doubled quotes and line breaks inside quotes).
		csv := split && rapid.Bool().Draw(rt, "csv")
		// Or a seeded replay of the file, with an ordinal per order
		// (the router feeds the decoded batches to it: Reorderer).
		replay := !split && rapid.Bool().Draw(rt, "replay")
		replaySeed := rapid.Int64().Draw(rt, "replaySeed")
		stores := []string{"S1", "S2", "S3", "S4", "S5", "S6", "S7"}
		if csv {
			stores = []string{"S1", "S2", `"S3, east"`, `"S4 ""x"""`, "\"S5\nwest\"", "\"S6\r\n\"", "S7"}
		}
		var b strings.Builder
		if csv {
			b.WriteString("at,ts,event_id,order_id,version,store,cur,amount,p\n")
		}
		at := base
		for i := range n {
			id := rapid.IntRange(0, n).Draw(rt, "id")
			ts := base.Add(time.Duration(rapid.IntRange(0, 40*60).Draw(rt, "second")) * time.Second)
			at = at.Add(time.Duration(rapid.IntRange(0, 40).Draw(rt, "gap")) * time.Second)
			format := `{"at":"%s","ts":"%s","event_id":"e%d","order_id":"o%d","version":%d,"store":"%s","cur":"%s","amount":%d,"p":"%d"}` + "\n"
			if csv {
				format = "%s,%s,e%d,o%d,%d,%s,%s,%d,%d\n"
			}
			fmt.Fprintf(&b, format,
				at.Format(time.RFC3339), ts.Format(time.RFC3339), id, rapid.IntRange(0, 12).Draw(rt, "order"), i,
				rapid.SampledFrom(stores).Draw(rt, "store"),
				rapid.SampledFrom([]string{"KRW", "USD"}).Draw(rt, "cur"),
				rapid.IntRange(-5, 500).Draw(rt, "amount"), rapid.IntRange(0, 2).Draw(rt, "partition"))
		}
		in := filepath.Join(dir, "in.jsonl")
		if csv {
			in = filepath.Join(dir, "in.csv")
		}
		if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
			rt.Fatal(err)
		}
		mode := rapid.SampledFrom([]string{"final", "update", "retract"}).Draw(rt, "mode")
		win := rapid.SampledFrom([]string{"tumbling", "sliding", "session"}).Draw(rt, "window")
		pre := rapid.SampledFrom([]string{"none", "dedup", "order_by", "both"}).Draw(rt, "pre")
		twoStages := rapid.Bool().Draw(rt, "twoStages")
		lateness := spec.Duration(time.Duration(rapid.SampledFrom([]int{0, 2, 10}).Draw(rt, "lateness")) * time.Minute)
		early := spec.Duration(0)
		if mode != "final" && rapid.Bool().Draw(rt, "early") {
			early = spec.Duration(30 * time.Second)
		}
		mode2 := rapid.SampledFrom([]string{"update", "retract"}).Draw(rt, "mode2")
		// A slide of which the size is a multiple, or not (5m / 2m).
		slide := spec.Duration(time.Duration(rapid.SampledFrom([]int{1, 2}).Draw(rt, "slide")) * time.Minute)
		idleAdvance := rapid.Bool().Draw(rt, "idleAdvance")
		// max_future at its default (nothing breaks it), or 10m: events
		// more than 10 minutes after their arrival are quarantined.
		var maxFuture *spec.Duration
		if rapid.Bool().Draw(rt, "maxFuture") {
			d := spec.Duration(10 * time.Minute)
			maxFuture = &d
		}
		build := func() *spec.Pipeline {
			w := spec.Window{Type: win, Size: spec.Duration(5 * time.Minute)}
			switch win {
			case "sliding":
				w.Slide = slide
			case "session":
				w = spec.Window{Type: "session", Gap: spec.Duration(3 * time.Minute)}
			}
			p := &spec.Pipeline{
				Name:      "par",
				KeyGroups: 8,
				Source: spec.Source{Type: "file", Path: in, Format: "jsonl", ArrivalTimeField: "at", PartitionField: "p",
					Schema: spec.FieldTypes{{Name: "amount", Type: "int"}, {Name: "version", Type: "int"}}},
				EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Minute), IdleTimeout: spec.Duration(5 * time.Minute),
					IdleAdvance: idleAdvance, MaxFuture: maxFuture},
			}
			if split {
				p.Source.ArrivalTimeField, p.Source.PartitionField = "", ""
			}
			if replay {
				p.Source.ArrivalTimeField, p.Source.PartitionField = "", ""
				p.Source.Ordinal = &spec.Ordinal{Field: "line", Per: "order_id"}
				p.Source.Replay = &spec.Replay{Seed: replaySeed, Delay: spec.Duration(time.Minute), StragglerFraction: 0.1,
					MaxDelay: spec.Duration(20 * time.Minute), RedeliverFraction: 0.1, ConflictFraction: 0.05,
					ConflictField: "amount", Partitions: 2, PartitionBy: "store"}
			}
			if csv {
				p.Source.Format = "csv"
			}
			if pre == "dedup" || pre == "both" {
				p.Dedup = &spec.Dedup{Key: "event_id", TTL: spec.Duration(20 * time.Minute)}
			}
			if pre == "order_by" || pre == "both" {
				p.OrderBy = &spec.OrderBy{Key: "order_id", Version: "version"}
			}
			first := spec.Stage{
				Name: "per_store", Filter: "amount != 13", Fields: spec.NamedExprs{{Name: "big", Expr: "amount > 100"}},
				Key: []string{"store", "cur"}, Window: w, AllowedLateness: lateness,
				Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}, {Name: "most", Expr: "max(amount)"}},
				Emit:       spec.Emit{Mode: mode, EarlyEvery: early},
				Late:       spec.Late{Policy: "side_output"},
			}
			if replay {
				first.Aggregates = append(first.Aggregates, spec.NamedExpr{Name: "lines", Expr: "sum(line)"})
			}
			if !twoStages {
				p.Stages = []spec.Stage{first}
				return p
			}
			if mode == "update" {
				first.Emit.Mode = "retract"
			}
			second := spec.Stage{
				Name: "per_window", Input: "per_store",
				EventTime: &spec.EventTime{Field: "window_start", Format: "rfc3339"},
				Fields:    spec.NamedExprs{{Name: "w", Expr: "window_start"}},
				Key:       []string{"w", "cur"},
				Window:    spec.Window{Type: "tumbling", Size: spec.Duration(2 * time.Minute)}, AllowedLateness: spec.Duration(30 * time.Minute),
				Aggregates: spec.NamedExprs{{Name: "stores", Expr: "count()"}, {Name: "sum", Expr: "sum(total)"},
					{Name: "least", Expr: "min(total)"}},
				Emit: spec.Emit{Mode: mode2},
				Late: spec.Late{Policy: "side_output"},
			}
			if first.Emit.Mode == "final" {
				second.Aggregates = append(second.Aggregates, spec.NamedExpr{Name: "top", Expr: "arg_max(total, store)"})
			}
			p.Stages = []spec.Stage{first, second}
			return p
		}
		opts := engine.Options{FireChunk: rapid.IntRange(1, 5).Draw(rt, "fireChunk"),
			BatchSize: rapid.SampledFrom([]int{1024, 1, 2, 7, 33}).Draw(rt, "batch")}
		if split {
			now := base.Add(30 * time.Minute).UnixMilli()
			opts.Clock = func() int64 { return now }
		}
		ref := partest.Check(rt, build, nil, opts, 2, 3, 5)
		if ref.Summary == "" {
			rt.Fatal("no summary")
		}
		// Nor on the read batches (docs/semantics.md, "Watermarks"): the
		// file read one record at a time.
		p := build()
		partest.Prepare(p)
		p.Defaults()
		if err := p.Validate(); err != nil {
			rt.Fatal(err)
		}
		opts.BatchSize = 1
		partest.Equal(rt, fmt.Sprintf("batch size %d vs 1", opts.BatchSize), ref, partest.Run(rt, p, nil, 1, opts))
	})
}
