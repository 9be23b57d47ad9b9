package engine

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/jsonl"
	"github.com/tidemark/tidemark/sink/sqlite"
	"github.com/tidemark/tidemark/sink/stdout"
	"github.com/tidemark/tidemark/spec"
)

// ResultSinkFactory opens a result sink for a spec.Sink of one type.
type ResultSinkFactory func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error)

// RecordSinkFactory opens a side-output sink for a spec.Sink of one type.
type RecordSinkFactory func(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error)

// Env is what connectors may use from the environment: where stdout goes.
type Env struct {
	Stdout io.Writer
}

// Registry maps sink type names to constructors. Each Run uses its own
// (Options.Registry), defaulting to DefaultRegistry().
type Registry struct {
	Results map[string]ResultSinkFactory
	Records map[string]RecordSinkFactory
}

// DefaultRegistry returns the built-in sinks: sqlite, jsonl and stdout for
// results; jsonl and stdout for side outputs.
func DefaultRegistry() *Registry {
	return &Registry{
		Results: map[string]ResultSinkFactory{
			"sqlite": func(ctx context.Context, s spec.Sink, d changelog.Desc, _ *Env) (sink.Results, error) {
				// A run recomputes its results from the start of its
				// input: it replaces the table's rows (in its first
				// commit) rather than being held back by the versions a
				// previous run left.
				return sqlite.NewWithOptions(ctx, s.Path, s.Table, d, sqlite.Options{Replace: true})
			},
			"jsonl": func(_ context.Context, s spec.Sink, d changelog.Desc, _ *Env) (sink.Results, error) {
				return jsonl.NewResults(s.Path, d)
			},
			"stdout": func(_ context.Context, _ spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				return stdout.New(env.Stdout, d), nil
			},
		},
		Records: map[string]RecordSinkFactory{
			"jsonl": func(_ context.Context, s spec.Sink, _ *Env) (sink.Records, error) {
				return jsonl.NewRecords(s.Path)
			},
			"stdout": func(_ context.Context, _ spec.Sink, env *Env) (sink.Records, error) {
				return newLineRecords(env.Stdout), nil
			},
		},
	}
}

func (r *Registry) openResults(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
	f, ok := r.Results[s.Type]
	if !ok {
		return nil, fmt.Errorf("no result sink of type %q (known: %s)", s.Type, names(r.Results))
	}
	return f(ctx, s, d, env)
}

func (r *Registry) openRecords(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error) {
	f, ok := r.Records[s.Type]
	if !ok {
		return nil, fmt.Errorf("no side-output sink of type %q (known: %s)", s.Type, names(r.Records))
	}
	return f(ctx, s, env)
}

// names lists a registry map's type names, sorted.
func names[V any](m map[string]V) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// lineRecords writes side-output records as lines to a writer.
type lineRecords struct{ w io.Writer }

func newLineRecords(w io.Writer) *lineRecords { return &lineRecords{w: w} }

func (l *lineRecords) WriteRecord(_ context.Context, obj []byte) error {
	if _, err := l.w.Write(obj); err != nil {
		return err
	}
	_, err := l.w.Write([]byte{'\n'})
	return err
}
func (l *lineRecords) Flush(context.Context) error { return nil }
func (l *lineRecords) Close(context.Context) error { return nil }
