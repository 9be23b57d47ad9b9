package avro

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// maxDataDepth bounds the nesting a record's data reaches through
// recursive types (a linked list of records): deeper data is a decode
// error rather than a deep recursion.
const maxDataDepth = 256

// msPerDay is the length of an Avro date's day.
const msPerDay = 86_400_000

// dec is the state of one Decode.
// It has the shape of format/protobuf's: the two must differ, each holding its own
// Program and reading its own encoding; what they share is format.Typed.
type dec struct {
	format.Typed // the row, the arena and the number scratch (the Program's), with the shared conversions
	p            *Program
	b            []byte
	i            int
	base         int                 // offset of b[0] in the record, for messages
	err          *source.DecodeError // the first error; structural errors stop
	stop         bool                // a structural error: the bytes cannot be read on
	depth        int
}

// Decode fills r (shaped for the Reader's schema, all null) from one
// record's Avro binary encoding data. base is the offset of data[0] in
// the record's bytes (5 after a Confluent header), so that messages name
// offsets in the bytes a user sees. Strings are copied into a.
//
// It returns nil or the first problem: Rule "decode" when data is not a
// record of the writer schema (truncated, a union index out of range, a
// length or count that runs past the end, bytes left over, nesting deeper
// than 256) — no field is then usable; Rule "type" when a value cannot
// be held by its field (the other fields are still decoded); "encoding"
// for a string that is not valid UTF-8 or holds a NUL; "timestamp" when a
// field's parser refuses a string. It never panics and allocates nothing
// for records whose decimals fit in 128 bits.
func (p *Program) Decode(data []byte, base int, r *row.Row, a *source.Arena) *source.DecodeError {
	d := dec{Typed: format.Begin(r, a, p.scratch, p.defaults), p: p, b: data, base: base}
	d.run(p.root)
	if !d.stop && d.i != len(d.b) {
		d.fail("%d bytes after the end of the record (at byte %d): not a record of this schema", len(d.b)-d.i, d.base+d.i)
	}
	return d.err
}

// DecodePrefix is Decode for data that starts with one record and may
// hold more records after it (the records of an Avro object container
// file's block, each right after the one before): it decodes the first
// and returns its length in bytes. On a structural problem (Rule
// "decode": the bytes are not a record of the writer schema) n is 0 and
// the rest of data cannot be read; on a field problem (Rule "type",
// "encoding", "timestamp") n is the record's length and the next record
// can be read. It never panics and allocates nothing for records whose
// decimals fit in 128 bits.
func (p *Program) DecodePrefix(data []byte, base int, r *row.Row, a *source.Arena) (n int, e *source.DecodeError) {
	d := dec{Typed: format.Begin(r, a, p.scratch, p.defaults), p: p, b: data, base: base}
	d.run(p.root)
	if d.stop {
		return 0, d.err
	}
	return d.i, d.err
}

// fail records a structural error; the rest of the bytes are not read.
func (d *dec) fail(format string, args ...any) {
	if d.stop {
		return
	}
	d.stop = true
	e := &source.DecodeError{Rule: "decode", Reason: "Avro: " + sprintf(format, args...)}
	d.err = e
}

// truncated is fail for a value that runs past the end.
func (d *dec) truncated(what string) {
	if !d.stop {
		d.fail("truncated record: %s at byte %d runs past the end (%d bytes)", what, d.base+d.i, d.base+len(d.b))
	}
}

// fieldErr records the first field error (the decode goes on).
func (d *dec) fieldErr(e *source.DecodeError) {
	if d.err == nil {
		d.err = e
	}
}

func (d *dec) run(s *seq) {
	for k := range s.ops {
		if d.stop {
			return
		}
		d.one(&s.ops[k])
	}
}

// long reads a zigzag varint of at most 10 bytes.
func (d *dec) long() (int64, bool) {
	var u uint64
	var shift uint
	start := d.i
	for n := 0; n < 10; n++ {
		if d.i >= len(d.b) {
			d.i = start
			d.truncated("a long")
			return 0, false
		}
		c := d.b[d.i]
		d.i++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if n == 9 && c > 1 {
				break
			}
			return int64(u>>1) ^ -int64(u&1), true
		}
		shift += 7
	}
	d.fail("a varint longer than 10 bytes at byte %d", d.base+start)
	return 0, false
}

// int reads an Avro int: a zigzag varint in int32 range.
func (d *dec) int() (int64, bool) {
	at := d.i
	v, ok := d.long()
	if ok && (v < math.MinInt32 || v > math.MaxInt32) {
		d.fail("int %d at byte %d is out of int32 range", v, d.base+at)
		return 0, false
	}
	return v, ok
}

