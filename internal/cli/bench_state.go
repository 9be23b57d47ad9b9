package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/cputime"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/state/disk"
)

// bench state: a dedup whose state is many times its memory budget, with
// the events generated in the loop (docs/state.md, "Figures").

// stateBenchFlags are tidemark bench state's flags.
type stateBenchFlags struct {
	ids         int64
	ttl         time.Duration
	memory      string
	parallelism int
	sample      int64
	sampleOnly  bool
	dir         string
	format      string
	checkpoint  time.Duration
	restarts    []int
}

// Defaults of tidemark bench state.
const (
	defaultStateIDs    = 300_000_000
	defaultStateSample = 2_000_000
	// stateCopyEvery: every stateCopyEvery-th delivery is a copy of an
	// earlier event (a redelivery), the others first deliveries.
	stateCopyEvery = 20
	// stateConflictEvery: every stateConflictEvery-th copy carries
	// another amount (a conflicting copy).
	stateConflictEvery = 50
	// stateStores is the number of distinct group keys (stores).
	stateStores = 1000
	// stateLookback bounds how far back a copy reaches: the ids of the
	// last 6 hours of event time.
	stateLookback = 6 * time.Hour
	// stateSampleHot is each task's hot tier in the comparison's disk
	// run, bytes (engine.Options.HotTier): a few thousand ids, so that the
	// tier turns many times and copies are found in the store.
	stateSampleHot = 64 << 10
)

func newBenchStateCmd(stdout, stderr io.Writer) *cobra.Command {
	var f stateBenchFlags
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Measure the disk backend's memory with a dedup state many times its budget (events generated in the loop)",
		Long: `Measure the disk backend with a state many times its memory budget.

The pipeline deduplicates --ids distinct event ids kept for --ttl (24 h)
of event time, then counts and sums them per store (1,000 stores) in
1-hour tumbling windows. The events are generated in the loop, not read
from a file: the ids run from 0 at a rate of --ids / ttl events per second
of event time (so that no id expires before the run ends: every id is live
state at the end), and every 20th delivery is a copy of an event of the
last 6 hours of event time (a redelivery, looked up in the store), every
50th copy with another amount (a conflicting copy).

The run uses the disk backend with --memory (state.memory) as its budget and
a state directory under --dir (removed at the end). The process's resident
set is sampled every second for the whole run (Linux /proc/self/status:
VmRSS, and VmHWM, the kernel's peak since the reset before the run), and
the report gives the peak against the budget + 15 %, the store's size on
disk, its bytes per id, and events/s.

Before it, --sample ids (default 2,000,000) run once on the memory backend
and once on the disk backend under the least budget (16 MiB) with a hot
tier of 64 KiB per task (turning every few thousand ids, so that copies
are found in the store), with the same generated events; their result rows,
duplicates and conflicts must be equal, or the command fails.
--sample-only runs only those.`,
		Example: `  tidemark bench state --ids 300000000 --memory 1GiB
  tidemark bench state --ids 75000000 --memory 256MiB --dir /var/tmp
  tidemark bench state --sample-only --sample 500000`,
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchState(cmd.Context(), f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&f.ids, "ids", defaultStateIDs, "distinct event ids of the measured run")
	fl.DurationVar(&f.ttl, "ttl", 24*time.Hour, "dedup.ttl: how long ids are remembered, in event time")
	fl.StringVar(&f.memory, "memory", "1GiB", "state.memory of the measured run: the disk backend's budget")
	fl.IntVar(&f.parallelism, "parallelism", 0, "tasks (0: one per CPU)")
	fl.Int64Var(&f.sample, "sample", defaultStateSample, "distinct ids of the memory-against-disk comparison (0: none)")
	fl.BoolVar(&f.sampleOnly, "sample-only", false, "run only the comparison")
	fl.StringVar(&f.dir, "dir", "", "where the state directory goes (default: the system's temporary directory)")
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.DurationVar(&f.checkpoint, "checkpoint-interval", 0, "take checkpoints this often (wall clock) in the measured run, into a directory beside the state's, and report their bytes against the new tables' (0: none)")
	fl.IntSliceVar(&f.restarts, "restart", nil, "after the measured run (with --checkpoint-interval), run it again from its latest checkpoint at each of these parallelisms in turn (0: the run's), and report each restore: stores and tables taken, bytes copied, its time")
	return cmd
}

