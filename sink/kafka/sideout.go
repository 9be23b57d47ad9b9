package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/valyala/fastjson"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/row"
)

// This file encodes side-output records — the late, quarantine and
// conflict objects the engine writes (changelog's Late, Quarantine and
// Conflict JSON) — as Avro or Protobuf records of fixed schemas.

// sideKind is the wire type of a side-output field.
type sideKind uint8

const (
	skString    sideKind = iota // a JSON string
	skOptString                 // a JSON string or null
	skJSON                      // an embedded JSON value (object, or string when not JSON) or null: its JSON text
	skTime                      // an RFC 3339 string
	skWatermark                 // an RFC 3339 string, "infinity" or null
	skLong                      // a JSON integer
	skOptLong                   // a JSON integer or null
	skRecord                    // a JSON object of the sub fields
)

// sideField is one field of a side-output record.
type sideField struct {
	name string
	kind sideKind
	doc  string
	sub  []sideField // skRecord
	// omitted: the engine writes the key only sometimes (null when absent).
	omitted bool
}

// sideSchema is the schema of one kind of side-output record.
type sideSchema struct {
	kind   string // "late", "quarantine", "conflict"
	name   string // record and message name
	doc    string
	fields []sideField
}

// The three kinds of side-output records, their fields in the order the
// engine writes them (changelog/json.go).
var (
	lateSchema = sideSchema{"late", "LateRecord", "An event that arrived after every window it belongs to had closed (tidemark's late side output).", []sideField{
		{name: "stage", kind: skString},
		{name: "event", kind: skJSON, doc: "the original event as JSON text"},
		{name: "event_time", kind: skTime},
		{name: "observed_at", kind: skTime, doc: "processing time at arrival"},
		{name: "current_watermark", kind: skWatermark, doc: "the watermark at arrival"},
		{name: "lateness_ms", kind: skLong},
		{name: "reason", kind: skString},
		{name: "source", kind: skString, doc: "file:line or topic[partition]@offset"},
	}}
	quarantineSchema = sideSchema{"quarantine", "QuarantineRecord", "A record that could not be decoded or broke a rule (tidemark's quarantine).", []sideField{
		{name: "stage", kind: skString},
		{name: "raw", kind: skString, doc: "the original bytes as text (invalid UTF-8 replaced by U+FFFD)"},
		{name: "raw_base64", kind: skOptString, omitted: true, doc: "the original bytes in base64 when they are not valid UTF-8, else null"},
		{name: "reason", kind: skString},
		{name: "field", kind: skOptString},
		{name: "rule", kind: skString},
		{name: "source", kind: skRecord, sub: []sideField{
			{name: "file", kind: skOptString},
			{name: "topic", kind: skOptString},
			{name: "partition", kind: skOptString},
			{name: "line", kind: skOptLong},
			{name: "offset", kind: skLong},
		}},
	}}
	conflictSchema = sideSchema{"conflict", "ConflictRecord", "A delivery that reuses an event id with a different payload (tidemark's conflict output).", []sideField{
		{name: "event_id", kind: skString},
		{name: "first_payload_hash", kind: skString},
		{name: "first_payload", kind: skJSON, doc: "the first delivery as JSON text; null when no longer kept"},
		{name: "new_payload_hash", kind: skString},
		{name: "new_payload", kind: skJSON, doc: "this delivery as JSON text"},
		{name: "event_time", kind: skTime},
		{name: "observed_at", kind: skTime},
		{name: "source", kind: skString},
	}}
)

// avroSide is the Avro type of a side field.
func (f *sideField) avroType(parent string) any {
	ts := map[string]any{"type": "long", "logicalType": "timestamp-millis"}
	switch f.kind {
	case skString:
		return "string"
	case skOptString, skJSON:
		return []any{"null", "string"}
	case skTime:
		return ts
	case skWatermark:
		return []any{"null", ts}
	case skLong:
		return "long"
	case skOptLong:
		return []any{"null", "long"}
	}
	rec := avroRecord{Type: "record", Name: parent + "Source"}
	for i := range f.sub {
		rec.Fields = append(rec.Fields, f.sub[i].avroField(parent))
	}
	return rec
}

