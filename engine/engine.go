// Package engine is the runner (docs/parallelism.md, docs/ARCHITECTURE.md):
// it opens the source and the sinks, runs a compiled plan as parallel
// tasks over key groups (package task, the pure step function), and
// takes the checkpoints.
//
// Goroutines — all started in run (pipeline.go) and stopped before Run
// returns:
//
//   - the router (Run's own goroutine) reads the source in batches and,
//     per record, in arrival order: advances processing time (idleness,
//     early firings), checks what needs no state (decoding, the event
//     time, the backfill range, the contract's rules, a null event id or
//     entity), hands the record to the task owning its key group (of its
//     event id for dedup, of its entity for order_by, of its group key
//     for a stage), and observes its event time in the watermark tracker.
//     Every watermark advance and early firing becomes a marker every
//     task receives at its place in the sequence;
//   - one goroutine per task runs the task's nodes over each round (a
//     source batch) and exchanges packets of records with the other
//     tasks when a record changes key (dedup → stage, stage → stage);
//   - the writer writes each round's outputs — the router's and every
//     task's, merged in step order — to the sinks, flushes, feeds the
//     ledger sinks, and runs the checkpoint protocol.
//
// Processing time comes from each record's recorded arrival time when
// the source has one (file replay, arrival_time_field), otherwise from
// Options.Clock, read once per batch. For every key the tasks see the
// same records and watermarks, in the same order, whatever the number of
// tasks: results do not depend on the parallelism (docs/semantics.md,
// "Parallelism").
package engine

