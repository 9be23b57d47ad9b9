package format

import (
	"math/big"
	"math/bits"
	"strings"

	"github.com/quagmt/udecimal"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// TextField stores text into one field of a row by this package's
// conversion rules, for the decoders of other formats (format/avro,
// format/protobuf): an Avro or Protobuf string read into an int, decimal,
// bool or timestamp field is converted exactly as a JSON string would be.
// Build one per field with NewTextField; it is not safe for concurrent use
// when its parser has a layout (eventtime.Parser caches a zone period).
type TextField struct {
	p plan
}

// NewTextField returns the converter of field f; parser reads a KindTime
// field (nil: RFC 3339 with a mandatory offset).
func NewTextField(f row.Field, parser *eventtime.Parser) *TextField {
	t := &TextField{p: plan{f: f}}
	if f.Kind == row.KindTime {
		t.p.parser = parser
		if parser == nil {
			t.p.parser = rfc3339
		}
	}
	return t
}

// Set stores the text b into r's field, which must not be a string field
// (callers copy strings into their arena themselves). typ names where the
// text came from in error messages ("string" for an Avro or Protobuf
// string). Errors are Rule "type" (not a value of the field's kind) or
// "timestamp" (the parser refused it); the field then stays null.
func (t *TextField) Set(b []byte, typ string, r *row.Row) *source.DecodeError {
	e := setText(&t.p, b, "", r)
	if e != nil && e.Rule == "type" && typ != "" {
		// "want int, got \"x\"" → "want int, got Avro string \"x\"".
		e.Reason = strings.Replace(e.Reason, "got ", "got "+typ+" ", 1)
	}
	return e
}

// Epoch reports whether the field is a timestamp read from numbers
// (event_time format epoch_ms or epoch_s), and whether in seconds.
func (t *TextField) Epoch() (epochField, seconds bool) {
	if t.p.parser == nil {
		return false, false
	}
	return epoch(t.p.parser), t.p.parser.Format == eventtime.EpochS
}

// TextError returns the "encoding" error of a string field whose text s
// breaks the encoding rule (package doc, encoding.go): the first NUL
// character or invalid UTF-8 sequence of s, named with its byte offset in
// the record, base being the offset of s[0] in the record's bytes. Call it
// only for text that Text refused.
func TextError(field string, s []byte, base int) *source.DecodeError {
	at, nul := firstBadText(s, 0)
	return encodingError(field, base+at, nul)
}

// Projection is the reader's side of decoding a record written with a
// schema of its own (Avro, Protobuf): the pipeline's fields, which field
// of the writer's schema each one reads, and constants for the fields a
// writer's schema lacks. A data contract's schema versions give one per
// version (docs/contracts.md, "Schema versions").
type Projection struct {
	// Fields are the pipeline's fields (their kinds and timestamp
	// parsers). Fields.Derived are left alone.
	Fields Fields
	// Rename maps a pipeline field name to the writer's field it reads,
	// a dotted path through nested records or messages
	// ("payment.gross_amount"). A field not listed reads the writer field
	// of its own name.
	Rename map[string]string
	// Defaults gives the value of a pipeline field when the writer's
	// schema has no field for it (a field one schema version lacks).
	// Without one such a field is null, as a missing JSON member is.
	Defaults map[string]row.Value
}

// TwosComplementDecimal returns the decimal whose unscaled value is the
// two's-complement big-endian integer b, with scale digits after the
// point (scale at most row.MaxDecimalScale): the encoding of Avro's
// decimal logical type and of Confluent's Protobuf decimal. The reason is
// "" on success. Values within 128 bits allocate nothing.
func TwosComplementDecimal(b []byte, scale uint8) (row.Decimal, string) {
	if len(b) == 0 {
		return row.Decimal{}, "a decimal of zero bytes"
	}
	neg := b[0]&0x80 != 0
	// Drop redundant sign bytes.
	for len(b) > 1 && ((b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0)) {
		b = b[1:]
	}
	if len(b) <= 16 {
		var hi, lo uint64
		if neg {
			hi, lo = ^uint64(0), ^uint64(0)
		}
		for _, c := range b {
			hi = hi<<8 | lo>>56
			lo = lo<<8 | uint64(c)
		}
		if neg { // two's complement → magnitude
			hi, lo = ^hi, ^lo
			var carry uint64
			lo, carry = bits.Add64(lo, 1, 0)
			hi += carry
		}
		if v, err := udecimal.NewFromHiLo(neg, hi, lo, scale); err == nil {
			return v, ""
		}
	}
	// More than 128 bits: exact through big.Int (allocates; rare).
	n := new(big.Int).SetBytes(b)
	if neg {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	txt := n.String()
	if scale > 0 {
		digits := txt
		sign := ""
		if digits[0] == '-' {
			sign, digits = "-", digits[1:]
		}
		for len(digits) <= int(scale) {
			digits = "0" + digits
		}
		txt = sign + digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]
	}
	v, err := row.ParseDecimal([]byte(txt))
	if err != nil {
		return row.Decimal{}, err.Error()
	}
	return v, ""
}
