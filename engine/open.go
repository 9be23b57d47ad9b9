package engine

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/task"
	"github.com/tidemark/tidemark/watermark"
)

// open checks the outputs, opens the source and the sinks, and builds the
// graph and the tasks.
func (rt *runtime) open(ctx context.Context) error {
	p := rt.plan
	rt.env = Env{Stdout: rt.opts.Stdout, Pipeline: p.Spec.Name, Fault: rt.opts.FaultHook}
	rt.wm = watermark.None
	rt.finalWM = watermark.None
	rt.initRouter()
	f, ok := p.SourceSchema.Lookup(p.EventTimeField)
	if !ok {
		return fmt.Errorf("event-time field %q missing from the source schema", p.EventTimeField)
	}
	rt.etField = f
	rt.ptField = processingField(p)
	rt.present = make([]bool, p.SourceSchema.Len())
	rt.absent = len(rt.present)
	rt.initKeyWatch()
	release, created, err := guardOutputsAt(p.Spec, rt.opts.Source == nil)
	if err != nil {
		return err
	}
	rt.release, rt.created = release, created
	rt.env.held = created.held
	if r := p.Spec.Reference; r != nil {
		ref, err := rt.loadReference(r)
		if err != nil {
			return &ConfigError{Err: err}
		}
		rt.ref = ref
	}
	// The source opens first: a run that cannot read its input must not
	// truncate or replace the outputs of the previous run.
	if rt.opts.Source != nil {
		rt.src = rt.opts.Source
	} else {
		src, err := rt.openSource()
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		rt.src = src
	}
	if err := rt.openInputs(); err != nil {
		return err
	}
	if c := p.Spec.Checkpoint; c != nil {
		spec, err := SpecJSON(p.Spec)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		rt.ck = &ckState{dir: c.Dir, interval: c.Interval.D(), retain: c.Retain, spec: spec, store: checkpoint.DirStore{Dir: c.Dir}}
		rt.env.Checkpoints = true
		ids, err := checkpoint.List(c.Dir)
		if err != nil {
			return fmt.Errorf("checkpoint.dir: %w", err)
		}
		rt.env.Restoring = len(ids) > 0
	}
	if q := p.Spec.Quarantine.Sink; q != nil {
		s, err := rt.opts.Registry.OpenRecords(ctx, *q, &rt.env)
		if err != nil {
			return fmt.Errorf("quarantine.sink: %w", err)
		}
		rt.quarantine = s
		if err := rt.registerSink("quarantine.sink", q.Type, q.Delivery, s, s.Flush); err != nil {
			return err
		}
	}
	rt.linVal = row.Null
	if rt.opts.Lineage {
		rt.linVal = row.Str(rt.lineage().String())
	}
	if c := p.Spec.Conflicts.Sink; c != nil {
		s, err := rt.opts.Registry.OpenRecords(ctx, *c, &rt.env)
		if err != nil {
			return fmt.Errorf("conflicts.sink: %w", err)
		}
		rt.conflictS = s
		if err := rt.registerSink("conflicts.sink", c.Type, c.Delivery, s, s.Flush); err != nil {
			return err
		}
	}
	rt.par = rt.parallelism()
	g, err := task.NewGraph(p, rt.par)
	if err != nil {
		return err
	}
	rt.g = g
	g.FireChunk = rt.opts.FireChunk
	g.Incremental = p.Spec.Checkpoint != nil
	g.EventJSON = rt.src.EventJSON
	if len(rt.ins) > 0 {
		g.InputJSON = make([]func([]byte, *source.Meta) []byte, len(rt.ins))
		for i, in := range rt.ins[1:] {
			g.InputJSON[i+1] = in.src.EventJSON
		}
	}
	g.Lineage = rt.linVal
	if rt.opts.Lineage && rt.ref != nil && rt.ref.versions != nil {
		rt.ref.setLineage(rt.lineage())
		g.LineageAt = rt.ref.lineageOf
	}
	g.HasQuarantine = rt.quarantine != nil
	g.HasConflicts = rt.conflictS != nil
	rt.early = make([]*operator.EarlySchedule, len(p.Stages))
	for si, sp := range p.Stages {
		if e := sp.Operator.EarlyEvery; e > 0 && sp.Operator.Mode != operator.Final && !sp.Desc.Stateless {
			rt.early[si] = &operator.EarlySchedule{Every: e}
			rt.anyEarly = true
		}
		st := &stage{p: sp}
		// Listed before its sinks open, so that a refused start closes
		// the ones that did.
		rt.stages = append(rt.stages, st)
		for i, sk := range sp.Sinks {
			var s sink.Results
			var err error
			if sk.Type == "postgres" && sk.Mode == "ledger" {
				var ls *ledgerSink
				ls, err = rt.openLedger(ctx, si, sk, fmt.Sprintf("%s: sinks[%d]", sp.Name, i))
				if err == nil {
					st.ledger = append(st.ledger, ls)
					rt.ledgers = append(rt.ledgers, ls)
					s = ls
				}
			} else {
				s, err = rt.opts.Registry.OpenResults(ctx, sk, rt.sinkDesc(sp.Desc), &rt.env)
			}
			if err != nil {
				return fmt.Errorf("%s: sinks[%d] (%s): %w", sp.Name, i, sk.Type, err)
			}
			st.sinks = append(st.sinks, s)
			if err := rt.registerSink(fmt.Sprintf("%s: sinks[%d]", sp.Name, i), sk.Type, sk.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
		g.HasSinks[si] = len(st.sinks) > 0
		g.Ledger[si] = len(st.ledger) > 0
		if c := sp.Contributions; c != nil && c.Sink != nil && sp.Input < 0 && !sp.Desc.Stateless {
			s, err := rt.opts.Registry.OpenRecords(ctx, *c.Sink, &rt.env)
			if err != nil {
				return fmt.Errorf("%s: contributions.sink: %w", sp.Name, err)
			}
			st.contrib = s
			g.HasContrib[si] = true
			if err := rt.registerSink(sp.Name+": contributions.sink", c.Sink.Type, c.Sink.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
		if sp.Late.Policy == "side_output" && sp.Late.Sink != nil {
			s, err := rt.opts.Registry.OpenRecords(ctx, *sp.Late.Sink, &rt.env)
			if err != nil {
				return fmt.Errorf("%s: late.sink: %w", sp.Name, err)
			}
			st.late = s
			g.HasLate[si] = true
			if err := rt.registerSink(sp.Name+": late.sink", sp.Late.Sink.Type, sp.Late.Sink.Delivery, s, s.Flush); err != nil {
				return err
			}
		}
	}
	// A union stage's sinks take the rows of the stages it unites as
	// they are written (writeRows): those stages emit rows for them.
	for _, st := range rt.stages {
		for _, in := range st.p.Union {
			if len(st.sinks) > 0 {
				rt.stages[in].unionSinks = append(rt.stages[in].unionSinks, st.sinks...)
				g.HasSinks[in] = true
			}
		}
	}
	for i := range rt.par {
		t, err := task.New(g, i)
		if err != nil {
			return err
		}
		rt.tasks = append(rt.tasks, t)
	}
	rt.cnt = task.NewCounters(len(p.Stages))
	rt.initQuarantineShare(nil)
	rt.rcnt = task.NewCounters(len(p.Stages))
	rt.opGlob = rt.tasks[0].Globals()
	if p.Spec.State.Backend == state.BackendDisk {
		if err := rt.openDiskState(); err != nil {
			return err
		}
	}
	return nil
}

// sinkDesc is a stage's row description as its sinks see it: with the
// lineage column when the run records lineage.
func (rt *runtime) sinkDesc(d changelog.Desc) changelog.Desc {
	if rt.linVal.Kind == row.KindString {
		d.Values = append(append([]changelog.Column(nil), d.Values...), changelog.Column{Name: LineageColumn, Kind: row.KindString})
	}
	return d
}

// eventJSON is the source's EventJSON, for records the runner quarantines.
func (rt *runtime) eventJSON(dst []byte, m *source.Meta) []byte { return rt.src.EventJSON(dst, m) }
