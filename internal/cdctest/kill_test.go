package cdctest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var long = flag.Bool("long", false, "run the long kill loop (100 kills)")

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// tidemarkBinary builds cmd/tidemark once per test binary.
func tidemarkBinary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tidemark-cdctest-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binary = filepath.Join(dir, "tidemark")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/tidemark/tidemark/cmd/tidemark").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building tidemark: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// txnYAML is revenueYAML's stage beside two counting the marker rows of
// each upstream transaction: txns those of a window the watermark passed
// early on (each marker a late record re-firing it at once: rows
// emitted in the middle of a transaction), txne those of a window open
// until the sentinel (early firings every 100 ms emit its rows).
const txnYAML = `name: {{NAME}}
source:
  type: postgres_cdc
  dsn: {{DSN}}
  table: {{SCHEMA}}.orders
  publication: {{PUB}}
  poll_timeout: 100ms
  status_interval: 200ms
  schema: {store: string, amount: decimal, created_at: timestamp, txn: string, txn_rows: int}
event_time: {field: created_at, out_of_orderness: 1s}
stages:
  - name: revenue
    filter: store != "txn" && store != "txe"
    key: [store]
    window: {type: tumbling, size: 1m}
    allowed_lateness: 24h
    aggregates: {revenue: sum(amount), orders: count()}
    emit: {mode: update}
    sinks:
      - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.revenue}
  - name: txns
    input: source
    filter: store == "txn"
    key: [txn]
    window: {type: tumbling, size: 1m}
    allowed_lateness: 24h
    aggregates: {n: count(), rows: max(txn_rows)}
    emit: {mode: update}
    sinks:
      - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.txns}
  - name: txne
    input: source
    filter: store == "txe"
    key: [txn]
    window: {type: tumbling, size: 1h}
    allowed_lateness: 24h
    aggregates: {n: count(), rows: max(txn_rows)}
    emit: {mode: update, early_every: 100ms}
    sinks:
      - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.txne}
checkpoint: {dir: {{DIR}}/ck, interval: 300ms}
`

const txnDDL = `CREATE TABLE orders (id int PRIMARY KEY, store text NOT NULL, amount numeric(12,2) NOT NULL,
	status text NOT NULL DEFAULT 'paid', created_at timestamptz NOT NULL, txn text, txn_rows int)`

