package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/format/protobuf"
	"github.com/tidemark/tidemark/internal/devregistry"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// testRegistry serves a development registry and returns a client.
func testRegistry(t testing.TB) (*confluent.Registry, *sr.Client) {
	t.Helper()
	srv := httptest.NewServer(devregistry.New().Handler())
	t.Cleanup(srv.Close)
	reg, err := confluent.NewRegistry(confluent.RegistryConfig{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return reg, cl
}

// wideDesc has a column of every kind: key store (string) and day
// (timestamp); values total (decimal), n (int), seen (bool), note
// (string), last (timestamp).
var wideDesc = changelog.Desc{
	Stage: "shop-revenue",
	Key:   []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "day", Kind: row.KindTime}},
	Values: []changelog.Column{{Name: "total", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt},
		{Name: "seen", Kind: row.KindBool}, {Name: "note", Kind: row.KindString}, {Name: "last", Kind: row.KindTime}},
	Timezone: "Asia/Seoul",
	EmitMode: "retract",
}

func dec(s string) row.Decimal {
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		panic(err)
	}
	return d
}

// wideRows are rows of wideDesc with nulls, negative and zero decimals,
// times before 1970, and the watermark at its two special values.
func wideRows() []changelog.Row {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	return []changelog.Row{
		{Op: changelog.Insert, WindowStart: t0, WindowEnd: t0 + 3_600_000,
			Key:     []row.Value{row.Str("FR"), row.Time(day)},
			Values:  []row.Value{row.Dec(dec("12.50")), row.Int(3), row.Bool(true), row.Str("crème brûlée"), row.Time(t0 + 59_999)},
			Version: 1, WatermarkAt: t0 + 1_800_000, UpdatedAt: t0 + 1_860_500},
		{Op: changelog.UpdateBefore, WindowStart: t0, WindowEnd: t0 + 3_600_000,
			Key:     []row.Value{row.Str("FR"), row.Time(day)},
			Values:  []row.Value{row.Dec(dec("-0.05")), row.Int(-7), row.Bool(false), row.Null, row.Time(-1)},
			Version: 2, IsFinal: true, WatermarkAt: changelog.WatermarkInfinity, UpdatedAt: t0},
		{Op: changelog.Delete, WindowStart: t0, WindowEnd: t0 + 3_600_000,
			Key:     []row.Value{row.Null, row.Null},
			Values:  []row.Value{row.Dec(dec("0")), row.Null, row.Null, row.Str(""), row.Null},
			Version: 3, WatermarkAt: changelog.WatermarkNone, UpdatedAt: t0 + 1},
	}
}

func encoding(reg *confluent.Registry, format string, scale int) Encoding {
	return Encoding{Format: format, Registry: reg, DecimalScale: &scale}
}

