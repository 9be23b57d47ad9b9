package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// TestReferenceTextRule: a reference value holding a NUL character or
// invalid UTF-8 (in a CSV or a JSON lines file, the key column or a field
// the pipeline uses) stops the run before any record is read, naming the
// file, line, column and byte. Before, a NUL in a reference field went
// into the rows, and every PostgreSQL commit failed ("invalid byte
// sequence for encoding UTF8: 0x00") naming neither the file nor the
// line; invalid bytes in a JSON file were replaced by U+FFFD.
func TestReferenceTextRule(t *testing.T) {
	const why = ": reference values must be valid UTF-8 without NUL characters (PostgreSQL text cannot store a NUL, and invalid bytes would merge or split keys)"
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"csv NUL", "stores.csv", "store_id,region\ns1,north\ns2,ea\x00st\n", "stores.csv:3: column region: a NUL character at byte 2 of the value"},
		{"csv invalid UTF-8", "stores.csv", "store_id,region\ns1,\"no\xffrth\"\n", "stores.csv:2: column region: invalid UTF-8 at byte 2 of the value"},
		{"csv key", "stores.csv", "store_id,region\ns\xfe1,north\n", "stores.csv:2: column store_id: invalid UTF-8 at byte 1 of the value"},
		{"json escape", "stores.jsonl", `{"store_id":"s1","region":"nor\u0000th"}` + "\n", "stores.jsonl:1: column region: a NUL character at byte 3 of the value"},
		{"json invalid UTF-8", "stores.jsonl", `{"store_id":"s1","region":"x"}` + "\n" + "{\"store_id\":\"s2\",\"region\":\"ab\xfe\"}\n", "stores.jsonl:2: column region: invalid UTF-8 at byte 2 of the value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, ref, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, tc.file), filepath.Join(dir, "out.jsonl")
			if err := os.WriteFile(in, []byte(`{"store_id":"s1","paid_at":"2026-09-01T10:00:00Z"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ref, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			p := &spec.Pipeline{
				Name:       "ref",
				Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "store_id", Type: "string"}}},
				EventTime:  spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Second)},
				Reference:  &spec.Reference{Path: ref, Key: "store_id", Fields: spec.FieldTypes{{Name: "region", Type: "string"}}},
				Key:        []string{"region"},
				Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
				Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
				Sinks:      []spec.Sink{{Type: "jsonl", Path: out}},
			}
			p.Defaults()
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			pl, err := plan.Compile(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = engine.Run(context.Background(), pl, engine.Options{})
			var ce *engine.ConfigError
			if want := ref[:len(ref)-len(tc.file)] + tc.want + why; err == nil || err.Error() != want || !errors.As(err, &ce) {
				t.Fatalf("error %v\nwant a *ConfigError %s", err, want)
			}
			if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
				t.Fatalf("the sink holds %q", b)
			}
		})
	}
}
