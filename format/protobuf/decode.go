package protobuf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/quagmt/udecimal"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// maxDataDepth bounds nested messages and groups in one record's data.
const maxDataDepth = 100

// dec is the state of one Decode.
// It has the shape of format/avro's: the two must differ, each holding its own
// Program and reading its own encoding; what they share is format.Typed.
type dec struct {
	format.Typed // the row, the arena and the number scratch (the Program's), with the shared conversions
	p            *Program
	b            []byte
	base         int                 // offset of b[0] in the record, for messages
	err          *source.DecodeError // the first error; structural errors stop
	stop         bool                // a structural error: the bytes cannot be read on
	depth        int
}

// Decode fills r (shaped for the Reader's schema, all null) from one
// message's Protobuf binary encoding data; base is the offset of data[0]
// in the record's bytes (after the Confluent header and message indexes),
// for messages. Strings are copied into a.
//
// It returns nil or the first problem: Rule "decode" when data is not a
// message (a tag or length runs past the end, a field number 0, an
// unknown wire type, an unbalanced group, nesting deeper than 100) — no
// field is then usable; Rule "type" when a value cannot be held by its
// field (the other fields are still decoded); "encoding" for a string
// that is not valid UTF-8 or holds a NUL; "timestamp" when a field's
// parser refuses a string. Of a field written several times the last
// value wins, as in every Protobuf parser. It never panics and allocates
// nothing per record.
func (p *Program) Decode(data []byte, base int, r *row.Row, a *source.Arena) *source.DecodeError {
	d := dec{Typed: format.Begin(r, a, p.scratch, p.defaults), p: p, b: data, base: base}
	d.message(p.root, 0, len(data))
	return d.err
}

func (d *dec) fail(format string, args ...any) {
	if d.stop {
		return
	}
	d.stop = true
	d.err = &source.DecodeError{Rule: "decode", Reason: "Protobuf: " + fmt.Sprintf(format, args...)}
}

func (d *dec) fieldErr(e *source.DecodeError) {
	if d.err == nil {
		d.err = e
	}
}

// varint reads a base-128 varint of at most 10 bytes ending before end.
func (d *dec) varint(i, end int) (uint64, int, bool) {
	var u uint64
	start := i
	for n, shift := 0, uint(0); n < 10; n, shift = n+1, shift+7 {
		if i >= end {
			d.fail("truncated message: a varint at byte %d runs past the end", d.base+start)
			return 0, i, false
		}
		c := d.b[i]
		i++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if n == 9 && c > 1 {
				break
			}
			return u, i, true
		}
	}
	d.fail("a varint longer than 10 bytes at byte %d", d.base+start)
	return 0, i, false
}

// message reads the fields of m in d.b[i:end].
func (d *dec) message(m *msg, i, end int) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDataDepth {
		d.fail("messages nested deeper than %d levels at byte %d", maxDataDepth, d.base+i)
		return
	}
	for k := range m.zero {
		z := &m.zero[k]
		_ = d.R.Set(d.p.targets[z.tgt].F, z.v)
	}
	for i < end && !d.stop {
		at := i
		tag, j, ok := d.varint(i, end)
		if !ok {
			return
		}
		i = j
		number, wire := tag>>3, byte(tag&7)
		if number == 0 || number > math.MaxInt32>>2 {
			d.fail("field number %d at byte %d is out of range", number, d.base+at)
			return
		}
		if wire == wEnd {
			d.fail("an end-group tag at byte %d without its start", d.base+at)
			return
		}
		f := m.lookup(fieldNumber(number))
		if f == nil || (wire != f.wire && !(f.list && wire == wBytes)) {
			i = d.skip(wire, number, i, end, at)
			continue
		}
		i = d.field(f, wire, i, end, at)
	}
	if i > end && !d.stop {
		d.fail("truncated message: a field runs past byte %d", d.base+end)
	}
}

