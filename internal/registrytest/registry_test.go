// Package registrytest runs `tidemark run` (the command line, in
// process) over Avro records of a Kafka topic (kfake) whose schema
// registry (the development one, internal/devregistry) sits behind a
// loopback proxy that resets requests, closes them before any answer,
// delays them past the client's timeout or answers 500, at seeded
// moments: every run must either complete with exactly the rows of an
// undisturbed run — which equal a batch recomputation over the produced
// records — or exit non-zero naming the registry, and a run after a
// failed one must then give those rows (docs/connectors/kafka.md, "When
// the registry or broker fails"). 50 seeds; 300 with -long.
package registrytest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/internal/faultproxy"
	"github.com/tidemark/tidemark/metrics"
	"github.com/tidemark/tidemark/status"
)

var (
	long  = flag.Bool("long", false, "run 300 seeds of the registry fault harness instead of 50")
	seed0 = flag.Uint64("seed", 0, "run only this seed (0: all)")
)

// The schema versions of the topic's subject: each adds a field with a
// default (BACKWARD compatible), so that a run meets a new schema id —
// and asks the registry — four times along the topic.
var versions = []string{
	`{"type":"record","name":"Order","fields":[{"name":"store","type":"string"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`,
	`{"type":"record","name":"Order","fields":[{"name":"store","type":"string"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"channel","type":"string","default":"web"}]}`,
	`{"type":"record","name":"Order","fields":[{"name":"store","type":"string"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"channel","type":"string","default":"web"},{"name":"note","type":["null","string"],"default":null}]}`,
	`{"type":"record","name":"Order","fields":[{"name":"store","type":"string"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"channel","type":"string","default":"web"},{"name":"note","type":["null","string"],"default":null},{"name":"qty","type":"int","default":1}]}`,
}

const (
	partitions = 3
	perPart    = 240 // records per partition
	stores     = 5
)

// order is one produced record.
type order struct {
	part    int32
	store   string
	cents   int64
	ts      time.Time
	version int // index in versions
}

// orders are the topic's records: per partition in event-time order (so
// that no record is late whatever the interleaving of the partitions'
// reads: the results do not depend on it), the schema version moving
// from the first to the last along each partition.
func orders() []order {
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var out []order
	for p := range int32(partitions) {
		for i := range perPart {
			k := int(p)*perPart + i
			out = append(out, order{part: p, store: fmt.Sprintf("s%d", (k*7)%stores),
				cents: int64(100 + (k*37)%9000), ts: base.Add(time.Duration(i)*4*time.Second + time.Duration(p)*time.Second),
				version: i * len(versions) / perPart})
		}
	}
	return out
}

// want computes the final rows by hand: per (minute, store) the sum of
// the amounts (2 decimals) and the count, as "window_start store total n".
func want(os []order) []string {
	type key struct {
		w     time.Time
		store string
	}
	sum, n := map[key]int64{}, map[key]int64{}
	for _, o := range os {
		k := key{o.ts.Truncate(time.Minute), o.store}
		sum[k] += o.cents
		n[k]++
	}
	var out []string
	for k, s := range sum {
		out = append(out, fmt.Sprintf("%s %s %d.%02d %d", k.w.Format(time.RFC3339), k.store, s/100, s%100, n[k]))
	}
	slices.Sort(out)
	return out
}

// env is the broker, the registry and the topic's records, shared by
// every seed.
type env struct {
	brokers  string
	registry string // the development registry's URL
	rows     []string
}

