package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// csvOptions are the CSV settings shared by every file of a source.
type csvOptions struct {
	comma   rune
	header  bool     // the first record of each file names the columns
	columns []string // the columns when header is false
}

// csvReader streams the records of one CSV file, line by line (see the
// package documentation, "CSV").
//
// A record is one line, or several when a quoted field holds line
// breaks (RFC 4180). When such a multi-line record is not valid CSV (a
// quote that does not close, or closes in the middle of a field), or does
// not have one field per header column, it is almost always an
// unterminated quote that swallowed the lines after it: the reader then
// quarantines only the record's first line and reads the other lines it
// had taken again, each as a record of its own (a quoted field must close
// on its line there), so that every later record is decoded or
// quarantined by itself. Reading every line at most twice keeps this
// linear.
type csvReader struct {
	path   string
	f      *os.File // nil for in-memory input
	n      int64    // the file's size when opened
	lines  *lineReader
	comma  []byte // the separator's UTF-8 bytes
	dec    *format.CSV
	header []string
	width  int   // header columns; -1 while reading the header
	single int64 // records starting before this file offset are read one line each
	// slack is how many bytes a multi-line record may hold beyond the
	// limit: 0, or for Decode's second split of a claimed record the
	// line break it appends (the record passed the limit when claimed).
	slack int

	rec    format.CSVRecord
	fs     []csvField
	raw    []byte // a multi-line record's bytes
	text   []byte // field text that differs from the raw bytes
	reason []byte // scratch: an error reason
}

// csvField locates one field's text: buf[start:end] of the record's bytes,
// or text[start:end] when inText.
type csvField struct {
	start, end int
	raw        int // offset of the field's first byte in the record
	inText     bool
}

// csvError is a record that is not valid CSV.
type csvError struct {
	line, col int64 // 1-based line in the file and byte column in that line
	what      string
	msg       string // the whole message, instead of line, col and what
}

const (
	errBareQuote = `bare " in non-quoted-field`
	errQuote     = `extraneous or missing " in quoted-field`
)

func (e *csvError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("parse error on line %d, column %d: %s", e.line, e.col, e.what)
}

// newCSVReader reads the CSV records of rd (see newLineReader for off,
// line and mode).
func newCSVReader(path string, rd io.ReadSeeker, buf []byte, comma rune, off, line int64, mode lineMode) (*csvReader, error) {
	l, err := newLineReader(path, rd, buf, off, line, mode)
	if err != nil {
		return nil, err
	}
	return &csvReader{path: path, lines: l, comma: utf8.AppendRune(nil, comma), width: -1}, nil
}

// openCSV opens the file at path, reads its header (o.header) and builds
// its decoder; with off > 0 it then continues at that offset (the start
// of line line+1, a record boundary), reading records one line each
// before file offset single. buf is a read buffer to reuse, or nil.
func openCSV(path string, o *csvOptions, fields format.Fields, buf []byte, off, line int64, mode lineMode, single int64) (*csvReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := newCSVReader(path, f, buf, o.comma, 0, 0, modeUnknown)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	c.n = st.Size()
	c.header, err = c.readHeader(o)
	if err != nil {
		f.Close()
		return nil, err
	}
	if c.header != nil {
		c.dec, err = format.NewCSV(fields, c.header)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c.width = len(c.header)
	}
	if off > 0 {
		if err := c.lines.seekTo(off, line); err != nil {
			f.Close()
			return nil, err
		}
		c.lines.mode = mode
		c.single = single
	}
	return c, nil
}

// readHeader returns the columns of a file: its first record when o.header
// is set (nil for an empty file), else o.columns.
func (c *csvReader) readHeader(o *csvOptions) ([]string, error) {
	if !o.header {
		return o.columns, nil
	}
	span, cerr, err := c.read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("%s: header: %s", c.path, cerr)
	}
	if span.why != "" {
		return nil, fmt.Errorf("%s: header: %s", c.path, span.why)
	}
	h := make([]string, len(c.rec.Fields))
	for i, f := range c.rec.Fields {
		h[i] = string(f)
	}
	return h, nil
}

