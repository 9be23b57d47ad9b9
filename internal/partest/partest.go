// Package partest checks that a pipeline's results do not depend on its
// parallelism (docs/parallelism.md, "Determinism"): it runs a pipeline with
// every sink replaced by an in-memory capture, at several numbers of
// tasks, and compares the canonical form of the outputs. The canonical
// form keeps what tidemark promises at any parallelism and drops only the
// interleaving of different keys:
//
//   - result rows grouped by (stage, window_start, key), each group's rows
//     in emission order with everything a sink sees (op, window_end,
//     values, version, is_final, watermark_at, updated_at);
//   - select rows (no key) and side-output records (late, quarantine,
//     conflicts, contributions) as sorted multisets;
//   - the summary's counters.
package partest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// TB is what the checks need of *testing.T and *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Outputs is the canonical form of a run's outputs.
type Outputs struct {
	// Groups maps "stage|window_start|key" to the group's rows in order.
	Groups map[string][]string
	// Sets maps an output ("<stage> select", "late <stage>",
	// "quarantine", "conflicts", "contributions <stage>") to its records,
	// sorted.
	Sets map[string][]string
	// Summary renders the counters of the run's summary.
	Summary string
}

// Rows returns the number of result rows captured.
func (o *Outputs) Rows() int {
	n := 0
	for _, g := range o.Groups {
		n += len(g)
	}
	return n
}

// Prepare replaces every sink of p (results, late, quarantine, conflicts,
// contributions) by a capture sink and turns checkpoints off. It modifies
// p.
func Prepare(p *spec.Pipeline) {
	capture := func(role string) *spec.Sink { return &spec.Sink{Type: "partest", Path: role} }
	p.Checkpoint = nil
	p.Quarantine.Sink = capture("quarantine")
	p.Conflicts.Sink = capture("conflicts")
	fix := func(name string, sinks *[]spec.Sink, late *spec.Late, contrib **spec.Contributions) {
		*sinks = []spec.Sink{{Type: "partest", Path: "results " + name}}
		if late.Policy == "side_output" {
			late.Sink = capture("late " + name)
		}
		if *contrib != nil {
			c := **contrib
			c.Sink = capture("contributions " + name)
			*contrib = &c
		}
	}
	if len(p.Stages) == 0 {
		fix(p.Name, &p.Sinks, &p.Late, &p.Contributions)
	}
	for i := range p.Stages {
		fix(p.Stages[i].Name, &p.Stages[i].Sinks, &p.Stages[i].Late, &p.Stages[i].Contributions)
	}
}

// capture collects one output.
type capture struct {
	o     *Outputs
	role  string
	desc  changelog.Desc
	stage string
}

func (c *capture) Write(_ context.Context, rows []changelog.Row) error {
	for i := range rows {
		r := &rows[i]
		var b strings.Builder
		fmt.Fprintf(&b, "%s end=%d", r.Op, r.WindowEnd)
		for _, v := range r.Values {
			b.WriteString(" ")
			b.WriteString(text(v))
		}
		fmt.Fprintf(&b, " v%d final=%v wm=%d at=%d", r.Version, r.IsFinal, r.WatermarkAt, r.UpdatedAt)
		if c.desc.Stateless {
			k := c.stage + " select"
			c.o.Sets[k] = append(c.o.Sets[k], fmt.Sprintf("ts=%d %s", r.WindowStart, b.String()))
			continue
		}
		var key strings.Builder
		fmt.Fprintf(&key, "%s|%d|", c.stage, r.WindowStart)
		for _, v := range r.Key {
			key.WriteString(text(v))
			key.WriteString(",")
		}
		c.o.Groups[key.String()] = append(c.o.Groups[key.String()], b.String())
	}
	return nil
}

func text(v row.Value) string { return fmt.Sprintf("%d:%s", v.Kind, v) }

func (c *capture) WriteRecord(_ context.Context, obj []byte) error {
	c.o.Sets[c.role] = append(c.o.Sets[c.role], string(obj))
	return nil
}
func (c *capture) Flush(context.Context) error { return nil }
func (c *capture) Close(context.Context) error { return nil }

