package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// failingSink fails its nth Write.
type failingSink struct{ n int }

var errSinkBroke = errors.New("disk on fire")

func (f *failingSink) Write(context.Context, []changelog.Row) error {
	f.n--
	if f.n <= 0 {
		return errSinkBroke
	}
	return nil
}
func (f *failingSink) Flush(context.Context) error { return nil }
func (f *failingSink) Close(context.Context) error { return nil }

// TestSinkFailureStopsEveryTask: a sink that fails mid-run stops the whole
// run, at any parallelism, with the sink's error, and leaves no goroutine
// behind.
func TestSinkFailureStopsEveryTask(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range 20_000 {
		fmt.Fprintf(&b, `{"ts":"%s","k":"k%d","v":%d}`+"\n", base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%97, i)
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 4} {
		p := &spec.Pipeline{
			Name: "fail", Source: spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "v", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts"}, Key: []string{"k"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "s", Expr: "sum(v)"}},
			Sinks:      []spec.Sink{{Type: "failing"}},
		}
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		reg := DefaultRegistry()
		reg.Results["failing"] = func(context.Context, spec.Sink, changelog.Desc, *Env) (sink.Results, error) {
			return &failingSink{n: 5}, nil
		}
		_, err = Run(context.Background(), pl, Options{Registry: reg, Parallelism: n, BatchSize: 256})
		if !errors.Is(err, errSinkBroke) {
			t.Fatalf("parallelism %d: %v", n, err)
		}
	}
}
