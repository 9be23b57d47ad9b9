package task

import (
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/join"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
)

// joinNode is a join stage's state in one task: its join operator over
// the task's key groups (package join). Its items carry their side
// (Item.Side); its rows go to its sinks and to the stages reading it.
type joinNode struct {
	g    *Graph
	si   int
	st   *plan.Stage
	j    *plan.Join
	op   *join.Operator
	enc  *changelog.Encoder
	key  []byte
	tail []byte
	buf  []byte
	wm   [2]int64 // the sides' watermarks handed to the operator
}

func newJoinNode(g *Graph, si int, rng keygroup.Range) (*joinNode, error) {
	st := g.Plan.Stages[si]
	cfg := st.Join.Config
	cfg.KeyGroups = g.KeyGroups
	cfg.Groups = rng
	op, err := join.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", st.Name, err)
	}
	return &joinNode{g: g, si: si, st: st, j: st.Join, op: op, enc: changelog.NewEncoder(st.Loc),
		wm: [2]int64{changelog.WatermarkNone, changelog.WatermarkNone}}, nil
}

var sideNames = [2]string{"left", "right"}

// item applies one row of a side.
func (jn *joinNode) item(nr *nodeRT, p *Packet, it *Item) error {
	s := int(it.Side)
	sd := &jn.j.Sides[s]
	jn.key, _ = appendJoinKey(jn.key[:0], it.Row, sd)
	kg := keygroup.OfKey(jn.key, jn.g.KeyGroups)
	out, err := jn.op.Process(s, kg, jn.key, it.TS, it.Step, it.Row, sd.Keep, it.Now)
	if err != nil {
		return fmt.Errorf("%s: %w", jn.st.Name, err)
	}
	c := &nr.t.cnt.Stages[jn.si]
	switch out {
	case join.OnTime:
		c.OnTime++
	case join.LateAccepted:
		c.LateAccepted++
	case join.TooLate:
		jn.tooLate(nr, it, s)
	}
	if jn.op.Pending() > 0 {
		jn.drain(nr, it.Step, p.Tail(it), false, it.Now)
	}
	return nil
}

// marker applies a watermark advance of one input.
func (jn *joinNode) marker(nr *nodeRT, m *Marker) {
	if m.Kind != Advance {
		return
	}
	l, r := jn.sideWM(nr.in, join.L), jn.sideWM(nr.in, join.R)
	if l == jn.wm[join.L] && r == jn.wm[join.R] {
		return
	}
	jn.wm = [2]int64{l, r}
	jn.op.Advance(l, r, m.Now)
	if jn.op.Pending() > 0 {
		jn.drain(nr, m.Step, nil, true, m.Now)
	}
	nr.snd.SetWatermark(jn.op.OutputWatermark())
}

// sideWM is side s's watermark given the inputs' (in): its input's, or,
// for a side reading a stage, that stage node's.
func (jn *joinNode) sideWM(in []int64, s int) int64 {
	sd := &jn.j.Sides[s]
	if sd.Stage >= 0 {
		return jn.g.NodeWatermark(jn.g.StageNode[sd.Stage], in)
	}
	return in[sd.Input]
}

