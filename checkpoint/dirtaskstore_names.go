package checkpoint

import (
	"fmt"
	"strings"
)

// maxElement is the longest file name the common file systems keep
// (NAME_MAX on Linux, the BSDs and macOS; NFS and SMB servers follow
// theirs): an escaped name longer than this is refused, not truncated.
const maxElement = 255

const hexDigits = "0123456789ABCDEF"

// EscapeName returns s as one path element, so that any task or object
// name is a safe file name and two names never map to one file:
//
//   - the bytes a–z, 0–9, '-', '_' and '.' stay as they are, except a '.'
//     that starts the name;
//   - every other byte (upper-case letters, '/', '%', ' ', NUL, the bytes
//     of non-ASCII characters, …) becomes '%' and its two upper-case hex
//     digits: "Stage/orders/3" → "%53tage%2Forders%2F3", ".." → "%2E.".
//
// Hence an escaped name never starts with '.' (temporary files do, and
// ".", ".." cannot occur), holds no separator, and two distinct names
// stay distinct on a case-insensitive file system (SMB shares, macOS):
// letters that differ only in case never both appear literally. The
// escaping is reversible (UnescapeName). It returns an error for an
// empty name and for one whose escaped form is longer than 255 bytes.
func EscapeName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty name")
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if literal(c) && (c != '.' || i > 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	if b.Len() > maxElement {
		return "", fmt.Errorf("name %q is %d bytes escaped as a file name (%d at most)", s, b.Len(), maxElement)
	}
	return b.String(), nil
}

// UnescapeName reverses EscapeName. It returns false for a string
// EscapeName does not produce (a temporary file, lower-case hex digits,
// an escaped byte that would stand for itself, a file someone else put
// there), so that listing a directory sees only the objects written
// through the store.
func UnescapeName(e string) (string, bool) {
	if e == "" || e[0] == '.' {
		return "", false
	}
	var b []byte
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c != '%' {
			if !literal(c) {
				return "", false
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(e) {
			return "", false
		}
		hi, lo := unhex(e[i+1]), unhex(e[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		d := byte(hi<<4 | lo)
		if literal(d) && (d != '.' || i > 0) {
			return "", false // not EscapeName's form: it would be literal
		}
		b = append(b, d)
		i += 2
	}
	return string(b), true
}

// literal reports whether EscapeName keeps byte c as it is (a '.' only
// after the first byte).
func literal(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// unhex returns the value of an upper-case hex digit, -1 for another byte.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
