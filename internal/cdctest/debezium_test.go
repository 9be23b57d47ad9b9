package cdctest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/row"
)

// dbzRow is one row image of the orders table.
type dbzRow struct {
	ID        int64   `json:"id"`
	Store     string  `json:"store"`
	Amount    string  `json:"amount"` // decimal.handling.mode string
	Status    string  `json:"status"`
	CreatedAt string  `json:"created_at"` // io.debezium.time.ZonedTimestamp
	Txn       *string `json:"txn"`
}

// dbzEvent is one change in Debezium's envelope.
type dbzEvent struct {
	Before *dbzRow   `json:"before"`
	After  *dbzRow   `json:"after"`
	Source dbzSource `json:"source"`
	Op     string    `json:"op"`
	TsMs   int64     `json:"ts_ms"`
	key    int64
}

type dbzSource struct {
	Version   string `json:"version"`
	Connector string `json:"connector"`
	Name      string `json:"name"`
	TsMs      int64  `json:"ts_ms"`
	Snapshot  string `json:"snapshot"`
	DB        string `json:"db"`
	Schema    string `json:"schema"`
	Table     string `json:"table"`
	TxID      int64  `json:"txId"`
	LSN       int64  `json:"lsn"`
}

// recorder writes changes to orders and records each as Debezium would
// publish it: the row images from RETURNING, the position after the
// statement as source.lsn (growing with the WAL, so each key's versions
// grow), the transaction's id and start time.
type recorder struct {
	f      *fixture
	w      *writer
	events []dbzEvent
}

const rowCols = `id, store, amount::text, status, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), txn`

