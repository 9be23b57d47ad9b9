package engine

import (
	"context"
	"fmt"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// The article's schema change (docs/contracts.md): v1 has amount, v2
// gross_amount and currency; v3 adds channel and is not accepted.
const (
	paidV1 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	paidV2 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	paidV3 = `{"type":"record","name":"OrderPaid","fields":[
	  {"name":"id","type":"string"},
	  {"name":"gross_amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2},"default":"\u0000"},
	  {"name":"currency","type":"string","default":"GBP"},
	  {"name":"channel","type":"string","default":"web"},
	  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
)

const paidContract = `product: order_paid
owner: order domain
schema_version: "2"
fields:
  id: string
  amount: decimal
  currency: string
  ts: timestamp
event_id: id
event_time: {field: ts}
schema_versions:
  subject: order-paid-value
  compatibility: BACKWARD
  versions:
    - version: 1
      defaults: {currency: GBP}
    - version: 2
      fields: {amount: gross_amount}
`

// writePaidFile writes records (id, amount in cents, currency, second)
// with schema text to path as an Avro container file (twmb/avro).
func writePaidFile(t *testing.T, path, text string, recs [][4]any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ocf.NewWriter(f, tavro.MustParse(text), ocf.WithCodec(ocf.DeflateCodec(-1)))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, r := range recs {
		amt := big.NewRat(int64(r[1].(int)), 100)
		v := map[string]any{"id": r[0], "ts": base.Add(time.Duration(r[3].(int)) * time.Second)}
		if strings.Contains(text, "gross_amount") {
			v["gross_amount"], v["currency"], v["channel"] = amt, r[2], "app"
		} else {
			v["amount"] = amt
		}
		if err := w.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestAvroFilesWithContractVersions: a pipeline reads Avro container
// files of three versions of a subject. Each file's schema is looked up
// in the registry: v1's amount and v2's gross_amount both give the
// pipeline's amount, v1's records get the contract's default currency,
// and the v3 file's records are quarantined with rule schema_version.
// Without a registry the pipeline is refused before reading.
func TestAvroFilesWithContractVersions(t *testing.T) {
	srv := httptest.NewServer(devregistry.New().Handler())
	defer srv.Close()
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{paidV1, paidV2, paidV3} {
		if _, err := cl.CreateSchema(context.Background(), "order-paid-value", sr.Schema{Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	writePaidFile(t, filepath.Join(dir, "1-v1.avro"), paidV1, [][4]any{{"a", 1250, "", 1}, {"b", 300, "", 2}})
	writePaidFile(t, filepath.Join(dir, "2-v2.avro"), paidV2, [][4]any{{"c", 700, "EUR", 3}, {"d", 50, "GBP", 4}})
	writePaidFile(t, filepath.Join(dir, "3-v3.avro"), paidV3, [][4]any{{"e", 999, "EUR", 5}})
	cpath := filepath.Join(dir, "contract.yaml")
	if err := os.WriteFile(cpath, []byte(paidContract), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load(cpath)
	if err != nil {
		t.Fatal(err)
	}
	pipeline := func(reg *spec.SchemaRegistry) *spec.Pipeline {
		return &spec.Pipeline{
			Name:       "paid",
			Source:     spec.Source{Type: "file", Path: filepath.Join(dir, "*.avro"), Format: "avro", SchemaRegistry: reg},
			Key:        []string{"currency"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
			Aggregates: spec.NamedExprs{{Name: "total", Expr: "sum(amount)"}, {Name: "n", Expr: "count()"}},
			Quarantine: spec.Quarantine{Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(dir, "q.jsonl")}},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(dir, "rows.jsonl")}},
		}
	}
	compile := func(p *spec.Pipeline) *plan.Plan {
		t.Helper()
		if err := contract.Apply(c, p); err != nil {
			t.Fatal(err)
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, c)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	_, err = Run(context.Background(), compile(pipeline(nil)), Options{})
	if err == nil || !strings.Contains(err.Error(), "source.schema_registry: required: contract order_paid lists versions of subject order-paid-value") {
		t.Errorf("without a registry: %v", err)
	}
	sum, err := Run(context.Background(), compile(pipeline(&spec.SchemaRegistry{URL: srv.URL})), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Quarantined != 1 {
		t.Errorf("%d quarantined, want 1", sum.Quarantined)
	}
	var rows []string
	for _, l := range readLines(t, filepath.Join(dir, "rows.jsonl")) {
		i := strings.Index(l, `"currency"`)
		j := strings.Index(l, `,"version"`)
		rows = append(rows, l[i:j])
	}
	sort.Strings(rows)
	want := []string{`"currency":"EUR","total":7.00,"n":1`, `"currency":"GBP","total":16.00,"n":3`}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	q := readLines(t, filepath.Join(dir, "q.jsonl"))
	if len(q) != 1 || !strings.Contains(q[0], `"rule":"schema_version"`) ||
		!strings.Contains(q[0], "is version 3 of subject order-paid-value, which the contract order_paid does not accept (it accepts versions 1, 2)") {
		t.Errorf("quarantine: %q", q)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
