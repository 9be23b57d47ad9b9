package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/big"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/internal/devregistry"
)

// The article's schema change, in three versions of a subject: v1 has
// amount; v2 gross_amount and currency; v3 adds channel, and the contract
// does not accept it.
const (
	paidV1 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"paid_at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	paidV2 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"paid_at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	paidV3 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"channel","type":"string","default":"web"},
	  {"name":"paid_at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

	paidContract = `product: order_paid
owner: order domain
schema_version: "2"
fields:
  id: {type: string, required: true}
  amount: {type: decimal, required: true}
  currency: {type: string, required: true}
  paid_at: {type: timestamp, required: true}
event_id: id
event_time: {field: paid_at}
schema_versions:
  subject: %SUBJECT%
  compatibility: BACKWARD
  versions:
    - version: 1
      defaults: {currency: GBP}
      deprecated_after: "2026-06-30"
    - version: 2
      fields: {amount: gross_amount}
`
)

// paidRecord is record i of a version's schema text, for twmb/avro.
func paidRecord(text string, i int) map[string]any {
	v := map[string]any{"id": "p" + string(rune('a'+i)), "paid_at": time.Date(2026, 3, 1, 9, i, 0, 0, time.UTC)}
	amt := big.NewRat(int64(100*i+25), 100)
	if strings.Contains(text, "gross_amount") {
		v["gross_amount"], v["currency"], v["channel"] = amt, "EUR", "app"
	} else {
		v["amount"] = amt
	}
	return v
}

// paidRegistry serves a development registry holding v1, v2 and v3 of
// subject and returns its URL and the three schema ids.
func paidRegistry(t *testing.T, subject string) (string, [3]int) {
	t.Helper()
	srv := httptest.NewServer(devregistry.New().Handler())
	t.Cleanup(srv.Close)
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var ids [3]int
	for i, s := range []string{paidV1, paidV2, paidV3} {
		ss, err := cl.CreateSchema(context.Background(), subject, sr.Schema{Schema: s})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = ss.ID
	}
	return srv.URL, ids
}

func writePaidOCF(t *testing.T, path, text string, n int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, tavro.MustParse(text))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Encode(paidRecord(text, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestValidateAvroFileVersions: Avro container files of versions 1, 2
// and 3 of the contract's subject. Each file's version is found in the
// registry; v1's amount and v2's gross_amount both fill amount, v1 gets
// the default currency, v3's record is not decoded (the contract does
// not accept v3), and the report counts the records of each version.
func TestValidateAvroFileVersions(t *testing.T) {
	url, _ := paidRegistry(t, "order-paid-value")
	inDir(t, map[string]string{"contract.yaml": strings.Replace(paidContract, "%SUBJECT%", "order-paid-value", 1)})
	if err := os.Mkdir("data", 0o755); err != nil {
		t.Fatal(err)
	}
	writePaidOCF(t, "data/1.avro", paidV1, 2)
	writePaidOCF(t, "data/2.avro", paidV2, 3)
	writePaidOCF(t, "data/3.avro", paidV3, 1)
	var out, errb bytes.Buffer
	code := Main([]string{"validate", "--contract", "contract.yaml", "--registry", url, "data"}, nil, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a record of v3 does not decode)\n%s%s", code, out.String(), errb.String())
	}
	got := out.String()
	want := `contract order_paid (schema_version 2, owner order domain)
data data

records
  read         6
  not decoded  1
    data/3.avro:1: the schema of file data/3.avro is version 3 of subject order-paid-value, which the contract order_paid does not accept (it accepts versions 1, 2)
  checked      5

schema versions (subject order-paid-value)
  version 1  accepted, deprecated after 2026-06-30  2
  version 2  accepted                               3
  version 3  not accepted                           1
  not a version of the subject                      0

fields (null or missing)
  id        string     required  0 (0.0000%)
  amount    decimal    required  0 (0.0000%)
  currency  string     required  0 (0.0000%)
  paid_at   timestamp  required  0 (0.0000%)
`
	if !strings.HasPrefix(got, want) {
		t.Errorf("report:\n%s\nwant it to start with\n%s", got, want)
	}
	// Without a registry the versions cannot be found: a usage error.
	out.Reset()
	errb.Reset()
	t.Setenv("SCHEMA_REGISTRY_URL", "")
	if code := Main([]string{"validate", "--contract", "contract.yaml", "data"}, nil, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "--registry: required: contract order_paid lists versions of subject order-paid-value") {
		t.Errorf("without --registry: exit %d, %s", code, errb.String())
	}
}

// TestValidateTopicVersions: a Kafka topic in Avro holding records of
// versions 1, 2 and 3 and one of a schema id the registry does not have:
// validate --topic reads it to its end and counts each version; v3's and
// the unknown id's records do not decode.
func TestValidateTopicVersions(t *testing.T) {
	url, ids := paidRegistry(t, "orders-value")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for v, count := range []int{3, 2, 1} {
		text := []string{paidV1, paidV2, paidV3}[v]
		for i := range count {
			b := binary.BigEndian.AppendUint32([]byte{0}, uint32(ids[v]))
			b, err := tavro.MustParse(text).AppendEncode(b, paidRecord(text, n))
			if err != nil {
				t.Fatal(err)
			}
			n++
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: b}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: 1, Value: []byte{0, 0, 0, 0x30, 0x39, 2}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	inDir(t, map[string]string{"contract.yaml": strings.Replace(paidContract, "%SUBJECT%", "orders-value", 1)})
	var out, errb bytes.Buffer
	code := Main([]string{"validate", "--contract", "contract.yaml", "--topic", "orders", "--brokers", strings.Join(c.ListenAddrs(), ","),
		"--data-format", "avro", "--registry", url, "--format", "json"}, nil, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{
		`"data":["orders"],"records":{"read":7,"not_decoded":2,"checked":5,`,
		`"schema_versions":{"subject":"orders-value","versions":[{"version":1,"accepted":true,"deprecated_after":"2026-06-30","records":3},{"version":2,"accepted":true,"deprecated_after":"","records":2},{"version":3,"accepted":false,"deprecated_after":"","records":1}],"not_in_subject":1}`,
		`"fields":[{"name":"id","type":"string","required":true,"nulls":0,"null_rate":0},{"name":"amount","type":"decimal","required":true,"nulls":0,"null_rate":0},{"name":"currency","type":"string","required":true,"nulls":0,"null_rate":0}`,
		`which the contract order_paid does not accept (it accepts versions 1, 2)`,
		`schema id 12345 is not in the schema registry`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %s\nin %s", want, got)
		}
	}
}
