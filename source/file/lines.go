package file

import (
	"bytes"
	"fmt"
	"io"
)

// lineMode is how the lines of a file end. It is decided when the first
// line is read, from the bytes buffered then (see decide), and kept for
// the rest of the file.
type lineMode uint8

const (
	// modeUnknown: no line break read yet.
	modeUnknown lineMode = iota
	// modeLF: lines end with "\n" or "\r\n" (Unix, Windows); a "\r" that
	// is not followed by "\n" is part of the line, except at the end of
	// the file.
	modeLF
	// modeCR: the start of the file holds more lone "\r" than "\n"
	// (classic Mac OS): lines end with "\r", "\r\n" or "\n".
	modeCR
)

// String returns "unknown", "LF" or "CR".
func (m lineMode) String() string {
	switch m {
	case modeLF:
		return "LF"
	case modeCR:
		return "CR"
	}
	return "unknown"
}

// lineBufferSize is the initial read buffer of a file (256 KiB); it grows
// to hold the longest line, up to the line limit.
const lineBufferSize = 256 << 10

// lineReader streams the lines of one file. It tracks the file offset
// and the number of lines consumed, so that a reader can be placed at
// any line start again (seekTo).
type lineReader struct {
	path string
	rd   io.ReadSeeker
	buf  []byte
	r, w int   // unread bytes: buf[r:w]
	eof  bool  // rd returned io.EOF: buf[r:w] is all that is left
	off  int64 // file offset of buf[r]
	line int64 // lines consumed
	mode lineMode
	long []byte // the kept start of an over-long line
}

// newLineReader reads rd, positioned at file offset off, which starts
// line line+1 (line lines consumed before it); mode is what the lines
// before it established (modeUnknown at the start of a file). A UTF-8
// byte order mark at offset 0 is skipped.
//
// buf, when not nil, is a buffer to reuse (of an earlier reader).
func newLineReader(path string, rd io.ReadSeeker, buf []byte, off, line int64, mode lineMode) (*lineReader, error) {
	l := &lineReader{path: path, rd: rd, buf: buf[:cap(buf)], off: off, line: line, mode: mode}
	if off == 0 {
		if err := l.fill(3); err != nil {
			return nil, err
		}
		if bytes.HasPrefix(l.buf[l.r:l.w], bom) {
			l.r += 3
			l.off = 3
		}
	}
	return l, nil
}

// fill reads until at least n bytes are buffered after l.r, or the end of
// the file. The buffer grows when n does not fit.
func (l *lineReader) fill(n int) error {
	for !l.eof && l.w-l.r < n {
		if l.buf == nil {
			l.buf = make([]byte, max(lineBufferSize, n))
		}
		if l.r > 0 && (l.w == len(l.buf) || l.r == l.w) {
			// Move the unread bytes to the front.
			l.w = copy(l.buf, l.buf[l.r:l.w])
			l.r = 0
		}
		if l.w == len(l.buf) {
			nb := make([]byte, max(2*len(l.buf), n))
			l.w = copy(nb, l.buf[l.r:l.w])
			l.r = 0
			l.buf = nb
		}
		k, err := l.rd.Read(l.buf[l.w:])
		l.w += k
		switch {
		case err == io.EOF: // the file's end (io.Reader's own io.EOF, never a wrapped one)
			l.eof = true
		case err != nil:
			return fmt.Errorf("%s: %w", l.path, err)
		}
	}
	return nil
}

// seekTo places the reader at file offset off, the start of line line+1.
func (l *lineReader) seekTo(off, line int64) error {
	if _, err := l.rd.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	l.r, l.w, l.eof = 0, 0, false
	l.off, l.line = off, line
	return nil
}

