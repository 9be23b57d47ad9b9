package pgcdc

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// PostgreSQL's built-in type OIDs (pg_type.dat) that a field of another
// kind than string can read.
const (
	oidBool        = 16
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidNumeric     = 1700
)

// typeName names a built-in type for messages, else its OID.
func typeName(oid uint32) string {
	switch oid {
	case oidBool:
		return "boolean"
	case oidInt8:
		return "bigint"
	case oidInt2:
		return "smallint"
	case oidInt4:
		return "integer"
	case oidOID:
		return "oid"
	case oidFloat4:
		return "real"
	case oidFloat8:
		return "double precision"
	case oidDate:
		return "date"
	case oidTimestamp:
		return "timestamp without time zone"
	case oidTimestampTZ:
		return "timestamp with time zone"
	case oidNumeric:
		return "numeric"
	}
	return "type " + strconv.FormatUint(uint64(oid), 10)
}

// conv is how a column's text becomes a field's value.
type conv uint8

const (
	convString  conv = iota // the text as it is (any type)
	convNumber              // int or decimal field from an integer, numeric or float column
	convBool                // 't' / 'f'
	convTimeTZ              // timestamptz text with its offset
	convTimeLoc             // timestamp or date text in Config.Timezone
)

// convFor returns how a column of (base) type oid fills a field of kind
// k, or an error saying what to declare instead. loc is Config.Timezone.
func convFor(col string, oid uint32, k row.Kind, loc *time.Location) (conv, error) {
	switch k {
	case row.KindString:
		return convString, nil
	case row.KindInt:
		switch oid {
		case oidInt2, oidInt4, oidInt8, oidOID, oidNumeric:
			return convNumber, nil
		}
	case row.KindDecimal:
		switch oid {
		case oidInt2, oidInt4, oidInt8, oidOID, oidNumeric, oidFloat4, oidFloat8:
			return convNumber, nil
		}
	case row.KindBool:
		if oid == oidBool {
			return convBool, nil
		}
	case row.KindTime:
		switch oid {
		case oidTimestampTZ:
			return convTimeTZ, nil
		case oidTimestamp, oidDate:
			if loc == nil {
				return 0, fmt.Errorf("column %s is %s, which names no instant by itself: set source.timezone to the zone its values are in (or make it timestamptz)", col, typeName(oid))
			}
			return convTimeLoc, nil
		}
	}
	return 0, fmt.Errorf("column %s is %s, which cannot be read as %s: declare the field %s in source.schema as %s", col, typeName(oid), k, col, kindsFor(oid))
}

// kindsFor lists the field kinds a column of type oid can be read as.
func kindsFor(oid uint32) string {
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidOID:
		return "int, decimal or string"
	case oidNumeric:
		return "decimal, int (whole values) or string"
	case oidFloat4, oidFloat8:
		return "decimal or string"
	case oidBool:
		return "bool or string"
	case oidTimestampTZ, oidTimestamp, oidDate:
		return "timestamp or string"
	}
	return "string"
}

// fieldConv is one decoded field: its slot and conversion.
type fieldConv struct {
	f    row.Field
	conv conv
	num  *format.TextField // convNumber
	loc  *time.Location    // convTimeLoc
	oid  uint32            // the column's base type
}

// set stores the text b into r's field, strings copied into a. Errors
// name the field: "type" (not a value of its kind), "timestamp" (not a
// timestamp PostgreSQL writes, or infinity), "encoding" (NUL or invalid
// UTF-8).
func (c *fieldConv) set(b []byte, r *row.Row, a *source.Arena) *source.DecodeError {
	f := &c.f
	switch c.conv {
	case convString:
		if !format.Text(b) {
			return format.TextError(f.Name, b, 0)
		}
		r.S[f.Slot] = a.String(b)
	case convNumber:
		return c.num.Set(b, typeName(c.oid), r)
	case convBool:
		switch {
		case len(b) == 1 && b[0] == 't':
			r.I[f.Slot] = 1
		case len(b) == 1 && b[0] == 'f':
			r.I[f.Slot] = 0
		default:
			return &source.DecodeError{Field: f.Name, Rule: "type", Reason: "want bool, got " + strconv.Quote(string(b))}
		}
	case convTimeTZ, convTimeLoc:
		ms, err := parseTimestamp(b, c.loc)
		if err != "" {
			return &source.DecodeError{Field: f.Name, Rule: "timestamp", Reason: strconv.Quote(string(b)) + ": " + err}
		}
		r.I[f.Slot] = ms
	}
	r.SetValid(f.Index)
	return nil
}

