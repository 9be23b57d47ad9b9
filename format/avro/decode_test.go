package avro

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// retailSchema is an Online Retail line as a producer would write it in
// Avro: the invoice date as timestamp-millis, the price as decimal(10,2),
// the customer nullable, a field tidemark does not read (Description) and
// nested delivery metadata.
const retailSchema = `{
  "type": "record", "name": "InvoiceLine", "namespace": "retail",
  "fields": [
    {"name": "InvoiceNo", "type": "string"},
    {"name": "StockCode", "type": "string"},
    {"name": "Description", "type": ["null", "string"], "default": null},
    {"name": "Quantity", "type": "int"},
    {"name": "InvoiceDate", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "UnitPrice", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "CustomerID", "type": ["null", "long"], "default": null},
    {"name": "Country", "type": "string"},
    {"name": "Channel", "type": {"type": "enum", "name": "Channel", "symbols": ["STORE", "ONLINE"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "double"}},
    {"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
      {"name": "producer", "type": "string"},
      {"name": "seq", "type": "long"}
    ]}}
  ]
}`

// schemaOf builds a pipeline schema from name/kind pairs.
func schemaOf(t *testing.T, pairs ...any) *row.Schema {
	t.Helper()
	s := row.NewSchema()
	for i := 0; i < len(pairs); i += 2 {
		if _, err := s.Add(pairs[i].(string), pairs[i+1].(row.Kind)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func mustParse(t testing.TB, s string) *avro.Schema {
	t.Helper()
	sc, err := avro.Parse(s)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return sc
}

func encode(t *testing.T, s *avro.Schema, v any) []byte {
	t.Helper()
	b, err := s.Encode(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return b
}

// rowText renders the row's fields as name=value, null as "null".
func rowText(s *row.Schema, r *row.Row) string {
	var out []string
	for _, f := range s.Fields {
		v := r.Get(f)
		txt := v.String()
		if v.IsNull() {
			txt = "null"
		} else if f.Kind == row.KindTime {
			txt = time.UnixMilli(v.I).UTC().Format(time.RFC3339Nano)
		}
		out = append(out, f.Name+"="+txt)
	}
	return strings.Join(out, " ")
}

func TestDecodeRetailLine(t *testing.T) {
	w := mustParse(t, retailSchema)
	schema := schemaOf(t,
		"InvoiceNo", row.KindString, "Quantity", row.KindInt, "InvoiceDate", row.KindTime,
		"UnitPrice", row.KindDecimal, "CustomerID", row.KindString, "Country", row.KindString, "Channel", row.KindString,
		"meta.seq", row.KindInt, "Missing", row.KindString)
	p, err := Compile(w, Reader{Fields: format.Fields{Schema: schema}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Unmatched, ","); got != "Missing" {
		t.Errorf("Unmatched = %q, want Missing", got)
	}
	price := big.NewRat(255, 100)
	data := encode(t, w, map[string]any{
		"InvoiceNo": "536365", "StockCode": "85123A", "Description": "WHITE HANGING HEART",
		"Quantity": 6, "InvoiceDate": time.Date(2010, 12, 1, 8, 26, 0, 0, time.UTC),
		"UnitPrice": price, "CustomerID": int64(17850), "Country": "United Kingdom", "Channel": "STORE",
		"tags": []any{"a", "bb"}, "attrs": map[string]any{"x": 1.5},
		"meta": map[string]any{"producer": "till-7", "seq": int64(42)},
	})
	r := schema.NewRow()
	var a source.Arena
	if e := p.Decode(data, 5, r, &a); e != nil {
		t.Fatalf("Decode: %v", e)
	}
	want := "InvoiceNo=536365 Quantity=6 InvoiceDate=2010-12-01T08:26:00Z UnitPrice=2.55 CustomerID=17850 Country=United Kingdom Channel=STORE meta.seq=42 Missing=null"
	if got := rowText(schema, r); got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
	// The nullable customer as null, a negative price.
	data = encode(t, w, map[string]any{
		"InvoiceNo": "C536379", "StockCode": "D", "Description": nil,
		"Quantity": -1, "InvoiceDate": time.Date(2010, 12, 1, 9, 41, 0, 0, time.UTC),
		"UnitPrice": big.NewRat(-2750, 100), "CustomerID": nil, "Country": "EIRE", "Channel": "ONLINE",
		"tags": []any{}, "attrs": map[string]any{},
		"meta": map[string]any{"producer": "", "seq": int64(-3)},
	})
	schema.Shape(r)
	if e := p.Decode(data, 5, r, &a); e != nil {
		t.Fatalf("Decode: %v", e)
	}
	want = "InvoiceNo=C536379 Quantity=-1 InvoiceDate=2010-12-01T09:41:00Z UnitPrice=-27.50 CustomerID=null Country=EIRE Channel=ONLINE meta.seq=-3 Missing=null"
	if got := rowText(schema, r); got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
}

// TestDecodeConversions: every writer type into every kind it may give,
// with values worked out by hand.
func TestDecodeConversions(t *testing.T) {
	type tc struct {
		avroType string
		value    any
		kind     row.Kind
		parser   *eventtime.Parser
		want     string // rendered value, or "error: <rule>: <reason substring>"
	}
	london, _ := time.LoadLocation("Europe/London")
	layout := &eventtime.Parser{Format: eventtime.Layout, Layout: "2006-01-02 15:04:05", Loc: london}
	cases := []tc{
		{`"int"`, int32(-7), row.KindInt, nil, "-7"},
		{`"int"`, int32(7), row.KindDecimal, nil, "7"},
		{`"long"`, int64(1) << 40, row.KindString, nil, "1099511627776"},
		{`"long"`, int64(1) << 40, row.KindInt, nil, "1099511627776"},
		{`"long"`, int64(1291192800000), row.KindTime, &eventtime.Parser{Format: eventtime.EpochMs}, "2010-12-01T08:40:00Z"},
		{`"long"`, int64(1291192800), row.KindTime, &eventtime.Parser{Format: eventtime.EpochS}, "2010-12-01T08:40:00Z"},
		{`"long"`, int64(5), row.KindTime, nil, "error: type: want timestamp, got Avro long"},
		{`{"type":"long","logicalType":"timestamp-micros"}`, int64(-1), row.KindTime, nil, "1969-12-31T23:59:59.999Z"},
		{`{"type":"long","logicalType":"timestamp-micros"}`, int64(1291192800123999), row.KindTime, nil, "2010-12-01T08:40:00.123Z"},
		{`{"type":"long","logicalType":"timestamp-nanos"}`, int64(1291192800123999999), row.KindTime, nil, "2010-12-01T08:40:00.123Z"},
		{`{"type":"int","logicalType":"date"}`, int32(14944), row.KindTime, nil, "2010-12-01T00:00:00Z"},
		{`{"type":"int","logicalType":"date"}`, int32(-1), row.KindTime, nil, "1969-12-31T00:00:00Z"},
		{`"boolean"`, true, row.KindBool, nil, "true"},
		{`"boolean"`, false, row.KindString, nil, "false"},
		{`"boolean"`, true, row.KindInt, nil, "error: type: want int, got Avro boolean"},
		{`"double"`, 0.1, row.KindDecimal, nil, "0.1"},
		{`"double"`, 1e21, row.KindDecimal, nil, "1000000000000000000000"},
		{`"float"`, float32(0.1), row.KindDecimal, nil, "0.1"},
		{`"double"`, 3.0, row.KindInt, nil, "3"},
		{`"double"`, 3.5, row.KindInt, nil, "error: type: want int, got Avro double (3.5 is not a whole number in int64 range)"},
		{`"double"`, 2.25, row.KindString, nil, "2.25"},
		{`"string"`, "12.50", row.KindDecimal, nil, "12.50"},
		{`"string"`, "x", row.KindDecimal, nil, `error: type: want decimal, got Avro string "x"`},
		{`"string"`, "2010-12-01 08:26:00", row.KindTime, layout, "2010-12-01T08:26:00Z"},
		{`"string"`, "2010-06-01 08:26:00", row.KindTime, layout, "2010-06-01T07:26:00Z"},
		{`"string"`, "2010-12-01T08:26:00", row.KindTime, nil, "error: timestamp: "},
		{`"string"`, "TRUE", row.KindBool, nil, "true"},
		{`"bytes"`, []byte("héllo"), row.KindString, nil, "héllo"},
		{`"bytes"`, []byte("a\x00b"), row.KindString, nil, "error: encoding: NUL character at byte 3 (PostgreSQL text cannot store it)"},
		{`"bytes"`, []byte("a\xffb"), row.KindString, nil, "error: encoding: invalid UTF-8 at byte 3"},
		{`"string"`, "x", row.KindString, nil, "x"},
		{`{"type":"bytes","logicalType":"decimal","precision":38,"scale":4}`, big.NewRat(-1, 10000), row.KindDecimal, nil, "-0.0001"},
		{`{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}`, new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(1), 126), big.NewInt(100)), row.KindDecimal, nil, "850705917302346158658436518579420528.64"},
		{`{"type":"bytes","logicalType":"decimal","precision":60,"scale":2}`, new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(-1), 140), big.NewInt(100)), row.KindDecimal, nil, "-13937965749081639463459823920405225941237.76"},
		{`{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":3}`, big.NewRat(12345, 1000), row.KindDecimal, nil, "12.345"},
		{`{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":3}`, big.NewRat(-12345, 1000), row.KindString, nil, "-12.345"},
		{`{"type":"bytes","logicalType":"decimal","precision":38,"scale":20}`, big.NewRat(1, 100), row.KindDecimal, nil, "error: type: want decimal, got Avro bytes (decimal(38,20)) (decimal scale above 19"},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, "B", row.KindString, nil, "B"},
		{`{"type":"enum","name":"E","symbols":["true","false"]}`, "false", row.KindBool, nil, "false"},
		{`["null","string","long"]`, nil, row.KindString, nil, "null"},
		{`["null","string","long"]`, int64(9), row.KindString, nil, "9"},
		{`["null","string","long"]`, "s", row.KindString, nil, "s"},
		{`["null",{"type":"array","items":"int"}]`, []any{int32(1)}, row.KindString, nil, "error: type: want string, got Avro array"},
		{`{"type":"map","values":"int"}`, map[string]any{"a": int32(1)}, row.KindInt, nil, "error: type: want int, got Avro map"},
	}
	for _, c := range cases {
		w := mustParse(t, `{"type":"record","name":"R","fields":[{"name":"pre","type":"long"},{"name":"v","type":`+c.avroType+`},{"name":"post","type":"string"}]}`)
		schema := schemaOf(t, "v", c.kind, "post", row.KindString)
		fields := format.Fields{Schema: schema}
		if c.parser != nil {
			fields.Time = map[int]*eventtime.Parser{0: c.parser}
		}
		p, err := Compile(w, Reader{Fields: fields})
		if err != nil {
			t.Fatalf("%s: %v", c.avroType, err)
		}
		data := encode(t, w, map[string]any{"pre": int64(-1), "v": c.value, "post": "end"})
		r := schema.NewRow()
		var a source.Arena
		e := p.Decode(data, 0, r, &a)
		var got string
		if e != nil {
			got = "error: " + e.Rule + ": " + e.Reason
			if e.Field != "v" {
				t.Errorf("%s %v: error field %q, want v", c.avroType, c.value, e.Field)
			}
		} else {
			v := r.Get(schema.Fields[0])
			got = v.String()
			if v.IsNull() {
				got = "null"
			} else if c.kind == row.KindTime {
				got = time.UnixMilli(v.I).UTC().Format(time.RFC3339Nano)
			}
		}
		if strings.HasPrefix(c.want, "error: ") {
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("%s %v into %s: got %q, want prefix %q", c.avroType, c.value, c.kind, got, c.want)
			}
		} else if got != c.want {
			t.Errorf("%s %v into %s: got %q, want %q", c.avroType, c.value, c.kind, got, c.want)
		}
		// The field after it is always read: a field error never
		// desynchronises the decoder.
		if post := r.Get(schema.Fields[1]); post.S != "end" {
			t.Errorf("%s %v: post = %v, want end", c.avroType, c.value, post)
		}
	}
}
