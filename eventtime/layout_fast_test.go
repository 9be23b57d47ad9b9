package eventtime

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestLayoutFastPathMatchesSlow: a parser whose zone cache is warm (the
// arithmetic fast path) gives exactly what a fresh parser (only
// time.ParseInLocation and its DST checks) gives, for random local times in
// random order around DST changes, skipped days and odd offsets.
func TestLayoutFastPathMatchesSlow(t *testing.T) {
	zones := []string{"Europe/London", "America/Sao_Paulo", "Pacific/Apia", "Australia/Lord_Howe", "Asia/Kolkata", "America/St_Johns", "UTC"}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		for _, z := range zones {
			loc, err := time.LoadLocation(z)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/%s", z, layout[10:11]), func(t *testing.T) {
				warm := &Parser{Format: Layout, Layout: layout, Loc: loc}
				rapid.Check(t, func(rt *rapid.T) {
					for _, sec := range rapid.SliceOfN(rapid.Int64Range(1_262_304_000, 1_356_998_400), 1, 30).Draw(rt, "secs") { // 2010–2012
						text := time.Unix(sec, 0).UTC().Format(layout) // any wall clock, existing or not
						if rapid.Bool().Draw(rt, "near") {
							text = time.Unix(sec, 0).In(loc).Format(layout)
						}
						cold := &Parser{Format: Layout, Layout: layout, Loc: loc}
						want, werr := cold.Parse([]byte(text))
						got, gerr := warm.Parse([]byte(text))
						if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
							rt.Fatalf("%s in %s: warm %d %v, cold %d %v", text, z, got, gerr, want, werr)
						}
					}
				})
			})
		}
	}
}

func BenchmarkParseLayoutLondon(b *testing.B) {
	loc, _ := time.LoadLocation("Europe/London")
	p := &Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: loc}
	in := []byte("2011-06-15 10:16:00")
	p.Parse(in)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