// valueSchema is the row.Schema a pipeline reading wideDesc's records
// declares, in column order.
func valueSchema(t *testing.T) *row.Schema {
	s := row.NewSchema()
	for _, c := range []changelog.Column{{Name: "op", Kind: row.KindString}, {Name: "window_start", Kind: row.KindTime}, {Name: "window_end", Kind: row.KindTime},
		{Name: "store", Kind: row.KindString}, {Name: "day", Kind: row.KindTime},
		{Name: "total", Kind: row.KindDecimal}, {Name: "n", Kind: row.KindInt}, {Name: "seen", Kind: row.KindBool}, {Name: "note", Kind: row.KindString}, {Name: "last", Kind: row.KindTime},
		{Name: "version", Kind: row.KindInt}, {Name: "is_final", Kind: row.KindBool}, {Name: "watermark_at", Kind: row.KindTime}, {Name: "updated_at", Kind: row.KindTime}} {
		if _, err := s.Add(c.Name, c.Kind); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// wantValues are the values a reader of r's record finds, in
// valueSchema's order (watermark_at: the wire's value for infinity).
func wantValues(r changelog.Row, infinity int64) []row.Value {
	wm := row.Time(r.WatermarkAt)
	switch r.WatermarkAt {
	case changelog.WatermarkNone:
		wm = row.Null
	case changelog.WatermarkInfinity:
		wm = row.Time(infinity)
	}
	out := []row.Value{row.Str(r.Op.String()), row.Time(r.WindowStart), row.Time(r.WindowEnd)}
	out = append(out, r.Key...)
	out = append(out, r.Values...)
	return append(out, row.Int(int64(r.Version)), row.Bool(r.IsFinal), wm, row.Time(r.UpdatedAt))
}

// decodeWithSource decodes value with the Kafka source's decoder
// (format/confluent) into valueSchema's fields.
func decodeWithSource(t *testing.T, reg *confluent.Registry, fmtName string, schema *row.Schema, value []byte) []row.Value {
	t.Helper()
	d, err := confluent.NewDecoder(confluent.DecoderConfig{Registry: reg, Format: fmtName, Fields: format.Fields{Schema: schema}, Topic: "revenue"})
	if err != nil {
		t.Fatal(err)
	}
	r := schema.NewRow()
	var a source.Arena
	de, err := d.Decode(context.Background(), value, r, &a)
	if err != nil || de != nil {
		t.Fatalf("decode: %v %v", de, err)
	}
	out := make([]row.Value, len(schema.Fields))
	for i, f := range schema.Fields {
		out[i] = r.Get(f)
	}
	return out
}

func sameValues(t *testing.T, what string, got, want []row.Value) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Errorf("%s: value %d = %v (%s), want %v (%s)", what, i, got[i], got[i].Kind, want[i], want[i].Kind)
		}
	}
}

// TestAvroRowsRoundTrip: the records an Avro RowEncoder writes carry the
// schema ids the registry gave its subjects, and read back — with the
// Kafka source's decoder, and with twmb/avro's generic decoder from the
// registered schema text — as the rows' values exactly.
func TestAvroRowsRoundTrip(t *testing.T) {
	reg, cl := testRegistry(t)
	e, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatAvro, 2)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keyVersions, _ := cl.SubjectVersions(ctx, "revenue-key")
	valVersions, _ := cl.SubjectVersions(ctx, "revenue-value")
	if !reflect.DeepEqual(keyVersions, []int{1}) || !reflect.DeepEqual(valVersions, []int{1}) {
		t.Fatalf("subject versions: key %v, value %v", keyVersions, valVersions)
	}
	ks, _ := cl.SchemaByVersion(ctx, "revenue-key", 1)
	vs, _ := cl.SchemaByVersion(ctx, "revenue-value", 1)
	keyAvro, err := tavro.Parse(ks.Schema.Schema)
	if err != nil {
		t.Fatal(err)
	}
	valAvro, err := tavro.Parse(vs.Schema.Schema)
	if err != nil {
		t.Fatal(err)
	}
	schema := valueSchema(t)
	for i, r := range wideRows() {
		key, value, skip, err := e.Encode(&r)
		if err != nil || skip {
			t.Fatalf("row %d: %v %v", i, skip, err)
		}
		if key[0] != 0 || int(binary.BigEndian.Uint32(key[1:5])) != ks.ID || value[0] != 0 || int(binary.BigEndian.Uint32(value[1:5])) != vs.ID {
			t.Fatalf("row %d: headers % x / % x, want ids %d / %d", i, key[:5], value[:5], ks.ID, vs.ID)
		}
		sameValues(t, "source decoder", decodeWithSource(t, reg, "avro", schema, value), wantValues(r, math.MaxInt64))

		// twmb/avro, generically.
		var k, v map[string]any
		if rest, err := keyAvro.Decode(key[5:], &k); err != nil || len(rest) != 0 {
			t.Fatalf("row %d key: %v (%d bytes left)", i, err, len(rest))
		}
		if rest, err := valAvro.Decode(value[5:], &v); err != nil || len(rest) != 0 {
			t.Fatalf("row %d value: %v (%d bytes left)", i, err, len(rest))
		}
		if got := generic(k["window_start"]); got != time.UnixMilli(r.WindowStart).UTC().Format(time.RFC3339Nano) {
			t.Errorf("row %d: key window_start %v", i, got)
		}
		if generic(k["store"]) != generic(v["store"]) || generic(k["day"]) != generic(v["day"]) {
			t.Errorf("row %d: key %v, value %v", i, k, v)
		}
		want := map[int]map[string]string{
			0: {"op": "insert", "store": "FR", "day": "2026-03-01T00:00:00Z", "total": "25/2", "n": "3", "seen": "true",
				"note": "crème brûlée", "last": "2026-03-01T01:00:59.999Z", "version": "1", "is_final": "false",
				"watermark_at": "2026-03-01T01:30:00Z", "updated_at": "2026-03-01T01:31:00.5Z"},
			1: {"op": "update_before", "store": "FR", "total": "-1/20", "n": "-7", "seen": "false", "note": "<nil>",
				"last": "1969-12-31T23:59:59.999Z", "version": "2", "is_final": "true", "watermark_at": "infinity"},
			2: {"op": "delete", "store": "<nil>", "day": "<nil>", "total": "0", "n": "<nil>", "seen": "<nil>", "note": "",
				"last": "<nil>", "version": "3", "watermark_at": "<nil>", "updated_at": "2026-03-01T01:00:00.001Z"},
		}[i]
		for f, w := range want {
			if got := generic(v[f]); got != w {
				t.Errorf("row %d: twmb/avro reads %s = %s, want %s", i, f, got, w)
			}
		}
	}
}

