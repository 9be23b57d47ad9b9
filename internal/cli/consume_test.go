package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = open.EndTransaction(ctx, kgo.TryCommit)
	}()
	code, out, errOut := run(t, "consume", "--brokers", addr, "--topic", "rows", "--final", "--idle", "300ms")
	if want := "{\"k\":\"a\",\"version\":1}\n{\"k\":\"b\",\"version\":1}\n"; code != 0 || out != want {
		t.Fatalf("consume --final: exit %d, stdout %q (want %q), stderr %s", code, out, want, errOut)
	}
	if !strings.Contains(errOut, "waiting for open transactions on rows[0]: offsets 0–") {
		t.Fatalf("stderr does not say it waited: %s", errOut)
	}
}
