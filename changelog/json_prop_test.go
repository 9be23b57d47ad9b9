package changelog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/quagmt/udecimal"
	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/row"
)

// Times between 1973 and 2200. Earlier, some zones had offsets with
// seconds (local mean time, e.g. Seoul's +08:27:52 before 1908, Monrovia's
// -00:44:30 until 1972), which RFC 3339 cannot write: row.AppendTime then
// loses those seconds.
var genMs = rapid.Int64Range(94694400000, 7258118400000)

var genKind = rapid.SampledFrom([]row.Kind{row.KindBool, row.KindInt, row.KindDecimal, row.KindString, row.KindTime})

// genDecimal draws decimals of every scale, from small to 128-bit
// coefficients.
var genDecimal = rapid.Custom(func(t *rapid.T) row.Decimal {
	scale := uint8(rapid.IntRange(0, row.MaxDecimalScale).Draw(t, "scale"))
	neg := rapid.Bool().Draw(t, "neg")
	var hi, lo uint64
	if rapid.Bool().Draw(t, "wide") {
		hi = rapid.Uint64().Draw(t, "hi")
	}
	lo = rapid.Uint64().Draw(t, "lo")
	if !rapid.Bool().Draw(t, "full") {
		lo %= 100000
	}
	d, err := udecimal.NewFromHiLo(neg, hi, lo, scale)
	if err != nil {
		t.Fatalf("NewFromHiLo: %v", err)
	}
	return d
})

var genLoc = rapid.Custom(func(t *rapid.T) *time.Location {
	name := rapid.SampledFrom([]string{"", "UTC", "Asia/Seoul", "Asia/Kolkata", "America/New_York", "Australia/Lord_Howe"}).Draw(t, "zone")
	if name == "" {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
})

func genValue(k row.Kind) *rapid.Generator[row.Value] {
	return rapid.Custom(func(t *rapid.T) row.Value {
		if rapid.IntRange(0, 5).Draw(t, "null") == 0 {
			return row.Null
		}
		switch k {
		case row.KindBool:
			return row.Bool(rapid.Bool().Draw(t, "bool"))
		case row.KindInt:
			return row.Int(rapid.Int64().Draw(t, "int"))
		case row.KindDecimal:
			return row.Dec(genDecimal.Draw(t, "decimal"))
		case row.KindString:
			return row.Str(rapid.String().Draw(t, "string"))
		default:
			return row.Time(genMs.Draw(t, "time"))
		}
	})
}

// genColumns draws n columns with unique names, some needing escapes.
func genColumns(t *rapid.T, prefix string, n int) []Column {
	cols := make([]Column, n)
	for i := range cols {
		name := rapid.SampledFrom([]string{"c", "store id", `q"uote`, "매장", "tab\t"}).Draw(t, "name")
		cols[i] = Column{Name: fmt.Sprintf("%s%d %s", prefix, i, name), Kind: genKind.Draw(t, "kind")}
	}
	return cols
}

func genRow(t *rapid.T, d *Desc) Row {
	r := Row{
		Op:          Op(rapid.IntRange(0, 3).Draw(t, "op")),
		WindowStart: genMs.Draw(t, "start"),
		WindowEnd:   genMs.Draw(t, "end"),
		Version:     rapid.Uint64().Draw(t, "version"),
		IsFinal:     rapid.Bool().Draw(t, "final"),
		WatermarkAt: rapid.OneOf(rapid.Just(WatermarkInfinity), rapid.Just(WatermarkNone), genMs).Draw(t, "watermark"),
		UpdatedAt:   genMs.Draw(t, "updated"),
	}
	for _, c := range d.Key {
		r.Key = append(r.Key, genValue(c.Kind).Draw(t, "key"))
	}
	for _, c := range d.Values {
		r.Values = append(r.Values, genValue(c.Kind).Draw(t, "value"))
	}
	return r
}

// TestRowJSONRoundTrip: DecodeRowJSON(AppendRowJSON(r)) == r for every row
// whose strings are valid UTF-8, decimals keeping their scale; the text is
// valid JSON with the documented key order.
func TestRowJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := Desc{
			Key:    genColumns(t, "k", rapid.IntRange(0, 3).Draw(t, "nkey")),
			Values: genColumns(t, "v", rapid.IntRange(0, 4).Draw(t, "nvalue")),
		}
		r := genRow(t, &d)
		loc := genLoc.Draw(t, "loc")
		line := AppendRowJSON(nil, &r, &d, loc)
		if !json.Valid(line) || bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("not one line of valid JSON: %s", line)
		}
		checkKeyOrder(t, line, &d)
		got, err := DecodeRowJSON(line, &d)
		if err != nil {
			t.Fatalf("decode %s: %v", line, err)
		}
		if msg := rowDiff(&r, &got); msg != "" {
			t.Fatalf("%s\n%s", line, msg)
		}
		if again := AppendRowJSON(nil, &got, &d, loc); !bytes.Equal(again, line) {
			t.Fatalf("re-encoded differently:\n%s\n%s", line, again)
		}
	})
}