// length reads a bytes or string length and checks it against what is
// left: a length field never makes the decoder allocate or read past the
// end.
func (d *dec) length(what string) (int, bool) {
	at := d.i
	n, ok := d.long()
	if !ok {
		return 0, false
	}
	if n < 0 {
		d.fail("negative %s length %d at byte %d", what, n, d.base+at)
		return 0, false
	}
	if n > int64(len(d.b)-d.i) {
		d.i = at
		d.truncated(what + " of " + strconv.FormatInt(n, 10) + " bytes")
		return 0, false
	}
	return int(n), true
}

// span reads a length-prefixed value and returns its bytes (in d.b) and
// their start.
func (d *dec) span(what string) ([]byte, int, bool) {
	n, ok := d.length(what)
	if !ok {
		return nil, 0, false
	}
	s := d.i
	d.i += n
	return d.b[s:d.i], s, true
}

// one reads the value of op o and stores it into its target.
func (d *dec) one(o *op) {
	switch o.code {
	case opNull:
		if o.cv == format.ConvBad {
			d.bad(o, "")
		}
	case opBool:
		if d.i >= len(d.b) {
			d.truncated("a boolean")
			return
		}
		c := d.b[d.i]
		d.i++
		if c > 1 {
			d.fail("boolean byte %d at byte %d is neither 0 nor 1", c, d.base+d.i-1)
			return
		}
		if o.tgt >= 0 {
			d.setBool(o, c == 1)
		}
	case opInt, opLong:
		var v int64
		var ok bool
		if o.code == opInt {
			v, ok = d.int()
		} else {
			v, ok = d.long()
		}
		if ok && o.tgt >= 0 {
			d.setLong(o, v)
		}
	case opFloat:
		if len(d.b)-d.i < 4 {
			d.truncated("a float")
			return
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(d.b[d.i:]))
		d.i += 4
		if o.tgt >= 0 {
			d.setFloat(o, float64(f), 32)
		}
	case opDouble:
		if len(d.b)-d.i < 8 {
			d.truncated("a double")
			return
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.i:]))
		d.i += 8
		if o.tgt >= 0 {
			d.setFloat(o, f, 64)
		}
	case opBytes, opString:
		what := "a string"
		if o.code == opBytes {
			what = "bytes"
		}
		b, at, ok := d.span(what)
		if ok && o.tgt >= 0 {
			d.setBytes(o, b, at)
		}
	case opFixed:
		if len(d.b)-d.i < o.size {
			d.truncated("a fixed of " + strconv.Itoa(o.size) + " bytes")
			return
		}
		at := d.i
		d.i += o.size
		if o.tgt >= 0 {
			d.setBytes(o, d.b[at:d.i], at)
		}
	case opEnum:
		at := d.i
		v, ok := d.int()
		if !ok {
			return
		}
		if v < 0 || v >= int64(len(o.syms)) {
			d.fail("enum index %d at byte %d is out of range (%d symbols)", v, d.base+at, len(o.syms))
			return
		}
		if o.tgt >= 0 {
			d.setEnum(o, o.syms[v])
		}
	case opUnion:
		at := d.i
		v, ok := d.long()
		if !ok {
			return
		}
		if v < 0 || v >= int64(len(o.sub)) {
			d.fail("union branch %d at byte %d is out of range (%d branches)", v, d.base+at, len(o.sub))
			return
		}
		d.nest(o.sub[v])
	case opRecord:
		d.nest(o.sub[0])
	case opArray, opMap:
		d.blocks(o)
		if o.tgt >= 0 && !d.stop {
			d.bad(o, "")
		}
	}
}

// nest runs a sub-program one level deeper.
func (d *dec) nest(s *seq) {
	d.depth++
	if d.depth > maxDataDepth {
		d.fail("data nested deeper than %d levels at byte %d", maxDataDepth, d.base+d.i)
		return
	}
	d.run(s)
	d.depth--
}

// blocks skips an array's or a map's blocks.
func (d *dec) blocks(o *op) {
	el := o.sub[0]
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDataDepth {
		d.fail("data nested deeper than %d levels at byte %d", maxDataDepth, d.base+d.i)
		return
	}
	what := "an array"
	if o.code == opMap {
		what = "a map"
	}
	for !d.stop {
		at := d.i
		n, ok := d.long()
		if !ok {
			return
		}
		if n == 0 {
			return
		}
		if n < 0 {
			if n == math.MinInt64 {
				d.fail("%s block count %d at byte %d", what, n, d.base+at)
				return
			}
			n = -n
			// The block's size in bytes follows. It is read and not
			// trusted: the items are read one by one (as twmb/avro and
			// the Java library do), so a wrong size cannot make the
			// decoder skip into the middle of a value.
			if _, ok := d.long(); !ok {
				return
			}
		}
		// Every item reads at least one byte unless the element reads
		// none (a map's key always does): a count beyond what is left is
		// truncated, and a count of empty items costs no loop.
		if o.code == opArray && el.zero {
			continue
		}
		if n > int64(len(d.b)-d.i) {
			d.fail("%s block of %d items at byte %d runs past the end", what, n, d.base+at)
			return
		}
		for k := int64(0); k < n && !d.stop; k++ {
			if o.code == opMap {
				if _, _, ok := d.span("a map key"); !ok {
					return
				}
			}
			d.run(el)
		}
	}
}