func setup(t *testing.T) *env {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	srv := httptest.NewServer(devregistry.New().Handler())
	t.Cleanup(srv.Close)
	rc, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	var schemas []*tavro.Schema
	for _, v := range versions {
		ss, err := rc.CreateSchema(context.Background(), "orders-value", sr.Schema{Schema: v})
		if err != nil {
			t.Fatal(err)
		}
		s, err := tavro.Parse(v)
		if err != nil {
			t.Fatal(err)
		}
		ids, schemas = append(ids, ss.ID), append(schemas, s)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	os := orders()
	var recs []*kgo.Record
	for _, o := range os {
		v := map[string]any{"store": o.store, "amount": big.NewRat(o.cents, 100), "ts": o.ts}
		switch o.version {
		case 3:
			v["qty"] = int32(2)
			fallthrough
		case 2:
			v["note"] = nil
			fallthrough
		case 1:
			v["channel"] = "shop"
		}
		b := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(ids[o.version]))
		if b, err = schemas[o.version].AppendEncode(b, v); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: o.part, Value: b})
	}
	if err := kc.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return &env{brokers: strings.Join(c.ListenAddrs(), ","), registry: srv.URL, rows: want(os)}
}

// pipeline writes the pipeline of one run into dir: the topic through
// the registry at url, sums per store and minute to dir/out/rows.jsonl,
// checkpoints in dir/ck.
func (e *env) pipeline(t *testing.T, dir, url string, maxWait time.Duration) string {
	t.Helper()
	y := fmt.Sprintf(`name: registry_faults
source:
  type: kafka
  brokers: [%q]
  topics: [orders]
  format: avro
  stop_at_end: true
  poll_timeout: 100ms
  schema_registry: {url: %q, timeout: 300ms, max_wait: %s}
  schema: {store: string, amount: decimal}
event_time: {field: ts, out_of_orderness: 10s}
key: [store]
window: {type: tumbling, size: 1m}
aggregates:
  total: sum(amount)
  n: count()
emit: {mode: final}
sinks:
  - {type: jsonl, path: %q}
checkpoint: {dir: %q, interval: 50ms}
`, e.brokers, url, maxWait, filepath.Join(dir, "out", "rows.jsonl"), filepath.Join(dir, "ck"))
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run is one `tidemark run`: its exit status, stderr and wall time.
type run struct {
	code   int
	stderr string
	took   time.Duration
}

func tm(args ...string) run {
	var out, errb bytes.Buffer
	start := time.Now()
	code := cli.Main(args, nil, &out, &errb)
	return run{code: code, stderr: errb.String(), took: time.Since(start)}
}

// rows reads the final rows of a run's output as want formats them.
func rows(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var r struct {
			WindowStart string      `json:"window_start"`
			Store       string      `json:"store"`
			Total       json.Number `json:"total"`
			N           int64       `json:"n"`
			IsFinal     bool        `json:"is_final"`
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		total, ok := new(big.Rat).SetString(r.Total.String())
		if !ok {
			t.Fatalf("%s: total %q", l, r.Total)
		}
		if !r.IsFinal {
			t.Fatalf("a row that is not final under emit final: %s", l)
		}
		ws, err := time.Parse(time.RFC3339Nano, r.WindowStart)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %d", ws.UTC().Format(time.RFC3339), r.Store, total.FloatString(2), r.N))
	}
	slices.Sort(out)
	return out
}

// faults returns seed's fault schedule: a share of the requests (0 to
// 90 %) disturbed, by a mode drawn per request; with outage, every
// request from the outage's first on fails, so that the run outlasts
// max_wait and must fail.
func faults(seed uint64) (decide func(int) faultproxy.Fault, outage bool, share float64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	share = float64(r.IntN(10)) / 10
	outage = r.IntN(4) == 0
	from := r.IntN(8) // the outage starts at this request
	var mu sync.Mutex
	return func(n int) faultproxy.Fault {
		mu.Lock()
		defer mu.Unlock()
		if outage && n >= from {
			return faultproxy.Fault{Mode: faultproxy.Mode(1 + r.IntN(4)), Delay: time.Second}
		}
		if r.Float64() >= share {
			return faultproxy.Fault{}
		}
		m := faultproxy.Mode(1 + r.IntN(4))
		return faultproxy.Fault{Mode: m, Delay: time.Duration(50+r.IntN(500)) * time.Millisecond}
	}, outage, share
}

// TestRegistryFaults: over 50 seeds (300 with -long), a run through the
// proxy either exits 0 with exactly the undisturbed rows or exits
// non-zero naming the registry; never 0 with rows missing. After a
// failed run, a run through a healthy proxy resumes from the checkpoint
// and gives the undisturbed rows. The undisturbed rows equal the batch
// recomputation.
func TestRegistryFaults(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	clean := tm("run", "-q", e.pipeline(t, filepath.Join(dir, "clean"), e.registry, time.Minute))
	if clean.code != 0 {
		t.Fatalf("the undisturbed run: exit %d\n%s", clean.code, clean.stderr)
	}
	base := rows(t, filepath.Join(dir, "clean", "out", "rows.jsonl"))
	if !slices.Equal(base, e.rows) {
		t.Fatalf("the undisturbed run's %d rows differ from the batch recomputation's %d:\n%s\nwant\n%s", len(base), len(e.rows), strings.Join(base[:min(5, len(base))], "\n"), strings.Join(e.rows[:5], "\n"))
	}
	n := 50
	if *long {
		n = 300
	}
	var completed, failed, disturbedOK, requests int
	for s := 1; s <= n; s++ {
		seed := uint64(s)
		if *seed0 != 0 && seed != *seed0 {
			continue
		}
		decide, outage, share := faults(seed)
		px, err := faultproxy.Start(e.registry, decide)
		if err != nil {
			t.Fatal(err)
		}
		sd := filepath.Join(dir, fmt.Sprintf("seed%d", seed))
		maxWait := 3 * time.Second
		if outage {
			maxWait = 1500 * time.Millisecond
		}
		pipe := e.pipeline(t, sd, px.URL(), maxWait)
		r := tm("run", "-q", pipe)
		counts := px.Counts()
		for _, c := range counts {
			requests += c
		}
		where := fmt.Sprintf("seed %d (share %.1f, outage %v, requests %v)", seed, share, outage, counts)
		switch {
		case r.code == 0:
			got := rows(t, filepath.Join(sd, "out", "rows.jsonl"))
			if !slices.Equal(got, base) {
				t.Fatalf("%s: exit 0 with %d rows where the undisturbed run has %d: a silent loss\n%s", where, len(got), len(base), r.stderr)
			}
			completed++
			if len(counts) > 1 || counts[faultproxy.Pass] == 0 {
				disturbedOK++
			}
		default:
			if !strings.Contains(r.stderr, "schema registry "+px.URL()) {
				t.Fatalf("%s: exit %d without naming the registry:\n%s", where, r.code, r.stderr)
			}
			if r.code != 1 {
				t.Fatalf("%s: exit %d, want 1 for a registry that cannot be reached:\n%s", where, r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "tidemark: schema registry "+px.URL()+": unreachable since ") ||
				!strings.Contains(r.stderr, ", gave up after ") {
				t.Fatalf("%s: the run failed without saying that the records waited and for how long:\n%s", where, r.stderr)
			}
			failed++
			px.Set(nil)
			again := tm("run", "-q", pipe)
			if again.code != 0 {
				t.Fatalf("%s: the run after the failed one: exit %d\n%s", where, again.code, again.stderr)
			}
			if got := rows(t, filepath.Join(sd, "out", "rows.jsonl")); !slices.Equal(got, base) {
				t.Fatalf("%s: after a failed run and a restart, %d rows where the undisturbed run has %d\n%s", where, len(got), len(base), again.stderr)
			}
		}
		px.Close()
		os.RemoveAll(sd)
	}
	t.Logf("%d seeds: %d completed (%d of them through disturbed requests), %d failed naming the registry and were then completed by a restart; %d registry requests", n, completed, disturbedOK, failed, requests)
	if *seed0 == 0 && (failed == 0 || disturbedOK == 0) {
		t.Errorf("the seeds never made a run fail (%d) or never disturbed a completed run (%d): the harness does not test what it says", failed, disturbedOK)
	}
}

// TestRegistryWaitIsReported: a registry whose first request hangs
// unanswered, then closes its connections for a while, then answers: the
// run says on its log, within 5 s, "schema registry …: unreachable since
// …, retrying"; its monitoring snapshots carry the wait, which the
// metrics (tidemark_source_waiting_seconds) and the status page show;
// the log says when the registry answers again, and the run completes
// with the undisturbed rows.
func TestRegistryWaitIsReported(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	phase := 0 // 0: hang; 1: close; 2: pass
	px, err := faultproxy.Start(e.registry, func(int) faultproxy.Fault {
		mu.Lock()
		defer mu.Unlock()
		switch phase {
		case 0:
			return faultproxy.Fault{Mode: faultproxy.Delay, Delay: time.Hour}
		case 1:
			return faultproxy.Fault{Mode: faultproxy.Close}
		}
		return faultproxy.Fault{}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	dir := t.TempDir()
	path := e.pipeline(t, dir, px.URL(), time.Minute)
	y, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(y, []byte("timeout: 300ms"), []byte("timeout: 2500ms"), 1), 0o644)
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var lines []string
	var firstAt time.Duration
	x := metrics.New(p.Name)
	pg := status.New(p, nil)
	var scraped string
	var doc status.Doc
	opts := engine.Options{LiveEvery: 50 * time.Millisecond,
		Logf: func(format string, args ...any) {
			l := fmt.Sprintf(format, args...)
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, l)
			if firstAt == 0 && strings.HasPrefix(l, "schema registry "+px.URL()+": unreachable since ") {
				firstAt = time.Since(start)
				phase = 1
				go func() {
					time.Sleep(3 * time.Second) // the hung request fails after 2.5s: then closes
					mu.Lock()
					phase = 2
					mu.Unlock()
				}()
			}
		},
		Live: func(l *engine.Live) {
			x.Update(l)
			pg.Update(l)
			if len(l.Waits) > 0 && scraped == "" {
				rec := httptest.NewRecorder()
				x.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				scraped = rec.Body.String()
				doc = pg.Doc()
			}
		}}
	sum, err := tidemark.Run(context.Background(), p, opts)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if firstAt == 0 || firstAt > 5*time.Second {
		t.Fatalf("the first wait line after %s (want within 5s); the log:\n%s", firstAt, strings.Join(lines, "\n"))
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "schema registry "+px.URL()+": reachable again after ")
	}) {
		t.Errorf("no line saying the registry answers again:\n%s", strings.Join(lines, "\n"))
	}
	metric := `tidemark_source_waiting_seconds{pipeline="registry_faults",service="schema registry ` + px.URL() + `"} `
	if !strings.Contains(scraped, metric) || !strings.Contains(scraped, `tidemark_source_wait_failed_attempts{pipeline="registry_faults",service="schema registry `+px.URL()+`"} `) {
		t.Errorf("no snapshot with the wait reached the metrics:\n%s", scraped)
	}
	if len(doc.Waiting) != 1 || doc.Waiting[0].Service != "schema registry "+px.URL() || doc.Waiting[0].LimitSeconds != 60 || doc.Waiting[0].Records == "" {
		t.Errorf("status page waiting = %+v", doc.Waiting)
	}
	if got := rows(t, filepath.Join(dir, "out", "rows.jsonl")); !slices.Equal(got, e.rows) || sum.EventsRead != partitions*perPart {
		t.Errorf("after the wait: %d rows, %d records read; want %d, %d", len(got), sum.EventsRead, len(e.rows), partitions*perPart)
	}
	t.Logf("first wait line after %s; requests %v; log:\n%s", firstAt.Round(time.Millisecond), px.Counts(), strings.Join(lines, "\n"))
}
