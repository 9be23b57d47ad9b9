package format

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// The fast path for flat JSON objects.
//
// Most event lines are flat objects whose requested fields hold plain
// strings, numbers, booleans or null. For those, one pass over the line
// that validates it strictly (RFC 8259) and picks out the requested
// top-level keys costs about half of building fastjson's tree and looking
// keys up in it. The fast path is deliberately narrow: it gives up — and
// the fastjson path decodes the line from scratch, producing exactly the
// rows and errors it always did — on anything outside that common case:
// invalid or unusual JSON (escapes in keys or in requested strings, control
// characters, deep nesting, trailing bytes), a requested value that is an
// object or array, or any value a field rejects. FuzzFastPath checks that
// both paths agree on every input.

// maxSkipDepth bounds the nesting of skipped values (fastjson's MaxDepth is
// 300); deeper lines take the fastjson path.
const maxSkipDepth = 300

// flat reports whether every field is a top-level key (no dots): the
// precondition of the fast path.
func flat(fields []plan) bool {
	for i := range fields {
		if len(fields[i].path) != 1 {
			return false
		}
	}
	return true
}

// fastDecode decodes line into r when the line is a strictly valid flat
// object and every requested value is accepted; otherwise it returns false
// with every field of r null again.
func (d *JSON) fastDecode(line []byte, r *row.Row, a *source.Arena) bool {
	if !d.fastDecode1(line, r, a) {
		for i := range d.fields {
			r.SetNull(d.fields[i].f.Index)
		}
		return false
	}
	return true
}