// markedTxn writes one transaction of w between marker rows, which
// nothing changes later: first a "txn" and a "txe" marker, last another
// of each, every one with txn = the transaction's name and txn_rows = 2.
// A sink commit holding part of the transaction shows a marker count
// below 2.
func (w *writer) markedTxn(ctx context.Context) error {
	name := fmt.Sprintf("m%d", w.txns)
	marker := func(k int, store string, at time.Duration) string {
		return fmt.Sprintf(`INSERT INTO orders (id, store, amount, created_at, txn, txn_rows) VALUES (%d, '%s', 0, '%s', '%s', 2)`,
			10_000_000+4*w.txns+k, store, w.base.Add(at).Format(time.RFC3339), name)
	}
	w.stmts = append(w.stmts[:0], "BEGIN", marker(0, "txn", 0), marker(1, "txe", 10*time.Minute))
	n := 1 + w.rng.IntN(6)
	for range n {
		switch k := w.rng.IntN(10); {
		case k < 4 || len(w.live) < 3:
			w.stmts = append(w.stmts, w.insertSQL())
		case k < 7:
			id := w.live[w.rng.IntN(len(w.live))]
			w.stmts = append(w.stmts, fmt.Sprintf(`UPDATE orders SET amount = amount + %d, status = 'changed' WHERE id = %d`, 1+w.rng.IntN(9), id))
		case k < 8:
			id := w.live[w.rng.IntN(len(w.live))]
			w.stmts = append(w.stmts, fmt.Sprintf(`UPDATE orders SET store = 's%d' WHERE id = %d`, w.rng.IntN(5), id))
		default:
			i := w.rng.IntN(len(w.live))
			w.stmts = append(w.stmts, fmt.Sprintf(`DELETE FROM orders WHERE id = %d`, w.live[i]))
			w.live = append(w.live[:i], w.live[i+1:]...)
			w.dels++
		}
	}
	w.stmts = append(w.stmts, marker(2, "txn", 0), marker(3, "txe", 10*time.Minute), "COMMIT")
	w.txns++
	for _, q := range w.stmts {
		if _, err := w.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// TestKillDuringSnapshotAndStream kills `tidemark run` with SIGKILL at
// random instants — the first ones early, during the initial snapshot
// and its hand-off to the stream — while a writer commits transactions of
// inserts, updates and deletes; the run is restarted each time. A
// watcher reads the marker counts of every transaction at each sink
// commit: none may show part of a transaction. At the end the result
// table equals the batch recomputation by SELECT on the source. 20 kills;
// 100 with -long.
func TestKillDuringSnapshotAndStream(t *testing.T) {
	kills := 20
	if *long {
		kills = 100
	}
	bin := tidemarkBinary(t)
	f := newFixture(t, txnDDL)
	f.publish("orders")
	wconn := f.newConn()
	w := newWriter(f, 29, 1)
	w.conn = wconn
	// A snapshot of some size, so that early kills fall into it.
	var b strings.Builder
	b.WriteString(`INSERT INTO orders (id, store, amount, created_at, txn) VALUES `)
	for i := range 20_000 {
		if i > 0 {
			b.WriteString(", ")
		}
		w.next++
		w.live = append(w.live, w.next-1)
		fmt.Fprintf(&b, "(%d, 's%d', %d.%02d, '%s', 'init')", w.next-1, w.rng.IntN(5), 1+w.rng.IntN(500), w.rng.IntN(100),
			w.base.Add(time.Duration(w.rng.IntN(20*60))*time.Second).Format(time.RFC3339))
	}
	f.exec(b.String())
	yaml := f.writePipeline(txnYAML)

	// The writer: a transaction every few milliseconds until stopped.
	wctx, stopWriter := context.WithCancel(context.Background())
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			if err := w.markedTxn(wctx); err != nil {
				if wctx.Err() == nil {
					werr = err
				}
				return
			}
			time.Sleep(time.Duration(2+w.rng.IntN(8)) * time.Millisecond)
		}
	}()
	defer func() { stopWriter(); wg.Wait() }()

	// The watcher: partial transactions at any commit of the txns table.
	var partial atomic.Value
	var checks atomic.Int64
	watchCtx, stopWatch := context.WithCancel(context.Background())
	conn := f.newConn()
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		q := `SELECT 'txns ' || txn || ': ' || n || ' of ' || rows FROM "` + f.schema + `".txns WHERE n <> rows
			UNION ALL SELECT 'txne ' || txn || ': ' || n || ' of ' || rows FROM "` + f.schema + `".txne WHERE n <> rows LIMIT 3`
		for watchCtx.Err() == nil {
			rows, err := conn.Query(watchCtx, q)
			if err == nil {
				var bad []string
				for rows.Next() {
					var s string
					if rows.Scan(&s) == nil {
						bad = append(bad, s)
					}
				}
				rows.Close()
				if rows.Err() == nil {
					checks.Add(1)
				}
				if len(bad) > 0 && partial.Load() == nil {
					partial.Store(strings.Join(bad, "; "))
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { stopWatch(); watch.Wait() }()

	rng := rand.New(rand.NewPCG(29, 1))
	inSnapshot := 0
	for k := range kills {
		cmd, out := f.startBinary(bin, yaml)
		// The first kills come early (the snapshot and the hand-off), the
		// others anywhere in the first 1.5 s.
		delay := time.Duration(150+rng.IntN(1350)) * time.Millisecond
		if k < 5 {
			delay = time.Duration(100+rng.IntN(300)) * time.Millisecond
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("run %d ended before its kill (%v):\n%s", k, err, out)
		}
		if !strings.Contains(out.String(), "initial snapshot of") && !f.hasCheckpoint() {
			inSnapshot++
		}
		if p := partial.Load(); p != nil {
			t.Fatalf("after kill %d: a commit shows part of an upstream transaction: %s", k, p)
		}
	}
	if werr != nil {
		t.Fatal(werr)
	}
	// The last run: the writer stops, the sentinel fires every window,
	// and the table must converge.
	cmd, out := f.startBinary(bin, yaml)
	time.Sleep(500 * time.Millisecond)
	stopWriter()
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	w.sentinel()
	end := f.query(`SELECT pg_current_wal_lsn()`)[0]
	for deadline := time.Now().Add(90 * time.Second); !f.resultExists() || f.diff() != ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("the result table does not converge: %s\nthe run's output:\n%s", f.diff(), out)
		}
	}
	// The marker tables converge too: every marker pair complete.
	for _, tb := range []string{"txns", "txne"} {
		if bad := f.query(`SELECT txn, n, rows FROM "` + f.schema + `".` + tb + ` WHERE n <> rows`); len(bad) > 0 {
			t.Fatalf("%s: partial transactions at the end: %v", tb, bad)
		}
		// (The writer's last transaction may have been cut by its stop:
		// the committed ones are those whose markers are in orders.)
		want := f.query(`SELECT count(DISTINCT txn) FROM "` + f.schema + `".orders WHERE store = 'txn'`)[0]
		if got := f.query(`SELECT count(*) FROM "` + f.schema + `".` + tb)[0]; got != want {
			t.Fatalf("%s holds %s transactions, the writer committed %s", tb, got, want)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the last run: %v\n%s", err, out)
	}
	stopWatch()
	watch.Wait()
	if p := partial.Load(); p != nil {
		t.Fatalf("a commit showed part of an upstream transaction: %s", p)
	}
	// The slot was confirmed through the last change.
	if ok := f.query(`SELECT confirmed_flush_lsn >= '` + end + `' FROM pg_replication_slots WHERE slot_name = '` + f.slot + `'`); len(ok) != 1 || ok[0] != "t" {
		t.Fatalf("slot %s: confirmed_flush_lsn before %s after a clean stop: %v", f.slot, end, f.query(`SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '`+f.slot+`'`))
	}
	t.Logf("%d kills (%d before the first checkpoint), %d transactions (%d deletes), %d commits watched", kills, inSnapshot, w.txns, w.dels, checks.Load())
}

// startBinary starts `tidemark run` on the pipeline file, with batches
// of 16 records: most upstream transactions then end in another batch
// than they began in.
func (f *fixture) startBinary(bin, yaml string) (*exec.Cmd, *bytes.Buffer) {
	f.t.Helper()
	cmd := exec.Command(bin, "run", "--quiet", "--batch-size", "16", yaml)
	cmd.Dir = f.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
	})
	return cmd, &out
}

// hasCheckpoint reports whether the pipeline's checkpoint directory holds
// a checkpoint.
func (f *fixture) hasCheckpoint() bool {
	m, _ := filepath.Glob(filepath.Join(f.dir, "ck", "*"))
	for _, p := range m {
		if strings.Contains(filepath.Base(p), "manifest") || strings.HasSuffix(p, ".tmck") {
			return true
		}
	}
	return false
}
