package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// TestExplainArticleExample: the second article's 20,000 — payment e100
// +25,000 and refund e101 −5,000 in store-7's 10:00 minute, e101 delivered
// again, and another store's event. explain prints the row (20,000, two
// events, its lineage), its versions over time, and exactly e100 and e101
// with their deltas (the redelivery is a duplicate, not a contribution).
func TestExplainArticleExample(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"event_id":"e100","event_type":"PAYMENT","store_id":"store-7","amount":25000,"paid_at":"2026-09-01T10:00:10+09:00"}
{"event_id":"e101","event_type":"REFUND","store_id":"store-7","amount":5000,"paid_at":"2026-09-01T10:00:20+09:00"}
{"event_id":"e101","event_type":"REFUND","store_id":"store-7","amount":5000,"paid_at":"2026-09-01T10:00:20+09:00"}
{"event_id":"e102","event_type":"PAYMENT","store_id":"store-8","amount":700,"paid_at":"2026-09-01T10:00:30+09:00"}
`), 0o644)
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`name: revenue
source: {type: file, path: `+in+`, schema: {amount: decimal}}
event_time: {field: paid_at}
dedup: {key: event_id, ttl: 24h}
fields: {net: 'event_type == "REFUND" ? -amount : amount'}
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
aggregates: {net_revenue: sum(net), events: count()}
emit: {mode: update}
contributions: {sink: {type: jsonl, path: `+filepath.Join(dir, "events.contrib.jsonl")+`}}
sinks:
  - {type: sqlite, path: `+filepath.Join(dir, "out.db")+`, table: revenue_minute}
  - {type: jsonl, path: `+filepath.Join(dir, "changelog.jsonl")+`}
`), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", p); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	code, out, errOut := run(t, "explain", p, "--table", "revenue_minute", "--window", "2026-09-01T10:00:00+09:00", "--key", "store-7")
	if code != 0 {
		t.Fatalf("explain: code %d: %s", code, errOut)
	}
	for _, want := range []string{
		"  net_revenue    20000\n",
		"  events         2\n",
		"  lineage        pipeline revenue, spec ",
		"insert        v1  net_revenue=20000 events=2  final=true",
		"  e100         2026-09-01T10:00:10+09:00  net_revenue +25000, events +1  (" + in + ":1)\n",
		"  e101         2026-09-01T10:00:20+09:00  net_revenue -5000, events +1  (" + in + ":2)\n",
		"  2 events; recomputed from them: net_revenue 20000, events 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "e102") || strings.Count(out, "e101 ") != 1 {
		t.Errorf("explain lists another store's event or e101 twice:\n%s", out)
	}
	// Nothing found says what is there: the key's windows (store-7 has
	// one, 10:00), or the nearest key of the window (store-7 for store7).
	code, _, errOut = run(t, "explain", p, "--table", "revenue_minute", "--window", "2026-09-01T11:00:00+09:00", "--key", "store-7")
	if want := "no row, version or event for window 2026-09-01T11:00:00+09:00 and key store-7 (the key has rows in the windows starting 2026-09-01T10:00:00+09:00; a window is named by its start)"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a window without a row: code %d, want 1 and %q:\n%s", code, want, errOut)
	}
	code, _, errOut = run(t, "explain", p, "--table", "revenue_minute", "--window", "2026-09-01T10:00:00+09:00", "--key", "store7")
	if want := "and key store7 (did you mean store-7"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a key without a row: code %d, want 1 and %q:\n%s", code, want, errOut)
	}
}

// TestReferenceData joins a store → region lookup file by key: the rows
// group by region, a store the file lacks gets a null region (counted),
// and every row's lineage records the file's content hash.
func TestReferenceData(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"store_id":"store-7","amount":25000,"paid_at":"2026-09-01T10:00:10+09:00"}
{"store_id":"store-8","amount":700,"paid_at":"2026-09-01T10:00:30+09:00"}
{"store_id":"store-9","amount":300,"paid_at":"2026-09-01T10:00:40+09:00"}
{"store_id":"store-1","amount":1,"paid_at":"2026-09-01T10:00:50+09:00"}
`), 0o644)
	stores := []byte("store_id,region,opened\nstore-7,Seoul,2020-01-01T00:00:00Z\nstore-8,Seoul,\nstore-9,Busan,\n")
	os.WriteFile(filepath.Join(dir, "stores.csv"), stores, 0o644)
	out := filepath.Join(dir, "rows.jsonl")
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`name: regions
source: {type: file, path: `+in+`, schema: {amount: decimal}}
reference: {path: `+filepath.Join(dir, "stores.csv")+`, key: store_id, fields: {region: string}}
event_time: {field: paid_at}
key: [region]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
aggregates: {revenue: sum(amount)}
emit: {mode: final}
sinks: [{type: jsonl, path: `+out+`}]
`), 0o644)
	code, stdout, errOut := run(t, "run", p)
	if code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	// A field the file's header lacks is an error, not a column of nulls.
	bad := strings.Replace(string(mustRead(t, p)), "fields: {region: string}", "fields: {regoin: string}", 1)
	pb := filepath.Join(dir, "bad.yaml")
	os.WriteFile(pb, []byte(bad), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", pb); code != 2 || !strings.Contains(errOut, `the header has no column "regoin" (columns: store_id, region, opened)`) {
		t.Errorf("missing column: code %d, %s", code, errOut)
	}
	sum := sha256.Sum256(stores)
	version := "sha256:" + hex.EncodeToString(sum[:6])
	if want := "reference data       " + filepath.Join(dir, "stores.csv") + " (" + version + ", 3 keys; 1 records with an unknown key)"; !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	// One row per region; different keys may interleave in any order when
	// the stage runs as several tasks (docs/semantics.md, "Parallelism").
	want := []string{`"region":"Seoul","revenue":25700,`, `"region":"Busan","revenue":300,`, `"region":null,"revenue":1,`}
	if len(lines) != len(want) {
		t.Fatalf("rows:\n%s", b)
	}
	for _, w := range want {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, w) && strings.Contains(l, ";reference="+version+`"`) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d rows with %s and the reference version %s:\n%s", n, w, version, b)
		}
	}
}

