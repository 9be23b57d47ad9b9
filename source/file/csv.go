package file

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// csvReader reads the records of one CSV file. The file is read whole into
// memory: Meta.Raw of a record is then a slice of the file's bytes, found
// from csv.Reader.InputOffset before and after each Read (encoding/csv
// does not expose a record's bytes, and a quoted field may span lines).
type csvReader struct {
	path   string
	body   []byte // the file without a leading byte order mark
	base   int64  // bytes before body in the file (3 after a BOM, else 0)
	cr     *csv.Reader
	dec    *format.CSV
	header []string
	nl     int64 // '\n' bytes in body[:scanned]
	seen   int64
}

// csvOptions are the CSV settings shared by every file of a source.
type csvOptions struct {
	comma   rune
	header  bool     // the first record of each file names the columns
	columns []string // the columns when header is false
}

func newCSVReader(path string, body []byte, o *csvOptions) *csvReader {
	c := &csvReader{path: path, body: body}
	if bytes.HasPrefix(body, bom) {
		c.body, c.base = body[3:], 3
	}
	c.cr = newCSVStdReader(bytes.NewReader(c.body), o.comma)
	return c
}

// newCSVStdReader returns an encoding/csv reader with the source's
// settings: strict quotes, any number of fields per record (a wrong count
// is the decoder's per-record error), reused records.
func newCSVStdReader(r io.Reader, comma rune) *csv.Reader {
	cr := csv.NewReader(r)
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return cr
}

// readHeader returns the columns of a file: its first record when o.header
// is set (nil for an empty file), else o.columns.
func (c *csvReader) readHeader(o *csvOptions) ([]string, error) {
	if !o.header {
		return o.columns, nil
	}
	rec, err := c.cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", c.path, err)
	}
	return append([]string(nil), rec...), nil
}

// openCSV reads the file at path and its header, and builds its decoder.
func openCSV(path string, o *csvOptions, fields format.Fields) (*csvReader, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := newCSVReader(path, body, o)
	c.header, err = c.readHeader(o)
	if err != nil {
		return nil, err
	}
	if c.header == nil { // empty file
		return c, nil
	}
	c.dec, err = format.NewCSV(fields, c.header)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// next decodes the next record. A record encoding/csv cannot parse (a bare
// or unterminated quote) becomes a record with a "decode" error. Strings
// and m.Raw are the file's memory (never overwritten), so a is unused.
func (c *csvReader) next(r *row.Row, m *source.Meta, _ *source.Arena) error {
	if c.dec == nil {
		return io.EOF
	}
	before := c.cr.InputOffset()
	rec, err := c.cr.Read()
	if err == io.EOF {
		return io.EOF
	}
	after := c.cr.InputOffset()
	start := skipEmptyLines(c.body, before, after)
	c.nl += int64(bytes.Count(c.body[c.seen:start], nl))
	c.seen = start
	m.Pos = changelog.Position{Source: c.path, Line: c.nl + 1, Offset: c.base + start}
	m.Raw = trimNewline(c.body[start:after])
	if err != nil {
		var pe *csv.ParseError
		if !errors.As(err, &pe) || after <= before {
			return fmt.Errorf("%s: %w", c.path, err)
		}
		m.Err = &source.DecodeError{Rule: "decode", Reason: pe.Error()}
		return nil
	}
	m.Err = c.dec.Decode(rec, r)
	return nil
}

var nl = []byte{'\n'}

// skipEmptyLines returns the offset of the first byte of body[from:to]
// that is not part of an empty line ("\n", "\r\n", or a lone "\r" at the
// end of the input), which encoding/csv skips before a record.
func skipEmptyLines(body []byte, from, to int64) int64 {
	for from < to {
		switch {
		case body[from] == '\n':
			from++
		case body[from] == '\r' && (from+1 == int64(len(body)) || body[from+1] == '\n'):
			from++
		default:
			return from
		}
	}
	return from
}

// trimNewline drops one trailing "\n" or "\r\n" (and a final "\r").
func trimNewline(b []byte) []byte {
	if k := len(b); k > 0 && b[k-1] == '\n' {
		b = b[:k-1]
	}
	if k := len(b); k > 0 && b[k-1] == '\r' {
		b = b[:k-1]
	}
	return b
}

func (c *csvReader) close() error { return nil }

// initCSV checks the CSV options and reads every file's header, so that a
// missing column is reported before the first record.
func (s *Source) initCSV(sp *spec.Source) error {
	o := &s.csv
	o.comma = ','
	if d := sp.CSV.Delimiter; d != "" {
		r, n := utf8.DecodeRuneInString(d)
		if n != len(d) || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
			return fmt.Errorf("source.csv.delimiter: %q is not one usable character", d)
		}
		o.comma = r
	}
	o.header = sp.CSV.Header == nil || *sp.CSV.Header
	if !o.header {
		if len(sp.CSV.Columns) == 0 {
			return errors.New("source.csv.columns: required when csv.header is false")
		}
		o.columns = sp.CSV.Columns
		if _, err := format.NewCSV(s.fields, o.columns); err != nil {
			return fmt.Errorf("source.csv.columns: %w", err)
		}
	}
	s.heads = make(map[string][]string, len(s.files))
	for _, p := range s.files {
		h, err := readCSVHeader(p, o)
		if err != nil {
			return err
		}
		if h != nil {
			if _, err := format.NewCSV(s.fields, h); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		s.heads[p] = h
	}
	return nil
}

// readCSVHeader reads only the header of the file at path (its first
// record, nil for an empty file), or returns o.columns.
func readCSVHeader(path string, o *csvOptions) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !o.header {
		return o.columns, nil
	}
	br := bufio.NewReader(f)
	if b, err := br.Peek(3); err == nil && b[0] == bom[0] && b[1] == bom[1] && b[2] == bom[2] {
		br.Discard(3)
	}
	c := &csvReader{path: path}
	c.cr = newCSVStdReader(br, o.comma)
	return c.readHeader(o)
}

func (r *csvReader) offset() int64 { return r.base + r.cr.InputOffset() }
