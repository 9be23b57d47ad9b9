package dedup

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/u64map"
)

// IDHash hashes an event id's text (xxHash64).
func IDHash(id []byte) uint64 { return xxhash.Sum64(id) }

// PayloadHashVersion names the scheme Hasher.Sum computes. Payload hashes
// are kept in checkpoints (dedup state) and in PostgreSQL event ledgers,
// so a payload hashed by another scheme must never be compared with one
// of this scheme: stores that keep hashes record this number. Version 1
// hashed a sorted canonical text; version 2 is the sum of member hashes
// described on Hasher.
const PayloadHashVersion = 2

// Hasher computes canonical payload hashes of JSON objects: two deliveries
// of one event hash equal when they differ only in member order, white
// space, string escapes, or the values of the ignored top-level keys
// (delivery metadata such as ingested_at). Numbers compare by their
// literal text (1.0 and 1 differ). Not safe for concurrent use; reuse one
// per goroutine.
//
// # The scheme (PayloadHashVersion 2)
//
// No canonical text of the whole object is built and nothing is sorted.
// Each member is encoded canonically on its own,
//
//	K(key) = key ‖ `":`                         (key without '"', unescaped)
//	K(key) = `""` ‖ uvarint(len(key)) ‖ key ‖ ":" (a key holding '"')
//	V(string) = `"` ‖ unescaped text ‖ `"`
//	V(number, true, false, null) = the literal as written
//	V(object) = "{" ‖ the object's hash, 8 bytes little-endian
//	V(array)  = "[" ‖ the array's hash, 8 bytes little-endian
//
// and hashed with xxHash64, m = XXH64(K ‖ V). A member written compactly
// without escapes (`"store_id":"store-7"`) is its own canonical encoding
// from the key's first byte on, so it is hashed straight from the input;
// others are rewritten into a scratch buffer first. An object's hash is
// the sum of its members' hashes modulo 2⁶⁴, finalized with the member
// count: O = fmix64(Σ m + n·φ + tagObject), where fmix64 is MurmurHash3's
// 64-bit finalizer. Addition is commutative, so member order does not
// matter; unlike XOR, two equal members do not cancel. An array's hash
// chains its elements in order: a ← fmix64(a ⊕ E(e)) with E(e) the
// XXH64 of a scalar's V, or a nested object's or array's hash. The result
// is folded to 32 bits.
//
// # Collisions
//
// The encoding is injective: K is self-delimiting (a normal key ends at
// its first '"', which is followed by ':'; a key holding '"' starts with
// two quotes, which no normal key does), and the first byte of V tells
// its kind (a string's quote, "{", "[", or the first byte of a literal,
// which is none of those). Two members differ, then, exactly when their
// encodings do, and hash equal with probability about 2⁻⁶⁴ (XXH64's
// output modeled as random). For two different member multisets the sums
// differ by a non-trivial combination of such values, equal to zero with
// probability about 2⁻⁶⁴: this is MSet-Add-Hash of Clarke, Devadas, van
// Dijk, Gassend and Suh ("Incremental Multiset Hash Functions and Their
// Application to Memory Integrity Checking", ASIACRYPT 2003), which is
// collision resistant for random member hashes. It is not meant to resist
// payloads crafted to collide (without a secret key, sums of hashes can be
// steered by Wagner's generalized birthday attack); the threat here is
// chance, and a producer able to craft payloads could reuse an id anyway.
// What decides the odds is the fold: two different payloads of one id
// hash equal with probability about 2⁻³² per comparison, as before.
//
// Duplicate keys in one object count as a multiset (their order does not
// matter). A value that does not parse, or that nests deeper than
// maxDepth, hashes its raw bytes.
type Hasher struct {
	ignore  map[string]bool
	hints   []keyHint // top-level key seen at each position of the last object
	scratch []byte    // canonical encodings of rewritten members (a stack)
	str     []byte    // an unescaped string
	b       []byte
	i       int
	depth   int
}

