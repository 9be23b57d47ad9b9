package format

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/tidemark/tidemark/source"
)

// The encoding rule. Every decoded string must be text that every sink
// can store as it is: valid UTF-8 without NUL characters. PostgreSQL's
// text type cannot hold U+0000 (every commit of a row holding one fails),
// and replacing invalid bytes with U+FFFD would silently merge keys that
// differ ("\xff x" and "\xfe x"). A record breaking the rule is
// quarantined (Rule "encoding") before it reaches any state.

// Text reports whether b is valid UTF-8 without NUL characters.
func Text(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
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
