package file

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
)

// EventJSON appends the original record of m as a JSON object: for JSONL
// the line itself (control characters, which fastjson tolerates, are
// escaped inside strings and turned into spaces outside them, so the
// result is one line), or {"_raw": "<the line>"} when that is still not a
// valid JSON object (a quarantined line, or NaN in a member the decoder
// skipped); for CSV an object of every header column in header
// order, {"Column": "text", ...}, values as JSON strings. A CSV record
// with more fields than its header adds "_9", "_10" … (1-based column
// numbers) for the extra ones and leaves out columns it lacks; one that is
// not valid CSV at all gives {"_raw": "<the bytes>"}.
//
// EventJSON is safe for concurrent use, also while Next runs: it reads
// m (Raw lives in m's batch), the CSV options and the CSV headers, which
// New reads once and which never change afterwards.
func (s *Source) EventJSON(dst []byte, m *source.Meta) []byte {
	if s.avro != nil {
		return s.avroEventJSON(dst, m)
	}
	if s.jsonl {
		if m.Err == nil && !hasControl(m.Raw) {
			// The decoder accepted the line, so it is a JSON object by
			// RFC 8259 (both of its paths check that first), and without
			// a control character it is one line already: the line itself.
			return append(dst, m.Raw...)
		}
		n := len(dst)
		dst = appendOneLineJSON(dst, m.Raw)
		if obj := bytes.TrimLeft(dst[n:], " \t"); len(obj) > 0 && obj[0] == '{' && format.ValidJSON(obj) {
			return dst
		}
		return appendRaw(dst[:n], m.Raw)
	}
	header := s.heads[m.Pos.Source] // read-only after New
	comma := s.csv.comma
	raw := m.Raw
	if comma < utf8.RuneSelf && len(raw) > 0 && bytes.IndexAny(raw, "\"\r\n") < 0 {
		// A record without quotes or line breaks: its fields are the text
		// between separators, which is what encoding/csv returns for it,
		// without a reader per record.
		text := unsafe.String(unsafe.SliceData(raw), len(raw))
		dst = append(dst, '{')
		for i := 0; ; i++ {
			j := strings.IndexByte(text, byte(comma))
			v := text
			if j >= 0 {
				v = text[:j]
			}
			dst = appendCSVMember(dst, header, i, v)
			if j < 0 {
				return append(dst, '}')
			}
			text = text[j+1:]
		}
	}
	cr := csv.NewReader(bytes.NewReader(raw))
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	rec, err := cr.Read()
	if err != nil {
		return appendRaw(dst, raw)
	}
	dst = append(dst, '{')
	for i, v := range rec {
		dst = appendCSVMember(dst, header, i, v)
	}
	return append(dst, '}')
}

// appendCSVMember appends field i of a CSV record as a JSON member named
// by the header ("_9" for a field beyond it), after a comma unless it is
// the first.
func appendCSVMember(dst []byte, header []string, i int, v string) []byte {
	if i > 0 {
		dst = append(dst, ',')
	}
	if i < len(header) {
		dst = changelog.AppendJSONString(dst, header[i])
	} else {
		dst = append(dst, `"_`...)
		dst = appendInt(dst, i+1)
		dst = append(dst, '"')
	}
	dst = append(dst, ':')
	return changelog.AppendJSONString(dst, v)
}

// appendRaw appends {"_raw": "<raw as a JSON string>"}.
func appendRaw(dst, raw []byte) []byte {
	dst = append(dst, `{"_raw":`...)
	dst = changelog.AppendJSONString(dst, string(raw))
	return append(dst, '}')
}

func appendInt(dst []byte, n int) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

const hexDigits = "0123456789abcdef"

// hasControl reports whether b holds a byte below 0x20, testing eight
// bytes at a time (a lane below 0x20 borrows into its high bit when 0x20
// is subtracted; Hacker's Delight §6-1).
//
// Thirty-two bytes go through one test (four words' borrows OR-ed, one
// bounds check): EventJSON of the article's 242-byte line
// (BenchmarkJSONLEventJSON) took 846 instructions testing eight bytes at
// a time, 413 so (callgrind, 2026-12-01).
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	i := 0
	for ; i+32 <= len(b); i += 32 {
		w := b[i : i+32 : i+32]
		x0 := binary.LittleEndian.Uint64(w[0:8])
		x1 := binary.LittleEndian.Uint64(w[8:16])
		x2 := binary.LittleEndian.Uint64(w[16:24])
		x3 := binary.LittleEndian.Uint64(w[24:32])
		if ((x0-lo)&^x0|(x1-lo)&^x1|(x2-lo)&^x2|(x3-lo)&^x3)&hi != 0 {
			return true
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-lo)&^x&hi != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

// appendEscape appends the JSON escape of the ASCII byte c.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendOneLineJSON appends a JSON text with every control character made
// safe: escaped inside strings, a space outside them.
func appendOneLineJSON(dst []byte, raw []byte) []byte {
	in, esc := false, false
	start := 0
	for i, c := range raw {
		switch {
		case esc:
			esc = false
			if c < 0x20 { // a backslash before a control character
				dst = append(dst, raw[start:i]...)
				dst = append(dst, 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				start = i + 1
			}
		case c == '\\' && in:
			esc = true
		case c == '"':
			in = !in
		case c < 0x20:
			dst = append(dst, raw[start:i]...)
			if in {
				dst = appendEscape(dst, c)
			} else {
				dst = append(dst, ' ')
			}
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}
