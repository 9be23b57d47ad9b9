package kafka

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/row"
)

// This file derives the Avro and Protobuf schemas of a stage's result
// records from its columns (changelog.Desc) and writes rows in them.

// src is where a column's value comes from in a changelog.Row.
type src uint8

const (
	srcOp src = iota
	srcWindowStart
	srcWindowEnd
	srcKey
	srcValue
	srcVersion
	srcIsFinal
	srcWatermark
	srcUpdatedAt
)

// column is one field of a key or value record.
type column struct {
	name     string
	kind     row.Kind
	src      src
	idx      int  // srcKey, srcValue: the index in Row.Key or Row.Values
	nullable bool // a union with null (Avro), explicit presence (Protobuf)
}

// layout is the fields of a record, in order.
type layout struct {
	name string // record or message name: "Key", "Value"
	cols []column
}

// rowLayouts returns the key and value layouts of d's rows. Errors: a
// column name that is not an Avro or Protobuf name.
func rowLayouts(d *changelog.Desc) (key, value layout, err error) {
	key.name, value.name = "Key", "Value"
	start := "window_start"
	if d.Stateless {
		start = "event_time"
	}
	key.cols = append(key.cols, column{name: start, kind: row.KindTime, src: srcWindowStart})
	value.cols = append(value.cols,
		column{name: "op", kind: row.KindString, src: srcOp},
		column{name: start, kind: row.KindTime, src: srcWindowStart})
	if !d.Stateless {
		value.cols = append(value.cols, column{name: "window_end", kind: row.KindTime, src: srcWindowEnd})
		for i, c := range d.Key {
			if err := checkName(c.Name); err != nil {
				return key, value, err
			}
			col := column{name: c.Name, kind: c.Kind, src: srcKey, idx: i, nullable: true}
			key.cols = append(key.cols, col)
			value.cols = append(value.cols, col)
		}
	}
	for i, c := range d.Values {
		if err := checkName(c.Name); err != nil {
			return key, value, err
		}
		value.cols = append(value.cols, column{name: c.Name, kind: c.Kind, src: srcValue, idx: i, nullable: true})
	}
	if !d.Stateless {
		value.cols = append(value.cols,
			column{name: "version", kind: row.KindInt, src: srcVersion},
			column{name: "is_final", kind: row.KindBool, src: srcIsFinal},
			column{name: "watermark_at", kind: row.KindTime, src: srcWatermark, nullable: true})
	}
	value.cols = append(value.cols, column{name: "updated_at", kind: row.KindTime, src: srcUpdatedAt})
	for _, l := range []layout{key, value} {
		for _, c := range l.cols {
			switch c.kind {
			case row.KindBool, row.KindInt, row.KindDecimal, row.KindString, row.KindTime:
			default:
				return key, value, fmt.Errorf("column %q is of kind %s, which no Avro or Protobuf type holds", c.name, c.kind)
			}
		}
	}
	return key, value, nil
}

// avroField is a field of an Avro record schema.
type avroField struct {
	Name    string          `json:"name"`
	Type    any             `json:"type"`
	Default json.RawMessage `json:"default,omitempty"`
	Doc     string          `json:"doc,omitempty"`
}

// avroRecord is an Avro record schema.
type avroRecord struct {
	Type      string      `json:"type"`
	Name      string      `json:"name"`
	Namespace string      `json:"namespace,omitempty"`
	Doc       string      `json:"doc,omitempty"`
	Fields    []avroField `json:"fields"`
}

// avroType is the Avro type of a value of kind k.
func avroType(k row.Kind, scale uint8) any {
	switch k {
	case row.KindBool:
		return "boolean"
	case row.KindInt:
		return "long"
	case row.KindDecimal:
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": avro.MaxDecimalPrecision, "scale": int(scale)}
	case row.KindTime:
		return map[string]any{"type": "long", "logicalType": "timestamp-millis"}
	}
	return "string"
}

// nullDefault is the default of a nullable field.
var nullDefault = json.RawMessage("null")

