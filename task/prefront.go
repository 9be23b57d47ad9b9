package task

import (
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// The verdicts of SelectFront.Eval on one source record.
const (
	// PreRouter: the record takes the router's own path (ToRoots): its
	// front found an expression error, which the router quarantines in
	// order, or it was not evaluated.
	PreRouter uint8 = iota
	// PreFiltered: the stage's filter drops the record.
	PreFiltered
	// PreKept: the record passes the filter; its selected values are
	// computed.
	PreKept
)

// SelectFront is the front of a select stage (no state) that reads the
// source, evaluated apart from the router: its filter, its derived
// fields and the values of its select list, for one source record at a
// time. It is what Sender.ToRoots does for such a stage up to the row
// it emits, without the counters, the step, the processing time and the
// watermark, which depend on the records before and stay with the
// router (Sender.SelectPrepared, Sender.SelectFiltered). Every decoder
// goroutine has its own (a SelectFront is used by one goroutine); the
// plan's expressions are shared, as the tasks share them.
type SelectFront struct {
	si      int
	g       *Graph
	f       front
	scratch *row.Row
	values  bool // the stage has result sinks: its values are made
}

// NewSelectFront returns the front of graph g's only root stage when it
// can be evaluated apart from the router: one stage reads the source,
// it is a select stage, no join reads the source and no lineage column
// is added to result rows. ok is false otherwise (the router evaluates
// the front itself).
func NewSelectFront(g *Graph) (sf *SelectFront, ok bool) {
	if len(g.Roots) != 1 || len(g.JoinSides) > 0 && len(g.JoinSides[0]) > 0 || g.Lineage.Kind == row.KindString {
		return nil, false
	}
	si := g.Roots[0]
	st := g.Plan.Stages[si]
	f := newFront(st)
	if !f.stateless {
		return nil, false
	}
	return &SelectFront{si: si, g: g, f: f, scratch: st.Schema.NewRow(), values: g.HasSinks[si]}, true
}

// Stage is the index of the stage the front is of.
func (sf *SelectFront) Stage() int { return sf.si }

// Eval runs the stage's front on source record r (read only) as
// Sender.toStage would: the filter, then the derived fields, then the
// selected values, appended to dst (only when the stage has result
// sinks, PreKept). It returns the verdict (PreKept, PreFiltered, or
// PreRouter for an expression error) and dst. The values reference r's
// strings and the strings the derived fields made, so they are valid as
// long as r's are.
func (sf *SelectFront) Eval(r *row.Row, dst []row.Value) (uint8, []row.Value) {
	f := &sf.f
	st := sf.g.Plan.Stages[sf.si]
	if f.hasTest {
		if k, ok := f.test.Holds(r); !ok || !k {
			return PreFiltered, dst
		}
	}
	w := r
	if f.derived {
		w = sf.scratch
		w.CopyShallow(r)
	}
	if f.eval {
		keep, _, _, bad := evaluateFront(st, w, f.hasTest)
		if bad {
			return PreRouter, dst
		}
		if !keep {
			return PreFiltered, dst
		}
	}
	if sf.values {
		dst = w.AppendValues(dst, st.Select)
	}
	return PreKept, dst
}

// SelectFiltered counts a source record that select stage si's filter
// dropped (SelectFront.Eval's PreFiltered), as ToRoots would.
func (s *Sender) SelectFiltered(si int) {
	c := &s.cnt.Stages[si]
	c.In++
	c.Filtered++
}

// SelectPrepared emits source record r, with event time ts (the
// source's), of select stage si as ToRoots would, from the values
// SelectFront.Eval made of it (PreKept): its row (an insert, version 1,
// final, at the sender's watermark, updated at now) goes to the log at
// step, holding vals itself, not a copy — vals must stay valid until the
// log is written (the source batch's, as r's strings).
func (s *Sender) SelectPrepared(si int, step uint64, now int64, r *row.Row, ts int64, vals []row.Value) {
	c := &s.cnt.Stages[si]
	c.In++
	c.OnTime++
	c.RowsEmitted++
	c.FinalRows++
	if !s.g.HasSinks[si] {
		return
	}
	ts = s.rootTime(si, r, ts)
	s.log.row(step, ResultsOf(si), changelog.Row{Op: changelog.Insert, WindowStart: ts, WindowEnd: ts, Values: vals,
		Version: 1, IsFinal: true, WatermarkAt: s.wm, UpdatedAt: now})
}
