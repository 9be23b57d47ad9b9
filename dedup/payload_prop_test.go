package dedup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// jsonValue is a generated JSON value: nil, bool, json.Number, string,
// []jsonValue or map[string]jsonValue.
type jsonValue = any

func genValue(depth int) *rapid.Generator[jsonValue] {
	return rapid.Custom(func(t *rapid.T) jsonValue {
		kind := rapid.IntRange(0, 5).Draw(t, "kind")
		if depth >= 3 && kind >= 4 {
			kind = 3
		}
		switch kind {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return json.Number(rapid.SampledFrom([]string{"0", "1", "1.0", "-5000", "25000", "1e3", "2.95"}).Draw(t, "num"))
		case 3:
			return rapid.SampledFrom([]string{"", "a", "e101", "é", "\"q\"", "tab\there", "\u2028", "😀", "x\\y"}).Draw(t, "str")
		case 4:
			n := rapid.IntRange(0, 3).Draw(t, "len")
			a := make([]jsonValue, n)
			for i := range a {
				a[i] = genValue(depth+1).Draw(t, "elem")
			}
			return a
		default:
			m := map[string]jsonValue{}
			for _, k := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "amount", "ingested_at", "é", "k\"", ""}), rapid.ID[string]).Draw(t, "keys") {
				m[k] = genValue(depth+1).Draw(t, "member")
			}
			return m
		}
	})
}

// writeJSON writes v with a drawn member order, white space and string
// escapes: every text that means v.
func writeJSON(t *rapid.T, b *strings.Builder, v jsonValue) {
	ws := func() { b.WriteString(rapid.SampledFrom([]string{"", " ", "\n\t"}).Draw(t, "ws")) }
	ws()
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		fmt.Fprint(b, v)
	case json.Number:
		b.WriteString(string(v))
	case string:
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || rapid.Bool().Draw(t, "escape"):
				if r > 0xffff {
					r1, r2 := (r-0x10000)>>10+0xd800, (r-0x10000)&0x3ff+0xdc00
					fmt.Fprintf(b, `\u%04x\u%04X`, r1, r2)
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	case []jsonValue:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(t, b, e)
		}
		ws()
		b.WriteByte(']')
	case map[string]jsonValue:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		keys = rapid.Permutation(sortStrings(keys)).Draw(t, "order")
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(t, b, k)
			ws()
			b.WriteByte(':')
			writeJSON(t, b, v[k])
		}
		ws()
		b.WriteByte('}')
	}
	ws()
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// reference canonicalizes with encoding/json: numbers as written, map
// keys sorted by json.Marshal, the ignored top-level key removed.
func reference(t *rapid.T, text string) string {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("reference decode %q: %v", text, err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "ingested_at")
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestHasherMatchesEncodingJSON checks the canonical hash against an
// independent canonicalization: two texts hash equal exactly when
// encoding/json reads them as the same value (top-level ingested_at
// ignored), and any re-serialization of one value hashes equal.
func TestHasherMatchesEncodingJSON(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	rapid.Check(t, func(t *rapid.T) {
		var a, a2, b strings.Builder
		va := genValue(0).Draw(t, "a")
		vb := genValue(0).Draw(t, "b")
		writeJSON(t, &a, va)
		writeJSON(t, &a2, va)
		writeJSON(t, &b, vb)
		ha, okA := h.Sum([]byte(a.String()))
		ha2, _ := h.Sum([]byte(a2.String()))
		hb, okB := h.Sum([]byte(b.String()))
		if !okA || !okB {
			t.Fatalf("does not parse: %q %q", a.String(), b.String())
		}
		if ha != ha2 {
			t.Fatalf("one value, two hashes:\n%s\n%s", a.String(), a2.String())
		}
		ca, _ := h.Canonical([]byte(a.String()))
		cb, _ := h.Canonical([]byte(b.String()))
		sameRef := reference(t, a.String()) == reference(t, b.String())
		if sameRef != bytes.Equal(ca, cb) {
			t.Fatalf("reference equal %v, canonical equal %v:\n%s\n%s", sameRef, !sameRef, a.String(), b.String())
		}
		if sameRef && ha != hb {
			t.Fatalf("equal values, different hashes:\n%s\n%s", a.String(), b.String())
		}
	})
}

func TestHasherDoesNotAllocate(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	obj := []byte(`{"event_id":"e\u0031","order":{"id":"o1","lines":[1,2,{"b":1,"a":2}]},"amount":-5000,"ingested_at":"2026-09-01T10:20:00+09:00"}`)
	h.Sum(obj)
	if n := testing.AllocsPerRun(100, func() { h.Sum(obj) }); n != 0 {
		t.Errorf("Sum allocates %v times per payload, want 0", n)
	}
}

func BenchmarkHasherSum(b *testing.B) {
	h := NewHasher([]string{"ingested_at"})
	obj := []byte(`{"InvoiceNo":"536412","StockCode":"22326","Description":"ROUND SNACK BOXES SET OF4 WOODLAND ","Quantity":"1","InvoiceDate":"2010-12-01 11:49:00","UnitPrice":"2.95","CustomerID":"17920.0","Country":"United Kingdom"}`)
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	for b.Loop() {
		h.Sum(obj)
	}
}
