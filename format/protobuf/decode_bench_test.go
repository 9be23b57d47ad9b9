package protobuf

import (
	"testing"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// BenchmarkDecodeRetailLine decodes the Online Retail line of
// TestDecodeRetailLine (strings, ints, a wrapper, a sub-message, an enum,
// a Timestamp, a Confluent decimal, a double read as a decimal, a string
// read as a decimal, a uint64 beyond int64, a bool) into 15 fields:
//
//	go test ./format/protobuf -run XXX -bench DecodeRetailLine -count 6
func BenchmarkDecodeRetailLine(b *testing.B) {
	fd, err := Parse(b.Context(), "retail.proto", retailProto, nil)
	if err != nil {
		b.Fatal(err)
	}
	md, err := MessageByName(fd, "InvoiceLine")
	if err != nil {
		b.Fatal(err)
	}
	schema := row.NewSchema()
	for _, f := range []struct {
		n string
		k row.Kind
	}{
		{"invoice_no", row.KindString}, {"quantity", row.KindInt}, {"invoice_date", row.KindTime},
		{"unit_price", row.KindDecimal}, {"customer_id", row.KindString}, {"country", row.KindString},
		{"channel", row.KindString}, {"meta.seq", row.KindInt}, {"description", row.KindString},
		{"delta", row.KindInt}, {"big", row.KindDecimal}, {"ratio", row.KindDecimal}, {"price_text", row.KindDecimal},
		{"epoch_ms", row.KindTime}, {"gift", row.KindBool},
	} {
		if _, err := schema.Add(f.n, f.k); err != nil {
			b.Fatal(err)
		}
	}
	p, err := Compile(md, Reader{Fields: format.Fields{Schema: schema, Time: map[int]*eventtime.Parser{
		13: {Format: eventtime.EpochMs},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	data := message(b, md, `{"invoiceNo":"536365","stockCode":"85123A","description":"WHITE HANGING HEART","quantity":6,
		"invoiceDate":"2010-12-01T08:26:00.123456Z","unitPrice":{"value":"/w==","scale":2},
		"customerId":"17850","country":"United Kingdom","channel":"ONLINE","tags":["a","b"],
		"attrs":{"x":1.5},"meta":{"producer":"till","seq":"42"},"delta":"-5","big":"18446744073709551615",
		"ratio":0.1,"priceText":"2.55","epochMs":"1291192800000","gift":true}`)
	r := schema.NewRow()
	var a source.Arena
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		if i%4096 == 0 {
			a.Reset()
		}
		schema.Shape(r)
		if e := p.Decode(data, 6, r, &a); e != nil {
			b.Fatal(e)
		}
		i++
	}
}
