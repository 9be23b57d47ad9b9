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
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/engine/group"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/planner"
)

// Load reads and decodes a pipeline file: YAML (spec.Decode), or a SQL
// script when its name ends in .sql (sql/planner: the same spec the YAML
// form of the job decodes into; docs/sql.md). Defaults and validation
// come with Compile, after the pipeline's contract (if any) has filled in
// its keys.
func Load(path string) (*spec.Pipeline, error) {
	if strings.EqualFold(filepath.Ext(path), ".sql") {
		return planner.Load(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return spec.Decode(path, data)
}

// Compile loads the pipeline's contract (p.Contract, a path), lets it fill
// in unset keys (contract.Apply), applies defaults, validates, and
// compiles the pipeline into a plan. Errors name the offending keys.
func Compile(p *spec.Pipeline) (*plan.Plan, error) {
	var c *contract.Contract
	if p.Contract != "" {
		var err error
		if c, err = contract.Load(p.Contract); err != nil {
			return nil, fmt.Errorf("contract: %w", err)
		}
		if err := contract.Apply(c, p); err != nil {
			return nil, fmt.Errorf("contract %s: %w", p.Contract, err)
		}
	}
	p.Defaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return plan.Compile(p, c)
}

// Run compiles and runs a pipeline until its bounded source is exhausted or
// ctx is cancelled, and returns the run's summary. A pipeline whose source
// has assignment: group runs as one instance of its group (group.Run,
// unless opts.Group names another runner).
func Run(ctx context.Context, p *spec.Pipeline, opts engine.Options) (*engine.Summary, error) {
	pl, err := Compile(p)
	if err != nil {
		return nil, err
	}
	if opts.Group == nil {
		opts.Group = group.Run
	}
	return engine.Run(ctx, pl, opts)
}
