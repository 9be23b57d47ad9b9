// Package backfill turns a pipeline into its backfill: a bounded replay of
// an event-time range that recomputes the results into a new result
// version, beside the live pipeline and without touching it
// (docs/reprocessing.md).
//
// Apply rewrites a loaded pipeline spec:
//
//   - the job: name "<name>__backfill_<version>" (its own commit markers,
//     metrics label and status page), its own checkpoint directory
//     "<dir>/backfill-<version>", its own Kafka consumer group
//     "<group>-backfill-<version>";
//   - the source: a Kafka source reads from the earliest offset and stops at
//     the end offsets of the start of the run (stop_at_end); a file source
//     is bounded already. The engine keeps only the events whose event time
//     is in [from, to) (engine.Options.Range);
//   - the outputs, each into its version: SQL tables "<table>__<version>"
//     (a ledger's tables too), JSONL files "<path without ext>.<version><ext>",
//     Kafka topics "<topic>.<version>" (which must exist).
//
// A backfill never adds to existing totals: it starts without state and
// replaces the rows of its version's tables (a fresh run), so running it
// twice gives the same tables. The guards refuse a version that is not a
// plain label (results.CheckVersion), the label "live", and a version
// whose table is the pipeline's own (a sink already writing
// "<table>__v2").
package backfill

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tidemark/tidemark/results"
	"github.com/tidemark/tidemark/spec"
)

// Table is the name of version v of the table a sink writes, by the
// convention of package results: the serving name and "__v":
// "revenue_minute__live" (the live pipeline's table) and
// "revenue_minute" both give "revenue_minute__v2"; a schema-qualified
// name keeps its schema.
func Table(t, v string) string { return results.VersionTable(results.ServingView(t), v) }

// labelRE is a backfill's version label.
var labelRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Path is the file of version v of a JSONL output: "out/late.jsonl" →
// "out/late.v2.jsonl".
func Path(p, v string) string {
	ext := filepath.Ext(p)
	return strings.TrimSuffix(p, ext) + "." + v + ext
}

// Check returns why version v cannot take a backfill, or nil.
func Check(v string) error {
	if err := results.CheckVersion(v); err != nil {
		return fmt.Errorf("--result-version: %w", err)
	}
	// Lower case only: SQLite's table names ignore case, so "LIVE" or "V2"
	// would write into "live" or "v2".
	if !labelRE.MatchString(v) {
		return fmt.Errorf("--result-version %q: a backfill's label is lower case, starting with a letter (v2, sept_fix)", v)
	}
	if v == results.LiveVersion {
		return fmt.Errorf("--result-version live: a backfill writes a new version beside the live tables, never into them (appending a replay to live totals counts its events twice)")
	}
	return nil
}

// Apply rewrites p (loaded, before its defaults) into the backfill of result
// version v. It returns Check's error, and an error for a source it
// cannot bound (none today).
func Apply(p *spec.Pipeline, v string) error {
	if err := Check(v); err != nil {
		return err
	}
	name := p.Name
	var guard error
	p.Name = p.Name + "__backfill_" + v
	if c := p.Checkpoint; c != nil {
		c.Dir = filepath.Join(c.Dir, "backfill-"+v)
	}
	// A backfill reads the past on purpose: event_time.max_past would
	// quarantine it (docs/semantics.md, "Timestamp rules").
	off := spec.Duration(0)
	p.EventTime.MaxPast = &off
	src := &p.Source
	if src.Type == "kafka" {
		if src.Group != "" {
			src.Group += "-backfill-" + v
		}
		src.Start, src.StartTimestamp = "earliest", ""
		src.StopAtEnd = true
	}
	sink := func(s *spec.Sink, stage string) {
		if s == nil {
			return
		}
		switch s.Type {
		case "sqlite", "postgres":
			if s.Table == "" { // the default, spec.Pipeline.Defaults's
				s.Table = spec.DefaultTable(stage)
			}
			if strings.EqualFold(Table(s.Table, v), s.Table) && guard == nil {
				guard = fmt.Errorf("--result-version %s: table %s is the pipeline's own (live) table; a backfill writes a new version beside it", v, s.Table)
			}
			s.Table = Table(s.Table, v)
			if s.LedgerTable != "" {
				s.LedgerTable = Table(s.LedgerTable, v)
			}
		case "jsonl":
			s.Path = Path(s.Path, v)
		case "parquet":
			// A directory of its own: a run from the start removes the
			// files its directory's manifests name.
			s.Path = Path(s.Path, v)
		case "iceberg":
			if s.Table == "" {
				s.Table = spec.DefaultTable(stage)
			}
			if strings.EqualFold(Table(s.Table, v), s.Table) && guard == nil {
				guard = fmt.Errorf("--result-version %s: table %s is the pipeline's own (live) table; a backfill writes a new version beside it", v, s.Table)
			}
			s.Table = Table(s.Table, v)
		case "kafka":
			s.Topic = s.Topic + "." + v
			s.TransactionalID, s.MarkerTopic = "", ""
		}
	}
	sink(p.Quarantine.Sink, "")
	sink(p.Conflicts.Sink, "")
	if c := p.Contributions; c != nil {
		sink(c.Sink, name)
	}
	stages := p.Stages
	if len(stages) == 0 {
		for i := range p.Sinks {
			sink(&p.Sinks[i], name)
		}
		sink(p.Late.Sink, name)
	}
	for i := range stages {
		for j := range stages[i].Sinks {
			sink(&stages[i].Sinks[j], stages[i].Name)
		}
		sink(stages[i].Late.Sink, stages[i].Name)
		if c := stages[i].Contributions; c != nil {
			sink(c.Sink, stages[i].Name)
		}
	}
	return guard
}
