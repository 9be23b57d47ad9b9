package examples

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/internal/devregistry"
)

// TestOnlineRetailKafkaAvroMatchesJSON follows the README's "Kafka end
// to end" and "The same job in Avro" with the real data: the Online
// Retail lines perturbed (late and out of order), loaded into one topic
// as JSON and into another as Avro (tidemark produce --format avro with
// invoice-line.avsc, through the development registry), then
// examples/online-retail/kafka.yaml and kafka-avro.yaml run over them.
// Both give the same final rows — in their SQLite tables, and in their
// result topics, the JSON one read as JSON and the Avro one decoded with
// twmb/avro from the schema the registry holds — and the same late
// lines. With -short only the first 20 days are used.
//
// The topics have one partition, where the README's have four: over
// several partitions which lines are late depends on how the reads
// interleave the partitions (the watermark is their minimum), so two
// runs over the same topic differ by a few lines, whatever the format;
// one partition gives both runs the same order.
func TestOnlineRetailKafkaAvroMatchesJSON(t *testing.T) {
	data := datatest.Dir(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(data, "online-retail", "by-day", "*.csv"))
	if len(files) == 0 {
		t.Fatal("no Online Retail files")
	}
	if testing.Short() && len(files) > 20 {
		files = files[:20]
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "online-retail", "online-retail-avro"),
		kfake.SeedTopics(4, "revenue-hourly", "retail-late", "revenue-hourly-avro", "retail-late-avro"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	srv := httptest.NewServer(devregistry.New().Handler())
	defer srv.Close()
	t.Setenv("KAFKA_BROKERS", brokers)
	dir := t.TempDir()
	t.Chdir(dir)

	tm := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		start := time.Now()
		if code := cli.Main(args, nil, &out, &errb); code != 0 {
			t.Fatalf("tidemark %s: exit %d\n%s%s", args[0], code, out.String(), errb.String())
		}
		t.Logf("tidemark %s: %s", args[0], time.Since(start).Round(time.Millisecond))
		return out.String() + errb.String()
	}
	lines := filepath.Join(dir, "out", "online-retail.jsonl")
	tm(append(append([]string{"perturb"}, files...), "--out", lines, "--event-time", "InvoiceDate",
		"--layout", "2006-01-02 15:04:05", "--timezone", "Europe/London",
		"--seed", "7", "--delay", "2m", "--straggler-fraction", "0.03", "--max-delay", "3h", "--partitions", "1")...)
	tm("produce", lines, "--topic", "online-retail", "--partition-field", "partition", "--brokers", brokers, "-q")
	// produce reads its --registry default from SCHEMA_REGISTRY_URL too.
	t.Setenv("SCHEMA_REGISTRY_URL", srv.URL)
	tm("produce", lines, "--topic", "online-retail-avro", "--partition-field", "partition", "--brokers", brokers, "-q",
		"--format", "avro", "--schema", filepath.Join(repo, "examples", "online-retail", "invoice-line.avsc"), "--registry", srv.URL)
	jsonSum := tm("run", filepath.Join(repo, "examples", "online-retail", "kafka.yaml"))
	avroSum := tm("run", filepath.Join(repo, "examples", "online-retail", "kafka-avro.yaml"))
	// The records' fates, as each run's summary counts them.
	fates := func(sum string) string {
		var out []string
		for _, l := range strings.Split(sum, "\n") {
			for _, k := range []string{"events read", "quarantined", "on time", "late, accepted", "too late", "rows emitted"} {
				if strings.HasPrefix(strings.TrimSpace(l), k) {
					out = append(out, strings.Join(strings.Fields(l), " "))
				}
			}
		}
		return strings.Join(out, "; ")
	}
	if jf, af := fates(jsonSum), fates(avroSum); jf != af || !strings.Contains(jf, "events read") {
		t.Errorf("record fates:\n JSON %s\n Avro %s", jf, af)
	} else {
		t.Logf("both runs: %s", jf)
	}

	jsonTable := sqliteFinal(t, filepath.Join(dir, "out", "kafka.db"))
	avroTable := sqliteFinal(t, filepath.Join(dir, "out", "kafka-avro.db"))
	if len(jsonTable) < 100 {
		t.Fatalf("the JSON run's table has %d rows", len(jsonTable))
	}
	sameFinal(t, "SQLite tables (kafka-avro.db against kafka.db)", avroTable, jsonTable)
	sameFinal(t, "the JSON result topic against kafka.db", topicFinal(t, brokers, "revenue-hourly", nil), jsonTable)
	reg, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	sameFinal(t, "the Avro result topic against kafka-avro.db", topicFinal(t, brokers, "revenue-hourly-avro", reg), avroTable)
	sameFinal(t, "the Avro result topic against kafka.db", topicFinal(t, brokers, "revenue-hourly-avro", reg), jsonTable)

	jl, al := lateLines(t, brokers, "retail-late", nil), lateLines(t, brokers, "retail-late-avro", reg)
	if len(jl) == 0 || strings.Join(jl, "\n") != strings.Join(al, "\n") {
		t.Errorf("late lines: %d in JSON, %d in Avro, or they differ", len(jl), len(al))
	}
	t.Logf("%d final rows, %d late lines, in both", len(jsonTable), len(jl))
}