// stateBenchReport is tidemark bench state's output (--format json).
type stateBenchReport struct {
	Machine benchMachine `json:"machine"`
	// Sample is the comparison of the backends (nil without one).
	Sample *stateSample `json:"sample,omitempty"`
	// Run is the measured run (nil with --sample-only).
	Run *stateRun `json:"run,omitempty"`
}

// stateSample is the memory-against-disk comparison.
type stateSample struct {
	IDs        int64 `json:"ids"`
	Deliveries int64 `json:"deliveries"`
	Rows       int   `json:"rows"`
	Duplicates int64 `json:"duplicates"`
	Conflicts  int64 `json:"conflicts"`
	StoreReads int64 `json:"disk_store_reads"` // lookups the disk run made in its store
	StoreHits  int64 `json:"disk_store_hits"`
	Equal      bool  `json:"equal"`
}

// stateRun is the measured run's figures.
type stateRun struct {
	IDs          int64   `json:"ids"`
	Deliveries   int64   `json:"deliveries"`
	Rate         int64   `json:"rate_events_per_s"` // of event time
	TTLSeconds   int64   `json:"ttl_s"`
	Parallelism  int     `json:"parallelism"`
	BudgetBytes  int64   `json:"budget_bytes"`
	LimitBytes   int64   `json:"limit_bytes"`    // budget + 15 %
	PeakRSSBytes int64   `json:"peak_rss_bytes"` // max of VmHWM and the samples
	FileRSSBytes int64   `json:"file_rss_bytes"` // of it, mapped from files at the end
	Samples      int     `json:"rss_samples"`
	RSSByDecile  []int64 `json:"rss_by_decile"` // the largest sample of each tenth of the run
	DiskBytes    int64   `json:"disk_bytes"`    // the stores' largest size (state.dir, sampled every 10 s; not the checkpoints)
	StateX       float64 `json:"state_over_budget"`
	WallSeconds  float64 `json:"wall_s"`
	CPUSeconds   float64 `json:"cpu_s"`
	EventsPerSec float64 `json:"events_per_s"`
	EventsCore   float64 `json:"events_per_core_s"`
	Duplicates   int64   `json:"duplicates"`
	Conflicts    int64   `json:"conflicts"`
	StoreReads   int64   `json:"disk_store_reads"`
	StoreHits    int64   `json:"disk_store_hits"`
	StoreWrites  int64   `json:"disk_store_writes"`
	Rows         int64   `json:"rows"`
	Bounded      bool    `json:"bounded"` // peak RSS ≤ limit
	// With --checkpoint-interval: the checkpoints taken, the bytes of
	// the new tables they sent (engine DiskStateSummary.SentBytes), the
	// bytes of their manifests and segments (CheckpointSummary.Bytes),
	// and the longest checkpoint (prepare, write, commit).
	Checkpoints     int     `json:"checkpoints,omitempty"`
	SentBytes       int64   `json:"checkpoint_table_bytes,omitempty"`
	CheckpointBytes int64   `json:"checkpoint_other_bytes,omitempty"`
	LongestSeconds  float64 `json:"checkpoint_longest_s,omitempty"`
	// The synchronous pauses of the checkpoints (engine DiskCheckpoint:
	// the tasks' write-back and their stores' snapshots started), ms: the median, the 99th
	// percentile (nearest rank) and the longest; and the median bytes of
	// new tables a checkpoint sent (the state changed per interval).
	PauseP50Ms   float64 `json:"checkpoint_pause_p50_ms,omitempty"`
	PauseP99Ms   float64 `json:"checkpoint_pause_p99_ms,omitempty"`
	PauseMaxMs   float64 `json:"checkpoint_pause_max_ms,omitempty"`
	SentP50Bytes int64   `json:"checkpoint_sent_p50_bytes,omitempty"`
	// The pause's parts (engine DiskCheckpoint: WriteBack, Wait) and
	// the snapshots' parts in the background (Flush, Checkpoint, List),
	// ms, each the median and the nearest-rank 99th percentile over the
	// checkpoints (of each part on its own: the p99s need not be of one
	// checkpoint).
	WriteBackP50Ms  float64 `json:"checkpoint_writeback_p50_ms,omitempty"`
	WriteBackP99Ms  float64 `json:"checkpoint_writeback_p99_ms,omitempty"`
	WaitP50Ms       float64 `json:"checkpoint_wait_p50_ms,omitempty"`
	WaitP99Ms       float64 `json:"checkpoint_wait_p99_ms,omitempty"`
	FlushP50Ms      float64 `json:"checkpoint_flush_p50_ms,omitempty"`
	FlushP99Ms      float64 `json:"checkpoint_flush_p99_ms,omitempty"`
	CheckpointP50Ms float64 `json:"checkpoint_links_p50_ms,omitempty"`
	CheckpointP99Ms float64 `json:"checkpoint_links_p99_ms,omitempty"`
	ListP50Ms       float64 `json:"checkpoint_list_p50_ms,omitempty"`
	ListP99Ms       float64 `json:"checkpoint_list_p99_ms,omitempty"`
	// The writer's wait for the snapshots and the upload's time (engine
	// DiskCheckpoint.Snapshot, Upload: the new tables synced and put into
	// the checkpoint directory), on the writer's goroutine, not part of
	// the pause at two or more tasks, ms.
	SnapshotP50Ms float64 `json:"checkpoint_snapshot_wait_p50_ms,omitempty"`
	SnapshotP99Ms float64 `json:"checkpoint_snapshot_wait_p99_ms,omitempty"`
	UploadP50Ms   float64 `json:"checkpoint_upload_p50_ms,omitempty"`
	UploadP99Ms   float64 `json:"checkpoint_upload_p99_ms,omitempty"`
	// Restarts are the runs again from the latest checkpoint (--restart).
	Restarts []stateRestart `json:"restarts,omitempty"`
}