// next returns the next line: its content without the line terminator,
// and the whole line with its terminator (both valid until the next
// call), the file offset where it starts, and whether it is longer than
// limit bytes. An over-long line is consumed whole, but only its first
// TruncatedRawBytes bytes are returned (as content and as whole). next
// returns io.EOF after the last line; other errors are read errors.
func (l *lineReader) next(limit int) (content, whole []byte, start int64, tooLong bool, err error) {
	start = l.off
	scanned := 0 // bytes of buf[l.r:] known to hold no terminator
	for {
		end, term := l.find(scanned)
		if end >= 0 && term == 0 {
			// A "\r" at the end of the buffer: is it followed by "\n"?
			if err := l.fill(end - l.r + 2); err != nil {
				return nil, nil, 0, false, err
			}
			end, term = l.find(scanned)
		}
		switch {
		case end >= 0:
			content = l.buf[l.r:end]
			whole = l.buf[l.r : end+term]
			l.r = end + term
		case l.eof:
			if l.r == l.w {
				return nil, nil, 0, false, io.EOF
			}
			content = l.buf[l.r:l.w]
			whole = content
			if k := len(content); k > 0 && content[k-1] == '\r' {
				content = content[:k-1] // "a final \r ends the line"
			}
			l.r = l.w
		case l.w-l.r > limit+2: // +2: a terminator may follow
			return l.skipLong(start)
		default:
			// Bytes scanned hold no terminator, but the last one may be a
			// "\r" whose meaning depends on the next byte.
			scanned = max(l.w-l.r-1, 0)
			if err := l.fill(l.w - l.r + 1); err != nil {
				return nil, nil, 0, false, err
			}
			continue
		}
		l.off += int64(len(whole))
		l.line++
		if len(content) > limit {
			k := min(len(content), TruncatedRawBytes)
			c := content[:k:k]
			return c, c, start, true, nil
		}
		return content, whole, start, false, nil
	}
}

// find returns the index in buf of the first line terminator at or after
// buf[l.r+from], and its length (1 or 2), or end −1 when the buffered
// bytes hold none. It returns term 0 for a "\r" that is the last buffered
// byte before the end of the file: whether "\n" follows is not known yet.
// It decides the line mode at the file's first line break.
func (l *lineReader) find(from int) (end, term int) {
	if l.mode == modeUnknown && !l.decide() {
		return -1, 0
	}
	b := l.buf[l.r+from : l.w]
	if l.mode == modeLF {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return -1, 0
		}
		i += l.r + from
		if i > l.r && l.buf[i-1] == '\r' {
			return i - 1, 2
		}
		return i, 1
	}
	for i, c := range b { // modeCR
		if c != '\r' && c != '\n' {
			continue
		}
		i += l.r + from
		if c == '\n' {
			return i, 1
		}
		if i+1 == l.w {
			if !l.eof {
				return i, 0
			}
			return -1, 0 // a final "\r": the end of the file ends the line
		}
		if l.buf[i+1] == '\n' {
			return i, 2
		}
		return i, 1
	}
	return -1, 0
}

// decide sets the line mode from the buffered bytes (the start of the
// file, up to the buffer's size) and reports whether it could: CR when
// they hold more lone "\r" than "\n" line breaks, else LF; not yet when
// they hold neither and more bytes follow. So a "\r" in a file whose lines
// end with "\n" stays part of its line (JSON white space, CSV text), and
// a "\n" in a quoted field of a file of "\r" lines does not make it one
// long line.
func (l *lineReader) decide() bool {
	b := l.buf[l.r:l.w]
	lf := bytes.Count(b, []byte{'\n'})
	cr := bytes.Count(b, []byte{'\r'}) - bytes.Count(b, []byte{'\r', '\n'})
	if k := len(b); k > 0 && b[k-1] == '\r' && !l.eof {
		cr-- // a "\n" may follow
	}
	switch {
	case cr > lf:
		l.mode = modeCR
	case lf > 0 || cr > 0 || l.eof:
		l.mode = modeLF
	default:
		return false
	}
	return true
}

// skipLong consumes the rest of a line longer than the limit, keeping its
// first TruncatedRawBytes bytes.
func (l *lineReader) skipLong(start int64) (content, whole []byte, _ int64, tooLong bool, err error) {
	l.long = append(l.long[:0], l.buf[l.r:l.r+min(TruncatedRawBytes, l.w-l.r)]...)
	for {
		end, term := l.find(0)
		if end >= 0 && term == 0 {
			if err := l.fill(end - l.r + 2); err != nil {
				return nil, nil, 0, false, err
			}
			continue
		}
		if end >= 0 {
			l.off += int64(end + term - l.r)
			l.r = end + term
			break
		}
		l.off += int64(l.w - l.r)
		l.r = l.w
		if l.eof {
			break
		}
		if err := l.fill(1); err != nil {
			return nil, nil, 0, false, err
		}
	}
	l.line++
	return l.long, l.long, start, true, nil
}
