package file

import (
	"fmt"
	"io"
	"os"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// MaxLineBytes is the longest JSON line (or CSV record) the file source
// decodes (64 MiB, without its line terminator). A longer one becomes a
// record with a "decode" error whose Raw holds only its first
// TruncatedRawBytes bytes.
const MaxLineBytes = 64 << 20

// TruncatedRawBytes is how much of an over-long line is kept in Meta.Raw.
const TruncatedRawBytes = 1 << 10

// maxLineBytes is MaxLineBytes; tests lower it.
var maxLineBytes = MaxLineBytes

// bom is the UTF-8 byte order mark, skipped at the start of a file.
var bom = []byte{0xEF, 0xBB, 0xBF}

// jsonlReader streams the records of one JSONL file, line by line.
type jsonlReader struct {
	path  string
	f     *os.File
	n     int64 // the file's size when opened
	lines *lineReader
	dec   *format.JSON
}

// openJSONL opens the file at path at offset off, the start of line
// line+1 (0, 0: the start of the file), with the line mode the lines
// before it established; buf is a read buffer to reuse, or nil.
func openJSONL(path string, dec *format.JSON, buf []byte, off, line int64, mode lineMode) (*jsonlReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	l, err := newLineReader(path, f, buf, off, line, mode)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &jsonlReader{path: path, f: f, n: st.Size(), lines: l, dec: dec}, nil
}

// next decodes the next non-blank line, its strings into a. m.Raw points
// into the reader's buffer until the next call.
func (j *jsonlReader) next(r *row.Row, m *source.Meta, a *source.Arena) error {
	for {
		b, _, start, tooLong, err := j.lines.next(maxLineBytes)
		if err != nil {
			return err
		}
		if !tooLong && blank(b) {
			continue
		}
		m.Pos = changelog.Position{Source: j.path, Line: j.lines.line, Offset: start}
		m.Raw = b
		if tooLong {
			m.Err = &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("line of about %d bytes is longer than the limit of %d bytes", j.lines.off-start, maxLineBytes)}
			return nil
		}
		m.Err = j.dec.Decode(b, r, a)
		return nil
	}
}

// claim reads the next non-blank line without decoding it, as next does:
// m.Pos, m.Raw (into the reader's buffer until the next call) and, for
// an over-long line, m.Err.
func (j *jsonlReader) claim(m *source.Meta) error {
	for {
		b, _, start, tooLong, err := j.lines.next(maxLineBytes)
		if err != nil {
			return err
		}
		if !tooLong && blank(b) {
			continue
		}
		m.Pos = changelog.Position{Source: j.path, Line: j.lines.line, Offset: start}
		m.Raw = b
		if tooLong {
			m.Err = &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("line of about %d bytes is longer than the limit of %d bytes", j.lines.off-start, maxLineBytes)}
		}
		return nil
	}
}

// blank reports whether a line holds only spaces, tabs and carriage
// returns.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

func (j *jsonlReader) close() error { return j.f.Close() }

// at returns where the reader is: after the last line read.
func (j *jsonlReader) at() readerAt {
	return readerAt{off: j.lines.off, line: j.lines.line, mode: j.lines.mode}
}

func (j *jsonlReader) buffer() []byte { return j.lines.buf }
func (j *jsonlReader) file() *os.File { return j.f }
func (j *jsonlReader) size() int64    { return j.n }
