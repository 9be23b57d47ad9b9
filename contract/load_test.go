package contract

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/tidemark/tidemark/spec"
)

// base is the smallest valid contract, one top-level key per line.
var base = []string{
	"product: p",
	"owner: o",
	"schema_version: \"1\"",
	"fields: {id: string, ts: timestamp, amount: decimal}",
	"event_id: id",
	"event_time: {field: ts}",
}

// doc returns base with changes, each a top-level YAML line: "key: value"
// replaces the line of that key (or is appended), "-key" removes it.
func doc(changes ...string) string {
	lines := append([]string(nil), base...)
	for _, c := range changes {
		if key, ok := strings.CutPrefix(c, "-"); ok {
			out := lines[:0]
			for _, l := range lines {
				if !strings.HasPrefix(l, key+":") {
					out = append(out, l)
				}
			}
			lines = out
			continue
		}
		key, _, _ := strings.Cut(c, ":")
		replaced := false
		for i, l := range lines {
			if strings.HasPrefix(l, key+":") {
				lines[i], replaced = c, true
			}
		}
		if !replaced {
			lines = append(lines, c)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func mustParse(t *testing.T, src string) *Contract {
	t.Helper()
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", src, err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func TestParseBase(t *testing.T) {
	c := mustParse(t, doc())
	want := &Contract{
		Product: "p", Owner: "o", SchemaVersion: "1",
		Fields:    Fields{{Name: "id", Type: "string"}, {Name: "ts", Type: "timestamp"}, {Name: "amount", Type: "decimal"}},
		EventID:   "id",
		EventTime: TimeField{Field: "ts", Format: "rfc3339"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

// TestParseOrderContract: the example of docs/contracts.md, the articles'
// order events, decodes to exactly this.
func TestParseOrderContract(t *testing.T) {
	c, err := Load("testdata/order_item_event.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Contract{
		Product:       "order_item_event",
		Owner:         "order domain",
		Contact:       "order data team (#order-data)",
		SchemaVersion: "3",
		Description:   "one payment or refund of an order item, as the order domain publishes it",
		Fields: Fields{
			{Name: "event_id", Type: "string", Required: true, Description: "one business event; a redelivery or a retry keeps its id"},
			{Name: "event_type", Type: "string", Required: true, Description: "PAYMENT or REFUND"},
			{Name: "order_id", Type: "string", Required: true},
			{Name: "store_id", Type: "string"},
			{Name: "amount", Type: "decimal", Required: true, Description: "signed, in currency; negative only for REFUND"},
			{Name: "currency", Type: "string"},
			{Name: "paid_at", Type: "timestamp", Required: true, Description: "when the payment or refund happened (event time), ISO-8601 with offset"},
			{Name: "produced_at", Type: "timestamp", Metadata: true, Description: "when the producer published the event (delivery metadata)"},
			{Name: "version", Type: "int", Description: "the order's state version; grows with each change"},
		},
		EventID:            "event_id",
		EventIDMeaning:     "one payment or refund; the same business event always has the same id",
		EventTime:          TimeField{Field: "paid_at", Format: "rfc3339"},
		IngestTime:         "produced_at",
		Ordering:           &Ordering{Key: "order_id", Version: "version"},
		DuplicatesPossible: true,
		MaxNormalDelay:     spec.Duration(30 * time.Minute),
		Retention:          spec.Duration(4320 * time.Hour),
		Realtime:           true,
		ChangePolicy:       "a field is removed only after a new schema_version has carried both for 90 days",
		CorrectionPolicy:   "a correction is a new event with its own event_id and corrected_event_id",
		Rules: []Rule{
			{Name: "not_in_future", MaxFuture: spec.Duration(24 * time.Hour), Description: "a producer clock that runs ahead (event time more than 24h after produced_at)"},
			{Name: "not_older_than_30d", MaxAge: spec.Duration(720 * time.Hour), Description: "a realtime topic carries no month-old events; backfills go to their own topic"},
			{Name: "produced_after_paid", Check: "produced_at >= paid_at", Description: "an event is published after it happened (in the normal online flow)"},
			{Name: "negative_amount_only_for_refund", Check: `amount >= 0 or event_type == "REFUND"`},
		},
		Quality: Quality{
			MaxNullRate:         map[string]float64{"event_id": 0, "order_id": 0},
			MaxDuplicateIDRate:  ptr(0.01),
			MaxConflicts:        ptr[int64](0),
			MinArrivalWithin24h: ptr(0.999),
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if got := c.MetadataFields(); !reflect.DeepEqual(got, []string{"produced_at"}) {
		t.Errorf("MetadataFields = %q", got)
	}
}

// TestDocExampleIsTestdata: the example contract in docs/contracts.md is
// testdata/order_item_event.yaml, word for word.
func TestDocExampleIsTestdata(t *testing.T) {
	example, err := os.ReadFile("testdata/order_item_event.yaml")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(contractsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```yaml\n"+string(example)+"```\n") {
		t.Fatalf("%s does not hold testdata/order_item_event.yaml as a yaml block", contractsDoc)
	}
}

func TestParseRetailExample(t *testing.T) {
	c, err := Load("../examples/online-retail/contract.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.EventID != `InvoiceNo + "-" + string(line_no)` || c.EventTime != (TimeField{Field: "InvoiceDate", Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Europe/London"}) {
		t.Fatalf("event_id %q, event_time %+v", c.EventID, c.EventTime)
	}
	want := []string{"InvoiceNo", "StockCode", "Description", "Quantity", "InvoiceDate", "UnitPrice", "CustomerID", "Country"}
	if got := c.Fields.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %q", got)
	}
	var req []string
	for _, f := range c.Fields {
		if f.Required {
			req = append(req, f.Name)
		}
	}
	if want := []string{"InvoiceNo", "Quantity", "InvoiceDate", "UnitPrice", "Country"}; !reflect.DeepEqual(req, want) {
		t.Fatalf("required %q", req)
	}
	if len(c.Rules) != 2 || c.Rules[0].Name != "quantity_sign" || c.Rules[1].Name != "unit_price_not_negative" {
		t.Fatalf("rules %+v", c.Rules)
	}
	if c.MetadataFields() != nil {
		t.Fatalf("metadata %q", c.MetadataFields())
	}
}

// TestFieldForms: a field is declared by its type alone or by a mapping;
// order is kept; empty values are zero.
func TestFieldForms(t *testing.T) {
	src := `fields:
  id: string
  ts: {type: timestamp}
  amount:
    type: decimal
    required: true
    metadata: false
    description: |
      in KRW
  n: 5
  at:
    type: timestamp
    metadata: true
    required:
    description:
  bare:
`
	var got struct {
		Fields Fields `yaml:"fields"`
	}
	if err := yaml.UnmarshalWithOptions([]byte(src), &got, yaml.DisallowUnknownField()); err != nil {
		t.Fatal(err)
	}
	want := Fields{
		{Name: "id", Type: "string"},
		{Name: "ts", Type: "timestamp"},
		{Name: "amount", Type: "decimal", Required: true, Description: "in KRW\n"},
		{Name: "n", Type: "5"}, // Validate rejects the type
		{Name: "at", Type: "timestamp", Metadata: true},
		{Name: "bare"}, // Validate: type required
	}
	if !reflect.DeepEqual(got.Fields, want) {
		t.Fatalf("got  %+v\nwant %+v", got.Fields, want)
	}
	// MarshalYAML writes the mapping form, which decodes to the same.
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var again struct {
		Fields Fields `yaml:"fields"`
	}
	if err := yaml.UnmarshalWithOptions(out, &again, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(again.Fields, want) {
		t.Fatalf("round trip:\n%s\ngot %+v", out, again.Fields)
	}
}
