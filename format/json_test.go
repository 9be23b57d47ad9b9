package format

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

func TestJSONDecode(t *testing.T) {
	f := testFields(t, "s:string", "i:int", "d:decimal", "b:bool", "t:timestamp", "p.time:timestamp/epoch_ms", "n:int/derived")
	tests := []struct {
		name string
		line string
		want string // rendered row
		err  string // "field rule: reason" or "rule: reason"; "" for none
	}{
		{
			name: "all kinds",
			line: `{"s":"x","i":5,"d":19.99,"b":true,"t":"2026-09-01T10:00:00+09:00","p":{"time":1700000000123},"other":[1,{"a":2}]}`,
			want: `s="x" i=5 d=19.99 b=true t=2026-09-01T01:00:00Z p.time=2023-11-14T22:13:20.123Z n=null`,
		},
		{
			name: "missing and null",
			line: `{"s":null,"d":null}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "whitespace around",
			line: " \t{ \"i\" : -7 }\r",
			want: `s=null i=-7 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "string from number and bool",
			line: `{"s":12.50,"i":1}`,
			want: `s="12.50" i=1 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "string from true",
			line: `{"s":true}`,
			want: `s="true" i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "escaped string",
			line: `{"s":"a\"b\u00e9\\n"}`,
			want: `s="a\"bé\\n" i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "empty string",
			line: `{"s":""}`,
			want: `s="" i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "int from string",
			line: `{"i":"42"}`,
			want: `s=null i=42 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "int zero fraction",
			line: `{"i":2.0}`,
			want: `s=null i=2 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "int exponent",
			line: `{"i":1e3}`,
			want: `s=null i=1000 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "int fraction",
			line: `{"i":2.5,"s":"kept"}`,
			want: `s="kept" i=null d=null b=null t=null p.time=null n=null`,
			err:  `i type: want int, got number 2.5 (has a fraction)`,
		},
		{
			name: "int out of range",
			line: `{"i":9223372036854775808}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `i type: want int, got number 9223372036854775808 (out of int64 range)`,
		},
		{
			name: "int from text",
			line: `{"i":"five"}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `i type: want int, got string "five" (not an integer)`,
		},
		{
			name: "int from empty string",
			line: `{"i":""}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `i type: want int, got string "" (not an integer)`,
		},
		{
			name: "decimal exact",
			line: `{"d":0.1}`,
			want: `s=null i=null d=0.1 b=null t=null p.time=null n=null`,
		},
		{
			name: "decimal keeps scale",
			line: `{"d":"19.990"}`,
			want: `s=null i=null d=19.990 b=null t=null p.time=null n=null`,
		},
		{
			name: "decimal exponent",
			line: `{"d":25e-3}`,
			want: `s=null i=null d=0.025 b=null t=null p.time=null n=null`,
		},
		{
			name: "decimal big integer",
			line: `{"d":123456789012345678901234567890}`,
			want: `s=null i=null d=123456789012345678901234567890 b=null t=null p.time=null n=null`,
		},
		{
			name: "decimal too many places",
			line: `{"d":0.12345678901234567890}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `d type: want decimal, got number 0.12345678901234567890 (decimal "0.12345678901234567890" has 20 digits after the point, more than 19)`,
		},
		{
			name: "decimal from bool",
			line: `{"d":false}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `d type: want decimal, got false`,
		},
		{
			name: "decimal from text",
			line: `{"d":"1,000"}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `d type: want decimal, got string "1,000"`,
		},
		{
			name: "bool from string any case",
			line: `{"b":"FALSE"}`,
			want: `s=null i=null d=null b=false t=null p.time=null n=null`,
		},
		{
			name: "bool from number",
			line: `{"b":1}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `b type: want bool, got number 1`,
		},
		{
			name: "int from object",
			line: `{"i":{"a":1}}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `i type: want int, got object {"a":1}`,
		},
		{
			name: "string from array",
			line: `{"s":[1,2]}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `s type: want string, got array [1,2]`,
		},
		{
			name: "timestamp without offset",
			line: `{"t":"2026-09-01 10:00:00"}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `t timestamp: timestamp has no UTC offset: "2026-09-01 10:00:00"`,
		},
		{
			name: "timestamp number for rfc3339",
			line: `{"t":1700000000}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `t type: want timestamp, got number 1700000000`,
		},
		{
			name: "epoch string",
			line: `{"p":{"time":"1700000000000"}}`,
			want: `s=null i=null d=null b=null t=null p.time=2023-11-14T22:13:20Z n=null`,
		},
		{
			name: "epoch fraction",
			line: `{"p":{"time":1.5}}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `p.time timestamp: unparsable timestamp: "1.5" is not integer epoch milliseconds`,
		},
		{
			name: "dotted member name",
			line: `{"p.time":5}`,
			want: `s=null i=null d=null b=null t=null p.time=1970-01-01T00:00:00.005Z n=null`,
		},
		{
			name: "path through a non-object",
			line: `{"p":3}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "derived field is not decoded",
			line: `{"n":"not an int"}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "duplicate member: first wins",
			line: `{"i":1,"i":2}`,
			want: `s=null i=1 d=null b=null t=null p.time=null n=null`,
		},
		{
			name: "malformed number in decoded field",
			line: `{"i":01}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 7: invalid character '1' after object key:value pair`,
		},
		{
			name: "NaN in decoded field",
			line: `{"d":NaN}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 6: invalid character 'N' looking for beginning of value`,
		},
		{
			name: "malformed number in skipped field",
			line: `{"x":01,"i":1}`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 7: invalid character '1' after object key:value pair`,
		},
		{
			name: "first error wins, rest decoded",
			line: `{"s":"ok","i":"x","d":"y","b":true}`,
			want: `s="ok" i=null d=null b=true t=null p.time=null n=null`,
			err:  `i type: want int, got string "x" (not an integer)`,
		},
		{
			name: "truncated",
			line: `{"s":"x"`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 8: unexpected end of JSON input`,
		},
		{
			name: "trailing garbage",
			line: `{"s":"x"} y`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 11: invalid character 'y' after top-level value`,
		},
		{
			name: "empty line",
			line: ``,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: invalid JSON at byte 0: unexpected end of JSON input`,
		},
		{
			name: "array",
			line: `[1,2]`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: want a JSON object, got array [1,2]`,
		},
		{
			name: "string",
			line: `"x"`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: want a JSON object, got string "x"`,
		},
		{
			name: "null",
			line: `null`,
			want: `s=null i=null d=null b=null t=null p.time=null n=null`,
			err:  `decode: want a JSON object, got null`,
		},
	}
	d := NewJSON(f)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.Schema.NewRow()
			got := errText(d.Decode([]byte(tc.line), r, new(source.Arena)))
			if got != tc.err {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.err)
			}
			if g := render(f.Schema, r); g != tc.want {
				t.Errorf("row\n got: %s\nwant: %s", g, tc.want)
			}
		})
	}
}

// errText renders a DecodeError as "field rule: reason" ("rule: reason"
// without a field), "" for nil.
func errText(e *source.DecodeError) string {
	if e == nil {
		return ""
	}
	if e.Field == "" {
		return e.Rule + ": " + e.Reason
	}
	return e.Field + " " + e.Rule + ": " + e.Reason
}

func TestJSONStringsSurviveLaterDecodes(t *testing.T) {
	f := testFields(t, "s:string", "u:string")
	d := NewJSON(f)
	var a source.Arena
	var rows []string
	var kept []*row.Row
	for i := range 2000 {
		r := f.Schema.NewRow()
		line := `{"s":"value-` + strings.Repeat("x", i%50) + `","u":"` + strings.Repeat("é", i%7) + `"}`
		if e := d.Decode([]byte(line), r, &a); e != nil {
			t.Fatal(e)
		}
		rows = append(rows, render(f.Schema, r))
		kept = append(kept, r)
	}
	for i, k := range kept {
		if g := render(f.Schema, k); g != rows[i] {
			t.Fatalf("row %d changed after later decodes: %s, was %s", i, g, rows[i])
		}
	}
	a.Reset()
	r := f.Schema.NewRow()
	if e := d.Decode([]byte(`{"s":"after reset"}`), r, &a); e != nil || r.S[0] != "after reset" {
		t.Fatalf("decode after Reset: %v %q", e, r.S[0])
	}
}

func TestJSONZeroAllocs(t *testing.T) {
	f := testFields(t, "event_id:string", "event_type:string", "order_id:string", "store_id:string", "currency:string", "amount:decimal", "qty:int")
	line := []byte(`{"event_id":"e1","event_type":"PAYMENT","order_id":"O1","store_id":"store-7","currency":"KRW","amount":25000.50,"qty":"3","paid_at":"2026-09-01T10:02:00+09:00","note":{"a":[1,2,3]}}`)
	d := NewJSON(f)
	r := f.Schema.NewRow()
	var a source.Arena
	n := 0
	for range 4096 { // warm up: the arena grows to hold a batch
		if n%512 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		d.Decode(line, r, &a)
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if n%512 == 0 {
			a.Reset() // as a batch is reset before each Next
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(line, r, &a); e != nil {
			t.Fatal(e)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode allocates %.2f times per record, want 0", allocs)
	}
	if g := render(f.Schema, r); g != `event_id="e1" event_type="PAYMENT" order_id="O1" store_id="store-7" currency="KRW" amount=25000.50 qty=3` {
		t.Fatalf("row: %s", g)
	}
}

// TestJSONEncodingRule: a string field holding a NUL character (the
// escape \u0000), invalid UTF-8 or a lone surrogate escape is an
// "encoding" error naming the byte offset in the line, on the fast path
// and on the slow one, nested or not; nothing is replaced by U+FFFD.
func TestJSONEncodingRule(t *testing.T) {
	flat := testFields(t, "s:string", "i:int", "u:string")
	nested := testFields(t, "p.q:string", "s:string")
	for _, tc := range []struct {
		name string
		f    Fields
		line string
		err  string // "field rule: reason", "" for none
		want string // the row
	}{
		{"NUL escape", flat, `{"s":"a\u0000b"}`, `s encoding: NUL character at byte 7 (PostgreSQL text cannot store it)`, `s=null i=null u=null`},
		{"invalid UTF-8", flat, "{\"s\":\"k\xff\",\"i\":3}", `s encoding: invalid UTF-8 at byte 7`, `s=null i=3 u=null`},
		{"a truncated UTF-8 sequence", flat, "{\"u\":\"caf\xc3\"}", `u encoding: invalid UTF-8 at byte 9`, `s=null i=null u=null`},
		{"lone high surrogate", flat, `{"s":"s\ud800"}`, `s encoding: lone surrogate \ud800 at byte 7 (not a character: UTF-8 cannot hold it)`, `s=null i=null u=null`},
		{"lone low surrogate before a high one", flat, `{"s":"\udc00\ud800"}`, `s encoding: lone surrogate \udc00 at byte 6 (not a character: UTF-8 cannot hold it)`, `s=null i=null u=null`},
		{"a surrogate pair is a character", flat, `{"s":"ok \ud83d\ude00"}`, ``, `s="ok 😀" i=null u=null`},
		{"other control characters are text", flat, `{"s":"a\u0001\t"}`, ``, "s=\"a\\x01\\t\" i=null u=null"},
		{"the first field in schema order", flat, `{"u":"\u0000","s":"\u0000"}`, `s encoding: NUL character at byte 19 (PostgreSQL text cannot store it)`, `s=null i=null u=null`},
		{"a member not decoded does not count", flat, `{"x":"\u0000","s":"ok"}`, ``, `s="ok" i=null u=null`},
		{"the first of duplicate members", flat, `{"s":"ok","s":"\u0000"}`, ``, `s="ok" i=null u=null`},
		{"an escaped key", flat, `{"\u0073":"a\u0000"}`, `s encoding: NUL character at byte 12 (PostgreSQL text cannot store it)`, `s=null i=null u=null`},
		{"an int field is a type error", flat, `{"i":"1\u0000"}`, `i type: want int, got string "1\x00" (not an integer)`, `s=null i=null u=null`},
		{"nested", nested, `{"x":"\u0000","p":{"q":"ab\u0000"}}`, `p.q encoding: NUL character at byte 26 (PostgreSQL text cannot store it)`, `p.q=null s=null`},
		{"a dotted top-level name", nested, `{"p.q":"\ud800"}`, `p.q encoding: lone surrogate \ud800 at byte 8 (not a character: UTF-8 cannot hold it)`, `p.q=null s=null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fast := range []bool{true, false} {
				d := NewJSON(tc.f)
				d.fast = d.fast && fast
				r := tc.f.Schema.NewRow()
				if got := errText(d.Decode([]byte(tc.line), r, new(source.Arena))); got != tc.err {
					t.Errorf("fast=%v: error\n got: %s\nwant: %s", fast, got, tc.err)
				}
				if g := render(tc.f.Schema, r); g != tc.want {
					t.Errorf("fast=%v: row\n got: %s\nwant: %s", fast, g, tc.want)
				}
			}
		})
	}
}