// stateRestart is one run again from the latest checkpoint: its
// parallelism, what its restore took (engine DiskRestore), the restore's
// time, and the whole run's wall time (the restore, the replay of the
// deliveries after the checkpoint, the end).
type stateRestart struct {
	Parallelism  int     `json:"parallelism"`
	Stores       int     `json:"stores"`
	Excised      int     `json:"excised"`
	Tables       int     `json:"tables"`
	TableBytes   int64   `json:"table_bytes"`
	CopiedBytes  int64   `json:"copied_bytes"`
	RestoreMs    float64 `json:"restore_ms"`
	WallSeconds  float64 `json:"wall_s"`
	Deliveries   int64   `json:"deliveries"`
	CheckpointID int64   `json:"checkpoint_id,omitempty"`
}

// pauseFigures fills r's pause and sent-bytes figures from a run's
// disk checkpoints.
func (r *stateRun) pauseFigures(cks []engine.DiskCheckpoint) {
	if len(cks) == 0 {
		return
	}
	ms := make([]float64, len(cks))
	sent := make([]int64, len(cks))
	for i, c := range cks {
		ms[i], sent[i] = float64(c.Pause)/float64(time.Millisecond), c.Sent
	}
	slices.Sort(ms)
	slices.Sort(sent)
	r.PauseP50Ms, r.PauseP99Ms, r.PauseMaxMs = median(ms), nearestRank(ms, 0.99), ms[len(ms)-1]
	r.SentP50Bytes = sent[len(sent)/2]
	part := func(get func(engine.DiskCheckpoint) time.Duration) (p50, p99 float64) {
		v := make([]float64, len(cks))
		for i, c := range cks {
			v[i] = float64(get(c)) / float64(time.Millisecond)
		}
		slices.Sort(v)
		return median(v), nearestRank(v, 0.99)
	}
	r.WriteBackP50Ms, r.WriteBackP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.WriteBack })
	r.FlushP50Ms, r.FlushP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.Flush })
	r.CheckpointP50Ms, r.CheckpointP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.Checkpoint })
	r.ListP50Ms, r.ListP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.List })
	r.UploadP50Ms, r.UploadP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.Upload })
	r.WaitP50Ms, r.WaitP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.Wait })
	r.SnapshotP50Ms, r.SnapshotP99Ms = part(func(c engine.DiskCheckpoint) time.Duration { return c.Snapshot })
}

// nearestRank returns the q-quantile (0 < q ≤ 1) of sorted values v by
// the nearest-rank method: the smallest value with at least q·n values
// at or below it (0 when v is empty).
func nearestRank(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(k, 0), len(v)-1)]
}