// avroSchema returns l's Avro record schema as JSON text.
func (l *layout) avroSchema(ns, doc string, scale uint8) string {
	rec := avroRecord{Type: "record", Name: l.name, Namespace: ns, Doc: doc}
	for _, c := range l.cols {
		f := avroField{Name: c.name, Type: avroType(c.kind, scale)}
		if c.nullable {
			f.Type = []any{"null", f.Type}
			f.Default = nullDefault
		}
		if c.src == srcWatermark {
			f.Doc = "the watermark when the row was produced; 9223372036854775807 (Long.MAX_VALUE, Flink's final watermark) at the end of the input, null before any watermark"
		}
		rec.Fields = append(rec.Fields, f)
	}
	return mustJSON(rec)
}

// protoType is the Protobuf type of a value of kind k.
func protoType(k row.Kind) string {
	switch k {
	case row.KindBool:
		return "bool"
	case row.KindInt:
		return "int64"
	case row.KindDecimal:
		return "confluent.type.Decimal"
	case row.KindTime:
		return "google.protobuf.Timestamp"
	}
	return "string"
}

// protoMessage writes l as a Protobuf message declaration: field numbers
// 1, 2, … in column order; nullable scalars optional (explicit
// presence), messages (timestamps, decimals) present when not null.
func (l *layout) protoMessage(b *strings.Builder, doc string) {
	if doc != "" {
		fmt.Fprintf(b, "// %s\n", doc)
	}
	fmt.Fprintf(b, "message %s {\n", l.name)
	for i, c := range l.cols {
		t := protoType(c.kind)
		opt := ""
		if c.nullable && c.kind != row.KindDecimal && c.kind != row.KindTime {
			opt = "optional "
		}
		fmt.Fprintf(b, "  %s%s %s = %d;\n", opt, t, c.name, i+1)
	}
	b.WriteString("}\n")
}

// protoFile returns the .proto text of a file holding messages (each
// subject's schema is one file whose first message is the record's).
func protoFile(pkg string, msgs func(b *strings.Builder), kinds ...row.Kind) string {
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n\n")
	fmt.Fprintf(&b, "package %s;\n\n", pkg)
	var ts, dec bool
	for _, k := range kinds {
		ts = ts || k == row.KindTime
		dec = dec || k == row.KindDecimal
	}
	if ts {
		b.WriteString("import \"google/protobuf/timestamp.proto\";\n")
	}
	if dec {
		b.WriteString("import \"confluent/type/decimal.proto\";\n")
	}
	if ts || dec {
		b.WriteString("\n")
	}
	msgs(&b)
	return b.String()
}

// kinds lists the kinds of l's columns.
func (l *layout) kinds() []row.Kind {
	out := make([]row.Kind, len(l.cols))
	for i, c := range l.cols {
		out[i] = c.kind
	}
	return out
}

// protoSchema returns l's .proto file text.
func (l *layout) protoSchema(pkg, doc string) string {
	return protoFile(pkg, func(b *strings.Builder) { l.protoMessage(b, doc) }, l.kinds()...)
}

// fieldError is a value a column cannot be written with.
type fieldError struct {
	col string
	why string
	err error // the cause, when there is one (why is then its text)
}

func (e *fieldError) Error() string { return "column " + e.col + ": " + e.why }

func (e *fieldError) Unwrap() error { return e.err }

// causeError is the fieldError of column c with cause err.
func causeError(c *column, err error) *fieldError {
	return &fieldError{col: c.name, why: err.Error(), err: err}
}

// kindMismatch is the fieldError of a value of another kind.
func kindMismatch(c *column, v row.Value) *fieldError {
	return &fieldError{col: c.name, why: fmt.Sprintf("holds a %s value, the schema's column is %s", v.Kind, c.kind)}
}

// userValue returns the key or aggregate value column c reads (srcKey,
// srcValue).
func (c *column) userValue(r *changelog.Row) *row.Value {
	if c.src == srcKey {
		return &r.Key[c.idx]
	}
	return &r.Values[c.idx]
}

