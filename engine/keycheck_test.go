package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// TestMisspeltKeyStopsTheRun (issue 18 item 2): over JSONL with no field
// list, key [stor_id, currency] — a field no record has — stops the run
// before anything is written, naming the field and store_id; declared in
// source.schema, or null in only some records, it runs.
func TestMisspeltKeyStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 3000 {
		store := `"store_id":"s1",`
		if i%2 == 0 {
			store = ""
		}
		b.WriteString(`{"paid_at":"2026-09-01T10:00:0` + string(rune('0'+i%10)) + `Z",` + store + `"currency":"KRW","amount":1}` + "\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(key string, schema spec.FieldTypes) (string, error) {
		out := filepath.Join(dir, key+".jsonl")
		p := &spec.Pipeline{
			Name:       "keys",
			Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: append(spec.FieldTypes{{Name: "amount", Type: "int"}}, schema...)},
			EventTime:  spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Second)},
			Key:        []string{key, "currency"},
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
		_, err = engine.Run(context.Background(), pl, engine.Options{BatchSize: 1000})
		data, _ := os.ReadFile(out)
		return string(data), err
	}
	got, err := run("stor_id", nil)
	want := `stage keys: key field "stor_id" is null or missing in all 1000 records of the first batch read (from ` + in + `:1) (did you mean store_id?); nothing was written. A misspelt field? If it really is null in these records, declare it in source.schema`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if got != "" {
		t.Fatalf("the sink holds %q", got)
	}
	if got, err := run("stor_id", spec.FieldTypes{{Name: "stor_id", Type: "string"}}); err != nil || !strings.Contains(got, `"stor_id":null`) {
		t.Fatalf("declared in source.schema: %v, %q", err, got)
	}
	if got, err := run("store_id", nil); err != nil || !strings.Contains(got, `"store_id":"s1"`) || !strings.Contains(got, `"store_id":null`) {
		t.Fatalf("a key null in half the records: %v, %q", err, got)
	}
}