func (d *JSON) fastDecode1(line []byte, r *row.Row, a *source.Arena) bool {
	d.seen++
	if d.seen == 0 { // wrapped: reset the marks
		clear(d.mark)
		d.seen = 1
	}
	b := line
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	nkey := 0
	for {
		// Key: a string without escapes.
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks := i + 1
		var fi, ke int
		if h, ok := d.hintAt(b, ks, nkey); ok {
			// The same key as at this position of the last object: its
			// text (validated then) and closing quote match byte for byte.
			fi, ke = int(h.field), ks+len(h.key)
		} else {
			var esc bool
			ke, esc, ok = scanString(b, ks)
			if !ok || esc {
				return false
			}
			fi = d.lookup(b[ks:ke], nkey)
		}
		nkey++
		i = skipWS(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		if fi >= 0 && d.mark[fi] == d.seen {
			fi = -1 // a repeated key: the first one wins
		}
		var next int
		var ok bool
		if fi < 0 {
			next, ok = skipValue(b, i)
		} else {
			d.mark[fi] = d.seen
			next, ok = d.fastValue(&d.fields[fi], b, i, r, a)
		}
		if !ok {
			return false
		}
		i = skipWS(b, next)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return skipWS(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// hintAt reports whether the object key starting at b[ks] is the key seen
// at position n of the last object, followed by its closing quote.
func (d *JSON) hintAt(b []byte, ks, n int) (*keyHint, bool) {
	if n >= len(d.hint) {
		return nil, false
	}
	h := &d.hint[n]
	e := ks + len(h.key)
	if e >= len(b) || b[e] != '"' || view(b[ks:e]) != view(h.key) {
		return nil, false
	}
	return h, true
}

// lookup returns the index in d.fields of the field named key, the nth
// key of its object, or −1. Lines of one source usually list their keys in
// the same order, so the field found at position n last time is tried
// first.
func (d *JSON) lookup(key []byte, n int) int {
	if n < len(d.hint) && view(d.hint[n].key) == view(key) {
		return int(d.hint[n].field)
	}
	found := -1
	for i := range d.fields {
		if name := d.fields[i].f.Name; len(name) == len(key) && name == view(key) {
			found = i
			break
		}
	}
	if n < maxHints {
		for len(d.hint) <= n {
			d.hint = append(d.hint, keyHint{field: -1})
		}
		// The hint's bytes are reused: lines whose keys come in other
		// orders (re-serialized redeliveries) allocate nothing.
		h := &d.hint[n]
		h.key, h.field = append(h.key[:0], key...), int16(found)
	}
	return found
}

// keyHint remembers the key seen at one position of the last object and
// the field it named (−1: none).
type keyHint struct {
	key   []byte
	field int16
}

// maxHints bounds the key positions remembered by lookup.
const maxHints = 64

// fastValue decodes the value at b[i:] into field p and returns the index
// after it.
func (d *JSON) fastValue(p *plan, b []byte, i int, r *row.Row, a *source.Arena) (int, bool) {
	f := &p.f
	switch c := b[i]; {
	case c == '"':
		end, esc, ascii, ok := scanStringASCII(b, i+1)
		if !ok {
			return 0, false
		}
		s := b[i+1 : end]
		// An ASCII string is valid UTF-8: the scan that found its end has
		// looked at every byte, so utf8.Valid runs only on strings with
		// bytes from 0x80 on.
		if f.Kind == row.KindString {
			// A string field's text keeps the encoding rule (scanString
			// refused raw control characters, NUL among them); anything
			// else is the slow path's error to report.
			if esc {
				var bad int
				d.esc, bad, _ = unescapeText(d.esc[:0], s)
				if bad >= 0 {
					return 0, false
				}
				s = d.esc
			} else if !ascii && !utf8.Valid(s) {
				return 0, false
			}
			r.S[f.Slot] = a.String(s)
			r.SetValid(f.Index)
			return end + 1, true
		}
		if esc || !ascii && !utf8.Valid(s) {
			// Decode escapes and replace invalid UTF-8 with U+FFFD, as
			// encoding/json does: the text is parsed, not kept.
			d.esc = appendUnescaped(d.esc[:0], s)
			s = d.esc
		}
		return end + 1, setText(p, s, "string", r) == nil
	case c == '-' || isDigit(c):
		end := scanNumber(b, i)
		if end < 0 {
			return 0, false
		}
		num := b[i:end]
		switch {
		case f.Kind == row.KindString:
			r.S[f.Slot] = a.String(num)
			r.SetValid(f.Index)
			return end, true
		case f.Kind == row.KindBool, f.Kind == row.KindTime && !epoch(p.parser):
			return 0, false
		}
		return end, setText(p, num, "number", r) == nil
	case c == 't' || c == 'f':
		end, ok := literal(b, i)
		if !ok {
			return 0, false
		}
		return end, setBool(p, c == 't', r)
	case c == 'n':
		return literal(b, i)
	}
	return 0, false
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString scans a string body starting after its opening quote and
// returns the index of the closing quote and whether it holds escapes. It
// fails on control characters and on escapes RFC 8259 does not define.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	for {
		i = plainRun(b, i)
		if i >= len(b) {
			return 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, esc, true
		case c != '\\' || i+1 >= len(b):
			return 0, false, false // a control character, or a lone backslash
		}
		esc = true
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+5 >= len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return 0, false, false
			}
			i += 6
		default:
			return 0, false, false
		}
	}
}

// scanStringASCII is scanString that also reports whether the body is
// ASCII (no byte from 0x80 on).
func scanStringASCII(b []byte, i int) (end int, esc, ascii, ok bool) {
	var hi uint64
	for {
		var h uint64
		i, h = plainRunHigh(b, i)
		hi |= h
		if i >= len(b) {
			return 0, false, false, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, esc, hi&hi7 == 0, true
		case c != '\\' || i+1 >= len(b):
			return 0, false, false, false
		}
		esc = true
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+5 >= len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return 0, false, false, false
			}
			i += 6
		default:
			return 0, false, false, false
		}
	}
}

// plainRunHigh is plainRun that also returns the bytes it passed over,
// OR-ed together in the high bit of some lane (zero when all of them are
// ASCII).
func plainRunHigh(b []byte, i int) (int, uint64) {
	var acc uint64
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ quoteLanes
		s := x ^ bslshLanes
		m := ((q - lo7) &^ q) | ((s - lo7) &^ s) | ((x - ctlLanes) &^ x)
		if m &= hi7; m != 0 {
			k := bits.TrailingZeros64(m) / 8
			return i + k, acc | x&(1<<(8*k)-1)
		}
		acc |= x
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		acc |= uint64(c)
	}
	return i, acc
}

// SWAR constants: a byte lane of each word.
const (
	lo7        = 0x0101010101010101
	hi7        = 0x8080808080808080
	quoteLanes = 0x2222222222222222 // '"'
	bslshLanes = 0x5c5c5c5c5c5c5c5c // '\\'
	ctlLanes   = 0x2020202020202020 // bytes below 0x20 are control characters
)