// skip passes over a value of wire type w that starts at i, returning
// where it ends.
func (d *dec) skip(w byte, number uint64, i, end, at int) int {
	switch w {
	case wVarint:
		_, j, _ := d.varint(i, end)
		return j
	case wFixed64:
		if end-i < 8 {
			d.fail("truncated message: a fixed64 at byte %d runs past the end", d.base+i)
			return end
		}
		return i + 8
	case wFixed32:
		if end-i < 4 {
			d.fail("truncated message: a fixed32 at byte %d runs past the end", d.base+i)
			return end
		}
		return i + 4
	case wBytes:
		_, s, e, ok := d.span(i, end)
		if !ok {
			return end
		}
		_ = s
		return e
	case wStart:
		d.depth++
		defer func() { d.depth-- }()
		if d.depth > maxDataDepth {
			d.fail("groups nested deeper than %d levels at byte %d", maxDataDepth, d.base+at)
			return end
		}
		for i < end && !d.stop {
			tat := i
			tag, j, ok := d.varint(i, end)
			if !ok {
				return end
			}
			n, wt := tag>>3, byte(tag&7)
			if wt == wEnd {
				if n != number {
					d.fail("end-group tag of field %d at byte %d closes the group of field %d", n, d.base+tat, number)
				}
				return j
			}
			if n == 0 {
				d.fail("field number 0 at byte %d", d.base+tat)
				return end
			}
			i = d.skip(wt, n, j, end, tat)
		}
		d.fail("truncated message: the group of field %d at byte %d has no end", number, d.base+at)
		return end
	}
	d.fail("unknown wire type %d at byte %d", w, d.base+at)
	return end
}

// span reads a length prefix at i and returns the length, the value's
// start and end.
func (d *dec) span(i, end int) (int, int, int, bool) {
	at := i
	n, j, ok := d.varint(i, end)
	if !ok {
		return 0, 0, 0, false
	}
	if n > uint64(end-j) {
		d.fail("truncated message: a length of %d bytes at byte %d runs past the end (%d bytes left)", n, d.base+at, end-j)
		return 0, 0, 0, false
	}
	return int(n), j, j + int(n), true
}

// field reads one value of field f (wire type wire) at i.
func (d *dec) field(f *field, wire byte, i, end, at int) int {
	if f.list {
		j := d.skip(wire, uint64(f.number), i, end, at)
		if f.tgt >= 0 && !d.stop {
			d.bad(f, "")
		}
		return j
	}
	switch f.num {
	case nSigned, nZigzag, nUnsigned, nBool, nEnum:
		u, j, ok := d.varint(i, end)
		if !ok {
			return end
		}
		if f.tgt >= 0 {
			d.setVarint(f, u)
		}
		return j
	case nFixed32, nSfixed32, nFloat:
		if end-i < 4 {
			d.fail("truncated message: a fixed32 at byte %d runs past the end", d.base+i)
			return end
		}
		u := binary.LittleEndian.Uint32(d.b[i:])
		if f.tgt >= 0 {
			switch f.num {
			case nFixed32:
				d.setInt(f, int64(u), false)
			case nSfixed32:
				d.setInt(f, int64(int32(u)), false)
			default:
				d.setFloat(f, float64(math.Float32frombits(u)), 32)
			}
		}
		return i + 4
	case nFixed64, nSfixed64, nDouble:
		if end-i < 8 {
			d.fail("truncated message: a fixed64 at byte %d runs past the end", d.base+i)
			return end
		}
		u := binary.LittleEndian.Uint64(d.b[i:])
		if f.tgt >= 0 {
			switch f.num {
			case nFixed64:
				d.setInt(f, int64(u), u > math.MaxInt64)
			case nSfixed64:
				d.setInt(f, int64(u), false)
			default:
				d.setFloat(f, math.Float64frombits(u), 64)
			}
		}
		return i + 8
	}
	// Length-delimited: string, bytes, a message.
	if wire == wStart { // a group on the way to nested targets
		if f.sub != nil && f.tgt < 0 {
			return d.group(f, i, end, at)
		}
		return d.skip(wire, uint64(f.number), i, end, at)
	}
	_, s, e, ok := d.span(i, end)
	if !ok {
		return end
	}
	switch {
	case f.tgt < 0 && f.sub != nil:
		d.message(f.sub, s, e)
	case f.tgt >= 0:
		switch f.cv {
		case format.ConvTimestamp:
			d.timestamp(f, s, e)
		case format.ConvDecimal, format.ConvDecimalString:
			d.decimal(f, s, e)
		case format.ConvBad:
			d.bad(f, "")
		default:
			d.setBytes(f, d.b[s:e], s)
		}
	}
	return e
}