import (
	"github.com/tidemark/tidemark/internal/cputime"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// MaxPartitions bounds the source partitions of a run: each keeps a
// watermark, and the pipeline watermark is their minimum.
const MaxPartitions = 10_000

// Options configures a run. The zero value is usable.
type Options struct {
	// Clock returns the processing time in ms since the epoch for records
	// without a recorded arrival time. Default: the wall clock.
	Clock func() int64
	// Stdout receives stdout sinks. Default os.Stdout.
	Stdout io.Writer
	// Registry maps sink types to constructors. Default DefaultRegistry().
	Registry *Registry
	// Source replaces the source the spec describes (library use). It must
	// decode rows shaped by Plan.SourceSchema; its EventJSON must be safe
	// for concurrent use and rows must stay valid until their batch is
	// reset (source.Source).
	Source source.Source
	// Parallelism is the number of tasks. Default: the spec's parallelism,
	// else runtime.GOMAXPROCS(0); at most the pipeline's key groups.
	Parallelism int
	// BatchSize is the number of records read per source call (a round).
	// Default 1024.
	BatchSize int
	// Progress, when set, is called about every ProgressEvery records.
	Progress func(Progress)
	// ProgressEvery is in records. Default 200,000.
	ProgressEvery int64
	// FlushEvery is the number of rounds between sink flushes without
	// checkpoints. Default 512.
	FlushEvery int
	// FireChunk is the number of result rows a firing emits before they
	// go on (to the sinks, or to the tasks of the next stage): the memory
	// a firing of many windows holds. Default 4096.
	FireChunk int
	// ExchangeMemory bounds, in bytes, what the packets between tasks
	// hold (Summary.ExchangePeakBytes; docs/parallelism.md, "The
	// exchange"). Default 0: the pipeline's exchange_memory, else
	// DefaultExchangeMemory. Any positive value is taken, below the
	// pipeline key's least too: with a few bytes every sending node hands
	// on its packets after each check and waits until they are taken (the
	// tests' hardest schedule).
	ExchangeMemory int64

	// CheckpointNow, when the pipeline has checkpoints, makes the run take
	// one at the next batch boundary for every value received (a
	// savepoint on demand).
	CheckpointNow <-chan struct{}
	// WallClock times checkpoint intervals. Default time.Now.
	WallClock func() time.Time
	// Logf receives log lines (restores, unusable checkpoints). Default:
	// none. It is called from the runner's goroutines, one at a time.
	Logf func(format string, args ...any)
	// FaultHook, for crash tests, is called at named points of the
	// checkpoint protocol: "prepared" (sinks prepared, checkpoint not yet
	// written), "written" (checkpoint written, no sink committed),
	// "committed:<sink id>" (after that sink's commit) and
	// "applied:<ledger sink>" (after a ledger transaction), with the
	// checkpoint id.
	FaultHook func(point string, id int64)

	// Lineage makes every result row record where it comes from, in the
	// last column "lineage" (LineageColumn; Lineage.String): the
	// pipeline, its spec hash, the tidemark build, the contract's
	// schema_version and the reference data's version. `tidemark run`
	// sets it. Default false.
	Lineage bool
	// ReplayID tags a backfill's rows (the lineage's replay=…).
	ReplayID string

	// Range, when set, keeps only the records whose event time is in
	// [Range.From, Range.To) ms (a backfill); the others are counted
	// (Summary.OutsideRange) and skipped before the contract, dedup and
	// the stages, and do not move the watermark.
	Range *TimeRange

	// Live, when set, receives a snapshot of the run for monitoring
	// (package metrics): after a round at most every LiveEvery of
	// wall-clock time, after each checkpoint, and when the run ends. It is
	// called on the writer's goroutine: it must return quickly.
	Live func(*Live)
	// LiveEvery is the least wall-clock time between two snapshots.
	// Default 1s.
	LiveEvery time.Duration
	// InstanceID names this instance of a group run (source.assignment:
	// group): its static membership in the consumer group (a restart
	// with the same id takes its partitions back without a rebalance) and
	// its transactional id. Default: none (a random name; dynamic
	// membership).
	InstanceID string

	// HotKeys is how many of each stage's keys holding the most state a
	// snapshot lists (Live.Stages[].HotKeys). Default 0: none (listing
	// walks every key).
	HotKeys int

	// HotTier overrides, on the disk backend, each task's hot-tier budget
	// in bytes (state.memory's share otherwise: docs/state.md, "Memory"):
	// tests and benchmarks make it small to send lookups to the store.
	// Default 0: the budget's share.
	HotTier int
	// StateFS is the file system of the disk backend's stores (tests
	// inject faults with pebble's errorfs). Default: the operating
	// system's.
	StateFS vfs.FS
	// SetMemoryLimit lets a run on the disk backend set the process's Go
	// memory limit (GOMEMLIMIT, debug.SetMemoryLimit) to its budget plus
	// the overhead (disk.Budget.MemoryLimit; a lower limit already set is
	// kept) for the run's duration, restoring the previous limit at the
	// end: without cgo pebble's block cache and memtables are on the Go
	// heap, and the limit keeps the heap within state.memory
	// (docs/state.md, "Memory"). A process-wide setting, so a library
	// caller asks for it: the CLI's run, bench and backfill do. Default
	// false: the limit is the caller's (disk.Split(state.memory,
	// tasks).MemoryLimit() gives the value).
	SetMemoryLimit bool

	// Group runs a plan whose source has assignment: group (IsGroup) as
	// one instance of its group: Run hands it the plan and the options
	// with their defaults. The face sets it to package engine/group's Run;
	// the engine imports no group code. Default nil: Run refuses such a
	// plan with a ConfigError.
	Group func(ctx context.Context, p *plan.Plan, opts Options) (*Summary, error)
}

// TimeRange is an interval of event time, [From, To) in ms since the epoch.
type TimeRange struct{ From, To int64 }

// Progress is a progress report during a run.
type Progress struct {
	Events    int64         // records read so far
	Watermark int64         // pipeline watermark (ms)
	Elapsed   time.Duration // wall time since the start
	// Done and Total measure the input read so far when the source knows
	// its size (files: bytes; the Nexmark generator: events); Total is 0
	// otherwise (an unbounded log).
	Done, Total int64
}

// IsGroup reports whether p runs as one instance of a group of processes
// sharing a Kafka consumer group (source.type: kafka, source.assignment:
// group; docs/scale-out.md): Run hands such a plan to Options.Group.
func IsGroup(p *plan.Plan) bool {
	sp := p.Spec.Source
	return sp.Type == "kafka" && sp.Assignment == "group"
}

// WithDefaults returns opts with every unset field given the default its
// doc states (Run applies it; a group runner given opts by Run receives them
// applied).
func (opts Options) WithDefaults() Options {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Registry == nil {
		opts.Registry = DefaultRegistry()
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1024
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 200_000
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = 512
	}
	if opts.WallClock == nil {
		opts.WallClock = time.Now
	}
	if opts.LiveEvery <= 0 {
		opts.LiveEvery = time.Second
	}
	return opts
}

// Run executes the plan until the source is exhausted (a bounded input) or
// ctx is cancelled, and returns the summary. Errors: a source or sink
// failure, an aggregate overflow, or ctx's error; sinks are closed either
// way, and every goroutine the run started has stopped.
func Run(ctx context.Context, p *plan.Plan, opts Options) (sum *Summary, err error) {
	opts = opts.WithDefaults()
	if IsGroup(p) {
		if opts.Group == nil {
			return nil, &ConfigError{Err: fmt.Errorf("source.assignment: group: this caller runs no group of instances (Options.Group: the runner of package engine/group)")}
		}
		return opts.Group(ctx, p, opts)
	}
	start := time.Now()
	cpu0 := cputime.Process()
	rt := &runtime{plan: p, opts: opts, now: changelog.WatermarkNone}
	defer func() {
		if cerr := rt.close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := rt.open(ctx); err != nil {
		rt.refuseStart(ctx)
		return nil, rt.startError(ctx, "opening the source and the sinks", err)
	}
	if rt.ck != nil {
		if err := rt.restore(ctx); err != nil {
			rt.refuseStart(ctx)
			return nil, rt.startError(ctx, "restoring the newest checkpoint", err)
		}
		rt.ck.last = opts.WallClock()
		rt.ck.lastRouted = rt.ck.last
	}
	if rt.disk != nil && rt.disk.tasks == nil {
		if err := rt.freshStores(); err != nil {
			rt.refuseStart(ctx)
			return nil, rt.startError(ctx, "opening the state stores", err)
		}
	}
	stopped, err := rt.run(ctx)
	if err != nil {
		var rf *startRefusal
		if errors.As(err, &rf) {
			rt.refuseStart(ctx)
		}
		return nil, err
	}
	if c, ok := rt.src.(interface{ CommitOffsets(context.Context) error }); ok && rt.ck != nil {
		// The last checkpoint's positions, for lag monitoring (Kafka's
		// consumer group); not part of the protocol, so only logged.
		if err := c.CommitOffsets(context.WithoutCancel(ctx)); err != nil {
			rt.logf("committing the source's offsets for monitoring: %v", err)
		}
	}
	s := rt.summary()
	s.Stopped = stopped
	s.Wall = time.Since(start)
	s.CPU = cputime.Process() - cpu0
	return s, nil
}

// runtime is one run: the router's state (read by the router goroutine,
// and by the writer only for what the router hands it), the sinks (the
// writer's), and the tasks (each its goroutine's).
type runtime struct {
	// exchangePeak is the most bytes the packets between tasks held at
	// once (Summary.ExchangePeakBytes).
	exchangePeak int64
	// qshare counts for quarantine.max_fraction (nil without it).
	qshare *quarantineShare
	plan   *plan.Plan
	opts   Options
	env    Env
	src    source.Source
	g      *task.Graph
	tasks  []*task.Task
	par    int // tasks
	// disk is the disk state backend (state.go); nil on the memory
	// backend.
	disk *diskState

	// The router's state.
	tracker *watermark.Tracker
	rules   routerRules // timestamp rules, partition registration (router.go)
	etField row.Field
	// ptField is source.processing_time_field's field (Index −1 without).
	ptField row.Field
	now     int64 // processing time, ms (monotone)
	wm      int64 // pipeline watermark last handed to the tasks
	parts   int   // partitions registered with the tracker
	step    uint64
	// early holds each stage's early-firing schedule (nil without early
	// firings): the router fires them for every task at once.
	early    []*operator.EarlySchedule
	anyEarly bool // some stage of early has a schedule
	// midTxn: the source's records so far end inside an upstream
	// transaction (source.Transactional), read before each Next.
	midTxn        bool
	bounds        timeBounds // the timestamp rules' bounds (timeOK)
	events        int64
	redeliver     int64
	outside       int64 // records outside Options.Range
	resumedEvents int64 // records read before the restored checkpoint
	present       []bool
	absent        int
	// split is the source when its batches are decoded on decoder
	// goroutines (decoders.go); srcKnown and srcPos are then what the
	// source knew after the claim of the batch being routed: its
	// partitions (len(Partitions())) and, with checkpoints, its position.
	split    source.Splitter
	srcKnown int
	srcPos   []byte
	// groupMarker takes the router's markers in a group run's source task
	// (PartRouter).
	groupMarker func(task.Marker)
	// keyWatch and keyChecked: engine/keycheck.go.
	keyWatch         []keyWatch
	keyChecked       []bool // per input
	ref              *reference
	ins              []*inputRT // a run with several inputs: every input, the source first (inputs.go)
	cur              *routerOut // the round being routed
	inline           bool       // one task: it and the writer run on the router's goroutine
	wctx             context.Context
	entryIdx         []int           // node → index in Graph.Entry, −1
	xc               *xchg           // the exchange between tasks (nil at one task)
	written          int             // rounds written
	bundle           *taskOut        // push mode: the task's buffers of the round
	linRows          []changelog.Row // push mode: rows with the lineage value
	linVals          []row.Value
	pushErr          error // push mode: the first error of a node
	rsnd             *task.Sender
	rcnt             task.Counters // the router's counts of the current round
	rlog             *task.Log     // the router's log of the current round
	markers          []task.Marker
	rounds           uint64
	lastLive         time.Time
	nextProgress     int64
	progressStart    time.Time
	keyEncoded       []byte
	idText           []byte
	firstKeyCheck    bool
	keyCheckStageNil []bool

	// The sinks.
	stages     []*stage
	quarantine sink.Records
	conflictS  sink.Records
	ledgers    []*ledgerSink
	ck         *ckState // nil without checkpoints
	linVal     row.Value

	// The writer's totals.
	cnt      task.Counters
	opGlob   task.Globals // the operators' globals after the last round
	stats    []task.StageStats
	dedupIDs int
	dedupMem int
	commits  []SinkCommit // sink commits since the last snapshot
	wrows    []changelog.Row
	closed   bool
	release  func() // releases the outputs' locks
	// created: the output files and directories that did not exist
	// before the run (undo.go), removed when the start is refused.
	created *startFiles
	// aborting: close aborts the sinks (a refused start).
	aborting bool
	finalWM  int64
	rtLive   routerLive // the router's part of the newest snapshot

	// pre is the front of the batch being routed that its decoder
	// computed (prefront.go), nil when the router runs it; preI is the
	// index of the record being routed in that batch.
	pre  *preBatch
	preI int
}

// stage is the runtime of one plan stage: its sinks.
type stage struct {
	p       *plan.Stage
	sinks   []sink.Results
	late    sink.Records
	ledger  []*ledgerSink // postgres sinks in mode ledger (also in sinks)
	contrib sink.Records  // contributions.sink: the events behind the rows
	// unionSinks are the sinks of the union stages uniting this stage
	// (plan.Stage.Union), written its rows after its own; they are
	// flushed and committed as their union stage's.
	unionSinks []sink.Results
}

// parallelism resolves the number of tasks: Options, the spec, the CPUs.
func (rt *runtime) parallelism() int {
	n := rt.opts.Parallelism
	if n <= 0 {
		n = rt.plan.Spec.Parallelism
	}
	if n <= 0 {
		n = goruntime.GOMAXPROCS(0)
	}
	return min(max(n, 1), rt.plan.Spec.EffectiveKeyGroups())
}

// refuseStart ends a run whose start failed (open or restore), before
// any record was read: the sinks are closed without publishing anything
// (sink.Aborter where a sink implements it), the locks released, and the
// output files and directories the start created removed, so that the
// refusal leaves the file system as the run found it.
func (rt *runtime) refuseStart(ctx context.Context) {
	rt.aborting = true
	rt.close(context.WithoutCancel(ctx))
	rt.created.undo()
}

func (rt *runtime) close(ctx context.Context) error {
	if rt.closed {
		return nil
	}
	rt.closed = true
	var errs []error
	closeSink := func(s interface{ Close(context.Context) error }) {
		if a, ok := s.(sink.Aborter); ok && rt.aborting {
			errs = append(errs, a.Abort(ctx))
			return
		}
		errs = append(errs, s.Close(ctx))
	}
	for _, st := range rt.stages {
		for _, s := range st.sinks {
			closeSink(s)
		}
		if st.late != nil {
			closeSink(st.late)
		}
		if st.contrib != nil {
			closeSink(st.contrib)
		}
	}
	if rt.quarantine != nil {
		closeSink(rt.quarantine)
	}
	if rt.conflictS != nil {
		closeSink(rt.conflictS)
	}
	if rt.src != nil && rt.opts.Source == nil {
		errs = append(errs, rt.src.Close())
	}
	errs = append(errs, rt.closeInputs())
	errs = append(errs, rt.closeDiskState())
	if rt.release != nil {
		rt.release() // the output locks, after every output is closed
	}
	return errors.Join(errs...)
}

// logf writes a log line through Options.Logf, if set.
func (rt *runtime) logf(format string, args ...any) {
	if rt.opts.Logf != nil {
		logMu.Lock()
		defer logMu.Unlock()
		rt.opts.Logf(format, args...)
	}
}

// fault calls Options.FaultHook, if set, at a named point of the protocol.
func (rt *runtime) fault(point string, id int64) {
	if rt.opts.FaultHook != nil {
		rt.opts.FaultHook(point, id)
	}
}

var errNoSource = fmt.Errorf("no source")