// field returns the target of o.
func (d *dec) field(o *op) *target { return &d.p.targets[o.tgt] }

// bad records that o's writer type cannot give its field's kind.
func (d *dec) bad(o *op, why string) {
	t := d.field(o)
	reason := "want " + t.F.Kind.String() + ", got " + o.what
	if why != "" {
		reason += " (" + why + ")"
	}
	d.fieldErr(&source.DecodeError{Field: t.F.Name, Rule: "type", Reason: reason})
}

func (d *dec) setBool(o *op, v bool) {
	if d.SetBool(d.field(o), o.cv, v) {
		d.bad(o, "")
	}
}

// done reports a shared conversion's outcome (format.Outcome) for o.
func (d *dec) done(o *op, out format.Outcome) {
	if out.Err != nil || out.Bad {
		d.report(o, out)
	}
}

func (d *dec) report(o *op, out format.Outcome) {
	if out.Err != nil {
		d.fieldErr(out.Err)
		return
	}
	d.bad(o, out.Why)
}

func (d *dec) setLong(o *op, v int64) {
	if o.cv >= format.ConvTsMillis && o.cv <= format.ConvDate {
		d.setTime(o, v)
		return
	}
	d.done(o, d.SetInt(d.field(o), o.cv, v, o.what))
}

// setTime stores a long of a timestamp or date logical type.
func (d *dec) setTime(o *op, v int64) {
	f := &d.field(o).F
	switch o.cv {
	case format.ConvTsMillis:
		d.R.I[f.Slot] = v
	case format.ConvTsMicros:
		d.R.I[f.Slot] = floorDiv(v, 1000)
	case format.ConvTsNanos:
		d.R.I[f.Slot] = floorDiv(v, 1_000_000)
	default: // format.ConvDate
		d.R.I[f.Slot] = v * msPerDay // |v| < 2^31: no overflow
	}
	d.R.SetValid(f.Index)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

func (d *dec) setFloat(o *op, v float64, size int) {
	d.done(o, d.SetFloat(d.field(o), o.cv, v, size))
}

// setBytes stores a string's, bytes' or fixed's contents b (at offset at
// in d.b).
func (d *dec) setBytes(o *op, b []byte, at int) {
	if o.cv == format.ConvDecimal || o.cv == format.ConvDecimalString {
		d.setDecimal(o, b)
		return
	}
	d.done(o, d.SetString(d.field(o), o.cv, b, d.base+at, "Avro string"))
}

// setDecimal stores a bytes or fixed decimal b.
func (d *dec) setDecimal(o *op, b []byte) {
	f := &d.field(o).F
	v, why := d.decimal(b, o.scale)
	if why != "" {
		d.bad(o, why)
		return
	}
	if o.cv == format.ConvDecimal {
		d.R.D[f.Slot] = v
	} else {
		d.R.S[f.Slot] = d.A.String(row.FormatDecimal(d.Num, v))
	}
	d.R.SetValid(f.Index)
}

func (d *dec) setEnum(o *op, sym string) {
	t := d.field(o)
	switch o.cv {
	case format.ConvEnumString:
		d.R.S[t.F.Slot] = sym // the schema's memory: lives as long as the Program
		d.R.SetValid(t.F.Index)
	case format.ConvEnumText:
		if e := t.Text.Set(unsafe.Slice(unsafe.StringData(sym), len(sym)), "Avro enum", d.R); e != nil {
			d.fieldErr(e)
		}
	default:
		d.bad(o, "")
	}
}

// decimal reads an Avro decimal: the two's-complement big-endian unscaled
// value b at scale (255: a scale tidemark cannot keep). The reason is ""
// on success.
func (d *dec) decimal(b []byte, scale uint8) (row.Decimal, string) {
	if scale == 255 {
		return row.Decimal{}, "decimal scale above " + strconv.Itoa(row.MaxDecimalScale) + ", more digits after the point than tidemark keeps"
	}
	return format.TwosComplementDecimal(b, scale)
}
