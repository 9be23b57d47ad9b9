package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/goccy/go-yaml"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// scenarioClock is the processing time of scenario records without a
// recorded arrival time, and so the time a scenario's run starts (against
// which event_time.max_future judges them): 2027-01-01T00:00:00Z, after
// every scenario's events.
var scenarioClock = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// TestScenarios runs the scenario files in testdata/scenarios. Each file
// holds commands:
//
//	pipeline        the pipeline YAML (no source path: the harness writes
//	                the records of `run` to a file); prints "ok" or errors
//	run [emit=M] [lateness=D] [kind=K] [policy=P] [idle=D] [ooo=D] [dates]
//	                JSON records in arrival order; prints every emitted row,
//	                late and quarantined record, then the counters; a line
//	                "NAME: {…}" is a record of input NAME (inputs[]); in a
//	                pipeline with stages, emit, lateness and kind set the
//	                join stages'
//
// Rows print as: op [window_start, window_end) key… | aggregates | version
// [final] wm=watermark_at, times in the window's zone (with the date when
// `dates` is given). Rewrite expectations with -rewrite.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		var pipelineYAML string
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "pipeline":
				pipelineYAML = td.Input
				if _, err := scenarioSpec(t, pipelineYAML, td, t.TempDir()); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "run":
				return runScenario(t, pipelineYAML, td)
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

func scenarioSpec(t *testing.T, y string, td *datadriven.TestData, dir string) (*spec.Pipeline, error) {
	var p spec.Pipeline
	if err := yaml.UnmarshalWithOptions([]byte(y), &p, yaml.DisallowUnknownField()); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = "scenario"
	}
	p.Source.Type = "file"
	p.Source.Path = filepath.Join(dir, "input.jsonl")
	p.Source.Format = "jsonl"
	for i := range p.Inputs {
		in := &p.Inputs[i]
		in.Source.Type, in.Source.Format = "file", "jsonl"
		in.Source.Path = filepath.Join(dir, in.Name+".jsonl")
	}
	// In a pipeline with stages, emit, lateness and kind apply to its
	// join stages.
	joins := func(f func(st *spec.Stage)) bool {
		n := 0
		for i := range p.Stages {
			if p.Stages[i].Join != nil {
				f(&p.Stages[i])
				n++
			}
		}
		return n > 0
	}
	for _, a := range td.CmdArgs {
		switch a.Key {
		case "emit":
			if !joins(func(st *spec.Stage) { st.Emit.Mode = a.Vals[0] }) {
				p.Emit.Mode = a.Vals[0]
			}
		case "kind":
			joins(func(st *spec.Stage) { st.Join.Kind = a.Vals[0] })
		case "lateness":
			d, err := time.ParseDuration(a.Vals[0])
			if err != nil {
				t.Fatal(err)
			}
			if !joins(func(st *spec.Stage) { st.AllowedLateness = spec.Duration(d) }) {
				p.AllowedLateness = spec.Duration(d)
			}
		case "policy":
			p.Late.Policy = a.Vals[0]
		case "idle":
			d, _ := time.ParseDuration(a.Vals[0])
			p.EventTime.IdleTimeout = spec.Duration(d)
		case "ooo":
			d, _ := time.ParseDuration(a.Vals[0])
			p.EventTime.OutOfOrderness = spec.Duration(d)
		}
	}
	// Capture every output in memory.
	if len(p.Stages) == 0 {
		p.Sinks = []spec.Sink{{Type: "capture"}}
		if p.Late.Policy != "drop" {
			p.Late.Policy = "side_output"
			p.Late.Sink = &spec.Sink{Type: "capture"}
		}
	}
	for i := range p.Stages {
		p.Stages[i].Sinks = []spec.Sink{{Type: "capture"}}
		if p.Stages[i].Late.Policy != "drop" {
			p.Stages[i].Late.Policy = "side_output"
			p.Stages[i].Late.Sink = &spec.Sink{Type: "capture"}
		}
	}
	p.Quarantine.Sink = &spec.Sink{Type: "capture", Path: "quarantine"}
	p.Conflicts.Sink = &spec.Sink{Type: "capture", Path: "conflicts"}
	p.Defaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if _, err := plan.Compile(&p, nil); err != nil {
		return nil, err
	}
	return &p, nil
}

// capture collects every output as text lines, in order.
type capture struct {
	prefix  bool // name the stage (multi-stage pipelines)
	lines   *[]string
	loc     *time.Location
	dates   bool
	desc    changelog.Desc
	refDate string
}

func (c *capture) t(ms int64) string {
	switch ms {
	case changelog.WatermarkInfinity:
		return "+inf"
	case changelog.WatermarkNone:
		return "-inf"
	}
	tm := time.UnixMilli(ms).In(c.loc)
	layout := "15:04"
	if tm.Second() != 0 || tm.Nanosecond() != 0 {
		layout = "15:04:05.999"
	}
	if c.dates {
		layout = "2006-01-02T" + layout + "Z07:00"
	}
	return tm.Format(layout)
}

func (c *capture) Write(_ context.Context, rows []changelog.Row) error {
	for _, r := range rows {
		var b strings.Builder
		if c.prefix {
			fmt.Fprintf(&b, "%s: ", c.desc.Stage)
		}
		fmt.Fprintf(&b, "%s [%s, %s)", r.Op.Short(), c.t(r.WindowStart), c.t(r.WindowEnd))
		for _, k := range r.Key {
			fmt.Fprintf(&b, " %s", k)
		}
		b.WriteString(" |")
		for i, v := range r.Values {
			fmt.Fprintf(&b, " %s=%s", c.desc.Values[i].Name, v)
		}
		fmt.Fprintf(&b, " | v%d", r.Version)
		if r.IsFinal {
			b.WriteString(" final")
		}
		fmt.Fprintf(&b, " wm=%s", c.t(r.WatermarkAt))
		*c.lines = append(*c.lines, b.String())
	}
	return nil
}
func (c *capture) Flush(context.Context) error { return nil }
func (c *capture) Close(context.Context) error { return nil }

