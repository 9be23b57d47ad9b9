package orderscdc_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	orderscdc "github.com/tidemark/tidemark/examples/orders-cdc"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/source/pgcdc"
	"github.com/tidemark/tidemark/spec"
)

// TestPipeline runs pipeline.yaml as shipped (its own schema, publication
// and pipeline name) over orders written before it starts (the snapshot)
// and while it runs (the stream), and requires revenue_minute to equal
// revenue per store per minute recomputed by SELECT over the orders that
// are not cancelled (early firings every 200 ms show the minute still
// open).
func TestPipeline(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	pub, name := "tmtest_orders_"+id, "tmtest_orders_cdc_"+id
	slot := pgcdc.SlotName(name)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The run has stopped (its cleanup ran first): its slot can go.
		pgtest.DropSlot(t, dsn, slot)
		conn.Exec(ctx, `DROP PUBLICATION IF EXISTS "`+pub+`"`)
		conn.Close(ctx)
	})
	if err := orderscdc.Setup(ctx, conn, schema, pub); err != nil {
		t.Fatal(err)
	}
	if _, err := orderscdc.Generate(ctx, conn, orderscdc.Options{Schema: schema, Orders: 300, Seed: 3, FirstID: 1}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGURL", dsn)
	t.Setenv("ORDERS_SCHEMA", schema)
	t.Setenv("ORDERS_PUBLICATION", pub)
	p, err := tidemark.Load("pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p.Name = name
	p.Checkpoint.Dir = filepath.Join(dir, "checkpoints")
	p.Checkpoint.Interval = spec.Duration(300 * time.Millisecond)
	p.Quarantine.Sink.Path = filepath.Join(dir, "quarantine.jsonl")
	p.Late.Sink.Path = filepath.Join(dir, "late.jsonl")
	p.EventTime.IdleTimeout = spec.Duration(300 * time.Millisecond)
	// The current minute's row, before its window fires.
	p.Emit.EarlyEvery = spec.Duration(200 * time.Millisecond)
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	var sum *engine.Summary
	var snapshotted atomic.Bool
	logf := func(format string, args ...any) {
		if strings.HasPrefix(format, "postgres_cdc source: initial snapshot of") {
			snapshotted.Store(true)
		}
		t.Logf(format, args...)
	}
	go func() {
		var err error
		sum, err = engine.Run(rctx, pl, engine.Options{Logf: logf})
		done <- err
	}()
	t.Cleanup(func() { stop(); <-done })
	query := func(q string) []string {
		out := pgtest.Dump(t, dsn, q)
		if out == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("the run ended waiting for %s: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	// (A slot being created is active too: the snapshot's end is logged.)
	wait("the stream", func() bool {
		return snapshotted.Load() && len(query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = '`+slot+`' AND active`)) == 1
	})
	st, err := orderscdc.Generate(ctx, conn, orderscdc.Options{Schema: schema, Orders: 300, Seed: 4, FirstID: 301})
	if err != nil {
		t.Fatal(err)
	}
	result := fmt.Sprintf(`SELECT window_start, store_id, revenue, orders FROM "%s".revenue_minute`, schema)
	batch := fmt.Sprintf(`SELECT date_trunc('minute', created_at), store_id, sum(amount), count(*) FROM "%s".orders WHERE status <> 'cancelled' GROUP BY 1, 2`, schema)
	wait("revenue_minute to equal the recomputation", func() bool {
		return len(query(`SELECT 1 FROM pg_tables WHERE schemaname = '`+schema+`' AND tablename = 'revenue_minute'`)) == 1 &&
			len(query(`(`+result+`) EXCEPT ALL (`+batch+`)`))+len(query(`(`+batch+`) EXCEPT ALL (`+result+`)`)) == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil
	if sum.Deletes != int64(st.Deletes) || sum.Quarantined != 0 {
		t.Errorf("deletes %d (the generator made %d while the run streamed), quarantined %d", sum.Deletes, st.Deletes, sum.Quarantined)
	}
	t.Logf("%d windows; streamed %+v", len(query(result)), st)
}