// next decodes the next record, its strings into a. m.Raw points into the
// reader's buffers until the next call. A record that is not valid CSV,
// or is too long, is a record with a "decode" error.
func (c *csvReader) next(r *row.Row, m *source.Meta, a *source.Arena) error {
	if c.dec == nil {
		return io.EOF // an empty file
	}
	span, cerr, err := c.read()
	if err != nil {
		return err
	}
	m.Pos = changelog.Position{Source: c.path, Line: span.line, Offset: span.start}
	m.Raw = c.rec.Raw
	switch {
	case cerr != nil:
		m.Err = &source.DecodeError{Rule: "decode", Reason: cerr.Error()}
	case span.why != "":
		m.Err = &source.DecodeError{Rule: "decode", Reason: span.why}
	default:
		m.Err = c.dec.Decode(&c.rec, r, a)
	}
	if m.Err != nil && span.lines > 1 {
		// Say what the quarantined record holds.
		e := *m.Err
		e.Reason += fmt.Sprintf(" (the record spans lines %d–%d)", span.line, span.line+span.lines-1)
		m.Err = &e
	}
	return nil
}

// csvSpan is where a record lies in the file.
type csvSpan struct {
	start int64  // file offset of its first byte
	line  int64  // its first line
	lines int64  // the lines it spans
	why   string // set when the record is not decoded: the reason
}

// read parses the next record into c.rec. It returns io.EOF at the end of
// the file, a read error, or the record with cerr set when it is not
// valid CSV (c.rec.Raw then holds the record's line or lines, and
// c.rec.Fields is unusable), or with span.why set when it is cut (too
// long, or cut to its first line after a broken multi-line record).
func (c *csvReader) read() (span csvSpan, cerr *csvError, err error) {
	for {
		content, whole, start, tooLong, err := c.lines.next(maxLineBytes)
		if err != nil {
			return span, nil, err
		}
		span = csvSpan{start: start, line: c.lines.line, lines: 1}
		c.rec.Reset()
		if tooLong {
			c.rec.Raw = content
			span.why = fmt.Sprintf("line of about %d bytes is longer than the limit of %d bytes", c.lines.off-start, maxLineBytes)
			return span, nil, nil
		}
		if len(content) == 0 {
			continue // an empty line
		}
		return c.parse(content, whole, span)
	}
}

