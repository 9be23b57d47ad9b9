package file

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// TestEncodingRule: a decoded string field holding a NUL character or
// invalid UTF-8 quarantines its record (rule "encoding", the field and
// the byte offset in the record), in JSONL and in CSV, so that it never
// reaches a sink that cannot store it; two keys that differ only in
// invalid bytes are never merged into one. Fields that are not decoded
// may hold anything.
func TestEncodingRule(t *testing.T) {
	jsonl := strings.Join([]string{
		`{"event_id":"e1","store_id":"st\u0000re","note":"ok"}`,
		"{\"event_id\":\"e2\",\"store_id\":\"\xff x\"}",
		"{\"event_id\":\"e3\",\"store_id\":\"\xfe x\"}",
		`{"event_id":"e4","store_id":"s\ud800"}`,
		"{\"event_id\":\"e5\",\"store_id\":\"ok\",\"skipped\":\"\xff\\u0000\"}",
	}, "\n")
	csv := "event_id,store_id,skipped\n" +
		"e1,st\x00re,\n" +
		"e2,\"\xff x\",\n" +
		"e3,\xfe x,\n" +
		"e4,ok,\xff\x00\n"
	lines := strings.Split(jsonl, "\n")
	off := func(data string, line int, sub string) int { // the byte of sub in a line, found independently
		l := strings.Split(data, "\n")[line-1]
		return strings.Index(l, sub)
	}
	tests := []struct {
		file, data string
		want       []rec
	}{
		{"a.jsonl", jsonl, []rec{
			{`event_id="e1" store_id=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:1@0 raw=%q err=encoding field store_id: NUL character at byte %d (PostgreSQL text cannot store it)`, lines[0], off(jsonl, 1, `\u0000`))},
			{`event_id="e2" store_id=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:2@%d raw=%q err=encoding field store_id: invalid UTF-8 at byte %d`, lineAt(jsonl, "\n", 2), lines[1], off(jsonl, 2, "\xff"))},
			{`event_id="e3" store_id=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:3@%d raw=%q err=encoding field store_id: invalid UTF-8 at byte %d`, lineAt(jsonl, "\n", 3), lines[2], off(jsonl, 3, "\xfe"))},
			{`event_id="e4" store_id=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:4@%d raw=%q err=encoding field store_id: lone surrogate \ud800 at byte %d (not a character: UTF-8 cannot hold it)`, lineAt(jsonl, "\n", 4), lines[3], off(jsonl, 4, `\ud800`))},
			{`event_id="e5" store_id="ok"`, fmt.Sprintf(`p=0/ at=none a.jsonl:5@%d raw=%q`, lineAt(jsonl, "\n", 5), lines[4])},
		}},
		{"a.csv", csv, []rec{
			{`event_id="e1" store_id=null`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="e1,st\x00re," err=encoding field store_id: NUL character at byte %d (PostgreSQL text cannot store it)`, lineAt(csv, "\n", 2), off(csv, 2, "\x00"))},
			{`event_id="e2" store_id=null`, fmt.Sprintf(`p=0/ at=none a.csv:3@%d raw="e2,\"\xff x\"," err=encoding field store_id: invalid UTF-8 at byte %d`, lineAt(csv, "\n", 3), off(csv, 3, "\xff"))},
			{`event_id="e3" store_id=null`, fmt.Sprintf(`p=0/ at=none a.csv:4@%d raw="e3,\xfe x," err=encoding field store_id: invalid UTF-8 at byte %d`, lineAt(csv, "\n", 4), off(csv, 4, "\xfe"))},
			{`event_id="e4" store_id="ok"`, fmt.Sprintf(`p=0/ at=none a.csv:5@%d raw="e4,ok,\xff\x00"`, lineAt(csv, "\n", 5))},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{tc.file: tc.data})
			s, err := New(Config{Spec: spec.Source{Path: dir + "/" + tc.file}, Fields: testFields(t, "event_id:string", "store_id:string")})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			diff(t, drain(t, s, 10, dir), tc.want)
		})
	}
}
