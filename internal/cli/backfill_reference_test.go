package cli

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// categoryRows returns a SQLite table's (window_start, category, revenue,
// n, the lineage's reference part) rows.
func categoryRows(t *testing.T, db, table string) string {
	t.Helper()
	d, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.Query(`SELECT window_start, category, revenue, n, lineage FROM "` + table + `" ORDER BY window_start, category`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var ws, cat, rev, lin string
		var n int64
		if err := rows.Scan(&ws, &cat, &rev, &n, &lin); err != nil {
			t.Fatal(err)
		}
		ref := ""
		for _, kv := range strings.Split(lin, ";") {
			if v, ok := strings.CutPrefix(kv, "reference="); ok {
				ref = v
			}
		}
		fmt.Fprintf(&b, "%s %s %s %d %s\n", ws, cat, rev, n, ref)
	}
	return b.String()
}

// TestBackfillUsesSeptembersReferenceVersions: product p1's category
// changes from toys to games on 15 September (a versioned reference,
// reference.valid_from). The live run gives the rows of the 10th and 14th
// to toys and those from the 15th on to games, and each row's lineage
// names the reference version as of its window (the file's hash and the
// newest valid_from at or before the window's last instant). Later the
// reference gains an October version (p1 → puzzles); a backfill of
// September then still uses September's versions: the same rows, the new
// file's hash, the same valid_from instants.
func TestBackfillUsesSeptembersReferenceVersions(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	add := func(id, ts, product string, amount int) {
		lines = append(lines, fmt.Sprintf(`{"event_id":%q,"ts":%q,"product":%q,"amount":%d}`, id, ts, product, amount))
	}
	add("e1", "2026-09-10T12:00:00+09:00", "p1", 100)
	add("e2", "2026-09-10T13:00:00+09:00", "p2", 10)
	add("e3", "2026-09-14T23:59:59+09:00", "p1", 200) // the last second of the old category
	add("e4", "2026-09-15T00:00:00+09:00", "p1", 300) // the new category's first instant
	add("e5", "2026-09-20T09:00:00+09:00", "p1", 400)
	add("e6", "2026-09-20T10:00:00+09:00", "p2", 20)
	add("e7", "2026-10-02T10:00:00+09:00", "p1", 5) // October: outside the backfill
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	ref := filepath.Join(dir, "products.csv")
	september := "product,category,valid_from\n" +
		"p1,toys,2026-09-01T00:00:00+09:00\n" +
		"p2,books,2026-09-01T00:00:00+09:00\n" +
		"p1,games,2026-09-15T00:00:00+09:00\n"
	os.WriteFile(ref, []byte(september), 0o644)
	db := filepath.Join(dir, "out.db")
	p := filepath.Join(dir, "live.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf(`name: revenue
source: {type: file, path: %s, schema: {amount: decimal}}
event_time: {field: ts}
reference: {path: %s, key: product, valid_from: valid_from, fields: {category: string}}
key: [category]
window: {type: tumbling, size: 24h, timezone: Asia/Seoul}
allowed_lateness: 2000h
aggregates: {revenue: sum(amount), n: count()}
emit: {mode: final}
sinks: [{type: sqlite, path: %s, table: revenue__live}]
`, in, ref, db)), 0o644)
	code, stdout, errOut := run(t, "run", "--parallelism", "2", p)
	if code != 0 {
		t.Fatalf("live run: %s", errOut)
	}
	h1 := hashOf(september)
	if !strings.Contains(stdout, "(sha256:"+h1+", 2 keys; 0 records with an unknown key)") {
		t.Errorf("the summary lacks the reference line:\n%s", stdout)
	}
	old, cut := "@2026-08-31T15:00:00Z", "@2026-09-14T15:00:00Z" // 1 and 15 September, 00:00 in Seoul
	want := "2026-09-10T00:00:00+09:00 books 10 1 sha256:" + h1 + old + "\n" +
		"2026-09-10T00:00:00+09:00 toys 100 1 sha256:" + h1 + old + "\n" +
		"2026-09-14T00:00:00+09:00 toys 200 1 sha256:" + h1 + old + "\n" +
		"2026-09-15T00:00:00+09:00 games 300 1 sha256:" + h1 + cut + "\n" +
		"2026-09-20T00:00:00+09:00 books 20 1 sha256:" + h1 + cut + "\n" +
		"2026-09-20T00:00:00+09:00 games 400 1 sha256:" + h1 + cut + "\n" +
		"2026-10-02T00:00:00+09:00 games 5 1 sha256:" + h1 + cut + "\n"
	if got := categoryRows(t, db, "revenue__live"); got != want {
		t.Fatalf("live table:\n%s\nwant\n%s", got, want)
	}
	// At one task (push mode: rows straight to the writer) the same.
	p2 := filepath.Join(dir, "par1.yaml")
	spec2, _ := os.ReadFile(p)
	os.WriteFile(p2, []byte(strings.Replace(strings.Replace(string(spec2), "revenue__live", "revenue_par1__live", 1), "name: revenue", "name: revenue_par1", 1)), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", "--parallelism", "1", p2); code != 0 {
		t.Fatalf("run at parallelism 1: %s", errOut)
	}
	if got := categoryRows(t, db, "revenue_par1__live"); got != want {
		t.Errorf("at parallelism 1:\n%s\nwant\n%s", got, want)
	}

	// October's version arrives in the reference; September is replayed.
	october := september + "p1,puzzles,2026-10-01T00:00:00+09:00\n"
	os.WriteFile(ref, []byte(october), 0o644)
	h2 := hashOf(october)
	code, stdout, errOut = run(t, "backfill", p, "--from", "2026-09-01T00:00:00+09:00", "--to", "2026-10-01T00:00:00+09:00", "--result-version", "v2")
	if code != 0 {
		t.Fatalf("backfill: code %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "outside the range               1") {
		t.Errorf("backfill summary:\n%s", stdout)
	}
	want2 := strings.ReplaceAll(strings.Join(strings.SplitAfter(want, "\n")[:6], ""), h1, h2)
	if got := categoryRows(t, db, "revenue__v2"); got != want2 {
		t.Errorf("backfill of September, revenue__v2:\n%s\nwant\n%s", got, want2)
	}
	if got := categoryRows(t, db, "revenue__live"); got != want {
		t.Errorf("the backfill changed the live table:\n%s", got)
	}
}

// hashOf is a reference file's version as the lineage prints it: the first
// 12 hex digits of its content's SHA-256, computed here independently.
func hashOf(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:6])
}

// TestVersionedReferenceErrors: a versioned reference file that repeats a
// key's version time, lacks the version-time column or holds a bad or
// empty version time is refused when the run starts, naming the file, the
// line and the column.
func TestVersionedReferenceErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"ts":"2026-09-10T12:00:00+09:00","product":"p1","amount":1}`+"\n"), 0o644)
	for _, c := range []struct{ name, file, want string }{
		{"twice", "product,category,valid_from\np1,toys,2026-09-01T00:00:00+09:00\np1,games,2026-09-01T00:00:00+09:00\n",
			`products.csv:3: key "p1" listed twice with valid_from 2026-08-31T15:00:00Z`},
		{"no column", "product,category\np1,toys\n", `products.csv: the header has no column "valid_from" (columns: product, category)`},
		{"empty", "product,category,valid_from\np1,toys,\n", `products.csv:2: column valid_from (reference.valid_from): null or missing`},
		{"no offset", "product,category,valid_from\np1,toys,2026-09-01T00:00:00\n", `products.csv:2: column valid_from (reference.valid_from): "2026-09-01T00:00:00"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := filepath.Join(dir, "products.csv")
			os.WriteFile(ref, []byte(c.file), 0o644)
			p := filepath.Join(dir, "p.yaml")
			os.WriteFile(p, []byte(fmt.Sprintf(`name: revenue
source: {type: file, path: %s, schema: {amount: decimal}}
event_time: {field: ts}
reference: {path: %s, key: product, valid_from: valid_from, fields: {category: string}}
key: [category]
window: {type: tumbling, size: 24h}
aggregates: {n: count()}
`, in, ref)), 0o644)
			code, _, errOut := run(t, "run", "--quiet", p)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("code %d, stderr %q, want 2 and %q", code, errOut, c.want)
			}
		})
	}
}

// joinedLines returns a join's JSONL rows as "op id product amount
// category valid_from" lines, in file order.
func joinedLines(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		fmt.Fprintf(&b, "%v %v %v %v %v %v\n", m["op"], m["id"], m["product"], m["amount"], m["category"], m["valid_from"])
	}
	return b.String()
}

// TestTemporalJoinReadsTheVersionedReference: a temporal join stage with
// join.right.input: reference reads the versioned reference file as an
// input of versions (valid_from its event time) and gives each sale its
// product's category as of the sale's time. A backfill from 12 September
// keeps the versions from before the range (p1's toys of 1 September is
// the version valid on the 14th). A temporal join against a reference
// without valid_from is refused naming the key.
func TestTemporalJoinReadsTheVersionedReference(t *testing.T) {
	dir := t.TempDir()
	events := `{"event_id":"e1","ts":"2026-09-10T12:00:00+09:00","product":"p1","amount":100}
{"event_id":"e3","ts":"2026-09-14T23:59:59+09:00","product":"p1","amount":200}
{"event_id":"e4","ts":"2026-09-15T00:00:00+09:00","product":"p1","amount":300}
{"event_id":"e6","ts":"2026-09-20T10:00:00+09:00","product":"p2","amount":20}
{"event_id":"e8","ts":"2026-09-21T10:00:00+09:00","product":"p9","amount":1}
`
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(events), 0o644)
	ref := filepath.Join(dir, "products.csv")
	os.WriteFile(ref, []byte("product,category,valid_from\n"+
		"p1,games,2026-09-15T00:00:00+09:00\n"+ // out of order in the file: no matter
		"p1,toys,2026-09-01T00:00:00+09:00\n"+
		"p2,books,2026-09-01T00:00:00+09:00\n"), 0o644)
	out := filepath.Join(dir, "enriched.jsonl")
	yaml := fmt.Sprintf(`name: sales
source: {type: file, path: %s, schema: {amount: decimal}}
event_time: {field: ts}
reference: {path: %s, key: product, valid_from: valid_from, fields: {category: string}}
stages:
  - name: enriched
    join:
      type: temporal
      kind: left
      left: {as: s}
      right: {input: reference, as: r}
      on: ["s.product = r.product"]
      select: {id: s.event_id, product: s.product, amount: s.amount, category: r.category, valid_from: r.valid_from}
    allowed_lateness: 1h
    sinks: [{type: jsonl, path: %s}]
`, in, ref, out)
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(yaml), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", p); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	want := "insert e1 p1 100 toys 2026-08-31T15:00:00Z\n" +
		"insert e3 p1 200 toys 2026-08-31T15:00:00Z\n" +
		"insert e4 p1 300 games 2026-09-14T15:00:00Z\n" +
		"insert e6 p2 20 books 2026-08-31T15:00:00Z\n" +
		"insert e8 p9 1 <nil> <nil>\n"
	if got := joinedLines(t, out); got != want {
		t.Errorf("live:\n%s\nwant\n%s", got, want)
	}
	if code, _, errOut := run(t, "backfill", p, "--from", "2026-09-12T00:00:00+09:00", "--to", "2026-10-01T00:00:00+09:00", "--result-version", "v2"); code != 0 {
		t.Fatalf("backfill: %s", errOut)
	}
	if got, want := joinedLines(t, filepath.Join(dir, "enriched.v2.jsonl")), strings.SplitN(want, "\n", 2)[1]; got != want {
		t.Errorf("backfill from 12 September:\n%s\nwant\n%s", got, want)
	}

	for _, c := range []struct{ edit, want string }{
		{"valid_from: valid_from, ", `stages[0].join.right.input: "reference": a temporal join needs the reference's version-time column: set reference.valid_from`},
		{"reference: {path: " + ref + ", key: product, valid_from: valid_from, fields: {category: string}}\n", `stages[0].join.right.input: "reference": the pipeline has no reference`},
		{"type: temporal", `stages[0].join.right.input: "reference": the reference data is joined as versions, as the right side of a temporal join`},
	} {
		bad := strings.Replace(yaml, c.edit, "", 1)
		if c.edit == "type: temporal" {
			bad = strings.Replace(yaml, "type: temporal", "type: regular\n      ttl: 1h", 1)
		}
		os.WriteFile(p, []byte(bad), 0o644)
		if code, _, errOut := run(t, "run", "--quiet", p); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("without %q: code %d, %s\nwant %q", c.edit, code, errOut, c.want)
		}
	}
}

