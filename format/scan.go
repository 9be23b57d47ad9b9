package format

import (
	"bytes"

	"github.com/tidemark/tidemark/row"
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
func (d *JSON) fastDecode(line []byte, r *row.Row) bool {
	if !d.fastDecode1(line, r) {
		for i := range d.fields {
			r.SetNull(d.fields[i].f.Index)
		}
		return false
	}
	return true
}

func (d *JSON) fastDecode1(line []byte, r *row.Row) bool {
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
		ke, esc, ok := scanString(b, ks)
		if !ok || esc {
			return false
		}
		i = skipWS(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return false
		}
		fi := d.lookup(b[ks:ke], nkey)
		nkey++
		if fi >= 0 && d.mark[fi] == d.seen {
			fi = -1 // a repeated key: the first one wins
		}
		var next int
		if fi < 0 {
			next, ok = skipValue(b, i)
		} else {
			d.mark[fi] = d.seen
			next, ok = d.fastValue(&d.fields[fi], b, i, r)
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

// lookup returns the index in d.fields of the field named key, the nth
// key of its object, or −1. Lines of one source usually list their keys in
// the same order, so the field found at position n last time is tried
// first.
func (d *JSON) lookup(key []byte, n int) int {
	if n < len(d.hint) {
		if h := d.hint[n]; h >= 0 && d.fields[h].f.Name == view(key) {
			return int(h)
		}
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
			d.hint = append(d.hint, -1)
		}
		if found >= 0 {
			d.hint[n] = int16(found)
		}
	}
	return found
}

// maxHints bounds the key positions remembered by lookup.
const maxHints = 64

// fastValue decodes the value at b[i:] into field p and returns the index
// after it.
func (d *JSON) fastValue(p *plan, b []byte, i int, r *row.Row) (int, bool) {
	f := &p.f
	switch c := b[i]; {
	case c == '"':
		end, esc, ok := scanString(b, i+1)
		if !ok || esc {
			return 0, false
		}
		s := b[i+1 : end]
		if f.Kind == row.KindString {
			r.S[f.Slot] = d.arena.str(s)
			r.SetValid(f.Index)
			return end + 1, true
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
			r.S[f.Slot] = d.arena.str(num)
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
		t := c == 't'
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
			return 0, false
		}
		r.SetValid(f.Index)
		return end, true
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
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false, false
		}
		k := special(b[i : i+j])
		if k < 0 {
			return i + j, esc, true
		}
		i += k
		if b[i] != '\\' || i+1 >= len(b) {
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

// special returns the index of the first control character or backslash in
// b, or −1.
func special(b []byte) int {
	for k, c := range b {
		if c < 0x20 || c == '\\' {
			return k
		}
	}
	return -1
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
