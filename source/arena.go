package source

import (
	"slices"
	"unsafe"
)

// Arena sizes.
const (
	// MinArenaChunk is the size of an Arena's first chunk (64 KiB).
	MinArenaChunk = 64 << 10
	// MaxArenaChunk bounds the size an Arena doubles its chunks to
	// (8 MiB); a single larger request gets a chunk of its own size.
	MaxArenaChunk = 8 << 20
)

// Arena holds the bytes of a batch's strings and raw records: memory a
// source fills while it decodes into a Batch, released all at once by
// Reset.
//
// Memory handed out is never moved or overwritten before Reset: when the
// current chunk is full the arena moves on to its next chunk (allocating
// one when it has none large enough, twice the size of the last, from
// MinArenaChunk up to MaxArenaChunk). Reset keeps every chunk and starts
// filling them again from the first, so once an arena has held a batch it
// allocates nothing for batches of the same size. Each Batch owns its
// arena: several batches filled by successive calls to Next keep their
// contents until each is Reset.
//
// The zero Arena is empty and ready to use. An Arena is not safe for
// concurrent use while it is filled; what it handed out may be read from
// any goroutine until Reset.
type Arena struct {
	buf    []byte   // the chunk being filled: chunks[cur][:bytes used]
	chunks [][]byte // every chunk (len 0, full capacity); chunks[cur+1:] are free
	cur    int
}

// Alloc returns n bytes (contents unspecified) that stay valid until
// Reset. The slice's capacity is n: appending to it never writes into
// the arena. Alloc(0) returns nil.
func (a *Arena) Alloc(n int) []byte {
	if l := len(a.buf); n <= cap(a.buf)-l && n > 0 {
		a.buf = a.buf[:l+n]
		return a.buf[l : l+n : l+n]
	}
	if n <= 0 {
		return nil
	}
	return a.grow(n)
}

// grow moves to the next chunk that can hold n bytes, allocating it when
// needed, and returns n bytes from its start.
func (a *Arena) grow(n int) []byte {
	// The chunks after the current one are free (a Reset emptied them):
	// take the first large enough, dropping smaller ones, so that the
	// arena converges on chunks that fit its batches.
	next := a.cur + 1
	if len(a.chunks) == 0 {
		next = 0
	}
	for next < len(a.chunks) {
		if c := a.chunks[next]; n <= cap(c) {
			a.cur = next
			a.buf = c[:n]
			return a.buf[:n:n]
		}
		a.chunks = slices.Delete(a.chunks, next, next+1)
	}
	size := MinArenaChunk
	if k := len(a.chunks); k > 0 {
		size = min(max(2*cap(a.chunks[k-1]), MinArenaChunk), MaxArenaChunk)
	}
	c := make([]byte, 0, max(size, n))
	a.chunks = append(a.chunks, c)
	a.cur = len(a.chunks) - 1
	a.buf = c[:n]
	return a.buf[:n:n]
}

// Bytes returns a copy of b in the arena, valid until Reset (nil for an
// empty b). Its capacity is its length.
func (a *Arena) Bytes(b []byte) []byte {
	l := len(a.buf)
	if n := len(b); n <= cap(a.buf)-l && n > 0 {
		a.buf = append(a.buf, b...) // within capacity: in place
		return a.buf[l : l+n : l+n]
	}
	if len(b) == 0 {
		return nil
	}
	c := a.grow(len(b))
	copy(c, b)
	return c
}

// String returns a copy of b in the arena as a string, valid until Reset
// ("" for an empty b). The string must not be used after Reset.
func (a *Arena) String(b []byte) string {
	l := len(a.buf)
	if n := len(b); n <= cap(a.buf)-l && n > 0 {
		a.buf = append(a.buf, b...) // within capacity: in place
		return unsafe.String(&a.buf[l], n)
	}
	if len(b) == 0 {
		return ""
	}
	c := a.grow(len(b))
	copy(c, b)
	return unsafe.String(&c[0], len(c))
}

// Reset releases everything handed out: strings and slices from the
// arena must no longer be used. The chunks are kept for reuse.
func (a *Arena) Reset() {
	a.cur = 0
	if len(a.chunks) > 0 {
		a.buf = a.chunks[0][:0]
	}
}

// Size returns the bytes of the arena's chunks (their capacity), a
// measure of the memory it holds.
func (a *Arena) Size() int {
	n := 0
	for _, c := range a.chunks {
		n += cap(c)
	}
	return n
}
