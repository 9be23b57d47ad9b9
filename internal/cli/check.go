package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/check"
	"github.com/tidemark/tidemark/engine"
)

// newCheckCmd is `tidemark check`: the pre-deploy checklist as static rules
// over a pipeline and its contract (docs/check.md).
func newCheckCmd(stdout io.Writer) *cobra.Command {
	var reportFormat, contractPath, previous string
	var connect bool
	cmd := &cobra.Command{
		Use:   "check PIPELINE.yaml|JOB.sql",
		Short: "Check a pipeline against the pre-deploy checklist (time, duplicates, state, sinks)",
		Long: `Check a pipeline against the pre-deploy checklist (time, duplicates, state, sinks).

The pipeline is loaded as run loads it (its contract applied, defaults,
validation, compilation), but no data is read and no connection opened.
Each rule answers one checklist question of the source, time, state and
sink contracts: processing-time windows, duplicates without dedup, a dedup
TTL shorter than redeliveries, lateness below the normal delay, dropped
late money, append-only sinks that write rows again, provisional rows in
upsert tables, a Kafka source without checkpoints, a missing idle timeout,
retention. docs/check.md defines every rule.

With --connect it also asks what only the outside knows: what the
database of a postgres_cdc source lacks for logical replication (TM114);
for a pipeline whose contract lists schema versions of Avro or Protobuf records: the
compatibility level of each subject in source.schema_registry (TM110),
and, reading the source topics from each deprecated version's
deprecated_after date to their end, whether that version is still
produced (TM111).

Each finding has a rule id (TM101 ...), a severity (error, warning, info),
the pipeline key it concerns, why it matters and how to fix it. --format
json prints a JSON array of objects with the keys id, rule, severity, key,
why and fix.

With --previous OLD (the pipeline file now deployed, YAML or SQL) it also
names, stage by stage, the state a deploy of PIPELINE would discard: every
change a restore from OLD's checkpoints refuses (docs/checkpoints.md,
"Changing a pipeline"), with the key, both values and why; and the two
plan fingerprints (tidemark explain). An edit that discards state is an
error: deploy it with a new checkpoint directory, or keep the state.

Exit status: 0 when no finding is an error, 1 when any is, 2 for a usage
error or a pipeline or contract that does not load.`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if previous != "" {
				discards, err := checkPrevious(stdout, previous, args[0], contractPath)
				if err != nil {
					return err
				}
				if err := runCheck(cmd.Context(), stdout, args[0], contractPath, reportFormat, connect); err != nil {
					return err
				}
				if discards > 0 {
					return &exitError{code: 1, err: fmt.Errorf("check: deploying %s over %s discards the state of %s", args[0], previous, plural(int64(discards), "change"))}
				}
				return nil
			}
			return runCheck(cmd.Context(), stdout, args[0], contractPath, reportFormat, connect)
		},
	}
	f := cmd.Flags()
	f.StringVar(&reportFormat, "format", "text", "report format: text or json (an array of findings)")
	f.StringVar(&contractPath, "contract", "", "data contract (YAML) to check against; overrides the pipeline's contract key")
	f.StringVar(&previous, "previous", "", "the pipeline deployed now (YAML or SQL): name the state deploying this one would discard")
	f.BoolVar(&connect, "connect", false, "also ask the schema registry (subjects' compatibility levels), read the source topics since each deprecated schema version's date, and ask a postgres_cdc source's database what it lacks")
	return cmd
}

// runCheck loads the pipeline at path, checks it and prints the findings;
// the error carries the exit status.
func runCheck(ctx context.Context, stdout io.Writer, path, contractPath, reportFormat string, connect bool) error {
	if reportFormat != "text" && reportFormat != "json" {
		return &exitError{code: 2, err: fmt.Errorf("check: --format %q: want text or json", reportFormat)}
	}
	_, pl, err := compilePipeline(path, contractPath, nil)
	if err != nil {
		return err
	}
	now := time.Now()
	var facts *check.Facts
	if connect {
		if facts, err = gatherFacts(ctx, pl, now); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("check --connect: %w", err)}
		}
	}
	findings := check.RunWith(pl.Spec, pl.Contract, now, facts)
	if reportFormat == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(findings); err != nil {
			return err
		}
	} else {
		writeFindings(stdout, path, findings)
	}
	if errs, _, _ := check.Count(findings); errs > 0 {
		return &exitError{code: 1, err: fmt.Errorf("check: %s has %s", path, plural(int64(errs), "error"))}
	}
	return nil
}

// checkPrevious prints the state an edit from the previous pipeline to
// this one discards, stage by stage, and returns how many changes do.
func checkPrevious(w io.Writer, previous, path, contractPath string) (int, error) {
	_, old, err := compilePipeline(previous, contractPath, nil)
	if err != nil {
		return 0, err
	}
	_, cur, err := compilePipeline(path, contractPath, nil)
	if err != nil {
		return 0, err
	}
	changes, err := engine.StateChanges(old.Spec, cur.Spec)
	if err != nil {
		return 0, &exitError{code: 2, err: err}
	}
	fa, err := engine.PlanFingerprint(old.Spec)
	if err != nil {
		return 0, err
	}
	fb, err := engine.PlanFingerprint(cur.Spec)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "state: %s (fingerprint %s) → %s (fingerprint %s)\n", previous, fa, path, fb)
	if len(changes) == 0 {
		fmt.Fprintf(w, "  every stage keeps its state: %s restores from %s's checkpoints\n\n", path, previous)
		return 0, nil
	}
	for _, c := range changes {
		fmt.Fprintf(w, "  discards %s\n", c)
	}
	fmt.Fprintln(w)
	return len(changes), nil
}

// writeFindings prints one block per finding, then a summary line.
func writeFindings(w io.Writer, path string, findings []check.Finding) {
	for _, f := range findings {
		fmt.Fprintf(w, "%s %s %s\n  key  %s\n  why  %s\n  fix  %s\n\n", f.Severity, f.ID, f.Rule, f.Key, f.Why, f.Fix)
	}
	errs, warns, infos := check.Count(findings)
	fmt.Fprintf(w, "%s: %s, %s, %d info\n", path, plural(int64(errs), "error"), plural(int64(warns), "warning"), infos)
}
