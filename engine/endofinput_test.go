package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/spec"
)

// errRegistryEOF is what Go's HTTP client reports for a registry whose
// connection closed before it answered: an error wrapping io.EOF.
var errRegistryEOF = fmt.Errorf(`kafka source: topic orders partition 0 offset 7: schema id 1: schema registry at http://127.0.0.1:1: Get "http://127.0.0.1:1/schemas/ids/1": %w`, io.EOF)

// failingSource delivers its file source's batches, then, at its
// failAt-th read — a call to Next, or to Claim when the run splits the
// file's reads (two tasks or more) — fails with err (0: never).
type failingSource struct {
	*file.Source
	calls, failAt int
	err           error
}

func (f *failingSource) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	f.calls++
	if f.calls == f.failAt {
		return source.More, f.err
	}
	return f.Source.Next(ctx, b, max)
}

func (f *failingSource) Claim(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	f.calls++
	if f.calls == f.failAt {
		return source.More, f.err
	}
	return f.Source.Claim(ctx, b, max)
}

// runWithSource compiles p and runs it with its source replaced by the
// file source of p's source spec, failing at its failAt-th read.
func runWithSource(t *testing.T, p *spec.Pipeline, failAt, parallelism int) error {
	t.Helper()
	pl := compiled(t, p)
	fs, err := file.New(file.Config{Spec: p.Source, Fields: format.Fields{Schema: pl.SourceSchema, Time: pl.TimeParsers}, EventTimeField: pl.EventTimeField})
	if err != nil {
		t.Fatal(err)
	}
	src := &failingSource{Source: fs, failAt: failAt, err: errRegistryEOF}
	_, err = engine.Run(context.Background(), pl, engine.Options{Source: src, Parallelism: parallelism, BatchSize: 37})
	return err
}

// TestAnErrorWrappingEOFIsNotTheEnd: a source read that fails with an
// error wrapping io.EOF (a schema registry's closed connection) fails
// the run, naming what failed — it is not the end of the input — and the
// checkpoint it leaves does not say the input ended: the next run
// resumes and writes the rows of an undisturbed run. Once through the
// single-source router (pipeline.go) and once through the inputs of a
// join (inputs.go), at parallelism 1 and 3.
func TestAnErrorWrappingEOFIsNotTheEnd(t *testing.T) {
	dir := t.TempDir()
	pay, ref := joinInputs(t, dir, 600)
	windowed := func(out, ck string) *spec.Pipeline {
		p := &spec.Pipeline{
			Name: "eofwindow", KeyGroups: 16,
			Source: spec.Source{Type: "file", Path: pay, Format: "jsonl", ArrivalTimeField: "at",
				Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)},
			Key:        []string{"order"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "paid", Expr: "sum(amount)"}, {Name: "n", Expr: "count()"}},
			Emit:       spec.Emit{Mode: "final"},
			Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "per_minute.jsonl")}},
		}
		if ck != "" {
			p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Millisecond), Retain: 3}
		}
		return p
	}
	joined := func(out, ck string) *spec.Pipeline { return joinRestorePipeline(pay, ref, out, ck) }
	for _, tc := range []struct {
		name  string
		build func(out, ck string) *spec.Pipeline
		files []string
	}{
		{"source", windowed, []string{"per_minute.jsonl"}},
		{"inputs", joined, []string{"joined.jsonl", "late.jsonl", "per_minute.jsonl"}},
	} {
		for _, par := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", tc.name, par), func(t *testing.T) {
				base := t.TempDir()
				want := filepath.Join(base, "want")
				if err := runWithSource(t, tc.build(want, ""), 0, par); err != nil {
					t.Fatal(err)
				}
				out, ck := filepath.Join(base, "out"), filepath.Join(base, "ck")
				err := runWithSource(t, tc.build(out, ck), 9, par)
				if err == nil || !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "schema registry at http://127.0.0.1:1") {
					t.Fatalf("a read failing with an error wrapping io.EOF: %v; want the run to fail naming the registry", err)
				}
				if err := runWithSource(t, tc.build(out, ck), 0, par); err != nil {
					t.Fatalf("the run after the failure: %v", err)
				}
				for _, f := range tc.files {
					if got, w := sortedLines(t, filepath.Join(out, f)), sortedLines(t, filepath.Join(want, f)); got != w {
						t.Errorf("%s after the failure and a restart differs from an undisturbed run:\n%s\nwant\n%s", f, head(got), head(w))
					}
				}
			})
		}
	}
}

// head returns the first lines of s, for messages.
func head(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	if len(lines) > 5 {
		lines = append(lines[:5], "…")
	}
	return strings.Join(lines, "\n")
}