// parseTimestamp reads the text PostgreSQL writes for timestamptz (with
// DateStyle ISO: "2026-09-01 10:05:00.123456+00", the offset "+HH",
// "+HH:MM" or "+HH:MM:SS"), timestamp and date ("2026-09-01"), into ms
// since the epoch, the fraction below a millisecond dropped toward the
// past. Text without an offset is read in loc (nil: refused); a local
// time that a DST change skipped or repeated takes Go's time.Date
// reading. It returns a reason for infinity, BC dates and anything else.
func parseTimestamp(b []byte, loc *time.Location) (int64, string) {
	s := string(b) // short: on the stack
	if len(s) > 3 && s[len(s)-3:] == " BC" {
		return 0, "a BC date is out of range"
	}
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		if s == "infinity" || s == "-infinity" {
			return 0, "infinity is not an instant"
		}
		return 0, "not a PostgreSQL timestamp"
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return 0, "not a PostgreSQL timestamp"
	}
	i := 10
	var h, mi, sec, nano int
	if i < len(s) && s[i] == ' ' {
		if len(s) < i+9 || s[i+3] != ':' || s[i+6] != ':' {
			return 0, "not a PostgreSQL timestamp"
		}
		var ok4, ok5, ok6 bool
		h, ok4 = digits(s[i+1 : i+3])
		mi, ok5 = digits(s[i+4 : i+6])
		sec, ok6 = digits(s[i+7 : i+9])
		if !ok4 || !ok5 || !ok6 || h > 24 || mi > 59 || sec > 60 {
			return 0, "not a PostgreSQL timestamp"
		}
		i += 9
		if i < len(s) && s[i] == '.' {
			j := i + 1
			scale := 100_000_000
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				nano += int(s[j]-'0') * scale
				scale /= 10
				j++
			}
			if j == i+1 || j > i+10 {
				return 0, "not a PostgreSQL timestamp"
			}
			i = j
		}
	}
	off, hasOff := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		sign := 1
		if s[i] == '-' {
			sign = -1
		}
		rest := s[i+1:]
		parts := [3]int{}
		n := 0
		for n < 3 {
			if len(rest) < 2 {
				return 0, "not a PostgreSQL timestamp"
			}
			v, ok := digits(rest[:2])
			if !ok {
				return 0, "not a PostgreSQL timestamp"
			}
			parts[n] = v
			n++
			rest = rest[2:]
			if len(rest) == 0 {
				break
			}
			if rest[0] != ':' {
				return 0, "not a PostgreSQL timestamp"
			}
			rest = rest[1:]
		}
		if len(rest) > 0 {
			return 0, "not a PostgreSQL timestamp"
		}
		off = sign * (parts[0]*3600 + parts[1]*60 + parts[2])
		hasOff = true
		i = len(s)
	}
	if i != len(s) {
		return 0, "not a PostgreSQL timestamp"
	}
	var t time.Time
	switch {
	case hasOff:
		t = time.Date(y, time.Month(mo), d, h, mi, sec, nano, time.UTC).Add(-time.Duration(off) * time.Second)
	case loc != nil:
		t = time.Date(y, time.Month(mo), d, h, mi, sec, nano, loc)
	default:
		return 0, "no UTC offset (set source.timezone for timestamp and date columns)"
	}
	return t.UnixMilli(), "" // floors: t's nanoseconds are never negative
}

// digits parses a short run of ASCII digits.
func digits(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, len(s) > 0
}