func (f *sideField) nullable() bool {
	return f.kind == skOptString || f.kind == skJSON || f.kind == skWatermark || f.kind == skOptLong
}

func (f *sideField) avroField(parent string) avroField {
	a := avroField{Name: f.name, Type: f.avroType(parent), Doc: f.doc}
	if f.nullable() {
		a.Default = nullDefault
	}
	return a
}

// avroSchema returns the Avro schema text of s.
func (s *sideSchema) avroSchema() string {
	rec := avroRecord{Type: "record", Name: s.name, Namespace: "tidemark", Doc: s.doc}
	for i := range s.fields {
		rec.Fields = append(rec.Fields, s.fields[i].avroField(strings.TrimSuffix(s.name, "Record")))
	}
	return mustJSON(rec)
}

// protoSchema returns the .proto text of s: one message, a nested Source
// message for the quarantine record's source.
func (s *sideSchema) protoSchema() string {
	return protoFile("tidemark", func(b *strings.Builder) {
		fmt.Fprintf(b, "// %s\nmessage %s {\n", s.doc, s.name)
		writeSideFields(b, s.fields, "  ")
		b.WriteString("}\n")
	}, row.KindTime)
}

func writeSideFields(b *strings.Builder, fields []sideField, indent string) {
	for i, f := range fields {
		var t string
		switch f.kind {
		case skString:
			t = "string"
		case skOptString, skJSON:
			t = "optional string"
		case skTime, skWatermark:
			t = "google.protobuf.Timestamp"
		case skLong:
			t = "int64"
		case skOptLong:
			t = "optional int64"
		case skRecord:
			t = "Source"
		}
		fmt.Fprintf(b, "%s%s %s = %d;\n", indent, t, f.name, i+1)
	}
	for _, f := range fields {
		if f.kind == skRecord {
			fmt.Fprintf(b, "%smessage Source {\n", indent)
			writeSideFields(b, f.sub, indent+"  ")
			fmt.Fprintf(b, "%s}\n", indent)
		}
	}
}

// RecordEncoder makes the record value of a side-output record (the JSON
// object the engine hands a sink) in a sink's format: the object itself
// with JSON; with Avro or Protobuf a record of the late, quarantine or
// conflict schema (the package documentation's "Avro and Protobuf"),
// registered under "<topic>-value" when the first record of its kind is
// encoded. Not safe for concurrent use.
type RecordEncoder struct {
	topic  string
	format string
	reg    *confluent.Registry
	schema *sideSchema // the kind of the first record
	id     int
	p      fastjson.Parser
	buf    []byte
}

// NewRecordEncoder returns the encoder of side-output records going to
// topic in enc's format; it does no IO. Errors: an unknown format, a
// missing registry or topic.
func NewRecordEncoder(topic string, enc Encoding) (*RecordEncoder, error) {
	if err := enc.check(topic); err != nil {
		return nil, err
	}
	return &RecordEncoder{topic: topic, format: enc.format(), reg: enc.Registry}, nil
}

