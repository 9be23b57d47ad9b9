package perturb

import (
	"encoding/json"
	"testing"
)

func TestLookupAndFieldText(t *testing.T) {
	obj := `{"s":"a\"b\u00e9\ud83d\ude00","n":-1.50e2,"t":true,"z":null,"o":{"p":{"q":"deep"}},"arr":[10,[20,21],{"k":"v"}],"dot.ted":"top","o.p":"shadowed"}`
	for _, tc := range []struct {
		field, text string
		ok          bool
	}{
		{"s", "a\"bé😀", true},
		{"n", "-1.50e2", true},
		{"t", "true", true},
		{"z", "", false},
		{"o", "", false},
		{"o.p.q", "deep", true},
		{"o.p", "", false}, // an object (the path wins over the top-level "o.p")
		{"arr.0", "10", true},
		{"arr.1.1", "21", true},
		{"arr.2.k", "v", true},
		{"arr.3", "", false},
		{"arr.-1", "", false},
		{"arr.x", "", false},
		{"dot.ted", "top", true},
		{"missing", "", false},
		{"s.x", "", false},
	} {
		got, ok := AppendFieldText(nil, []byte(obj), tc.field)
		if ok != tc.ok || string(got) != tc.text {
			t.Errorf("AppendFieldText(%s) = %q, %v; want %q, %v", tc.field, got, ok, tc.text, tc.ok)
		}
	}
	if _, ok := AppendFieldText(nil, []byte(`{"a":1`), "a"); ok {
		t.Error("found a field in invalid JSON")
	}
	// Escaped member names match their text.
	if got, ok := AppendFieldText(nil, []byte(`{"\u0061b":"x"}`), "ab"); !ok || string(got) != "x" {
		t.Errorf("escaped key: %q, %v", got, ok)
	}
}

func TestValid(t *testing.T) {
	for _, s := range []string{`{}`, ` {"a":[1,2,{"b":null}]} `, `{"a":"\u00e9"}`, "{\"a\":1}\r\n"} {
		if !Valid([]byte(s)) {
			t.Errorf("Valid(%q) = false", s)
		}
	}
	deep := make([]byte, 0, 4000)
	deep = append(deep, `{"a":`...)
	for range 1500 {
		deep = append(deep, '[')
	}
	if Valid(deep) {
		t.Error("a too deep value is valid")
	}
	for _, s := range []string{``, `[]`, `1`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":01}`, `{"a":1.}`, `{"a":.1}`, `{"a":-}`, `{"a":tru}`, `{"a":"\x"}`, "{\"a\":\"\t\"}", `{} {}`, `{"a":[1,]}`} {
		if Valid([]byte(s)) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

// FuzzValid checks the scanner against encoding/json: an object is valid
// exactly when encoding/json accepts it (within the depth limit), and
// every Lookup of a top-level member finds the value encoding/json
// decodes.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,"x",null,true]}}`, `{"\u00e9":"\ud83d\ude00"}`, `{"a":1e5,"b":-0.0}`, `[]`, `{"a":"\q"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ours := Valid(b)
		var m map[string]json.RawMessage
		theirs := json.Unmarshal(b, &m) == nil && m != nil
		if ours && !theirs {
			t.Fatalf("Valid(%q) = true, encoding/json refuses it", b)
		}
		if !ours && theirs && json.Valid(b) && len(b) < 1000 {
			t.Fatalf("Valid(%q) = false, encoding/json accepts it", b)
		}
		if !ours {
			return
		}
		// encoding/json keeps the last of duplicate keys; compare only
		// objects without duplicates.
		count := map[string]int{}
		o := objScanner{b: b, i: skipWS(b, 0) + 1, depth: 1}
		for {
			mb, ok := o.next()
			if !ok {
				break
			}
			var k string
			json.Unmarshal(b[mb.keyStart:mb.keyEnd], &k)
			count[k]++
		}
		for k, v := range m {
			if count[k] != 1 {
				continue
			}
			s, e, ok := lookupMember(b, skipWS(b, 0), k)
			if !ok || string(b[s:e]) != string(v) {
				t.Fatalf("member %q: %q, encoding/json %q", k, b[s:e], v)
			}
		}
	})
}