// keyHint remembers the top-level key at one position of the last object
// and whether it is ignored: objects of one source list their keys in the
// same order, so the ignore set is looked up once per key, not per object.
type keyHint struct {
	key     []byte
	ignored bool
	set     bool
}

// maxHints bounds the key positions remembered.
const maxHints = 64

// NewHasher returns a hasher that skips the given top-level keys.
func NewHasher(ignore []string) *Hasher {
	h := &Hasher{ignore: map[string]bool{}}
	for _, k := range ignore {
		h.ignore[k] = true
	}
	return h
}

// Sum returns the 32-bit canonical hash of the JSON value obj (normally an
// object) and whether obj parsed. A value that does not parse hashes its
// raw bytes.
//
// Sum does not allocate once its buffers have grown to the size of the
// payloads it sees.
func (h *Hasher) Sum(obj []byte) (uint32, bool) {
	x, ok := h.Sum64(obj)
	return fold(x), ok
}

// Sum64 is Sum before the fold to 32 bits.
func (h *Hasher) Sum64(obj []byte) (uint64, bool) {
	h.b, h.i, h.depth = obj, 0, 0
	h.scratch = h.scratch[:0]
	x, ok := h.value(true)
	ok = ok && h.ws() == len(obj)
	h.b = nil
	if !ok {
		return xxhash.Sum64(obj), false
	}
	return x, true
}

func fold(x uint64) uint32 { return uint32(x) ^ uint32(x>>32) }

// Tags that keep the hashes of different kinds of value apart.
const (
	phi       = 0x9e3779b97f4a7c15 // 2⁶⁴/φ
	tagObject = 0x6f626a6563747631 // "objectv1"
	tagArray  = 0x6172726179767631 // "arrayv1"
)

// fmix64 is MurmurHash3's 64-bit finalizer (u64map.Fmix64).
func fmix64(x uint64) uint64 { return u64map.Fmix64(x) }

func (h *Hasher) ws() int {
	b, i := h.b, h.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	h.i = i
	return i
}

// value hashes the value at h.i (after white space): E(value) for a
// scalar, the object's or array's hash otherwise.
func (h *Hasher) value(top bool) (uint64, bool) {
	h.ws()
	if h.i >= len(h.b) {
		return 0, false
	}
	switch h.b[h.i] {
	case '{':
		return h.nested(top, '{')
	case '[':
		return h.nested(top, '[')
	case '"':
		start := h.i
		end, esc, ok := scanString(h.b, start+1)
		if !ok {
			return 0, false
		}
		h.i = end + 1
		if !esc {
			return xxhash.Sum64(h.b[start:h.i]), true
		}
		n := len(h.scratch)
		h.scratch = append(h.scratch, '"')
		if h.scratch, ok = unescape(h.scratch, h.b[start+1:end]); !ok {
			return 0, false
		}
		h.scratch = append(h.scratch, '"')
		x := xxhash.Sum64(h.scratch[n:])
		h.scratch = h.scratch[:n]
		return x, true
	}
	start := h.i
	end := token(h.b, start)
	if end == start {
		return 0, false
	}
	h.i = end
	return xxhash.Sum64(h.b[start:end]), true
}

// nested hashes an object or array, bounding the depth.
func (h *Hasher) nested(top bool, open byte) (uint64, bool) {
	if h.depth >= maxDepth {
		return 0, false
	}
	h.depth++
	var x uint64
	var ok bool
	if open == '{' {
		x, ok = h.object(top)
	} else {
		x, ok = h.array()
	}
	h.depth--
	return x, ok
}

func (h *Hasher) array() (uint64, bool) {
	b := h.b
	h.i++
	a := uint64(tagArray)
	n := uint64(0)
	if h.ws(); h.i < len(b) && b[h.i] == ']' {
		h.i++
		return fmix64(a), true
	}
	for {
		e, ok := h.value(false)
		if !ok {
			return 0, false
		}
		a = fmix64(a ^ e)
		n++
		h.ws()
		if h.i >= len(b) {
			return 0, false
		}
		switch b[h.i] {
		case ',':
			h.i++
		case ']':
			h.i++
			return fmix64(a + n*phi), true
		default:
			return 0, false
		}
	}
}

