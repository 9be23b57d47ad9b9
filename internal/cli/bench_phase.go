package cli

import (
	"bytes"
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/google/pprof/profile"
)

// The phases a run's CPU time is split into (benchPhases), in the order
// the report lists them: a record is read and decoded (read+decode),
// goes through the stateless front — the router's checks, the contract,
// timestamp rules, filters, derived fields, key extraction and the key
// group hash, the watermark (front) —, then through the keyed state of
// its key groups (operators: dedup, order_by, windows, joins), crossing
// between goroutines in packets (exchange: packets, merging, channel
// hand-offs), and its results are written (sinks: logs, encoders, sinks,
// the writer). checkpoints is the snapshot and manifest work, gc the
// garbage collector's marking and sweeping (assists included), other what
// fits none (the scheduler, idle spinning, the bench itself).
const (
	phaseRead       = "read+decode"
	phaseFront      = "front"
	phaseOperators  = "operators"
	phaseExchange   = "exchange"
	phaseSinks      = "sinks"
	phaseCheckpoint = "checkpoints"
	phaseGC         = "gc"
	phaseOther      = "other"
)

// phaseOrder is the order of the phases in the report.
var phaseOrder = []string{phaseRead, phaseFront, phaseOperators, phaseExchange, phaseSinks, phaseCheckpoint, phaseGC, phaseOther}

// phaseRule maps the functions whose names start with prefix (after the
// module path is cut) to a phase.
type phaseRule struct {
	prefix string
	phase  string
}

// tidemarkModule is cut from function names before the rules match.
const tidemarkModule = "github.com/tidemark/tidemark/"

// phaseRules classify a stack frame; the first matching rule wins, so
// the specific functions of a package come before the package. A stack
// is classified by its innermost frame that some rule matches: a
// runtime function (allocation, a channel operation, a map) counts for
// the code that called it. The functions were read from the packages
// (docs/ARCHITECTURE.md); a renamed function falls to its package's
// rule, and an unknown one to "other", which the report shows.
var phaseRules = []phaseRule{
	// The exchange between goroutines: packets, their chunks, the
	// merging of a node's inputs, rounds and packets handed over.
	{"task.(*Packet)", phaseExchange},
	{"task.(*chunks", phaseExchange},
	{"task.(*valChunks)", phaseExchange},
	{"task.(*crScratch)", phaseExchange},
	{"task.orderLess", phaseExchange},
	{"task.encodeCR", phaseExchange},
	{"task.decodeCR", phaseExchange},
	{"task.appendChild", phaseExchange},
	{"task.appendFiring", phaseExchange},
	{"task.merge", phaseExchange},
	{"task.(*merger)", phaseExchange},
	{"engine.(*runtime).taskLoop", phaseExchange},
	{"engine.(*runtime).taskRound", phaseExchange},
	{"engine.(*runtime).beginRound", phaseExchange},
	{"engine.(*runtime).endRound", phaseExchange},
	{"engine.(*runtime).routeAll", phaseExchange},
	{"engine.(*runtime).readAhead", phaseExchange},
	{"engine.(*pipeline)", phaseExchange},
	{"engine.releaseBatches", phaseExchange},

	// The stateless front: the router and the senders' stage fronts.
	{"task.(*Sender)", phaseFront},
	{"task.evaluate", phaseFront},
	{"task.derive", phaseFront},
	{"task.inputRow", phaseFront},
	{"task.storeField", phaseFront},
	{"task.storeSameKind", phaseFront},
	{"task.setField", phaseFront},
	{"task.setIntField", phaseFront},
	{"task.OrderKey", phaseFront},
	{"engine.(*runtime).routeBatch", phaseFront},
	{"engine.(*runtime).record", phaseFront},
	{"engine.(*runtime).tick", phaseFront},
	{"engine.(*runtime).advance", phaseFront},
	{"engine.(*runtime).marker", phaseFront},
	{"engine.(*runtime).addPartitions", phaseFront},
	{"engine.(*runtime).timeOK", phaseFront},
	{"engine.(*runtime).setBounds", phaseFront},
	{"engine.(*runtime).checkTime", phaseFront},
	{"engine.(*runtime).checkFirstBatch", phaseFront},
	{"engine.(*reference)", phaseFront},
	{"engine.brokenTimeRule", phaseFront},
	{"engine.checkTimeRules", phaseFront},
	{"contract.", phaseFront},
	{"expr.", phaseFront},
	{"watermark.", phaseFront},
	{"keygroup.", phaseFront},
	{"dedup.IDHash", phaseFront},
	{"github.com/expr-lang/", phaseFront},

	// Results and side outputs on their way out.
	{"task.(*Log)", phaseSinks},
	{"changelog.", phaseSinks},
	{"sink/", phaseSinks},
	{"sink.", phaseSinks},
	{"engine.(*runtime).writerLoop", phaseSinks},
	{"engine.(*runtime).finishRound", phaseSinks},
	{"engine.(*runtime).write", phaseSinks},
	{"engine.(*runtime).Write", phaseSinks},
	{"engine.(*runtime).flush", phaseSinks},
	{"engine.(*runtime).inlineRound", phaseSinks},
	{"internal/cli.(*blackhole)", phaseSinks},
	{"modernc.org/", phaseSinks},
	{"github.com/jackc/", phaseSinks},

	// Reading and decoding.
	{"source.", phaseRead},
	{"source/", phaseRead},
	{"format.", phaseRead},
	{"format/", phaseRead},
	{"eventtime.", phaseRead},
	{"engine.(*runtime).routeInputs", phaseRead},
	{"github.com/valyala/fastjson", phaseRead},
	{"github.com/twmb/franz-go", phaseRead},
	{"bufio.", phaseRead},
	{"os.", phaseRead},
	{"io.", phaseRead},
	{"syscall.", phaseRead},
	{"internal/poll.", phaseRead},

	// The keyed state: the tasks' nodes and the operators under them.
	{"task.", phaseOperators},
	{"operator.", phaseOperators},
	{"window.", phaseOperators},
	{"aggregate.", phaseOperators},
	{"dedup.", phaseOperators},
	{"join.", phaseOperators},
}

