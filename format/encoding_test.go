package format

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// TestTextMatchesNaive checks Text's eight-bytes-at-a-time scan against
// the plain definition on every slice of inputs mixing NUL, ASCII,
// valid and invalid UTF-8.
func TestTextMatchesNaive(t *testing.T) {
	naive := func(b []byte) bool { return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b) }
	rng := uint64(7)
	alphabet := [][]byte{{'a'}, {0}, {0x01}, {0x7f}, {0x80}, {0xff}, []byte("é"), []byte("€"), []byte("😀"), {0xe2, 0x82}, {' '}}
	for n := 0; n < 5000; n++ {
		var b []byte
		for range n % 30 {
			rng = rng*6364136223846793005 + 1442695040888963407
			if rng>>61 < 6 {
				b = append(b, 'x')
			} else {
				b = append(b, alphabet[(rng>>33)%uint64(len(alphabet))]...)
			}
		}
		for i := 0; i <= len(b); i++ {
			if got, want := Text(b[i:]), naive(b[i:]); got != want {
				t.Fatalf("Text(%q) = %v, want %v", b[i:], got, want)
			}
		}
	}
}