// generic renders a value twmb/avro decoded.
func generic(v any) string {
	switch x := v.(type) {
	case time.Time:
		if x.UnixMilli() == math.MaxInt64 {
			return "infinity"
		}
		return x.UTC().Format(time.RFC3339Nano)
	case *big.Rat:
		return x.RatString()
	case big.Rat:
		return x.RatString()
	case nil:
		return "<nil>"
	}
	return strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\n", ""))
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int64:
		return big.NewInt(x).String()
	case int32:
		return big.NewInt(int64(x)).String()
	}
	return reflect.ValueOf(v).String()
}

// TestProtobufRowsRoundTrip: the Protobuf records read back with the
// Kafka source's decoder, and with protobuf-go's dynamicpb from the
// registered .proto text, as the rows' values.
func TestProtobufRowsRoundTrip(t *testing.T) {
	reg, cl := testRegistry(t)
	e, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatProtobuf, 2)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	vs, err := cl.SchemaByVersion(ctx, "revenue-value", 1)
	if err != nil {
		t.Fatal(err)
	}
	if vs.Type != sr.TypeProtobuf {
		t.Fatalf("value schema type %v", vs.Type)
	}
	fd, err := protobuf.Parse(ctx, "value.proto", vs.Schema.Schema, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, vs.Schema.Schema)
	}
	md := fd.Messages().Get(0)
	schema := valueSchema(t)
	maxTs := time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC).UnixMilli()
	for i, r := range wideRows() {
		_, value, _, err := e.Encode(&r)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if value[5] != 0 {
			t.Fatalf("row %d: message indexes byte %#x, want 0 (the first message)", i, value[5])
		}
		sameValues(t, "source decoder", decodeWithSource(t, reg, "protobuf", schema, value), wantValues(r, maxTs))

		msg := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(value[6:], msg); err != nil {
			t.Fatalf("row %d: protobuf-go: %v", i, err)
		}
		got := map[string]string{}
		msg.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			got[string(f.Name())] = protoText(f, v)
			return true
		})
		want := map[int]map[string]string{
			0: {"op": "insert", "window_start": "1772326800.0", "window_end": "1772330400.0", "store": "FR", "day": "1772323200.0",
				"total": "value=04e2 precision=38 scale=2", "n": "3", "seen": "true", "note": "crème brûlée", "last": "1772326859.999000000",
				"version": "1", "watermark_at": "1772328600.0", "updated_at": "1772328660.500000000"},
			1: {"op": "update_before", "window_start": "1772326800.0", "window_end": "1772330400.0", "store": "FR", "day": "1772323200.0",
				"total": "value=fb precision=38 scale=2", "n": "-7", "seen": "false", "last": "-1.999000000",
				"version": "2", "is_final": "true", "watermark_at": "253402300799.999000000", "updated_at": "1772326800.0"},
			2: {"op": "delete", "window_start": "1772326800.0", "window_end": "1772330400.0",
				"total": "value=00 precision=38 scale=2", "note": "", "version": "3", "updated_at": "1772326800.1000000"},
		}[i]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: protobuf-go reads\n %v\nwant\n %v", i, got, want)
		}
	}
}

