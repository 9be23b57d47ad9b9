package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/internal/devregistry"
)

// TestConsume: consume prints a topic's committed records (never those of
// an aborted transaction), and with --final the newest version of each
// key, sorted by key.
func TestConsume(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "rows"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	txn := func(commit kgo.TransactionEndTry, recs ...*kgo.Record) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(key, value string) *kgo.Record {
		return &kgo.Record{Topic: "rows", Key: []byte(key), Value: []byte(value)}
	}
	txn(kgo.TryCommit, rec(`["b"]`, `{"k":"b","version":1}`), rec(`["a"]`, `{"k":"a","version":1}`))
	txn(kgo.TryAbort, rec(`["a"]`, `{"k":"a","version":9}`))
	txn(kgo.TryCommit, rec(`["a"]`, `{"k":"a","version":2}`))
	code, out, errOut := run(t, "consume", "--brokers", addr, "--topic", "rows", "--final", "--idle", "500ms")
	if want := "{\"k\":\"a\",\"version\":2}\n{\"k\":\"b\",\"version\":1}\n"; code != 0 || out != want {
		t.Fatalf("consume --final: exit %d, stdout %q (want %q), stderr %s", code, out, want, errOut)
	}
	code, out, _ = run(t, "consume", "--brokers", addr, "--topic", "rows", "--idle", "500ms")
	if code != 0 || strings.Contains(out, `"version":9`) || strings.Count(out, "\n") != 3 {
		t.Fatalf("consume: exit %d, stdout %q", code, out)
	}
}

// TestConsumeWaitsForOpenTransactions: a transaction left open (a
// producer killed mid-transaction) holds its partition's records back
// from read_committed readers; consume waits for it instead of printing a
// table without the rows committed after it, says so, and prints them
// once it commits.
func TestConsumeWaitsForOpenTransactions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "rows"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx := context.Background()
	open, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("open"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	later, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("later"))
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	rec := func(key, value string) *kgo.Record {
		return &kgo.Record{Topic: "rows", Key: []byte(key), Value: []byte(value)}
	}
	// "open" writes a's version 1 and leaves its transaction open; "later"
	// commits b after it, in the same partition: read_committed stops
	// before a's record, so b is invisible too while "open" is open.
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, rec(`["a"]`, `{"k":"a","version":1}`)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := later.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := later.ProduceSync(ctx, rec(`["b"]`, `{"k":"b","version":1}`)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := later.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// "open" commits once consume has said it waits (not after a fixed
	// sleep, which a loaded machine could outrun); should it never say
	// so within the deadline, "open" commits anyway and the assertions
	// below fail on what consume printed.
	errw := &watchWriter{want: "waiting for open transactions", seen: make(chan struct{})}
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		select {
		case <-errw.seen:
		case <-time.After(30 * time.Second):
		}
		_ = open.EndTransaction(ctx, kgo.TryCommit)
	}()
	var outb bytes.Buffer
	code := Main([]string{"consume", "--brokers", addr, "--topic", "rows", "--final", "--idle", "300ms"}, strings.NewReader(""), &outb, errw)
	<-committed
	out, errOut := outb.String(), errw.String()
	if want := "{\"k\":\"a\",\"version\":1}\n{\"k\":\"b\",\"version\":1}\n"; code != 0 || out != want {
		t.Fatalf("consume --final: exit %d, stdout %q (want %q), stderr %s", code, out, want, errOut)
	}
	if !strings.Contains(errOut, "waiting for open transactions on rows[0]: offsets 0–") {
		t.Fatalf("stderr does not say it waited: %s", errOut)
	}
}

// TestConsumeAvro (issue 25 item 5): consume --format avro prints Avro
// values in the Confluent wire format as JSON, through the registry
// (here $SCHEMA_REGISTRY_URL), exact decimals (with the fewest digits
// that hold them, as the side outputs render them) and RFC 3339 times; with
// --final the newest version of each key. Without --format it prints the
// bytes as they are; a registry that cannot be reached fails it, naming
// the registry.
func TestConsumeAvro(t *testing.T) {
	addr := kafkaCluster(t, 1, "rows")
	srv := httptest.NewServer(devregistry.New().Handler())
	defer srv.Close()
	schema := writeFile(t, "row.avsc", `{"type":"record","name":"Row","fields":[
	  {"name":"k","type":"string"},
	  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
	  {"name":"version","type":"long"}]}`)
	in := writeFile(t, "rows.jsonl", `{"k":"b","amount":"1.50","at":"2026-09-01T10:00:00Z","version":1}
{"k":"a","amount":"20.00","at":"2026-09-01T10:01:00Z","version":1}
{"k":"a","amount":"25.00","at":"2026-09-01T10:02:00Z","version":2}
`)
	if code, _, stderr := run(t, "produce", in, "--topic", "rows", "--brokers", addr, "--key-field", "k", "-q",
		"--format", "avro", "--schema", schema, "--registry", srv.URL); code != 0 {
		t.Fatalf("produce: exit %d: %s", code, stderr)
	}
	t.Setenv("SCHEMA_REGISTRY_URL", srv.URL)
	code, out, stderr := run(t, "consume", "--brokers", addr, "--topic", "rows", "--format", "avro", "--idle", "500ms")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], `"k":"b"`) || !strings.Contains(lines[0], `"amount":1.5,`) ||
		!strings.Contains(lines[0], `"at":"2026-09-01T10:00:00Z"`) || !strings.Contains(lines[0], `"_schema_id":`) {
		t.Fatalf("consume --format avro: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	code, out, stderr = run(t, "consume", "--brokers", addr, "--topic", "rows", "--format", "avro", "--final", "--idle", "500ms")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(out, `"amount":25,`) || strings.Contains(out, `"amount":20,`) {
		t.Fatalf("consume --format avro --final: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if code, out, _ = run(t, "consume", "--brokers", addr, "--topic", "rows", "--idle", "500ms"); code != 0 || strings.Contains(out, `"k":"a"`) {
		t.Fatalf("consume without --format printed decoded values: %q", out)
	}
	dead := httptest.NewServer(nil)
	dead.Close()
	code, _, stderr = run(t, "consume", "--brokers", addr, "--topic", "rows", "--format", "avro", "--registry", dead.URL, "--idle", "500ms")
	if code != 1 || !strings.Contains(stderr, "schema registry at "+dead.URL) {
		t.Fatalf("consume with a registry that is down: exit %d, %q", code, stderr)
	}
}

// watchWriter is a syncBuffer that closes seen the first time what was
// written to it contains want.
type watchWriter struct {
	syncBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.syncBuffer.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}
