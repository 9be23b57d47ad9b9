package row

import (
	"strconv"
	"strings"
	"time"
)

// Value is one boxed value of any kind. The zero Value is null.
//
// Value is for results and keys, not the per-record path: a plan reads and
// writes [Row] slots directly.
type Value struct {
	Kind Kind    // KindNull for null
	I    int64   // KindBool (0/1), KindInt, KindTime (ms since epoch)
	D    Decimal // KindDecimal
	S    string  // KindString
}

// Null is the null value.
var Null = Value{}

// Bool returns a bool value.
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, I: 1}
	}
	return Value{Kind: KindBool}
}

// Int returns an int value.
func Int(i int64) Value { return Value{Kind: KindInt, I: i} }

// Dec returns a decimal value.
func Dec(d Decimal) Value { return Value{Kind: KindDecimal, D: d} }

// Str returns a string value.
func Str(s string) Value { return Value{Kind: KindString, S: s} }

// Time returns a timestamp value from ms since the Unix epoch.
func Time(ms int64) Value { return Value{Kind: KindTime, I: ms} }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.Kind == KindNull }

// Equal reports whether v and w have the same kind and value. Decimals
// compare by numeric value (2.0 equals 2.00).
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind {
		return false
	}
	switch v.Kind {
	case KindNull:
		return true
	case KindDecimal:
		return v.D.Equal(w.D)
	case KindString:
		return v.S == w.S
	default:
		return v.I == w.I
	}
}

// Compare orders values of the same kind: -1, 0 or +1. Null sorts before
// every non-null value; values of different kinds order by kind.
func (v Value) Compare(w Value) int {
	if v.Kind != w.Kind {
		if v.Kind < w.Kind {
			return -1
		}
		return 1
	}
	switch v.Kind {
	case KindNull:
		return 0
	case KindDecimal:
		return v.D.Cmp(w.D)
	case KindString:
		return strings.Compare(v.S, w.S)
	default:
		switch {
		case v.I < w.I:
			return -1
		case v.I > w.I:
			return 1
		}
		return 0
	}
}

// AppendText appends v as plain text: decimals with their scale, times in
// RFC 3339 with milliseconds in loc (UTC when nil), null as "null".
func (v Value) AppendText(dst []byte, loc *time.Location) []byte {
	switch v.Kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		return strconv.AppendBool(dst, v.I != 0)
	case KindInt:
		return strconv.AppendInt(dst, v.I, 10)
	case KindDecimal:
		return FormatDecimal(dst, v.D)
	case KindString:
		return append(dst, v.S...)
	case KindTime:
		return AppendTime(dst, v.I, loc)
	}
	return dst
}

// String returns v as text (see AppendText), times in UTC.
func (v Value) String() string { return string(v.AppendText(nil, nil)) }

// AppendTime appends the instant ms (since the Unix epoch) in RFC 3339 with
// its UTC offset, in loc (UTC when nil). Milliseconds are written only when
// not zero: "2026-09-01T10:00:00+09:00", "2026-09-01T10:00:00.250+09:00".
// An offset with seconds (local mean time, before zones adopted standard
// offsets) cannot be written in RFC 3339: such instants are written in UTC.
func AppendTime(dst []byte, ms int64, loc *time.Location) []byte {
	if loc == nil {
		loc = time.UTC
	}
	t := time.UnixMilli(ms).In(loc)
	if _, off := t.Zone(); off%60 != 0 {
		t = t.UTC()
	}
	if ms%1000 == 0 {
		return t.AppendFormat(dst, time.RFC3339)
	}
	return t.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
}

// FormatTime returns AppendTime as a string.
func FormatTime(ms int64, loc *time.Location) string { return string(AppendTime(nil, ms, loc)) }
