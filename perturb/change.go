package perturb

import (
	"fmt"
	"math/big"
)

// maxShift bounds how many digits adding one may add to a number written
// with an exponent (1e400 + 1 needs 400 more): a larger shift leaves the
// value unchanged (not chosen for a conflict) rather than writing
// megabytes.
const maxShift = 400

// StringSuffix is what a conflicting delivery appends to a string value.
const StringSuffix = "-x"

// AddOne appends the decimal number text plus one, exactly, in the same
// form: the same digits after the point (19.99 → 20.99, -0.5 → 0.5, 7 →
// 8), the same exponent (1.5e3 → 1.501e3, 5E-1 → 15E-1), a leading '+'
// and leading zeros kept (+007 → +008). text is an optional sign, digits,
// an optional fraction and an optional exponent (JSON numbers, and CSV
// decimals and integers). ok is false, and dst unchanged, for anything
// else, or when the exponent is beyond ±400.
func AddOne(dst, text []byte) ([]byte, bool) {
	i := 0
	plus, neg := false, false
	if i < len(text) && (text[i] == '+' || text[i] == '-') {
		plus, neg = text[i] == '+', text[i] == '-'
		i++
	}
	intStart := i
	i = digits(text, i)
	intEnd := i
	if intEnd == intStart {
		return dst, false
	}
	fracStart, fracEnd := i, i
	if i < len(text) && text[i] == '.' {
		fracStart = i + 1
		fracEnd = digits(text, fracStart)
		if fracEnd == fracStart {
			return dst, false
		}
		i = fracEnd
	}
	expText := text[i:]
	exp := 0
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		eneg := false
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			eneg = text[i] == '-'
			i++
		}
		j := digits(text, i)
		if j == i {
			return dst, false
		}
		for _, c := range text[i:j] {
			exp = exp*10 + int(c-'0')
			if exp > maxShift {
				return dst, false
			}
		}
		if eneg {
			exp = -exp
		}
		i = j
	}
	if i != len(text) {
		return dst, false
	}
	// value = ±mantissa × 10^exp, mantissa = digits / 10^scale. Adding one
	// adds 10^-exp to the mantissa: in units of 10^-newScale, where
	// newScale ≥ scale and ≥ exp, that is 10^(newScale-exp).
	scale := fracEnd - fracStart
	newScale := max(scale, exp)
	var u big.Int
	digitsText := make([]byte, 0, intEnd-intStart+scale)
	digitsText = append(digitsText, text[intStart:intEnd]...)
	digitsText = append(digitsText, text[fracStart:fracEnd]...)
	u.SetString(string(digitsText), 10)
	u.Mul(&u, pow10(newScale-scale))
	if neg {
		u.Neg(&u)
	}
	u.Add(&u, pow10(newScale-exp))

	switch {
	case u.Sign() < 0:
		dst = append(dst, '-')
	case plus:
		dst = append(dst, '+')
	}
	abs := u.Abs(&u).Append(nil, 10)
	for len(abs) < newScale+1 {
		abs = append([]byte{'0'}, abs...)
	}
	intPart, frac := abs[:len(abs)-newScale], abs[len(abs)-newScale:]
	// Leading zeros were part of the form ("007"); JSON numbers never have
	// them, so this never makes a JSON number invalid.
	if w := intEnd - intStart; w > 1 && text[intStart] == '0' {
		for k := len(intPart); k < w; k++ {
			dst = append(dst, '0')
		}
	}
	dst = append(dst, intPart...)
	if newScale > 0 {
		dst = append(dst, '.')
		dst = append(dst, frac...)
	}
	return append(dst, expText...), true
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Change says how AppendChanged changes a value.
type Change uint8

// String returns "json-type", "number" or "string".
func (c Change) String() string {
	switch c {
	case ByJSONType:
		return "json-type"
	case AsNumber:
		return "number"
	case AsString:
		return "string"
	}
	return "Change(?)"
}

// ParseChange parses "json-type" ("" too), "number" or "string".
func ParseChange(s string) (Change, error) {
	switch s {
	case "", "json-type":
		return ByJSONType, nil
	case "number":
		return AsNumber, nil
	case "string":
		return AsString, nil
	}
	return 0, &OptionError{Key: "conflict_change", Reason: fmt.Sprintf("%q is not json-type, number or string", s)}
}

// The changes.
const (
	// ByJSONType adds one to a JSON number and appends "-x" to a JSON
	// string; other values are not changed.
	ByJSONType Change = iota
	// AsNumber adds one to a JSON number, or to a JSON string that holds
	// a number (keeping the quotes): for a field declared int or decimal.
	AsNumber
	// AsString appends "-x" to a JSON string, and turns a number, true or
	// false into the string of its text plus "-x": for a field declared
	// string.
	AsString
)

// AppendChanged appends the JSON object obj with the value of field (see
// Lookup) changed as change says: a number gets one added exactly, in
// its form (AddOne), a string gets "-x" appended. Every other byte is
// kept. ok is false, and dst unchanged, when the field is missing, or its
// value cannot be changed that way (null, an object, an array, a boolean
// under ByJSONType, a number beyond AddOne's range).
func AppendChanged(dst, obj []byte, field string, change Change) ([]byte, bool) {
	if !Valid(obj) {
		return dst, false
	}
	return appendChanged(dst, obj, field, change)
}

// appendChanged is AppendChanged for an obj known to be valid.
func appendChanged(dst, obj []byte, field string, change Change) ([]byte, bool) {
	s, e, ok := lookupValid(obj, field)
	if !ok {
		return dst, false
	}
	n := len(dst)
	v := obj[s:e]
	dst = append(dst, obj[:s]...)
	switch c := v[0]; {
	case c == '"' && change == AsNumber:
		dst = append(dst, '"')
		if dst, ok = AddOne(dst, v[1:len(v)-1]); !ok {
			return dst[:n], false
		}
		dst = append(dst, '"')
	case c == '"':
		dst = append(dst, v[:len(v)-1]...)
		dst = append(dst, StringSuffix+`"`...)
	case c == '-' || c >= '0' && c <= '9':
		if change == AsString {
			dst = append(dst, '"')
			dst = append(dst, v...)
			dst = append(dst, StringSuffix+`"`...)
			break
		}
		if dst, ok = AddOne(dst, v); !ok {
			return dst[:n], false
		}
	case (c == 't' || c == 'f') && change == AsString:
		dst = append(dst, '"')
		dst = append(dst, v...)
		dst = append(dst, StringSuffix+`"`...)
	default:
		return dst[:n], false
	}
	return append(dst, obj[e:]...), true
}
