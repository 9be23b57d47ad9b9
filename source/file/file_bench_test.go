package file

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// writeOrderEvents writes n payment events like
// {"event_id":"e1","event_type":"PAYMENT","order_id":"O1","store_id":"store-7","currency":"KRW","amount":25000,"paid_at":"2026-09-01T10:02:00+09:00"}
// one per 100 ms, and returns the file's path and size.
func writeOrderEvents(b *testing.B, n int) (string, int64) {
	p := filepath.Join(b.TempDir(), "orders.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.FixedZone("KST", 9*3600))
	for i := 1; i <= n; i++ {
		ts := t0.Add(time.Duration(i) * 100 * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
		fmt.Fprintf(w, `{"event_id":"e%d","event_type":"PAYMENT","order_id":"O%d","store_id":"store-%d","currency":"KRW","amount":%d,"paid_at":"%s"}`+"\n",
			i, i/3, i%50, 1000+i%97*250, ts)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	return p, st.Size()
}

func orderConfig(b *testing.B, path string, replay *spec.Replay) Config {
	return Config{
		Spec:           spec.Source{Path: path, Replay: replay},
		Fields:         testFields(b, "event_id:string", "event_type:string", "order_id:string", "store_id:string", "currency:string", "amount:decimal", "paid_at:timestamp"),
		EventTimeField: "paid_at",
	}
}

// readAll reads the whole source and returns the number of records.
func readAll(b *testing.B, cfg Config) int {
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var batch source.Batch
	n := 0
	for {
		batch.Reset()
		st, err := s.Next(context.Background(), &batch, 1024)
		for i := range batch.Meta {
			if batch.Meta[i].Err != nil {
				b.Fatal(batch.Meta[i].Err)
			}
		}
		n += batch.Len()
		if st == source.End {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

const benchEvents = 1_000_000

// BenchmarkJSONLSource reads a file of 1M order events through the file
// source (read, decode, position, raw copy) in batches of 1024.
func BenchmarkJSONLSource(b *testing.B) {
	path, size := writeOrderEvents(b, benchEvents)
	cfg := orderConfig(b, path, nil)
	b.SetBytes(size)
	b.ReportAllocs()
	start := time.Now()
	runs := 0
	for b.Loop() {
		if n := readAll(b, cfg); n != benchEvents {
			b.Fatalf("%d records", n)
		}
		runs++
	}
	b.ReportMetric(float64(runs*benchEvents)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkJSONLSourceReplay is BenchmarkJSONLSource with a replay
// shuffle (30 s delay, 1% stragglers up to 5 min, 0.1% redeliveries, 8
// partitions by store).
func BenchmarkJSONLSourceReplay(b *testing.B) {
	path, size := writeOrderEvents(b, benchEvents)
	cfg := orderConfig(b, path, &spec.Replay{Seed: 1, Delay: spec.Duration(30 * time.Second), MaxDelay: spec.Duration(5 * time.Minute),
		StragglerFraction: 0.01, RedeliverFraction: 0.001, Partitions: 8, PartitionBy: "store_id"})
	b.SetBytes(size)
	b.ReportAllocs()
	start := time.Now()
	runs := 0
	for b.Loop() {
		if n := readAll(b, cfg); n < benchEvents {
			b.Fatalf("%d records", n)
		}
		runs++
	}
	b.ReportMetric(float64(runs*benchEvents)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkCSVSourceOnlineRetail reads the 541,909 Online Retail lines
// (305 files) when the data set is present.
func BenchmarkCSVSourceOnlineRetail(b *testing.B) {
	dir := retailDir(b)
	cfg := retailConfig(b, dir, nil)
	b.ReportAllocs()
	start := time.Now()
	runs := 0
	for b.Loop() {
		if n := readAll(b, cfg); n != 541909 {
			b.Fatalf("%d records", n)
		}
		runs++
	}
	b.ReportMetric(float64(runs*541909)/time.Since(start).Seconds(), "records/s")
}