// parse splits the record whose first line is content (whole with its
// terminator), reading more lines while a quoted field goes on.
func (c *csvReader) parse(content, whole []byte, span csvSpan) (csvSpan, *csvError, error) {
	buf := content // the record's bytes so far
	lineEnd := len(buf)
	first := csvFirst{content: len(content), whole: len(whole)}
	lineStart := 0 // offset in buf of the current line
	multi := false // buf is c.raw: the record spans lines
	oneLine := span.start < c.single
	c.fs = c.fs[:0]
	c.text = c.text[:0]
	pos := 0
	col := func(i int) int64 { return int64(i-lineStart) + 1 }
	for {
		fieldStart := pos
		if pos < lineEnd && buf[pos] == '"' {
			// A quoted field: up to a quote that is not doubled.
			q := pos + 1
			seg := q     // start of the text not yet copied to c.text
			copied := -1 // start of the field in c.text, once copying
			openLine := span.line + span.lines - 1
			openCol := col(pos)
			for {
				i := bytes.IndexByte(buf[q:lineEnd], '"')
				if i < 0 {
					// The field goes on past the end of the line.
					if oneLine {
						c.rec.Raw = buf[:lineEnd]
						return span, &csvError{line: span.line, col: openCol, what: errQuote + " (a quoted field must close on its line here: the lines of a broken record are read one record each)"}, nil
					}
					if !multi {
						c.raw = append(c.raw[:0], whole...)
						buf, multi = c.raw, true
					}
					if copied < 0 {
						copied = len(c.text)
					}
					c.text = append(c.text, buf[seg:lineEnd]...)
					c.text = append(c.text, '\n')
					next, nwhole, _, tooLong, err := c.lines.next(maxLineBytes)
					switch {
					case err == io.EOF:
						return c.broken(span, buf, first, fmt.Sprintf("the quoted field opened at line %d, column %d does not close before the end of the file", openLine, openCol))
					case err != nil:
						return span, nil, err
					case tooLong || len(c.raw)+len(nwhole) > maxLineBytes+c.slack:
						span.lines++
						return c.broken(span, buf, first, fmt.Sprintf("the record from line %d is longer than the limit of %d bytes (the quoted field opened at line %d, column %d does not close)", span.line, maxLineBytes, openLine, openCol))
					}
					span.lines++
					lineStart = len(c.raw)
					c.raw = append(c.raw, nwhole...)
					buf = c.raw
					lineEnd = lineStart + len(next)
					q, seg = lineStart, lineStart
					continue
				}
				i += q
				if i+1 < lineEnd && buf[i+1] == '"' { // a doubled quote
					if copied < 0 {
						copied = len(c.text)
					}
					c.text = append(c.text, buf[seg:i+1]...)
					q, seg = i+2, i+2
					continue
				}
				// The closing quote.
				f := csvField{start: pos + 1, end: i, raw: fieldStart}
				if copied >= 0 {
					c.text = append(c.text, buf[seg:i]...)
					f = csvField{start: copied, end: len(c.text), raw: fieldStart, inText: true}
				}
				c.fs = append(c.fs, f)
				pos = i + 1
				break
			}
			switch {
			case pos == lineEnd:
				return c.done(span, buf, lineEnd, multi, first)
			case bytes.HasPrefix(buf[pos:lineEnd], c.comma):
				pos += len(c.comma)
				continue
			}
			if multi {
				return c.broken(span, buf, first, fmt.Sprintf("parse error on line %d, column %d: %s", span.line+span.lines-1, col(pos), errQuote))
			}
			c.rec.Raw = buf[:lineEnd]
			return span, &csvError{line: span.line, col: col(pos), what: errQuote}, nil
		}
		// An unquoted field: up to the separator or the end of the line.
		end := lineEnd
		if k := bytes.Index(buf[pos:lineEnd], c.comma); k >= 0 {
			end = pos + k
		}
		if k := bytes.IndexByte(buf[pos:end], '"'); k >= 0 {
			if multi {
				return c.broken(span, buf, first, fmt.Sprintf("parse error on line %d, column %d: %s", span.line+span.lines-1, col(pos+k), errBareQuote))
			}
			c.rec.Raw = buf[:lineEnd]
			return span, &csvError{line: span.line, col: col(pos + k), what: errBareQuote}, nil
		}
		c.fs = append(c.fs, csvField{start: pos, end: end, raw: pos})
		if end == lineEnd {
			return c.done(span, buf, lineEnd, multi, first)
		}
		pos = end + len(c.comma)
	}
}

// csvFirst is the length of a record's first line, without and with its
// terminator.
type csvFirst struct{ content, whole int }

// done completes a parsed record: buf[:end] is its bytes.
func (c *csvReader) done(span csvSpan, buf []byte, end int, multi bool, first csvFirst) (csvSpan, *csvError, error) {
	if multi && c.width >= 0 && len(c.fs) != c.width {
		return c.broken(span, buf, first, fmt.Sprintf("the record of lines %d–%d has %d fields, header has %d", span.line, span.line+span.lines-1, len(c.fs), c.width))
	}
	c.rec.Raw = buf[:end]
	for _, f := range c.fs {
		b := buf
		if f.inText {
			b = c.text
		}
		c.rec.Fields = append(c.rec.Fields, b[f.start:f.end:f.end])
		c.rec.Starts = append(c.rec.Starts, f.raw)
	}
	return span, nil, nil
}

// broken handles a multi-line record that is not a valid record (buf is
// c.raw, its lines): it cuts the record to its first line and places the
// reader at the second line, reading the lines up to the end of the
// broken record one record each.
func (c *csvReader) broken(span csvSpan, buf []byte, first csvFirst, why string) (csvSpan, *csvError, error) {
	if c.width < 0 { // the header: no resynchronising
		c.rec.Raw = buf
		return span, &csvError{msg: why}, nil
	}
	end := c.lines.off // after the last line the record took
	if err := c.lines.seekTo(span.start+int64(first.whole), span.line); err != nil {
		return span, nil, err
	}
	c.single = end
	c.rec.Raw = buf[:first.content]
	last := span.line + span.lines - 1
	span.why = why + fmt.Sprintf(": only line %d is quarantined", span.line)
	switch {
	case last == span.line+1:
		span.why += fmt.Sprintf("; line %d is read again as a record of its own", last)
	case last > span.line+1:
		span.why += fmt.Sprintf("; lines %d–%d are read again, one record each", span.line+1, last)
	}
	span.lines = 1
	return span, nil, nil
}

