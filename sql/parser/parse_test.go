package parser

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestParseFiles runs testdata/*.txt: `parse` prints the script as Format
// renders it (one statement per line) or the error, with its caret.
// Rewrite with -rewrite.
func TestParseFiles(t *testing.T) {
	env := map[string]string{"TPS": "1000", "TABLE": "datagen"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "parse":
				s, err := Parse("job.sql", []byte(td.Input), Options{Lookup: lookup})
				if err != nil {
					return err.Error() + "\n"
				}
				return FormatScript(s)
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}
