package format

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// CSV decodes CSV records (split into fields, CSVRecord) into rows. See
// the package documentation for the conversions. Build one per header
// with NewCSV; it is not safe for concurrent use.
type CSV struct {
	fields []plan
	cols   []int // cols[i] is the column of fields[i]
	width  int   // number of header columns
}

// MissingColumnsError is returned by NewCSV when schema fields have no
// column in the header.
type MissingColumnsError struct {
	Missing []string // schema fields without a column, in schema order
	Header  []string // the header's column names
}

// Error implements error: `no column "a", "b" in CSV header [x y]`,
// each missing name followed by the header's names close to it, if any
// (`no column "Contry" (did you mean Country?) in CSV header […]`:
// suggest.Hint).
func (e *MissingColumnsError) Error() string {
	q := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		q[i] = strconv.Quote(m) + suggest.Hint(m, e.Header)
	}
	return fmt.Sprintf("no column %s in CSV header %q", strings.Join(q, ", "), e.Header)
}

// NewCSV maps header column names to schema fields (exact, case-sensitive
// names; of duplicate column names the first is used). A schema field
// missing from the header (other than a Derived one) is an error, a
// *MissingColumnsError naming every such field. Columns that no field
// names are ignored. header is not retained.
func NewCSV(f Fields, header []string) (*CSV, error) {
	at := make(map[string]int, len(header))
	for i, h := range header {
		if _, dup := at[h]; !dup {
			at[h] = i
		}
	}
	d := &CSV{width: len(header)}
	var missing []string
	for _, p := range compile(f) {
		c, ok := at[p.f.Name]
		if !ok {
			missing = append(missing, p.f.Name)
			continue
		}
		d.fields = append(d.fields, p)
		d.cols = append(d.cols, c)
	}
	if len(missing) > 0 {
		return nil, &MissingColumnsError{Missing: missing, Header: append([]string(nil), header...)}
	}
	return d, nil
}

// CSVRecord is one CSV record split into fields, as the file source's
// reader parses it.
type CSVRecord struct {
	// Raw is the record's bytes as in the file, without its final line
	// terminator.
	Raw []byte
	// Fields holds each field's text: quotes removed, doubled quotes
	// undoubled, a line break inside a quoted field as "\n". It may alias
	// Raw.
	Fields [][]byte
	// Starts holds, for each field, the offset in Raw of its first byte
	// (its opening quote when it is quoted).
	Starts []int
}

// Reset empties r, keeping capacity.
func (r *CSVRecord) Reset() {
	r.Raw = nil
	r.Fields = r.Fields[:0]
	r.Starts = r.Starts[:0]
}

// Width returns the number of columns of the header the decoder was built
// for.
func (d *CSV) Width() int { return d.width }

// Decode fills r (already shaped by the schema, all null) from one record.
// Empty text is null. Strings are copied into a (the arena of the batch r
// belongs to), valid until a is Reset.
//
// It returns nil, or the first problem found: Rule "decode" when the
// record does not have one field per header column (no field is decoded),
// Rule "encoding" when the text of a string field holds a NUL character
// or is not valid UTF-8 (the reason gives the byte offset in rec.Raw; the
// field stays null: such text cannot be stored by every sink and would
// silently merge different keys if repaired), Rule "type" (text that is
// not of the field's kind) or Rule "timestamp" (the field's parser
// rejected the text); the error's Field names the column. After an
// "encoding", "type" or "timestamp" error the other fields are still
// decoded.
func (d *CSV) Decode(rec *CSVRecord, r *row.Row, a *source.Arena) *source.DecodeError {
	if len(rec.Fields) != d.width {
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("record has %d fields, header has %d", len(rec.Fields), d.width)}
	}
	var first *source.DecodeError
	for i := range d.fields {
		p := &d.fields[i]
		col := d.cols[i]
		b := rec.Fields[col]
		if len(b) == 0 {
			continue
		}
		if p.f.Kind == row.KindString {
			if !Text(b) {
				if first == nil {
					first = EncodingError(p.f.Name, rec.Raw, rec.Starts[col])
				}
				continue
			}
			r.S[p.f.Slot] = a.String(b)
			r.SetValid(p.f.Index)
			continue
		}
		if e := setText(p, b, "", r); e != nil && first == nil {
			first = e
		}
	}
	return first
}
