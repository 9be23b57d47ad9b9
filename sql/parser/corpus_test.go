package parser

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir returns the Nexmark SQL corpus (shared/nexmark-sql above the
// checkout, or TIDEMARK_NEXMARK_SQL), skipping the test without it.
func corpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TIDEMARK_NEXMARK_SQL"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for dir := wd; ; dir = filepath.Dir(dir) {
		c := filepath.Join(dir, "shared", "nexmark-sql")
		if st, err := os.Stat(filepath.Join(c, "q0.sql")); err == nil && !st.IsDir() {
			return c
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	t.Skip("the Nexmark SQL corpus (shared/nexmark-sql) is not above the checkout")
	return ""
}

func TestParseCorpus(t *testing.T) {
	dir := corpusDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
	env := map[string]string{"NEXMARK_TABLE": "datagen"}
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		if !ok {
			v = "1"
		}
		return v, true
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(filepath.Base(f), src, Options{Lookup: lookup})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(s.Stmts) == 0 {
			t.Errorf("%s: no statements", f)
		}
	}
}