// Registry returns a sink registry whose "partest" sinks capture into o.
func Registry(o *Outputs) *engine.Registry {
	reg := engine.DefaultRegistry()
	reg.Results["partest"] = func(_ context.Context, s spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
		return &capture{o: o, role: s.Path, desc: d, stage: d.Stage}, nil
	}
	reg.Records["partest"] = func(_ context.Context, s spec.Sink, _ *engine.Env) (sink.Records, error) {
		return &capture{o: o, role: s.Path}, nil
	}
	return reg
}

// Run compiles p (already prepared: Prepare) with contract c and runs it
// at parallelism tasks with opts (Registry and Parallelism are set here),
// returning the canonical outputs.
func Run(t TB, p *spec.Pipeline, c *contract.Contract, tasks int, opts engine.Options) *Outputs {
	t.Helper()
	o, _ := RunSummary(t, p, c, tasks, opts)
	return o
}

// RunSummary is Run that also returns the run's summary (e.g. to check
// that a run's state went through the disk backend's stores:
// Summary.DiskState).
func RunSummary(t TB, p *spec.Pipeline, c *contract.Contract, tasks int, opts engine.Options) (*Outputs, *engine.Summary) {
	t.Helper()
	pl, err := plan.Compile(p, c)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	o := &Outputs{Groups: map[string][]string{}, Sets: map[string][]string{}}
	opts.Registry = Registry(o)
	opts.Parallelism = tasks
	sum, err := engine.Run(context.Background(), pl, opts)
	if err != nil {
		t.Fatalf("run at parallelism %d: %v", tasks, err)
	}
	for k := range o.Sets {
		slices.Sort(o.Sets[k])
	}
	o.Summary = summaryText(sum)
	return o, sum
}

// summaryText renders what a summary counts (not times or state sizes,
// which are estimates that depend on how state is split).
func summaryText(s *engine.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read=%d redelivered=%d partitions=%d wm=%d quarantined=%d dups=%d conflicts=%d stale=%d superseded=%d deletes=%d outside=%d first=%q rules=%v absent=%v\n",
		s.EventsRead, s.Redeliveries, s.Partitions, s.FinalWatermark, s.Quarantined, s.Duplicates, s.Conflicts,
		s.StaleVersions, s.Superseded, s.Deletes, s.OutsideRange, s.FirstViolation, s.Rules, s.AbsentFields)
	for _, st := range s.Stages {
		fmt.Fprintf(&b, "%s: %+v partly=%d skipped=%d first=%q\n", st.Name, st.Counters, st.PartlyTooLate, st.SkippedWindows, st.FirstQuarantine)
	}
	return b.String()
}

// Equal fails t with the first difference between two runs' outputs.
func Equal(t TB, what string, want, got *Outputs) {
	t.Helper()
	for _, k := range sortedKeys(want.Groups, got.Groups) {
		if a, b := want.Groups[k], got.Groups[k]; !slices.Equal(a, b) {
			t.Fatalf("%s: rows of %s differ:\n%s\nvs\n%s", what, k, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	}
	if want.Summary != got.Summary {
		t.Fatalf("%s: summaries differ:\n%s\nvs\n%s", what, want.Summary, got.Summary)
	}
	for _, k := range sortedKeys(want.Sets, got.Sets) {
		a, b := want.Sets[k], got.Sets[k]
		if !slices.Equal(a, b) {
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			at := func(s []string) string {
				if i < len(s) {
					return s[i]
				}
				return "(none)"
			}
			t.Fatalf("%s: %s differs (%d vs %d records); first difference:\n%s\nvs\n%s", what, k, len(a), len(b), at(a), at(b))
		}
	}
}

func sortedKeys(a, b map[string][]string) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Check runs the pipeline build returns (a fresh spec each call) at
// parallelism 1 and at each of ps, with contract c, and requires equal
// canonical outputs. It returns the outputs at parallelism 1.
func Check(t TB, build func() *spec.Pipeline, c *contract.Contract, opts engine.Options, ps ...int) *Outputs {
	t.Helper()
	mk := func() *spec.Pipeline {
		p := build()
		Prepare(p)
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatalf("validate: %v", err)
		}
		return p
	}
	ref := Run(t, mk(), c, 1, opts)
	for _, n := range ps {
		got := Run(t, mk(), c, n, opts)
		Equal(t, fmt.Sprintf("parallelism 1 vs %d", n), ref, got)
	}
	return ref
}