// object hashes the object at h.i ('{'): the sum of its members' hashes;
// at the top level, ignored keys are left out.
func (h *Hasher) object(top bool) (uint64, bool) {
	b := h.b
	h.i++
	var sum, n uint64
	if h.ws(); h.i < len(b) && b[h.i] == '}' {
		h.i++
		return fmix64(tagObject), true
	}
	for pos := 0; ; pos++ {
		i := h.i
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		ks := i + 1
		ke, kesc, ok := -1, false, false
		ignored := false
		if top && len(h.ignore) > 0 && pos < len(h.hints) && h.hints[pos].set {
			// The key at this position of the last object, if its bytes
			// and closing quote match (it had no escapes then).
			hint := &h.hints[pos]
			if e := ks + len(hint.key); e < len(b) && b[e] == '"' && string(b[ks:e]) == string(hint.key) {
				ke, ignored = e, hint.ignored
			}
		}
		if ke < 0 {
			if ke, kesc, ok = scanString(b, ks); !ok {
				return 0, false
			}
			if top && len(h.ignore) > 0 {
				key := b[ks:ke]
				if kesc {
					if h.str, ok = unescape(h.str[:0], key); !ok {
						return 0, false
					}
					key = h.str
				}
				ignored = h.ignore[string(key)]
				if !kesc && pos < maxHints {
					for len(h.hints) <= pos {
						h.hints = append(h.hints, keyHint{})
					}
					hint := &h.hints[pos]
					hint.key, hint.ignored, hint.set = append(hint.key[:0], key...), ignored, true
				}
			}
		}
		// Compact: `"key":` directly followed by the value.
		raw := !kesc
		i = ke + 1
		if i < len(b) && b[i] == ':' {
			i++
		} else {
			raw = false
			h.i = i
			if i = h.ws(); i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i++
		}
		h.i = i
		if i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			raw = false
			i = h.ws()
		}
		if i >= len(b) {
			return 0, false
		}
		if ignored {
			if _, ok := h.value(false); !ok {
				return 0, false
			}
		} else {
			m, ok := h.member(ks, ke, kesc, raw)
			if !ok {
				return 0, false
			}
			sum += m
			n++
		}
		h.ws()
		if h.i >= len(b) {
			return 0, false
		}
		switch b[h.i] {
		case ',':
			h.i++
			h.ws()
		case '}':
			h.i++
			return fmix64(sum + n*phi + tagObject), true
		default:
			return 0, false
		}
	}
}

// member hashes the member whose key is b[ks:ke] (escaped when kesc) and
// whose value starts at h.i: from the input when raw (the key had no
// escapes and nothing stood between it, the colon and the value) and the
// value is its own canonical encoding, else from the scratch buffer.
func (h *Hasher) member(ks, ke int, kesc, raw bool) (uint64, bool) {
	b := h.b
	start := h.i
	switch c := b[start]; {
	case c == '"':
		end, esc, ok := scanString(b, start+1)
		if !ok {
			return 0, false
		}
		h.i = end + 1
		if raw && !esc {
			return xxhash.Sum64(b[ks:h.i]), true
		}
		n := len(h.scratch)
		if !h.appendKey(b[ks:ke], kesc) {
			return 0, false
		}
		h.scratch = append(h.scratch, '"')
		if h.scratch, ok = unescape(h.scratch, b[start+1:end]); !ok {
			return 0, false
		}
		h.scratch = append(h.scratch, '"')
		x := xxhash.Sum64(h.scratch[n:])
		h.scratch = h.scratch[:n]
		return x, true
	case c == '{' || c == '[':
		v, ok := h.nested(false, c)
		if !ok {
			return 0, false
		}
		n := len(h.scratch)
		if !h.appendKey(b[ks:ke], kesc) {
			return 0, false
		}
		h.scratch = append(h.scratch, c)
		h.scratch = binary.LittleEndian.AppendUint64(h.scratch, v)
		x := xxhash.Sum64(h.scratch[n:])
		h.scratch = h.scratch[:n]
		return x, true
	default:
		end := token(b, start)
		if end == start {
			return 0, false
		}
		h.i = end
		if raw {
			return xxhash.Sum64(b[ks:end]), true
		}
		n := len(h.scratch)
		if !h.appendKey(b[ks:ke], kesc) {
			return 0, false
		}
		h.scratch = append(h.scratch, b[start:end]...)
		x := xxhash.Sum64(h.scratch[n:])
		h.scratch = h.scratch[:n]
		return x, true
	}
}

