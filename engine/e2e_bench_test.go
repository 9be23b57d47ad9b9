package engine

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// writeOrders writes n order events as JSONL (the first article's schema):
// 1,000 stores, two currencies, one event per 10 ms of event time, 5% of
// events up to 60 s out of order, 10% refunds, 2% other event types.
func writeOrders(tb testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 6, 24, 0, 0, 0, 0, time.FixedZone("KST", 9*3600))
	types := []string{"PAYMENT", "REFUND", "VIEW"}
	for i := 0; i < n; i++ {
		ts := base.Add(time.Duration(i) * 10 * time.Millisecond)
		if rng.IntN(100) < 5 {
			ts = ts.Add(-time.Duration(rng.IntN(60_000)) * time.Millisecond)
		}
		typ := types[0]
		switch r := rng.IntN(100); {
		case r < 10:
			typ = types[1]
		case r < 12:
			typ = types[2]
		}
		cur := "KRW"
		if rng.IntN(10) == 0 {
			cur = "USD"
		}
		fmt.Fprintf(w, `{"event_id":"evt-%d","event_type":%q,"event_version":1,"order_id":"ord-%d","store_id":"store-%d","amount":%d.%02d,"currency":%q,"paid_at":%q,"produced_at":%q}`+"\n",
			i, typ, i/2, rng.IntN(1000), rng.IntN(100000), rng.IntN(100), cur,
			ts.Format(time.RFC3339Nano), ts.Add(2*time.Second).Format(time.RFC3339Nano))
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// BenchmarkJSONLEndToEnd runs the first article's revenue_minute pipeline
// on 1M JSONL events: file source → decode → filter → derived field →
// 1-minute tumbling sum and count per (store, currency) → JSONL changelog
// sink. It reports events/s and events per CPU-second (process CPU time,
// so the figure is per core).
func BenchmarkJSONLEndToEnd(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	in := filepath.Join(dir, "orders.jsonl")
	writeOrders(b, in, n)
	p := &spec.Pipeline{
		Name: "revenue_minute",
		Source: spec.Source{Type: "file", Path: in, Format: "jsonl",
			Schema: spec.FieldTypes{{Name: "amount", Type: "decimal"}}},
		EventTime:       spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Minute)},
		Filter:          `event_type in ["PAYMENT", "REFUND"]`,
		Fields:          spec.NamedExprs{{Name: "delta", Expr: `event_type == "REFUND" ? -amount : amount`}},
		Key:             []string{"store_id", "currency"},
		Window:          spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute), Timezone: "Asia/Seoul"},
		AllowedLateness: spec.Duration(3 * time.Minute),
		Aggregates:      spec.NamedExprs{{Name: "order_count", Expr: "count()"}, {Name: "revenue_amount", Expr: "sum(delta)"}},
		Emit:            spec.Emit{Mode: "update"},
		Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(dir, "out.jsonl")}},
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		b.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var events int64
	var cpu, wall time.Duration
	for i := 0; i < b.N; i++ {
		sum, err := Run(context.Background(), pl, Options{})
		if err != nil {
			b.Fatal(err)
		}
		events += sum.EventsRead
		cpu += sum.CPU
		wall += sum.Wall
	}
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
}

// BenchmarkCheckpointOverhead runs the pipeline of BenchmarkJSONLEndToEnd
// with dedup (1h of ids) twice per iteration, alternately without
// checkpoints and with a checkpoint every second (exactly-once JSONL
// sink), and reports the CPU time of each and the overhead of
// checkpointing in percent (target ≤ 10%, issue #4).
func BenchmarkCheckpointOverhead(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	in := filepath.Join(dir, "orders.jsonl")
	writeOrders(b, in, n)
	compile := func(ck bool) *plan.Plan {
		p := &spec.Pipeline{
			Name: "revenue_minute",
			Source: spec.Source{Type: "file", Path: in, Format: "jsonl",
				Schema: spec.FieldTypes{{Name: "amount", Type: "decimal"}}},
			EventTime:       spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Minute)},
			Dedup:           &spec.Dedup{Key: "event_id", TTL: spec.Duration(time.Hour)},
			Filter:          `event_type in ["PAYMENT", "REFUND"]`,
			Fields:          spec.NamedExprs{{Name: "delta", Expr: `event_type == "REFUND" ? -amount : amount`}},
			Key:             []string{"store_id", "currency"},
			Window:          spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute), Timezone: "Asia/Seoul"},
			AllowedLateness: spec.Duration(3 * time.Minute),
			Aggregates:      spec.NamedExprs{{Name: "order_count", Expr: "count()"}, {Name: "revenue_amount", Expr: "sum(delta)"}},
			Emit:            spec.Emit{Mode: "update"},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(dir, fmt.Sprintf("out-%v.jsonl", ck))}},
		}
		if ck {
			p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(dir, "ck"), Interval: spec.Duration(time.Second), Retain: 2}
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			b.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		return pl
	}
	plain, ck := compile(false), compile(true)
	if only := os.Getenv("TIDEMARK_BENCH_ONLY"); only != "" {
		// For profiles of one variant: plain or ckpt.
		pl := plain
		if only == "ckpt" {
			pl = ck
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			os.RemoveAll(filepath.Join(dir, "ck"))
			if _, err := Run(context.Background(), pl, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.ResetTimer()
	var cpuPlain, cpuCk time.Duration
	var taken, bytes int
	for i := 0; i < b.N; i++ {
		for _, c := range []bool{false, true} {
			pl := plain
			if c {
				pl = ck
				os.RemoveAll(filepath.Join(dir, "ck"))
			}
			sum, err := Run(context.Background(), pl, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if c {
				cpuCk += sum.CPU
				taken += sum.Checkpoints.Taken
				bytes = sum.Checkpoints.LastBytes
			} else {
				cpuPlain += sum.CPU
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/cpuPlain.Seconds(), "events/cpu-s_plain")
	b.ReportMetric(float64(n*b.N)/cpuCk.Seconds(), "events/cpu-s_ckpt")
	b.ReportMetric(100*(cpuCk.Seconds()/cpuPlain.Seconds()-1), "overhead_%")
	b.ReportMetric(float64(taken)/float64(b.N), "checkpoints/run")
	b.ReportMetric(float64(bytes), "checkpoint_bytes")
}
