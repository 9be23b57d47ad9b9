package task

import (
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
)

// The verdicts of SelectFront.Eval and KeyedFront.Eval on one source
// record.
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
// router (Sender.SelectPrepared, Sender.FrontFiltered). Every decoder
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

// FrontFiltered counts a source record that root stage si's filter
// dropped (SelectFront.Eval's or KeyedFront.Eval's PreFiltered), as
// ToRoots would.
func (s *Sender) FrontFiltered(si int) {
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

// KeyedFront is the front of a stage with state (a window, aggregate,
// session or Top-N stage) that reads the source, evaluated apart from
// the router: its filter, its derived fields, its group key and the task
// owning the key's key group (keygroup.OfKey of the encoded key, as
// Sender.toStage computes it), for one source record at a time. It is
// what Sender.ToRoots does for such a stage up to the item it appends to
// the owner's packet, without the counters, the step, the processing
// time and the event time, which stay with the router
// (Sender.KeyedPrepared, Sender.FrontFiltered). Every decoder goroutine
// has its own (its key buffer); the plan's expressions and the graph are
// shared, read only.
type KeyedFront struct {
	si     int
	g      *Graph
	f      front
	keyBuf []byte
}

// NewKeyedFront returns the front of graph g's only root stage when it
// has state and can be evaluated apart from the router: one stage reads
// the source and no join reads it. ok is false otherwise (the router
// evaluates the front itself).
func NewKeyedFront(g *Graph) (kf *KeyedFront, ok bool) {
	if len(g.Roots) != 1 || len(g.JoinSides) > 0 && len(g.JoinSides[0]) > 0 {
		return nil, false
	}
	si := g.Roots[0]
	f := newFront(g.Plan.Stages[si])
	if f.stateless {
		return nil, false
	}
	return &KeyedFront{si: si, g: g, f: f}, true
}

// Stage is the index of the stage the front is of.
func (kf *KeyedFront) Stage() int { return kf.si }

// Derived reports whether the stage has derived fields: Eval then
// computes the stage's input row into a row of its schema (NewRow).
func (kf *KeyedFront) Derived() bool { return kf.f.derived }

// NewRow returns a row of the stage's schema, for Eval's derived fields.
func (kf *KeyedFront) NewRow() *row.Row { return kf.g.Plan.Stages[kf.si].Schema.NewRow() }

// Eval runs the stage's front on source record r (read only) as
// Sender.toStage would: the filter, then the derived fields into w (a
// row of the stage's schema, NewRow; used only when Derived, else it
// may be nil), then the group key's owner. It returns the verdict
// (PreKept, PreFiltered, or PreRouter for an expression error, which
// the router quarantines in order) and, for PreKept, the task owning
// the record's key group (a stage without a key: its one owner). The
// derived row references r's strings and the strings the derived
// fields made, so it is valid as long as r's are.
func (kf *KeyedFront) Eval(r, w *row.Row) (verdict uint8, owner int) {
	f := &kf.f
	g := kf.g
	st := g.Plan.Stages[kf.si]
	if f.hasTest {
		if k, ok := f.test.Holds(r); !ok || !k {
			return PreFiltered, 0
		}
	}
	if f.derived {
		w.CopyShallow(r)
	} else {
		w = r
	}
	if f.eval {
		keep, _, _, bad := evaluateFront(st, w, f.hasTest)
		if bad {
			return PreRouter, 0
		}
		if !keep {
			return PreFiltered, 0
		}
	}
	if g.Tasks == 1 || len(st.Key) == 0 {
		return PreKept, g.keyless[kf.si]
	}
	kf.keyBuf = operator.AppendKey(kf.keyBuf[:0], w, st.Key)
	return PreKept, g.Owner(keygroup.OfKey(kf.keyBuf, g.KeyGroups))
}

// KeyedPrepared hands source record r (with meta m and event time ts,
// the source's) of root stage si to its node in task owner, as ToRoots
// would, from what KeyedFront.Eval computed of it (PreKept): owner, and
// w, the stage's input row with its derived fields (nil without them).
// The item references r, m and w uncopied: they must stay valid until
// the round is written (the source batch's, and a row kept beside it).
// It is for a sender in round mode (not SetDirect), the router's at two
// tasks or more.
func (s *Sender) KeyedPrepared(si int, step uint64, now int64, r, w *row.Row, m *record.Meta, ts int64, owner int) {
	s.cnt.Stages[si].In++
	ts = s.rootTime(si, r, ts)
	if w == nil {
		w = r
	}
	p := s.Out[s.g.StageNode[si]][owner]
	*p.items.next() = Item{Step: step, Now: now, TS: ts, Weight: 1, Row: w, Meta: m}
}