// appendKey appends K(key) for the key text k (escaped when esc).
func (h *Hasher) appendKey(k []byte, esc bool) bool {
	if !esc {
		h.scratch = append(h.scratch, k...)
		h.scratch = append(h.scratch, '"', ':')
		return true
	}
	n := len(h.scratch)
	var ok bool
	if h.scratch, ok = unescape(h.scratch, k); !ok {
		return false
	}
	key := h.scratch[n:]
	for _, c := range key {
		if c == '"' {
			// A key holding a quote: `""`, its length, the key.
			h.str = append(h.str[:0], key...)
			h.scratch = append(h.scratch[:n], '"', '"')
			h.scratch = binary.AppendUvarint(h.scratch, uint64(len(h.str)))
			h.scratch = append(h.scratch, h.str...)
			h.scratch = append(h.scratch, ':')
			return true
		}
	}
	h.scratch = append(h.scratch, '"', ':')
	return true
}

// token returns the end of the literal (number, true, false, null, or
// any other run of bytes, read leniently) at b[i:].
func token(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// SWAR constants: a byte lane of each word.
const (
	lo7        = 0x0101010101010101
	hi7        = 0x8080808080808080
	quoteLanes = 0x2222222222222222 // '"'
	bslshLanes = 0x5c5c5c5c5c5c5c5c // '\\'
)

// scanString scans a string body from b[i] (after its opening quote) and
// returns the index of the closing quote and whether the body holds
// escapes. Eight bytes are tested at a time for a quote or a backslash
// (a lane is zero when subtracting 0x01 borrows into its high bit;
// Hacker's Delight §6-1, "Find First 0-Byte").
func scanString(b []byte, i int) (end int, esc, ok bool) {
	for {
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ quoteLanes
			s := x ^ bslshLanes
			if m := (((q - lo7) &^ q) | ((s - lo7) &^ s)) & hi7; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return 0, false, false
		}
		if b[i] == '"' {
			return i, esc, true
		}
		// A backslash: skip the escape (its \uXXXX digits are checked
		// when the string is unescaped).
		esc = true
		if i += 2; i > len(b) {
			return 0, false, false
		}
	}
}

// unescape appends the text of a JSON string body with escapes (scanned
// by scanString) to dst: a surrogate pair becomes one rune, a lone
// surrogate U+FFFD; an unknown escape stands for its character.
func unescape(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return dst, false
		}
		switch e := s[i+1]; e {
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
			if i+6 > len(s) {
				return dst, false
			}
			r, ok := hex4(s[i+2 : i+6])
			if !ok {
				return dst, false
			}
			i += 6
			if utf16.IsSurrogate(r) && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				if r2, ok := hex4(s[i+2 : i+6]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
				}
			}
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			dst = append(dst, e)
		}
		i += 2
	}
	return dst, true
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, ch := range b {
		r <<= 4
		switch {
		case ch >= '0' && ch <= '9':
			r |= rune(ch - '0')
		case ch|0x20 >= 'a' && ch|0x20 <= 'f':
			r |= rune(ch|0x20-'a') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// maxDepth bounds the nesting the hasher canonicalizes (deeper payloads
// hash their raw bytes). It is above the JSON decoder's limit (fastjson's
// MaxDepth, 300), so every payload a source accepts is canonicalized.
const maxDepth = 1000