// protoText renders a field protobuf-go decoded: timestamps as
// seconds.nanos, decimals by their fields.
func protoText(f protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if f.Kind() != protoreflect.MessageKind {
		if f.Kind() == protoreflect.BytesKind {
			return hexBytes(v.Bytes())
		}
		return v.String()
	}
	m := v.Message()
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		s := m.Get(m.Descriptor().Fields().ByName("seconds")).Int()
		n := m.Get(m.Descriptor().Fields().ByName("nanos")).Int()
		return big.NewInt(s).String() + "." + big.NewInt(n).String()
	case "confluent.type.Decimal":
		fs := m.Descriptor().Fields()
		return "value=" + hexBytes(m.Get(fs.ByName("value")).Bytes()) + " precision=" + m.Get(fs.ByName("precision")).String() + " scale=" + m.Get(fs.ByName("scale")).String()
	}
	return "?"
}

func hexBytes(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestEncodeUpsert: with upsert, update_before rows are skipped and a
// delete is its Avro key with a null value (a tombstone).
func TestEncodeUpsert(t *testing.T) {
	reg, _ := testRegistry(t)
	e, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue", Upsert: true, Encoding: encoding(reg, FormatAvro, 2)})
	if err != nil {
		t.Fatal(err)
	}
	rows := wideRows()
	if _, _, skip, err := e.Encode(&rows[1]); !skip || err != nil {
		t.Errorf("update_before: skip %v, err %v", skip, err)
	}
	key, value, skip, err := e.Encode(&rows[2])
	if skip || err != nil || value != nil || len(key) < 6 || key[0] != 0 {
		t.Errorf("delete: key % x, value %v, skip %v, err %v", key, value, skip, err)
	}
}

// TestEncodeDecimalNeverRounds: a decimal with more digits after the
// point than decimal_scale, or more than 38 digits at it, fails naming
// the row and the column; trailing zeros beyond the scale are no loss.
func TestEncodeDecimalNeverRounds(t *testing.T) {
	reg, _ := testRegistry(t)
	for _, f := range []string{FormatAvro, FormatProtobuf} {
		e, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue-" + f, Encoding: encoding(reg, f, 2)})
		if err != nil {
			t.Fatal(err)
		}
		r := wideRows()[0]
		r.Values = append([]row.Value(nil), r.Values...)
		r.Values[0] = row.Dec(dec("12.345"))
		_, _, _, err = e.Encode(&r)
		want := f + " record of row of window_start 2026-03-01T01:00:00Z, store=FR, day=2026-03-01T00:00:00Z, version 1: column total: 12.345 at scale 2: more digits after the point than the column's scale"
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", f, err, want)
		}
		if !errors.Is(err, avro.ErrDecimalScale) {
			t.Errorf("%s: %v does not wrap ErrDecimalScale", f, err)
		}
		r.Values[0] = row.Dec(dec("12.3400"))
		if _, _, _, err := e.Encode(&r); err != nil {
			t.Errorf("%s: trailing zeros: %v", f, err)
		}
		r.Values[0] = row.Dec(dec("1" + strings.Repeat("0", 36))) // 37 digits + 2 after the point
		if _, _, _, err := e.Encode(&r); err == nil || !strings.Contains(err.Error(), "more digits than the precision (38)") {
			t.Errorf("%s: 39 digits: %v", f, err)
		}
		r.Values[0] = row.Dec(dec("-" + strings.Repeat("9", 36) + ".99")) // exactly 38 digits
		if _, _, _, err := e.Encode(&r); err != nil {
			t.Errorf("%s: 38 digits: %v", f, err)
		}
	}
}

