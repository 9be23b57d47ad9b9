package eventtime

import (
	"testing"

	"pgregory.net/rapid"
)

// TestParseWithCacheMatchesParse: through one DateCache, any sequence of
// texts (RFC 3339, and a layout) parses as Parse parses each alone: the
// same instant, or the same error. Texts often share their date, or
// differ from a cached date in one byte.
func TestParseWithCacheMatchesParse(t *testing.T) {
	london := load(t, "Europe/London")
	rapid.Check(t, func(t *rapid.T) {
		p := &Parser{}
		if rapid.Bool().Draw(t, "layout") {
			p = &Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: london}
		}
		var c DateCache
		prev := ""
		for i := range rapid.IntRange(1, 30).Draw(t, "n") {
			var s string
			switch {
			case i > 0 && rapid.IntRange(0, 2).Draw(t, "again") == 0 && len(prev) >= 19:
				// prev's date with another time of day, or one byte of
				// prev's date changed.
				s = prev[:11] + genRFC3339().Draw(t, "s")[11:]
				if rapid.Bool().Draw(t, "damage date") {
					at := rapid.IntRange(0, 9).Draw(t, "at")
					s = s[:at] + string(rapid.ByteRange('-', '9').Draw(t, "b")) + s[at+1:]
				}
			default:
				s = genRFC3339().Draw(t, "s")
			}
			if p.Format == Layout && len(s) >= 19 {
				s = s[:10] + " " + s[11:19]
			}
			prev = s
			got, gerr := p.ParseWith([]byte(s), &c)
			want, werr := p.Parse([]byte(s))
			if got != want || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("%q: with the cache %d, %v; alone %d, %v", s, got, gerr, want, werr)
			}
		}
	})
}

// BenchmarkParseArticle parses the article's paid_at and produced_at
// shape, "2026-06-24T11:48:31+09:00", whose date repeats from event to
// event, with and without a DateCache.
func BenchmarkParseArticle(b *testing.B) {
	in := [][]byte{[]byte("2026-06-24T11:48:31+09:00"), []byte("2026-06-24T11:48:33+09:00")}
	p := &Parser{}
	b.Run("cache", func(b *testing.B) {
		var c DateCache
		i := 0
		for b.Loop() {
			p.ParseWith(in[i&1], &c)
			i++
		}
	})
	b.Run("no-cache", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p.Parse(in[i&1])
			i++
		}
	})
}