func (rc *recorder) scanRows(q string) []dbzRow {
	rows, err := rc.f.conn.Query(context.Background(), q)
	if err != nil {
		rc.f.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []dbzRow
	for rows.Next() {
		var r dbzRow
		if err := rows.Scan(&r.ID, &r.Store, &r.Amount, &r.Status, &r.CreatedAt, &r.Txn); err != nil {
			rc.f.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		rc.f.t.Fatalf("%s: %v", q, err)
	}
	return out
}

func (rc *recorder) source(lsn int64, txid, tsMs int64, snapshot string) dbzSource {
	return dbzSource{Version: "2.7.0.Final", Connector: "postgresql", Name: "shop", TsMs: tsMs, Snapshot: snapshot, DB: "test",
		Schema: rc.f.schema, Table: "orders", TxID: txid, LSN: lsn}
}

// snapshot records every row as a read event (op r).
func (rc *recorder) snapshot() {
	for _, r := range rc.scanRows(`SELECT ` + rowCols + ` FROM orders ORDER BY id`) {
		r := r
		rc.events = append(rc.events, dbzEvent{After: &r, Source: rc.source(1, 0, 0, "true"), Op: "r", key: r.ID})
	}
}

// txn writes one transaction of the writer's kinds of change and records
// its events.
func (rc *recorder) txn() {
	f, w := rc.f, rc.w
	f.exec("BEGIN")
	var txid, tsMs int64
	if err := f.conn.QueryRow(context.Background(), `SELECT txid_current(), (extract(epoch FROM now()) * 1000)::int8`).Scan(&txid, &tsMs); err != nil {
		f.t.Fatal(err)
	}
	lsn := func() int64 {
		var s string
		if err := f.conn.QueryRow(context.Background(), `SELECT (pg_current_wal_insert_lsn() - '0/0')::text`).Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		var n int64
		fmt.Sscan(s, &n)
		return n
	}
	add := func(op string, before, after *dbzRow, key int64) {
		rc.events = append(rc.events, dbzEvent{Before: before, After: after, Source: rc.source(lsn(), txid, tsMs, "false"), Op: op, TsMs: tsMs + 5, key: key})
	}
	n := 1 + w.rng.IntN(4)
	for range n {
		switch k := w.rng.IntN(10); {
		case k < 4 || len(w.live) < 3:
			r := rc.scanRows(w.insertSQL() + ` RETURNING ` + rowCols)[0]
			add("c", nil, &r, r.ID)
		case k < 8:
			id := w.live[w.rng.IntN(len(w.live))]
			q := fmt.Sprintf(`UPDATE orders SET amount = amount + %d, status = 'changed' WHERE id = %d RETURNING `+rowCols, 1+w.rng.IntN(9), id)
			if k >= 6 {
				q = fmt.Sprintf(`UPDATE orders SET store = 's%d' WHERE id = %d RETURNING `+rowCols, w.rng.IntN(5), id)
			}
			r := rc.scanRows(q)[0]
			add("u", nil, &r, r.ID)
		default:
			i := w.rng.IntN(len(w.live))
			r := rc.scanRows(fmt.Sprintf(`DELETE FROM orders WHERE id = %d RETURNING `+rowCols, w.live[i]))[0]
			w.live = append(w.live[:i], w.live[i+1:]...)
			add("d", &r, nil, r.ID)
			w.dels++
		}
	}
	f.exec("COMMIT")
	w.txns++
}

// dbzYAML reads topic %s in format %s (with %s: more source keys) and
// writes revenue per store per minute into table %s.
const dbzYAML = `name: {{NAME}}_%[4]s
source:
  type: kafka
  brokers: [%[1]s]
  topics: [%[2]s]
  format: %[3]s
  %[5]s
  key_columns: [id]
  stop_at_end: true
  schema: {store: string, amount: decimal, created_at: timestamp}
event_time: {field: created_at, out_of_orderness: 1s}
key: [store]
window: {type: tumbling, size: 1m}
allowed_lateness: 24h
aggregates: {revenue: sum(amount), orders: count()}
emit: {mode: update}
sinks:
  - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.%[4]s}
`

// TestDebeziumMatchesPostgresCDC: the same changes of the orders table,
// read through postgres_cdc and, recorded in Debezium's envelope (with
// a tombstone after each delete and some events delivered twice, as
// Debezium does after a connector restart), from a Kafka topic in
// debezium_json — bare and in the JsonConverter's schema/payload wrapper
// — and one in debezium_avro through the registry: the four result
// tables are equal, and equal to the batch recomputation.
func TestDebeziumMatchesPostgresCDC(t *testing.T) {
	f := newFixture(t, ordersDDL)
	f.publish("orders")
	w := newWriter(f, 17, 1)
	rc := &recorder{f: f, w: w}
	for range 25 {
		w.txn() // the rows of the initial snapshot
	}
	r := f.start(revenueYAML, engine.Options{Parallelism: 2})
	f.waitStreaming(r)
	rc.snapshot() // the table as the snapshot saw it
	for range 60 {
		rc.txn()
	}
	w.sentinel()
	var sent dbzRow
	for _, s := range rc.scanRows(`SELECT ` + rowCols + ` FROM orders WHERE store = 'zz'`) {
		sent = s
	}
	rc.events = append(rc.events, dbzEvent{After: &sent, Source: rc.source(1<<40, 0, 0, "false"), Op: "c", key: sent.ID})
	f.waitFor(r, 60*time.Second, "the postgres_cdc table to equal the recomputation", func() bool {
		return f.resultExists() && f.diff() == ""
	})
	if _, err := r.stop(); err != nil {
		t.Fatal(err)
	}

	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "dbz-json", "dbz-wrapped", "dbz-avro"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	reg := httptest.NewServer(devregistry.New().Handler())
	defer reg.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	src, err := sr.NewClient(sr.URLs(reg.URL))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := src.CreateSchema(context.Background(), "dbz-avro-value", sr.Schema{Schema: envelopeAvsc(f.schema), Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(17, 3))
	var recs []*kgo.Record
	dups := 0
	for _, e := range rc.events {
		key := []byte(fmt.Sprintf(`{"id":%d}`, e.key))
		js, _ := json.Marshal(e)
		wrapped := []byte(`{"schema":{"type":"struct","name":"shop.orders.Envelope","optional":false,"fields":[]},"payload":` + string(js) + `}`)
		av := avroEvent(t, ss.ID, e)
		times := 1
		if rng.IntN(12) == 0 {
			times, dups = 2, dups+1 // delivered again right after
		}
		for range times {
			recs = append(recs, &kgo.Record{Topic: "dbz-json", Key: key, Value: js}, &kgo.Record{Topic: "dbz-wrapped", Key: key, Value: wrapped},
				&kgo.Record{Topic: "dbz-avro", Key: key, Value: av})
		}
		if e.Op == "d" {
			for _, tp := range []string{"dbz-json", "dbz-wrapped", "dbz-avro"} {
				recs = append(recs, &kgo.Record{Topic: tp, Key: key}) // the tombstone
			}
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct{ topic, format, table, keys string }{
		{"dbz-json", "debezium_json", "rev_json", ""},
		{"dbz-wrapped", "debezium_json", "rev_wrapped", ""},
		{"dbz-avro", "debezium_avro", "rev_avro", "schema_registry: {url: '" + reg.URL + "'}"},
	} {
		rr := f.start(fmt.Sprintf(dbzYAML, brokers, run.topic, run.format, run.table, run.keys), engine.Options{Parallelism: 2})
		<-rr.done
		if rr.err != nil {
			t.Fatalf("%s: %v", run.format, rr.err)
		}
		// Each twice-delivered event is one duplicate (the same LSN as
		// the key's current version).
		if rr.sum.Duplicates != int64(dups) || rr.sum.Quarantined != 0 {
			t.Errorf("%s: %d duplicates (want %d), %d quarantined (%s)", run.topic, rr.sum.Duplicates, dups, rr.sum.Quarantined, rr.sum.FirstViolation)
		}
		res := `SELECT window_start, store, revenue, orders FROM "` + f.schema + `".` + run.table + ` WHERE store <> 'zz'`
		cdc := `SELECT window_start, store, revenue, orders FROM "` + f.schema + `".revenue WHERE store <> 'zz'`
		if d := append(f.query(`(`+res+`) EXCEPT ALL (`+cdc+`)`), f.query(`(`+cdc+`) EXCEPT ALL (`+res+`)`)...); len(d) > 0 {
			t.Fatalf("%s: its table and postgres_cdc's differ:\n%s", run.topic, strings.Join(d, "\n"))
		}
		t.Logf("%s: %d events read, %d deletes, %d duplicates", run.topic, rr.sum.EventsRead, rr.sum.Deletes, rr.sum.Duplicates)
	}
	t.Logf("%d events (%d delivered twice), %d windows", len(rc.events), dups, len(f.query(`SELECT 1 FROM "`+f.schema+`".revenue`)))
}

// envelopeAvsc is the Avro schema Debezium's PostgreSQL connector
// registers for the orders table's changes (its Value, Source and
// Envelope records; amount in decimal.handling.mode precise).
func envelopeAvsc(schema string) string {
	return `{"type":"record","name":"Envelope","namespace":"shop.` + schema + `.orders","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
   {"name":"id","type":"int"},
   {"name":"store","type":"string"},
   {"name":"amount","type":{"type":"bytes","scale":2,"precision":12,"connect.version":1,"connect.parameters":{"scale":"2","connect.decimal.precision":"12"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}},
   {"name":"status","type":"string"},
   {"name":"created_at","type":{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}},
   {"name":"txn","type":["null","string"],"default":null}],"connect.name":"shop.` + schema + `.orders.Value"}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
   {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
   {"name":"ts_ms","type":"long"},
   {"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},
   {"name":"db","type":"string"},{"name":"schema","type":"string"},{"name":"table","type":"string"},
   {"name":"txId","type":["null","long"],"default":null},{"name":"lsn","type":["null","long"],"default":null},
   {"name":"xmin","type":["null","long"],"default":null}],"connect.name":"io.debezium.connector.postgresql.Source"}},
 {"name":"op","type":"string"},
 {"name":"ts_ms","type":["null","long"],"default":null}
],"connect.name":"shop.` + schema + `.orders.Envelope"}`
}

// avroEvent encodes e in the Confluent wire format with envelopeAvsc.
func avroEvent(t *testing.T, id int, e dbzEvent) []byte {
	b := []byte{0}
	b = append(b, byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
	img := func(r *dbzRow) {
		if r == nil {
			b = avro.AppendLong(b, 0) // the null branch
			return
		}
		b = avro.AppendLong(b, 1)
		b = avro.AppendLong(b, r.ID)
		b = avro.AppendString(b, r.Store)
		d, err := row.ParseDecimal([]byte(r.Amount))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = avro.AppendDecimal(b, d, 2); err != nil {
			t.Fatal(err)
		}
		b = avro.AppendString(b, r.Status)
		b = avro.AppendString(b, r.CreatedAt)
		if r.Txn == nil {
			b = avro.AppendLong(b, 0)
		} else {
			b = avro.AppendLong(b, 1)
			b = avro.AppendString(b, *r.Txn)
		}
	}
	img(e.Before)
	img(e.After)
	s := e.Source
	for _, v := range []string{s.Version, s.Connector, s.Name} {
		b = avro.AppendString(b, v)
	}
	b = avro.AppendLong(b, s.TsMs)
	b = avro.AppendLong(b, 0)
	b = avro.AppendString(b, s.Snapshot)
	for _, v := range []string{s.DB, s.Schema, s.Table} {
		b = avro.AppendString(b, v)
	}
	b = avro.AppendLong(b, 1)
	b = avro.AppendLong(b, s.TxID)
	b = avro.AppendLong(b, 1)
	b = avro.AppendLong(b, s.LSN)
	b = avro.AppendLong(b, 0) // xmin null
	b = avro.AppendString(b, e.Op)
	b = avro.AppendLong(b, 1)
	b = avro.AppendLong(b, e.TsMs)
	return b
}