// Encode returns the record value of the side-output object obj, valid
// until the next call. With JSON that is obj. With Avro or Protobuf obj
// must be a late, quarantine or conflict object as the engine writes
// them; the first one registers its kind's schema under
// "<topic>-value" (within ctx), and every later one must be of the same
// kind. Errors: obj is none of the three (naming its keys), of another
// kind than the topic's first record, or holds a value its field cannot
// (a time that is not RFC 3339); a registration the registry refuses or
// cannot be asked.
func (e *RecordEncoder) Encode(ctx context.Context, obj []byte) ([]byte, error) {
	if e.format == FormatJSON {
		return obj, nil
	}
	v, err := e.p.ParseBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("side-output record for topic %s: not JSON: %w", e.topic, err)
	}
	o, err := v.Object()
	if err != nil {
		return nil, fmt.Errorf("side-output record for topic %s: not a JSON object", e.topic)
	}
	s := sideKindOf(o)
	if s == nil {
		return nil, fmt.Errorf("side-output record for topic %s: keys %s are those of no late, quarantine or conflict record", e.topic, keysOf(o))
	}
	if e.schema == nil {
		text, typ := s.avroSchema(), sr.TypeAvro
		if e.format == FormatProtobuf {
			text, typ = s.protoSchema(), sr.TypeProtobuf
		}
		id, err := e.reg.Register(ctx, valueSubject(e.topic), sr.Schema{Type: typ, Schema: text})
		if err != nil {
			return nil, err
		}
		e.schema, e.id = s, id
	} else if s != e.schema {
		return nil, fmt.Errorf("side-output record for topic %s: a %s record, but the topic receives %s records", e.topic, s.kind, e.schema.kind)
	}
	e.buf = confluent.AppendHeader(e.buf[:0], e.id)
	if e.format == FormatAvro {
		e.buf, err = appendSideAvro(e.buf, s.fields, o)
	} else {
		e.buf = confluent.AppendIndexes(e.buf, nil)
		e.buf, err = appendSideProto(e.buf, s.fields, o)
	}
	if err != nil {
		return nil, fmt.Errorf("%s record for topic %s: %w", s.kind, e.topic, err)
	}
	return e.buf, nil
}

// Schema returns the schema text (Avro JSON or .proto) of the kind of
// side-output record kind ("late", "quarantine", "conflict") in format,
// or "".
func Schema(format, kind string) string {
	for _, s := range []*sideSchema{&lateSchema, &quarantineSchema, &conflictSchema} {
		if s.kind == kind {
			if format == FormatProtobuf {
				return s.protoSchema()
			}
			return s.avroSchema()
		}
	}
	return ""
}

// sideKindOf returns the schema whose fields are exactly o's keys, in
// order (fields the engine omits at times may be absent), or nil.
func sideKindOf(o *fastjson.Object) *sideSchema {
	for _, s := range []*sideSchema{&lateSchema, &quarantineSchema, &conflictSchema} {
		if sameKeys(o, s.fields) {
			return s
		}
	}
	return nil
}

func sameKeys(o *fastjson.Object, fields []sideField) bool {
	i, ok := 0, true
	o.Visit(func(k []byte, _ *fastjson.Value) {
		for ok && i < len(fields) && fields[i].omitted && string(k) != fields[i].name {
			i++
		}
		if !ok || i == len(fields) || string(k) != fields[i].name {
			ok = false
			return
		}
		i++
	})
	for ok && i < len(fields) && fields[i].omitted {
		i++
	}
	return ok && i == len(fields)
}

// keysOf lists o's keys for messages.
func keysOf(o *fastjson.Object) string {
	var ks []string
	o.Visit(func(k []byte, _ *fastjson.Value) { ks = append(ks, string(k)) })
	return "[" + strings.Join(ks, ", ") + "]"
}

// sideValue is one field's value read from the JSON object.
type sideValue struct {
	null bool
	s    []byte // strings and JSON text
	i    int64  // longs and times (ms)
	sub  *fastjson.Object
}

