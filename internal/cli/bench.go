package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/engine/group"
	"github.com/tidemark/tidemark/examples/article"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/internal/articlebase"
	"github.com/tidemark/tidemark/internal/articlegen"
	"github.com/tidemark/tidemark/internal/cputime"
	"github.com/tidemark/tidemark/internal/nexbase"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
)

// benchFlags are the flags of tidemark bench.
type benchFlags struct {
	events     int64
	repeat     int
	baseline   bool
	format     string
	cpuProfile string
	memProfile string
	// heapProfile: --heapprofile, the in-use heap profile at the
	// largest live heap of the tidemark runs.
	heapProfile string
	// phases: profile each tidemark run and report its CPU by phase.
	phases bool
	// parallelism lists the numbers of tasks to measure (0: the
	// pipeline's default).
	parallelism []int
	// seed is the article generator's seed (bench article).
	seed uint64
	// writeEvents, for bench article, writes the generated events to
	// this file and exits.
	writeEvents string
	// sink, for bench article: "" (blackholes) or "postgres"
	// (postgres.yaml's results table and checkpoints, at dsn).
	sink string
	dsn  string
	// stateBackend and memory: --state-backend and --memory, as run's.
	stateBackend, memory string
}

// articleQuery is the name of the bundled article benchmark.
const articleQuery = "article"

