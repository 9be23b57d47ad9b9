// Package state encodes the state of a running pipeline for checkpoints:
// a compact, versioned binary format written by Encoder and read back by
// Decoder. Every part of the engine that holds state (operators, aggregate
// columns, watermark trackers, dedup tables, sources, sinks) appends itself
// to an Encoder in a fixed field order and restores itself from a Decoder
// in the same order.
//
// In the data flow it is at the bottom, beside row: every part that holds
// state, from the operators and dedup up to the sources and sinks, encodes
// itself with it into a checkpoint's sections, which package checkpoint
// stores. It imports only row.
//
// Encoding: unsigned integers as LEB128 varints (encoding/binary's
// Uvarint), signed ones zig-zag encoded (binary.AppendVarint), byte strings
// and strings length-prefixed, decimals as their exact text, booleans as
// one byte. There are no field tags: the checkpoint's format version and
// the pipeline's plan fingerprint (checkpoint package) decide whether a
// snapshot can be read at all, and a section's own version byte lets a
// component evolve.
//
// A Decoder keeps the first error it meets (truncated input, an
// out-of-range length or value) and returns zero values after it, so a
// restore function can read a whole section and check Err once; errors
// name the byte offset and what was being read.
package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tidemark/tidemark/row"
)

// Encoder appends encoded values to a byte slice. The zero value is ready
// to use.
type Encoder struct {
	b   []byte
	tmp []byte
}

// NewEncoder returns an encoder appending to buf[:0].
func NewEncoder(buf []byte) *Encoder { return &Encoder{b: buf[:0]} }

// Bytes returns the encoded bytes (valid until the next append).
func (e *Encoder) Bytes() []byte { return e.b }

// Reset empties the encoder, keeping its buffer for the next encoding (the
// slice Bytes returned is overwritten).
func (e *Encoder) Reset() { e.b = e.b[:0] }

// Grow makes room for n more bytes, so that appending them does not
// reallocate (a section's writer that knows its size grows once).
func (e *Encoder) Grow(n int) { e.b = slices.Grow(e.b, n) }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.b) }

// Uint appends an unsigned varint.
func (e *Encoder) Uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// Int appends a zig-zag signed varint.
func (e *Encoder) Int(v int64) { e.b = binary.AppendVarint(e.b, v) }

// Bool appends one byte, 1 for true.
func (e *Encoder) Bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// Byte appends one raw byte (a tag or a small enum).
func (e *Encoder) Byte(v byte) { e.b = append(e.b, v) }

// Bytes8 appends a length-prefixed byte string.
func (e *Encoder) Bytes8(v []byte) {
	e.Uint(uint64(len(v)))
	e.b = append(e.b, v...)
}

// String appends a length-prefixed string.
func (e *Encoder) String(v string) {
	e.Uint(uint64(len(v)))
	e.b = append(e.b, v...)
}

// Fixed64 appends v as 8 little-endian bytes (hashes, which varints would
// make longer).
func (e *Encoder) Fixed64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

// Fixed32 appends v as 4 little-endian bytes.
func (e *Encoder) Fixed32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }

// Decimal appends an exact decimal as its text (row.FormatDecimal, which
// keeps the scale: 1.50 stays 1.50).
func (e *Encoder) Decimal(d row.Decimal) {
	e.tmp = row.FormatDecimal(e.tmp[:0], d)
	e.Bytes8(e.tmp)
}

// Value appends a typed value: its kind byte, then the payload of that
// kind (nothing for null).
func (e *Encoder) Value(v row.Value) {
	if v.IsNull() {
		e.Byte(byte(row.KindNull))
		return
	}
	e.Byte(byte(v.Kind))
	switch v.Kind {
	case row.KindString:
		e.String(v.S)
	case row.KindDecimal:
		e.Decimal(v.D)
	default:
		e.Int(v.I)
	}
}

