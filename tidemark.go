// Package tidemark is an event-time stream processor: it computes windowed
// results such as "net revenue per store per minute" from events that
// arrive late, twice, out of order, or again after a replay, and converges
// to the same business facts.
//
// Build a pipeline from Go code by filling in a spec.Pipeline (the same
// struct a YAML file decodes into) and run it:
//
//	p := &spec.Pipeline{
//		Name:      "revenue_minute",
//		Source:    spec.Source{Type: "file", Path: "orders.jsonl", Schema: spec.FieldTypes{{Name: "amount", Type: "decimal"}}},
//		EventTime: spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(2 * time.Minute)},
//		Key:       []string{"store_id"},
//		Window:    spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
//		Aggregates: spec.NamedExprs{{Name: "revenue", Expr: "sum(amount)"}},
//		Sinks:     []spec.Sink{{Type: "sqlite", Path: "out/tidemark.db"}},
//	}
//	sum, err := tidemark.Run(ctx, p, engine.Options{})
//
// Compile and Run fill in defaults on the struct they are given. A program
// that names IANA zones (timezone: Asia/Seoul) on machines without zone
// data should import _ "time/tzdata", as the tidemark command does.
//
// docs/ARCHITECTURE.md maps the packages; docs/semantics.md states the
// rules for time, windows, lateness and emission.
package tidemark

import (
	"context"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// Load reads a pipeline YAML file (see spec.Load).
func Load(path string) (*spec.Pipeline, error) { return spec.Load(path) }

// Compile applies defaults, validates and compiles a pipeline into a plan.
// Errors name the offending keys.
func Compile(p *spec.Pipeline) (*plan.Plan, error) {
	p.Defaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return plan.Compile(p)
}

// Run compiles and runs a pipeline until its bounded source is exhausted or
// ctx is cancelled, and returns the run's summary.
func Run(ctx context.Context, p *spec.Pipeline, opts engine.Options) (*engine.Summary, error) {
	pl, err := Compile(p)
	if err != nil {
		return nil, err
	}
	return engine.Run(ctx, pl, opts)
}
