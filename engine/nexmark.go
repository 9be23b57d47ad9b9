package engine

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
)

// openNexmark opens the Nexmark generator the spec describes
// (docs/nexmark.md).
func openNexmark(p *plan.Plan, fields format.Fields) (source.Source, error) {
	sp := &p.Spec.Source
	cfg := nexmark.Config{Fields: fields, Events: sp.Events, Rate: sp.Rate, Seed: sp.Seed}
	if sp.BaseTime != "" {
		t, err := time.Parse(time.RFC3339Nano, sp.BaseTime)
		if err != nil {
			return nil, fmt.Errorf("source.base_time: %w", err)
		}
		cfg.BaseTime = t.UnixMilli()
	}
	if d := sp.Delay; d != nil {
		cfg.Delay = &nexmark.Delay{Fraction: d.Fraction, MaxMs: d.Max.Ms()}
	}
	return nexmark.New(cfg)
}
