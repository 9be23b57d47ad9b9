package pgcdc

import (
	"strconv"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string (RFC 8259): quotes,
// backslashes and control characters escaped, invalid UTF-8 as U+FFFD.
// Kept apart from changelog.AppendJSONString, which writes \ufffd and
// \u2028/\u2029 as escapes: this text is a change record's bytes, which
// replays after a restore (and dedup's payload hashes) must see unchanged.
func appendJSONString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// jsonNumber reports whether b is a JSON number literal.
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
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
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	return i == len(b)
}

// appendValueJSON appends a column's text as JSON: a number as it is, a
// boolean as true or false, anything else as a string.
func appendValueJSON(dst []byte, c *fieldConv, b []byte) []byte {
	switch {
	case c != nil && c.conv == convNumber && jsonNumber(b):
		return append(dst, b...)
	case c != nil && c.conv == convBool && len(b) == 1 && (b[0] == 't' || b[0] == 'f'):
		if b[0] == 't' {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	return appendJSONString(dst, b)
}

// appendLSN appends an LSN as PostgreSQL writes it: "16/B374D848".
func appendLSN(dst []byte, lsn uint64) []byte {
	start := len(dst)
	dst = strconv.AppendUint(dst, lsn>>32, 16)
	dst = append(dst, '/')
	dst = strconv.AppendUint(dst, lsn&0xffffffff, 16)
	for i := start; i < len(dst); i++ {
		if c := dst[i]; c >= 'a' && c <= 'f' {
			dst[i] = c - 'a' + 'A'
		}
	}
	return dst
}

// FormatLSN writes an LSN as PostgreSQL does: "16/B374D848".
func FormatLSN(lsn uint64) string { return string(appendLSN(nil, lsn)) }
