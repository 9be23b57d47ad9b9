package format

import (
	"github.com/valyala/fastjson"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// JSON decodes JSON objects (one per line in a JSONL file) into rows. See
// the package documentation for the conversions. Build one with NewJSON; it
// is not safe for concurrent use.
type JSON struct {
	fields []plan
	p      fastjson.Parser
	num    []byte // scratch: the literal of a JSON number
	esc    []byte // scratch: a string with its escapes decoded
	fast   bool   // every field is a top-level key: try the fast path (scan.go)
	mark   []uint32
	seen   uint32
	hint   []keyHint // the key and field found at each key position of the last line
}

// NewJSON returns a decoder for the fields of f.
func NewJSON(f Fields) *JSON {
	d := &JSON{fields: compile(f)}
	d.fast = flat(d.fields)
	d.mark = make([]uint32, len(d.fields))
	return d
}

// Decode fills r (already shaped by f.Schema.Shape, all null) from one JSON
// object. Fields missing from the object, or null in it, stay null.
//
// It returns nil, or the first problem found: Rule "decode" (line is not
// valid JSON or not an object; no field is decoded), Rule "type" (a value
// of the wrong type, or a malformed number literal in a decoded field) or
// Rule "timestamp" (the field's parser rejected the text). After a "type"
// or "timestamp" error the other fields are still decoded.
//
// Strings in r are copied into a (the arena of the batch r belongs to):
// they stay valid until a is Reset, also across later calls to Decode.
// line is not retained.
func (d *JSON) Decode(line []byte, r *row.Row, a *source.Arena) *source.DecodeError {
	if d.fast && d.fastDecode(line, r, a) {
		return nil
	}
	return d.slowDecode(line, r, a)
}

// slowDecode decodes with fastjson: every line the fast path declines,
// and the reference the fast path is checked against.
func (d *JSON) slowDecode(line []byte, r *row.Row, a *source.Arena) *source.DecodeError {
	// fastjson is lenient (raw control characters, "\q", NaN, 01 pass);
	// a line must first be JSON by RFC 8259.
	if e := strictJSON(line); e != nil {
		return e
	}
	v, err := d.p.ParseBytes(line)
	if err != nil {
		return syntaxError(err)
	}
	if t := v.Type(); t != fastjson.TypeObject {
		return &source.DecodeError{Rule: "decode", Reason: "want a JSON object, got " + describeJSON(v, &d.num)}
	}
	var first *source.DecodeError
	for i := range d.fields {
		p := &d.fields[i]
		fv := v.Get(p.path...)
		if fv == nil && len(p.path) > 1 {
			fv = v.Get(p.f.Name)
		}
		if fv == nil {
			continue
		}
		if e := d.set(p, fv, r, a, line); e != nil && first == nil {
			first = e
		}
	}
	return first
}

// set stores the JSON value v into field p of r.
func (d *JSON) set(p *plan, v *fastjson.Value, r *row.Row, a *source.Arena, line []byte) *source.DecodeError {
	f := &p.f
	// A string's raw text, before fastjson unescapes it (MarshalTo of a
	// string not yet looked at returns its bytes as written): decoded with
	// the fast path's rules, so both paths give the same text. A string
	// field's text must keep the encoding rule (no NUL, valid UTF-8, no
	// lone surrogate); for other kinds the text is parsed, and invalid
	// bytes (as U+FFFD, encoding/json's way) make a type error.
	if raw := v.MarshalTo(d.num[:0]); len(raw) >= 2 && raw[0] == '"' {
		d.num = raw
		body := raw[1 : len(raw)-1]
		if f.Kind == row.KindString {
			var bad int
			var what badText
			d.esc, bad, what = unescapeText(d.esc[:0], body)
			if bad >= 0 {
				return d.encodingError(p, line, body, bad, what)
			}
			r.S[f.Slot] = a.String(d.esc)
			r.SetValid(f.Index)
			return nil
		}
		d.esc = appendUnescaped(d.esc[:0], body)
		return setText(p, d.esc, "string", r)
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return nil
	case fastjson.TypeString:
		b, _ := v.StringBytes() // cannot fail for TypeString
		if f.Kind == row.KindString {
			r.S[f.Slot] = a.String(b)
			r.SetValid(f.Index)
			return nil
		}
		return setText(p, b, "string", r)
	case fastjson.TypeNumber:
		d.num = v.MarshalTo(d.num[:0])
		if !validNumber(d.num) {
			return &source.DecodeError{Field: f.Name, Rule: "decode", Reason: "invalid JSON number " + quote(d.num)}
		}
		switch {
		case f.Kind == row.KindString:
			r.S[f.Slot] = a.String(d.num)
			r.SetValid(f.Index)
			return nil
		case f.Kind == row.KindBool, f.Kind == row.KindTime && !epoch(p.parser):
			return typeError(p, "number", d.num, "")
		}
		return setText(p, d.num, "number", r)
	case fastjson.TypeTrue, fastjson.TypeFalse:
		if !setBool(p, v.Type() == fastjson.TypeTrue, r) {
			return &source.DecodeError{Field: f.Name, Rule: "type", Reason: wantGot(p, describeJSON(v, &d.num), "")}
		}
		return nil
	default: // object, array
		return &source.DecodeError{Field: f.Name, Rule: "type", Reason: wantGot(p, describeJSON(v, &d.num), "")}
	}
}

// describeJSON renders v for an error message: its type and its JSON text,
// cut to maxQuoted bytes. scratch is reused.
func describeJSON(v *fastjson.Value, scratch *[]byte) string {
	*scratch = v.MarshalTo((*scratch)[:0])
	switch v.Type() {
	case fastjson.TypeTrue, fastjson.TypeFalse, fastjson.TypeNull:
		return clip(*scratch)
	}
	return v.Type().String() + " " + clip(*scratch)
}

// syntaxError reports a line that passed strictJSON but that fastjson
// still refuses (one of its own limits).
func syntaxError(err error) *source.DecodeError {
	return &source.DecodeError{Rule: "decode", Reason: "cannot decode JSON: " + err.Error()}
}

// encodingError is the "encoding" error of field p, whose string value
// (body, without its quotes, as written) breaks the rule at body[bad]:
// the reason names the byte offset in line.
func (d *JSON) encodingError(p *plan, line, body []byte, bad int, what badText) *source.DecodeError {
	start, ok := valueAt(line, p.path)
	if !ok && len(p.path) > 1 {
		start, ok = valueAt(line, []string{p.f.Name})
	}
	at := -1
	if ok {
		at = start + 1 + bad
	}
	esc := body[bad:min(bad+6, len(body))]
	return jsonEncodingError(p.f.Name, at, what, esc)
}
