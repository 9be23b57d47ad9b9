// Package cli implements the tidemark command line (cobra): its commands
// (run, check, validate, explain, bench, backfill, diff, promote, produce,
// consume, dev-kafka, perturb, version) each turn their flags and
// files into a pipeline spec (package spec, or package sql/planner for a SQL
// script) and hand it to the layers below.
//
// One file per command, named after it (run.go, bench.go, …); a command
// too long for one file continues in files with its name as prefix
// (bench_measure.go, validate_report.go, …), and its tests follow it
// (bench_test.go, bench_measure_test.go). The set-up the commands share
// (compiling a pipeline file, usage errors, the state flags, default
// brokers, line reading) is in setup.go; Main and the root command here.
//
// It is the outermost layer of the data flow, the face: cmd/tidemark →
// cli → engine (the runner) → task → plan → the core packages; nothing
// below imports it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a process exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs the command line with args and returns the exit status:
// 0 success (also a run with checkpoints stopped by SIGINT or SIGTERM: it
// took a final checkpoint), 1 runtime failure (also a run without
// checkpoints stopped by a signal: its results are partial),
// 2 usage or configuration error, 3 a group instance fenced by another
// process with its --instance-id (group.FencedError).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "tidemark: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if strings.HasPrefix(err.Error(), "unknown command") {
		return 2
	}
	return 1
}

// usage wraps a cobra argument check so that its failure exits 2.
func usage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
		}
		return nil
	}
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tidemark",
		Short:         "Event-time stream processing: windows, watermarks, late data, exact results",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, err: fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
	})
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(stdout, stderr), newValidateCmd(stdout), newVersionCmd(stdout))
	root.AddCommand(newPerturbCmd(stderr))
	root.AddCommand(newBenchCmd(stdout, stderr))
	root.AddCommand(newProduceCmd(stderr), newConsumeCmd(stdout, stderr), newDevKafkaCmd(stdout, stderr))
	root.AddCommand(newCheckCmd(stdout))
	root.AddCommand(newDiffCmd(stdout), newPromoteCmd(stdout))
	root.AddCommand(newBackfillCmd(stdout, stderr))
	root.AddCommand(newExplainCmd(stdout))
	return root
}