// TestIncompatibleSchemaChange: a pipeline whose column changes type
// under a BACKWARD subject is refused when its encoder is made, naming
// the subject and the registry's answer.
func TestIncompatibleSchemaChange(t *testing.T) {
	reg, _ := testRegistry(t)
	if _, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatAvro, 2)}); err != nil {
		t.Fatal(err)
	}
	// A new nullable column is compatible: version 2.
	added := wideDesc
	added.Values = append(append([]changelog.Column(nil), wideDesc.Values...), changelog.Column{Name: "extra", Kind: row.KindInt})
	if _, err := NewRowEncoderWith(context.Background(), added, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatAvro, 2)}); err != nil {
		t.Fatalf("added nullable column: %v", err)
	}
	changed := wideDesc
	changed.Values = append([]changelog.Column{{Name: "total", Kind: row.KindBool}}, wideDesc.Values[1:]...)
	_, err := NewRowEncoderWith(context.Background(), changed, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatAvro, 2)})
	if !errors.Is(err, confluent.ErrIncompatible) || !strings.Contains(err.Error(), "subject revenue-value") ||
		!strings.Contains(err.Error(), `answered: Schema being registered is incompatible with an earlier schema for subject "revenue-value"`) {
		t.Errorf("changed column type: %v", err)
	}
	// Avro's resolution rules ignore logical types, so the registry
	// would take a changed scale; the encoder refuses it.
	_, err = NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "revenue", Encoding: encoding(reg, FormatAvro, 4)})
	if err == nil || !strings.HasPrefix(err.Error(), "subject revenue-value: decimal_scale 4, but version 2 of the subject writes column total at scale 2") {
		t.Errorf("changed decimal scale: %v", err)
	}
}

// TestEncodingRefusals: names Avro cannot carry, a missing registry, a
// scale out of range.
func TestEncodingRefusals(t *testing.T) {
	reg, _ := testRegistry(t)
	dotted := wideDesc
	dotted.Key = []changelog.Column{{Name: "meta.store", Kind: row.KindString}}
	if _, err := NewRowEncoderWith(context.Background(), dotted, RowOptions{Topic: "r", Encoding: encoding(reg, FormatAvro, 2)}); err == nil ||
		!strings.HasPrefix(err.Error(), `column "meta.store" is not a valid Avro or Protobuf field name`) {
		t.Errorf("dotted name: %v", err)
	}
	if _, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "r", Encoding: Encoding{Format: FormatAvro}}); err == nil ||
		!strings.Contains(err.Error(), "schema registry is required") {
		t.Errorf("no registry: %v", err)
	}
	if _, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "r", Encoding: encoding(reg, FormatAvro, 20)}); err == nil ||
		err.Error() != "decimal_scale: 20: want 0 to 19" {
		t.Errorf("scale 20: %v", err)
	}
	if _, err := NewRowEncoderWith(context.Background(), wideDesc, RowOptions{Topic: "r", Encoding: Encoding{Format: "xml"}}); err == nil ||
		err.Error() != `format "xml": want json, avro or protobuf` {
		t.Errorf("xml: %v", err)
	}
}

// TestJSONEncoderUnchanged: NewRowEncoder and NewRowEncoderWith without
// an encoding write the package documentation's JSON key and value.
func TestJSONEncoderUnchanged(t *testing.T) {
	r := mkRow(changelog.Insert, "FR", "12.50", 1)
	for _, mk := range []func() (*RowEncoder, error){
		func() (*RowEncoder, error) { return NewRowEncoder(desc, false) },
		func() (*RowEncoder, error) {
			return NewRowEncoderWith(context.Background(), desc, RowOptions{Topic: "t", Encoding: Encoding{Format: FormatJSON}})
		},
	} {
		e, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		k, v, skip := e.Record(&r)
		if skip || string(k) != keyFR || string(v) != valFR {
			t.Errorf("got %s => %s", k, v)
		}
	}
}
