package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// synthProfile builds a CPU profile whose samples have the given stacks
// (innermost first), 10 ms each times n, and goroutine labels.
func synthProfile(samples []synthSample) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for _, s := range samples {
		var locs []*profile.Location
		for _, frame := range s.stack {
			// A frame "a|b" is a location where a was inlined into b.
			var lines []profile.Line
			for _, fn := range strings.Split(frame, "|") {
				f := funcs[fn]
				if f == nil {
					f = &profile.Function{ID: uint64(len(funcs) + 1), Name: fn}
					funcs[fn] = f
					p.Function = append(p.Function, f)
				}
				lines = append(lines, profile.Line{Function: f})
			}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: lines}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		smp := &profile.Sample{Location: locs, Value: []int64{s.n, s.n * 10_000_000}}
		if s.g != "" {
			smp.Label = map[string][]string{goroutineLabel: {s.g}}
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}

type synthSample struct {
	stack []string
	n     int64
	g     string
}

const tm = "github.com/tidemark/tidemark/"

// TestPhasesOf classifies hand-made stacks, each phase's seconds worked
// out by hand: the innermost frame a rule matches decides, runtime and
// standard-library frames count for their caller, a GC frame anywhere
// makes the sample the collector's, inlined frames are read innermost
// first, and goroutines are told apart by the engine's label.
func TestPhasesOf(t *testing.T) {
	p := synthProfile([]synthSample{
		// A JSON line decoded on the router: read+decode (3 samples).
		{[]string{tm + "format.(*JSONDecoder).Decode", tm + "source/file.(*Source).Next", tm + "engine.(*runtime).routeAll"}, 3, "router"},
		// An allocation in the decoder counts for the decoder (1).
		{[]string{"runtime.mallocgc", "runtime.newobject", tm + "source/file.(*lineReader).next", tm + "engine.(*runtime).routeAll"}, 1, "router"},
		// A filter evaluated by the router's sender: front (2).
		{[]string{tm + "expr.(*Program).EvalBool", tm + "task.(*Sender).toStage", tm + "engine.(*runtime).record"}, 2, "router"},
		// The key group hash: xxHash counts for its caller, keygroup (1).
		{[]string{"github.com/cespare/xxhash/v2.Sum64", tm + "keygroup.OfKey", tm + "task.(*Sender).toStage"}, 1, "router"},
		// An item added to a packet inside the sender: exchange (2).
		{[]string{"runtime.memmove", tm + "task.(*Packet).bytes", tm + "task.(*Sender).toStage", tm + "engine.(*runtime).record"}, 2, "router"},
		// A generic chunk's next, inlined into the sender: exchange (1).
		{[]string{tm + "task.(*chunks[go.shape.struct]).next|" + tm + "task.(*Sender).toStage"}, 1, "router"},
		// The operator in a task (4); its map access counts for it (1).
		{[]string{tm + "operator.(*Op).Process", tm + "task.(*stageNode).item", tm + "task.(*Task).Process", tm + "engine.(*runtime).taskRound"}, 4, "task"},
		{[]string{"runtime.mapaccess2", tm + "dedup.(*Table).Lookup", tm + "task.(*dedupNode).item"}, 1, "task"},
		// A task waiting on its inbox's channel: exchange (1).
		{[]string{"runtime.chanrecv", "runtime.selectgo", tm + "engine.(*runtime).taskLoop.func1", tm + "engine.(*runtime).taskLoop"}, 1, "task"},
		// A GC assist in the operator's allocation: gc (2).
		{[]string{"runtime.scanobject", "runtime.gcDrainN", "runtime.gcAssistAlloc", "runtime.mallocgc", tm + "operator.(*Op).Process"}, 2, "task"},
		// The writer's sink: sinks (2); a changelog encoder on it (1).
		{[]string{tm + "internal/cli.(*blackhole).Write", tm + "engine.(*runtime).finishRound", tm + "engine.(*runtime).writerLoop"}, 2, "writer"},
		{[]string{tm + "changelog.(*Encoder).Row", tm + "engine.(*runtime).finishRound"}, 1, "writer"},
		// A snapshot runs the operator's code: checkpoints (1).
		{[]string{tm + "state.(*Encoder).Int", tm + "operator.(*Op).Snapshot", tm + "task.(*Task).Snapshot", tm + "engine.(*runtime).taskRound"}, 1, "task"},
		// An upstream row encoded into a packet: the encoder counts for
		// the packet, exchange (1).
		{[]string{tm + "state.(*Encoder).Value", tm + "task.encodeCR", tm + "task.(*Packet).putCR", tm + "task.(*Sender).toStage"}, 1, "task"},
		// A row's shape made by the decoder: read+decode (1).
		{[]string{tm + "row.(*Schema).Shape", tm + "source.(*Batch).Next", tm + "source/nexmark.(*Source).Next"}, 1, "router"},
		// The collector's worker, unlabelled: gc (3).
		{[]string{"runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.gcBgMarkWorker"}, 3, ""},
		// The scheduler alone: other (1).
		{[]string{"runtime.findRunnable", "runtime.schedule", "runtime.mcall"}, 1, ""},
	})
	ph, err := phasesOf(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		phaseRead:       0.05,
		phaseFront:      0.03,
		phaseExchange:   0.05,
		phaseOperators:  0.05,
		phaseGC:         0.05,
		phaseSinks:      0.03,
		phaseCheckpoint: 0.01,
		phaseOther:      0.01,
	}
	if len(ph.Seconds) != len(want) {
		t.Errorf("phases %v, want %v", ph.Seconds, want)
	}
	for k, v := range want {
		if got := ph.Seconds[k]; !near(got, v) {
			t.Errorf("%s: %.3f s, want %.3f s", k, got, v)
		}
	}
	wantG := map[string]float64{"router": 0.11, "task": 0.10, "writer": 0.03, "unlabelled": 0.04}
	if len(ph.Goroutines) != len(wantG) {
		t.Errorf("goroutines %v, want %v", ph.Goroutines, wantG)
	}
	for k, v := range wantG {
		if got := ph.Goroutines[k]; !near(got, v) {
			t.Errorf("goroutine %s: %.3f s, want %.3f s", k, got, v)
		}
	}
	if ph.Samples != 28 {
		t.Errorf("samples %d, want 28", ph.Samples)
	}
	if got := ph.serial(); !near(got, 14.0/28) {
		t.Errorf("serial share %.4f, want 14/28", got)
	}

	// Through the profile's encoding, as the bench reads it.
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ph2, err := phasesOf(q)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(ph)
	b, _ := json.Marshal(ph2)
	if !bytes.Equal(a, b) {
		t.Errorf("after encoding: %s, want %s", b, a)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestPhasesOfRefusesOtherProfiles: a heap profile has no CPU time.
func TestPhasesOfRefusesOtherProfiles(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	if _, err := phasesOf(p); err == nil || !strings.Contains(err.Error(), "cpu/nanoseconds") {
		t.Fatalf("err %v", err)
	}
}

// TestMedianPhases takes each phase's median over the runs (a phase
// absent from a run counts 0 there).
func TestMedianPhases(t *testing.T) {
	runs := []BenchRun{
		{Phases: &benchPhases{Seconds: map[string]float64{phaseRead: 1, phaseFront: 4}, Goroutines: map[string]float64{"router": 5}, Samples: 500}},
		{Phases: &benchPhases{Seconds: map[string]float64{phaseRead: 3}, Goroutines: map[string]float64{"router": 3}, Samples: 300}},
		{Phases: &benchPhases{Seconds: map[string]float64{phaseRead: 2, phaseFront: 1}, Goroutines: map[string]float64{"router": 2, "task": 1}, Samples: 300}},
		{}, // a run without a profile does not count
	}
	m := medianPhases(runs)
	if m.Seconds[phaseRead] != 2 || m.Seconds[phaseFront] != 1 || m.Goroutines["router"] != 3 || m.Goroutines["task"] != 0 || m.Samples != 300 {
		t.Fatalf("median %+v", m)
	}
	if medianPhases([]BenchRun{{}}) != nil {
		t.Fatal("phases without profiles")
	}
}