// anywhereRules classify a stack by any of its frames, before
// phaseRules: the garbage collector's work (a mark worker, an assist in
// an allocation, sweeping) and a checkpoint's (whose snapshots run the
// operators' code) wherever they run.
var anywhereRules = []phaseRule{
	// The garbage collector, wherever it runs.
	{"runtime.gcBgMarkWorker", phaseGC},
	{"runtime.gcAssistAlloc", phaseGC},
	{"runtime.gcDrain", phaseGC},
	{"runtime.bgsweep", phaseGC},
	{"runtime.bgscavenge", phaseGC},
	{"runtime.markroot", phaseGC},
	{"runtime.scanobject", phaseGC},
	{"runtime.sweepone", phaseGC},
	{"runtime.(*mspan).sweep", phaseGC},
	{"runtime.gcStart", phaseGC},
	{"runtime.gcMarkDone", phaseGC},
	{"runtime.gcMarkTermination", phaseGC},

	{"checkpoint.", phaseCheckpoint},
	{"task.(*Task).Snapshot", phaseCheckpoint},
	{"engine.(*runtime).takeCheckpoint", phaseCheckpoint},
	{"engine.(*runtime).checkpointOnce", phaseCheckpoint},
	{"engine.(*runtime).routerState", phaseCheckpoint},
	{"engine.(*runtime).encodeManifest", phaseCheckpoint},
	{"engine.(*runtime).prune", phaseCheckpoint},
}

// classifyFrame returns the phase of one frame (module path cut) by
// rules, "" when none matches.
func classifyFrame(rules []phaseRule, fn string) string {
	for _, r := range rules {
		if strings.HasPrefix(fn, r.prefix) {
			return r.phase
		}
	}
	return ""
}

