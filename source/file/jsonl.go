package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// MaxLineBytes is the longest JSON line the file source decodes (64 MiB,
// without its line terminator). A longer line becomes a record with a
// "decode" error whose Raw holds only its first TruncatedRawBytes bytes.
const MaxLineBytes = 64 << 20

// TruncatedRawBytes is how much of an over-long line is kept in Meta.Raw.
const TruncatedRawBytes = 1 << 10

// maxLineBytes is MaxLineBytes; tests lower it.
var maxLineBytes = MaxLineBytes

// jsonlBufferSize is the read buffer of a JSONL file.
const jsonlBufferSize = 256 << 10

// bom is the UTF-8 byte order mark, skipped at the start of a file.
var bom = []byte{0xEF, 0xBB, 0xBF}

// jsonlReader streams the records of one JSONL file, line by line.
type jsonlReader struct {
	path string
	f    *os.File
	br   *bufio.Reader
	dec  *format.JSON
	long []byte // a line longer than the read buffer
	line int64  // lines consumed
	off  int64  // byte offset of the next line
}

func openJSONL(path string, dec *format.JSON, br *bufio.Reader) (*jsonlReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if br == nil {
		br = bufio.NewReaderSize(f, jsonlBufferSize)
	} else {
		br.Reset(f)
	}
	return &jsonlReader{path: path, f: f, br: br, dec: dec}, nil
}

// next decodes the next non-blank line, its strings into a. m.Raw points
// into the reader's buffer until the next call.
func (j *jsonlReader) next(r *row.Row, m *source.Meta, a *source.Arena) error {
	for {
		start := j.off
		b, n, tooLong, err := j.readLine()
		if err != nil {
			return err
		}
		j.line++
		j.off += n
		if start == 0 && len(b) >= 3 && b[0] == bom[0] && b[1] == bom[1] && b[2] == bom[2] {
			b, start = b[3:], 3
		}
		if !tooLong && blank(b) {
			continue
		}
		m.Pos = changelog.Position{Source: j.path, Line: j.line, Offset: start}
		m.Raw = b
		if tooLong {
			m.Err = &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("line of about %d bytes is longer than the limit of %d bytes", n, maxLineBytes)}
			return nil
		}
		m.Err = j.dec.Decode(b, r, a)
		return nil
	}
}

// readLine returns the next line without its terminator ("\n" or "\r\n")
// and the number of bytes it spans in the file. A line longer than
// MaxLineBytes is consumed whole, but only its first TruncatedRawBytes are
// returned, with tooLong set. It returns io.EOF after the last line.
func (j *jsonlReader) readLine() (b []byte, n int64, tooLong bool, err error) {
	b, err = j.br.ReadSlice('\n')
	n = int64(len(b))
	if errors.Is(err, bufio.ErrBufferFull) {
		j.long = append(j.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = j.br.ReadSlice('\n')
			n += int64(len(b))
			switch {
			case tooLong:
			case len(j.long)+len(b) > maxLineBytes+2: // +2: the terminator
				tooLong = true
				j.long = j.long[:min(len(j.long), TruncatedRawBytes)]
			default:
				j.long = append(j.long, b...)
			}
		}
		b = j.long
	}
	switch {
	case err == io.EOF && n == 0:
		return nil, 0, false, io.EOF
	case err != nil && err != io.EOF:
		return nil, 0, false, fmt.Errorf("%s: %w", j.path, err)
	}
	if tooLong {
		return b, n, true, nil
	}
	if k := len(b); k > 0 && b[k-1] == '\n' {
		b = b[:k-1]
		if k := len(b); k > 0 && b[k-1] == '\r' {
			b = b[:k-1]
		}
	}
	if len(b) > maxLineBytes {
		return b[:min(len(b), TruncatedRawBytes)], n, true, nil
	}
	return b, n, false, nil
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

func (r *jsonlReader) offset() int64 { return r.off }
