package format

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// CSV decodes CSV records (as returned by encoding/csv) into rows. See the
// package documentation for the conversions. Build one per header with
// NewCSV; it is not safe for concurrent use.
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

// Error implements error: `no column "a", "b" in CSV header [x y]`.
func (e *MissingColumnsError) Error() string {
	q := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		q[i] = strconv.Quote(m)
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

// Decode fills r (already shaped by the schema, all null) from one record.
// Empty text is null. Strings in r share record's memory.
//
// It returns nil, or the first problem found: Rule "decode" when the
// record does not have one field per header column (no field is decoded),
// Rule "type" (text that is not of the field's kind) or Rule "timestamp"
// (the field's parser rejected the text); the error's Field names the
// column. After a "type" or "timestamp" error the other fields are still
// decoded.
func (d *CSV) Decode(record []string, r *row.Row) *source.DecodeError {
	if len(record) != d.width {
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("record has %d fields, header has %d", len(record), d.width)}
	}
	var first *source.DecodeError
	for i := range d.fields {
		p := &d.fields[i]
		s := record[d.cols[i]]
		if s == "" {
			continue
		}
		if p.f.Kind == row.KindString {
			if !utf8.ValidString(s) {
				// As for JSON: each invalid byte becomes U+FFFD, so a key
				// is the same text in every output.
				s = string(appendUnescapedText(nil, s))
			}
			r.S[p.f.Slot] = s
			r.SetValid(p.f.Index)
			continue
		}
		if e := setText(p, bytesOf(s), "", r); e != nil && first == nil {
			first = e
		}
	}
	return first
}
