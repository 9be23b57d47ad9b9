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
		ignore := map[string]bool{"ingested_at": true}
		ca, _ := refCanonical([]byte(a.String()), ignore)
		cb, _ := refCanonical([]byte(b.String()), ignore)
		sameRef := reference(t, a.String()) == reference(t, b.String())
		if sameRef != bytes.Equal(ca, cb) {
			t.Fatalf("reference equal %v, canonical equal %v:\n%s\n%s", sameRef, !sameRef, a.String(), b.String())
		}
		if sameRef && ha != hb {
			t.Fatalf("equal values, different hashes:\n%s\n%s", a.String(), b.String())
		}
		xa, _ := h.Sum64([]byte(a.String()))
		xb, _ := h.Sum64([]byte(b.String()))
		if !sameRef && xa == xb {
			t.Fatalf("different values, one 64-bit hash:\n%s\n%s", a.String(), b.String())
		}
	})
}

// TestHashMatchesCanonicalForm is the differential test of the hash
// against the canonical form (the sorted canonical text of
// canon_ref_test.go): two texts have equal 64-bit hashes exactly when
// their canonical texts are equal. The second text is often a near miss
// of the first (one scalar changed somewhere, or a member dropped or
// added), so that "different" cases are close ones.
func TestHashMatchesCanonicalForm(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	ignore := map[string]bool{"ingested_at": true}
	rapid.Check(t, func(t *rapid.T) {
		va := genValue(0).Draw(t, "a")
		vb := va
		switch rapid.IntRange(0, 4).Draw(t, "relation") {
		case 0:
			vb = genValue(0).Draw(t, "b")
		case 1:
			vb = mutate(t, va)
		case 2:
			vb = addOrDrop(t, va)
		case 3:
			vb = swapElements(t, va)
		}
		var a, b strings.Builder
		writeJSON(t, &a, va)
		writeJSON(t, &b, vb)
		xa, okA := h.Sum64([]byte(a.String()))
		xb, okB := h.Sum64([]byte(b.String()))
		ca, okCA := refCanonical([]byte(a.String()), ignore)
		cb, okCB := refCanonical([]byte(b.String()), ignore)
		if !okA || !okB || !okCA || !okCB {
			t.Fatalf("does not parse: %q %q", a.String(), b.String())
		}
		if bytes.Equal(ca, cb) != (xa == xb) {
			t.Fatalf("canonical forms equal %v, hashes %016x %016x:\n%s\n%s", bytes.Equal(ca, cb), xa, xb, a.String(), b.String())
		}
	})
}

// TestReorderingNeverChangesHash: any member order, white space and
// escapes of one object (nested objects reordered too) hash alike.
func TestReorderingNeverChangesHash(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	rapid.Check(t, func(t *rapid.T) {
		v := genObject(0).Draw(t, "object")
		var a, b strings.Builder
		writeJSON(t, &a, v)
		writeJSON(t, &b, v)
		xa, _ := h.Sum64([]byte(a.String()))
		xb, _ := h.Sum64([]byte(b.String()))
		if xa != xb {
			t.Fatalf("one object, two hashes:\n%s\n%s", a.String(), b.String())
		}
	})
}

// TestChangingAValueChangesHash: changing one scalar anywhere in an object
// (but in an ignored top-level member) changes the hash.
func TestChangingAValueChangesHash(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	rapid.Check(t, func(t *rapid.T) {
		v := genObject(0).Draw(t, "object")
		w := mutate(t, v)
		if reflectEqual(v, w) {
			t.Skip("nothing to change")
		}
		if m, ok := v.(map[string]jsonValue); ok {
			if n, ok := w.(map[string]jsonValue); ok && onlyIgnoredDiffers(m, n) {
				t.Skip("only the ignored member changed")
			}
		}
		var a, b strings.Builder
		writeJSON(t, &a, v)
		writeJSON(t, &b, w)
		xa, _ := h.Sum64([]byte(a.String()))
		xb, _ := h.Sum64([]byte(b.String()))
		if xa == xb {
			t.Fatalf("a changed value, one hash:\n%s\n%s", a.String(), b.String())
		}
	})
}

func genObject(depth int) *rapid.Generator[jsonValue] {
	return rapid.Custom(func(t *rapid.T) jsonValue {
		for {
			if v, ok := genValue(depth).Draw(t, "v").(map[string]jsonValue); ok {
				return v
			}
		}
	})
}

// scalars are the values a mutation picks from.
var scalars = []jsonValue{nil, true, false, json.Number("0"), json.Number("1"), json.Number("1.0"), json.Number("-5000"), "", "1", "a", "é", "k\"", "null"}

// mutate returns a copy of v with one scalar (chosen by the draw) replaced
// by a different one; v itself is not changed.
func mutate(t *rapid.T, v jsonValue) jsonValue {
	var paths [][]any
	var walk func(v jsonValue, path []any)
	walk = func(v jsonValue, path []any) {
		switch v := v.(type) {
		case map[string]jsonValue:
			for _, k := range sortStrings(keysOf(v)) {
				walk(v[k], append(append([]any(nil), path...), k))
			}
		case []jsonValue:
			for i, e := range v {
				walk(e, append(append([]any(nil), path...), i))
			}
		default:
			paths = append(paths, path)
		}
	}
	walk(v, nil)
	if len(paths) == 0 {
		return v // only empty containers
	}
	path := rapid.SampledFrom(paths).Draw(t, "path")
	old := get(v, path)
	var repl jsonValue
	for {
		repl = rapid.SampledFrom(scalars).Draw(t, "replacement")
		if !reflectEqual(repl, old) {
			break
		}
	}
	return set(v, path, repl)
}

