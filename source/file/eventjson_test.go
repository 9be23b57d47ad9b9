package file

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

func TestEventJSON(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		data  string
		specs []string
		want  []string // EventJSON of each record
	}{
		{
			name:  "jsonl: the line as is",
			file:  "a.jsonl",
			data:  `{"id":"e1", "amount": 2.50}` + "\n",
			specs: []string{"id:string"},
			want:  []string{`{"id":"e1", "amount": 2.50}`},
		},
		{
			name:  "jsonl: control characters made safe",
			file:  "a.jsonl",
			data:  "{\"id\":\"a\tb\\\x01\",\r\"n\":1}\n",
			specs: []string{"n:int"},
			want:  []string{`{"id":"a\tb\u0001", "n":1}`},
		},
		{
			name:  "csv: header order, escaping, extra and missing fields, broken quoting",
			file:  "a.csv",
			data:  "Invoice No,Description,Qty\n1,\"say \"\"hi\"\"\n\\ok\",2\n3,x,4,extra\n5\n6,\"unterminated\n",
			specs: []string{"Qty:int"},
			want: []string{
				`{"Invoice No":"1","Description":"say \"hi\"\n\\ok","Qty":"2"}`,
				`{"Invoice No":"3","Description":"x","Qty":"4","_4":"extra"}`,
				`{"Invoice No":"5"}`,
				`{"Invoice No":"6","Description":"unterminated"}`,
			},
		},
		{
			name:  "csv: invalid UTF-8",
			file:  "a.csv",
			data:  "k\n\xff\n",
			specs: []string{"k:string"},
			want:  []string{`{"k":"\ufffd"}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{tc.file: tc.data})
			s, err := New(Config{Spec: spec.Source{Path: dir + "/" + tc.file}, Fields: testFields(t, tc.specs...)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var b source.Batch
			s.Next(context.Background(), &b, 100)
			if b.Len() != len(tc.want) {
				t.Fatalf("%d records, want %d", b.Len(), len(tc.want))
			}
			for i := range b.Meta {
				got := string(s.EventJSON(nil, &b.Meta[i]))
				if got != tc.want[i] {
					t.Errorf("record %d\n got: %s\nwant: %s", i, got, tc.want[i])
				}
				if !json.Valid([]byte(got)) {
					t.Errorf("record %d: not valid JSON: %s", i, got)
				}
			}
		})
	}
}

// FuzzSplitCSV checks the quote-free fast path of splitCSV against
// encoding/csv with the same settings on any record.
func FuzzSplitCSV(f *testing.F) {
	for _, s := range []string{"a,b,c", "", ",", "a,,", " x , y ", "é,ü", "a\rb,c", `a,"b,c"`, "a;b", "a,b\nc"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, semicolon bool) {
		s := &Source{}
		s.csv.comma = ','
		if semicolon {
			s.csv.comma = ';'
		}
		got, ok := s.splitCSV([]byte(raw))
		cr := csv.NewReader(strings.NewReader(raw))
		cr.Comma = s.csv.comma
		cr.FieldsPerRecord = -1
		cr.LazyQuotes = true
		want, err := cr.Read()
		if ok != (err == nil) || !slices.Equal(got, want) {
			t.Fatalf("splitCSV(%q) = %q, %v; encoding/csv %q, %v", raw, got, ok, want, err)
		}
	})
}