// drain hands the operator's rows to the stage's sinks and to the stages
// reading it, with their order tails: the input's tail and the row's
// index for the rows of one input, the stage's depth, the row's Order and
// index for the rows of an advance.
func (jn *joinNode) drain(nr *nodeRT, step uint64, tail []byte, firing bool, now int64) {
	g := jn.g
	rows, orders := jn.op.Drain()
	c := &nr.t.cnt.Stages[jn.si]
	c.RowsEmitted += int64(len(rows))
	for i := range rows {
		if rows[i].IsFinal {
			c.FinalRows++
		}
	}
	if g.HasSinks[jn.si] {
		nr.log.rows(step, ResultsOf(jn.si), rows, g.Lineage, g.LineageAt)
	}
	down := g.Downstream[jn.si]
	jdown := g.JoinDown[jn.si]
	if len(down) == 0 && len(jdown) == 0 {
		return
	}
	desc := &jn.st.Desc
	for i := range rows {
		if firing {
			o := orders[i]
			jn.tail = appendFiring(jn.tail[:0], nr.n.Depth, o.A, o.B, o.C, i)
		} else {
			jn.tail = appendChild(jn.tail[:0], tail, i)
		}
		for _, js := range jdown {
			nr.snd.FromStageToJoin(js.Stage, js.Side, step, jn.tail, now, &rows[i], desc)
		}
		for _, d := range down {
			nr.snd.FromJoin(d, step, jn.tail, now, &rows[i], desc)
		}
		if i%256 == 255 {
			// A firing's rows go on in chunks (Task.SetCheck); an error
			// stops the node at its next check, which returns it.
			_ = nr.snd.checked()
		}
	}
}

// tooLate applies the late policy to a row its side's watermark had
// passed by more than the allowed lateness.
func (jn *joinNode) tooLate(nr *nodeRT, it *Item, s int) {
	c := &nr.t.cnt.Stages[jn.si]
	if !jn.g.HasLate[jn.si] || jn.j.Sides[s].Stage >= 0 && it.CR == nil {
		c.TooLateDropped++
		return
	}
	c.TooLateSideOutput++
	sd := &jn.j.Sides[s]
	wm := jn.wm[s]
	reason := fmt.Sprintf("%s side (%s, input %s): its watermark %s passed the row's event time + allowed lateness %s: the rows it could join may be gone",
		sideNames[s], sd.Alias, sd.Name, changelog.FormatWatermark(wm, jn.st.Loc), time.Duration(jn.j.Config.Lateness)*time.Millisecond)
	if jn.j.Config.Type == join.Window {
		wm = min(jn.wm[0], jn.wm[1])
		reason = fmt.Sprintf("%s side (%s, input %s): every window of the row had closed: the join's watermark %s passed window end + allowed lateness %s",
			sideNames[s], sd.Alias, sd.Name, changelog.FormatWatermark(wm, jn.st.Loc), time.Duration(jn.j.Config.Lateness)*time.Millisecond)
	}
	o := origin{meta: it.Meta, loc: jn.st.Loc, input: max(sd.Input, 0)}
	if sd.Stage >= 0 {
		o.cr, o.up = it.CR, &jn.g.Plan.Stages[sd.Stage].Desc
	}
	jn.buf = jn.g.event(jn.buf[:0], &o)
	rec := changelog.LateRecord{
		Stage:            jn.st.Name,
		Event:            jn.buf,
		EventTime:        it.TS,
		ObservedAt:       it.Now,
		CurrentWatermark: wm,
		LatenessMs:       changelog.Lateness(wm, it.TS),
		Reason:           reason,
		Position:         o.pos(),
	}
	start := len(nr.log.Bytes)
	nr.log.Bytes = jn.enc.Late(nr.log.Bytes, &rec)
	nr.log.record(it.Step, LateOf(jn.si), start)
}

