package changelog

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/tidemark/tidemark/row"
)

// This file is the JSON form of a stage's outputs: one object per result
// row or side-output record, written by the jsonl and stdout sinks and read
// back by DecodeRowJSON. The Append functions allocate nothing when dst has
// room (decimals whose coefficient exceeds 128 bits excepted).

// AppendRowJSON appends one result row as a JSON object with keys in this
// order: "op", "window_start", "window_end", the key columns (d.Key), the
// value columns (d.Values), "version", "is_final", "watermark_at",
// "updated_at".
//
//   - Times are strings in RFC 3339 with the UTC offset of loc (UTC when
//     nil), with milliseconds only when not zero (row.AppendTime).
//   - Decimals are JSON numbers written with their exact literal and scale:
//     20.00, never 20 or 2e1. (udecimal keeps no scale for zero: a zero is 0.)
//   - Ints are JSON numbers, bools true/false, strings JSON strings (invalid
//     UTF-8 replaced by U+FFFD), null values null.
//   - watermark_at is the string "infinity" for WatermarkInfinity, null for
//     WatermarkNone, else a time.
//
// Values are written by their own kind. r.Key and r.Values must hold
// len(d.Key) and len(d.Values) values; AppendRowJSON panics otherwise. The
// object has no newline in it and none after it.
func AppendRowJSON(dst []byte, r *Row, d *Desc, loc *time.Location) []byte {
	tf := row.NewTimeFormatter(loc)
	return appendRow(dst, r, d, &tf)
}

// Encoder renders result rows and side-output records as JSON in one zone.
// It is AppendRowJSON, AppendLateJSON and AppendQuarantineJSON with a
// reusable time formatter (row.TimeFormatter), which makes the four or
// five timestamps of a row several times cheaper. Not safe for concurrent
// use.
type Encoder struct{ tf row.TimeFormatter }

// NewEncoder returns an encoder rendering times in loc (UTC when nil).
func NewEncoder(loc *time.Location) *Encoder { return &Encoder{tf: row.NewTimeFormatter(loc)} }

// Row is AppendRowJSON.
func (e *Encoder) Row(dst []byte, r *Row, d *Desc) []byte { return appendRow(dst, r, d, &e.tf) }

// Late is AppendLateJSON.
func (e *Encoder) Late(dst []byte, l *LateRecord) []byte { return appendLate(dst, l, &e.tf) }

// Conflict appends a conflict record as a JSON object:
//
//	{"event_id":…,"first_payload_hash":"9f0c…","first_payload":{…}|null,
//	 "new_payload_hash":"…","new_payload":{…},"event_time":…,"observed_at":…,
//	 "source":"file:line"}
//
// Hashes are 8 hex digits (the 32-bit canonical payload hash); payloads
// are embedded as JSON objects (or strings when not valid JSON).
func (e *Encoder) Conflict(dst []byte, c *ConflictRecord) []byte {
	dst = append(dst, `{"event_id":`...)
	dst = appendString(dst, c.EventID)
	dst = append(dst, `,"first_payload_hash":`...)
	dst = appendHash(dst, c.FirstPayloadHash)
	dst = append(dst, `,"first_payload":`...)
	dst = appendEmbedded(dst, c.FirstPayload)
	dst = append(dst, `,"new_payload_hash":`...)
	dst = appendHash(dst, c.NewPayloadHash)
	dst = append(dst, `,"new_payload":`...)
	dst = appendEmbedded(dst, c.NewPayload)
	dst = append(dst, `,"event_time":`...)
	dst = appendTime(dst, c.EventTime, &e.tf)
	dst = append(dst, `,"observed_at":`...)
	dst = appendTime(dst, c.ObservedAt, &e.tf)
	dst = append(dst, `,"source":`...)
	dst = appendPositionString(dst, c.Position)
	return append(dst, '}')
}

func appendHash(dst []byte, h uint32) []byte {
	dst = append(dst, '"')
	for i := 28; i >= 0; i -= 4 {
		dst = append(dst, hexDigits[(h>>uint(i))&0xf])
	}
	return append(dst, '"')
}

