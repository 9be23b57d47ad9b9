package format

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidemark/tidemark/source"
)

// The encoding rule. Every decoded string must be text that every sink
// can store as it is: valid UTF-8 without NUL characters. PostgreSQL's
// text type cannot hold U+0000 (every commit of a row holding one fails),
// and replacing invalid bytes with U+FFFD would silently merge keys that
// differ ("\xff x" and "\xfe x"). A record breaking the rule is
// quarantined (Rule "encoding") before it reaches any state.

// Text reports whether b is valid UTF-8 without NUL characters. ASCII
// text is checked eight bytes at a time (a lane is zero or has its high
// bit set when ((x − 0x01…) | x) & 0x80… is set in it; a borrow comes
// only from a zero lane, so the test is exact); other text by
// utf8.Valid.
func Text(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if ((x-lo7)|x)&hi7 != 0 {
			return bytes.IndexByte(b[i:], 0) < 0 && utf8.Valid(b[i:])
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == 0 || c >= utf8.RuneSelf {
			return bytes.IndexByte(b[i:], 0) < 0 && utf8.Valid(b[i:])
		}
	}
	return true
}

// EncodingError returns the "encoding" error of field, whose text starts
// at raw[from:] in the record's bytes raw: the first NUL character or
// invalid UTF-8 sequence at or after from, named with its byte offset in
// raw. For CSV and for JSON strings without escapes the first such
// sequence in the raw bytes is the first one of the field's text (quotes
// and escapes are ASCII, they neither create nor hide one).
func EncodingError(field string, raw []byte, from int) *source.DecodeError {
	at, nul := firstBadText(raw, from)
	return encodingError(field, at, nul)
}

func encodingError(field string, at int, nul bool) *source.DecodeError {
	if nul {
		return &source.DecodeError{Field: field, Rule: "encoding", Reason: "NUL character at byte " + strconv.Itoa(at) + " (PostgreSQL text cannot store it)"}
	}
	return &source.DecodeError{Field: field, Rule: "encoding", Reason: "invalid UTF-8 at byte " + strconv.Itoa(at)}
}

// firstBadText returns the offset of the first NUL byte or invalid UTF-8
// sequence in b at or after from, and whether it is a NUL (len(b) when b
// holds neither).
func firstBadText(b []byte, from int) (at int, nul bool) {
	for i := from; i < len(b); {
		c := b[i]
		if c == 0 {
			return i, true
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i, false
		}
		i += n
	}
	return len(b), false
}

// badText is what breaks the encoding rule in a JSON string.
type badText uint8

const (
	textOK        badText = iota
	textNUL               // a NUL character, raw or \u0000
	textUTF8              // an invalid UTF-8 byte
	textSurrogate         // a \uD800–\uDFFF escape that is not half of a pair
)

// unescapeText appends the text of a JSON string body (already checked by
// scanString) with its escapes decoded, as appendUnescaped does, unless
// it breaks the encoding rule: then it returns the index in s where the
// offending sequence starts (its backslash for an escape) and what it is,
// and out is unusable. bad is −1 for valid text.
func unescapeText(dst, s []byte) (out []byte, bad int, what badText) {
	return unescape(dst, s, true)
}

// unescape is unescapeText when strict, and appendUnescaped (which never
// reports) when not: a NUL stays, a lone surrogate or an invalid UTF-8 byte
// becomes U+FFFD.
func unescape(dst, s []byte, strict bool) (out []byte, bad int, what badText) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
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
				r := hex4(s[i+2 : i+6])
				switch {
				case r == 0 && strict:
					return dst, i, textNUL
				case utf16.IsSurrogate(r):
					if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						if r2 := utf16.DecodeRune(r, hex4(s[i+8:i+12])); r2 != utf8.RuneError {
							dst = utf8.AppendRune(dst, r2)
							i += 12
							continue
						}
					}
					if strict {
						return dst, i, textSurrogate
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				i += 6
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		case c == 0 && strict:
			return dst, i, textNUL
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				if strict {
					return dst, i, textUTF8
				}
				dst = utf8.AppendRune(dst, r)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst, -1, textOK
}

// jsonEncodingError is the "encoding" error of field: what was found at
// byte at of the line (−1: the value could not be located).
func jsonEncodingError(field string, at int, what badText, esc []byte) *source.DecodeError {
	where := "at byte " + strconv.Itoa(at)
	switch what {
	case textNUL:
		return &source.DecodeError{Field: field, Rule: "encoding", Reason: "NUL character " + where + " (PostgreSQL text cannot store it)"}
	case textSurrogate:
		return &source.DecodeError{Field: field, Rule: "encoding", Reason: "lone surrogate " + string(esc) + " " + where + " (not a character: UTF-8 cannot hold it)"}
	}
	return &source.DecodeError{Field: field, Rule: "encoding", Reason: "invalid UTF-8 " + where}
}
