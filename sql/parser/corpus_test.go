package parser

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/internal/datatest"
)

func TestParseCorpus(t *testing.T) {
	dir := datatest.NexmarkSQL(t)
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