// appendEmbedded appends a JSON object as is (newlines made spaces), null
// when empty, or a JSON string when it is not valid JSON.
func appendEmbedded(dst, obj []byte) []byte {
	switch {
	case len(obj) == 0:
		return append(dst, "null"...)
	case json.Valid(obj) && utf8.Valid(obj):
		for _, c := range obj {
			if c == '\n' || c == '\r' {
				c = ' '
			}
			dst = append(dst, c)
		}
		return dst
	}
	return appendString(dst, bytesToString(obj))
}

// Quarantine is AppendQuarantineJSON.
func (e *Encoder) Quarantine(dst []byte, q *QuarantineRecord) []byte {
	return AppendQuarantineJSON(dst, q, e.tf.Location())
}

func appendRow(dst []byte, r *Row, d *Desc, tf *row.TimeFormatter) []byte {
	if d.Stateless {
		dst = append(dst, `{"op":"`...)
		dst = append(dst, r.Op.String()...)
		dst = append(dst, `","event_time":`...)
		dst = appendTime(dst, r.WindowStart, tf)
		for i := range d.Values {
			dst = appendColumn(dst, d.Values[i].Name, r.Values[i], tf)
		}
		dst = append(dst, `,"updated_at":`...)
		dst = appendTime(dst, r.UpdatedAt, tf)
		return append(dst, '}')
	}
	dst = append(dst, `{"op":"`...)
	dst = append(dst, r.Op.String()...)
	dst = append(dst, `","window_start":`...)
	dst = appendTime(dst, r.WindowStart, tf)
	dst = append(dst, `,"window_end":`...)
	dst = appendTime(dst, r.WindowEnd, tf)
	for i := range d.Key {
		dst = appendColumn(dst, d.Key[i].Name, r.Key[i], tf)
	}
	for i := range d.Values {
		dst = appendColumn(dst, d.Values[i].Name, r.Values[i], tf)
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendUint(dst, r.Version, 10)
	dst = append(dst, `,"is_final":`...)
	dst = strconv.AppendBool(dst, r.IsFinal)
	dst = append(dst, `,"watermark_at":`...)
	dst = appendWatermark(dst, r.WatermarkAt, tf)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime(dst, r.UpdatedAt, tf)
	return append(dst, '}')
}

// AppendLateJSON appends a late record as a JSON object:
//
//	{"stage":…,"event":{…},"event_time":…,"observed_at":…,
//	 "current_watermark":…,"lateness_ms":…,"reason":…,"source":"file:line"}
//
// "event" is l.Event embedded as is (raw newlines, which valid JSON holds
// only as whitespace, become spaces so the object stays on one line). When
// l.Event is empty it is null; when it is not valid JSON it is written as a
// JSON string instead, so the record is never lost or malformed. Times are
// RFC 3339 in loc; current_watermark follows watermark_at's rules; "source"
// is l.Position.String().
func AppendLateJSON(dst []byte, l *LateRecord, loc *time.Location) []byte {
	tf := row.NewTimeFormatter(loc)
	return appendLate(dst, l, &tf)
}

func appendLate(dst []byte, l *LateRecord, tf *row.TimeFormatter) []byte {
	dst = append(dst, `{"stage":`...)
	dst = appendString(dst, l.Stage)
	dst = append(dst, `,"event":`...)
	dst = appendEmbedded(dst, l.Event)
	dst = append(dst, `,"event_time":`...)
	dst = appendTime(dst, l.EventTime, tf)
	dst = append(dst, `,"observed_at":`...)
	dst = appendTime(dst, l.ObservedAt, tf)
	dst = append(dst, `,"current_watermark":`...)
	dst = appendWatermark(dst, l.CurrentWatermark, tf)
	dst = append(dst, `,"lateness_ms":`...)
	dst = strconv.AppendInt(dst, l.LatenessMs, 10)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, l.Reason)
	dst = append(dst, `,"source":`...)
	dst = appendPositionString(dst, l.Position)
	return append(dst, '}')
}

