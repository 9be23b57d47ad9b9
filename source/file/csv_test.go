package file

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// csvRecords reads every record of data with the file source's CSV parser
// without resynchronising (as for a header: a broken record is an error
// and reading goes on after it, as encoding/csv does). Each record is its
// fields joined by "|" (quoted), or "error"; offs holds the offset after
// each.
func csvRecords(data []byte, comma rune) (recs []string, offs []int64, mode lineMode) {
	c := &csvReader{lines: &lineReader{rd: bytes.NewReader(data)}, comma: []byte(string(comma)), width: -1}
	for {
		span, cerr, err := c.read()
		if errors.Is(err, io.EOF) {
			return recs, offs, c.lines.mode
		}
		if err != nil {
			panic(err)
		}
		if cerr != nil || span.why != "" {
			recs = append(recs, "error")
		} else {
			var fs []string
			for _, f := range c.rec.Fields {
				fs = append(fs, fmt.Sprintf("%q", f))
			}
			recs = append(recs, strings.Join(fs, "|"))
		}
		offs = append(offs, c.lines.off)
	}
}

// stdRecords is csvRecords done by encoding/csv (strict quotes).
func stdRecords(data []byte, comma rune) (recs []string, offs []int64) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return recs, offs
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				panic(err)
			}
			recs = append(recs, "error")
		} else {
			var fs []string
			for _, f := range rec {
				fs = append(fs, fmt.Sprintf("%q", f))
			}
			recs = append(recs, strings.Join(fs, "|"))
		}
		offs = append(offs, cr.InputOffset())
	}
}

// crToLF turns each "\r" not followed by "\n" into "\n" (same length):
// what a file with CR line breaks means to a reader of LF files.
func crToLF(data []byte) []byte {
	out := bytes.Clone(data)
	for i, c := range out {
		if c == '\r' && (i+1 == len(out) || out[i+1] != '\n') {
			out[i] = '\n'
		}
	}
	return out
}

// FuzzCSVParser checks the file source's CSV parser against encoding/csv
// (strict quotes, any number of fields) on any input: the same records,
// the same fields, errors for the same records and the same offsets. A
// file whose start has CR line breaks and no LF is compared with
// encoding/csv on the same bytes with each lone CR made an LF.
func FuzzCSVParser(f *testing.F) {
	for _, s := range []string{
		"a,b,c\n1,2,3\n",
		"a,\"b\nc\",d\r\n\r\n\"x\"\"y\",z\n",
		"a,b\"c\nd,e\n",
		"a,\"b\"c\n1,2\n",
		"a,\"unterminated\n1,2\n3,4\n",
		"a,b\rc,d\re,f",
		"a,\"b\rc\"\rd,e\r",
		"a\r\n\rb\r",
		"\"\"\n,\n\"\",\"\"\n",
		"é;ü\n",
		"a,b\r",
		"a\r\rb\r\n",
		"x\n\"a\r\nb\"\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, semicolon bool) {
		comma := ','
		if semicolon {
			comma = ';'
		}
		got, gotOff, mode := csvRecords(data, comma)
		ref := data
		if mode == modeCR {
			ref = crToLF(data)
		}
		want, wantOff := stdRecords(ref, comma)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || fmt.Sprint(gotOff) != fmt.Sprint(wantOff) {
			t.Fatalf("%q (mode %v):\n got %q at %v\nwant %q at %v", data, mode, got, gotOff, want, wantOff)
		}
	})
}

// lineAt returns the offset of line n (1-based) of data, whose lines end
// with sep.
func lineAt(data, sep string, n int) int {
	off := 0
	for range n - 1 {
		off += strings.Index(data[off:], sep) + len(sep)
	}
	return off
}