// plainRun returns the index of the first byte at or after i that is a
// quote, a backslash or a control character (len(b) if none). It tests
// eight bytes at a time ("SIMD within a register": a byte lane is zero, or
// below a bound, when subtracting 0x01/0x20 borrows into its high bit;
// Hacker's Delight §6-1, "Find First 0-Byte").
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ quoteLanes
		s := x ^ bslshLanes
		m := ((q - lo7) &^ q) | ((s - lo7) &^ s) | ((x - ctlLanes) &^ x)
		if m &= hi7; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// appendUnescaped appends the text of a JSON string body (already checked
// by scanString) with its escapes decoded, following encoding/json: a
// surrogate pair becomes one rune, a lone surrogate or an invalid UTF-8
// byte becomes U+FFFD.
func appendUnescaped(dst, s []byte) []byte {
	out, _, _ := unescape(dst, s, false)
	return out
}

// hex4 reads four hex digits (checked by scanString).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		default:
			r |= rune(c|0x20-'a') + 10
		}
	}
	return r
}

func isHex(c byte) bool { return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }

// scanNumber returns the index after the number literal at b[i:], or −1
// when it is not a valid JSON number.
func scanNumber(b []byte, i int) int {
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case isDigit(c), c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
			continue
		}
		break
	}
	if !validNumber(b[start:i]) {
		return -1
	}
	return i
}

// literal scans true, false or null.
func literal(b []byte, i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && view(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// skipValue validates and skips any JSON value at b[i:], iteratively.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	var stack [maxSkipDepth]byte // '{' or '['
	for {
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		// One value.
		switch c := b[i]; {
		case c == '"':
			end, _, ok := scanString(b, i+1)
			if !ok {
				return 0, false
			}
			i = end + 1
		case c == '-' || isDigit(c):
			if i = scanNumber(b, i); i < 0 {
				return 0, false
			}
		case c == 't' || c == 'f' || c == 'n':
			var ok bool
			if i, ok = literal(b, i); !ok {
				return 0, false
			}
		case c == '{' || c == '[':
			if depth == maxSkipDepth {
				return 0, false
			}
			stack[depth] = c
			depth++
			i = skipWS(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				depth--
				i++
				break
			}
			if c == '{' {
				if i, _ = objectKey(b, i); i < 0 {
					return 0, false
				}
			}
			continue
		default:
			return 0, false
		}
		// After a value: close containers or move to the next element.
		for {
			if depth == 0 {
				return i, true
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			top := stack[depth-1]
			switch {
			case b[i] == ',':
				i++
				if top == '{' {
					if i, _ = objectKey(b, skipWS(b, i)); i < 0 {
						return 0, false
					}
				}
			case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
				depth--
				i++
				continue
			default:
				return 0, false
			}
			break
		}
	}
}

// objectKey scans `"key" :` at b[i:] and returns the index after the colon
// (−1 on error).
func objectKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	end, _, ok := scanString(b, i+1)
	if !ok {
		return -1, false
	}
	i = skipWS(b, end+1)
	if i >= len(b) || b[i] != ':' {
		return -1, false
	}
	return i + 1, true
}

// strictJSON returns a decode error unless line is one JSON value (RFC
// 8259) nested at most maxSkipDepth deep, with only whitespace around it.
func strictJSON(line []byte) *source.DecodeError {
	i := skipWS(line, 0)
	if end, ok := skipValue(line, i); ok && skipWS(line, end) == len(line) {
		return nil
	}
	var se *json.SyntaxError
	switch err := json.Unmarshal(line, new(json.RawMessage)); {
	case errors.As(err, &se):
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)}
	case err == nil:
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("JSON nested deeper than %d levels", maxSkipDepth)}
	default:
		return &source.DecodeError{Rule: "decode", Reason: "invalid JSON: " + err.Error()}
	}
}

// ValidJSON reports whether b is one JSON value by RFC 8259 (white space
// around it allowed), as encoding/json.Valid does, with the scanner of the
// fast decoding path: several times faster than encoding/json. A value
// nested deeper than the scanner's limit is checked by encoding/json.
func ValidJSON(b []byte) bool {
	i := skipWS(b, 0)
	if end, ok := skipValue(b, i); ok {
		return skipWS(b, end) == len(b)
	}
	return json.Valid(b)
}
