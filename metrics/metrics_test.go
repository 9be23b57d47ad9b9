package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// scrape returns the exporter's metrics text.
func scrape(t *testing.T, x *Exporter) string {
	t.Helper()
	srv := httptest.NewServer(x.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// has fails unless the metrics text holds each line exactly.
func has(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(l) + `$`).MatchString(text) {
			t.Errorf("no line %q in\n%s", l, grep(text, strings.Fields(l)[0][:strings.IndexAny(strings.Fields(l)[0]+"{", "{")]))
		}
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func compile(t *testing.T, yaml string) *plan.Plan {
	t.Helper()
	p, err := spec.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestFileRunMetrics: the metrics of a bounded file run with checkpoints
// count every record's fate exactly (worked out by hand below).
func TestFileRunMetrics(t *testing.T) {
	dir := t.TempDir()
	// p0: 10:00:10, 10:01:10, 10:05:00; p1: 10:00:20, then a record at
	// 10:00:30 arriving after p0's 10:05:00 moved the watermark to 10:04
	// (out_of_orderness 1m) with p1 idle: too late for window 10:00
	// (allowed lateness 0), to the late side output. One record without an
	// event time is quarantined.
	lines := []string{
		`{"at":"2026-09-01T10:00:10Z","ts":"2026-09-01T10:00:10Z","p":"p0","store":"a"}`,
		`{"at":"2026-09-01T10:00:20Z","ts":"2026-09-01T10:00:20Z","p":"p1","store":"a"}`,
		`{"at":"2026-09-01T10:01:10Z","ts":"2026-09-01T10:01:10Z","p":"p0","store":"b"}`,
		`{"at":"2026-09-01T10:05:00Z","ts":"2026-09-01T10:05:00Z","p":"p0","store":"a"}`,
		`{"at":"2026-09-01T10:05:01Z","ts":"2026-09-01T10:00:30Z","p":"p1","store":"a"}`,
		`{"at":"2026-09-01T10:05:02Z","p":"p0","store":"a"}`,
	}
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	pl := compile(t, fmt.Sprintf(`name: m
source: {type: file, path: %s, partition_field: p, arrival_time_field: at}
event_time: {field: ts, out_of_orderness: 1m, idle_timeout: 2m}
key: [store]
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
emit: {mode: final}
late: {policy: side_output, sink: {type: jsonl, path: %s/late.jsonl}}
sinks: [{type: jsonl, path: %s/out.jsonl}]
checkpoint: {dir: %s/ck, interval: 1h}
`, in, dir, dir, dir))
	x := New("m")
	if _, err := engine.Run(context.Background(), pl, engine.Options{Live: x.Update, HotKeys: 2}); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, x)
	has(t, text,
		`tidemark_records_read_total{pipeline="m"} 6`,
		`tidemark_records_quarantined_total{pipeline="m",stage="source"} 1`,
		`tidemark_records_quarantined_total{pipeline="m",stage="m"} 0`,
		`tidemark_records_on_time_total{pipeline="m",stage="m"} 4`,
		`tidemark_records_too_late_total{outcome="side_output",pipeline="m",stage="m"} 1`,
		`tidemark_records_too_late_total{outcome="dropped",pipeline="m",stage="m"} 0`,
		`tidemark_rows_final_total{pipeline="m",stage="m"} 3`, // windows 10:00 a (2), 10:01 b, 10:05 a
		`tidemark_source_partition_records_total{partition="p0",pipeline="m"} 3`,
		`tidemark_source_partition_records_total{partition="p1",pipeline="m"} 2`,
		// 10:05:00 − 1m on p0; p1's largest is 10:00:30 − 1m.
		fmt.Sprintf(`tidemark_source_partition_watermark_seconds{partition="p0",pipeline="m"} %g`, float64(time.Date(2026, 9, 1, 10, 4, 0, 0, time.UTC).Unix())),
		fmt.Sprintf(`tidemark_source_partition_watermark_seconds{partition="p1",pipeline="m"} %g`, float64(time.Date(2026, 9, 1, 9, 59, 30, 0, time.UTC).Unix())),
		`tidemark_watermark_seconds{pipeline="m"} +Inf`,
		`tidemark_event_time_lag_seconds{pipeline="m"} 0`,
		`tidemark_open_windows{pipeline="m",stage="m"} 0`,
		`tidemark_checkpoints_total{pipeline="m"} 1`,
		`tidemark_checkpoint_failures_total{pipeline="m"} 0`,
		`tidemark_checkpoint_last_id{pipeline="m"} 1`,
		`tidemark_sink_commits_total{pipeline="m",sink="m: sinks[0]"} 1`,
		`tidemark_sink_commits_total{pipeline="m",sink="m: late.sink"} 1`,
		`tidemark_checkpoint_duration_seconds_count{pipeline="m"} 1`,
		`tidemark_run_ended{pipeline="m"} 1`,
	)
	if strings.Contains(text, "tidemark_source_partition_consumer_lag_records") {
		t.Error("a file source has no consumer lag, yet the metric is there")
	}
}

// TestStuckWatermarkIsVisible is the first article's failure: consumer lag
// 0 while the watermark is far behind. A live Kafka run whose partition 1
// is slow (one record at 10:00:20) while partition 0 reaches 10:30:00:
// both partitions are read to the end (consumer lag 0), yet the pipeline
// watermark stays at 10:00:20 and its event-time lag grows with
// processing time; the partition metrics say which partition holds it.
func TestStuckWatermarkIsVisible(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(p int32, ts string) {
		v := fmt.Sprintf(`{"ts":"2026-09-01T%sZ"}`, ts)
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	send(1, "10:00:20")
	for _, ts := range []string{"10:00:10", "10:10:00", "10:20:00", "10:30:00"} {
		send(0, ts)
	}
	pl := compile(t, fmt.Sprintf(`name: k
source: {type: kafka, brokers: ["%s"], topics: [orders], poll_timeout: 20ms, discovery_interval: 50ms}
event_time: {field: ts}
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
`, brokers[0]))
	x := New("k")
	var clock atomic.Int64
	clock.Store(time.Date(2026, 9, 1, 10, 40, 0, 0, time.UTC).UnixMilli())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := engine.Run(ctx, pl, engine.Options{Live: x.Update, LiveEvery: time.Millisecond, Clock: clock.Load})
		done <- err
	}()
	want := []string{
		`tidemark_source_partition_consumer_lag_records{partition="orders/0",pipeline="k"} 0`,
		`tidemark_source_partition_consumer_lag_records{partition="orders/1",pipeline="k"} 0`,
		fmt.Sprintf(`tidemark_watermark_seconds{pipeline="k"} %g`, float64(time.Date(2026, 9, 1, 10, 0, 20, 0, time.UTC).Unix())),
		// 10:40:00 − 10:00:20
		`tidemark_event_time_lag_seconds{pipeline="k"} 2380`,
		`tidemark_source_partition_event_time_lag_seconds{partition="orders/0",pipeline="k"} 600`,
		`tidemark_source_partition_event_time_lag_seconds{partition="orders/1",pipeline="k"} 2380`,
		`tidemark_source_partition_idle{partition="orders/1",pipeline="k"} 0`,
	}
	var text string
	deadline := time.Now().Add(10 * time.Second)
	for {
		text = scrape(t, x)
		ok := true
		for _, l := range want {
			if !strings.Contains(text, l+"\n") {
				ok = false
			}
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	has(t, text, want...)
	cancel()
	<-done
}

// TestDocsListEveryMetric: docs/metrics.md names every metric the
// exporter can produce, and nothing else.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(tidemark_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	x := New("p")
	x.Update(&engine.Live{Checkpoints: engine.LiveCheckpoints{Enabled: true}}) // registers the checkpoint histograms
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 256)
	go func() { x.Registry().Describe(ch); close(ch) }()
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		exported[name.FindStringSubmatch(d.String())[1]] = true
	}
	for n := range exported {
		if !documented[n] {
			t.Errorf("%s is exported but not in docs/metrics.md", n)
		}
	}
	for n := range documented {
		if !exported[n] {
			t.Errorf("docs/metrics.md lists %s, which is not exported", n)
		}
	}
	if len(exported) < 40 {
		t.Errorf("only %d metrics exported", len(exported))
	}
}

// TestQuarantineBySource: the records quarantined before the stages are
// labelled stage="source", apart from each stage's own, also when the
// single stage has the pipeline's name (the label was "" before).
func TestQuarantineBySource(t *testing.T) {
	x := New("shop")
	x.Update(&engine.Live{Pipeline: "shop", Quarantined: 3, Stages: []engine.LiveStage{
		{Name: "shop", Counters: engine.Counters{In: 10, Quarantined: 2, Filtered: 4}},
	}})
	text := scrape(t, x)
	has(t, text,
		`tidemark_records_quarantined_total{pipeline="shop",stage="source"} 3`,
		`tidemark_records_quarantined_total{pipeline="shop",stage="shop"} 2`,
		`tidemark_records_filtered_total{pipeline="shop",stage="shop"} 4`,
	)
	if strings.Contains(text, `stage=""`) {
		t.Errorf("a series is labelled stage=\"\":\n%s", text)
	}
}

// TestJoinStateMetrics: a join stage's buffered rows and keys are its
// state gauges (tidemark_state_entries, _keys, _bytes): above zero while
// rows wait for the other side, zero at the end of a bounded run, when
// every row is past its last match.
func TestJoinStateMetrics(t *testing.T) {
	pl := compile(t, `name: q
source: {type: nexmark, events: 20000, rate: 1000}
event_time: {field: date_time, out_of_orderness: 4s}
stages:
  - name: auction_bids
    join:
      type: interval
      left:  {input: source, as: A, filter: event_type == 1}
      right: {input: source, as: B, filter: event_type == 2}
      on: ["A.auction.id = B.bid.auction"]
      between: {lower: 0s, upper_field: A.auction.expires, max_span: 4s}
      select: {auction: A.auction.id, price: B.bid.price}
    emit: {mode: final}
    sinks: [{type: jsonl, path: `+t.TempDir()+`/out.jsonl}]
`)
	x := New("q")
	var peak [3]float64
	gauge := func(text, name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + `\{pipeline="q",stage="auction_bids"\} (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s of stage auction_bids in\n%s", name, grep(text, name))
		}
		var v float64
		fmt.Sscan(m[1], &v)
		return v
	}
	names := []string{"tidemark_state_entries", "tidemark_state_keys", "tidemark_state_bytes"}
	snaps := 0
	live := func(l *engine.Live) {
		x.Update(l)
		text := scrape(t, x)
		for i, n := range names {
			peak[i] = max(peak[i], gauge(text, n))
		}
		snaps++
	}
	if _, err := engine.Run(context.Background(), pl, engine.Options{Live: live, LiveEvery: time.Nanosecond, Parallelism: 1}); err != nil {
		t.Fatal(err)
	}
	if snaps < 3 {
		t.Fatalf("%d snapshots; the run is too short to see the state during it", snaps)
	}
	for i, n := range names {
		if peak[i] <= 0 {
			t.Errorf("%s never above 0 during the run (%d snapshots)", n, snaps)
		}
	}
	has(t, scrape(t, x),
		`tidemark_state_entries{pipeline="q",stage="auction_bids"} 0`,
		`tidemark_state_keys{pipeline="q",stage="auction_bids"} 0`,
	)
}

// TestDiskStateMetrics: a run of a dedup pipeline on the disk backend
// exports its stores' disk bytes, memory by part, cache lookups, flush
// time and files; the memory backend exports none of them.
func TestDiskStateMetrics(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, `{"id":"e%d","ts":"2026-09-01T10:%02d:%02dZ","k":%d}`+"\n", i%2000, (i/60)%60, i%60, i%7)
	}
	if err := os.WriteFile(dir+"/in.jsonl", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"disk", "memory"} {
		pl := compile(t, `name: d
source: {type: file, path: `+dir+`/in.jsonl, schema: {k: int}}
event_time: {field: ts}
dedup: {key: id, ttl: 1h}
key: [k]
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
checkpoint: {dir: `+dir+`/ck-`+backend+`, interval: 1ms}
state: {backend: `+backend+`}
`)
		x := New("d")
		if _, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: 2, BatchSize: 100, Live: x.Update}); err != nil {
			t.Fatal(err)
		}
		text := scrape(t, x)
		if backend == "memory" {
			if strings.Contains(text, "tidemark_state_disk_bytes") {
				t.Errorf("the memory backend exports the disk backend's metrics:\n%s", grep(text, "tidemark_state_disk"))
			}
			continue
		}
		has(t, text, `tidemark_state_memory_bytes{part="hot_budget",pipeline="d"} 5.36870912e+08`)
		for _, name := range []string{"tidemark_state_disk_bytes", "tidemark_state_files", `tidemark_state_background_seconds_total{kind="flush"`} {
			m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `[^ ]* (\S+)$`).FindStringSubmatch(text)
			if m == nil || m[1] == "0" {
				t.Errorf("%s: %v in\n%s", name, m, grep(text, "tidemark_state_"))
			}
		}
	}
}

// TestNoCheckpointMetricsWithoutCheckpoints (issue 25 item 5): a run
// without checkpoints exports no checkpoint or sink-commit metric, not
// even a histogram with a zero count; the same run with checkpoints has
// them.
func TestNoCheckpointMetricsWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"ts":"2026-09-01T10:00:10Z","store":"a"}`+"\n"), 0o644)
	for _, ck := range []string{"", fmt.Sprintf("checkpoint: {dir: %s/ck}\n", dir)} {
		pl := compile(t, fmt.Sprintf(`name: m
source: {type: file, path: %s}
event_time: {field: ts}
key: [store]
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
sinks: [{type: jsonl, path: %s/out.jsonl}]
%s`, in, dir, ck))
		x := New("m")
		if _, err := engine.Run(context.Background(), pl, engine.Options{Live: x.Update}); err != nil {
			t.Fatal(err)
		}
		text := scrape(t, x)
		for _, m := range []string{"tidemark_checkpoint_duration_seconds", "tidemark_checkpoint_size_bytes", "tidemark_checkpoints_total", "tidemark_sink_commits_total"} {
			if got := strings.Contains(text, m); got != (ck != "") {
				t.Errorf("checkpoints %v: %s present %v", ck != "", m, got)
			}
		}
	}
}

// TestNoLastRecordBeforeTheFirst (issue 25 item 5): a partition that has
// delivered no record reports no last-record timestamp (the tracker's
// LastArrival is then when the partition was added).
func TestNoLastRecordBeforeTheFirst(t *testing.T) {
	x := New("m")
	x.Update(&engine.Live{Partitions: []engine.LivePartition{
		{Name: "orders/0", Records: 3, LastArrival: 1_000_000, Watermark: 900_000, MaxEventTime: 900_000, ConsumerLag: -1},
		{Name: "orders/1", Records: 0, LastArrival: 2_000_000, Watermark: changelog.WatermarkNone, MaxEventTime: changelog.WatermarkNone, ConsumerLag: -1},
	}})
	text := scrape(t, x)
	has(t, text, `tidemark_source_partition_last_record_timestamp_seconds{partition="orders/0",pipeline="m"} 1000`,
		`tidemark_source_partition_records_total{partition="orders/1",pipeline="m"} 0`)
	if strings.Contains(text, `tidemark_source_partition_last_record_timestamp_seconds{partition="orders/1"`) {
		t.Errorf("a partition without records has a last-record timestamp:\n%s", grep(text, "tidemark_source_partition_last_record"))
	}
}
