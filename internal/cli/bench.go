package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/examples/article"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/internal/articlebase"
	"github.com/tidemark/tidemark/internal/articlegen"
	"github.com/tidemark/tidemark/internal/nexbase"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
)

// blackholeType is the sink type tidemark bench writes every output to:
// it counts rows and records and keeps nothing (Nexmark's blackhole sink).
const blackholeType = "blackhole"

// benchFlags are the flags of tidemark bench.
type benchFlags struct {
	events     int64
	repeat     int
	baseline   bool
	format     string
	cpuProfile string
	memProfile string
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
                    during the run (their items and copies: a firing's rows
                    read by another stage are all in them); "-" at one task,
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
tool pprof).`,
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
	fl := cmd.Flags()
	fl.Int64Var(&f.events, "events", 0, "events per run (overrides source.events of a nexmark source; default: the pipeline's)")
	fl.IntVar(&f.repeat, "repeat", 3, "runs to measure; the median is reported")
	fl.BoolVar(&f.baseline, "vs-baseline", false, "also run the hand-written Go loop for the query and print the ratio")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the tidemark runs to this file")
	fl.BoolVar(&f.phases, "phases", true, "profile each tidemark run and report where its CPU went by phase (read+decode, front, operators, exchange, sinks) and by goroutine")
	fl.StringVar(&f.memProfile, "memprofile", "", "write an allocation profile after the tidemark runs to this file")
	fl.Uint64Var(&f.seed, "seed", 1, "article: the event generator's seed")
	fl.StringVar(&f.writeEvents, "write-events", "", "article: write the generated events to this file and exit")
	fl.StringVar(&f.sink, "sink", "", "article: postgres writes the results to PostgreSQL with 1 s checkpoints (examples/article/postgres.yaml)")
	fl.StringVar(&f.dsn, "dsn", "", "article --sink postgres: the database URL (default $TIDEMARK_POSTGRES, else postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	fl.StringVar(&f.stateBackend, "state-backend", "", "where the keyed state lives: memory or disk (overrides the pipeline's state.backend; docs/state.md)")
	fl.StringVar(&f.memory, "memory", "", "the disk backend's memory budget, with a unit (e.g. 1GiB; overrides state.memory)")
	fl.IntSliceVar(&f.parallelism, "parallelism", []int{0}, "numbers of tasks to measure, e.g. 1,2 (runs alternate between them; 0: the pipeline's parallelism, else one task per CPU)")
	return cmd
}

// BenchRun holds one measured run's figures.
type BenchRun struct {
	Events         int64   `json:"events"`                // events read
	Rows           int64   `json:"rows"`                  // result rows written to the sinks
	WallSeconds    float64 `json:"wall_s"`                // wall time, s
	CPUSeconds     float64 `json:"cpu_s"`                 // process CPU time (user + system), s
	EventsPerSec   float64 `json:"events_per_s"`          // events / wall time
	EventsPerCore  float64 `json:"events_per_core_s"`     // events / process CPU time: events per second of one core
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`        // peak resident set, bytes
	FileRSSBytes   int64   `json:"file_rss_bytes"`        // resident pages mapped from files at the run's end (Linux RssFile + RssShmem), bytes; 0 where unknown
	LiveHeapBytes  int64   `json:"peak_live_heap_bytes"`  // largest live heap at a GC during the run, bytes
	StateBytesEnd  int64   `json:"state_bytes_end"`       // engine estimate at the end of the run, bytes; 0 for a baseline
	ExchangeBytes  int64   `json:"exchange_peak_bytes"`   // most bytes the packets between tasks held at once (engine.Summary.ExchangePeakBytes); 0 at one task and for a baseline
	AllocsPerEvent float64 `json:"allocs_per_event"`      // heap allocations (MemStats.Mallocs) per event
	BytesPerEvent  float64 `json:"alloc_bytes_per_event"` // heap bytes allocated per event
	// With --sink postgres: the database's CPU seconds (the run's
	// backends; the cluster's background processes), and the checkpoints
	// the run took.
	DBBackendCPU    float64 `json:"db_backend_cpu_s,omitempty"`
	DBBackgroundCPU float64 `json:"db_background_cpu_s,omitempty"`
	Checkpoints     int     `json:"checkpoints,omitempty"`
	// Phases is where the run's CPU went, from its CPU profile (tidemark
	// runs with --phases; for a median, each figure's median).
	Phases *benchPhases `json:"cpu_phases,omitempty"`
}

