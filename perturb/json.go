package perturb

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small strict JSON scanner (RFC 8259): it finds the byte spans of
// members and values without building a tree, so that a value can be
// rewritten in place and everything else kept byte for byte.

// maxDepth bounds the nesting of scanned values; deeper input is refused
// rather than risking the stack.
const maxDepth = 1000

// member is one member of an object: the key with its quotes, and the
// value.
type member struct {
	keyStart, keyEnd int // b[keyStart:keyEnd] is `"key"`
	valStart, valEnd int
}

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

// scanString returns the index after the string that starts at b[i] ('"'),
// or -1 when it is not a valid JSON string.
func scanString(b []byte, i int) int {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if hexVal(h) < 0 {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// scanNumber returns the index after the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// scanValue returns the index after the JSON value that starts at b[i]
// (white space already skipped), or -1.
func scanValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '{':
		if depth >= maxDepth {
			return -1
		}
		o := objScanner{b: b, i: i + 1, depth: depth + 1}
		for {
			if _, ok := o.next(); !ok {
				break
			}
		}
		if o.bad {
			return -1
		}
		return o.i
	case c == '[':
		if depth >= maxDepth {
			return -1
		}
		a := arrScanner{b: b, i: i + 1, depth: depth + 1}
		for {
			if _, _, ok := a.next(); !ok {
				break
			}
		}
		if a.bad {
			return -1
		}
		return a.i
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// objScanner walks the members of an object whose '{' lies just before i.
// After next returns false, i is the index after the closing '}' unless
// bad is set.
type objScanner struct {
	b     []byte
	i     int
	depth int
	n     int // members seen
	bad   bool
	done  bool
}

func (o *objScanner) next() (member, bool) {
	if o.done || o.bad {
		return member{}, false
	}
	b := o.b
	i := skipWS(b, o.i)
	if o.n > 0 {
		switch {
		case i < len(b) && b[i] == '}':
			o.i, o.done = i+1, true
			return member{}, false
		case i < len(b) && b[i] == ',':
			i = skipWS(b, i+1)
		default:
			o.bad = true
			return member{}, false
		}
	} else if i < len(b) && b[i] == '}' {
		o.i, o.done = i+1, true
		return member{}, false
	}
	if i >= len(b) || b[i] != '"' {
		o.bad = true
		return member{}, false
	}
	var m member
	m.keyStart = i
	m.keyEnd = scanString(b, i)
	if m.keyEnd < 0 {
		o.bad = true
		return member{}, false
	}
	i = skipWS(b, m.keyEnd)
	if i >= len(b) || b[i] != ':' {
		o.bad = true
		return member{}, false
	}
	m.valStart = skipWS(b, i+1)
	m.valEnd = scanValue(b, m.valStart, o.depth)
	if m.valEnd < 0 {
		o.bad = true
		return member{}, false
	}
	o.i = m.valEnd
	o.n++
	return m, true
}

// arrScanner walks the elements of an array whose '[' lies just before i.
type arrScanner struct {
	b     []byte
	i     int
	depth int
	n     int
	bad   bool
	done  bool
}

func (a *arrScanner) next() (start, end int, ok bool) {
	if a.done || a.bad {
		return 0, 0, false
	}
	b := a.b
	i := skipWS(b, a.i)
	if a.n > 0 {
		switch {
		case i < len(b) && b[i] == ']':
			a.i, a.done = i+1, true
			return 0, 0, false
		case i < len(b) && b[i] == ',':
			i = skipWS(b, i+1)
		default:
			a.bad = true
			return 0, 0, false
		}
	} else if i < len(b) && b[i] == ']' {
		a.i, a.done = i+1, true
		return 0, 0, false
	}
	end = scanValue(b, i, a.depth)
	if end < 0 {
		a.bad = true
		return 0, 0, false
	}
	a.i = end
	a.n++
	return i, end, true
}

// object checks that b is one JSON object, optionally surrounded by white
// space, and returns the index of its opening '{' and of its closing '}'.
func object(b []byte) (open, close int, ok bool) {
	open = skipWS(b, 0)
	if open >= len(b) || b[open] != '{' {
		return 0, 0, false
	}
	end := scanValue(b, open, 0)
	if end < 0 || skipWS(b, end) != len(b) {
		return 0, 0, false
	}
	return open, end - 1, true
}

// keyIs reports whether the JSON string key (with its quotes) is name.
func keyIs(key []byte, name string) bool {
	in := key[1 : len(key)-1]
	for _, c := range in {
		if c == '\\' || c >= utf8.RuneSelf {
			var buf [64]byte
			return string(appendUnescaped(buf[:0], in)) == name
		}
	}
	return string(in) == name
}

// appendUnescaped appends the text of a valid JSON string's inside (no
// quotes), decoding its escapes like encoding/json, and like the file
// source's decoder: a lone surrogate, and each byte of invalid UTF-8,
// becomes U+FFFD.
func appendUnescaped(dst, in []byte) []byte {
	for i := 0; i < len(in); {
		c := in[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, in[i:i+n]...)
			}
			i += n
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		if i+1 >= len(in) {
			return dst
		}
		switch in[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(in[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(in[i+2:])); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, in[i+1])
		}
		i += 2
	}
	return dst
}

// hex4 reads four hex digits (checked by scanString).
func hex4(b []byte) rune {
	if len(b) < 4 {
		return utf8.RuneError
	}
	var r rune
	for _, c := range b[:4] {
		r = r<<4 | rune(hexVal(c))
	}
	return r
}

// Lookup finds the value of field in the JSON object obj and returns its
// byte span obj[start:end]. A dotted name is a path into nested values
// ("properties.time"; "items.0.sku" for an array element); when the path
// finds nothing, a top-level member whose name is the whole dotted name is
// used. Of duplicate member names the first wins. These are the file
// source's rules for JSON fields. ok is false when the field is missing or
// obj is not a valid JSON object.
func Lookup(obj []byte, field string) (start, end int, ok bool) {
	if !Valid(obj) {
		return 0, 0, false
	}
	return lookupValid(obj, field)
}

// lookupValid is Lookup for an obj known to be a valid object.
func lookupValid(obj []byte, field string) (start, end int, ok bool) {
	open := skipWS(obj, 0)
	if s, e, ok := lookupPath(obj, open, field); ok {
		return s, e, true
	}
	if strings.Contains(field, ".") {
		return lookupMember(obj, open, field)
	}
	return 0, 0, false
}

// lookupPath follows the dotted path from the value at b[i].
func lookupPath(b []byte, i int, path string) (start, end int, ok bool) {
	start = i
	for {
		seg, rest, more := strings.Cut(path, ".")
		switch b[start] {
		case '{':
			start, end, ok = lookupMember(b, start, seg)
		case '[':
			start, end, ok = lookupIndex(b, start, seg)
		default:
			ok = false
		}
		if !ok || !more {
			return start, end, ok
		}
		path = rest
	}
}

// lookupMember finds the first member named name of the object at b[i].
func lookupMember(b []byte, i int, name string) (start, end int, ok bool) {
	o := objScanner{b: b, i: i + 1, depth: 1}
	for {
		m, more := o.next()
		if !more {
			return 0, 0, false
		}
		if keyIs(b[m.keyStart:m.keyEnd], name) {
			return m.valStart, m.valEnd, true
		}
	}
}

// lookupIndex finds element seg (a base-10 index) of the array at b[i].
func lookupIndex(b []byte, i int, seg string) (start, end int, ok bool) {
	n, err := strconv.Atoi(seg)
	if err != nil || n < 0 {
		return 0, 0, false
	}
	a := arrScanner{b: b, i: i + 1, depth: 1}
	for k := 0; ; k++ {
		s, e, more := a.next()
		if !more {
			return 0, 0, false
		}
		if k == n {
			return s, e, true
		}
	}
}

// AppendFieldText appends the text of field (see Lookup) in the JSON
// object obj: a string unescaped, a number as written, true or false. ok
// is false, and dst unchanged, when the field is missing, null, an object
// or an array. This is the text partition keys are hashed from.
func AppendFieldText(dst, obj []byte, field string) ([]byte, bool) {
	if !Valid(obj) {
		return dst, false
	}
	return appendFieldText(dst, obj, field)
}

// appendFieldText is AppendFieldText for an obj known to be valid.
func appendFieldText(dst, obj []byte, field string) ([]byte, bool) {
	s, e, ok := lookupValid(obj, field)
	if !ok {
		return dst, false
	}
	v := obj[s:e]
	switch v[0] {
	case '"':
		return appendUnescaped(dst, v[1:len(v)-1]), true
	case 'n', '{', '[':
		return dst, false
	}
	return append(dst, v...), true
}

// Valid reports whether b is one JSON object (white space around it
// allowed), by RFC 8259.
func Valid(b []byte) bool {
	_, _, ok := object(b)
	return ok
}
