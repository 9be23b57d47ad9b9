package planner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/goccy/go-yaml"

	"github.com/tidemark/tidemark/sql/parser"
)

// TestPlanFiles runs testdata/plan/*.txt, one file per construct:
//
//	ddl     statements every later plan of the file starts with
//	plan    a script (after the file's ddl): prints the pipeline spec it
//	        compiles to, as YAML without the keys left unset, or the
//	        error with its position and caret
//
// Rewrite with -rewrite.
func TestPlanFiles(t *testing.T) {
	datadriven.Walk(t, "testdata/plan", func(t *testing.T, path string) {
		ddl := ""
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "ddl":
				ddl = td.Input + "\n"
				return "ok\n"
			case "plan":
				src := ddl + td.Input
				s, err := parser.Parse("job.sql", []byte(src), parser.Options{Lookup: func(k string) (string, bool) { return "", false }})
				if err != nil {
					return err.Error() + "\n"
				}
				p, err := Compile(s, Options{File: "job.sql"})
				if err != nil {
					return err.Error() + "\n"
				}
				return specYAML(t, p)
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

// specYAML renders a spec as YAML without its zero values.
func specYAML(t *testing.T, p any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.MarshalWithOptions(prune(v), yaml.IndentSequence(true))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(out), "\n\n", "\n")
}

// prune drops zero values (false, 0, "", null, empty lists and maps) and
// writes Go durations (ns) as text.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := yaml.MapSlice{}
		for _, k := range sortedMapKeys(v) {
			x := prune(v[k])
			if f, ok := x.(float64); ok && durationKeys[k] {
				x = time.Duration(int64(f)).String()
			} else if ok && f == float64(int64(f)) {
				x = int64(f)
			}
			if x == nil {
				continue
			}
			out = append(out, yaml.MapItem{Key: k, Value: x})
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, x := range v {
			if y := prune(x); y != nil {
				out = append(out, y)
			} else {
				out = append(out, "")
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case bool:
		if !v {
			return nil
		}
	case float64:
		if v == 0 {
			return nil
		}
	case string:
		if v == "" {
			return nil
		}
	case nil:
		return nil
	}
	return v
}

// durationKeys are the spec's fields of type Duration (JSON: ns).
var durationKeys = map[string]bool{"OutOfOrderness": true, "IdleTimeout": true, "Size": true, "Slide": true, "Gap": true,
	"Step": true, "Offset": true, "AllowedLateness": true, "EarlyEvery": true, "TTL": true, "Lower": true, "Upper": true,
	"MaxSpan": true, "MaxFuture": true, "MaxPast": true, "Delay": true, "MaxDelay": true, "Interval": true, "TransactionTimeout": true}

func sortedMapKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