// benchSeries is the runs of one side (tidemark or the baseline).
type benchSeries struct {
	Name string `json:"name"`
	// Parallelism is the number of tasks of tidemark's runs (0 for a
	// baseline).
	Parallelism int        `json:"parallelism,omitempty"`
	Runs        []BenchRun `json:"runs"`
	Median      BenchRun   `json:"median"`
}

// benchMachine describes where the figures were measured.
type benchMachine struct {
	CPUModel   string `json:"cpu_model"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Go         string `json:"go"`
}

// benchSource describes the source of the measured pipeline.
type benchSource struct {
	Type      string `json:"type"`
	Generator string `json:"generator,omitempty"` // article: "articlegen", the writer of the file read
	Events    int64  `json:"events,omitempty"`    // nexmark, article: events per run
	Rate      int64  `json:"rate,omitempty"`      // nexmark, article: events per second of event time
	Seed      uint64 `json:"seed"`
	// Article: the generated stream's counts (first deliveries,
	// redeliveries, conflicting copies, late and too-late events).
	Article *articlegen.Stats `json:"article,omitempty"`
	// Sink is "postgres" for bench article --sink postgres.
	Sink string `json:"sink,omitempty"`
}

// benchReport is the whole output (--format json).
type benchReport struct {
	Query    string       `json:"query"`
	File     string       `json:"file"`
	Pipeline string       `json:"pipeline"`
	Stages   []string     `json:"stages"`
	Source   benchSource  `json:"source"`
	Repeat   int          `json:"repeat"`
	Machine  benchMachine `json:"machine"`
	Tidemark benchSeries  `json:"tidemark"`
	// Parallel holds the series of the further --parallelism values
	// (Tidemark is the first).
	Parallel []benchSeries `json:"parallel,omitempty"`
	Baseline *benchSeries  `json:"baseline,omitempty"`
	// Ratio is tidemark's median over the baseline's: events/s/core and
	// events/s.
	Ratio *struct {
		EventsPerCore float64 `json:"events_per_core_s"`
		EventsPerSec  float64 `json:"events_per_s"`
	} `json:"ratio,omitempty"`
	// RoundRatios are each round's tidemark events/s/core over the
	// baseline's run right after it (the first parallelism), in run order.
	RoundRatios  []float64 `json:"round_ratios_events_per_core_s,omitempty"`
	PeakRSSReset bool      `json:"peak_rss_reset_per_run"` // false: each peak RSS is the process's since its start
	Notes        string    `json:"notes"`
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

// configErr marks a usage or configuration error (exit status 2).
func configErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

func runBench(ctx context.Context, arg string, f benchFlags, stdout, stderr io.Writer) error {
	if f.repeat < 1 {
		return configErr("--repeat %d: at least 1", f.repeat)
	}
	if f.format != "text" && f.format != "json" {
		return configErr("--format %q: want text or json", f.format)
	}
	if f.events < 0 {
		return configErr("--events %d: must be positive", f.events)
	}
	if len(f.parallelism) == 0 {
		f.parallelism = []int{0}
	}
	for _, n := range f.parallelism {
		if n < 0 {
			return configErr("--parallelism %d: negative", n)
		}
	}
	if f.writeEvents != "" && arg != articleQuery {
		return configErr("--write-events: only for bench %s", articleQuery)
	}
	switch {
	case f.sink != "" && arg != articleQuery:
		return configErr("--sink: only for bench %s", articleQuery)
	case f.sink != "" && f.sink != "postgres":
		return configErr("--sink %q: want postgres", f.sink)
	case f.sink != "" && f.baseline:
		return configErr("--vs-baseline: the hand-written loop writes no database; measure it without --sink")
	case f.dsn != "" && f.sink == "":
		return configErr("--dsn: only with --sink postgres")
	}
	var p *spec.Pipeline
	var err error
	file := arg
	var gen *articlegen.Stats
	var eventsFile string
	var dbApp, dbDSN, ckDir string // bench article --sink postgres
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
				return err
			}
			fmt.Fprintf(stdout, "wrote %s order events to %s (%s first deliveries, %s redeliveries, %s conflicting, %s late, %s too late)\n",
				thousands(st.Lines), f.writeEvents, thousands(st.First), thousands(st.Redeliveries), thousands(st.Conflicting), thousands(st.Late), thousands(st.TooLate))
			return nil
		}
		dir, err := os.MkdirTemp("", "tidemark-bench-article-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		eventsFile = filepath.Join(dir, "orders.jsonl")
		st, err := articlegen.WriteFile(eventsFile, cfg)
		if err != nil {
			return err
		}
		gen = &st
		file = article.PipelinePath
		if f.sink == "postgres" {
			file = article.PostgresPath
			if p, err = article.LoadPostgres(dir, eventsFile); err == nil {
				dbApp = fmt.Sprintf("tidemark-bench-%d", os.Getpid())
				dsn := f.dsn
				if dsn == "" {
					dsn = os.Getenv("TIDEMARK_POSTGRES")
				}
				if dsn == "" {
					dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
				}
				if dbDSN, err = withApplicationName(dsn, dbApp); err != nil {
					return &exitError{code: 2, err: err}
				}
				p.Sinks[0].DSN = dbDSN
				ckDir = filepath.Join(dir, "checkpoints")
				p.Checkpoint.Dir = ckDir
			}
			break
		}
		p, err = article.Load(dir, eventsFile)
	case strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".sql"):
		p, err = tidemark.Load(arg)
	default:
		var path string
		if _, path, err = nexmarkq.File(arg); err == nil {
			file = path
			p, err = nexmarkq.Load(arg)
		}
		if err == nil && len(p.Inputs) > 0 {
			// q13's side input: the bundled file, written beside the run.
			dir, derr := os.MkdirTemp("", "tidemark-bench-inputs-")
			if derr != nil {
				return derr
			}
			defer os.RemoveAll(dir)
			err = nexmarkq.WriteInputs(p, dir)
		}
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.events > 0 && gen == nil {
		if p.Source.Type != "nexmark" {
			return configErr("--events: only for a nexmark source (this pipeline reads %s)", p.Source.Type)
		}
		p.Source.Events = f.events
	}
	switch {
	case p.Source.Type == "nexmark" && p.Source.Events == 0:
		return configErr("%s: source.events is 0 (unbounded); give --events", file)
	case p.Source.Type == "kafka" && !p.Source.StopAtEnd:
		return configErr("%s: a benchmark needs a bounded source; set source.stop_at_end for kafka", file)
	}
	stages := stageNames(p)
	var base *baselineFunc
	var baseCfg nexbase.Config
	switch {
	case f.baseline && gen != nil:
		b := articleBaseline(eventsFile)
		base = &b
	case f.baseline:
		key := p.Name + "/" + stages[len(stages)-1]
		b, ok := baselines[key]
		if !ok {
			known := slices.Sorted(func(yield func(string) bool) {
				for k := range baselines {
					if !yield(k) {
						return
					}
				}
			})
			return configErr("--vs-baseline: no hand-written loop for pipeline %s, last stage %s (loops exist for %s)", p.Name, stages[len(stages)-1], strings.Join(known, ", "))
		}
		if baseCfg, err = nexbase.FromSpec(p); err != nil {
			return configErr("--vs-baseline: %v", err)
		}
		base = &b
	}
	if prep := stateFlags(f.stateBackend, f.memory); prep != nil {
		if err := prep(p); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	rows := blackholeSinks(p, dbDSN != "")
	pl, err := tidemark.Compile(p)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", file, err)}
	}
	reg := engine.DefaultRegistry()
	reg.Results[blackholeType] = func(context.Context, spec.Sink, changelog.Desc, *engine.Env) (sink.Results, error) {
		return &blackhole{rows: rows}, nil
	}
	reg.Records[blackholeType] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return &blackhole{rows: new(int64)}, nil
	}

	rep := benchReport{Query: arg, File: file, Pipeline: p.Name, Stages: stages, Repeat: f.repeat,
		Machine: machine(), Source: benchSource{Type: p.Source.Type, Seed: p.Source.Seed}}
	if p.Source.Type == "nexmark" {
		rep.Source.Events, rep.Source.Rate = p.Source.Events, p.Source.Rate
		if rep.Source.Rate == 0 {
			rep.Source.Rate = nexmark.DefaultRate
		}
	}
	if gen != nil {
		rep.Source.Generator, rep.Source.Events, rep.Source.Rate, rep.Source.Seed = "articlegen", gen.Lines, articlegen.DefaultRate, f.seed
		rep.Source.Article = gen
		rep.Source.Sink = f.sink
	}
	rep.Tidemark.Name = "tidemark"
	rep.PeakRSSReset = true

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
		r, reset, err := measure(func(*liveHeap) (int64, time.Duration, int64, error) {
			c0 := processCPU()
			var err error
			st, err = base.run(ctx, baseCfg)
			return st.Events, processCPU() - c0, 0, err
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
			var par int
			var sum *engine.Summary
			var dbBack, dbBg float64
			r, reset, err := measure(func(h *liveHeap) (int64, time.Duration, int64, error) {
				*rows = 0
				opts := benchOptions(reg, stderr, h)
				opts.Parallelism = n
				var db *dbCPU
				if dbDSN != "" {
					// A fresh start every run: no checkpoint to resume.
					if err := os.RemoveAll(ckDir); err != nil {
						return 0, 0, 0, err
					}
					var err error
					if db, err = startDBCPU(ctx, dbDSN, dbApp); err != nil {
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
				return fmt.Errorf("run %d: %w", i+1, err)
			}
			if prof != nil {
				ph, err := prof.parse()
				if err != nil {
					return err
				}
				if f.phases {
					r.Phases = &ph
				}
			}
			r.Rows = *rows
			r.ExchangeBytes = sum.ExchangePeakBytes
			if dbDSN != "" {
				r.Rows = 0
				for _, st := range sum.Stages {
					r.Rows += st.RowsEmitted
				}
				r.DBBackendCPU, r.DBBackgroundCPU, r.Checkpoints = dbBack, dbBg, sum.Checkpoints.Taken
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
	rep.Notes = "state_bytes_end is the engine's estimate at the end of a bounded run, after every window closed (mostly key tables); peak_live_heap_bytes is the largest live heap at a garbage collection during the run, the whole process included (source buffers, the generator's delay wheel)."
	if !rep.PeakRSSReset {
		rep.Notes += " The peak RSS could not be reset between runs: each value is the process's peak since it started."
	}
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&rep)
	}
	writeBenchText(stdout, &rep)
	return nil
}

// median returns the median of sorted values v (0 when v is empty).
func median(v []float64) float64 {
	n := len(v)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
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

// blackholeSinks points every sink of p at the blackhole (adding one to
// each last stage without sinks, one that no other stage reads) and turns
// checkpoints off; with keepResults, the result sinks and checkpoints stay
// and only the side outputs go to the blackhole. It returns the counter of
// result rows the blackhole sinks receive.
func blackholeSinks(p *spec.Pipeline, keepResults bool) *int64 {
	rows := new(int64)
	bh := func() *spec.Sink {
		if keepResults {
			// The blackhole keeps nothing, so it takes no part in the
			// checkpoints the run keeps.
			return &spec.Sink{Type: blackholeType, Delivery: "at_least_once"}
		}
		return &spec.Sink{Type: blackholeType}
	}
	results := func(s []spec.Sink, leaf bool) []spec.Sink {
		if keepResults {
			return s
		}
		n := len(s)
		if n == 0 && leaf {
			n = 1
		}
		out := make([]spec.Sink, n)
		for i := range out {
			out[i] = *bh()
		}
		return out
	}
	if !keepResults {
		p.Checkpoint = nil
	}
	if p.Quarantine.Sink != nil {
		p.Quarantine.Sink = bh()
	}
	if p.Conflicts.Sink != nil {
		p.Conflicts.Sink = bh()
	}
	if len(p.Stages) == 0 {
		p.Sinks = results(p.Sinks, true)
		if p.Late.Sink != nil {
			p.Late.Sink = bh()
		}
		return rows
	}
	read := map[string]bool{}
	for i, s := range p.Stages {
		switch {
		case s.Input != "":
			read[s.Input] = true
		case i > 0:
			read[p.Stages[i-1].Name] = true
		}
	}
	for i := range p.Stages {
		s := &p.Stages[i]
		s.Sinks = results(s.Sinks, !read[s.Name])
		if s.Late.Sink != nil {
			s.Late.Sink = bh()
		}
	}
	return rows
}

// blackhole is the discarding sink: it counts what it receives.
type blackhole struct{ rows *int64 }

func (b *blackhole) Write(_ context.Context, rows []changelog.Row) error {
	*b.rows += int64(len(rows))
	return nil
}
func (b *blackhole) WriteRecord(context.Context, []byte) error { *b.rows++; return nil }
func (b *blackhole) Flush(context.Context) error               { return nil }
func (b *blackhole) Close(context.Context) error               { return nil }

// liveHeap samples the live heap at the last garbage collection.
type liveHeap struct {
	s    []metrics.Sample
	peak int64
}

func newLiveHeap() *liveHeap {
	return &liveHeap{s: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

func (h *liveHeap) sample() {
	metrics.Read(h.s)
	if h.s[0].Value.Kind() == metrics.KindUint64 {
		h.peak = max(h.peak, int64(h.s[0].Value.Uint64()))
	}
}

// benchOptions are the engine options of a measured run: the registry
// with the blackhole sinks, the live heap sampled every 100,000 events.
func benchOptions(reg *engine.Registry, stderr io.Writer, h *liveHeap) engine.Options {
	return engine.Options{
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

// measure runs one measured run: it collects garbage and returns memory
// to the OS, resets the peak RSS, and times run, which returns the events
// it read, the CPU time it used and the state bytes at its end.
func measure(run func(h *liveHeap) (events int64, cpu time.Duration, state int64, err error)) (BenchRun, bool, error) {
	runtime.GC()
	debug.FreeOSMemory()
	reset := resetPeakRSS()
	h := newLiveHeap()
	h.sample()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	events, cpu, state, err := run(h)
	wall := time.Since(start)
	h.sample()
	runtime.ReadMemStats(&m1)
	if err != nil {
		return BenchRun{}, reset, err
	}
	r := BenchRun{
		Events:        events,
		WallSeconds:   wall.Seconds(),
		CPUSeconds:    cpu.Seconds(),
		PeakRSSBytes:  peakRSS(),
		FileRSSBytes:  fileRSS(),
		LiveHeapBytes: h.peak,
		StateBytesEnd: state,
	}
	if events > 0 {
		r.AllocsPerEvent = float64(m1.Mallocs-m0.Mallocs) / float64(events)
		r.BytesPerEvent = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(events)
	}
	r.EventsPerSec = ratio(float64(events), r.WallSeconds)
	r.EventsPerCore = ratio(float64(events), r.CPUSeconds)
	return r, reset, nil
}

// stateBytes sums the stages' state estimates.
func stateBytes(s *engine.Summary) int64 {
	var n int64
	for _, st := range s.Stages {
		n += st.StateBytes
	}
	return n
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// fileRSS returns the resident bytes of this process mapped from files
// and shared memory (Linux: RssFile + RssShmem of /proc/self/status, in
// kB), or 0 where unknown. The executable's pages are most of it: on a
// kernel that keeps large folios in the page cache a fault maps a whole
// 2 MiB piece of the file, so this differs between builds of the same
// code by tens of MiB (FilePmdMapped in /proc/self/smaps_rollup).
func fileRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseFileRSS(string(b))
}

// parseFileRSS sums the RssFile and RssShmem lines of a
// /proc/PID/status text, in bytes.
func parseFileRSS(status string) int64 {
	var n int64
	for line := range strings.Lines(status) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RssFile" && k != "RssShmem") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			n += kb * 1024
		}
	}
	return n
}

// resetPeakRSS makes the kernel's peak RSS of this process start again
// from the current RSS (Linux: /proc/self/clear_refs, value 5). It reports
// whether it could.
func resetPeakRSS() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// writeAllocProfile writes the allocation profile (pprof "allocs").
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// medianRun is the median of each figure over the runs (the mean of the
// middle two for an even count).
func medianRun(runs []BenchRun) BenchRun {
	med := func(get func(*BenchRun) float64) float64 {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = get(&runs[i])
		}
		slices.Sort(v)
		return median(v)
	}
	return BenchRun{
		Events:          int64(med(func(r *BenchRun) float64 { return float64(r.Events) })),
		Rows:            int64(med(func(r *BenchRun) float64 { return float64(r.Rows) })),
		WallSeconds:     med(func(r *BenchRun) float64 { return r.WallSeconds }),
		CPUSeconds:      med(func(r *BenchRun) float64 { return r.CPUSeconds }),
		EventsPerSec:    med(func(r *BenchRun) float64 { return r.EventsPerSec }),
		EventsPerCore:   med(func(r *BenchRun) float64 { return r.EventsPerCore }),
		PeakRSSBytes:    int64(med(func(r *BenchRun) float64 { return float64(r.PeakRSSBytes) })),
		FileRSSBytes:    int64(med(func(r *BenchRun) float64 { return float64(r.FileRSSBytes) })),
		LiveHeapBytes:   int64(med(func(r *BenchRun) float64 { return float64(r.LiveHeapBytes) })),
		StateBytesEnd:   int64(med(func(r *BenchRun) float64 { return float64(r.StateBytesEnd) })),
		ExchangeBytes:   int64(med(func(r *BenchRun) float64 { return float64(r.ExchangeBytes) })),
		AllocsPerEvent:  med(func(r *BenchRun) float64 { return r.AllocsPerEvent }),
		BytesPerEvent:   med(func(r *BenchRun) float64 { return r.BytesPerEvent }),
		DBBackendCPU:    med(func(r *BenchRun) float64 { return r.DBBackendCPU }),
		DBBackgroundCPU: med(func(r *BenchRun) float64 { return r.DBBackgroundCPU }),
		Checkpoints:     int(med(func(r *BenchRun) float64 { return float64(r.Checkpoints) })),
		Phases:          medianPhases(runs),
	}
}

// machine describes this machine.
func machine() benchMachine {
	return benchMachine{CPUModel: cpuModel(), CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
}

// cpuModel is the first "model name" of /proc/cpuinfo (Linux), or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func writeBenchText(w io.Writer, rep *benchReport) {
	src := rep.Source.Type
	switch {
	case src == "nexmark":
		src = fmt.Sprintf("nexmark, %s events/s of event time, seed %d", count(float64(rep.Source.Rate)), rep.Source.Seed)
	case rep.Source.Article != nil:
		a := rep.Source.Article
		src = fmt.Sprintf("a JSONL file from articlegen, seed %d, %s events/s of event time: %s redeliveries, %s conflicting, %s late, %s too late",
			rep.Source.Seed, count(float64(rep.Source.Rate)), thousands(a.Redeliveries), thousands(a.Conflicting), thousands(a.Late), thousands(a.TooLate))
	}
	events := rep.Tidemark.Median.Events
	runs := "runs"
	if rep.Repeat == 1 {
		runs = "run"
	}
	fmt.Fprintf(w, "tidemark bench %s (%s; stages %s): %s events per run (%s), %d %s\n",
		rep.Query, rep.File, strings.Join(rep.Stages, " → "), thousands(events), src, rep.Repeat, runs)
	m := rep.Machine
	cpu := m.CPUModel
	if cpu == "" {
		cpu = "CPU model unknown"
	}
	fmt.Fprintf(w, "machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s\n\n", cpu, m.CPUs, m.GOMAXPROCS, m.OS, m.Arch, m.Go)
	db := rep.Source.Sink == "postgres"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "\trun\tevents/s\tevents/s/core\twall\tCPU\tpeak RSS\tfile RSS\tlive heap\tstate (end)\texchange\tallocs/event\tbytes/event\trows\t"
	if db {
		head += "db backends\tdb background\tcheckpoints\t"
	}
	fmt.Fprintln(tw, head)
	series := []*benchSeries{&rep.Tidemark}
	for i := range rep.Parallel {
		series = append(series, &rep.Parallel[i])
	}
	if rep.Baseline != nil {
		series = append(series, rep.Baseline)
	}
	for _, s := range series {
		line := func(label string, r *BenchRun) {
			state, exch := bytesText(r.StateBytesEnd), bytesText(r.ExchangeBytes)
			if s == rep.Baseline {
				state = "-"
			}
			if s == rep.Baseline || s.Parallelism == 1 {
				exch = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2fs\t%.2fs\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.1f\t%s\t", s.Name, label,
				count(r.EventsPerSec), count(r.EventsPerCore), r.WallSeconds, r.CPUSeconds,
				bytesText(r.PeakRSSBytes), bytesText(r.FileRSSBytes), bytesText(r.LiveHeapBytes), state, exch, r.AllocsPerEvent, r.BytesPerEvent, count(float64(r.Rows)))
			if db {
				fmt.Fprintf(tw, "%.2fs\t%.2fs\t%d\t", r.DBBackendCPU, r.DBBackgroundCPU, r.Checkpoints)
			}
			fmt.Fprintln(tw)
		}
		for i := range s.Runs {
			line(fmt.Sprint(i+1), &s.Runs[i])
		}
		line("median", &s.Median)
	}
	tw.Flush()
	writePhases(w, series)
	for _, p := range rep.Parallel {
		t := &rep.Tidemark
		fmt.Fprintf(w, "\nparallelism %d / %d (medians): %.2f× the events/s, %.2f of its events/s/core\n",
			p.Parallelism, t.Parallelism, ratio(p.Median.EventsPerSec, t.Median.EventsPerSec), ratio(p.Median.EventsPerCore, t.Median.EventsPerCore))
	}
	if rep.Ratio != nil {
		fmt.Fprintf(w, "\nratio %s / %s (medians): %.2f of its events/s/core, %.2f of its events/s\n",
			rep.Tidemark.Name, rep.Baseline.Name, rep.Ratio.EventsPerCore, rep.Ratio.EventsPerSec)
		if rr := rep.RoundRatios; len(rr) > 1 {
			sorted := slices.Sorted(slices.Values(rr))
			fmt.Fprintf(w, "ratio per round (each run beside the loop's after it): median %.2f of its events/s/core (%.2f–%.2f)\n",
				median(sorted), sorted[0], sorted[len(sorted)-1])
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "events/s/core: events / process CPU time (user + system, every thread).")
	if db {
		fmt.Fprintln(w, "db backends: CPU of the PostgreSQL server processes of the run's connections; db background: of the WAL writer, checkpointer and background writer (shared with other clients).")
	}
	fmt.Fprintln(w, "state (end): the engine's estimate after the run, when every window has closed.")
	fmt.Fprintln(w, "live heap: the largest live heap at a GC during the run, the whole process included.")
	fmt.Fprintln(w, "exchange: the most bytes the packets between tasks held at once (a firing's rows read by another stage are all in them).")
	fmt.Fprintln(w, "file RSS: resident pages mapped from files (the executable; 2 MiB pages where the kernel maps them so); peak RSS − file RSS is the run's own memory.")
	if !rep.PeakRSSReset {
		fmt.Fprintln(w, "peak RSS: could not be reset between runs; each value is the process's peak so far.")
	}
}

// count renders a quantity with K/M/G suffixes (1.23M).
func count(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// thousands renders n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// bytesText renders a byte count in binary units.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
