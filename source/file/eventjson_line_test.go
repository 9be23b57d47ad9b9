package file

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/source"
)

// FuzzJSONLEventJSON checks EventJSON of a JSONL record against its
// definition (the line made one line: appendOneLineJSON, if that is a JSON
// object; else {"_raw": …}) on any line, decoded or not: the shortcut for
// a decoded line without control characters must give the same bytes.
func FuzzJSONLEventJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` {"a":"x\ty"}`, "{\"a\":\"x\ty\"}", `{"a":`, `[1]`, `{"é":"ü"}`, "{\"a\":1}\r"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	s := &Source{jsonl: true}
	f.Fuzz(func(t *testing.T, line string, decoded bool) {
		m := source.Meta{Raw: []byte(line)}
		if !decoded || !validObject([]byte(line)) {
			// A line the decoder refused carries its error; a decoded
			// line is a JSON object (the decoder's first check).
			m.Err = &source.DecodeError{Rule: "decode"}
		}
		got := s.EventJSON(nil, &m)
		want := appendOneLineJSON(nil, m.Raw)
		if obj := bytes.TrimLeft(want, " \t"); len(obj) == 0 || obj[0] != '{' || !validObject(obj) {
			want = appendRaw(nil, m.Raw)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("EventJSON(%q, decoded %v) = %s, want %s", line, m.Err == nil, got, want)
		}
		if hasControl(m.Raw) != bytes.ContainsFunc(m.Raw, func(r rune) bool { return r < 0x20 }) {
			t.Fatalf("hasControl(%q) = %v", line, hasControl(m.Raw))
		}
	})
}

// TestHasControl: on lines of 0 to 100 bytes (so that every offset of
// the 32-byte and 8-byte steps and the tail is hit), one byte at every
// position set to each value from 0x00 to 0xff in turn, hasControl
// agrees with a byte-at-a-time check.
func TestHasControl(t *testing.T) {
	for n := range 101 {
		line := bytes.Repeat([]byte{'a'}, n)
		if hasControl(line) {
			t.Fatalf("hasControl(%d × 'a') = true", n)
		}
		for pos := range n {
			for c := range 256 {
				line[pos] = byte(c)
				if got, want := hasControl(line), c < 0x20; got != want {
					t.Fatalf("hasControl: %d bytes, %#x at %d: %v, want %v", n, c, pos, got, want)
				}
			}
			line[pos] = 'a'
		}
	}
}

func validObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// BenchmarkJSONLEventJSON: the article's order event, decoded.
func BenchmarkJSONLEventJSON(b *testing.B) {
	s := &Source{jsonl: true}
	m := source.Meta{Raw: []byte(`{"event_id":"evt-20260624-0001","event_type":"OrderPaid","event_version":1,"order_id":"ord-100","store_id":"store-7","amount":49000,"currency":"KRW","paid_at":"2026-06-24T11:48:31+09:00","produced_at":"2026-06-24T11:48:33+09:00"}`)}
	var dst []byte
	b.SetBytes(int64(len(m.Raw)))
	for b.Loop() {
		dst = s.EventJSON(dst[:0], &m)
	}
}