func runBenchState(ctx context.Context, f stateBenchFlags, stdout, stderr io.Writer) error {
	switch {
	case f.format != "text" && f.format != "json":
		return usageErr("--format %q: want text or json", f.format)
	case f.ids < stateCopyEvery:
		return usageErr("--ids %d: at least %d", f.ids, stateCopyEvery)
	case f.ttl < time.Second || f.ttl%time.Millisecond != 0:
		return usageErr("--ttl %s: at least 1s, in whole milliseconds", f.ttl)
	case f.sample < 0:
		return usageErr("--sample %d: negative", f.sample)
	case f.sampleOnly && f.sample == 0:
		return usageErr("--sample-only needs --sample above 0")
	case len(f.restarts) > 0 && f.checkpoint <= 0:
		return usageErr("--restart needs --checkpoint-interval")
	}
	budget, err := spec.ParseBytes(f.memory)
	if err != nil {
		return usageErr("--memory: %v", err)
	}
	rep := stateBenchReport{Machine: machine()}
	if f.sample > 0 {
		s, err := stateCompare(ctx, f, stderr)
		if err != nil {
			return err
		}
		rep.Sample = s
		if !s.Equal {
			writeStateReport(stdout, f.format, &rep)
			return fmt.Errorf("bench state: the disk backend's rows or counters differ from the memory backend's on %d ids", f.sample)
		}
	}
	if !f.sampleOnly {
		r, err := stateMeasure(ctx, f, budget, stderr)
		if err != nil {
			return err
		}
		rep.Run = r
	}
	writeStateReport(stdout, f.format, &rep)
	if rep.Run != nil && !rep.Run.Bounded {
		return fmt.Errorf("bench state: peak RSS %s above the budget + 15 %% (%s)", bytesText(rep.Run.PeakRSSBytes), bytesText(rep.Run.LimitBytes))
	}
	return nil
}

// statePipeline is bench state's pipeline: dedup by event_id for ttl,
// then count and sum per store in 1-hour tumbling windows.
func statePipeline(ttl time.Duration, backend string, memory spec.Bytes, dir string) *spec.Pipeline {
	p := &spec.Pipeline{
		Name: "dedup_state",
		Source: spec.Source{Type: "file", Path: "generated", Format: "jsonl",
			Schema: spec.FieldTypes{{Name: "event_id", Type: "int"}, {Name: "store", Type: "int"}, {Name: "amount", Type: "int"}}},
		EventTime:  spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)},
		Dedup:      &spec.Dedup{Key: "event_id", TTL: spec.Duration(ttl)},
		Key:        []string{"store"},
		Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
		Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}, {Name: "total", Expr: "sum(amount)"}},
		Emit:       spec.Emit{Mode: "final"},
		Sinks:      []spec.Sink{{Type: blackholeType}},
		Conflicts:  spec.Quarantine{Sink: &spec.Sink{Type: blackholeType}},
		State:      spec.State{Backend: backend, Memory: memory, Dir: dir},
	}
	return p
}

// stateGen generates bench state's deliveries in the loop: delivery k of
// each group of stateCopyEvery is a copy of an earlier event (the last
// of the group), the others first deliveries of ids 0, 1, 2, …. Every
// event is a function of its delivery number, which is its position's
// offset, so EventJSON needs nothing else.
type stateGen struct {
	schema                *row.Schema
	id, store, amount, ts row.Field
	ids                   int64 // distinct ids
	n                     int64 // deliveries
	next                  int64
	base, rate            int64 // the first event's time (ms), events/s of event time
	lookback              int64 // ids a copy may reach back
	partitions            []string
}

// newStateGen returns the generator of ids distinct ids for a pipeline
// compiled from statePipeline at rate events/s.
func newStateGen(pl *plan.Plan, ids, rate int64) (*stateGen, error) {
	g := &stateGen{schema: pl.SourceSchema, ids: ids, rate: rate,
		base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), partitions: []string{"generated"}}
	g.n = ids / (stateCopyEvery - 1) * stateCopyEvery
	if r := ids % (stateCopyEvery - 1); r > 0 {
		g.n += r
	}
	g.lookback = max(rate*int64(stateLookback/time.Second), 1)
	for _, x := range []struct {
		name string
		f    *row.Field
	}{{"event_id", &g.id}, {"store", &g.store}, {"amount", &g.amount}, {"ts", &g.ts}} {
		f, ok := g.schema.Lookup(x.name)
		if !ok {
			return nil, fmt.Errorf("bench state: the pipeline's source has no field %s", x.name)
		}
		*x.f = f
	}
	return g, nil
}

