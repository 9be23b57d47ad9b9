package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/pprof"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source/file"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var quiet bool
	var cpuProfile, contractPath string
	cmd := &cobra.Command{
		Use:   "run PIPELINE.yaml",
		Short: "Run a pipeline until its bounded input is exhausted (or until interrupted)",
		Long: `Run a pipeline until its bounded input is exhausted (or until interrupted).

Relative paths in the pipeline (source, sinks) are relative to the working
directory; ${VAR} and ${VAR:-default} are expanded from the environment.
At the end a summary goes to stdout; a progress line goes to stderr when it
is a terminal.

Exit status: 0 when the run completed, 1 when it failed (source or sink
error, an aggregate overflow, interrupted), 2 for a usage or pipeline
configuration error (nothing was read or written).`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := tidemark.Load(args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if contractPath != "" {
				p.Contract = contractPath
			}
			pl, err := tidemark.Compile(p)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			opts := engine.Options{Stdout: stdout}
			if f, ok := stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) && !quiet {
				opts.Progress = func(pr engine.Progress) {
					wm := "none"
					if pr.Watermark > -1<<62 {
						wm = row.FormatTime(pr.Watermark, nil)
					}
					fmt.Fprintf(stderr, "\r%12d events  %10.0f events/s  watermark %s   ", pr.Events, float64(pr.Events)/pr.Elapsed.Seconds(), wm)
				}
			}
			sum, err := engine.Run(cmd.Context(), pl, opts)
			if opts.Progress != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			if err != nil && cmd.Context().Err() != nil {
				return fmt.Errorf("interrupted; the rows and records emitted so far were flushed to the sinks")
			}
			if err != nil {
				var ce *engine.ConfigError
				if errors.As(err, &ce) {
					return &exitError{code: 2, err: err}
				}
				var nf *file.NoFilesError
				if errors.As(err, &nf) || errors.Is(err, fs.ErrNotExist) {
					if p.Source.About != "" {
						err = fmt.Errorf("%w\n\nabout this source: %s", err, p.Source.About)
					}
				}
				return err
			}
			if !quiet {
				loc, _ := time.LoadLocation(pl.Stages[0].Desc.Timezone)
				sum.WriteText(stdout, loc)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print neither progress nor the summary")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	cmd.Flags().StringVar(&contractPath, "contract", "", "data contract (YAML) to follow; overrides the pipeline's contract key")
	return cmd
}
