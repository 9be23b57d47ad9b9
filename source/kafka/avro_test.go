package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/internal/faultproxy"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// registry starts the development registry and returns a client of it
// and tidemark's Registry.
func registry(t *testing.T) (*sr.Client, *confluent.Registry, *devregistry.Registry) {
	t.Helper()
	dev := devregistry.New()
	srv := httptest.NewServer(dev.Handler())
	t.Cleanup(srv.Close)
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := confluent.NewRegistry(confluent.RegistryConfig{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return cl, reg, dev
}

// The article's schema change: v1 has amount; v2 replaces it with
// gross_amount and currency (BACKWARD compatible: v2 reads v1's records
// through the defaults).
const (
	orderV1 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	orderV2 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	orderV3 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"channel","type":"string","default":"web"},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
)

// confluentAvro encodes v with schema text under id, as Confluent's
// serializer does (twmb/avro: an encoder independent of the decoder).
func confluentAvro(t *testing.T, id int, text string, v map[string]any) []byte {
	t.Helper()
	s, err := tavro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	b, err = s.AppendEncode(b, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func register(t *testing.T, cl *sr.Client, subject, text string) sr.SubjectSchema {
	t.Helper()
	ss, err := cl.CreateSchema(context.Background(), subject, sr.Schema{Schema: text})
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestAvroVersionsAndQuarantine: a topic with v1, v2 and v3 records and
// broken ones. The contract accepts v1 (amount) and v2 (gross_amount as
// amount, currency; v1 records default to GBP): both give the
// pipeline's amount; v3 is not accepted; an unknown schema id, a
// truncated record, a wrong magic byte and a schema that fails to parse
// are each quarantined with their reason and offset.
func TestAvroVersionsAndQuarantine(t *testing.T) {
	cl, reg, dev := registry(t)
	v1 := register(t, cl, "orders-value", orderV1)
	v2 := register(t, cl, "orders-value", orderV2)
	v3 := register(t, cl, "orders-value", orderV3)
	if v1.Version != 1 || v2.Version != 2 || v3.Version != 3 {
		t.Fatalf("versions %d %d %d", v1.Version, v2.Version, v3.Version)
	}
	// A schema that does not parse, stored as the registry would have it
	// from an older or broken producer (registration refuses it).
	dev.Fake().SeedSchema("broken-value", 1, 99, sr.Schema{Schema: `{"type":"record","name":"X","fields":[{"name":"a","type":"nosuchtype"}]}`})

	ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	good1 := confluentAvro(t, v1.ID, orderV1, map[string]any{"id": "e1", "amount": big.NewRat(2500, 100), "ts": ts})
	good2 := confluentAvro(t, v2.ID, orderV2, map[string]any{"id": "e2", "gross_amount": big.NewRat(-1999, 100), "currency": "EUR", "ts": ts.Add(time.Minute)})
	rec3 := confluentAvro(t, v3.ID, orderV3, map[string]any{"id": "e3", "gross_amount": big.NewRat(1, 1), "currency": "EUR", "channel": "app", "ts": ts})
	unknown := append([]byte{0, 0, 0, 0x30, 0x39}, good1[5:]...) // id 12345
	truncated := good2[:len(good2)-3]
	brokenID := append([]byte{0, 0, 0, 0, 99}, good1[5:]...)

	brokers := cluster(t, map[string]int32{"orders": 1})
	kc := client(t, brokers)
	for _, v := range [][]byte{good1, good2, rec3, unknown, truncated, []byte(`{"id":"json"}`), brokenID, {0, 0}} {
		produce(t, kc, &kgo.Record{Topic: "orders", Partition: 0, Value: v})
	}

	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}, Fields: retailFields(t),
		Format: confluent.FormatAvro, Registry: reg, Contract: "order_item_event",
		Versions: map[int]confluent.Version{
			1: {Defaults: map[string]row.Value{"currency": row.Str("GBP")}},
			2: {Rename: map[string]string{"amount": "gross_amount"}},
		}})
	gs := read(t, s, 8, 100)
	want := []string{
		"orders[0]@0 e1|25.00|GBP|2026-03-01T10:00:00Z",
		"orders[0]@1 e2|-19.99|EUR|2026-03-01T10:01:00Z",
		"orders[0]@2 err schema_version: schema id 3 is version 3 of subject orders-value, which the contract order_item_event does not accept (it accepts versions 1, 2)",
		"orders[0]@3 err schema: schema id 12345 is not in the schema registry at ",
		"orders[0]@4 err decode: Avro: truncated record: a long at byte 15 runs past the end (18 bytes)",
		"orders[0]@5 err decode: magic byte 0x7b, want 0x00: not the Confluent wire format (a JSON value?)",
		"orders[0]@6 err schema: schema id 99 does not parse: ",
		"orders[0]@7 err decode: truncated Confluent header: 2 bytes, want a magic byte 0 and a 4-byte schema id",
	}
	for i, g := range gs {
		line := g.pos + " " + g.text
		if !strings.HasPrefix(line, want[i]) {
			t.Errorf("record %d:\n got %s\nwant %s", i, line, want[i])
		}
	}
	// EventJSON renders the Avro record's fields.
	if got, want := gs[1].event, `{"_schema_id":2,"currency":"EUR","gross_amount":-19.99,"id":"e2","ts":"2026-03-01T10:01:00Z"}`; got != want {
		t.Errorf("EventJSON\n got %s\nwant %s", got, want)
	}
	if got := gs[3].event; !strings.HasPrefix(got, `{"_schema_id":12345,"_raw_base64":"AAAAMDk`) {
		t.Errorf("EventJSON of an unknown id: %s", got)
	}
	counts := s.SchemaCounts()["orders"]
	var txt []string
	for _, c := range counts {
		txt = append(txt, strings.Join([]string{itoa(c.ID), itoa(c.Version), itoa(int(c.Records))}, ":"))
	}
	// id:version:records (id 1 also the truncated one's? no: that is id 2).
	if got, want := strings.Join(txt, " "), "1:1:1 2:2:2 3:3:1 99:0:1 12345:0:1"; got != want {
		t.Errorf("SchemaCounts = %s, want %s", got, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// retailFields is id, amount (decimal), currency, ts.
func retailFields(t *testing.T) (f format.Fields) {
	t.Helper()
	s := row.NewSchema()
	for _, x := range []struct {
		n string
		k row.Kind
	}{{"id", row.KindString}, {"amount", row.KindDecimal}, {"currency", row.KindString}, {"ts", row.KindTime}} {
		if _, err := s.Add(x.n, x.k); err != nil {
			t.Fatal(err)
		}
	}
	f.Schema = s
	return f
}

// TestAvroRegistryDownHoldsTheRecords: while the registry cannot be
// asked (its connections closed before any answer, which Go's HTTP client
// reports as an error wrapping io.EOF), Next returns no record and no
// error: the records wait — neither delivered, quarantined nor passed by
// the position — and Waiting names the registry, the records and the
// failure. Once the registry answers, every record is delivered once, in
// order, and the wait is over.
func TestAvroRegistryDownHoldsTheRecords(t *testing.T) {
	cl, _, dev := registry(t)
	v1 := register(t, cl, "orders-value", orderV1)
	srv := httptest.NewServer(dev.Handler())
	t.Cleanup(srv.Close)
	px, err := faultproxy.Start(srv.URL, func(int) faultproxy.Fault { return faultproxy.Fault{Mode: faultproxy.Close} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	reg, _ := confluent.NewRegistry(confluent.RegistryConfig{URLs: []string{px.URL()}, TimeoutMs: 2000})
	brokers := cluster(t, map[string]int32{"orders": 2})
	kc := client(t, brokers)
	for i := range 6 {
		produce(t, kc, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: confluentAvro(t, v1.ID, orderV1, map[string]any{"id": "e" + itoa(i), "amount": big.NewRat(int64(i), 1), "ts": time.UnixMilli(int64(i))})})
	}
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}, Fields: retailFields(t), Format: confluent.FormatAvro, Registry: reg, StopAtEnd: true})
	var b source.Batch
	var w []source.Wait
	for deadline := time.Now().Add(10 * time.Second); len(w) == 0 || w[0].Attempts < 3; {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 10)
		if err != nil || st != source.More || b.Len() != 0 {
			t.Fatalf("Next while the registry closes its connections: %s, %v, %d records; want more, no error, none", st, err, b.Len())
		}
		w = s.Waiting()
		if time.Now().After(deadline) {
			t.Fatalf("no wait of 3 attempts in 10s: %+v", w)
		}
	}
	if len(w) != 1 || w[0].Service != "schema registry "+px.URL() || !strings.HasPrefix(w[0].Records, "orders/") ||
		!strings.Contains(w[0].Err, "EOF") || w[0].Limit != 5*time.Minute || time.Since(w[0].Since) > 10*time.Second {
		t.Fatalf("Waiting() = %+v", w)
	}
	if s.parts[0].next != 0 || s.parts[1].next != 0 || s.delivered != 0 {
		t.Fatalf("positions %d %d, %d delivered while the records wait; want 0 0 0", s.parts[0].next, s.parts[1].next, s.delivered)
	}
	px.Set(nil) // the registry answers again
	var ids []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Meta {
			if b.Meta[i].Err != nil {
				t.Fatalf("record %v: %v", b.Meta[i].Pos, b.Meta[i].Err)
			}
			ids = append(ids, b.Meta[i].Pos.Partition+":"+b.Rows[i].S[0])
		}
		if st == source.End {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not at the end after 10s: %v", ids)
		}
	}
	slices.Sort(ids)
	if got, want := strings.Join(ids, " "), "0:e0 0:e2 0:e4 1:e1 1:e3 1:e5"; got != want {
		t.Fatalf("delivered %s, want %s", got, want)
	}
	if w := s.Waiting(); len(w) != 0 {
		t.Fatalf("Waiting() after the registry answered: %+v", w)
	}
}

