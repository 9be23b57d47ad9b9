package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/backfill"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/engine/group"
	"github.com/tidemark/tidemark/results"
	"github.com/tidemark/tidemark/source/kafka"
	"github.com/tidemark/tidemark/spec"
)

func newBackfillCmd(stdout, stderr io.Writer) *cobra.Command {
	var from, to, version string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "backfill PIPELINE.yaml|JOB.sql --from T1 --to T2 --result-version v2",
		Short: "Recompute a pipeline's results over an event-time range into a new result version",
		Long: `Recompute a pipeline's results over an event-time range into a new result
version, beside the live pipeline.

The backfill is its own job: name <pipeline>__backfill_<version>, its own
checkpoint directory (<dir>/backfill-<version>) and Kafka consumer group,
and its outputs go to version tables and files: <table>__<version>,
<file>.<version>.jsonl, <topic>.<version>. It reads the source again
(a Kafka source from the earliest offset to the end offsets of its start),
keeps the events whose event time is in [--from, --to), and recomputes: it
starts without state and replaces what its version's tables held, so it
never adds to existing totals. Then compare the versions (tidemark diff)
and serve the new one (tidemark promote); see docs/reprocessing.md.

--from and --to are RFC 3339 times with an offset.

Guards: the version "live" is refused (a backfill never appends to the
live totals), and a Kafka source whose retention deleted records that may
belong to the range is refused (by record timestamp: the first record
left in a partition whose log no longer starts at offset 0 is at or after
--from). A backfill is always a full recompute into a new version with
its own dedup state, so the dedup TTL cannot re-admit old duplicates.

Exit status: 0 when the backfill completed, 1 when it failed, 2 for a
usage or configuration error.`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" || from == "" || to == "" {
				return &exitError{code: 2, err: errors.New("--from, --to and --result-version are required")}
			}
			t1, err := time.Parse(time.RFC3339Nano, from)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--from %q: not an RFC 3339 time with an offset", from)}
			}
			t2, err := time.Parse(time.RFC3339Nano, to)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--to %q: not an RFC 3339 time with an offset", to)}
			}
			if !t1.Before(t2) {
				return &exitError{code: 2, err: fmt.Errorf("--from %s is not before --to %s", from, to)}
			}
			p, pl, err := compilePipeline(args[0], "", func(p *spec.Pipeline) error {
				if err := refuseServed(cmd.Context(), p, version); err != nil {
					return err
				}
				return backfill.Apply(p, version)
			})
			if err != nil {
				return err
			}
			// Guard: a range older than the source's retention would be
			// recomputed from an incomplete log.
			if p.Source.Type == "kafka" {
				if err := kafka.CheckRetention(cmd.Context(), kafka.Config{Brokers: p.Source.Brokers, Topics: p.Source.Topics}, t1.UnixMilli()); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--from %s: %w", from, err)}
				}
			}
			opts := engine.Options{Group: group.Run, Stdout: stdout, SetMemoryLimit: true, Range: &engine.TimeRange{From: t1.UnixMilli(), To: t2.UnixMilli()},
				Lineage: true, ReplayID: version + "@" + time.Now().UTC().Format(time.RFC3339),
				Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "tidemark: "+format+"\n", args...) }}
			sum, err := engine.Run(cmd.Context(), pl, opts)
			if err != nil {
				var ce *engine.ConfigError
				if errors.As(err, &ce) {
					return &exitError{code: 2, err: err}
				}
				return err
			}
			if !quiet {
				loc, _ := time.LoadLocation(pl.Stages[0].Desc.Timezone)
				sum.WriteText(stdout, loc)
				fmt.Fprintf(stdout, "  backfill             [%s, %s) into result version %s\n", from, to, version)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the event-time range, inclusive (RFC 3339)")
	cmd.Flags().StringVar(&to, "to", "", "end of the event-time range, exclusive (RFC 3339)")
	cmd.Flags().StringVar(&version, "result-version", "", "the result version to write, e.g. v2 (tables <table>__v2)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the summary")
	return cmd
}

// refuseServed returns an error when version is served by a promotion of
// one of p's SQL result tables: recomputing it would change what readers
// see, without a diff or a promote. (A database that cannot be opened or
// has no promotions is no objection.)
func refuseServed(ctx context.Context, p *spec.Pipeline, version string) error {
	for _, st := range p.StageList() {
		for _, sk := range st.Sinks {
			if sk.Type != "sqlite" && sk.Type != "postgres" {
				continue
			}
			table := sk.Table
			if table == "" {
				table = spec.DefaultTable(st.Name)
			}
			target := sk.DSN
			if sk.Type == "sqlite" {
				if _, err := os.Stat(sk.Path); err != nil {
					continue
				}
				target = "sqlite://" + sk.Path
			}
			db, err := results.Open(ctx, target)
			if err != nil {
				continue
			}
			pr, err := db.Serving(ctx, results.ServingView(table))
			db.Close()
			if err != nil || pr == nil {
				continue
			}
			for _, seg := range pr.Segments {
				if seg.Version == version {
					return fmt.Errorf("--result-version %s: %s serves it (promotion %d: %s); recomputing it would change what readers see without a diff or a promote: backfill into a new version and promote that", version, results.ServingView(table), pr.ID, seg)
				}
			}
		}
	}
	return nil
}