// defaultArticleEvents is the number of events of bench article without
// --events (2M lines of ~240 bytes: a 480 MB temporary file).
const defaultArticleEvents = 2_000_000

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench QUERY|article|PIPELINE.yaml|JOB.sql",
		Short: "Measure a pipeline's throughput, CPU time per event, memory and allocations (Nexmark queries built in)",
		Long: `Measure a pipeline's throughput, CPU time per event, memory and allocations.

QUERY is a bundled Nexmark query (` + strings.Join(nexmarkq.Names(), ", ") + `; the files of
examples/nexmark, built into the binary); article is the first source
article's pipeline (examples/article/pipeline.yaml: contract, dedup by
event_id, a filter, 1-minute windows per store and currency with
count_distinct, sum and count, emit update) over --events order events
(default 2,000,000) that internal/articlegen writes, from --seed, into a
temporary file before the runs (JSON lines of ~240 bytes, with
redeliveries, conflicting copies and late events; the file is read, and
decoded, inside each measured run); an argument ending in .yaml or .yml
is a pipeline file, one ending in .sql a SQL script (docs/sql.md). The pipeline runs --repeat times in this process, every
sink (results, late, quarantine, conflicts) replaced by a discarding
"blackhole" sink (one is added to a last stage without sinks); checkpoints
are turned off. The source's events are generated or read inside the
measured run (Nexmark's generator is in the loop).

Per run and as the median over the runs:

  events/s          events read / wall time
  events/s/core     events read / process CPU time (user + system, getrusage:
                    every thread, the garbage collector's included)
  peak RSS          the process's peak resident set during the run (reset
                    before each run where Linux allows; otherwise the peak
                    since the process started)
  file RSS          of the resident set, the pages mapped from files (the
                    executable and libraries: Linux's RssFile + RssShmem at
                    the end of the run); peak RSS − file RSS is the run's own
                    memory. The kernel may map a large executable in 2 MiB
                    pages, so this part differs between builds of the same
                    code by tens of MiB: compare builds by peak − file
  live heap         the largest live heap seen at a garbage collection during
                    the run (sampled every 100,000 events)
  state (end)       the engine's estimate of operator state at the end of the
                    run, summed over stages; a bounded run closes every
                    window, so what remains is mostly the key tables
  exchange          the most bytes the packets between tasks held at once
                    during the run (their items and copies; at most about
                    the pipeline's exchange_memory); "-" at one task,
                    which sends no packets
  allocs/event      heap allocations (runtime.MemStats.Mallocs) per event
  rows              rows written to the result sinks

--vs-baseline also runs, as many times, a hand-written Go loop that computes
the same query on the same generated events with plain maps
(internal/nexbase for the Nexmark queries, by pipeline and last stage name;
internal/articlebase for article, reading the same file) and prints the
ratio of the medians, tidemark / loop, and the median of the rounds'
ratios: each round runs tidemark, then the loop, so that a shared
machine's slow and fast spells fall on both (with --cpuprofile the loop's
runs come after all of tidemark's).

--write-events FILE (article only) writes the events to FILE and exits, so
that examples/article/pipeline.yaml can run on them (ARTICLE_EVENTS=FILE).

With --phases (the default) each tidemark run is profiled (runtime/pprof,
100 samples per CPU second) and the report splits its CPU by phase, from
each sample's stack: read+decode (sources, decoders), front (the router's
checks, contract, timestamp rules, filters, derived fields, key
extraction, key-group hash, watermark), operators (dedup, order_by,
windows, joins in the tasks), exchange (packets, merging, hand-offs
between goroutines), sinks (logs, encoders, sinks, the writer),
checkpoints, gc and other; and by goroutine (router, task, writer:
the engine's pprof labels), with the share on the serial goroutines.

--cpuprofile writes the tidemark runs' profiles, merged (not the
baseline's); --memprofile writes the allocation profile after them (go
tool pprof; its in-use figures are of the heap after the runs, when their
state is gone); --heapprofile writes the in-use heap profile (pprof
"heap") taken at the largest live heap of the tidemark runs: a sample of
the live heap 10 % above the kept profile's takes a new one (go tool pprof
-sample_index=inuse_space). Taking it costs CPU during the run.`,
		Example: `  tidemark bench q5
  tidemark bench article --parallelism 1,2 --vs-baseline --repeat 5
  tidemark bench article --events 200000 --write-events out/article/orders.jsonl
  tidemark bench article --sink postgres --repeat 5
  tidemark bench q11 --events 20000000 --repeat 5 --vs-baseline
  tidemark bench q7 --format json --cpuprofile q7.prof
  tidemark bench my-pipeline.yaml --repeat 3`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), args[0], f, stdout, stderr)
		},
	}
	cmd.AddCommand(newBenchStateCmd(stdout, stderr))
	fl := cmd.Flags()
	fl.Int64Var(&f.events, "events", 0, "events per run (overrides source.events of a nexmark source; default: the pipeline's)")
	fl.IntVar(&f.repeat, "repeat", 3, "runs to measure; the median is reported")
	fl.BoolVar(&f.baseline, "vs-baseline", false, "also run the hand-written Go loop for the query and print the ratio")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the tidemark runs to this file")
	fl.BoolVar(&f.phases, "phases", true, "profile each tidemark run and report where its CPU went by phase (read+decode, front, operators, exchange, sinks) and by goroutine")
	fl.StringVar(&f.memProfile, "memprofile", "", "write an allocation profile after the tidemark runs to this file")
	fl.StringVar(&f.heapProfile, "heapprofile", "", "write the in-use heap profile taken at the largest live heap of the tidemark runs to this file")
	fl.Uint64Var(&f.seed, "seed", 1, "article: the event generator's seed")
	fl.StringVar(&f.writeEvents, "write-events", "", "article: write the generated events to this file and exit")
	fl.StringVar(&f.sink, "sink", "", "article: postgres writes the results to PostgreSQL with 1 s checkpoints (examples/article/postgres.yaml)")
	fl.StringVar(&f.dsn, "dsn", "", "article --sink postgres: the database URL (default $TIDEMARK_POSTGRES, else postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	fl.StringVar(&f.stateBackend, "state-backend", "", "where the keyed state lives: memory or disk (overrides the pipeline's state.backend; docs/state.md)")
	fl.StringVar(&f.memory, "memory", "", "the disk backend's memory budget, with a unit (e.g. 1GiB; overrides state.memory)")
	fl.IntSliceVar(&f.parallelism, "parallelism", []int{0}, "numbers of tasks to measure, e.g. 1,2 (runs alternate between them; 0: the pipeline's parallelism, else one task per CPU)")
	return cmd
}

// baselineFunc runs a hand-written loop once, its rows discarded.
type baselineFunc struct {
	name string
	run  func(ctx context.Context, cfg nexbase.Config) (nexbase.Stats, error)
}

// articleBaseline is bench article's loop over the events file.
func articleBaseline(events string) baselineFunc {
	return baselineFunc{"articlebase.Run", func(ctx context.Context, _ nexbase.Config) (nexbase.Stats, error) {
		st, err := articlebase.Run(ctx, events, nil)
		return nexbase.Stats{Events: st.Events, Rows: st.Rows}, err
	}}
}

// baselines maps "pipeline/last stage" of the bundled queries to their
// hand-written loops.
var baselines = map[string]baselineFunc{
	"q0/q0": {"nexbase.Q0", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q0(ctx, c, nil) }},
	"q1/q1": {"nexbase.Q1", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q1(ctx, c, nil) }},
	"q2/q2": {"nexbase.Q2", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q2(ctx, c, nil) }},
	"q5/auction_bids": {"nexbase.Q5Counts", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) {
		return nexbase.Q5Counts(ctx, c, nil)
	}},
	"q5/hot_auctions": {"nexbase.Q5", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q5(ctx, c, nil) }},
	"q7/q7":           {"nexbase.Q7", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q7(ctx, c, nil) }},
	"q11/q11":         {"nexbase.Q11", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q11(ctx, c, nil) }},
	"q3/q3":           {"nexbase.Q3", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q3(ctx, c, nil) }},
	"q4/q4":           {"nexbase.Q4", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q4(ctx, c, nil) }},
	"q8/q8":           {"nexbase.Q8", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q8(ctx, c, nil) }},
	"q13/q13":         {"nexbase.Q13", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q13(ctx, c, nil) }},
	"q9/q9":           {"nexbase.Q9", func(ctx context.Context, c nexbase.Config) (nexbase.Stats, error) { return nexbase.Q9(ctx, c, nil) }},
}