// group reads a group's fields up to its end tag.
func (d *dec) group(f *field, i, end, at int) int {
	// Find the end tag first (skip checks the nesting), then read the
	// fields before it.
	j := d.skip(wStart, uint64(f.number), i, end, at)
	if d.stop {
		return end
	}
	// The end tag is the last varint before j: its length is that of the
	// tag (number<<3|4).
	n := 1
	for t := uint64(f.number)<<3 | wEnd; t >= 0x80; t >>= 7 {
		n++
	}
	d.message(f.sub, i, j-n)
	return j
}

func (d *dec) target(f *field) *target { return &d.p.targets[f.tgt] }

func (d *dec) bad(f *field, why string) {
	t := d.target(f)
	reason := "want " + t.F.Kind.String() + ", got " + f.what
	if why != "" {
		reason += " (" + why + ")"
	}
	d.fieldErr(&source.DecodeError{Field: t.F.Name, Rule: "type", Reason: reason})
}

func (d *dec) setVarint(f *field, u uint64) {
	switch f.num {
	case nBool:
		if d.SetBool(d.target(f), f.cv, u != 0) {
			d.bad(f, "")
		}
	case nEnum:
		t := d.target(f)
		if f.cv != format.ConvEnumString {
			d.bad(f, "")
			return
		}
		n := int32(u)
		if v := f.enum.ByNumber(fieldNumberEnum(n)); v != nil {
			d.R.S[t.F.Slot] = string(v.Name()) // the descriptor's memory: lives with the Program
		} else {
			d.R.S[t.F.Slot] = d.A.String(strconv.AppendInt(d.Num, int64(n), 10))
		}
		d.R.SetValid(t.F.Index)
	case nZigzag:
		v := int64(u>>1) ^ -int64(u&1)
		if f.is32 {
			v = int64(int32(v))
		}
		d.setInt(f, v, false)
	case nUnsigned:
		if f.is32 {
			d.setInt(f, int64(uint32(u)), false)
		} else {
			d.setInt(f, int64(u), u > math.MaxInt64)
		}
	default: // nSigned
		v := int64(u)
		if f.is32 {
			v = int64(int32(u))
		}
		d.setInt(f, v, false)
	}
}

// setInt stores an integer; big reports a uint64 beyond int64.
func (d *dec) setInt(f *field, v int64, big bool) {
	t := d.target(f)
	fl := &t.F
	if big {
		u := uint64(v)
		switch f.cv {
		case format.ConvIntDecimal:
			dv, err := udecimal.NewFromHiLo(false, 0, u, 0)
			if err != nil {
				d.bad(f, err.Error())
				return
			}
			d.R.D[fl.Slot] = dv
		case format.ConvIntString:
			d.R.S[fl.Slot] = d.A.String(strconv.AppendUint(d.Num, u, 10))
		default:
			d.bad(f, strconv.FormatUint(u, 10)+" is out of int64 range")
			return
		}
		d.R.SetValid(fl.Index)
		return
	}
	d.done(f, d.SetInt(t, f.cv, v, f.what))
}

func (d *dec) setFloat(f *field, v float64, size int) {
	d.done(f, d.SetFloat(d.target(f), f.cv, v, size))
}