// Decoder reads values an Encoder wrote. Errors are sticky: after the
// first, every read returns a zero value and Err reports it.
type Decoder struct {
	b   []byte
	off int
	err error
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Fail records err (with the current offset) unless an error is already
// recorded. Restore functions use it for semantic errors (an index out of
// range, an unknown tag).
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("state: offset %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

// ErrTruncated is wrapped by the error of a read past the end.
var ErrTruncated = errors.New("truncated state")

func (d *Decoder) truncated(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("state: offset %d: reading %s: %w", d.off, what, ErrTruncated)
	}
}

// Uint reads an unsigned varint.
func (d *Decoder) Uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.truncated("an unsigned varint")
		return 0
	}
	d.off += n
	return v
}

// Int reads a zig-zag signed varint.
func (d *Decoder) Int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.truncated("a signed varint")
		return 0
	}
	d.off += n
	return v
}

// Len reads a count or length and checks it against max (and against the
// bytes left when each element takes at least minBytes bytes), so that a
// corrupt length cannot make a restore allocate without bound.
func (d *Decoder) Len(max int, minBytes int) int {
	v := d.Uint()
	if d.err != nil {
		return 0
	}
	if v > uint64(max) || v > math.MaxInt32 {
		d.Fail("length %d is above the limit %d", v, max)
		return 0
	}
	if minBytes > 0 && v*uint64(minBytes) > uint64(d.Remaining()) {
		d.truncated(fmt.Sprintf("%d elements", v))
		return 0
	}
	return int(v)
}

// Bool reads one byte: 0 false, 1 true, anything else an error.
func (d *Decoder) Bool() bool {
	switch d.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.Fail("bad bool byte")
	return false
}

// Byte reads one raw byte.
func (d *Decoder) Byte() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.truncated("a byte")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

// Bytes8 reads a length-prefixed byte string. The result aliases the
// decoder's input: copy it to keep it beyond the input's life.
func (d *Decoder) Bytes8() []byte {
	n := d.Len(math.MaxInt32, 1)
	if d.err != nil {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

// String reads a length-prefixed string (a copy).
func (d *Decoder) String() string { return string(d.Bytes8()) }

// Fixed64 reads 8 little-endian bytes.
func (d *Decoder) Fixed64() uint64 {
	if d.err != nil {
		return 0
	}
	if d.Remaining() < 8 {
		d.truncated("8 bytes")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// Fixed32 reads 4 little-endian bytes.
func (d *Decoder) Fixed32() uint32 {
	if d.err != nil {
		return 0
	}
	if d.Remaining() < 4 {
		d.truncated("4 bytes")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

// Decimal reads an exact decimal.
func (d *Decoder) Decimal() row.Decimal {
	text := d.Bytes8()
	if d.err != nil {
		return row.Decimal{}
	}
	v, err := row.ParseDecimal(text)
	if err != nil {
		d.Fail("decimal %q: %v", text, err)
	}
	return v
}

// Value reads a typed value.
func (d *Decoder) Value() row.Value {
	k := row.Kind(d.Byte())
	if d.err != nil {
		return row.Null
	}
	switch k {
	case row.KindNull:
		return row.Null
	case row.KindString:
		return row.Value{Kind: k, S: d.String()}
	case row.KindDecimal:
		return row.Value{Kind: k, D: d.Decimal()}
	case row.KindBool, row.KindInt, row.KindTime:
		return row.Value{Kind: k, I: d.Int()}
	}
	d.Fail("unknown value kind %d", k)
	return row.Null
}

// Section reads a section version byte and fails unless it is one of the
// supported versions; it returns the version read.
func (d *Decoder) Section(name string, supported ...byte) byte {
	v := d.Byte()
	if d.err != nil {
		return 0
	}
	for _, s := range supported {
		if v == s {
			return v
		}
	}
	d.Fail("%s: section version %d is not supported (this build reads %v)", name, v, supported)
	return 0
}
