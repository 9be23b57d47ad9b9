package file

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// FuzzSource reads arbitrary bytes as a JSONL file and as a CSV file,
// with an ordinal and a partition field, and checks that the source never
// fails or panics on content, that positions move forward, and that
// EventJSON always gives valid JSON.
func FuzzSource(f *testing.F) {
	for _, s := range []string{
		"{\"k\":\"a\",\"n\":1,\"ts\":\"2026-09-01T10:00:00Z\"}\n\n{\"k\":\"a\",\"n\":\"x\"}\r\n[1]\n",
		"k,n,ts\na,1,2026-09-01T10:00:00Z\n\"b,\nc\",2,\nbad\"quote,3,\n,,\n",
		"\xEF\xBB\xBFk,n,ts\n\"unterminated\n",
		"k,n,ts\n\xff,\x00,\"\r\"\n",
		"{\"k\":\"\x01\\\x02\"}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"in.jsonl", "in.csv"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{
				Spec:           spec.Source{Path: p, PartitionField: "k", Ordinal: &spec.Ordinal{Field: "line", Per: "k"}},
				Fields:         testFields(t, "k:string", "n:int", "ts:timestamp", "line:int"),
				EventTimeField: "ts",
			})
			if err != nil {
				continue // a CSV header that does not parse or lacks columns
			}
			var b source.Batch
			var line, off int64
			for range 10000 {
				b.Reset()
				st, err := s.Next(context.Background(), &b, 3)
				for i := range b.Meta {
					m := &b.Meta[i]
					if m.Pos.Line <= line || m.Pos.Offset < off || m.Pos.Offset > int64(len(data)) {
						t.Fatalf("%s: position %v after line %d offset %d", name, m.Pos, line, off)
					}
					line, off = m.Pos.Line, m.Pos.Offset
					if m.Partition < 0 || (m.Partition >= len(s.Partitions()) && len(s.Partitions()) > 0) {
						t.Fatalf("partition %d of %q", m.Partition, s.Partitions())
					}
					if js := s.EventJSON(nil, m); !json.Valid(js) {
						t.Fatalf("%s: EventJSON of %q is not JSON: %q", name, m.Raw, js)
					}
				}
				if st == source.End {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			s.Close()
		}
	})
}
