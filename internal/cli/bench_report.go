package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tidemark/tidemark/internal/articlegen"
)

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
	fmt.Fprintln(w, "exchange: the most bytes the packets between tasks held at once (bounded by exchange_memory: a firing streams through it).")
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