// finalRow is a window's last row: net revenue (exact), lines, is_final.
type finalRow struct {
	net   *big.Rat
	lines int64
	final bool
}

// sqliteFinal reads a result table: (window_start UTC, Country) → row.
func sqliteFinal(t *testing.T, path string) map[string]finalRow {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Query(`SELECT window_start, Country, CAST(net_revenue AS TEXT), lines, is_final FROM revenue_hourly`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]finalRow{}
	for rs.Next() {
		var ws, country, net string
		var lines int64
		var final bool
		if err := rs.Scan(&ws, &country, &net, &lines, &final); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, ws)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := new(big.Rat).SetString(net)
		if !ok {
			t.Fatalf("net_revenue %q", net)
		}
		out[at.UTC().Format(time.RFC3339)+" "+country] = finalRow{r, lines, final}
	}
	return out
}

// topicFinal reads a result topic (read_committed) and keeps the newest
// row of every key: JSON values, or Avro ones (reg not nil) decoded with
// twmb/avro from the registry's schema.
func topicFinal(t *testing.T, brokers, topic string, reg *sr.Client) map[string]finalRow {
	t.Helper()
	out := map[string]finalRow{}
	versions := map[string]int64{}
	schemas := map[int]*tavro.Schema{}
	for _, v := range readTopic(t, brokers, topic) {
		var ws, country string
		var row finalRow
		var version int64
		if reg == nil {
			var m struct {
				WindowStart string      `json:"window_start"`
				Country     string      `json:"Country"`
				Net         json.Number `json:"net_revenue"`
				Lines       int64       `json:"lines"`
				Version     int64       `json:"version"`
				IsFinal     bool        `json:"is_final"`
			}
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if err := d.Decode(&m); err != nil {
				t.Fatalf("%s: %s: %v", topic, v, err)
			}
			at, _ := time.Parse(time.RFC3339Nano, m.WindowStart)
			ws, country, version = at.UTC().Format(time.RFC3339), m.Country, m.Version
			row.net, _ = new(big.Rat).SetString(m.Net.String())
			row.lines, row.final = m.Lines, m.IsFinal
		} else {
			m := decodeAvro(t, reg, schemas, v)
			ws, country, version = m["window_start"].(time.Time).UTC().Format(time.RFC3339), m["Country"].(string), m["version"].(int64)
			row.net, row.lines, row.final = m["net_revenue"].(*big.Rat), m["lines"].(int64), m["is_final"].(bool)
		}
		k := ws + " " + country
		if version > versions[k] {
			versions[k], out[k] = version, row
		}
	}
	return out
}

// decodeAvro decodes a Confluent wire-format Avro value generically.
func decodeAvro(t *testing.T, reg *sr.Client, schemas map[int]*tavro.Schema, v []byte) map[string]any {
	t.Helper()
	if len(v) < 5 || v[0] != 0 {
		t.Fatalf("not the Confluent wire format: % x", v[:min(len(v), 8)])
	}
	id := int(binary.BigEndian.Uint32(v[1:5]))
	s := schemas[id]
	if s == nil {
		ss, err := reg.SchemaByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if s, err = tavro.Parse(ss.Schema); err != nil {
			t.Fatal(err)
		}
		schemas[id] = s
	}
	var m map[string]any
	if rest, err := s.Decode(v[5:], &m); err != nil || len(rest) != 0 {
		t.Fatalf("schema id %d: %v (%d bytes left)", id, err, len(rest))
	}
	return m
}

// lateLines reads a late topic and returns each late line's invoice,
// stock code and invoice date, sorted.
func lateLines(t *testing.T, brokers, topic string, reg *sr.Client) []string {
	t.Helper()
	schemas := map[int]*tavro.Schema{}
	var out []string
	for _, v := range readTopic(t, brokers, topic) {
		event := v
		if reg != nil {
			event = []byte(decodeAvro(t, reg, schemas, v)["event"].(string))
		} else {
			var m struct {
				Event json.RawMessage `json:"event"`
			}
			if err := json.Unmarshal(v, &m); err != nil {
				t.Fatal(err)
			}
			event = m.Event
		}
		var e map[string]any
		if err := json.Unmarshal(event, &e); err != nil {
			t.Fatalf("%s: event %s: %v", topic, event, err)
		}
		out = append(out, fmt.Sprint(e["InvoiceNo"], " ", e["StockCode"], " ", e["InvoiceDate"]))
	}
	sort.Strings(out)
	return out
}

// readTopic returns the values of a topic's committed records.
func readTopic(t *testing.T, brokers, topic string) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out [][]byte
	idle := 0
	for idle < 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			out = append(out, r.Value)
		})
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out
}

// sameFinal compares two sets of final rows.
func sameFinal(t *testing.T, what string, got, want map[string]finalRow) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.net.Cmp(w.net) != 0 || g.lines != w.lines || g.final != w.final {
			if bad < 5 {
				t.Errorf("%s: %s: got %v, want %v", what, k, show(g, ok), show(w, true))
			}
			bad++
		}
	}
	if len(got) != len(want) || bad > 0 {
		t.Errorf("%s: %d rows, want %d; %d differ", what, len(got), len(want), bad)
	}
}

func show(r finalRow, ok bool) string {
	if !ok {
		return "no row"
	}
	return fmt.Sprintf("%s %d final=%v", r.net.FloatString(3), r.lines, r.final)
}