// read returns field f's value in v (the member of the object), or an
// error naming the field.
func (f *sideField) read(v *fastjson.Value) (sideValue, error) {
	if v == nil {
		if f.kind == skRecord {
			return sideValue{}, fmt.Errorf("field %s: missing", f.name)
		}
		if f.nullable() || f.kind == skOptString {
			return sideValue{null: true}, nil
		}
		return sideValue{}, fmt.Errorf("field %s: missing", f.name)
	}
	if v.Type() == fastjson.TypeNull {
		if f.nullable() {
			return sideValue{null: true}, nil
		}
		return sideValue{}, fmt.Errorf("field %s: null", f.name)
	}
	bad := func(want string) (sideValue, error) {
		return sideValue{}, fmt.Errorf("field %s: %s, want %s", f.name, v.Type(), want)
	}
	switch f.kind {
	case skString, skOptString:
		b, err := v.StringBytes()
		if err != nil {
			return bad("a string")
		}
		return sideValue{s: b}, nil
	case skJSON:
		if v.Type() == fastjson.TypeString {
			b, _ := v.StringBytes()
			return sideValue{s: b}, nil
		}
		return sideValue{s: v.MarshalTo(nil)}, nil
	case skTime, skWatermark:
		b, err := v.StringBytes()
		if err != nil {
			return bad("an RFC 3339 time")
		}
		if f.kind == skWatermark && string(b) == "infinity" {
			return sideValue{i: math.MaxInt64}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, string(b))
		if err != nil {
			return sideValue{}, fmt.Errorf("field %s: %q is not an RFC 3339 time", f.name, b)
		}
		return sideValue{i: t.UnixMilli()}, nil
	case skLong, skOptLong:
		n, err := v.Int64()
		if err != nil {
			return bad("an integer")
		}
		return sideValue{i: n}, nil
	}
	o, err := v.Object()
	if err != nil {
		return bad("an object")
	}
	return sideValue{sub: o}, nil
}

// appendSideAvro appends the fields of o in Avro's binary encoding.
func appendSideAvro(dst []byte, fields []sideField, o *fastjson.Object) ([]byte, error) {
	for i := range fields {
		f := &fields[i]
		v, err := f.read(o.Get(f.name))
		if err != nil {
			return dst, err
		}
		if f.nullable() {
			if v.null {
				dst = append(dst, 0)
				continue
			}
			dst = append(dst, 2)
		}
		switch f.kind {
		case skString, skOptString, skJSON:
			if !utf8.Valid(v.s) {
				return dst, fmt.Errorf("field %s: not valid UTF-8", f.name)
			}
			dst = avro.AppendBytes(dst, v.s)
		case skTime, skWatermark, skLong, skOptLong:
			dst = avro.AppendLong(dst, v.i)
		case skRecord:
			if dst, err = appendSideAvro(dst, f.sub, v.sub); err != nil {
				return dst, fmt.Errorf("field %s: %w", f.name, err)
			}
		}
	}
	return dst, nil
}

// appendSideProto appends the fields of o in Protobuf's binary encoding.
func appendSideProto(dst []byte, fields []sideField, o *fastjson.Object) ([]byte, error) {
	for i := range fields {
		f := &fields[i]
		num := protowire.Number(i + 1)
		v, err := f.read(o.Get(f.name))
		if err != nil {
			return dst, err
		}
		if v.null {
			continue
		}
		switch f.kind {
		case skString, skOptString, skJSON:
			if !utf8.Valid(v.s) {
				return dst, fmt.Errorf("field %s: not valid UTF-8", f.name)
			}
			if f.kind == skString && len(v.s) == 0 {
				continue
			}
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, v.s)
		case skTime, skWatermark:
			ms := v.i
			if ms == math.MaxInt64 {
				ms = maxTimestampMs
			}
			if ms > maxTimestampMs || ms < minTimestampMs {
				return dst, fmt.Errorf("field %s: outside the years 1 to 9999 a google.protobuf.Timestamp holds", f.name)
			}
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = appendTimestamp(dst, ms)
		case skLong, skOptLong:
			if f.kind == skLong && v.i == 0 {
				continue
			}
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(v.i))
		case skRecord:
			sub, err := appendSideProto(nil, f.sub, v.sub)
			if err != nil {
				return dst, fmt.Errorf("field %s: %w", f.name, err)
			}
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, sub)
		}
	}
	return dst, nil
}

// mustJSON marshals a schema of plain values.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