// done reports a shared conversion's outcome (format.Outcome) for f.
func (d *dec) done(f *field, out format.Outcome) {
	if out.Err != nil || out.Bad {
		d.report(f, out)
	}
}

func (d *dec) report(f *field, out format.Outcome) {
	if out.Err != nil {
		d.fieldErr(out.Err)
		return
	}
	d.bad(f, out.Why)
}

func (d *dec) setBytes(f *field, b []byte, at int) {
	d.done(f, d.SetString(d.target(f), f.cv, b, d.base+at, "Protobuf string"))
}

// timestamp reads a google.protobuf.Timestamp {int64 seconds = 1; int32
// nanos = 2} in d.b[s:e]; nanos are floored to ms.
func (d *dec) timestamp(f *field, s, e int) {
	var sec, nanos int64
	for i := s; i < e && !d.stop; {
		at := i
		tag, j, ok := d.varint(i, e)
		if !ok {
			return
		}
		switch tag {
		case 1<<3 | wVarint:
			u, k, ok := d.varint(j, e)
			if !ok {
				return
			}
			sec, i = int64(u), k
		case 2<<3 | wVarint:
			u, k, ok := d.varint(j, e)
			if !ok {
				return
			}
			nanos, i = int64(int32(u)), k
		default:
			if tag>>3 == 0 {
				d.fail("field number 0 at byte %d", d.base+at)
				return
			}
			i = d.skip(byte(tag&7), tag>>3, j, e, at)
		}
	}
	if d.stop {
		return
	}
	// google.protobuf.Timestamp's own range: 0001-01-01 to 9999-12-31,
	// nanos in [0, 1e9).
	if sec < -62135596800 || sec > 253402300799 || nanos < 0 || nanos >= 1e9 {
		d.bad(f, fmt.Sprintf("seconds %d, nanos %d is outside google.protobuf.Timestamp's range", sec, nanos))
		return
	}
	t := d.target(f)
	d.R.I[t.F.Slot] = sec*1000 + nanos/1_000_000
	d.R.SetValid(t.F.Index)
}

// decimal reads a confluent.type.Decimal {bytes value = 1; uint32
// precision = 2; int32 scale = 3}: value is the unscaled two's-complement
// big-endian integer, as in Avro.
func (d *dec) decimal(f *field, s, e int) {
	var val []byte
	var scale int64
	for i := s; i < e && !d.stop; {
		at := i
		tag, j, ok := d.varint(i, e)
		if !ok {
			return
		}
		switch tag {
		case 1<<3 | wBytes:
			_, vs, ve, ok := d.span(j, e)
			if !ok {
				return
			}
			val, i = d.b[vs:ve], ve
		case 3<<3 | wVarint:
			u, k, ok := d.varint(j, e)
			if !ok {
				return
			}
			scale, i = int64(int32(u)), k
		default:
			if tag>>3 == 0 {
				d.fail("field number 0 at byte %d", d.base+at)
				return
			}
			i = d.skip(byte(tag&7), tag>>3, j, e, at)
		}
	}
	if d.stop {
		return
	}
	if scale < 0 || scale > row.MaxDecimalScale {
		d.bad(f, fmt.Sprintf("scale %d: want 0 to %d", scale, row.MaxDecimalScale))
		return
	}
	if len(val) == 0 {
		val = []byte{0} // proto3: an absent value is 0
	}
	v, why := format.TwosComplementDecimal(val, uint8(scale))
	if why != "" {
		d.bad(f, why)
		return
	}
	t := d.target(f)
	if f.cv == format.ConvDecimal {
		d.R.D[t.F.Slot] = v
	} else {
		d.R.S[t.F.Slot] = d.A.String(row.FormatDecimal(d.Num, v))
	}
	d.R.SetValid(t.F.Index)
}

func fieldNumber(n uint64) protoreflect.FieldNumber { return protoreflect.FieldNumber(n) }

func fieldNumberEnum(n int32) protoreflect.EnumNumber { return protoreflect.EnumNumber(n) }