// mix is SplitMix64's finaliser (Steele, Lea and Flood 2014): a copy's
// choice of the earlier event it repeats.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// event returns delivery k's event: its id, store, amount and event time
// (ms), and the time of the newest first delivery so far (its arrival).
func (g *stateGen) event(k int64) (id, store, amount, ts, arrival int64) {
	grp, r := k/stateCopyEvery, k%stateCopyEvery
	newest := grp*(stateCopyEvery-1) + min(r, stateCopyEvery-2) // the newest first delivery's id
	arrival = g.base + newest*1000/g.rate
	conflict := false
	if r < stateCopyEvery-1 {
		id = grp*(stateCopyEvery-1) + r
	} else {
		id = newest - int64(mix(uint64(k))%uint64(min(newest+1, g.lookback)))
		conflict = grp%stateConflictEvery == 0
	}
	store = id % stateStores
	amount = 1 + int64(mix(uint64(id)+1)%10_000)
	if conflict {
		amount++
	}
	return id, store, amount, g.base + id*1000/g.rate, arrival
}

// Next implements source.Source.
func (g *stateGen) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	for range max {
		if g.next >= g.n {
			break
		}
		k := g.next
		g.next++
		id, store, amount, ts, at := g.event(k)
		if id >= g.ids {
			continue // a first delivery past the last id: none
		}
		r, m := b.Next(g.schema)
		for _, v := range []struct {
			f row.Field
			v int64
		}{{g.id, id}, {g.store, store}, {g.amount, amount}, {g.ts, ts}} {
			r.I[v.f.Slot] = v.v
			r.SetValid(v.f.Index)
		}
		m.Arrival = at
		m.Pos = changelog.Position{Source: "generated", Offset: k}
	}
	if g.next >= g.n {
		return source.End, nil
	}
	return source.More, nil
}

// Partitions implements source.Source: one.
func (g *stateGen) Partitions() []string { return g.partitions }

// Position implements source.Resumable: the next delivery's number (a
// run again from a checkpoint, --restart, continues after it).
func (g *stateGen) Position() []byte { return strconv.AppendInt(nil, g.next, 10) }

// Seek implements source.Resumable.
func (g *stateGen) Seek(_ context.Context, pos []byte) error {
	n, err := strconv.ParseInt(string(pos), 10, 64)
	if err != nil || n < 0 || n > g.n {
		return fmt.Errorf("bench state: position %q: want a delivery number in [0, %d]", pos, g.n)
	}
	g.next = n
	return nil
}

// EventJSON implements source.Source: the event of the delivery at
// m.Pos.Offset, as a JSON object. Safe for concurrent use (it reads only
// m and fields fixed at construction).
func (g *stateGen) EventJSON(dst []byte, m *source.Meta) []byte {
	id, store, amount, ts, _ := g.event(m.Pos.Offset)
	dst = append(dst, `{"event_id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"store":`...)
	dst = strconv.AppendInt(dst, store, 10)
	dst = append(dst, `,"amount":`...)
	dst = strconv.AppendInt(dst, amount, 10)
	dst = append(dst, `,"ts":"`...)
	dst = time.UnixMilli(ts).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	return append(dst, `"}`...)
}

// Close implements source.Source.
func (g *stateGen) Close() error { return nil }

// stateRate is the rate (events/s of event time) at which ids ids span
// ttl: no id expires before the last.
func stateRate(ids int64, ttl time.Duration) int64 {
	s := int64(ttl / time.Second)
	return max((ids+s-1)/s, 1)
}

// collect is a results sink that keeps every row as text.
type collect struct {
	mu   *sync.Mutex
	rows *[]string
}

func (c *collect) Write(_ context.Context, rows []changelog.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		var b strings.Builder
		fmt.Fprintf(&b, "%d %d %d", r.Op, r.WindowStart, r.Version)
		for _, v := range r.Key {
			b.WriteString(" " + v.String())
		}
		for _, v := range r.Values {
			b.WriteString(" " + v.String())
		}
		fmt.Fprintf(&b, " %t", r.IsFinal)
		*c.rows = append(*c.rows, b.String())
	}
	return nil
}
func (c *collect) Flush(context.Context) error { return nil }
func (c *collect) Close(context.Context) error { return nil }

