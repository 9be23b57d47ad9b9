package file

// minChunk is the size of a byteArena's first chunk.
const minChunk = 64 << 10

// byteArena holds copies of records' raw bytes until reset. Bytes handed
// out are never overwritten before reset: a full chunk is replaced by a
// new one twice as large, and the old chunk lives on while slices point
// into it. After reset the current chunk is reused from its start.
type byteArena struct {
	buf []byte
}

// copy returns a copy of b that stays valid until reset.
func (a *byteArena) copy(b []byte) []byte {
	if len(a.buf)+len(b) > cap(a.buf) {
		n := max(2*cap(a.buf), minChunk, len(b))
		a.buf = make([]byte, 0, n)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// reset makes the arena's memory reusable.
func (a *byteArena) reset() { a.buf = a.buf[:0] }
