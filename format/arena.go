package format

import "unsafe"

// minChunk is the size of an arena's first chunk.
const minChunk = 4 << 10

// arena holds the bytes of strings handed out since the last reset.
//
// Bytes handed out are never overwritten before reset: when the current
// chunk is full, a new chunk (twice as large) is allocated and the old one
// stays alive for as long as strings point into it. After reset the
// current chunk is reused from its start, so once a chunk holds everything
// decoded between two resets, the arena allocates nothing.
type arena struct {
	buf []byte
}

// str copies b into the arena and returns a string view of the copy.
func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(a.buf)+len(b) > cap(a.buf) {
		n := 2 * cap(a.buf)
		if n < minChunk {
			n = minChunk
		}
		if n < len(b) {
			n = len(b)
		}
		a.buf = make([]byte, 0, n)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}

// reset makes the arena's memory reusable: strings handed out before are
// invalid afterwards.
func (a *arena) reset() { a.buf = a.buf[:0] }
