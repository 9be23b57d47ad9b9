package format

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
)

// fuzzSpecs is a schema with every kind and parser, and a nested path.
var fuzzSpecs = []string{"s:string", "i:int", "d:decimal", "b:bool", "t:timestamp", "p.ms:timestamp/epoch_ms", "p.q.sec:timestamp/epoch_s", "l:timestamp/london", "a.0:string", "n:int/derived"}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"s":"x","i":5,"d":19.99,"b":true,"t":"2026-09-01T10:00:00+09:00","p":{"ms":1700000000123,"q":{"sec":"12.5"}}}`,
		`{"i":2.0,"d":1e-3,"l":"2011-03-27 01:30:00","a":["first",2]}`,
		`{"s":12,"i":"9223372036854775808","d":"-0.00","b":"TRUE","t":"2026-09-01T10:00:00Z"}`,
		`{"s":"\u00e9\"\\","i":-0,"d":123456789012345678901234567890.5}`,
		`{"d":1e40,"i":1e19,"t":"2026-09-01 10:00:00"}`,
		`[1,2]`, `null`, `{`, `{"s":NaN}`, `{"i":01}`, ``,
		// The encoding rule: NUL, invalid UTF-8, lone surrogates.
		`{"s":"a\u0000b"}`, "{\"s\":\"k\xff\"}", `{"s":"\ud800x"}`, `{"p":{"q":{"sec":"1"}},"a":["\udc00"]}`, `{"\u0073":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	fields := testFields(f, fuzzSpecs...)
	d := NewJSON(fields)
	var prev []byte
	var prevRow string
	keep := fields.Schema.NewRow()
	var ka, a source.Arena
	f.Fuzz(func(t *testing.T, line []byte) {
		r := fields.Schema.NewRow()
		orig := bytes.Clone(line)
		a.Reset()
		e := d.Decode(line, r, &a)
		if !bytes.Equal(orig, line) {
			t.Fatalf("Decode modified its input")
		}
		if e != nil {
			checkRule(t, e.Rule)
		}
		render(fields.Schema, r) // every slot readable
		if !r.IsNull(fields.Schema.Fields[len(fields.Schema.Fields)-1].Index) {
			t.Fatalf("derived field decoded")
		}
		// Strings decoded by the previous call are still intact.
		if prev != nil && render(fields.Schema, keep) != prevRow {
			t.Fatalf("strings of the previous row changed after decoding %q", line)
		}
		ka.Reset()
		fields.Schema.Shape(keep)
		d.Decode(line, keep, &ka)
		prev, prevRow = line, render(fields.Schema, keep)
	})
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"x,5,19.99,true,2026-09-01T10:00:00+09:00,1700000000123,12.5,2011-06-01 08:26:00,a\n",
		"\"a,b\",2.0,1e-3,FALSE,,,,2011-03-27 01:30:00,\n",
		",,,,,,,,\n",
		"1,2\n",
		"\"unterminated,5\n",
		"a,b\"c,d\n",
		"ab\x00c,1\n", "caf\xc3,2\n", "\"x\xff\",3\n",
	} {
		f.Add(s)
	}
	fields := testFields(f, fuzzSpecs...)
	header := []string{"s", "i", "d", "b", "t", "p.ms", "p.q.sec", "l", "a.0"}
	d, err := NewCSV(fields, header)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cr := csv.NewReader(strings.NewReader(text))
		cr.FieldsPerRecord = -1
		cr.ReuseRecord = true
		cr.LazyQuotes = true
		for range 100 {
			rec, err := cr.Read()
			if err == io.EOF {
				return
			}
			if err != nil {
				return
			}
			r := fields.Schema.NewRow()
			var a source.Arena
			if e := d.Decode(csvRecord(rec...), r, &a); e != nil {
				checkRule(t, e.Rule)
			}
			render(fields.Schema, r)
		}
	})
}

func checkRule(t *testing.T, rule string) {
	t.Helper()
	switch rule {
	case "decode", "type", "timestamp", "encoding":
	default:
		t.Fatalf("unknown rule %q", rule)
	}
}

// FuzzValidJSON: ValidJSON agrees with encoding/json.Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` {"a":[1,2,{"b":null}]} `, `{"a":01}`, `{"a":"\q"}`, "{\"a\":\"\x01\"}", `[1,]`, `{"a":1}x`, `"\ud800"`, `1e5`, `-0.5E-3`, `{}`, ``, ` `, `nul`, `{"a":tru}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, encoding/json.Valid = %v", b, got, want)
		}
	})
}