// toJoin runs the front of join stage si's side for one input record —
// the side's filter, the checks of its key and bound — and hands it to
// the join's node in the task owning its key's group. r and m are the
// source batch's (stable) or copied when not stable.
func (s *Sender) toJoin(si, side int, step uint64, tail []byte, now int64, r *row.Row, o *origin, ts int64, stable bool) {
	g := s.g
	st := g.Plan.Stages[si]
	j := st.Join
	sd := &j.Sides[side]
	c := &s.cnt.Stages[si]
	c.In++
	if sd.Filter != nil {
		keep, ok, err := sd.Filter.EvalBool(r)
		if err != nil {
			s.quarantineStage(si, step, o, fmt.Sprintf("join.%s.filter: %v", sideNames[side], err), "", "expression")
			return
		}
		if !ok || !keep {
			c.Filtered++
			return
		}
	}
	var err error
	if s.keyBuf, err = appendJoinKey(s.keyBuf[:0], r, sd); err != nil {
		var ke *joinKeyError
		if errors.As(err, &ke) {
			s.quarantineStage(si, step, o, fmt.Sprintf("the join key %s.%s is %s: the %s row cannot be joined (join.on)", sd.Alias, ke.name, ke.what, sideNames[side]), ke.field, "join_key")
		}
		return
	}
	if sd.HasUpper {
		f := sd.UpperField
		span := j.Config.Upper
		switch {
		case r.IsNull(f.Index):
			s.quarantineStage(si, step, o, fmt.Sprintf("the upper bound %s.%s is null (join.between.upper_field)", sd.Alias, f.Name), f.Name, "join_bound")
			return
		case r.I[f.Slot] < ts || r.I[f.Slot]-ts > span:
			s.quarantineStage(si, step, o, fmt.Sprintf("the upper bound %s.%s %s is %s from the event time %s: want 0 to join.between.max_span %s",
				sd.Alias, f.Name, row.FormatTime(r.I[f.Slot], nil), time.Duration(r.I[f.Slot]-ts)*time.Millisecond, row.FormatTime(ts, nil),
				time.Duration(span)*time.Millisecond), f.Name, "join_bound")
			return
		}
	}
	n := g.StageNode[si]
	if s.direct != nil {
		it := &s.dit
		*it = Item{Step: step, Now: now, TS: ts, Weight: 1, Row: r, Meta: o.meta, Side: int8(side), CR: o.cr}
		if len(tail) > 0 {
			it.tailOff, it.tailLen = s.dp.bytes(tail), uint32(len(tail))
		}
		s.push(n, it)
		return
	}
	owner := 0
	if g.Tasks > 1 {
		owner = g.Owner(keygroup.OfKey(s.keyBuf, g.KeyGroups))
	}
	p := s.Out[n][owner]
	it := p.add(step, tail)
	it.Now, it.TS, it.Weight, it.Side = now, ts, 1, int8(side)
	switch {
	case stable:
		it.Row, it.Meta = r, o.meta
	case o.cr != nil:
		// A stage's row: its copy, and its changelog row for a late record.
		it.Row, it.CR = p.copyRow(r), p.copyCR(o.cr)
	default:
		it.Row, it.Meta = p.copyRow(r), p.copyMeta(o.meta)
	}
}

// FromStageToJoin hands a row cr of stage up (desc) to side side of join
// stage si that reads it: the row becomes the side's row (the stage's
// changelog columns, or a join's), its event time the side's field plus
// its shift, and the side's front runs.
func (s *Sender) FromStageToJoin(si, side int, step uint64, tail []byte, now int64, cr *changelog.Row, up *changelog.Desc) {
	sd := &s.g.Plan.Stages[si].Join.Sides[side]
	if cr.Op.Retracts() {
		// Never from the stages a join may read (final, append-only).
		s.cnt.Stages[si].Retractions++
		return
	}
	if s.joinScratch == nil {
		s.joinScratch = map[[2]int]*row.Row{}
	}
	k := [2]int{si, side}
	r := s.joinScratch[k]
	if r == nil {
		r = sd.Schema.NewRow()
		s.joinScratch[k] = r
	}
	if s.g.Plan.Stages[sd.Stage].Join != nil {
		joinRowInto(sd.Schema, r, cr)
	} else {
		schemaRow(sd.Schema, r, cr)
	}
	o := origin{cr: cr, up: up, loc: s.g.Plan.Stages[si].Loc}
	et := &sd.EventTime
	if r.IsNull(et.Index) {
		s.cnt.Stages[si].In++
		s.quarantineStage(si, step, &o, "event-time field "+et.Name+" is null", et.Name, "event_time")
		return
	}
	s.toJoin(si, side, step, tail, now, r, &o, r.I[et.Slot]+sd.Shift, false)
}