func checkKeyOrder(t *rapid.T, line []byte, d *Desc) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var keys []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"op", "window_start", "window_end"}
	for _, c := range d.Key {
		want = append(want, c.Name)
	}
	for _, c := range d.Values {
		want = append(want, c.Name)
	}
	want = append(want, "version", "is_final", "watermark_at", "updated_at")
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
}

// TestAppendDecimalMatchesFormatDecimal checks the allocation-free decimal
// writer against row.FormatDecimal.
func TestAppendDecimalMatchesFormatDecimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDecimal.Draw(t, "d")
		if got, want := string(appendDecimal(nil, d)), string(row.FormatDecimal(nil, d)); got != want {
			t.Fatalf("appendDecimal %s, FormatDecimal %s", got, want)
		}
	})
}

// TestAppendStringMatchesEncodingJSON: our JSON strings decode to what
// encoding/json's do, for any bytes (invalid UTF-8 included).
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes"))
		if rapid.Bool().Draw(t, "text") {
			s = rapid.String().Draw(t, "string")
		}
		ours := appendString(nil, s)
		var got string
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, ours, err)
		}
		std, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if got != want || !utf8.Valid(ours) {
			t.Fatalf("%q: ours decodes to %q, encoding/json's to %q", s, got, want)
		}
	})
}

// TestPositionJSONMatchesString: the late record's "source" is
// Position.String().
func TestPositionJSONMatchesString(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Position{
			Source:    rapid.String().Draw(t, "source"),
			Partition: rapid.SampledFrom([]string{"", "0", "eu-west", "q\"\\"}).Draw(t, "partition"),
			Line:      rapid.Int64Range(0, 3).Draw(t, "line"),
			Offset:    rapid.Int64().Draw(t, "offset"),
		}
		var got string
		if err := json.Unmarshal(appendPositionString(nil, p), &got); err != nil {
			t.Fatal(err)
		}
		std, _ := json.Marshal(p.String())
		var want string
		_ = json.Unmarshal(std, &want)
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// FuzzDecodeRowJSON: DecodeRowJSON never panics, and what it accepts
// re-encodes to a line it decodes to the same row.
func FuzzDecodeRowJSON(f *testing.F) {
	r := revenueRow(f)
	f.Add(AppendRowJSON(nil, &r, &revenueDesc, nil))
	f.Add([]byte(`{"op":"delete"}`))
	f.Add([]byte(`{"revenue":1e400,"orders":` + strconv.Itoa(1<<62) + `}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := DecodeRowJSON(line, &revenueDesc)
		if err != nil {
			return
		}
		again := AppendRowJSON(nil, &got, &revenueDesc, nil)
		back, err := DecodeRowJSON(again, &revenueDesc)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", again, err)
		}
		if msg := rowDiff(&got, &back); msg != "" {
			t.Fatal(msg)
		}
	})
}
