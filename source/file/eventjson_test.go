package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/changelog"
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

// FuzzCSVEventJSON checks the quote-free fast path of the CSV EventJSON
// against encoding/csv (lazy quotes, the same separator) on any record:
// the JSON object must hold encoding/csv's fields under the header's
// names.
func FuzzCSVEventJSON(f *testing.F) {
	for _, s := range []string{"a,b,c", "", ",", "a,,", " x , y ", "é,ü", "a\rb,c", `a,"b,c"`, "a;b", "a,b\nc", "a,b,c,d,e"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, semicolon bool) {
		s := &Source{heads: map[string][]string{"f.csv": {"x", "y", "z"}}}
		s.csv.comma = ','
		if semicolon {
			s.csv.comma = ';'
		}
		got := s.EventJSON(nil, &source.Meta{Raw: []byte(raw), Pos: changelog.Position{Source: "f.csv"}})
		cr := csv.NewReader(strings.NewReader(raw))
		cr.Comma = s.csv.comma
		cr.FieldsPerRecord = -1
		cr.LazyQuotes = true
		rec, err := cr.Read()
		var want []byte
		if err != nil {
			want = appendRaw(nil, []byte(raw))
		} else {
			want = append(want, '{')
			for i, v := range rec {
				want = appendCSVMember(want, []string{"x", "y", "z"}, i, v)
			}
			want = append(want, '}')
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("EventJSON(%q) = %s; from encoding/csv %s", raw, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("EventJSON(%q) = %s: not JSON", raw, got)
		}
	})
}

// TestEventJSONConcurrent: EventJSON may run on several goroutines at
// once, on records of earlier batches, while Next reads on (opening new
// files, for CSV with their own headers). Run with -race; every result
// must equal the one computed alone.
func TestEventJSONConcurrent(t *testing.T) {
	files := map[string]string{}
	for f := range 6 {
		var b strings.Builder
		if f%2 == 0 {
			b.WriteString("id,store,amount\n")
		} else {
			b.WriteString("amount,id,store\n")
		}
		for i := range 50 {
			id, store, amount := fmt.Sprintf("e%d-%d", f, i), fmt.Sprintf("\"s,%d\"", i%5), fmt.Sprint(i)
			if f%2 == 0 {
				fmt.Fprintf(&b, "%s,%s,%s\n", id, store, amount)
			} else {
				fmt.Fprintf(&b, "%s,%s,%s\n", amount, id, store)
			}
		}
		files[fmt.Sprintf("%d.csv", f)] = b.String()
	}
	dir := writeFiles(t, files)
	open := func() *Source {
		s, err := New(Config{Spec: spec.Source{Path: dir, Format: "csv"}, Fields: testFields(t, "id:string", "store:string", "amount:int")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// The expected objects, one at a time.
	var want []string
	{
		s := open()
		var b source.Batch
		for {
			b.Reset()
			st, err := s.Next(context.Background(), &b, 1000)
			for i := range b.Meta {
				want = append(want, string(s.EventJSON(nil, &b.Meta[i])))
			}
			if err != nil || st == source.End {
				break
			}
		}
	}
	if len(want) != 300 || want[0] != `{"id":"e0-0","store":"s,0","amount":"0"}` || want[299] != `{"amount":"49","id":"e5-49","store":"s,4"}` {
		t.Fatalf("%d objects: %v … %v", len(want), want[0], want[len(want)-1])
	}
	s := open()
	batches := make([]*source.Batch, 0, 40)
	got := make([][]string, 4)
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make([]chan int, len(got)) // batch indexes, for each goroutine
	for g := range got {
		work[g] = make(chan int, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work[g] {
				mu.Lock()
				b := batches[k]
				mu.Unlock()
				for i := range b.Meta {
					got[g] = append(got[g], fmt.Sprintf("%d %s", b.Meta[i].Pos.Offset, s.EventJSON(nil, &b.Meta[i])))
				}
			}
		}()
	}
	for {
		b := new(source.Batch)
		st, err := s.Next(context.Background(), b, 8) // new files open while others read
		mu.Lock()
		batches = append(batches, b)
		k := len(batches) - 1
		mu.Unlock()
		for _, w := range work { // every goroutine reads every batch
			w <- k
		}
		if err != nil || st == source.End {
			break
		}
	}
	for _, w := range work {
		close(w)
	}
	wg.Wait()
	var all []string
	for _, b := range batches {
		for i := range b.Meta {
			all = append(all, fmt.Sprintf("%d %s", b.Meta[i].Pos.Offset, s.EventJSON(nil, &b.Meta[i])))
		}
	}
	for i := range all {
		if all[i][strings.IndexByte(all[i], ' ')+1:] != want[i] {
			t.Fatalf("record %d: %s, want %s", i, all[i], want[i])
		}
	}
	for g := range got {
		if len(got[g]) != len(all) {
			t.Fatalf("goroutine %d: %d objects, want %d", g, len(got[g]), len(all))
		}
		slices.Sort(got[g])
		sorted := slices.Sorted(slices.Values(all))
		if !slices.Equal(got[g], sorted) {
			t.Fatalf("goroutine %d got other objects", g)
		}
	}
}
