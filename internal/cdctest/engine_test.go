package cdctest

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
)

const ordersDDL = `CREATE TABLE orders (id int PRIMARY KEY, store text NOT NULL, amount numeric(12,2) NOT NULL,
	status text NOT NULL DEFAULT 'paid', created_at timestamptz NOT NULL, txn text)`

// revenueYAML is revenue per store per minute of the orders table, into
// the postgres table revenue; a day of allowed lateness keeps every
// window of a test open to its changes.
const revenueYAML = `name: {{NAME}}
source:
  type: postgres_cdc
  dsn: {{DSN}}
  table: {{SCHEMA}}.orders
  publication: {{PUB}}
  poll_timeout: 100ms
  status_interval: 200ms
  schema: {store: string, amount: decimal, created_at: timestamp}
event_time: {field: created_at, out_of_orderness: 1s}
key: [store]
window: {type: tumbling, size: 1m}
allowed_lateness: 24h
aggregates: {revenue: sum(amount), orders: count()}
emit: {mode: update}
sinks:
  - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.revenue}
checkpoint: {dir: {{DIR}}/ck, interval: 200ms}
`

// sentinel is the store of the row a test writes last, an hour after the
// others: its event time moves the watermark past every other window.
const sentinel = "zz"

// recomputed is revenue per store per minute by SELECT on the source
// (%s: the schema).
const recomputed = `SELECT date_trunc('minute', created_at) AS window_start, store, sum(amount) AS revenue, count(*) AS orders
	FROM "%s".orders WHERE store NOT IN ('zz', 'txn', 'txe') GROUP BY 1, 2`

// diff returns the rows of the result table revenue and of the batch
// recomputation that the other lacks (EXCEPT ALL both ways), "" when
// they are equal.
func (f *fixture) diff() string {
	f.t.Helper()
	res := `SELECT window_start, store, revenue, orders FROM "` + f.schema + `".revenue WHERE store <> 'zz'`
	rec := fmt.Sprintf(recomputed, f.schema)
	extra := f.query(`(` + res + `) EXCEPT ALL (` + rec + `) ORDER BY 1, 2`)
	missing := f.query(`(` + rec + `) EXCEPT ALL (` + res + `) ORDER BY 1, 2`)
	if len(extra)+len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("in revenue only:\n  %s\nin the recomputation only:\n  %s", strings.Join(extra, "\n  "), strings.Join(missing, "\n  "))
}

// resultExists reports whether the result table exists yet.
func (f *fixture) resultExists() bool {
	return len(f.query(`SELECT 1 FROM pg_tables WHERE schemaname = '`+f.schema+`' AND tablename = 'revenue'`)) == 1
}

// writer writes random changes to orders: inserts, amount and status
// updates, cancellations (deletes) and multi-row transactions, each row's
// txn column naming its transaction.
type writer struct {
	f     *fixture
	conn  *pgx.Conn // markedTxn's connection
	rng   *rand.Rand
	next  int
	live  []int
	txns  int
	dels  int
	base  time.Time
	stmts []string
}

func newWriter(f *fixture, seed uint64, first int) *writer {
	return &writer{f: f, rng: rand.New(rand.NewPCG(seed, 7)), next: first, base: time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)}
}

// insertSQL returns an insert of a new order.
func (w *writer) insertSQL() string {
	id := w.next
	w.next++
	w.live = append(w.live, id)
	at := w.base.Add(time.Duration(w.rng.IntN(20*60)) * time.Second)
	return fmt.Sprintf(`INSERT INTO orders (id, store, amount, created_at, txn) VALUES (%d, 's%d', %d.%02d, '%s', 't%d')`,
		id, w.rng.IntN(5), 1+w.rng.IntN(500), w.rng.IntN(100), at.Format(time.RFC3339), w.txns)
}

// txn writes one transaction of 1 to 5 changes.
func (w *writer) txn() {
	w.stmts = w.stmts[:0]
	n := 1 + w.rng.IntN(5)
	for range n {
		switch k := w.rng.IntN(10); {
		case k < 4 || len(w.live) < 3:
			w.stmts = append(w.stmts, w.insertSQL())
		case k < 7:
			id := w.live[w.rng.IntN(len(w.live))]
			w.stmts = append(w.stmts, fmt.Sprintf(`UPDATE orders SET amount = amount + %d, status = 'changed', txn = 't%d' WHERE id = %d`, 1+w.rng.IntN(9), w.txns, id))
		case k < 8:
			id := w.live[w.rng.IntN(len(w.live))]
			w.stmts = append(w.stmts, fmt.Sprintf(`UPDATE orders SET store = 's%d', txn = 't%d' WHERE id = %d`, w.rng.IntN(5), w.txns, id))
		default:
			i := w.rng.IntN(len(w.live))
			w.stmts = append(w.stmts, fmt.Sprintf(`DELETE FROM orders WHERE id = %d`, w.live[i]))
			w.live = append(w.live[:i], w.live[i+1:]...)
			w.dels++
		}
	}
	w.txns++
	w.f.tx(w.stmts...)
}

// sentinel writes the last row, an hour after the others.
func (w *writer) sentinel() {
	w.f.exec(fmt.Sprintf(`INSERT INTO orders (id, store, amount, created_at) VALUES (%d, '%s', 0, '%s')`, 1_000_000+w.txns, sentinel, w.base.Add(time.Hour).Format(time.RFC3339)))
}

// TestSnapshotAndStream: rows present before the run come through the
// initial snapshot, then inserts, updates (of the amount, and of the
// group key), deletes and multi-row transactions through the stream; the
// result table converges to the batch recomputation, at one task and at
// three.
func TestSnapshotAndStream(t *testing.T) {
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			f := newFixture(t, ordersDDL)
			f.publish("orders")
			w := newWriter(f, uint64(par), 1)
			for range 30 {
				w.txn()
			}
			r := f.start(revenueYAML, engine.Options{Parallelism: par})
			f.waitStreaming(r)
			before := w.dels
			for range 40 {
				w.txn()
			}
			w.sentinel()
			f.waitFor(r, 60*time.Second, "the result table to equal the recomputation", func() bool {
				return f.resultExists() && f.diff() == ""
			})
			sum, err := r.stop()
			if err != nil {
				t.Fatal(err)
			}
			if d := f.diff(); d != "" {
				t.Fatal(d)
			}
			// Every change ends in one counter: a stage input (an insert,
			// an update, a snapshot row), a delete, a duplicate, a stale
			// version or quarantine.
			st := sum.Stages[0].Counters
			if ends := st.In + sum.Deletes + sum.Duplicates + sum.StaleVersions + sum.Quarantined; ends != sum.EventsRead || sum.Quarantined != 0 {
				t.Errorf("%d changes read, %d counted (in %d, deletes %d, duplicates %d, stale %d, quarantined %d)", sum.EventsRead, ends, st.In, sum.Deletes, sum.Duplicates, sum.StaleVersions, sum.Quarantined)
			}
			if st.Retractions != sum.Superseded {
				t.Errorf("%d retractions reached the stage, %d rows superseded", st.Retractions, sum.Superseded)
			}
			if sum.Deletes != int64(w.dels-before) {
				t.Errorf("summary: %d deletes, the writer made %d after the snapshot", sum.Deletes, w.dels-before)
			}
			t.Logf("%d transactions, %d deletes; read %d, superseded %d, duplicates %d", w.txns, w.dels, sum.EventsRead, sum.Superseded, sum.Duplicates)
		})
	}
}