// benchJob is what one bench command measures: the pipeline, the file it
// came from, and what its set-up made (bench article's generated events,
// a database sink's connection), with the temporary directories close
// removes.
type benchJob struct {
	p    *spec.Pipeline
	file string // the pipeline's file (the bundled one for a query name)
	// gen and eventsFile: bench article's generator counts and events.
	gen        *articlegen.Stats
	eventsFile string
	// dbApp, dbDSN and ckDir: bench article --sink postgres (the
	// connection's application name, the DSN, the checkpoint directory).
	dbApp, dbDSN, ckDir string
	dirs                []string
}

// tempDir makes a temporary directory that close removes.
func (j *benchJob) tempDir(pattern string) (string, error) {
	d, err := os.MkdirTemp("", pattern)
	if err == nil {
		j.dirs = append(j.dirs, d)
	}
	return d, err
}

// close removes the job's temporary directories.
func (j *benchJob) close() {
	for _, d := range j.dirs {
		os.RemoveAll(d)
	}
}

func runBench(ctx context.Context, arg string, f benchFlags, stdout, stderr io.Writer) error {
	if err := checkBenchFlags(arg, &f); err != nil {
		return err
	}
	j := &benchJob{}
	defer j.close()
	if wrote, err := j.load(arg, f, stdout); err != nil || wrote {
		return err
	}
	stages := stageNames(j.p)
	base, baseCfg, err := j.baseline(f, stages)
	if err != nil {
		return err
	}
	pl, reg, rows, err := j.compile(f)
	if err != nil {
		return err
	}
	rep := j.report(arg, f, stages)
	if err := j.rounds(ctx, f, pl, reg, rows, base, baseCfg, rep, stderr); err != nil {
		return err
	}
	rep.Notes = "state_bytes_end is the engine's estimate at the end of a bounded run, after every window closed (mostly key tables); peak_live_heap_bytes is the largest live heap at a garbage collection during the run, the whole process included (source buffers, the generator's delay wheel)."
	if !rep.PeakRSSReset {
		rep.Notes += " The peak RSS could not be reset between runs: each value is the process's peak since it started."
	}
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeBenchText(stdout, rep)
	return nil
}