// TestLineBreaksAndResync: CR-only and CRLF files are read line by line
// (JSONL and CSV); a CSV record whose quote does not close, or closes in
// the middle of a field, no longer swallows the records after it: only
// its first line is quarantined and every later record is decoded or
// quarantined by itself; a quarantined record spanning lines says so.
func TestLineBreaksAndResync(t *testing.T) {
	unterminated := "id,name,qty\n1,a,10\n2,b,20\n3,\"c,30\n4,d,40\n5,e,50\n6,f,60\n7,g,70\n8,h,80\n"
	closesLater := "id,name,qty\n1,\"a,10\n2,b,20\n3,\"c\",30\n4,d,40\n"
	wideMulti := "id,name,qty\n1,\"multi\nline\",10,extra\n2,b,20\n"
	typeMulti := "id,name,qty\n1,\"two\nlines\",x\n2,\"b\nc\",20\n"
	crCSV := "id,name,qty\r1,a,10\r2,\"b\rc\",20\r\r3,c,30"
	crlfCSV := "id,name,qty\r\n1,\"a\r\nb\",10\r\n"
	crJSONL := "{\"n\":1}\r{\"n\":2}\r\r{\"n\":3}"
	lfJSONL := "{\"n\":1,\r\"k\":\"x\"}\n{\"n\":2}\n"
	at := func(data, sep string, n int) int { return lineAt(data, sep, n) }
	tests := []struct {
		name, file, data string
		fields           []string
		want             []rec
	}{
		{"an unterminated quote: records 4 to 8 are read", "a.csv", unterminated, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=1 name="a" qty=10`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,a,10"`, at(unterminated, "\n", 2))},
			{`id=2 name="b" qty=20`, fmt.Sprintf(`p=0/ at=none a.csv:3@%d raw="2,b,20"`, at(unterminated, "\n", 3))},
			{`id=null name=null qty=null`, fmt.Sprintf(`p=0/ at=none a.csv:4@%d raw="3,\"c,30" err=decode the quoted field opened at line 4, column 3 does not close before the end of the file: only line 4 is quarantined; lines 5–9 are read again, one record each`, at(unterminated, "\n", 4))},
			{`id=4 name="d" qty=40`, fmt.Sprintf(`p=0/ at=none a.csv:5@%d raw="4,d,40"`, at(unterminated, "\n", 5))},
			{`id=5 name="e" qty=50`, fmt.Sprintf(`p=0/ at=none a.csv:6@%d raw="5,e,50"`, at(unterminated, "\n", 6))},
			{`id=6 name="f" qty=60`, fmt.Sprintf(`p=0/ at=none a.csv:7@%d raw="6,f,60"`, at(unterminated, "\n", 7))},
			{`id=7 name="g" qty=70`, fmt.Sprintf(`p=0/ at=none a.csv:8@%d raw="7,g,70"`, at(unterminated, "\n", 8))},
			{`id=8 name="h" qty=80`, fmt.Sprintf(`p=0/ at=none a.csv:9@%d raw="8,h,80"`, at(unterminated, "\n", 9))},
		}},
		{"a quote that closes in a later record", "a.csv", closesLater, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=null name=null qty=null`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,\"a,10" err=decode parse error on line 4, column 4: extraneous or missing " in quoted-field: only line 2 is quarantined; lines 3–4 are read again, one record each`, at(closesLater, "\n", 2))},
			{`id=2 name="b" qty=20`, fmt.Sprintf(`p=0/ at=none a.csv:3@%d raw="2,b,20"`, at(closesLater, "\n", 3))},
			{`id=3 name="c" qty=30`, fmt.Sprintf(`p=0/ at=none a.csv:4@%d raw="3,\"c\",30"`, at(closesLater, "\n", 4))},
			{`id=4 name="d" qty=40`, fmt.Sprintf(`p=0/ at=none a.csv:5@%d raw="4,d,40"`, at(closesLater, "\n", 5))},
		}},
		{"a multi-line record with too many fields", "a.csv", wideMulti, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=null name=null qty=null`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,\"multi" err=decode the record of lines 2–3 has 4 fields, header has 3: only line 2 is quarantined; line 3 is read again as a record of its own`, at(wideMulti, "\n", 2))},
			{`id=null name=null qty=null`, fmt.Sprintf(`p=0/ at=none a.csv:3@%d raw="line\",10,extra" err=decode parse error on line 3, column 5: bare " in non-quoted-field`, at(wideMulti, "\n", 3))},
			{`id=2 name="b" qty=20`, fmt.Sprintf(`p=0/ at=none a.csv:4@%d raw="2,b,20"`, at(wideMulti, "\n", 4))},
		}},
		{"a multi-line record that does not decode says what it spans", "a.csv", typeMulti, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=1 name="two\nlines" qty=null`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,\"two\nlines\",x" err=type field qty: want int, got "x" (not an integer) (the record spans lines 2–3)`, at(typeMulti, "\n", 2))},
			{`id=2 name="b\nc" qty=20`, fmt.Sprintf(`p=0/ at=none a.csv:4@%d raw="2,\"b\nc\",20"`, at(typeMulti, "\n", 4))},
		}},
		{"CSV with CR line breaks", "a.csv", crCSV, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=1 name="a" qty=10`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,a,10"`, at(crCSV, "\r", 2))},
			{`id=2 name="b\nc" qty=20`, fmt.Sprintf(`p=0/ at=none a.csv:3@%d raw="2,\"b\rc\",20"`, at(crCSV, "\r", 3))},
			{`id=3 name="c" qty=30`, fmt.Sprintf(`p=0/ at=none a.csv:6@%d raw="3,c,30"`, at(crCSV, "\r", 6))},
		}},
		{"CSV with CRLF line breaks, one in a quoted field", "a.csv", crlfCSV, []string{"id:int", "name:string", "qty:int"}, []rec{
			{`id=1 name="a\nb" qty=10`, fmt.Sprintf(`p=0/ at=none a.csv:2@%d raw="1,\"a\r\nb\",10"`, at(crlfCSV, "\r\n", 2))},
		}},
		{"JSONL with CR line breaks", "a.jsonl", crJSONL, []string{"n:int"}, []rec{
			{`n=1`, `p=0/ at=none a.jsonl:1@0 raw="{\"n\":1}"`},
			{`n=2`, fmt.Sprintf(`p=0/ at=none a.jsonl:2@%d raw="{\"n\":2}"`, at(crJSONL, "\r", 2))},
			{`n=3`, fmt.Sprintf(`p=0/ at=none a.jsonl:4@%d raw="{\"n\":3}"`, at(crJSONL, "\r", 4))},
		}},
		{"a CR inside a line of an LF file is white space", "a.jsonl", lfJSONL, []string{"n:int", "k:string"}, []rec{
			{`n=1 k="x"`, `p=0/ at=none a.jsonl:1@0 raw="{\"n\":1,\r\"k\":\"x\"}"`},
			{`n=2 k=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:2@%d raw="{\"n\":2}"`, at(lfJSONL, "\n", 2))},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{tc.file: tc.data})
			s, err := New(Config{Spec: spec.Source{Path: dir + "/" + tc.file}, Fields: testFields(t, tc.fields...)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			diff(t, drain(t, s, 3, dir), tc.want)
		})
	}
}