// TestKafkaReferenceTopic: the reference read from a Kafka topic as a
// compacted changelog (reference.topic): the newest record of each record
// key is its value (p1's 1 September version corrected from "wrong" to
// toys), a tombstone deletes one (p3), and the records surviving give the
// same rows as the file did, with the version hash of those records
// (length-prefixed keys and values in offset order, computed here).
func TestKafkaReferenceTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "product-versions"))
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
	type kv struct{ k, v string }
	var survivors []kv
	send := func(k, v string, survives bool) {
		t.Helper()
		rec := &kgo.Record{Topic: "product-versions", Key: []byte(k)}
		if v != "" {
			rec.Value = []byte(v)
		}
		if err := prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if survives {
			survivors = append(survivors, kv{k, v})
		}
	}
	send("p1@09-01", `{"product":"p1","category":"wrong","valid_from":"2026-09-01T00:00:00+09:00"}`, false)
	send("p2@09-01", `{"product":"p2","category":"books","valid_from":"2026-09-01T00:00:00+09:00"}`, true)
	send("p3@09-01", `{"product":"p3","category":"junk","valid_from":"2026-09-01T00:00:00+09:00"}`, false)
	send("p1@09-15", `{"product":"p1","category":"games","valid_from":"2026-09-15T00:00:00+09:00"}`, true)
	send("p1@09-01", `{"product":"p1","category":"toys","valid_from":"2026-09-01T00:00:00+09:00"}`, true)
	send("p3@09-01", "", false) // a tombstone
	h := sha256.New()
	for _, s := range survivors {
		for _, b := range []string{s.k, s.v} {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write([]byte(b))
		}
	}
	hash := "sha256:" + hex.EncodeToString(h.Sum(nil)[:6])

	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(`{"ts":"2026-09-10T12:00:00+09:00","product":"p1","amount":100}
{"ts":"2026-09-14T23:59:59+09:00","product":"p2","amount":10}
{"ts":"2026-09-15T00:00:00+09:00","product":"p1","amount":300}
`), 0o644)
	db := filepath.Join(dir, "out.db")
	p := filepath.Join(dir, "p.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf(`name: revenue
source: {type: file, path: %s, schema: {amount: decimal}}
event_time: {field: ts}
reference: {topic: product-versions, brokers: [%s], key: product, valid_from: valid_from, fields: {category: string}}
key: [category]
window: {type: tumbling, size: 24h, timezone: Asia/Seoul}
allowed_lateness: 2000h
aggregates: {revenue: sum(amount), n: count()}
emit: {mode: final}
sinks: [{type: sqlite, path: %s, table: revenue}]
`, in, brokers[0], db)), 0o644)
	code, stdout, errOut := run(t, "run", p)
	if code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	if !strings.Contains(stdout, "kafka topic product-versions ("+hash+", 2 keys; 0 records with an unknown key)") {
		t.Errorf("summary lacks the reference line with %s:\n%s", hash, stdout)
	}
	want := "2026-09-10T00:00:00+09:00 toys 100 1 " + hash + "@2026-08-31T15:00:00Z\n" +
		"2026-09-14T00:00:00+09:00 books 10 1 " + hash + "@2026-08-31T15:00:00Z\n" +
		"2026-09-15T00:00:00+09:00 games 300 1 " + hash + "@2026-09-14T15:00:00Z\n"
	if got := categoryRows(t, db, "revenue"); got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
}
