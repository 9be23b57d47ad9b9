package perturb

import (
	"math/big"
	"strings"
	"testing"
)

func TestAddOne(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"19.99", "20.99"},
		{"7", "8"},
		{"0", "1"},
		{"9", "10"},
		{"99.9", "100.9"},
		{"-0.5", "0.5"},
		{"-1", "0"},
		{"-1.00", "0.00"},
		{"-19.99", "-18.99"},
		{"-100", "-99"},
		{"0.0", "1.0"},
		{"1e3", "1.001e3"},
		{"1.5e3", "1.501e3"},
		{"1E+2", "1.01E+2"},
		{"5E-1", "15E-1"},
		{"-2.5e-1", "7.5e-1"},
		{"1e0", "2e0"},
		{"+7", "+8"},
		{"007", "008"},
		{"-007", "-006"},
		{"099", "100"},
		{"12345678901234567890123", "12345678901234567890124"},
		{"-0", "1"},
	} {
		got, ok := AddOne([]byte("pre:"), []byte(tc.in))
		if !ok || string(got) != "pre:"+tc.want {
			t.Errorf("AddOne(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{"", "-", "+", ".5", "1.", "1e", "1e+", "a", "1a", "1.2.3", "--1", " 1", "1 ", "1e401", "1e-401", "0x10", "NaN", "Inf"} {
		if got, ok := AddOne([]byte("pre:"), []byte(in)); ok || string(got) != "pre:" {
			t.Errorf("AddOne(%q) = %q, %v; want refused, dst unchanged", in, got, ok)
		}
	}
}

// FuzzAddOne checks AddOne against big.Rat: the result is the input plus
// one, with at least as many digits after the point and the same
// exponent text.
func FuzzAddOne(f *testing.F) {
	for _, s := range []string{"19.99", "-0.5", "1.5e3", "5E-1", "007", "+3", "-1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := AddOne(nil, []byte(s))
		if !ok {
			return
		}
		x, ok1 := new(big.Rat).SetString(strings.TrimPrefix(s, "+"))
		y, ok2 := new(big.Rat).SetString(strings.TrimPrefix(string(got), "+"))
		if !ok1 || !ok2 {
			t.Fatalf("AddOne(%q) = %q: not numbers", s, got)
		}
		if d := new(big.Rat).Sub(y, x); d.Cmp(big.NewRat(1, 1)) != 0 {
			t.Fatalf("AddOne(%q) = %q: difference %s", s, got, d)
		}
		expOf := func(s string) string {
			if i := strings.IndexAny(s, "eE"); i >= 0 {
				return s[i:]
			}
			return ""
		}
		if expOf(s) != expOf(string(got)) {
			t.Fatalf("AddOne(%q) = %q: exponent changed", s, got)
		}
	})
}

func TestAppendChanged(t *testing.T) {
	for _, tc := range []struct {
		obj, field string
		change     Change
		want       string // "" for not changed
	}{
		{`{"a":19.99}`, "a", ByJSONType, `{"a":20.99}`},
		{`{"a":"x"}`, "a", ByJSONType, `{"a":"x-x"}`},
		{`{"a":"é\"\u0041"}`, "a", ByJSONType, `{"a":"é\"\u0041-x"}`},
		{`{"a":"12"}`, "a", ByJSONType, `{"a":"12-x"}`},
		{`{"a":"12"}`, "a", AsNumber, `{"a":"13"}`},
		{`{"a":"12x"}`, "a", AsNumber, ``},
		{`{"a":12}`, "a", AsString, `{"a":"12-x"}`},
		{`{"a":true}`, "a", AsString, `{"a":"true-x"}`},
		{`{"a":true}`, "a", ByJSONType, ``},
		{`{"a":null}`, "a", ByJSONType, ``},
		{`{"a":null}`, "a", AsString, ``},
		{`{"a":{"b":1}}`, "a", ByJSONType, ``},
		{`{"a":[1]}`, "a", ByJSONType, ``},
		{`{"b":1}`, "a", ByJSONType, ``},
		{`{"a":{"b":1},"a.b":5}`, "a.b", ByJSONType, `{"a":{"b":2},"a.b":5}`},
		{`{"a":{"c":1},"a.b":5}`, "a.b", ByJSONType, `{"a":{"c":1},"a.b":6}`},
		{`{"items":[{"p":1},{"p":2}]}`, "items.1.p", ByJSONType, `{"items":[{"p":1},{"p":3}]}`},
		{`{"a":1,"a":2}`, "a", ByJSONType, `{"a":2,"a":2}`},
		{` { "a" : 1 } `, "a", ByJSONType, ` { "a" : 2 } `},
		{`{"a":1e999}`, "a", ByJSONType, ``},
		{`not json`, "a", ByJSONType, ``},
	} {
		got, ok := AppendChanged([]byte("pre:"), []byte(tc.obj), tc.field, tc.change)
		switch {
		case tc.want == "" && (ok || string(got) != "pre:"):
			t.Errorf("AppendChanged(%s, %s, %s) = %s, %v; want not changed", tc.obj, tc.field, tc.change, got, ok)
		case tc.want != "" && (!ok || string(got) != "pre:"+tc.want):
			t.Errorf("AppendChanged(%s, %s, %s) = %s, %v; want %s", tc.obj, tc.field, tc.change, got, ok, tc.want)
		}
	}
}
