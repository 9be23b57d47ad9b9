package format

import (
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/source"
)

// orderLine is a typical order event.
var orderLine = []byte(`{"event_id":"e1","event_type":"PAYMENT","order_id":"O1","store_id":"store-7","currency":"KRW","amount":25000,"paid_at":"2026-09-01T10:02:00+09:00"}`)

var orderSpecs = []string{"event_id:string", "event_type:string", "order_id:string", "store_id:string", "currency:string", "amount:decimal", "paid_at:timestamp"}

func BenchmarkJSONDecodeOrder(b *testing.B) {
	f := testFields(b, orderSpecs...)
	d := NewJSON(f)
	r := f.Schema.NewRow()
	var a source.Arena
	b.ReportAllocs()
	b.SetBytes(int64(len(orderLine)))
	n := 0
	for b.Loop() {
		if n%1024 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(orderLine, r, &a); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkJSONDecodeOrderNoTime is BenchmarkJSONDecodeOrder without the
// timestamp field: strings and a decimal only.
func BenchmarkJSONDecodeOrderNoTime(b *testing.B) {
	f := testFields(b, orderSpecs[:6]...)
	d := NewJSON(f)
	r := f.Schema.NewRow()
	var a source.Arena
	b.ReportAllocs()
	b.SetBytes(int64(len(orderLine)))
	n := 0
	for b.Loop() {
		if n%1024 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(orderLine, r, &a); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkJSONBaselineStdlib is the hand-written baseline: encoding/json
// into a struct, numbers kept exact as json.Number, the timestamp left as
// text.
func BenchmarkJSONBaselineStdlib(b *testing.B) {
	type order struct {
		EventID   string      `json:"event_id"`
		EventType string      `json:"event_type"`
		OrderID   string      `json:"order_id"`
		StoreID   string      `json:"store_id"`
		Currency  string      `json:"currency"`
		Amount    json.Number `json:"amount"`
		PaidAt    string      `json:"paid_at"`
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(orderLine)))
	for b.Loop() {
		var o order
		if err := json.Unmarshal(orderLine, &o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCSVDecodeOrder(b *testing.B) {
	f := testFields(b, "InvoiceNo:string", "Quantity:int", "UnitPrice:decimal", "InvoiceDate:timestamp/london", "Country:string")
	header := []string{"InvoiceNo", "StockCode", "Description", "Quantity", "InvoiceDate", "UnitPrice", "CustomerID", "Country"}
	rec := []string{"536365", "85123A", "WHITE HANGING HEART T-LIGHT HOLDER", "6", "2010-12-01 08:26:00", "2.55", "17850.0", "United Kingdom"}
	d, err := NewCSV(f, header)
	if err != nil {
		b.Fatal(err)
	}
	r := f.Schema.NewRow()
	cr := csvRecord(rec...)
	var a source.Arena
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%1024 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(cr, r, &a); e != nil {
			b.Fatal(e)
		}
	}
}

// articleLine is the first article's order event as internal/articlegen
// writes it (242 bytes).
var articleLine = []byte(`{"event_id":"evt-20260624-0000001","event_type":"ORDER_PAID","event_version":1,"order_id":"ord-0000001","store_id":"store-0327","amount":141.09,"currency":"USD","paid_at":"2026-06-23T23:59:33+09:00","produced_at":"2026-06-23T23:59:35+09:00"}`)

// articleSpecs are the fields examples/article/pipeline.yaml decodes (all
// but event_version).
var articleSpecs = []string{"event_id:string", "event_type:string", "order_id:string", "store_id:string", "amount:decimal", "currency:string", "paid_at:timestamp", "produced_at:timestamp"}

// BenchmarkJSONDecodeArticle decodes the article's order event.
func BenchmarkJSONDecodeArticle(b *testing.B) {
	f := testFields(b, articleSpecs...)
	d := NewJSON(f)
	r := f.Schema.NewRow()
	var a source.Arena
	b.ReportAllocs()
	b.SetBytes(int64(len(articleLine)))
	n := 0
	for b.Loop() {
		if n%1024 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(articleLine, r, &a); e != nil {
			b.Fatal(e)
		}
	}
}
