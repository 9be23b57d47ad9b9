package dedup

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzHasher checks the hash against the canonical form on any input: it
// never panics; it parses what the canonical form parses; and a JSON text
// hashes as its re-serialization by encoding/json (another member order,
// other escapes, no white space) whenever the two have one canonical form.
func FuzzHasher(f *testing.F) {
	for _, s := range []string{
		articleEvent,
		`{"a":[1,{"b":"x\u0041","a":null}],"ingested_at":"t"}`,
		`{"k\"":1, "k": "v\"" }`,
		`[1, "2", {"x": [true, false]}]`,
		`{"a":{"a":{"a":{}}}}`,
		`{"a":1,"a":2}`,
		`{"bad": "\ud800"}`,
		`{"x":01}`,
		`{`,
		`"s"`,
	} {
		f.Add([]byte(s))
	}
	h := NewHasher([]string{"ingested_at"})
	ignore := map[string]bool{"ingested_at": true}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, ok := h.Sum64(b)
		c, okRef := refCanonical(b, ignore)
		if ok != okRef {
			t.Fatalf("%q: parses %v, canonical form parses %v", b, ok, okRef)
		}
		if !ok || !json.Valid(b) {
			return
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		re, err := json.Marshal(v)
		if err != nil {
			return
		}
		y, ok2 := h.Sum64(re)
		c2, _ := refCanonical(re, ignore)
		if !ok2 {
			t.Fatalf("%q re-serialized as %q does not parse", b, re)
		}
		if bytes.Equal(c, c2) != (x == y) {
			t.Fatalf("%q and %q: canonical forms equal %v, hashes %016x %016x", b, re, bytes.Equal(c, c2), x, y)
		}
	})
}