// stateRunOnce runs bench state's pipeline once over ids ids, returning
// the summary, the result rows as text (sorted) when keep, and the count
// of rows.
func stateRunOnce(ctx context.Context, p *spec.Pipeline, ids, rate int64, parallelism, hot int, keep bool, stderr io.Writer, h *liveHeap) (*engine.Summary, []string, int64, error) {
	pl, err := tidemark.Compile(p)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("bench state: %w", err)
	}
	g, err := newStateGen(pl, ids, rate)
	if err != nil {
		return nil, nil, 0, err
	}
	var mu sync.Mutex
	var rows []string
	var count int64
	reg := engine.DefaultRegistry()
	reg.Results[blackholeType] = func(context.Context, spec.Sink, changelog.Desc, *engine.Env) (sink.Results, error) {
		if keep {
			return &collect{mu: &mu, rows: &rows}, nil
		}
		return &blackhole{rows: &count}, nil
	}
	reg.Records[blackholeType] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return &blackhole{rows: new(int64)}, nil
	}
	opts := benchOptions(reg, stderr, h)
	opts.Source = g
	opts.Parallelism = parallelism
	opts.HotTier = hot
	sum, err := engine.Run(ctx, pl, opts)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("bench state: %w", err)
	}
	slices.Sort(rows)
	if keep {
		count = int64(len(rows))
	}
	return sum, rows, count, nil
}