// toJoins hands a record of input in to every join side reading it.
func (s *Sender) toJoins(in int, step uint64, tail []byte, now int64, r *row.Row, m *record.Meta, ts int64, stable bool) {
	for _, js := range s.g.JoinSides[in] {
		o := origin{meta: m, stable: stable, loc: s.g.Plan.Stages[js.Stage].Loc, input: in}
		s.toJoin(js.Stage, js.Side, step, tail, now, r, &o, ts, stable)
	}
}

// ToInput hands a valid record of input in (≥ 1: an input beside the
// source) to the joins reading it. The runner has checked its event time.
func (s *Sender) ToInput(in int, step uint64, now int64, r *row.Row, m *record.Meta, ts int64) {
	s.toJoins(in, step, nil, now, r, m, ts, true)
}

// QuarantineInput sends a record of input in (≥ 1) that failed the
// runner's checks to quarantine, counting it for the pipeline.
func (s *Sender) QuarantineInput(in int, step uint64, m *record.Meta, reason, field, rule string) {
	s.quarantineInput(in, step, m, reason, field, rule)
}

// FromJoin hands a row cr of a join (desc) to stage si that reads it: the
// row becomes si's input row (event_time, then the join's columns; weight
// −1 for delete and update_before) and the stage's front runs.
func (s *Sender) FromJoin(si int, step uint64, tail []byte, now int64, cr *changelog.Row, up *changelog.Desc) {
	st := s.g.Plan.Stages[si]
	r := s.scratch[si]
	s.fromRow(si, step, tail, now, r, joinInputRow(st, r, cr), cr, up)
}

// joinInputRow makes r stage st's input row for the join row cr and
// returns its weight.
func joinInputRow(st *plan.Stage, r *row.Row, cr *changelog.Row) int {
	return joinRowInto(st.Schema, r, cr)
}

// joinRowInto makes r a row of schema sc (joinSchema's layout) for the
// join row cr and returns its weight.
func joinRowInto(sc *row.Schema, r *row.Row, cr *changelog.Row) int {
	sc.Shape(r)
	_ = r.Set(sc.Fields[0], row.Time(cr.WindowStart))
	for i, v := range cr.Values {
		_ = r.Set(sc.Fields[1+i], v)
	}
	if cr.Op.Retracts() {
		return -1
	}
	return 1
}

// upstreamIsJoin reports whether stage si reads a join's rows.
func (g *Graph) upstreamIsJoin(si int) bool {
	in := g.Plan.Stages[si].Input
	return in >= 0 && g.Plan.Stages[in].Join != nil
}

// joinKeyError is a row whose join key is null, missing or cannot be
// computed.
type joinKeyError struct {
	name  string // the key field, or the computing expression
	field string // the field to name in the quarantine record ("" for an expression)
	what  string // "null or missing", or the expression's error
}

func (e *joinKeyError) Error() string { return "join key " + e.name + " is " + e.what }

// appendJoinKey appends the encoding of r's join key on side sd
// (operator.AppendKey's, a computed key by operator.AppendKeyValue).
// Errors: *joinKeyError for a null or missing key, or an expression that
// fails.
func appendJoinKey(dst []byte, r *row.Row, sd *plan.JoinSide) ([]byte, error) {
	for i, f := range sd.Key {
		if e := sd.KeyExprs[i]; e != nil {
			v, err := e.Eval(r)
			switch {
			case err != nil:
				return dst, &joinKeyError{name: f.Name, what: "not computed: " + err.Error()}
			case v.IsNull():
				return dst, &joinKeyError{name: f.Name, what: "null (computed from a null or missing field)"}
			}
			dst = operator.AppendKeyValue(dst, v)
			continue
		}
		if r.IsNull(f.Index) {
			return dst, &joinKeyError{name: f.Name, field: f.Name, what: "null or missing"}
		}
		dst = operator.AppendKey(dst, r, sd.Key[i:i+1])
	}
	return dst, nil
}