// AppendQuarantineJSON appends a quarantine record as a JSON object:
//
//	{"stage":…,"raw":"<original bytes>","reason":…,"field":…,"rule":…,
//	 "source":{"file":…,"partition":…,"line":…,"offset":…}}
//
// "raw" is q.Raw as a JSON string, invalid UTF-8 replaced by U+FFFD; when
// q.Raw is not valid UTF-8 (a binary Avro or Protobuf value, a line with
// bad bytes), "raw_base64" follows it with the original bytes in standard
// base64 (RFC 4648 §4), so that they can always be recovered.
// "field" is null when q.Field is empty. "source" names "topic" instead of
// "file" for a log position (Line 0 and a partition); its "partition" is
// null when empty and "line" null when 0. loc is unused today and kept so
// the three Append functions share a shape.
func AppendQuarantineJSON(dst []byte, q *QuarantineRecord, loc *time.Location) []byte {
	_ = loc
	dst = append(dst, `{"stage":`...)
	dst = appendString(dst, q.Stage)
	dst = append(dst, `,"raw":`...)
	dst = appendString(dst, bytesToString(q.Raw))
	if !utf8.Valid(q.Raw) {
		dst = append(dst, `,"raw_base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, q.Raw)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, q.Reason)
	dst = append(dst, `,"field":`...)
	if q.Field == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, q.Field)
	}
	dst = append(dst, `,"rule":`...)
	dst = appendString(dst, q.Rule)
	p := q.Position
	if p.Line == 0 && p.Partition != "" {
		dst = append(dst, `,"source":{"topic":`...)
	} else {
		dst = append(dst, `,"source":{"file":`...)
	}
	dst = appendString(dst, p.Source)
	dst = append(dst, `,"partition":`...)
	if p.Partition == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, p.Partition)
	}
	dst = append(dst, `,"line":`...)
	if p.Line == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, p.Line, 10)
	}
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, p.Offset, 10)
	return append(dst, "}}"...)
}

// ErrRowJSON is wrapped by every error DecodeRowJSON returns.
var ErrRowJSON = errors.New("bad result row JSON")

var rowParsers fastjson.ParserPool

// DecodeRowJSON parses one object written by AppendRowJSON for the same
// Desc back into a Row. Keys may come in any order, but every key
// AppendRowJSON writes must be present exactly once and no other key may
// be; values must have the JSON type of their column's kind (decimals as
// numbers, parsed exactly with their scale; times as RFC 3339 strings; any
// column may be null). The Row's Key, Values and strings are newly
// allocated and owned by the caller.
//
// Errors wrap ErrRowJSON and name the offending key.
func DecodeRowJSON(line []byte, d *Desc) (Row, error) {
	p := rowParsers.Get()
	defer rowParsers.Put(p)
	v, err := p.ParseBytes(line)
	if err != nil {
		return Row{}, fmt.Errorf("%w: %v", ErrRowJSON, err)
	}
	obj, err := v.Object()
	if err != nil {
		return Row{}, fmt.Errorf("%w: not an object", ErrRowJSON)
	}
	r := Row{Key: make([]row.Value, len(d.Key)), Values: make([]row.Value, len(d.Values))}
	const nFixed = 7 // op, window_start, window_end, version, is_final, watermark_at, updated_at
	seen := make([]bool, nFixed+len(d.Key)+len(d.Values))
	var first error
	obj.Visit(func(k []byte, v *fastjson.Value) {
		if first != nil {
			return
		}
		key := string(k)
		slot, err := decodeField(&r, d, key, v)
		switch {
		case err != nil:
			first = fmt.Errorf("%w: %q: %v", ErrRowJSON, key, err)
		case slot < 0:
			first = fmt.Errorf("%w: unknown key %q", ErrRowJSON, key)
		case seen[slot]:
			first = fmt.Errorf("%w: key %q appears twice", ErrRowJSON, key)
		default:
			seen[slot] = true
		}
	})
	if first != nil {
		return Row{}, first
	}
	for i, ok := range seen {
		if !ok {
			return Row{}, fmt.Errorf("%w: missing key %q", ErrRowJSON, slotName(d, i))
		}
	}
	return r, nil
}

// rowKeys are the fixed keys of a row object, in slot order.
var rowKeys = [...]string{"op", "window_start", "window_end", "version", "is_final", "watermark_at", "updated_at"}

func slotName(d *Desc, i int) string {
	if i < len(rowKeys) {
		return rowKeys[i]
	}
	i -= len(rowKeys)
	if i < len(d.Key) {
		return d.Key[i].Name
	}
	return d.Values[i-len(d.Key)].Name
}

// decodeField stores the value of key into r and returns the key's slot
// (see slotName), or -1 for an unknown key.
func decodeField(r *Row, d *Desc, key string, v *fastjson.Value) (int, error) {
	var err error
	switch key {
	case "op":
		var s []byte
		if s, err = v.StringBytes(); err == nil {
			r.Op, err = ParseOp(string(s))
		}
		return 0, err
	case "window_start":
		r.WindowStart, err = decodeTime(v)
		return 1, err
	case "window_end":
		r.WindowEnd, err = decodeTime(v)
		return 2, err
	case "version":
		r.Version, err = strconv.ParseUint(numberText(v), 10, 64)
		return 3, err
	case "is_final":
		r.IsFinal, err = v.Bool()
		return 4, err
	case "watermark_at":
		switch {
		case v.Type() == fastjson.TypeNull:
			r.WatermarkAt = WatermarkNone
		case v.Type() == fastjson.TypeString && string(v.GetStringBytes()) == "infinity":
			r.WatermarkAt = WatermarkInfinity
		default:
			r.WatermarkAt, err = decodeTime(v)
		}
		return 5, err
	case "updated_at":
		r.UpdatedAt, err = decodeTime(v)
		return 6, err
	}
	for i, c := range d.Key {
		if c.Name == key {
			r.Key[i], err = decodeValue(v, c.Kind)
			return len(rowKeys) + i, err
		}
	}
	for i, c := range d.Values {
		if c.Name == key {
			r.Values[i], err = decodeValue(v, c.Kind)
			return len(rowKeys) + len(d.Key) + i, err
		}
	}
	return -1, nil
}

// numberText returns the literal text of a JSON number, or "" (which every
// number parser rejects) for any other value.
func numberText(v *fastjson.Value) string {
	if v.Type() != fastjson.TypeNumber {
		return ""
	}
	return string(v.MarshalTo(nil))
}

func decodeTime(v *fastjson.Value) (int64, error) {
	s, err := v.StringBytes()
	if err != nil {
		return 0, err
	}
	t, err := time.Parse(time.RFC3339, string(s))
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

func decodeValue(v *fastjson.Value, k row.Kind) (row.Value, error) {
	if v.Type() == fastjson.TypeNull {
		return row.Null, nil
	}
	switch k {
	case row.KindBool:
		b, err := v.Bool()
		return row.Bool(b), err
	case row.KindInt:
		i, err := strconv.ParseInt(numberText(v), 10, 64)
		return row.Int(i), err
	case row.KindDecimal:
		if v.Type() != fastjson.TypeNumber {
			return row.Null, fmt.Errorf("want a number, got %s", v.Type())
		}
		dec, err := row.ParseDecimal(v.MarshalTo(nil))
		return row.Dec(dec), err
	case row.KindString:
		s, err := v.StringBytes()
		return row.Str(string(s)), err
	case row.KindTime:
		ms, err := decodeTime(v)
		return row.Time(ms), err
	}
	return row.Null, fmt.Errorf("column of kind %s", k)
}

// appendColumn appends `,"name":value`.
func appendColumn(dst []byte, name string, v row.Value, tf *row.TimeFormatter) []byte {
	dst = append(dst, ',')
	dst = appendString(dst, name)
	dst = append(dst, ':')
	return appendValue(dst, v, tf)
}

// Value appends v as a JSON value of its own kind, as in a row: numbers
// bare, strings and times quoted (times in the encoder's zone), null.
func (e *Encoder) Value(dst []byte, v row.Value) []byte { return appendValue(dst, v, &e.tf) }

// Time appends ms as a quoted RFC 3339 time in the encoder's zone.
func (e *Encoder) Time(dst []byte, ms int64) []byte { return appendTime(dst, ms, &e.tf) }

// appendValue appends v as a JSON value of its own kind.
func appendValue(dst []byte, v row.Value, tf *row.TimeFormatter) []byte {
	switch v.Kind {
	case row.KindBool:
		return strconv.AppendBool(dst, v.I != 0)
	case row.KindInt:
		return strconv.AppendInt(dst, v.I, 10)
	case row.KindDecimal:
		return appendDecimal(dst, v.D)
	case row.KindString:
		return appendString(dst, v.S)
	case row.KindTime:
		return appendTime(dst, v.I, tf)
	}
	return append(dst, "null"...)
}

// appendTime appends ms as a quoted RFC 3339 time in loc. The time text
// never needs escaping.
func appendTime(dst []byte, ms int64, tf *row.TimeFormatter) []byte {
	dst = append(dst, '"')
	dst = tf.Append(dst, ms)
	return append(dst, '"')
}

// appendWatermark appends a watermark: "infinity", null or a time.
func appendWatermark(dst []byte, wm int64, tf *row.TimeFormatter) []byte {
	switch wm {
	case WatermarkInfinity:
		return append(dst, `"infinity"`...)
	case WatermarkNone:
		return append(dst, "null"...)
	}
	return appendTime(dst, wm, tf)
}

// appendPositionString appends p.String() as a JSON string without
// building the string.
func appendPositionString(dst []byte, p Position) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, p.Source)
	switch {
	case p.Line > 0:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, p.Line, 10)
	case p.Partition != "":
		dst = append(dst, '[')
		dst = appendEscaped(dst, p.Partition)
		dst = append(dst, ']', '@')
		dst = strconv.AppendInt(dst, p.Offset, 10)
	default:
		dst = append(dst, '@')
		dst = strconv.AppendInt(dst, p.Offset, 10)
	}
	return append(dst, '"')
}

// appendDecimal appends d like row.FormatDecimal (plain notation, exactly
// its scale of digits after the point) without allocating, except for a
// coefficient wider than 128 bits.
func appendDecimal(dst []byte, d row.Decimal) []byte {
	neg, hi, lo, scale, ok := d.ToHiLo()
	if !ok {
		return row.FormatDecimal(dst, d)
	}
	zero := hi == 0 && lo == 0
	// Digits of the 128-bit coefficient, right to left: 19-digit chunks
	// while the high word is set, then the low word.
	var buf [40]byte
	i := len(buf)
	for hi != 0 {
		var r uint64
		qhi := hi / 1e19
		lo, r = bits.Div64(hi%1e19, lo, 1e19)
		hi = qhi
		for j := 0; j < 19; j++ {
			i--
			buf[i] = byte('0' + r%10)
			r /= 10
		}
	}
	for lo >= 10 {
		i--
		buf[i] = byte('0' + lo%10)
		lo /= 10
	}
	i--
	buf[i] = byte('0' + lo)
	digits := buf[i:]
	if neg && !zero {
		dst = append(dst, '-')
	}
	n, s := len(digits), int(scale)
	switch {
	case s == 0:
		return append(dst, digits...)
	case n > s:
		dst = append(dst, digits[:n-s]...)
		dst = append(dst, '.')
		return append(dst, digits[n-s:]...)
	default:
		dst = append(dst, '0', '.')
		for ; n < s; n++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Control characters, '"' and
// '\\' are escaped, as are U+2028 and U+2029 (so the text is also valid
// JavaScript); invalid UTF-8 bytes become \ufffd. It allocates nothing.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }

func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends the inside of appendString's JSON string.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// bytesToString views b as a string without copying; the string must not
// outlive b's contents.
func bytesToString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