// splitCSV parses raw as one CSV record of a file with line mode mode. It
// returns nil unless raw is exactly one valid record.
func splitCSV(raw []byte, comma rune, mode lineMode) *format.CSVRecord {
	c := &csvReader{lines: &lineReader{rd: bytes.NewReader(raw), mode: mode}, comma: utf8.AppendRune(nil, comma), width: -1}
	span, cerr, err := c.read()
	if err != nil || cerr != nil || span.why != "" || c.lines.off != int64(len(raw)) || span.start != 0 {
		return nil
	}
	return &c.rec
}

func (c *csvReader) close() error {
	if c.f == nil {
		return nil
	}
	return c.f.Close()
}

// at returns where the reader is: after the last record read.
func (c *csvReader) at() readerAt {
	return readerAt{off: c.lines.off, line: c.lines.line, mode: c.lines.mode, single: c.single}
}

func (c *csvReader) buffer() []byte { return c.lines.buf }
func (c *csvReader) file() *os.File { return c.f }
func (c *csvReader) size() int64    { return c.n }

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
	buf := make([]byte, 16<<10) // grows for a longer header
	for _, p := range s.files {
		h, err := readCSVHeader(p, o, buf)
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
// record, nil for an empty file), or returns o.columns. buf is a read
// buffer to reuse.
func readCSVHeader(path string, o *csvOptions, buf []byte) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !o.header {
		return o.columns, nil
	}
	c, err := newCSVReader(path, f, buf, o.comma, 0, 0, modeUnknown)
	if err != nil {
		return nil, err
	}
	return c.readHeader(o)
}

// claim reads the next record without decoding it, as next does: m.Pos,
// m.Raw (into the reader's buffers until the next call) and, for a
// record that is not valid CSV or is cut, m.Err. A line without a quote
// is a record of its own, split at its separators by Decode; a record
// with quotes is parsed here, to find where it ends, and split again by
// Decode.
func (c *csvReader) claim(m *source.Meta) error {
	if c.dec == nil {
		return io.EOF // an empty file
	}
	for {
		content, whole, start, tooLong, err := c.lines.next(maxLineBytes)
		if err != nil {
			return err
		}
		if !tooLong && len(content) == 0 {
			continue // an empty line
		}
		span := csvSpan{start: start, line: c.lines.line, lines: 1}
		c.rec.Reset()
		var cerr *csvError
		switch {
		case tooLong:
			c.rec.Raw = content
			span.why = fmt.Sprintf("line of about %d bytes is longer than the limit of %d bytes", c.lines.off-start, maxLineBytes)
		case bytes.IndexByte(content, '"') < 0:
			// What parse makes of it: the line, cut at the separators.
			c.rec.Raw = content
		default:
			span, cerr, err = c.parse(content, whole, span)
			if err != nil {
				return err
			}
		}
		m.Pos = changelog.Position{Source: c.path, Line: span.line, Offset: span.start}
		m.Raw = c.rec.Raw
		switch {
		case cerr != nil:
			m.Err = &source.DecodeError{Rule: "decode", Reason: cerr.Error()}
		case span.why != "":
			m.Err = &source.DecodeError{Rule: "decode", Reason: span.why}
		}
		if m.Err != nil && span.lines > 1 {
			m.Err.Reason += fmt.Sprintf(" (the record spans lines %d–%d)", span.line, span.line+span.lines-1)
		}
		return nil
	}
}

