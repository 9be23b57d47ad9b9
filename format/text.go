package format

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/quagmt/udecimal"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// setText stores the text b into field p of r for every kind except
// string, which callers store themselves (JSON copies into its arena, CSV
// keeps the record's string). jsonType is the JSON type the text came from
// ("string", "number") for error messages, "" for CSV text. On error the
// field stays null.
func setText(p *plan, b []byte, jsonType string, r *row.Row) *source.DecodeError {
	f := &p.f
	switch f.Kind {
	case row.KindInt:
		v, why := parseInt(b)
		if why != "" {
			return typeError(p, jsonType, b, why)
		}
		r.I[f.Slot] = v
	case row.KindDecimal:
		d, err := parseDecimal(b)
		if err != nil {
			why := ""
			if !errors.Is(err, row.ErrDecimalSyntax) {
				why = err.Error()
			}
			return typeError(p, jsonType, b, why)
		}
		r.D[f.Slot] = d
	case row.KindBool:
		v, ok := parseBool(b)
		if !ok {
			return typeError(p, jsonType, b, "")
		}
		r.I[f.Slot] = v
	case row.KindTime:
		ms, err := p.parser.ParseWith(b, &p.dates)
		if err != nil {
			return &source.DecodeError{Field: f.Name, Rule: "timestamp", Reason: err.Error()}
		}
		r.I[f.Slot] = ms
	default:
		return typeError(p, jsonType, b, "")
	}
	r.SetValid(f.Index)
	return nil
}

// parseDecimal is row.ParseDecimal, with a fast path for the common
// literal (smallDecimal).
func parseDecimal(b []byte) (row.Decimal, error) {
	if d, ok := smallDecimal(b); ok {
		return d, nil
	}
	return row.ParseDecimal(b)
}

// smallDecimal reads a literal of at most 18 digits, an optional leading
// minus and an optional point between digits ("141.09", "-5000") straight
// into a 64-bit coefficient, and returns the Decimal row.ParseDecimal
// returns for it (FuzzSmallDecimal), 3–4 times faster. Anything else,
// zero included, reports false.
func smallDecimal(b []byte) (row.Decimal, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	if len(b)-i > 19 {
		return row.Decimal{}, false
	}
	var coef uint64
	digits, prec := 0, -1
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			coef = coef*10 + uint64(c-'0')
			digits++
			if prec >= 0 {
				prec++
			}
		case c == '.' && prec < 0 && digits > 0:
			prec = 0
		default:
			return row.Decimal{}, false
		}
	}
	if digits == 0 || digits > 18 || prec == 0 || coef == 0 {
		return row.Decimal{}, false
	}
	d, err := udecimal.NewFromHiLo(neg, 0, coef, uint8(max(prec, 0)))
	return d, err == nil
}

// parseInt parses a base-10 integer. A number with a zero fraction or an
// exponent ("2.0", "1e3") is accepted when its value is a whole number in
// int64 range. On failure it returns a non-empty reason ("not an integer"
// when nothing more specific applies).
func parseInt(b []byte) (int64, string) {
	v, err := strconv.ParseInt(view(b), 10, 64)
	if err == nil {
		return v, ""
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, "out of int64 range"
	}
	if !hasFractionOrExponent(b) {
		return 0, "not an integer"
	}
	d, derr := row.ParseDecimal(b)
	if derr != nil {
		return 0, "not an integer"
	}
	if !d.Trunc(0).Equal(d) {
		return 0, "has a fraction"
	}
	v, err = d.Int64()
	if err != nil {
		return 0, "out of int64 range"
	}
	return v, ""
}

func hasFractionOrExponent(b []byte) bool {
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

// parseBool accepts "true" and "false" in any letter case, as 1 and 0.
func parseBool(b []byte) (int64, bool) {
	switch len(b) {
	case 4:
		if lower(b[0]) == 't' && lower(b[1]) == 'r' && lower(b[2]) == 'u' && lower(b[3]) == 'e' {
			return 1, true
		}
	case 5:
		if lower(b[0]) == 'f' && lower(b[1]) == 'a' && lower(b[2]) == 'l' && lower(b[3]) == 's' && lower(b[4]) == 'e' {
			return 0, true
		}
	}
	return 0, false
}

func lower(c byte) byte { return c | 0x20 }

// validNumber reports whether b is a JSON number literal (RFC 8259):
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == n {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		n := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == n {
			return false
		}
	}
	return i == len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// typeError says that field p cannot hold the value b: "want int, got
// string \"x\"" (JSON) or "want int, got \"x\"" (CSV), with why appended
// in parentheses when given.
func typeError(p *plan, jsonType string, b []byte, why string) *source.DecodeError {
	return &source.DecodeError{Field: p.f.Name, Rule: "type", Reason: wantGot(p, describe(jsonType, b), why)}
}

func wantGot(p *plan, got, why string) string {
	s := "want " + p.f.Kind.String() + ", got " + got
	if why != "" {
		s += " (" + why + ")"
	}
	return s
}

// describe renders a value for an error message: text is quoted, a JSON
// number is shown as its literal, and a JSON string is named as such.
func describe(jsonType string, b []byte) string {
	switch jsonType {
	case "":
		return quote(b)
	case "number":
		return "number " + clip(b)
	case "string":
		return "string " + quote(b)
	}
	return jsonType + " " + clip(b)
}

// maxQuoted bounds the bytes of a value shown in an error message.
const maxQuoted = 100

// quote returns b as a Go-quoted string, cut to maxQuoted bytes ("..."
// follows a cut).
func quote(b []byte) string {
	if len(b) > maxQuoted {
		return strconv.Quote(string(b[:maxQuoted])) + "..."
	}
	return strconv.Quote(string(b))
}

// clip returns b as text, cut to maxQuoted bytes.
func clip(b []byte) string {
	if len(b) > maxQuoted {
		return string(b[:maxQuoted]) + "..."
	}
	return string(b)
}

// view returns b as a string without copying; the string must not outlive
// b's contents.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bytesOf returns s's bytes without copying; they must not be modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// setBool stores a JSON true or false into field p of r: a bool, or the
// text "true"/"false" for a string field. It reports false (storing
// nothing) for any other kind.
func setBool(p *plan, t bool, r *row.Row) bool {
	f := &p.f
	switch f.Kind {
	case row.KindString:
		r.S[f.Slot] = "false"
		if t {
			r.S[f.Slot] = "true"
		}
	case row.KindBool:
		r.I[f.Slot] = 0
		if t {
			r.I[f.Slot] = 1
		}
	default:
		return false
	}
	r.SetValid(f.Index)
	return true
}
