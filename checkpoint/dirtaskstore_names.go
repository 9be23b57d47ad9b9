package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// maxElement is the longest file name the common file systems keep
// (NAME_MAX on Linux, the BSDs and macOS; NFS and SMB servers follow
// theirs): an escaped name longer than this is shortened (EscapeName).
const maxElement = 255

// shortMark separates a shortened name's kept prefix from its hash: a
// byte EscapeName never writes otherwise, so a shortened name is never
// an escaped one. shortHash is the length of the hash in hex digits (128
// bits of SHA-256: two names never meet by chance), shortKeep the
// longest prefix kept.
const (
	shortMark = '~'
	shortHash = 32
	shortKeep = maxElement - 1 - shortHash
)

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
// escaping is reversible (UnescapeName).
//
// An escaped form longer than 255 bytes (a long name, or one of non-ASCII
// characters: each of their bytes takes three) would not be a file name
// on the common file systems: it is shortened to its first 222 bytes (cut
// before an escape, never inside one), '~' and the first 128 bits of the
// SHA-256 of the whole name in lower-case hex — at most 255 bytes, still
// one safe path element, and distinct for distinct names. A shortened
// name cannot be reversed from the file name alone: the store keeps the
// whole name in the object's file (shortHeader), where List reads it.
// It returns an error only for an empty name.
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
	e := b.String()
	if len(e) <= maxElement {
		return e, nil
	}
	cut := shortKeep
	if i := strings.LastIndexByte(e[:cut], '%'); i > cut-3 {
		cut = i // not inside an escape
	}
	sum := sha256.Sum256([]byte(s))
	return e[:cut] + string(shortMark) + hex.EncodeToString(sum[:shortHash/2]), nil
}

// shortened reports whether e is a shortened name (EscapeName's form of a
// name too long to escape whole).
func shortened(e string) bool { return strings.IndexByte(e, shortMark) >= 0 }

// The file of an object whose name is shortened starts with the whole
// name: "tmname1" NUL, the name's length (4 bytes, big-endian) and its
// bytes; the object's data follow. Get skips the header (and checks it:
// the file holds that name's object), List reads the name from it.
const shortMagic = "tmname1\x00"

// maxShortName bounds the name a header may hold (1 MiB).
const maxShortName = 1 << 20

// shortHeader returns the header of name's file.
func shortHeader(name string) []byte {
	h := make([]byte, 0, len(shortMagic)+4+len(name))
	h = append(h, shortMagic...)
	h = binary.BigEndian.AppendUint32(h, uint32(len(name)))
	return append(h, name...)
}

// errNoHeader reports a file under a shortened name without a valid
// header (not written by the store).
var errNoHeader = errors.New("no object header")

// parseShortLen returns the length of the name a header holds, from its
// first 12 bytes.
func parseShortLen(b []byte) (int, error) {
	if len(b) < len(shortMagic)+4 || string(b[:len(shortMagic)]) != shortMagic {
		return 0, errNoHeader
	}
	n := binary.BigEndian.Uint32(b[len(shortMagic):])
	if n == 0 || n > maxShortName {
		return 0, errNoHeader
	}
	return int(n), nil
}

// UnescapeName reverses EscapeName. It returns false for a string
// EscapeName does not produce (a temporary file, lower-case hex digits,
// an escaped byte that would stand for itself, a file someone else put
// there) and for a shortened name (whose name only its file holds), so
// that listing a directory sees only the objects written through the
// store.
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