// records captures side outputs as their JSON, summarised.
type records struct {
	lines *[]string
	kind  string
	cap   *capture
}

func (r *records) WriteRecord(_ context.Context, obj []byte) error {
	var m map[string]any
	if err := yaml.Unmarshal(obj, &m); err != nil {
		return err
	}
	switch r.kind {
	case "conflicts":
		*r.lines = append(*r.lines, fmt.Sprintf("conflict: event_id=%v first=%s new=%s event_time=%s",
			m["event_id"], compactJSON(m["first_payload"]), compactJSON(m["new_payload"]), m["event_time"]))
	case "late":
		ts, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(m["event_time"]))
		wm, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(m["current_watermark"]))
		line := fmt.Sprintf("late: event_time=%s watermark=%s lateness_ms=%v event=%s",
			r.cap.t(ts.UnixMilli()), r.cap.t(wm.UnixMilli()), m["lateness_ms"], compactJSON(m["event"]))
		if reason := fmt.Sprint(m["reason"]); strings.HasPrefix(reason, "left side") || strings.HasPrefix(reason, "right side") {
			line += "\n  reason: " + reason // a join's: it names the side
		}
		*r.lines = append(*r.lines, line)
	default:
		src, _ := m["source"].(map[string]any)
		*r.lines = append(*r.lines, fmt.Sprintf("quarantine: line %v rule=%v field=%v: %v", src["line"], m["rule"], m["field"], m["reason"]))
	}
	return nil
}
func (r *records) Flush(context.Context) error { return nil }
func (r *records) Close(context.Context) error { return nil }

func compactJSON(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprint(v)
	}
	b, _ := yaml.MarshalWithOptions(m, yaml.Flow(true))
	return strings.TrimSpace(string(b))
}

// writeScenarioInputs writes a run's records into the pipeline's input
// files: a line "NAME: {…}" goes to input NAME (inputs[]), any other line
// to the source.
func writeScenarioInputs(p *spec.Pipeline, text string) error {
	files := map[string]*strings.Builder{p.Source.Path: {}}
	paths := map[string]string{}
	for _, in := range p.Inputs {
		paths[in.Name] = in.Source.Path
		files[in.Source.Path] = &strings.Builder{}
	}
	for _, line := range strings.Split(text, "\n") {
		path := p.Source.Path
		if name, rest, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "{") {
			if pp, ok := paths[name]; ok {
				path, line = pp, rest
			}
		}
		files[path].WriteString(line + "\n")
	}
	for path, b := range files {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func runScenario(t *testing.T, y string, td *datadriven.TestData) string {
	dir := t.TempDir()
	p, err := scenarioSpec(t, y, td, dir)
	if err != nil {
		return "error: " + err.Error()
	}
	if err := writeScenarioInputs(p, td.Input); err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Compile(p, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	var lines []string
	loc := pl.Stages[0].Loc
	cp := &capture{lines: &lines, loc: loc, dates: td.HasArg("dates"), desc: pl.Stages[0].Desc, prefix: len(pl.Stages) > 1}
	reg := DefaultRegistry()
	reg.Results["capture"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *Env) (sink.Results, error) {
		c := *cp
		c.desc = d
		return &c, nil
	}
	// Side-output sinks are told apart by their path label.
	reg.Records["capture"] = func(_ context.Context, s spec.Sink, _ *Env) (sink.Records, error) {
		kind := s.Path
		if kind == "" {
			kind = "late"
		}
		return &records{lines: &lines, kind: kind, cap: cp}, nil
	}
	sum, err := Run(context.Background(), pl, Options{Registry: reg, Clock: func() int64 { return scenarioClock }, Parallelism: 1})
	if err != nil {
		return "error: " + strings.ReplaceAll(err.Error(), dir, "DIR")
	}
	if sum.Quarantined+sum.Duplicates+sum.Conflicts+sum.StaleVersions+sum.Superseded > 0 {
		lines = append(lines, fmt.Sprintf("pipeline: quarantined=%d duplicates=%d conflicts=%d stale_versions=%d superseded=%d",
			sum.Quarantined, sum.Duplicates, sum.Conflicts, sum.StaleVersions, sum.Superseded))
	}
	for _, st := range sum.Stages {
		c := st.Counters
		name := ""
		if len(sum.Stages) > 1 {
			name = " " + st.Name
		}
		lines = append(lines, fmt.Sprintf("counters%s: in=%d on_time=%d late_accepted=%d too_late_side_output=%d too_late_dropped=%d quarantined=%d filtered=%d rows=%d",
			name, c.In, c.OnTime, c.LateAccepted, c.TooLateSideOutput, c.TooLateDropped, c.Quarantined, c.Filtered, c.RowsEmitted))
		if c.Retractions > 0 {
			lines = append(lines, fmt.Sprintf("retractions%s: %d (unmatched %d, after close %d)", name, c.Retractions, c.RetractMissing, c.RetractTooLate))
		}
	}
	for _, st := range sum.Stages {
		if st.PartlyTooLate > 0 {
			lines = append(lines, fmt.Sprintf("partly too late: %d records, %d window updates dropped", st.PartlyTooLate, st.SkippedWindows))
		}
	}
	if len(sum.AbsentFields) > 0 {
		lines = append(lines, fmt.Sprintf("absent fields: %v", sum.AbsentFields))
	}
	return strings.Join(lines, "\n") + "\n"
}
