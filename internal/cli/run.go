package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/engine/group"
	"github.com/tidemark/tidemark/metrics"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/slo"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/status"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var quiet bool
	var batchSize int
	var parallelism int
	var instanceID string
	var cpuProfile, contractPath, metricsAddr string
	var hotKeys int
	var failOnSLO bool
	var stateBackend, memory string
	cmd := &cobra.Command{
		Use:   "run PIPELINE.yaml|JOB.sql",
		Short: "Run a pipeline until its bounded input is exhausted (or until interrupted)",
		Long: `Run a pipeline until its bounded input is exhausted (or until interrupted).

Relative paths in the pipeline (source, sinks) are relative to the working
directory; ${VAR} and ${VAR:-default} are expanded from the environment.
At the end a summary goes to stdout; a progress line goes to stderr when it
is a terminal.

Exit status: 0 when the run completed, or when SIGINT or SIGTERM stopped a
run that takes checkpoints (it takes a final one: run again to resume); 1
when it failed (source or sink error, an aggregate overflow, a schema
registry unreachable past its max_wait, another run writing its tables), or
when a signal stopped a run without checkpoints (its results are partial:
a new run starts over); 2 for a usage or pipeline configuration error
(nothing was read or written).`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, pl, err := compilePipeline(args[0], contractPath, stateFlags(stateBackend, memory))
			if err != nil {
				return err
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
			if parallelism < 0 {
				return &engine.ConfigError{Err: fmt.Errorf("--parallelism %d is negative (0: the pipeline's parallelism, else one task per CPU)", parallelism)}
			}
			if kg := p.EffectiveKeyGroups(); parallelism > kg {
				return &engine.ConfigError{Err: fmt.Errorf("--parallelism %d: the pipeline has %d key groups, and a task owns at least one (key_groups)", parallelism, kg)}
			}
			if instanceID != "" && (p.Source.Type != "kafka" || p.Source.Assignment != "group") {
				return &engine.ConfigError{Err: fmt.Errorf("--instance-id %s: only for a pipeline whose source has assignment: group", instanceID)}
			}
			opts := engine.Options{Group: group.Run, Stdout: stdout, SetMemoryLimit: true, BatchSize: batchSize, Parallelism: parallelism, InstanceID: instanceID, Lineage: true, Logf: func(format string, args ...any) {
				fmt.Fprintf(stderr, "tidemark: "+format+"\n", args...)
			}}
			ev := slo.New(p.SLO)
			opts.Live = ev.Update
			if metricsAddr != "" {
				x := metrics.New(p.Name)
				x.SetSLO(ev.States)
				pg := status.New(p, ev)
				stop, addr, err := serveMonitoring(metricsAddr, x, pg)
				if err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--metrics-addr: %w", err)}
				}
				defer stop()
				fmt.Fprintf(stderr, "tidemark: %s\n", monitoringLine(addr))
				opts.Live = func(l *engine.Live) {
					ev.Update(l)
					x.Update(l)
					pg.Update(l)
				}
				opts.HotKeys = hotKeys
			}
			if p.Checkpoint != nil {
				// SIGUSR1 takes a checkpoint on demand (a savepoint).
				now := make(chan struct{}, 1)
				sig := make(chan os.Signal, 1)
				signal.Notify(sig, syscall.SIGUSR1)
				defer signal.Stop(sig)
				go func() {
					for range sig {
						select {
						case now <- struct{}{}:
						default:
						}
					}
				}()
				opts.CheckpointNow = now
				hook, err := faultHook(os.Getenv("TIDEMARK_FAULT"))
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				opts.FaultHook = hook
			}
			var bar *progressbar.ProgressBar
			if f, ok := stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) && !quiet {
				opts.ProgressEvery = 50_000
				opts.Progress = func(pr engine.Progress) {
					wm := "none"
					if pr.Watermark > -1<<62 {
						wm = row.FormatTime(pr.Watermark, nil)
					}
					if bar == nil {
						// A bar with an ETA over the input's size when the
						// source knows it (files, the generator), a counter
						// otherwise (a log).
						max := int64(-1)
						if pr.Total > 0 {
							max = pr.Total
						}
						bar = progressbar.NewOptions64(max, progressbar.OptionSetWriter(stderr),
							progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish(),
							progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
							progressbar.OptionThrottle(100*time.Millisecond))
					}
					bar.Describe(fmt.Sprintf("%d events, %.0f events/s, watermark %s", pr.Events, float64(pr.Events)/pr.Elapsed.Seconds(), wm))
					if pr.Total > 0 {
						bar.Set64(pr.Done)
					} else {
						bar.Add(0)
					}
				}
			}
			sum, err := engine.Run(cmd.Context(), pl, opts)
			if bar != nil {
				bar.Clear()
			}
			var si *engine.StartInterruptedError
			if errors.As(err, &si) {
				// A signal while the run was starting: nothing was
				// processed; the documented status of a stopped run.
				fmt.Fprintf(stderr, "tidemark: %v\n", si)
				return nil
			}
			if err != nil && cmd.Context().Err() != nil {
				if errors.Is(err, context.Canceled) {
					// Without checkpoints a stop is not a pause: nothing
					// records where the run was, so its results are partial
					// and the next run starts over (exit status 1).
					return fmt.Errorf("interrupted; the rows and records emitted so far were flushed to the sinks, but the pipeline takes no checkpoints: its results are partial, and a new run recomputes from the start of the input (exit status 1; with checkpoint: a stop takes a final checkpoint and exits 0)")
				}
				// Stopped by a signal while failing: the failure is named
				// (a group instance's last commit failed, say), not hidden.
				return fmt.Errorf("interrupted; the rows and records emitted so far were flushed to the sinks (the run was ending with: %w)", err)
			}
			if err == nil && sum.Stopped {
				switch {
				case sum.Group != nil:
					// A group instance's last transaction committed its
					// tasks' offsets and checkpoints (no one directory).
					fmt.Fprintf(stderr, "tidemark: stopped by a signal; instance %s committed its tasks' offsets and checkpoints in group %s: run again to resume\n", sum.Group.Instance, sum.Group.Group)
				default:
					fmt.Fprintf(stderr, "tidemark: stopped by a signal; checkpoint %d in %s holds the position: run again to resume\n", sum.Checkpoints.Last, sum.Checkpoints.Dir)
				}
			}
			if err != nil {
				var ce *engine.ConfigError
				if errors.As(err, &ce) {
					return &exitError{code: 2, err: err}
				}
				var fe *group.FencedError
				if errors.As(err, &fe) {
					return &exitError{code: 3, err: err}
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
				for _, s := range ev.States() {
					fmt.Fprintf(stdout, "  slo %s\n", s)
				}
			}
			if missed := ev.Missed(); failOnSLO && len(missed) > 0 {
				var names []string
				for _, s := range missed {
					names = append(names, s.String())
				}
				return fmt.Errorf("--fail-on-slo: %d objective(s) missed: %s", len(missed), strings.Join(names, "; "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print neither progress nor the summary")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	cmd.Flags().StringVar(&instanceID, "instance-id", "", "with source.assignment group: this instance's name in the consumer group (static membership: a restart with the same id takes its partitions back without a rebalance) and in its transactional id; default a random name")
	cmd.Flags().IntVar(&parallelism, "parallelism", 0, "tasks to run the pipeline as (0: the pipeline's parallelism key, else one per CPU); each owns a range of the key groups")
	cmd.Flags().StringVar(&stateBackend, "state-backend", "", "where the keyed state lives: memory or disk (overrides the pipeline's state.backend; docs/state.md)")
	cmd.Flags().StringVar(&memory, "memory", "", "the disk backend's memory budget, with a unit (e.g. 2GiB; overrides state.memory)")
	cmd.Flags().IntVar(&batchSize, "batch-size", 1024, "records read per source call; checkpoints are taken between batches")
	cmd.Flags().StringVar(&contractPath, "contract", "", "data contract (YAML) to follow; overrides the pipeline's contract key")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics and the status page at http://ADDR/ (127.0.0.1:9464: this machine only; :9464 or 0.0.0.0:9464: every interface, which the read-only pages allow; port 0 picks one); default off")
	cmd.Flags().BoolVar(&failOnSLO, "fail-on-slo", false, "exit with status 1 when the run ends with a service-level objective (pipeline key slo) missed")
	cmd.Flags().IntVar(&hotKeys, "hot-keys", 5, "with --metrics-addr: how many keys holding the most state each stage reports")
	return cmd
}

// faultHook parses TIDEMARK_FAULT, a crash-test aid: "POINT:ID" kills the
// process with SIGKILL when the checkpoint protocol reaches POINT
// ("prepared", "written" or "committed:<sink id>") for checkpoint ID (or
// any checkpoint with ID "*"). "POINT:ID:note" kills nothing: it prints
// "tidemark fault: POINT ID" to stderr and waits noteWait there, for a
// harness that acts at that instant (stops the broker during a commit).
// Empty: no hook.
func faultHook(v string) (func(string, int64), error) {
	if v == "" {
		return nil, nil
	}
	v, note := strings.CutSuffix(v, ":note")
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return nil, fmt.Errorf("TIDEMARK_FAULT=%q: want POINT:ID (e.g. written:3)", v)
	}
	point, idText := v[:i], v[i+1:]
	id := int64(-1)
	if idText != "*" {
		n, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("TIDEMARK_FAULT=%q: checkpoint id %q is not a number or *", v, idText)
		}
		id = n
	}
	return func(p string, ck int64) {
		if p == point && (id < 0 || ck == id) {
			if note {
				fmt.Fprintf(os.Stderr, "tidemark fault: %s %d\n", p, ck)
				time.Sleep(noteWait)
				return
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}, nil
}

// noteWait is how long a TIDEMARK_FAULT note waits at its point (ms
// enough for a harness polling the process's stderr to act).
const noteWait = 300 * time.Millisecond
