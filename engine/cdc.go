package engine

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/pgcdc"
)

// openCDC opens a postgres_cdc source (docs/connectors/postgres-cdc.md).
func openCDC(p *plan.Plan, fields format.Fields, logf func(string, ...any)) (source.Source, error) {
	cfg, err := cdcConfig(p, fields, logf)
	if err != nil {
		return nil, err
	}
	return pgcdc.New(cfg)
}

// CDCConfig returns the configuration of plan p's postgres_cdc source, for
// `tidemark check --connect` (pgcdc.Check).
func CDCConfig(p *plan.Plan) (pgcdc.Config, error) {
	return cdcConfig(p, format.Fields{Schema: p.SourceSchema, Time: p.TimeParsers}, nil)
}

// cdcConfig builds a postgres_cdc source's configuration. Without a
// checkpoint section its slot is temporary: nothing would ever confirm a
// position, and the slot would pin the server's WAL after the run.
func cdcConfig(p *plan.Plan, fields format.Fields, logf func(string, ...any)) (pgcdc.Config, error) {
	sp := &p.Spec.Source
	cfg := pgcdc.Config{
		DSN:                 sp.DSN,
		Table:               sp.Table,
		Publication:         sp.Publication,
		Slot:                sp.Slot,
		SlotGiven:           sp.Slot != "",
		Temporary:           p.Spec.Checkpoint == nil,
		Snapshot:            sp.Snapshot,
		Key:                 sp.KeyColumns,
		Fields:              fields,
		PollTimeoutMs:       sp.PollTimeout.Ms(),
		StatusIntervalMs:    sp.StatusInterval.Ms(),
		HeartbeatIntervalMs: sp.HeartbeatInterval.Ms(),
		HeartbeatTable:      sp.HeartbeatTable,
		Logf:                logf,
	}
	if cfg.Slot == "" {
		cfg.Slot = pgcdc.SlotName(p.Spec.Name)
	}
	if sp.Timezone != "" {
		loc, err := time.LoadLocation(sp.Timezone)
		if err != nil {
			return pgcdc.Config{}, fmt.Errorf("source.timezone: %w", err)
		}
		cfg.Timezone = loc
	}
	if c := p.Contract; c != nil {
		// A field the contract does not require may be null once a
		// schema change dropped its column (a compatible change).
		cfg.Optional = map[string]bool{}
		for _, f := range c.Fields {
			if !f.Required {
				cfg.Optional[f.Name] = true
			}
		}
	}
	return cfg, nil
}
