package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/sink/kafka"
	"github.com/tidemark/tidemark/spec"
)

// TestEngineFileToAvroTopicToAvroSource: a pipeline reads a file and
// writes its result rows to a topic in Avro (exactly once, a checkpoint
// after every batch), its late and quarantine records to Avro topics; a
// second pipeline reads the result topic with the Avro source and selects
// every column. It gets the first pipeline's rows (as its jsonl sink
// wrote them), in order; the side-output topics hold the records of the
// late event and the bad line.
func TestEngineFileToAvroTopicToAvroSource(t *testing.T) {
	for _, f := range []string{"avro", "protobuf"} {
		t.Run(f, func(t *testing.T) { fileToTopicToSource(t, f) })
	}
}

func fileToTopicToSource(t *testing.T, format string) {
	brokers := kafka.Cluster(t, "revenue", "late", "quarantine")
	srv := httptest.NewServer(devregistry.New().Handler())
	defer srv.Close()
	dir := t.TempDir()
	base := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	var lines []string
	for i := range 40 {
		at := base.Add(time.Duration(i) * 20 * time.Second)
		lines = append(lines, fmt.Sprintf(`{"ts":"%s","store":"S%d","amount":%d.%02d}`, at.Format(time.RFC3339), i%3, i, i*7%100))
		if i == 20 {
			// Too late: its window closed at 09:03 + nothing allowed.
			lines = append(lines, fmt.Sprintf(`{"ts":"%s","store":"S1","amount":1.25}`, base.Format(time.RFC3339)))
			lines = append(lines, `{"ts":"2024-03-01T09:07:00Z","store":"S1","amount":"x"}`)
		}
	}
	in := filepath.Join(dir, "in.jsonl")
	kafka.Must(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	reg := fmt.Sprintf(`{url: "%s"}`, srv.URL)
	bk := fmt.Sprintf(`["%s"]`, brokers[0])
	first := fmt.Sprintf(`
name: to_%[5]s
source: {type: file, path: %[1]s, schema: {amount: decimal}}
event_time: {field: ts, out_of_orderness: 30s}
key: [store]
window: {type: tumbling, size: 1m}
aggregates: {total: sum(amount), n: count()}
emit: {mode: update}
late: {policy: side_output, sink: {type: kafka, brokers: %[2]s, topic: late, format: %[5]s, schema_registry: %[3]s}}
quarantine: {sink: {type: kafka, brokers: %[2]s, topic: quarantine, format: %[5]s, schema_registry: %[3]s}}
sinks:
  - {type: kafka, brokers: %[2]s, topic: revenue, format: %[5]s, schema_registry: %[3]s, decimal_scale: 2}
  - {type: jsonl, path: %[4]s}
checkpoint: {dir: %[6]s, interval: 1ms}
`, in, bk, reg, filepath.Join(dir, "rows.jsonl"), format, filepath.Join(dir, "ck"))
	second := fmt.Sprintf(`
name: from_%[4]s
source:
  type: kafka
  brokers: %[1]s
  topics: [revenue]
  format: %[4]s
  schema_registry: %[2]s
  stop_at_end: true
  schema: {op: string, window_start: timestamp, window_end: timestamp, store: string, total: decimal, n: int, version: int, is_final: bool}
event_time: {field: window_start, max_future: 0s}
fields: {o: op, ws: window_start, we: window_end, v: version, f: is_final}
select: [o, ws, we, store, total, n, v, f]
sinks: [{type: jsonl, path: %[3]s}]
`, bk, reg, filepath.Join(dir, "back.jsonl"), format)
	run := func(name, y string) *engine.Summary {
		p, err := spec.Decode(name, []byte(y))
		kafka.Must(t, err)
		s, err := tidemark.Run(context.Background(), p, engine.Options{BatchSize: 4, Clock: func() int64 { return base.Add(time.Hour).UnixMilli() }})
		kafka.Must(t, err)
		return s
	}
	sum := run("first.yaml", first)
	if sum.Quarantined != 1 {
		t.Errorf("first run: %d quarantined, want 1", sum.Quarantined)
	}
	run("second.yaml", second)

	// The rows, as the first run's jsonl sink wrote them and as the
	// second read them back: op, start, end, store, total, n, version,
	// is_final.
	var want []string
	for _, m := range jsonLines(t, filepath.Join(dir, "rows.jsonl")) {
		want = append(want, fmt.Sprint(m["op"], " ", m["window_start"], " ", m["window_end"], " ", m["store"], " ", m["total"], " ", m["n"], " ", m["version"], " ", m["is_final"]))
	}
	var got []string
	for _, m := range jsonLines(t, filepath.Join(dir, "back.jsonl")) {
		got = append(got, fmt.Sprint(m["o"], " ", m["ws"], " ", m["we"], " ", m["store"], " ", m["total"], " ", m["n"], " ", m["v"], " ", m["f"]))
	}
	if len(want) < 20 {
		t.Fatalf("first run wrote %d rows", len(want))
	}
	t.Logf("%d rows, first %s", len(want), want[0])
	kafka.Equal(t, "rows read back from the "+format+" topic", got, want)

	// The side outputs: one record each, in the wire format, decoding to
	// the late event and the bad line.
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	kafka.Must(t, err)
	for topic, wantText := range map[string]string{
		"late":       `"event":"{\"ts\":\"2024-03-01T09:00:00Z\",\"store\":\"S1\",\"amount\":1.25}"`,
		"quarantine": `"raw":"{\"ts\":\"2024-03-01T09:07:00Z\",\"store\":\"S1\",\"amount\":\"x\"}"`,
	} {
		recs := kafka.CommittedRecords(t, brokers, topic)
		if len(recs) != 1 {
			t.Fatalf("%s: %d records, want 1", topic, len(recs))
		}
		value := []byte(strings.TrimPrefix(recs[0], " => "))
		ss, err := cl.SchemaByVersion(context.Background(), topic+"-value", 1)
		kafka.Must(t, err)
		if format != "avro" {
			if value[0] != 0 || ss.Type != sr.TypeProtobuf {
				t.Errorf("%s: % x, schema type %v", topic, value[:6], ss.Type)
			}
			continue
		}
		s, err := tavro.Parse(ss.Schema.Schema)
		kafka.Must(t, err)
		var m map[string]any
		if _, err := s.Decode(value[5:], &m); err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		b, _ := json.Marshal(m)
		if !strings.Contains(string(b), wantText) {
			t.Errorf("%s: %s\nwant it to hold %s", topic, b, wantText)
		}
	}
}

// jsonLines reads a JSON-lines file into objects (numbers kept as text).
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	kafka.Must(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		d := json.NewDecoder(strings.NewReader(sc.Text()))
		d.UseNumber()
		var m map[string]any
		kafka.Must(t, d.Decode(&m))
		out = append(out, m)
	}
	return out
}