// classifyStack returns the phase of a stack of function names, innermost
// first: the innermost frame anywhereRules match, else the innermost
// frame phaseRules match; a stack neither matches (the scheduler alone)
// is other.
func classifyStack(stack []string) string {
	for _, fn := range stack {
		if ph := classifyFrame(anywhereRules, strings.TrimPrefix(fn, tidemarkModule)); ph != "" {
			return ph
		}
	}
	for _, fn := range stack {
		if ph := classifyFrame(phaseRules, strings.TrimPrefix(fn, tidemarkModule)); ph != "" {
			return ph
		}
	}
	return phaseOther
}

// goroutineLabel is the pprof label the engine puts on its goroutines
// (engine.GoroutineLabel): router, task, writer, reader or decoder.
const goroutineLabel = "tidemark"

// benchPhases is where one run's CPU time went, from its CPU profile.
type benchPhases struct {
	// Seconds is CPU seconds per phase (phaseOrder's names).
	Seconds map[string]float64 `json:"seconds"`
	// Goroutines is CPU seconds per kind of goroutine (the engine's
	// label: router, task, writer, reader, decoder; "unlabelled" for the
	// runtime's own, such as the garbage collector's workers).
	Goroutines map[string]float64 `json:"goroutines"`
	// Samples is the number of profile samples (100 per CPU second): the
	// shares are good to about 1/sqrt(Samples) of themselves.
	Samples int64 `json:"samples"`
}

// phasesOf splits profile p's CPU samples into phases and goroutines.
// Errors: a profile without a CPU time sample type.
func phasesOf(p *profile.Profile) (benchPhases, error) {
	vi, ci := -1, -1
	for i, st := range p.SampleType {
		switch {
		case st.Type == "cpu" && st.Unit == "nanoseconds":
			vi = i
		case st.Type == "samples" && st.Unit == "count":
			ci = i
		}
	}
	if vi < 0 {
		return benchPhases{}, fmt.Errorf("CPU profile without a cpu/nanoseconds sample type")
	}
	ph := benchPhases{Seconds: map[string]float64{}, Goroutines: map[string]float64{}}
	var stack []string
	for _, s := range p.Sample {
		stack = stack[:0]
		for _, loc := range s.Location {
			// Line[0] is the innermost of the functions inlined there.
			for _, ln := range loc.Line {
				if ln.Function != nil {
					stack = append(stack, ln.Function.Name)
				}
			}
		}
		sec := float64(s.Value[vi]) / 1e9
		ph.Seconds[classifyStack(stack)] += sec
		g := "unlabelled"
		if v := s.Label[goroutineLabel]; len(v) > 0 {
			g = v[0]
		}
		ph.Goroutines[g] += sec
		if ci >= 0 {
			ph.Samples += s.Value[ci]
		}
	}
	return ph, nil
}

// cpuRecorder records a CPU profile of one run at a time and keeps the
// profiles for --cpuprofile.
type cpuRecorder struct {
	buf  bytes.Buffer
	keep []*profile.Profile
	on   bool
}

// start begins a run's profile.
func (c *cpuRecorder) start() error {
	c.buf.Reset()
	if err := pprof.StartCPUProfile(&c.buf); err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	c.on = true
	return nil
}

// stop ends the run's profile.
func (c *cpuRecorder) stop() {
	if c.on {
		pprof.StopCPUProfile()
		c.on = false
	}
}

// parse reads the profile stop ended, keeps it and returns its phases.
func (c *cpuRecorder) parse() (benchPhases, error) {
	p, err := profile.Parse(&c.buf)
	if err != nil {
		return benchPhases{}, fmt.Errorf("CPU profile: %w", err)
	}
	c.keep = append(c.keep, p)
	return phasesOf(p)
}

// write merges the runs' profiles into w (--cpuprofile).
func (c *cpuRecorder) write(w io.Writer) error {
	if len(c.keep) == 0 {
		return nil
	}
	m, err := profile.Merge(c.keep)
	if err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	return m.Write(w)
}