// checkBenchFlags refuses flags that do not go together (a usage error
// naming the flag); f.parallelism defaults to one run at one task per CPU.
func checkBenchFlags(arg string, f *benchFlags) error {
	if f.repeat < 1 {
		return usageErr("--repeat %d: at least 1", f.repeat)
	}
	if f.format != "text" && f.format != "json" {
		return usageErr("--format %q: want text or json", f.format)
	}
	if f.events < 0 {
		return usageErr("--events %d: must be positive", f.events)
	}
	if len(f.parallelism) == 0 {
		f.parallelism = []int{0}
	}
	for _, n := range f.parallelism {
		if n < 0 {
			return usageErr("--parallelism %d: negative", n)
		}
	}
	if f.writeEvents != "" && arg != articleQuery {
		return usageErr("--write-events: only for bench %s", articleQuery)
	}
	switch {
	case f.sink != "" && arg != articleQuery:
		return usageErr("--sink: only for bench %s", articleQuery)
	case f.sink != "" && f.sink != "postgres":
		return usageErr("--sink %q: want postgres", f.sink)
	case f.sink != "" && f.baseline:
		return usageErr("--vs-baseline: the hand-written loop writes no database; measure it without --sink")
	case f.dsn != "" && f.sink == "":
		return usageErr("--dsn: only with --sink postgres")
	}
	return nil
}

// load reads the pipeline bench measures: bench article's generated
// events (its file in a temporary directory; --write-events only writes
// them and returns wrote) and pipeline, a pipeline file, or a Nexmark
// query (with its side inputs written beside the run); --events sets a
// Nexmark source's count. Errors are usage errors or exit code 2.
func (j *benchJob) load(arg string, f benchFlags, stdout io.Writer) (wrote bool, err error) {
	var p *spec.Pipeline
	j.file = arg
	switch lower := strings.ToLower(arg); {
	case arg == articleQuery:
		events := f.events
		if events == 0 {
			events = defaultArticleEvents
		}
		cfg := articlegen.Config{Events: events, Seed: f.seed}
		if f.writeEvents != "" {
			st, err := articlegen.WriteFile(f.writeEvents, cfg)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(stdout, "wrote %s order events to %s (%s first deliveries, %s redeliveries, %s conflicting, %s late, %s too late)\n",
				thousands(st.Lines), f.writeEvents, thousands(st.First), thousands(st.Redeliveries), thousands(st.Conflicting), thousands(st.Late), thousands(st.TooLate))
			return true, nil
		}
		dir, err := j.tempDir("tidemark-bench-article-")
		if err != nil {
			return false, err
		}
		j.eventsFile = filepath.Join(dir, "orders.jsonl")
		st, err := articlegen.WriteFile(j.eventsFile, cfg)
		if err != nil {
			return false, err
		}
		j.gen = &st
		j.file = article.PipelinePath
		if f.sink == "postgres" {
			j.file = article.PostgresPath
			if p, err = article.LoadPostgres(dir, j.eventsFile); err == nil {
				j.dbApp = fmt.Sprintf("tidemark-bench-%d", os.Getpid())
				dsn := f.dsn
				if dsn == "" {
					dsn = os.Getenv("TIDEMARK_POSTGRES")
				}
				if dsn == "" {
					dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
				}
				if j.dbDSN, err = withApplicationName(dsn, j.dbApp); err != nil {
					return false, &exitError{code: 2, err: err}
				}
				p.Sinks[0].DSN = j.dbDSN
				j.ckDir = filepath.Join(dir, "checkpoints")
				p.Checkpoint.Dir = j.ckDir
			}
			break
		}
		p, err = article.Load(dir, j.eventsFile)
	case strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".sql"):
		p, err = tidemark.Load(arg)
	default:
		var path string
		if _, path, err = nexmarkq.File(arg); err == nil {
			j.file = path
			p, err = nexmarkq.Load(arg)
		}
		if err == nil && len(p.Inputs) > 0 {
			// q13's side input: the bundled file, written beside the run.
			dir, derr := j.tempDir("tidemark-bench-inputs-")
			if derr != nil {
				return false, derr
			}
			err = nexmarkq.WriteInputs(p, dir)
		}
	}
	if err != nil {
		return false, &exitError{code: 2, err: err}
	}
	if f.events > 0 && j.gen == nil {
		if p.Source.Type != "nexmark" {
			return false, usageErr("--events: only for a nexmark source (this pipeline reads %s)", p.Source.Type)
		}
		p.Source.Events = f.events
	}
	switch {
	case p.Source.Type == "nexmark" && p.Source.Events == 0:
		return false, usageErr("%s: source.events is 0 (unbounded); give --events", j.file)
	case p.Source.Type == "kafka" && !p.Source.StopAtEnd:
		return false, usageErr("%s: a benchmark needs a bounded source; set source.stop_at_end for kafka", j.file)
	}
	j.p = p
	return false, nil
}

