package protobuf

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

const retailProto = `syntax = "proto3";
package retail.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "confluent/type/decimal.proto";

message InvoiceLine {
  string invoice_no = 1;
  string stock_code = 2;
  optional string description = 3;
  int32 quantity = 4;
  google.protobuf.Timestamp invoice_date = 5;
  confluent.type.Decimal unit_price = 6;
  google.protobuf.Int64Value customer_id = 7;
  string country = 8;
  Channel channel = 9;
  repeated string tags = 10;
  map<string, double> attrs = 11;
  Meta meta = 12;
  sint64 delta = 13;
  fixed64 big = 14;
  double ratio = 15;
  string price_text = 16;
  int64 epoch_ms = 17;
  bool gift = 18;

  message Meta {
    string producer = 1;
    int64 seq = 2;
  }
}

enum Channel {
  STORE = 0;
  ONLINE = 1;
}

message Other { string x = 1; }
`

func parse(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	fd, err := Parse(context.Background(), "retail.proto", retailProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

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

// message builds a message of md from protojson text: an independent
// encoder (google.golang.org/protobuf) for the decoder's input.
func message(t testing.TB, md protoreflect.MessageDescriptor, js string) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatalf("protojson %s: %v", js, err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m) // fields in number order (dynamicpb ranges them in any order)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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
	fd := parse(t)
	md, err := MessageByName(fd, "InvoiceLine")
	if err != nil {
		t.Fatal(err)
	}
	if got := Indexes(md); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Indexes = %v", got)
	}
	// Nested types count in declaration order, map entries included
	// (AttrsEntry is 0), as protoc's descriptors and Confluent's
	// serializers number them.
	if m2, err := MessageByIndexes(fd, []int{0, 1}); err != nil || m2.FullName() != "retail.v1.InvoiceLine.Meta" {
		t.Fatalf("MessageByIndexes [0 1] = %v, %v", m2, err)
	}
	if _, err := MessageByIndexes(fd, []int{2}); err == nil || !strings.Contains(err.Error(), "has 2 message types") {
		t.Fatalf("MessageByIndexes [2]: %v", err)
	}
	london, _ := time.LoadLocation("Europe/London")
	schema := schemaOf(t,
		"invoice_no", row.KindString, "quantity", row.KindInt, "invoice_date", row.KindTime,
		"unit_price", row.KindDecimal, "customer_id", row.KindString, "country", row.KindString,
		"channel", row.KindString, "meta.seq", row.KindInt, "description", row.KindString,
		"delta", row.KindInt, "big", row.KindDecimal, "ratio", row.KindDecimal, "price_text", row.KindDecimal,
		"epoch_ms", row.KindTime, "gift", row.KindBool, "missing", row.KindString)
	p, err := Compile(md, Reader{Fields: format.Fields{Schema: schema, Time: map[int]*eventtime.Parser{
		13: {Format: eventtime.EpochMs},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	_ = london
	if got := strings.Join(p.Unmatched, ","); got != "missing" {
		t.Errorf("Unmatched = %q", got)
	}
	for _, c := range []struct{ js, want string }{
		{`{"invoiceNo":"536365","stockCode":"85123A","description":"WHITE HANGING HEART","quantity":6,
		   "invoiceDate":"2010-12-01T08:26:00.123456Z","unitPrice":{"value":"/w==","scale":2},
		   "customerId":"17850","country":"United Kingdom","channel":"ONLINE","tags":["a","b"],
		   "attrs":{"x":1.5},"meta":{"producer":"till","seq":"42"},"delta":"-5","big":"18446744073709551615",
		   "ratio":0.1,"priceText":"2.55","epochMs":"1291192800000","gift":true}`,
			"invoice_no=536365 quantity=6 invoice_date=2010-12-01T08:26:00.123Z unit_price=-0.01 customer_id=17850 country=United Kingdom channel=ONLINE meta.seq=42 description=WHITE HANGING HEART delta=-5 big=18446744073709551615 ratio=0.1 price_text=2.55 epoch_ms=2010-12-01T08:40:00Z gift=true missing=null"},
		// Absent fields: implicit-presence scalars hold their zero value
		// (an enum its value 0), fields with presence are null, and a
		// string read as a decimal or a number read as a timestamp is
		// null rather than a guess.
		{`{}`, "invoice_no= quantity=0 invoice_date=null unit_price=null customer_id=null country= channel=STORE meta.seq=null description=null delta=0 big=0 ratio=0 price_text=null epoch_ms=null gift=false missing=null"},
		// A present wrapper holding 0, an empty sub-message.
		{`{"customerId":"0","meta":{}}`, "invoice_no= quantity=0 invoice_date=null unit_price=null customer_id=0 country= channel=STORE meta.seq=0 description=null delta=0 big=0 ratio=0 price_text=null epoch_ms=null gift=false missing=null"},
	} {
		data := message(t, md, c.js)
		r := schema.NewRow()
		var a source.Arena
		if e := p.Decode(data, 6, r, &a); e != nil {
			t.Fatalf("%s: %v", c.js, e)
		}
		if got := rowText(schema, r); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.js, got, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	fd := parse(t)
	md, _ := MessageByName(fd, "retail.v1.InvoiceLine")
	schema := schemaOf(t, "invoice_no", row.KindString, "quantity", row.KindInt, "tags", row.KindString, "big", row.KindInt, "country", row.KindInt)
	p, err := Compile(md, Reader{Fields: format.Fields{Schema: schema}})
	if err != nil {
		t.Fatal(err)
	}
	good := message(t, md, `{"invoiceNo":"A1","quantity":3}`)
	for _, c := range []struct {
		name string
		data []byte
		want string // rule: reason prefix
	}{
		{"truncated string", good[:3], "decode: Protobuf: truncated message: a length of 2 bytes at byte 11 runs past the end (1 bytes left)"},
		{"truncated varint", append(append([]byte{}, good...), 0x20, 0x80), "decode: Protobuf: truncated message: a varint at byte 17 runs past the end"},
		{"field number 0", []byte{0x00, 0x01}, "decode: Protobuf: field number 0 at byte 10 is out of range"},
		{"wire type 7", []byte{0x0f}, "decode: Protobuf: unknown wire type 7 at byte 10"},
		{"end group alone", []byte{0x0c}, "decode: Protobuf: an end-group tag at byte 10 without its start"},
		{"huge length", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "decode: Protobuf: truncated message: a length of 4294967295 bytes at byte 11 runs past the end (0 bytes left)"},
		{"repeated into a scalar", message(t, md, `{"tags":["a"]}`), "type: want string, got Protobuf repeated string"},
		{"uint64 beyond int64", message(t, md, `{"big":"18446744073709551615"}`), "type: want int, got Protobuf fixed64 (18446744073709551615 is out of int64 range)"},
		{"string into int", message(t, md, `{"country":"UK"}`), `type: want int, got Protobuf string "UK"`},
		{"invalid UTF-8", []byte{0x0a, 0x02, 'a', 0xff}, "encoding: invalid UTF-8 at byte 13"},
		{"NUL", []byte{0x0a, 0x02, 'a', 0x00}, "encoding: NUL character at byte 13"},
		{"unbalanced group", []byte{0x63, 0x08, 0x01}, "decode: Protobuf: truncated message: the group of field 12 at byte 10 has no end"},
		{"group closed by another field", []byte{0x63, 0x6c}, "decode: Protobuf: end-group tag of field 13 at byte 11 closes the group of field 12"},
	} {
		r := schema.NewRow()
		var a source.Arena
		e := p.Decode(c.data, 10, r, &a)
		if e == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := e.Rule + ": " + e.Reason; !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	// Deep nesting of unknown groups is bounded.
	var deep []byte
	for i := 0; i < 200; i++ {
		deep = append(deep, 0xfb, 0x01) // field 31, start group
	}
	r := schema.NewRow()
	var a source.Arena
	if e := p.Decode(deep, 0, r, &a); e == nil || !strings.Contains(e.Reason, "nested deeper than 100") {
		t.Errorf("deep groups: %v", e)
	}
}