// appendAvro appends r's record of layout l in Avro's binary encoding.
func (l *layout) appendAvro(dst []byte, r *changelog.Row, scale uint8) ([]byte, error) {
	for i := range l.cols {
		c := &l.cols[i]
		switch c.src {
		case srcOp:
			dst = avro.AppendString(dst, r.Op.String())
		case srcWindowStart:
			dst = avro.AppendLong(dst, r.WindowStart)
		case srcWindowEnd:
			dst = avro.AppendLong(dst, r.WindowEnd)
		case srcVersion:
			dst = avro.AppendLong(dst, int64(r.Version))
		case srcIsFinal:
			dst = avro.AppendBool(dst, r.IsFinal)
		case srcWatermark:
			if r.WatermarkAt == changelog.WatermarkNone {
				dst = append(dst, 0) // union branch 0: null
			} else {
				dst = avro.AppendLong(append(dst, 2), r.WatermarkAt) // branch 1 (zig-zag 1)
			}
		case srcUpdatedAt:
			dst = avro.AppendLong(dst, r.UpdatedAt)
		default:
			v := c.userValue(r)
			if v.Kind == row.KindNull {
				dst = append(dst, 0)
				continue
			}
			if v.Kind != c.kind {
				return dst, kindMismatch(c, *v)
			}
			var err error
			if dst, err = appendAvroValue(append(dst, 2), c, v, scale); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// appendAvroValue appends one non-null value of c's kind.
func appendAvroValue(dst []byte, c *column, v *row.Value, scale uint8) ([]byte, error) {
	switch c.kind {
	case row.KindBool:
		return avro.AppendBool(dst, v.I != 0), nil
	case row.KindInt, row.KindTime:
		return avro.AppendLong(dst, v.I), nil
	case row.KindDecimal:
		out, err := avro.AppendDecimal(dst, v.D, scale)
		if err != nil {
			return dst, causeError(c, err)
		}
		return out, nil
	}
	if !utf8.ValidString(v.S) {
		return dst, &fieldError{col: c.name, why: "holds text that is not valid UTF-8"}
	}
	return avro.AppendString(dst, v.S), nil
}

// maxTimestampMs is the largest instant a google.protobuf.Timestamp
// holds at millisecond precision: 9999-12-31T23:59:59.999Z.
const maxTimestampMs = 253402300799_999

// minTimestampMs is the smallest: 0001-01-01T00:00:00Z.
const minTimestampMs = -62135596800_000

// appendProto appends r's message of layout l in Protobuf's binary
// encoding (proto3: fields without presence are left out at their zero
// value; fields in number order).
func (l *layout) appendProto(dst []byte, r *changelog.Row, scale uint8) ([]byte, error) {
	for i := range l.cols {
		c := &l.cols[i]
		num := protowire.Number(i + 1)
		switch c.src {
		case srcOp:
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendString(dst, r.Op.String())
		case srcWindowStart, srcWindowEnd, srcUpdatedAt, srcWatermark:
			ms := r.WindowStart
			switch c.src {
			case srcWindowEnd:
				ms = r.WindowEnd
			case srcUpdatedAt:
				ms = r.UpdatedAt
			case srcWatermark:
				ms = r.WatermarkAt
				if ms == changelog.WatermarkNone {
					continue
				}
				if ms == changelog.WatermarkInfinity {
					ms = maxTimestampMs
				}
			}
			var err error
			if dst, err = appendTimestampField(dst, c, num, ms); err != nil {
				return dst, err
			}
		case srcVersion:
			if r.Version != 0 {
				dst = protowire.AppendTag(dst, num, protowire.VarintType)
				dst = protowire.AppendVarint(dst, r.Version)
			}
		case srcIsFinal:
			if r.IsFinal {
				dst = protowire.AppendTag(dst, num, protowire.VarintType)
				dst = append(dst, 1)
			}
		default:
			v := c.userValue(r)
			if v.Kind == row.KindNull {
				continue // no presence: null
			}
			if v.Kind != c.kind {
				return dst, kindMismatch(c, *v)
			}
			var err error
			if dst, err = appendProtoValue(dst, c, num, v, scale); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// appendProtoValue appends field num holding one non-null value of c's
// kind (scalars with explicit presence: written even when zero).
func appendProtoValue(dst []byte, c *column, num protowire.Number, v *row.Value, scale uint8) ([]byte, error) {
	switch c.kind {
	case row.KindBool, row.KindInt:
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, uint64(v.I)), nil
	case row.KindString:
		if !utf8.ValidString(v.S) {
			return dst, &fieldError{col: c.name, why: "holds text that is not valid UTF-8"}
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		return protowire.AppendString(dst, v.S), nil
	case row.KindTime:
		return appendTimestampField(dst, c, num, v.I)
	}
	var tmp [17]byte
	b, err := avro.DecimalBytes(tmp[:0], v.D, scale)
	if err != nil {
		return dst, causeError(c, err)
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return appendProtoDecimal(dst, b, scale), nil
}

// appendTimestampField appends field num as a google.protobuf.Timestamp
// of ms. Errors: ms outside the years 1 to 9999.
func appendTimestampField(dst []byte, c *column, num protowire.Number, ms int64) ([]byte, error) {
	if ms > maxTimestampMs || ms < minTimestampMs {
		return dst, &fieldError{col: c.name, why: fmt.Sprintf("%d ms is outside the years 1 to 9999 a google.protobuf.Timestamp holds", ms)}
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return appendTimestamp(dst, ms), nil
}

// appendTimestamp appends a google.protobuf.Timestamp of ms as a
// length-prefixed message: seconds (1) and nanos (2), each left out when
// zero; nanos are never negative.
func appendTimestamp(dst []byte, ms int64) []byte {
	sec := ms / 1000
	nanos := (ms % 1000) * 1_000_000
	if nanos < 0 {
		sec--
		nanos += 1_000_000_000
	}
	n := 0
	if sec != 0 {
		n += 1 + protowire.SizeVarint(uint64(sec))
	}
	if nanos != 0 {
		n += 1 + protowire.SizeVarint(uint64(nanos))
	}
	dst = protowire.AppendVarint(dst, uint64(n))
	if sec != 0 {
		dst = protowire.AppendTag(dst, 1, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(sec))
	}
	if nanos != 0 {
		dst = protowire.AppendTag(dst, 2, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(nanos))
	}
	return dst
}

// appendProtoDecimal appends a confluent.type.Decimal as a length-prefixed
// message: value (1, the unscaled two's-complement bytes), precision (2,
// 38) and scale (3, left out when 0).
func appendProtoDecimal(dst, unscaled []byte, scale uint8) []byte {
	n := 1 + protowire.SizeBytes(len(unscaled)) + 1 + protowire.SizeVarint(avro.MaxDecimalPrecision)
	if scale != 0 {
		n += 1 + protowire.SizeVarint(uint64(scale))
	}
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendBytes(dst, unscaled)
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, avro.MaxDecimalPrecision)
	if scale != 0 {
		dst = protowire.AppendTag(dst, 3, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(scale))
	}
	return dst
}

// describeRow names a row in errors: its window start in UTC, its key
// values and its version.
func describeRow(d *changelog.Desc, r *changelog.Row) string {
	var b strings.Builder
	if d.Stateless {
		b.WriteString("row with event_time ")
	} else {
		b.WriteString("row of window_start ")
	}
	tf := row.NewTimeFormatter(time.UTC)
	b.Write(tf.Append(nil, r.WindowStart))
	for i, c := range d.Key {
		if i < len(r.Key) {
			fmt.Fprintf(&b, ", %s=%s", c.Name, r.Key[i])
		}
	}
	if !d.Stateless {
		b.WriteString(", version ")
		b.WriteString(strconv.FormatUint(r.Version, 10))
	}
	return b.String()
}
