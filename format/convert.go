package format

import (
	"strings"

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