// baseline is the hand-written loop --vs-baseline runs beside tidemark
// (nil without the flag) and its configuration from the pipeline: the
// article's loop over its events file, or a Nexmark query's loop found
// by the pipeline's name and last stage (a usage error when none exists).
func (j *benchJob) baseline(f benchFlags, stages []string) (*baselineFunc, nexbase.Config, error) {
	switch {
	case f.baseline && j.gen != nil:
		b := articleBaseline(j.eventsFile)
		return &b, nexbase.Config{}, nil
	case f.baseline:
		key := j.p.Name + "/" + stages[len(stages)-1]
		b, ok := baselines[key]
		if !ok {
			known := slices.Sorted(func(yield func(string) bool) {
				for k := range baselines {
					if !yield(k) {
						return
					}
				}
			})
			return nil, nexbase.Config{}, usageErr("--vs-baseline: no hand-written loop for pipeline %s, last stage %s (loops exist for %s)", j.p.Name, stages[len(stages)-1], strings.Join(known, ", "))
		}
		cfg, err := nexbase.FromSpec(j.p)
		if err != nil {
			return nil, nexbase.Config{}, usageErr("--vs-baseline: %v", err)
		}
		return &b, cfg, nil
	}
	return nil, nexbase.Config{}, nil
}

// compile applies --state-backend and --memory, replaces the sinks by
// blackholes counting the rows written (rows; a database sink stays) and
// compiles the pipeline, with the registry that opens the blackholes.
func (j *benchJob) compile(f benchFlags) (*plan.Plan, *engine.Registry, *int64, error) {
	if prep := stateFlags(f.stateBackend, f.memory); prep != nil {
		if err := prep(j.p); err != nil {
			return nil, nil, nil, &exitError{code: 2, err: err}
		}
	}
	rows := blackholeSinks(j.p, j.dbDSN != "")
	pl, err := tidemark.Compile(j.p)
	if err != nil {
		return nil, nil, nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", j.file, err)}
	}
	reg := engine.DefaultRegistry()
	reg.Results[blackholeType] = func(context.Context, spec.Sink, changelog.Desc, *engine.Env) (sink.Results, error) {
		return &blackhole{rows: rows}, nil
	}
	reg.Records[blackholeType] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return &blackhole{rows: new(int64)}, nil
	}
	return pl, reg, rows, nil
}

// report starts bench's report: the job, its source and the machine.
func (j *benchJob) report(arg string, f benchFlags, stages []string) *benchReport {
	rep := &benchReport{Query: arg, File: j.file, Pipeline: j.p.Name, Stages: stages, Repeat: f.repeat,
		Machine: machine(), Source: benchSource{Type: j.p.Source.Type, Seed: j.p.Source.Seed}}
	if j.p.Source.Type == "nexmark" {
		rep.Source.Events, rep.Source.Rate = j.p.Source.Events, j.p.Source.Rate
		if rep.Source.Rate == 0 {
			rep.Source.Rate = nexmark.DefaultRate
		}
	}
	if j.gen != nil {
		rep.Source.Generator, rep.Source.Events, rep.Source.Rate, rep.Source.Seed = "articlegen", j.gen.Lines, articlegen.DefaultRate, f.seed
		rep.Source.Article = j.gen
		rep.Source.Sink = f.sink
	}
	rep.Tidemark.Name = "tidemark"
	rep.PeakRSSReset = true
	return rep
}