// csvDecoder is one goroutine's CSV decoding state for Decode: a splitter
// for a claimed record's bytes and a decoder per distinct header (their
// plans hold per-decoder caches).
type csvDecoder struct {
	c   csvReader
	l   lineReader
	rd  bytes.Reader
	buf []byte // the record's bytes and a line break, for rd
	// decs are decoders for the headers heads; dec is that of the file
	// at path, the last record's.
	heads [][]string
	decs  []*format.CSV
	path  string
	dec   *format.CSV
}

// decodeCSV is Decode for CSV files: it splits each record Claim left
// in b (m.Raw, one valid record) into its fields again and decodes them
// with its file's header.
func (s *Source) decodeCSV(b *source.Batch) {
	cd, _ := s.csvDecs.Get().(*csvDecoder)
	if cd == nil {
		cd = &csvDecoder{c: csvReader{comma: utf8.AppendRune(nil, s.csv.comma), width: -1}}
	}
	a := b.Arena()
	for i := range b.Meta {
		r, m := &b.Rows[i], &b.Meta[i]
		s.schema.Shape(r)
		if m.Err != nil {
			continue
		}
		if m.Pos.Source != cd.path {
			// Files mostly share a header: a decoder per distinct header.
			h := s.heads[m.Pos.Source]
			i := slices.IndexFunc(cd.heads, func(x []string) bool { return slices.Equal(x, h) })
			if i < 0 {
				dec, err := format.NewCSV(s.fields, h)
				if err != nil { // New built one for this header
					m.Err = &source.DecodeError{Rule: "decode", Reason: err.Error()}
					continue
				}
				i = len(cd.heads)
				cd.heads, cd.decs = append(cd.heads, h), append(cd.decs, dec)
			}
			cd.path, cd.dec = m.Pos.Source, cd.decs[i]
		}
		dec := cd.dec
		lines := cd.split(s, m)
		m.Err = dec.Decode(&cd.c.rec, r, a)
		if m.Err != nil && lines > 1 {
			e := *m.Err
			e.Reason += fmt.Sprintf(" (the record spans lines %d–%d)", m.Pos.Line, m.Pos.Line+lines-1)
			m.Err = &e
		}
	}
	s.csvDecs.Put(cd)
}

// split splits m.Raw, a record Claim found valid, into cd.c.rec, as the
// file's reader did, and returns the lines it spans.
func (cd *csvDecoder) split(s *Source, m *source.Meta) int64 {
	rec := &cd.c.rec
	rec.Reset()
	rec.Raw = m.Raw
	if bytes.IndexByte(m.Raw, '"') < 0 {
		raw, comma, at := m.Raw, cd.c.comma, 0
		for {
			k := bytes.Index(raw[at:], comma)
			if k < 0 {
				rec.Fields = append(rec.Fields, raw[at:len(raw):len(raw)])
				rec.Starts = append(rec.Starts, at)
				return 1
			}
			rec.Fields = append(rec.Fields, raw[at:at+k:at+k])
			rec.Starts = append(rec.Starts, at)
			at += k + len(comma)
		}
	}
	mode := modeLF
	if v, ok := s.modes.Load(m.Pos.Source); ok {
		mode = v.(lineMode)
	}
	// The record's bytes and a line break that ends its last line as the
	// file's did: "\r\n" after a "\r" that is part of the line (LF).
	cd.buf = append(cd.buf[:0], m.Raw...)
	if mode == modeLF && m.Raw[len(m.Raw)-1] == '\r' {
		cd.buf = append(cd.buf, '\r')
	}
	cd.buf = append(cd.buf, '\n')
	cd.rd.Reset(cd.buf)
	cd.l = lineReader{path: m.Pos.Source, rd: &cd.rd, buf: cd.l.buf[:cap(cd.l.buf)], mode: mode}
	cd.c.lines, cd.c.single, cd.c.slack = &cd.l, 0, 2
	span, cerr, err := cd.c.read()
	if err != nil || cerr != nil || span.why != "" || cd.l.off != int64(len(cd.buf)) || !bytes.Equal(rec.Raw, m.Raw) {
		// Claim parsed these bytes as one valid record: the same parse
		// does not disagree.
		rec.Reset()
		rec.Raw = m.Raw
		return 1
	}
	rec.Raw = m.Raw // in b's arena
	return span.lines
}
