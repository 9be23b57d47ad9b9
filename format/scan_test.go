package format

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// fastSlowFields is a flat schema of every kind.
func fastSlowFields(t testing.TB) Fields {
	s := row.NewSchema()
	for _, f := range []struct {
		n string
		k row.Kind
	}{{"s", row.KindString}, {"i", row.KindInt}, {"d", row.KindDecimal}, {"b", row.KindBool}, {"t", row.KindTime}, {"e", row.KindTime}} {
		if _, err := s.Add(f.n, f.k); err != nil {
			t.Fatal(err)
		}
	}
	e, _ := s.Lookup("e")
	return Fields{Schema: s, Time: map[int]*eventtime.Parser{e.Index: {Format: eventtime.EpochMs}}}
}

// decodeBoth decodes line with the fast path enabled and disabled and
// renders each outcome.
func decodeBoth(f Fields, line []byte) (fast, slow string) {
	render := func(useFast bool) string {
		d := NewJSON(f)
		d.fast = useFast
		r := f.Schema.NewRow()
		err := d.Decode(line, r, new(source.Arena))
		out := ""
		for _, fd := range f.Schema.Fields {
			v := r.Get(fd)
			out += fmt.Sprintf("%s=%s(%s) ", fd.Name, v, v.Kind)
			if v.Kind == row.KindDecimal {
				out += fmt.Sprintf("scale=%d ", v.D.Prec())
			}
		}
		if err != nil {
			out += "err=" + err.Error()
		}
		return out
	}
	return render(true), render(false)
}

func TestFastPathAgreesWithFastjson(t *testing.T) {
	f := fastSlowFields(t)
	for _, line := range []string{
		`{"s":"a","i":3,"d":19.99,"b":true,"t":"2026-09-01T10:00:00+09:00","e":1700000000000}`,
		`  {"i":"42","d":"0.10","x":{"nested":[1,2,{"a":null}]},"s":7}  `,
		`{}`, `{"s":null}`, `{"s":"a","s":"b"}`, `{"i":2.0}`, `{"i":2.5}`, `{"d":1e3}`,
		`{"s":"a\"b"}`, `{"x":"\u00e9","s":"ok"}`, `{"s":"x",}`, `{"s":"x"} x`, `[1]`, ``,
		`{"t":1}`, `{"b":"TRUE"}`, `{"e":"123"}`, `{"i":-0}`, `{"i":01}`, `{"x":[[[[]]]],"i":1}`,
		`{"s":"` + "\x01" + `"}`, `{"x":"\q","i":1}`, `{"i":9223372036854775808}`,
	} {
		fast, slow := decodeBoth(f, []byte(line))
		if fast != slow {
			t.Errorf("%q:\nfast %s\nslow %s", line, fast, slow)
		}
	}
}

// FuzzFastPath: for any line, the fast path and the fastjson path decode
// the same row and the same error.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{
		`{"s":"a","i":3,"d":19.99,"b":true,"t":"2026-09-01T10:00:00+09:00","e":1700000000000}`,
		`{"x":{"y":[1,"2",{"z":null}]},"i":-1e2,"d":"5"}`, `{"s":"\u0041"}`, `{"b":false,"s":true}`,
		`{"s":"a\u0000b","i":1}`, "{\"i\":2,\"s\":\"k\xff\"}", `{"s":"\ud800\ud800"}`, `{"s":"\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	fields := fastSlowFields(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, slow := decodeBoth(fields, line)
		if fast != slow {
			t.Fatalf("%q:\nfast %s\nslow %s", line, fast, slow)
		}
	})
}

func BenchmarkJSONSlowPath(b *testing.B) {
	f := testFields(b, orderSpecs...)
	d := NewJSON(f)
	d.fast = false
	r := f.Schema.NewRow()
	var a source.Arena
	n := 0
	for b.Loop() {
		if n%1024 == 0 {
			a.Reset()
		}
		n++
		f.Schema.Shape(r)
		if e := d.Decode(orderLine, r, &a); e != nil {
			b.Fatal(e)
		}
	}
}

// TestPlainRunMatchesNaive checks the eight-bytes-at-a-time scan against a
// byte loop on every position of inputs mixing all byte classes.
func TestPlainRunMatchesNaive(t *testing.T) {
	naive := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return i
	}
	rng := uint64(1)
	alphabet := []byte{'a', '"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xe2, 0xff, '!', '#', '[', ']', 0x5b, 0x5d}
	for n := 0; n < 20000; n++ {
		b := make([]byte, n%40)
		for i := range b {
			rng = rng*6364136223846793005 + 1442695040888963407
			if rng>>60 < 10 {
				b[i] = 'x'
			} else {
				b[i] = alphabet[(rng>>33)%uint64(len(alphabet))]
			}
		}
		for i := 0; i <= len(b); i++ {
			if got, want := plainRun(b, i), naive(b, i); got != want {
				t.Fatalf("plainRun(%q, %d) = %d, want %d", b, i, got, want)
			}
		}
	}
}

func TestFastPathStringsFollowEncodingJSON(t *testing.T) {
	f := fastSlowFields(t)
	for _, c := range []struct{ line, want string }{
		{`{"s":"a\"b\\c\/d\n"}`, "a\"b\\c/d\n"},
		{`{"s":"caf\u00e9 \ud83d\ude00"}`, "café 😀"},
		{`{"s":"s\\ud800"}`, `s\ud800`},
	} {
		// encoding/json is the reference for the text.
		var m map[string]string
		if err := json.Unmarshal([]byte(c.line), &m); err != nil || m["s"] != c.want {
			t.Fatalf("reference %q: %q %v, want %q", c.line, m["s"], err, c.want)
		}
		for _, fast := range []bool{true, false} {
			d := NewJSON(f)
			d.fast = fast
			r := f.Schema.NewRow()
			if err := d.Decode([]byte(c.line), r, new(source.Arena)); err != nil {
				t.Fatal(err)
			}
			sf, _ := f.Schema.Lookup("s")
			if got := r.S[sf.Slot]; got != c.want {
				t.Errorf("%q fast=%v: %q, want %q", c.line, fast, got, c.want)
			}
		}
	}
	// Invalid JSON that fastjson would accept is refused on both paths.
	for _, line := range []string{"{\"s\":\"tab\traw\"}", `{"s":"\q"}`, `{"s":"x","junk":[01]}`, `{"s":"x","junk":NaN}`, `{"a":{"b":[1,2,}}}`} {
		for _, fast := range []bool{true, false} {
			d := NewJSON(f)
			d.fast = fast
			if err := d.Decode([]byte(line), f.Schema.NewRow(), new(source.Arena)); err == nil || err.Rule != "decode" {
				t.Errorf("%q fast=%v: %v, want a decode error", line, fast, err)
			}
		}
	}
}