// stateCompare runs the sample on both backends and compares them.
func stateCompare(ctx context.Context, f stateBenchFlags, stderr io.Writer) (*stateSample, error) {
	rate := stateRate(f.sample, f.ttl)
	dir, err := os.MkdirTemp(f.dir, "tidemark-bench-state-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	h := newLiveHeap(nil)
	mem, memRows, _, err := stateRunOnce(ctx, statePipeline(f.ttl, "memory", 0, ""), f.sample, rate, f.parallelism, 0, true, stderr, h)
	if err != nil {
		return nil, err
	}
	disk, diskRows, _, err := stateRunOnce(ctx, statePipeline(f.ttl, "disk", spec.MinStateMemory, dir), f.sample, rate, f.parallelism, stateSampleHot, true, stderr, h)
	if err != nil {
		return nil, err
	}
	s := &stateSample{IDs: f.sample, Deliveries: mem.EventsRead, Rows: len(memRows), Duplicates: mem.Duplicates, Conflicts: mem.Conflicts}
	if d := disk.DiskState; d != nil {
		s.StoreReads, s.StoreHits = d.Reads, d.Hits
	}
	s.Equal = slices.Equal(memRows, diskRows) && mem.Duplicates == disk.Duplicates && mem.Conflicts == disk.Conflicts && mem.EventsRead == disk.EventsRead
	return s, nil
}

// rssSampler samples VmRSS every second until stopped, and the size of
// a directory every ten seconds (the stores are removed when the run
// ends).
type rssSampler struct {
	mu       sync.Mutex
	samples  []int64
	diskPeak int64
	stop     chan struct{}
	done     chan struct{}
}

func startRSS(dir string) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for i := 0; ; i++ {
			s.mu.Lock()
			s.samples = append(s.samples, procStatus("VmRSS"))
			if i%10 == 9 {
				s.diskPeak = max(s.diskPeak, dirBytes(dir))
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) end() []int64 {
	close(s.stop)
	<-s.done
	return append(s.samples, procStatus("VmRSS"))
}

// procStatus reads a "kB" line of /proc/self/status, in bytes (0 where
// unknown).
func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 2 && fs[1] == "kB" {
			if kb, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// stateMeasure is the measured run.
func stateMeasure(ctx context.Context, f stateBenchFlags, budget spec.Bytes, stderr io.Writer) (*stateRun, error) {
	rate := stateRate(f.ids, f.ttl)
	dir, err := os.MkdirTemp(f.dir, "tidemark-bench-state-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := statePipeline(f.ttl, "disk", budget, dir)
	if f.checkpoint > 0 {
		p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(dir, "checkpoints"), Interval: spec.Duration(f.checkpoint)}
		for i := range p.Sinks {
			p.Sinks[i].Delivery = "at_least_once" // the blackhole keeps nothing to commit
		}
		p.Conflicts.Sink.Delivery = "at_least_once"
		p.State.Dir = filepath.Join(dir, "state")
	}
	r := &stateRun{IDs: f.ids, Rate: rate, TTLSeconds: int64(f.ttl / time.Second), BudgetBytes: int64(budget), LimitBytes: int64(budget) * 115 / 100}
	runtime.GC()
	resetPeakRSS()
	rss := startRSS(p.State.Dir) // the stores only, not the checkpoints
	h := newLiveHeap(nil)
	c0 := cputime.Process()
	start := time.Now()
	sum, _, rows, err := stateRunOnce(ctx, p, f.ids, rate, f.parallelism, 0, false, stderr, h)
	wall := time.Since(start)
	samples := rss.end()
	if err != nil {
		return nil, err
	}
	r.Deliveries, r.Rows, r.Parallelism = sum.EventsRead, rows, sum.Parallelism
	r.Duplicates, r.Conflicts = sum.Duplicates, sum.Conflicts
	if d := sum.DiskState; d != nil {
		r.StoreReads, r.StoreHits, r.StoreWrites = d.Reads, d.Hits, d.Writes
		r.SentBytes = d.SentBytes
	}
	if f.checkpoint > 0 {
		c := sum.Checkpoints
		r.Checkpoints, r.CheckpointBytes, r.LongestSeconds = c.Taken, c.Bytes, c.Longest.Seconds()
		if d := sum.DiskState; d != nil {
			r.pauseFigures(d.Checkpoints)
		}
	}
	r.WallSeconds, r.CPUSeconds = wall.Seconds(), (cputime.Process() - c0).Seconds()
	r.EventsPerSec, r.EventsCore = ratio(float64(r.Deliveries), r.WallSeconds), ratio(float64(r.Deliveries), r.CPUSeconds)
	r.Samples = len(samples)
	r.PeakRSSBytes = max(procStatus("VmHWM"), slices.Max(samples))
	r.FileRSSBytes = fileRSS()
	for d := range 10 {
		lo, hi := d*len(samples)/10, (d+1)*len(samples)/10
		if hi > lo {
			r.RSSByDecile = append(r.RSSByDecile, slices.Max(samples[lo:hi]))
		}
	}
	r.DiskBytes = rss.diskPeak
	r.StateX = float64(f.ids*34) / float64(budget)
	r.Bounded = r.PeakRSSBytes <= r.LimitBytes
	for _, par := range f.restarts {
		if par == 0 {
			par = r.Parallelism
		}
		start := time.Now()
		sum, _, _, err := stateRunOnce(ctx, p, f.ids, rate, par, 0, false, stderr, newLiveHeap(nil))
		if err != nil {
			return nil, fmt.Errorf("bench state: the restart at %d tasks: %w", par, err)
		}
		rs := stateRestart{Parallelism: sum.Parallelism, WallSeconds: time.Since(start).Seconds(), Deliveries: sum.EventsRead}
		if d := sum.DiskState; d != nil {
			x := d.Restore
			rs.Stores, rs.Excised, rs.Tables, rs.TableBytes, rs.CopiedBytes = x.Stores, x.Excised, x.Tables, x.TableBytes, x.CopiedBytes
			rs.RestoreMs = float64(x.Duration) / float64(time.Millisecond)
		}
		if rs.Stores == 0 {
			return nil, fmt.Errorf("bench state: the restart at %d tasks restored no store", par)
		}
		r.Restarts = append(r.Restarts, rs)
	}
	return r, nil
}

func writeStateReport(w io.Writer, format string, rep *stateBenchReport) {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	m := rep.Machine
	fmt.Fprintf(w, "machine: %s, %d CPUs, GOMAXPROCS %d, %s/%s, %s\n", m.CPUModel, m.CPUs, m.GOMAXPROCS, m.OS, m.Arch, m.Go)
	if s := rep.Sample; s != nil {
		verdict := "equal"
		if !s.Equal {
			verdict = "DIFFERENT"
		}
		fmt.Fprintf(w, "sample: %s ids, %s deliveries: memory and disk (16MiB budget, 64KiB hot tiers) rows %s (%d rows, %s duplicates, %s conflicts; the disk run looked up %s ids in its store, %s found)\n",
			thousands(s.IDs), thousands(s.Deliveries), verdict, s.Rows, thousands(s.Duplicates), thousands(s.Conflicts), thousands(s.StoreReads), thousands(s.StoreHits))
	}
	if r := rep.Run; r != nil {
		fmt.Fprintf(w, "run: %s ids kept %ds at %s events/s of event time, %s deliveries, %d tasks, state.memory %s\n",
			thousands(r.IDs), r.TTLSeconds, thousands(r.Rate), thousands(r.Deliveries), r.Parallelism, bytesText(r.BudgetBytes))
		fmt.Fprintf(w, "  the ids in memory would be %s (34 bytes each): %.1f× the budget; the stores on disk at most %s (%.1f bytes per id)\n",
			bytesText(r.IDs*34), r.StateX, bytesText(r.DiskBytes), float64(r.DiskBytes)/float64(r.IDs))
		verdict := "bounded"
		if !r.Bounded {
			verdict = "NOT bounded"
		}
		fmt.Fprintf(w, "  peak RSS %s (file-mapped %s; the rest %s against the budget + disk.Overhead %s) against budget + 15%% %s: %s; %d samples, the largest per tenth of the run:",
			bytesText(r.PeakRSSBytes), bytesText(r.FileRSSBytes), bytesText(r.PeakRSSBytes-r.FileRSSBytes), bytesText(r.BudgetBytes+disk.Overhead(r.BudgetBytes)), bytesText(r.LimitBytes), verdict, r.Samples)
		for _, v := range r.RSSByDecile {
			fmt.Fprintf(w, " %s", bytesText(v))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %.0f s wall, %.0f s CPU: %s events/s, %s events/s/core; %s duplicates, %s conflicts, %s store lookups (%s found), %s ids written; %s rows\n",
			r.WallSeconds, r.CPUSeconds, count(r.EventsPerSec), count(r.EventsCore), thousands(r.Duplicates), thousands(r.Conflicts), thousands(r.StoreReads), thousands(r.StoreHits), thousands(r.StoreWrites), thousands(r.Rows))
		if r.Checkpoints > 0 {
			fmt.Fprintf(w, "  %d checkpoints: new tables sent %s, manifests and segments %s: %.3f× the new tables' bytes; the longest checkpoint %.3f s\n",
				r.Checkpoints, bytesText(r.SentBytes), bytesText(r.CheckpointBytes), ratio(float64(r.SentBytes+r.CheckpointBytes), float64(r.SentBytes)), r.LongestSeconds)
			fmt.Fprintf(w, "  synchronous pause (the tasks' write-back and their snapshots started) p50 %.1f ms, p99 %.1f ms, longest %.1f ms; new tables per checkpoint (median) %s\n",
				r.PauseP50Ms, r.PauseP99Ms, r.PauseMaxMs, bytesText(r.SentP50Bytes))
			fmt.Fprintf(w, "  the pause's parts p50/p99: write-back %.1f/%.1f ms, waits for the snapshot before %.1f/%.1f ms\n",
				r.WriteBackP50Ms, r.WriteBackP99Ms, r.WaitP50Ms, r.WaitP99Ms)
			fmt.Fprintf(w, "  the snapshots in the background p50/p99: memtable flush %.1f/%.1f ms, pebble checkpoint (links) %.1f/%.1f ms, listing %.1f/%.1f ms\n",
				r.FlushP50Ms, r.FlushP99Ms, r.CheckpointP50Ms, r.CheckpointP99Ms, r.ListP50Ms, r.ListP99Ms)
			fmt.Fprintf(w, "  the writer (at one task the router) p50/p99: waiting for the snapshots %.1f/%.1f ms, the upload (new tables synced and linked) %.1f/%.1f ms\n",
				r.SnapshotP50Ms, r.SnapshotP99Ms, r.UploadP50Ms, r.UploadP99Ms)
		}
		for _, x := range r.Restarts {
			fmt.Fprintf(w, "  restart at %d tasks from the latest checkpoint: restore %.1f ms (%d stores, %d excised, %d tables of %s, %s copied); the run %.1f s wall, %s records in (the checkpoint's and any after it)\n",
				x.Parallelism, x.RestoreMs, x.Stores, x.Excised, x.Tables, bytesText(x.TableBytes), bytesText(x.CopiedBytes), x.WallSeconds, thousands(x.Deliveries))
		}
	}
}