// addOrDrop returns a copy of v with a top-level member added or dropped
// (v itself when v is not an object).
func addOrDrop(t *rapid.T, v jsonValue) jsonValue {
	m, ok := v.(map[string]jsonValue)
	if !ok {
		return v
	}
	c := map[string]jsonValue{}
	for k, x := range m {
		c[k] = x
	}
	if keys := sortStrings(keysOf(m)); len(keys) > 0 && rapid.Bool().Draw(t, "drop") {
		delete(c, rapid.SampledFrom(keys).Draw(t, "dropped"))
	} else {
		c[rapid.SampledFrom([]string{"x", "amount", "é", "k\"", "", "ingested_at"}).Draw(t, "added")] = rapid.SampledFrom(scalars).Draw(t, "value")
	}
	return c
}

// swapElements returns a copy of v with two elements of one of its arrays
// swapped (v itself when it holds no array of two or more elements).
func swapElements(t *rapid.T, v jsonValue) jsonValue {
	var paths [][]any
	var walk func(v jsonValue, path []any)
	walk = func(v jsonValue, path []any) {
		switch v := v.(type) {
		case map[string]jsonValue:
			for _, k := range sortStrings(keysOf(v)) {
				walk(v[k], append(append([]any(nil), path...), k))
			}
		case []jsonValue:
			if len(v) >= 2 {
				paths = append(paths, path)
			}
			for i, e := range v {
				walk(e, append(append([]any(nil), path...), i))
			}
		}
	}
	walk(v, nil)
	if len(paths) == 0 {
		return v
	}
	path := rapid.SampledFrom(paths).Draw(t, "array")
	a := append([]jsonValue(nil), get(v, path).([]jsonValue)...)
	i := rapid.IntRange(0, len(a)-2).Draw(t, "i")
	j := rapid.IntRange(i+1, len(a)-1).Draw(t, "j")
	a[i], a[j] = a[j], a[i]
	return set(v, path, a)
}

func keysOf(m map[string]jsonValue) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func get(v jsonValue, path []any) jsonValue {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]jsonValue)[k]
		case int:
			v = v.([]jsonValue)[k]
		}
	}
	return v
}

// set returns a copy of v with the value at path replaced.
func set(v jsonValue, path []any, x jsonValue) jsonValue {
	if len(path) == 0 {
		return x
	}
	switch k := path[0].(type) {
	case string:
		m := v.(map[string]jsonValue)
		c := make(map[string]jsonValue, len(m))
		for kk, vv := range m {
			c[kk] = vv
		}
		c[k] = set(m[k], path[1:], x)
		return c
	default:
		a := v.([]jsonValue)
		c := append([]jsonValue(nil), a...)
		c[k.(int)] = set(a[k.(int)], path[1:], x)
		return c
	}
}

func reflectEqual(a, b jsonValue) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// onlyIgnoredDiffers reports whether two objects differ only in their
// top-level ingested_at member.
func onlyIgnoredDiffers(a, b map[string]jsonValue) bool {
	a2, b2 := map[string]jsonValue{}, map[string]jsonValue{}
	for k, v := range a {
		if k != "ingested_at" {
			a2[k] = v
		}
	}
	for k, v := range b {
		if k != "ingested_at" {
			b2[k] = v
		}
	}
	return reflectEqual(a2, b2)
}

func TestHasherDoesNotAllocate(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	obj := []byte(`{"event_id":"e\u0031","order":{"id":"o1","lines":[1,2,{"b":1,"a":2}]},"amount":-5000,"ingested_at":"2026-09-01T10:20:00+09:00"}`)
	h.Sum(obj)
	if n := testing.AllocsPerRun(100, func() { h.Sum(obj) }); n != 0 {
		t.Errorf("Sum allocates %v times per payload, want 0", n)
	}
}

// TestHashPinned pins the hash of the article's order event (written two
// ways): a change of the scheme must change PayloadHashVersion, since
// checkpoints and ledgers keep these hashes.
func TestHashPinned(t *testing.T) {
	h := NewHasher([]string{"produced_at"})
	a := []byte(articleEvent)
	b := []byte(`{ "paid_at": "2026-06-24T11:48:31+09:00", "produced_at": "2026-06-24T11:59:00+09:00",
		"store_id": "store\u002d7", "amount": 49000, "event_id": "evt-20260624-0001", "currency": "KRW",
		"order_id": "ord-100", "event_version": 1, "event_type": "OrderPaid" }`)
	xa, okA := h.Sum64(a)
	xb, okB := h.Sum64(b)
	const want = 0xfdaa7d069751aa5b
	if !okA || !okB || xa != xb || xa != want || PayloadHashVersion != 2 {
		t.Errorf("hashes %#016x %#016x (%v %v), want %#016x (version %d)", xa, xb, okA, okB, uint64(want), PayloadHashVersion)
	}
}

// articleEvent is the first article's order event, 230 bytes.
const articleEvent = `{"event_id":"evt-20260624-0001","event_type":"OrderPaid","event_version":1,"order_id":"ord-100","store_id":"store-7","amount":49000,"currency":"KRW","paid_at":"2026-06-24T11:48:31+09:00","produced_at":"2026-06-24T11:48:33+09:00"}`

// BenchmarkHasherArticle hashes the article's order event (produced_at
// ignored, as its contract's metadata field).
func BenchmarkHasherArticle(b *testing.B) {
	h := NewHasher([]string{"produced_at"})
	obj := []byte(articleEvent)
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	for b.Loop() {
		h.Sum(obj)
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