// TestExplainPostgres: explain reads the row from a PostgreSQL result
// table too.
func TestExplainPostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"event_id":"e100","store_id":"store-7","amount":25000,"paid_at":"2026-09-01T10:00:10+09:00"}
{"event_id":"e101","store_id":"store-7","amount":-5000,"paid_at":"2026-09-01T10:00:20+09:00"}
`), 0o644)
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(`name: revenue
source: {type: file, path: `+in+`, schema: {amount: decimal}}
event_time: {field: paid_at}
dedup: {key: event_id, ttl: 24h}
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
aggregates: {net_revenue: sum(amount), events: count()}
emit: {mode: final}
contributions: {sink: {type: jsonl, path: `+filepath.Join(dir, "contrib.jsonl")+`}}
sinks: [{type: postgres, dsn: "`+dsn+`", table: `+schema+`.revenue_minute__live}]
`), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", p); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	code, out, errOut := run(t, "explain", p, "--table", schema+".revenue_minute__live", "--window", "2026-09-01T10:00:00+09:00", "--key", "store-7")
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	for _, want := range []string{"row (postgres, table " + schema + ".revenue_minute__live):", "  net_revenue    20000\n", "  events         2\n", "  window_start   2026-09-01T10:00:00+09:00\n", "  2 events; recomputed from them: net_revenue 20000, events 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExplainEveryAggregate: each event's delta shows as its aggregate
// takes it — a distinct count's value as the value (not +"o-001"), a
// count of a field +1 or +0 for a null — and the line under the events
// recomputes every aggregate from them (2 distinct orders, not null).
// Without a contributions sink, explain says so and how to add one.
func TestExplainEveryAggregate(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"event_id":"e1","order_id":"o-001","store_id":"store-7","amount":25000,"note":"a","paid_at":"2026-09-01T10:00:10+09:00"}
{"event_id":"e2","order_id":"o-001","store_id":"store-7","amount":-5000,"note":null,"paid_at":"2026-09-01T10:00:20+09:00"}
{"event_id":"e3","order_id":"o-002","store_id":"store-7","amount":10000.50,"note":"b","paid_at":"2026-09-01T10:00:30+09:00"}
`), 0o644)
	spec := func(contrib string) string {
		p := filepath.Join(dir, "p"+fmt.Sprint(len(contrib))+".yaml")
		os.WriteFile(p, []byte(`name: revenue
source: {type: file, path: `+in+`, schema: {amount: decimal}}
event_time: {field: paid_at}
dedup: {key: event_id, ttl: 24h}
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
aggregates: {orders: count_distinct(order_id), revenue: sum(amount), top: max(amount), low: min(amount), mean: avg(amount), noted: count(note)}
emit: {mode: final}
`+contrib+`
sinks: [{type: sqlite, path: `+filepath.Join(dir, "out"+fmt.Sprint(len(contrib))+".db")+`, table: revenue_minute}]
`), 0o644)
		return p
	}
	p := spec("contributions: {sink: {type: jsonl, path: " + filepath.Join(dir, "contrib.jsonl") + "}}")
	if code, _, errOut := run(t, "run", "--quiet", p); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	code, out, errOut := run(t, "explain", p, "--table", "revenue_minute", "--window", "2026-09-01T10:00:00+09:00", "--key", "store-7")
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errOut)
	}
	for _, want := range []string{
		"  orders         2\n",
		`  e1           2026-09-01T10:00:10+09:00  orders "o-001", revenue +25000, top 25000, low 25000, mean 25000, noted +1  (` + in + ":1)\n",
		`  e2           2026-09-01T10:00:20+09:00  orders "o-001", revenue -5000, top -5000, low -5000, mean -5000, noted +0 (null)  (` + in + ":2)\n",
		"  3 events; recomputed from them: orders 2 distinct, revenue 30000.50, top 25000, low -5000, mean 30000.50 / 3, noted 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `+"`) || strings.Contains(out, "orders null") {
		t.Errorf("a distinct count shown as a sum:\n%s", out)
	}

	bare := spec("")
	if code, _, errOut := run(t, "run", "--quiet", bare); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	code, out, errOut = run(t, "explain", bare, "--table", "revenue_minute", "--window", "2026-09-01T10:00:00+09:00", "--key", "store-7")
	if want := "\ncontributing events: not recorded: stage revenue has no contributions sink. To record the events behind each row from the next run on, add to the stage\n" +
		"  contributions: {sink: {type: jsonl, path: out/revenue.events.jsonl}}\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("without contributions: exit %d, %s\n%s", code, errOut, out)
	}
}