// TestAvroRegistryWaitIsBounded: records that wait longer than
// RegistryMaxWaitMs fail Next with a *RegistryWaitError naming the
// registry and the records, the position still before them; a registry
// that answers with a refusal (401) fails Next at once: waiting would not
// change its answer.
func TestAvroRegistryWaitIsBounded(t *testing.T) {
	cl, _, _ := registry(t)
	v1 := register(t, cl, "orders-value", orderV1)
	dead := httptest.NewServer(nil)
	dead.Close() // nothing listens any more
	brokers := cluster(t, map[string]int32{"orders": 1})
	kc := client(t, brokers)
	produce(t, kc, &kgo.Record{Topic: "orders", Partition: 0, Value: confluentAvro(t, v1.ID, orderV1, map[string]any{"id": "e1", "amount": big.NewRat(1, 1), "ts": time.UnixMilli(0)})})
	reg, _ := confluent.NewRegistry(confluent.RegistryConfig{URLs: []string{dead.URL}, TimeoutMs: 500})
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}, Fields: retailFields(t), Format: confluent.FormatAvro, Registry: reg, RegistryMaxWaitMs: 700})
	var b source.Batch
	start := time.Now()
	var err error
	for err == nil && time.Since(start) < 10*time.Second {
		b.Reset()
		_, err = s.Next(context.Background(), &b, 10)
		if b.Len() != 0 {
			t.Fatalf("Next delivered %d records without a registry", b.Len())
		}
	}
	var we *RegistryWaitError
	if !errors.As(err, &we) || !strings.HasPrefix(err.Error(), "schema registry "+dead.URL+": unreachable since ") ||
		!strings.Contains(err.Error(), "records of orders/0 from offset 0 were not read") || we.Waited < 700*time.Millisecond {
		t.Fatalf("Next after the wait: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("failed after %s; want about 0.7s", took)
	}
	if s.parts[0].next != 0 {
		t.Fatalf("next offset %d after a failed decode, want 0", s.parts[0].next)
	}

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error_code":40101,"message":"Unauthorized"}`)
	}))
	t.Cleanup(refusing.Close)
	reg2, _ := confluent.NewRegistry(confluent.RegistryConfig{URLs: []string{refusing.URL}})
	s2 := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}, Fields: retailFields(t), Format: confluent.FormatAvro, Registry: reg2})
	for err = nil; err == nil; {
		b.Reset()
		_, err = s2.Next(context.Background(), &b, 10)
		if len(s2.Waiting()) != 0 {
			t.Fatalf("a refusal made the records wait: %+v", s2.Waiting())
		}
	}
	if errors.As(err, &we) || !strings.Contains(err.Error(), "Unauthorized") || !strings.Contains(err.Error(), "topic orders partition 0 offset 0") {
		t.Fatalf("Next with a registry refusing: %v", err)
	}
}