// rounds runs tidemark f.repeat times at each of f.parallelism, and the
// baseline's loop after each round (after all of them when profiling,
// which covers tidemark's runs only), filling rep's series, medians and
// ratios, and writes the profiles asked for.
func (j *benchJob) rounds(ctx context.Context, f benchFlags, pl *plan.Plan, reg *engine.Registry, rows *int64, base *baselineFunc, baseCfg nexbase.Config, rep *benchReport, stderr io.Writer) error {
	var heapProf *peakHeapProfile
	if f.heapProfile != "" {
		heapProf = &peakHeapProfile{}
	}
	// Each tidemark run is profiled on its own (its phases); the
	// profiles are merged into --cpuprofile's file at the end.
	var prof *cpuRecorder
	if f.phases || f.cpuProfile != "" {
		prof = &cpuRecorder{}
		defer prof.stop() // a failed run's
	}
	series := make([]*benchSeries, len(f.parallelism))
	for k, n := range f.parallelism {
		if k == 0 {
			series[k] = &rep.Tidemark
		} else {
			series[k] = &benchSeries{Name: "tidemark"}
		}
		series[k].Parallelism = n
	}
	// The baseline's runs: one after each round of tidemark's (or all
	// after them when profiling, which covers tidemark's runs only).
	bs := benchSeries{}
	if base != nil {
		bs.Name = base.name
	}
	baseRun := func(i int) error {
		var st nexbase.Stats
		r, reset, err := measure(nil, func(*liveHeap) (int64, time.Duration, int64, error) {
			c0 := cputime.Process()
			var err error
			st, err = base.run(ctx, baseCfg)
			return st.Events, cputime.Process() - c0, 0, err
		})
		if err != nil {
			return fmt.Errorf("baseline run %d: %w", i+1, err)
		}
		r.Rows = st.Rows
		rep.PeakRSSReset = rep.PeakRSSReset && reset
		bs.Runs = append(bs.Runs, r)
		return nil
	}
	for i := 0; i < f.repeat; i++ {
		for k, n := range f.parallelism {
			r, reset, par, err := j.once(ctx, f, pl, reg, rows, n, prof, heapProf, stderr)
			if err != nil {
				return fmt.Errorf("run %d: %w", i+1, err)
			}
			rep.PeakRSSReset = rep.PeakRSSReset && reset
			series[k].Parallelism = par
			series[k].Runs = append(series[k].Runs, r)
		}
		if base != nil && f.cpuProfile == "" {
			if err := baseRun(i); err != nil {
				return err
			}
		}
	}
	for k, s := range series {
		s.Name = fmt.Sprintf("tidemark ×%d", s.Parallelism)
		if k > 0 {
			s.Median = medianRun(s.Runs)
			rep.Parallel = append(rep.Parallel, *s)
		}
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		if err := prof.write(pf); err != nil {
			pf.Close()
			return err
		}
		if err := pf.Close(); err != nil {
			return err
		}
	}
	if f.memProfile != "" {
		if err := writeAllocProfile(f.memProfile); err != nil {
			return err
		}
	}
	if heapProf != nil {
		if err := heapProf.write(f.heapProfile); err != nil {
			return err
		}
	}
	rep.Tidemark.Median = medianRun(rep.Tidemark.Runs)

	if base != nil {
		if f.cpuProfile != "" {
			for i := 0; i < f.repeat; i++ {
				if err := baseRun(i); err != nil {
					return err
				}
			}
		}
		bs.Median = medianRun(bs.Runs)
		rep.Baseline = &bs
		rep.Ratio = &struct {
			EventsPerCore float64 `json:"events_per_core_s"`
			EventsPerSec  float64 `json:"events_per_s"`
		}{ratio(rep.Tidemark.Median.EventsPerCore, bs.Median.EventsPerCore), ratio(rep.Tidemark.Median.EventsPerSec, bs.Median.EventsPerSec)}
		for i := range bs.Runs {
			rep.RoundRatios = append(rep.RoundRatios, ratio(rep.Tidemark.Runs[i].EventsPerCore, bs.Runs[i].EventsPerCore))
		}
	}
	return nil
}

