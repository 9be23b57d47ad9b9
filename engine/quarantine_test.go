package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// TestQuarantineShare (issue 25 item 5): a run in which every record is
// quarantined says so once, with the rule and the first record, instead
// of a warning per field "null or missing in every record"; with
// quarantine.max_fraction it fails, naming the share, once 1,000 records
// were read (batches of 256: after the fourth), or at the end of a shorter
// input; a share below the bound runs.
func TestQuarantineShare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int, bad func(i int) bool) string {
		var b strings.Builder
		for i := range n {
			if bad(i) {
				b.WriteString("not json\n")
				continue
			}
			fmt.Fprintf(&b, `{"ts":"2026-09-01T10:00:%02dZ","k":"k%d","v":%d}`+"\n", i%60, i%5, i)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(in string, max *float64) (*engine.Summary, error) {
		p := &spec.Pipeline{
			Name:       "q",
			Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "v", Type: "int"}, {Name: "k", Type: "string"}}},
			EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Hour)},
			Key:        []string{"k"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "s", Expr: "sum(v)"}},
			Quarantine: spec.Quarantine{MaxFraction: max},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: in + ".out"}},
		}
		return engine.Run(context.Background(), compiled(t, p), engine.Options{BatchSize: 256})
	}
	all := write("all.jsonl", 1500, func(int) bool { return true })
	sum, err := run(all, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	sum.WriteText(&text, time.UTC)
	want := "  warning: every record read was quarantined (1500 of 1500, 1500 of them by rule decode; first: " + all + ":1"
	if !strings.Contains(text.String(), want) || strings.Contains(text.String(), "null or missing in every record") {
		t.Errorf("summary of a run that quarantined every record:\n%s\nwant a line starting %q and no warning per field", text.String(), want)
	}

	one := 0.01
	if _, err := run(all, &one); err == nil || !strings.Contains(err.Error(), "quarantine.max_fraction 0.01: 1024 of 1024 records read were quarantined (100.0 %; rule decode 1024; first: "+all+":1") {
		t.Errorf("every record quarantined, max_fraction 0.01: %v", err)
	}
	short := write("short.jsonl", 100, func(i int) bool { return i == 40 || i == 70 })
	if _, err := run(short, &one); err == nil || !strings.Contains(err.Error(), "quarantine.max_fraction 0.01: 2 of 100 records read were quarantined (2.0 %") {
		t.Errorf("2 of 100 quarantined, max_fraction 0.01: %v", err)
	}
	three := 0.03
	if sum, err := run(short, &three); err != nil || sum.Quarantined != 2 {
		t.Errorf("2 of 100 quarantined, max_fraction 0.03: %v", err)
	}
	zero := 0.0
	if _, err := run(short, &zero); err == nil || !strings.Contains(err.Error(), "quarantine.max_fraction 0: 2 of 100 records read") {
		t.Errorf("max_fraction 0: %v", err)
	}
}
