package dedup

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The reference canonical form: the scheme of PayloadHashVersion 1, kept
// here as the independent definition the hash is checked against. Two
// values are the same payload exactly when their canonical texts are
// equal.

// refCanonical returns the canonical text of the JSON value obj (members
// sorted by key, strings unescaped and length-prefixed, no white space,
// literals as written; top-level keys in ignore left out) and whether it
// parsed.
func refCanonical(obj []byte, ignore map[string]bool) ([]byte, bool) {
	var c refCanon
	c.reset(obj, ignore)
	ok := c.value(true) && c.ws() == len(obj)
	return c.out, ok
}

// refMember is an object member being canonicalized: its unescaped key is
// refCanon.keys[k0:k1], its canonical value refCanon.out[start:end].
type refMember struct {
	k0, k1     int
	start, end int
}

// refCanon writes a canonical encoding of a JSON value: objects with members
// sorted by key (bytewise), strings unescaped and length-prefixed, no white
// space, numbers and literals as written.
type refCanon struct {
	b       []byte
	i       int
	out     []byte
	ignore  map[string]bool
	depth   int
	keys    []byte      // unescaped keys of the objects being read
	members []refMember // a stack: each open object uses members[base:]
	str     []byte      // an unescaped string with escapes
	tmp     []byte      // an object's member values while they are reordered
}

func (c *refCanon) reset(obj []byte, ignore map[string]bool) {
	c.b, c.i, c.ignore, c.depth = obj, 0, ignore, 0
	c.out, c.keys, c.members = c.out[:0], c.keys[:0], c.members[:0]
}

func (c *refCanon) ws() int {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return c.i
		}
	}
	return c.i
}

func (c *refCanon) value(top bool) bool {
	c.ws()
	if c.i >= len(c.b) {
		return false
	}
	if c.depth >= maxDepth {
		return false
	}
	c.depth++
	ok := c.value1(top)
	c.depth--
	return ok
}

func (c *refCanon) value1(top bool) bool {
	switch ch := c.b[c.i]; {
	case ch == '{':
		return c.object(top)
	case ch == '[':
		c.i++
		c.out = append(c.out, '[')
		if c.ws(); c.i < len(c.b) && c.b[c.i] == ']' {
			c.i++
			c.out = append(c.out, ']')
			return true
		}
		for {
			if !c.value(false) {
				return false
			}
			c.ws()
			if c.i >= len(c.b) {
				return false
			}
			switch c.b[c.i] {
			case ',':
				c.i++
				c.out = append(c.out, ',')
			case ']':
				c.i++
				c.out = append(c.out, ']')
				return true
			default:
				return false
			}
		}
	case ch == '"':
		s, ok := c.string()
		if !ok {
			return false
		}
		c.out = append(c.out, '"')
		c.out = binary.AppendUvarint(c.out, uint64(len(s)))
		c.out = append(c.out, s...)
		return true
	default:
		start := c.i
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				goto done
			}
			c.i++
		}
	done:
		if c.i == start {
			return false
		}
		c.out = append(c.out, 'v')
		c.out = binary.AppendUvarint(c.out, uint64(c.i-start))
		c.out = append(c.out, c.b[start:c.i]...)
		return true
	}
}

// object canonicalizes an object: members sorted by key; at the top level,
// ignored keys are left out.
func (c *refCanon) object(top bool) bool {
	c.i++
	base := len(c.out)
	mbase := len(c.members)
	kbase := len(c.keys)
	defer func() { c.members, c.keys = c.members[:mbase], c.keys[:kbase] }()
	for {
		c.ws()
		if c.i >= len(c.b) {
			return false
		}
		if c.b[c.i] == '}' && len(c.members) == mbase {
			c.i++
			break
		}
		key, ok := c.string()
		if !ok {
			return false
		}
		k0 := len(c.keys)
		c.keys = append(c.keys, key...)
		k1 := len(c.keys)
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.i++
		start := len(c.out)
		if !c.value(false) {
			return false
		}
		if top && c.ignore[string(c.keys[k0:k1])] {
			c.out = c.out[:start]
			c.keys = c.keys[:k0]
		} else {
			c.members = append(c.members, refMember{k0: k0, k1: k1, start: start, end: len(c.out)})
		}
		c.ws()
		if c.i >= len(c.b) {
			return false
		}
		if c.b[c.i] == ',' {
			c.i++
			continue
		}
		if c.b[c.i] != '}' {
			return false
		}
		c.i++
		break
	}
	members := c.members[mbase:]
	keys := c.keys
	slices.SortStableFunc(members, func(a, b refMember) int { return bytes.Compare(keys[a.k0:a.k1], keys[b.k0:b.k1]) })
	c.tmp = append(c.tmp[:0], c.out[base:]...)
	c.out = append(c.out[:base], '{')
	c.out = binary.AppendUvarint(c.out, uint64(len(members)))
	for _, m := range members {
		c.out = binary.AppendUvarint(c.out, uint64(m.k1-m.k0))
		c.out = append(c.out, keys[m.k0:m.k1]...)
		c.out = append(c.out, c.tmp[m.start-base:m.end-base]...)
	}
	return true
}

// string reads a JSON string at c.i and returns its unescaped bytes: a
// slice of the input when it has no escapes, else of c.str (valid until
// the next call).
func (c *refCanon) string() ([]byte, bool) {
	if c.i >= len(c.b) || c.b[c.i] != '"' {
		return nil, false
	}
	c.i++
	start := c.i
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case '"':
			c.i++
			return c.b[start : c.i-1], true
		case '\\':
			return c.escaped(start)
		}
		c.i++
	}
	return nil, false
}

// escaped unescapes a string with escapes whose first bytes c.b[start:c.i]
// have none, into c.str.
func (c *refCanon) escaped(start int) ([]byte, bool) {
	s := append(c.str[:0], c.b[start:c.i]...)
	defer func() { c.str = s[:0] }()
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			return s, true
		case ch == '\\':
			if c.i+1 >= len(c.b) {
				return nil, false
			}
			e := c.b[c.i+1]
			switch e {
			case 'b':
				s = append(s, '\b')
			case 'f':
				s = append(s, '\f')
			case 'n':
				s = append(s, '\n')
			case 'r':
				s = append(s, '\r')
			case 't':
				s = append(s, '\t')
			case 'u':
				if c.i+6 > len(c.b) {
					return nil, false
				}
				r, ok := hex4(c.b[c.i+2 : c.i+6])
				if !ok {
					return nil, false
				}
				c.i += 6
				if utf16.IsSurrogate(r) && c.i+6 <= len(c.b) && c.b[c.i] == '\\' && c.b[c.i+1] == 'u' {
					if r2, ok := hex4(c.b[c.i+2 : c.i+6]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							s = utf8.AppendRune(s, d)
							c.i += 6
							continue
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
				s = utf8.AppendRune(s, r)
				continue
			default:
				s = append(s, e)
			}
			c.i += 2
		default:
			s = append(s, ch)
			c.i++
		}
	}
	return nil, false
}