// medianPhases is each phase's and goroutine's median over the runs that
// have phases (nil when none has).
func medianPhases(runs []BenchRun) *benchPhases {
	var with []*benchPhases
	for i := range runs {
		if runs[i].Phases != nil {
			with = append(with, runs[i].Phases)
		}
	}
	if len(with) == 0 {
		return nil
	}
	med := func(get func(*benchPhases) float64) float64 {
		v := make([]float64, len(with))
		for i, p := range with {
			v[i] = get(p)
		}
		slices.Sort(v)
		return median(v)
	}
	out := &benchPhases{Seconds: map[string]float64{}, Goroutines: map[string]float64{}}
	for _, p := range with {
		for k := range p.Seconds {
			out.Seconds[k] = 0
		}
		for k := range p.Goroutines {
			out.Goroutines[k] = 0
		}
	}
	for k := range out.Seconds {
		out.Seconds[k] = med(func(p *benchPhases) float64 { return p.Seconds[k] })
	}
	for k := range out.Goroutines {
		out.Goroutines[k] = med(func(p *benchPhases) float64 { return p.Goroutines[k] })
	}
	out.Samples = int64(med(func(p *benchPhases) float64 { return float64(p.Samples) }))
	return out
}

// total is the profiled CPU seconds.
func (p *benchPhases) total() float64 {
	var t float64
	for _, v := range p.Seconds {
		t += v
	}
	return t
}

// serial is the share of the profiled CPU spent on the run's serial
// goroutines (the router and the writer: one each).
func (p *benchPhases) serial() float64 {
	return ratio(p.Goroutines["router"]+p.Goroutines["writer"], p.total())
}

// goroutineOrder is the order of the goroutine kinds in the report.
var goroutineOrder = []string{"router", "reader", "decoder", "task", "writer", "unlabelled"}

// writePhases writes the median CPU by phase and by goroutine of each
// series that has phases: nanoseconds of CPU per event read, and share
// of the profiled CPU.
func writePhases(w io.Writer, series []*benchSeries) {
	var with []*benchSeries
	for _, s := range series {
		if s.Median.Phases != nil && s.Median.Events > 0 {
			with = append(with, s)
		}
	}
	if len(with) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCPU by phase (medians over the runs' CPU profiles: ns of CPU per event, share of the profiled CPU):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "\t"
	for _, s := range with {
		head += s.Name + "\t\t"
	}
	fmt.Fprintln(tw, head)
	row := func(label string, get func(*benchPhases) float64, s0 []*benchSeries) {
		line := label + "\t"
		for _, s := range s0 {
			p := s.Median.Phases
			v := get(p)
			line += fmt.Sprintf("%.0f ns\t%.1f %%\t", v*1e9/float64(s.Median.Events), 100*ratio(v, p.total()))
		}
		fmt.Fprintln(tw, line)
	}
	known := map[string]bool{}
	for _, ph := range phaseOrder {
		known[ph] = true
		row(ph, func(p *benchPhases) float64 { return p.Seconds[ph] }, with)
	}
	row("total", (*benchPhases).total, with)
	fmt.Fprintln(tw, "by goroutine"+strings.Repeat("\t", 1+2*len(with)))
	for _, g := range goroutineOrder {
		any := false
		for _, s := range with {
			any = any || s.Median.Phases.Goroutines[g] > 0
		}
		if any {
			row(g, func(p *benchPhases) float64 { return p.Goroutines[g] }, with)
		}
	}
	line := "serial (router + writer)\t"
	samples := "samples\t"
	for _, s := range with {
		line += fmt.Sprintf("\t%.1f %%\t", 100*s.Median.Phases.serial())
		samples += fmt.Sprintf("%d\t\t", s.Median.Phases.Samples)
	}
	fmt.Fprintln(tw, line)
	fmt.Fprintln(tw, samples)
	tw.Flush()
}
