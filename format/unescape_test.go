package format

import (
	"encoding/json"
	"testing"
)

// TestAppendUnescapedMatchesEncodingJSON: the lenient unescape gives
// encoding/json's text for string bodies with escapes, surrogate pairs,
// lone surrogates and invalid UTF-8 (both as U+FFFD), and \u0000 kept.
func TestAppendUnescapedMatchesEncodingJSON(t *testing.T) {
	bodies := []string{
		`plain`, `a\nb\tc\r\b\f`, `q\"s\\l\/`, `\u0041\u00e9\u20ac`,
		`\ud83d\ude00`, `x\ud800y`, `\udc00\ud800`, `\ud83d`, `\ud83d\u0041`,
		"\xff", "a\xc3", "\xed\xa0\x80", "\xef\xbf\xbd", `\u0000`, "caf\xc3\xa9",
	}
	for _, b := range bodies {
		var want string
		if err := json.Unmarshal([]byte(`"`+b+`"`), &want); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if got := string(appendUnescaped(nil, []byte(b))); got != want {
			t.Errorf("%q: got %q, encoding/json %q", b, got, want)
		}
	}
}
