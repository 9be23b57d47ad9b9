package file

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// corpus is the expected outcome of each file of testdata/bad (see its
// README): per record, the line it starts on and the rule of its decode
// error ("" when it decoded).
var corpus = map[string]struct {
	lines []int64
	rules []string
}{
	"unterminated_quote.csv":  {[]int64{2, 3, 4, 5, 6, 7, 8, 9}, []string{"", "", "decode", "", "", "", "", ""}},
	"quote_closes_later.csv":  {[]int64{2, 3, 4, 5}, []string{"decode", "", "", ""}},
	"cr_only.csv":             {[]int64{2, 3, 5, 6, 7}, []string{"", "", "type", "", ""}},
	"crlf_bom_duplicates.csv": {[]int64{2, 4, 5, 6, 7}, []string{"", "", "", "", ""}},
	"encoding.csv":            {[]int64{2, 3, 4, 5}, []string{"encoding", "encoding", "encoding", ""}},
	"field_counts.csv":        {[]int64{2, 3, 4, 5, 6, 7}, []string{"decode", "decode", "decode", "decode", "decode", ""}},
	"late_and_filtered.csv":   {[]int64{2, 3, 4, 5, 6, 7}, []string{"", "", "", "", "", ""}},
	"header_only.csv":         {nil, nil},
	"empty.csv":               {nil, nil},
	"broken_lines.jsonl":      {[]int64{1, 2, 3, 5, 6, 7, 8}, []string{"", "decode", "decode", "decode", "type", "timestamp", ""}},
	"cr_only.jsonl":           {[]int64{1, 2, 4, 5}, []string{"", "", "", ""}},
	"encoding.jsonl":          {[]int64{1, 2, 3, 4, 5}, []string{"encoding", "encoding", "encoding", "encoding", ""}},
	"crlf_bom_conflict.jsonl": {[]int64{1, 3, 4}, []string{"", "", ""}},
	"empty.jsonl":             {nil, nil},
}

// TestBadInputCorpus: every record of every file of the bad input corpus
// is delivered by itself — decoded, or with the decode error that sends
// it to quarantine — at the line it starts on; nothing is swallowed by a
// broken neighbour, and every quarantined record's raw bytes are its own
// line(s) of the file.
func TestBadInputCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "bad")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		name := e.Name()
		if name == "README.md" {
			continue
		}
		want, ok := corpus[name]
		if !ok {
			t.Errorf("%s: no expectation in corpus", name)
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Spec: spec.Source{Path: filepath.Join(dir, name)},
				Fields: testFields(t, "event_id:string", "store_id:string", "amount:decimal", "ts:timestamp"), EventTimeField: "ts"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var lines []int64
			var rules []string
			var b source.Batch
			for {
				b.Reset()
				st, err := s.Next(context.Background(), &b, 2)
				for i := range b.Meta {
					m := &b.Meta[i]
					lines = append(lines, m.Pos.Line)
					rule := ""
					if m.Err != nil {
						rule = m.Err.Rule
					}
					rules = append(rules, rule)
					if !strings.Contains(string(data), string(m.Raw)) || len(m.Raw) == 0 {
						t.Errorf("line %d: raw %q is not a part of the file", m.Pos.Line, m.Raw)
					}
				}
				if st == source.End {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(lines, want.lines) || !slices.Equal(rules, want.rules) {
				t.Fatalf("records at lines %v with rules %q\nwant lines %v with rules %q", lines, rules, want.lines, want.rules)
			}
		})
	}
	if seen != len(corpus) {
		t.Fatalf("%d files in testdata/bad, %d expected", seen, len(corpus))
	}
}