// stageNames lists the pipeline's stage names (the pipeline's name for a
// single stage).
func stageNames(p *spec.Pipeline) []string {
	if len(p.Stages) == 0 {
		return []string{p.Name}
	}
	out := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		out[i] = s.Name
	}
	return out
}

// benchOptions are the engine options of a measured run: the registry
// with the blackhole sinks, the live heap sampled every 100,000 events.
func benchOptions(reg *engine.Registry, stderr io.Writer, h *liveHeap) engine.Options {
	return engine.Options{
		Group:          group.Run,
		Registry:       reg,
		Stdout:         io.Discard,
		SetMemoryLimit: true,
		ProgressEvery:  100_000,
		Progress:       func(engine.Progress) { h.sample() },
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "tidemark: "+format+"\n", args...)
		},
	}
}

// stateBytes sums the stages' state estimates.
func stateBytes(s *engine.Summary) int64 {
	var n int64
	for _, st := range s.Stages {
		n += st.StateBytes
	}
	return n
}

// once measures one tidemark run at n tasks (0: one per CPU): its
// BenchRun (with its phases when f.phases), whether the peak RSS was
// reset before it, and the parallelism it ran at. With a database sink
// it starts from no checkpoint and counts the database's CPU.
func (j *benchJob) once(ctx context.Context, f benchFlags, pl *plan.Plan, reg *engine.Registry, rows *int64, n int, prof *cpuRecorder, heapProf *peakHeapProfile, stderr io.Writer) (BenchRun, bool, int, error) {
	var par int
	var sum *engine.Summary
	var dbBack, dbBg float64
	r, reset, err := measure(heapProf, func(h *liveHeap) (int64, time.Duration, int64, error) {
		*rows = 0
		opts := benchOptions(reg, stderr, h)
		opts.Parallelism = n
		var db *dbCPU
		if j.dbDSN != "" {
			// A fresh start every run: no checkpoint to resume.
			if err := os.RemoveAll(j.ckDir); err != nil {
				return 0, 0, 0, err
			}
			var err error
			if db, err = startDBCPU(ctx, j.dbDSN, j.dbApp); err != nil {
				return 0, 0, 0, err
			}
		}
		var err error
		if prof != nil {
			if err := prof.start(); err != nil {
				return 0, 0, 0, err
			}
		}
		sum, err = engine.Run(ctx, pl, opts)
		if prof != nil {
			prof.stop() // parsed after the measured run
		}
		if db != nil {
			dbBack, dbBg = db.Stop(ctx)
		}
		if err != nil {
			return 0, 0, 0, err
		}
		par = sum.Parallelism
		return sum.EventsRead, sum.CPU, stateBytes(sum), nil
	})
	if err != nil {
		return BenchRun{}, false, 0, err
	}
	if prof != nil {
		ph, err := prof.parse()
		if err != nil {
			return BenchRun{}, false, 0, err
		}
		if f.phases {
			r.Phases = &ph
		}
	}
	r.Rows = *rows
	r.ExchangeBytes = sum.ExchangePeakBytes
	if j.dbDSN != "" {
		r.Rows = 0
		for _, st := range sum.Stages {
			r.Rows += st.RowsEmitted
		}
		r.DBBackendCPU, r.DBBackgroundCPU, r.Checkpoints = dbBack, dbBg, sum.Checkpoints.Taken
	}
	return r, reset, par, nil
}
