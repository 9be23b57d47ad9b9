package task

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/state"
)

// Sender makes the items one node of a task — or the runner, for the
// nodes it feeds — hands to the next nodes, and the outputs of the stage
// fronts it runs: a stage's filter and derived fields are evaluated where
// its input is (so a stage keyed by a derived field can be routed, and
// filtered records travel nowhere), select stages emit their rows there,
// and records an expression rejects are quarantined there. The stage's
// window state is in the node of the task owning the record's key group.
//
// A Sender is used by one goroutine. Out holds, for the round, the
// packets for each (node, task) it feeds; the runner sets them.
type Sender struct {
	g *Graph
	// Out[node][task] is the packet for that node of that task.
	Out [][]*Packet
	log *Log
	cnt *Counters

	encs    []*changelog.Encoder // per stage, in the stage's zone
	penc    *changelog.Encoder   // pipeline-level records: stage 0's zone
	scratch []*row.Row           // per stage: derived fields, changelog inputs
	// joinScratch holds, per (join stage, side) reading a stage, the
	// side's row of the stage's row (FromStageToJoin).
	joinScratch map[[2]int]*row.Row
	fronts      []front     // per stage: its front's shape (toStage)
	selVals     []row.Value // a select row's values
	// selRow is the row selectRow hands to the log: a field, not a local,
	// because a log with a Writer (push mode) passes it through an
	// interface, which would move a local to the heap once per row.
	selRow [1]changelog.Row
	keyBuf []byte
	buf    []byte
	crEnc  state.Encoder // upstream rows encoded into packets (Packet.putCR)
	wm     int64         // the pipeline watermark: select rows' watermark_at

	// direct, when set, takes each item at once instead of a packet (one
	// task run in push mode, Task.Push): dp holds the item's bytes for
	// the call.
	direct func(node int, p *Packet, it *Item) error
	dp     Packet
	dit    Item  // the item being pushed (reused: a push is not reentrant per sender)
	err    error // the first error direct returned
	// into, when set, is the task direct pushes into (Task.Push's
	// function, PushInto): push calls its node without the function
	// value.
	into *Task

	// remote, when set (with direct), takes the items whose key group
	// another task than self owns (a group run: SetRemote).
	remote func(owner, node int, p *Packet, it *Item)
	self   int

	// check, when set, is the runner's check of the packets in Out
	// (Task.SetCheck).
	check func() error
}

// checked runs the runner's check, if any.
func (s *Sender) checked() error {
	if s.check == nil {
		return nil
	}
	return s.check()
}

// SetDirect puts the sender in push mode: every item goes to f at once
// (Task.Push's function for a sender outside the task).
func (s *Sender) SetDirect(f func(node int, p *Packet, it *Item) error) { s.direct, s.into = f, nil }

// PushInto puts the sender in push mode into task t, which it puts in
// push mode: SetDirect(t.Push()), with the nodes of t called directly.
func (s *Sender) PushInto(t *Task) { s.direct, s.into = t.Push(), t }

// SetRemote makes a push-mode sender hand the items whose key group a
// task other than self owns to f instead of pushing them (a run of a
// group of instances, docs/scale-out.md, where the other tasks are
// partitions of the repartition topic): owner is that task, node the
// node it is for; the item and the bytes it references in p are valid
// during the call only. self is −1 for the runner's sender (every keyed
// item goes to f). The graph's Tasks is then the number of partitions of
// the repartition topic.
func (s *Sender) SetRemote(self int, f func(owner, node int, p *Packet, it *Item)) {
	s.self, s.remote = self, f
}

// away hands it to its owner's node n through remote when that is not
// this sender's task, and reports whether it did.
func (s *Sender) away(owner, n int, it *Item) bool {
	if s.remote == nil || owner == s.self {
		return false
	}
	s.remote(owner, n, &s.dp, it)
	s.dp.arena = s.dp.arena[:0]
	return true
}

// Direct returns the push-mode target, nil in round mode.
func (s *Sender) Direct() func(node int, p *Packet, it *Item) error { return s.direct }

// Err returns the first error the nodes this sender pushed to returned.
func (s *Sender) Err() error { return s.err }

// push hands an item to node n directly (push mode).
func (s *Sender) push(n int, it *Item) {
	var err error
	if t := s.into; t != nil {
		if nr := t.nodes[n]; nr.stage != nil && it.crLen == 0 {
			err = nr.stage.item(nr, &s.dp, it) // nodeRT.item's case for a stage node
		} else {
			err = nr.item(&s.dp, it)
		}
	} else {
		err = s.direct(n, &s.dp, it)
	}
	if err != nil && s.err == nil {
		s.err = err
	}
	s.dp.arena = s.dp.arena[:0] // only tails and ids live in it
}

// NewSender returns a sender for graph g writing its outputs to log and
// counting into cnt.
func NewSender(g *Graph, log *Log, cnt *Counters) *Sender {
	s := &Sender{g: g, log: log, cnt: cnt, Out: make([][]*Packet, len(g.Nodes))}
	for _, st := range g.Plan.Stages {
		s.encs = append(s.encs, changelog.NewEncoder(st.Loc))
		s.scratch = append(s.scratch, st.Schema.NewRow())
		s.fronts = append(s.fronts, newFront(st))
	}
	s.penc = s.encs[0]
	return s
}

// front is what toStage needs to know of a stage's front, read once
// from the plan instead of per input.
type front struct {
	// test is the stage's filter as a direct test (hasTest): a
	// comparison of an int or time field with an int literal. It reads
	// the input (a filter never reads derived fields: they come after
	// it), so it runs before the input is copied for derived fields.
	// evaluate runs the rest (eval).
	test    expr.IntTest
	hasTest bool
	eval    bool // a filter that is not test, or derived fields
	derived bool // derived fields: the input is copied to the scratch row
	// stateless: a select stage (its row is emitted at once).
	stateless bool
}

// newFront returns stage st's front.
func newFront(st *plan.Stage) front {
	f := front{derived: len(st.Derived) > 0, stateless: st.Desc.Stateless}
	if st.Filter != nil {
		f.test, f.hasTest = st.Filter.IntTest()
	}
	f.eval = !f.hasTest && st.Filter != nil || f.derived
	return f
}

// ID is a record's event id: its text (dedup.key), hash and payload hash.
type ID struct {
	Text    []byte
	Hash    uint64
	Payload uint32
	Has     bool
}

// origin is where a stage input came from, for side outputs: a source
// record, or an upstream stage's row.
type origin struct {
	meta *record.Meta
	// stable: meta outlives the round (the source batch's) and can be
	// shared; otherwise it is copied into the packet.
	stable bool
	cr     *changelog.Row
	up     *changelog.Desc
	loc    *time.Location
	// input is the record's input (0: the source; Graph.InputJSON).
	input int
}

// raw appends the record's original bytes (a generated record's JSON).
func (g *Graph) raw(dst []byte, o *origin) []byte {
	if o.meta != nil {
		if o.meta.Raw == nil {
			return g.eventJSON(o.input)(dst, o.meta)
		}
		return append(dst, o.meta.Raw...)
	}
	return changelog.AppendRowJSON(dst, o.cr, o.up, o.loc)
}

// event appends the record as a JSON object.
func (g *Graph) event(dst []byte, o *origin) []byte {
	if o.meta != nil {
		return g.eventJSON(o.input)(dst, o.meta)
	}
	return changelog.AppendRowJSON(dst, o.cr, o.up, o.loc)
}

// eventJSON returns the EventJSON of input in.
func (g *Graph) eventJSON(in int) func(dst []byte, m *record.Meta) []byte {
	if in > 0 && in < len(g.InputJSON) && g.InputJSON[in] != nil {
		return g.InputJSON[in]
	}
	return g.EventJSON
}

func (o *origin) pos() changelog.Position {
	if o.meta != nil {
		return o.meta.Pos
	}
	return changelog.Position{Source: "stage " + o.up.Stage}
}

// QuarantineSource sends a source record that failed a pipeline-level
// check to quarantine, counting it (with its rule) for the pipeline.
func (s *Sender) QuarantineSource(step uint64, m *record.Meta, reason, field, rule string) {
	s.quarantineInput(0, step, m, reason, field, rule)
}

// quarantineInput sends a record of input in (0: the source) that failed
// a pipeline-level check to quarantine, counting it (with its rule) for
// the pipeline.
func (s *Sender) quarantineInput(in int, step uint64, m *record.Meta, reason, field, rule string) {
	c := s.cnt
	c.Quarantined++
	c.First[0].note(step, firstText(m.Pos, rule, field, reason, false))
	if rule != "" {
		if c.ByRule == nil {
			c.ByRule = map[string]int64{}
		}
		c.ByRule[rule]++
	}
	if !s.g.HasQuarantine {
		return
	}
	s.buf = s.g.raw(s.buf[:0], &origin{meta: m, input: in})
	rec := changelog.QuarantineRecord{Stage: s.g.Plan.Spec.Name, Raw: s.buf, Reason: reason, Field: field, Rule: rule, Position: m.Pos}
	start := len(s.log.Bytes)
	s.log.Bytes = s.penc.Quarantine(s.log.Bytes, &rec)
	s.log.record(step, OutQuarantine, start)
}

// quarantineStage sends a record a stage cannot evaluate to quarantine,
// counting it for the stage.
func (s *Sender) quarantineStage(si int, step uint64, o *origin, reason, field, rule string) {
	quarantineStage(s.g, s.log, s.cnt, s.encs[si], si, step, o, reason, field, rule, &s.buf)
}

func quarantineStage(g *Graph, log *Log, cnt *Counters, enc *changelog.Encoder, si int, step uint64, o *origin, reason, field, rule string, buf *[]byte) {
	cnt.Stages[si].Quarantined++
	if rule != "" {
		if cnt.ByRule == nil {
			cnt.ByRule = map[string]int64{}
		}
		cnt.ByRule[StageRuleKey(si, rule)]++
	}
	pos := o.pos()
	cnt.First[1+si].note(step, firstText(pos, rule, field, reason, true))
	if !g.HasQuarantine {
		return
	}
	*buf = g.raw((*buf)[:0], o)
	rec := changelog.QuarantineRecord{Stage: g.Plan.Stages[si].Name, Raw: *buf, Reason: reason, Field: field, Rule: rule, Position: pos}
	start := len(log.Bytes)
	log.Bytes = enc.Quarantine(log.Bytes, &rec)
	log.record(step, OutQuarantine, start)
}

// ToDedup hands a valid source record to the dedup node of the task owning
// its event id's key group.
func (s *Sender) ToDedup(step uint64, now int64, r *row.Row, m *record.Meta, ts int64, id ID) {
	n := s.g.DedupNode
	if s.direct != nil {
		it := &s.dit
		*it = Item{Step: step, Now: now, TS: ts, Row: r, Meta: m, Weight: 1}
		s.dp.setID(it, id.Text, id.Hash, id.Payload)
		if s.remote != nil && s.away(s.g.Owner(keygroup.OfHash(id.Hash, s.g.KeyGroups)), n, it) {
			return
		}
		s.push(n, it)
		return
	}
	owner := 0
	if s.g.Tasks > 1 {
		owner = s.g.Owner(keygroup.OfHash(id.Hash, s.g.KeyGroups))
	}
	p := s.Out[n][owner]
	it := p.add(step, nil)
	it.Now, it.TS, it.Row, it.Meta, it.Weight = now, ts, r, m, 1
	p.setID(it, id.Text, id.Hash, id.Payload)
}

// OrderKey appends the order_by entity key's text of r (not null) to dst.
func OrderKey(dst []byte, o *plan.OrderBy, r *row.Row) []byte {
	return r.Get(o.Key).AppendText(dst, nil)
}

// ToOrder hands a valid source record to the order_by node of the task
// owning its entity's key group. The record's entity key and version are
// not null (the runner checked).
func (s *Sender) ToOrder(step uint64, now int64, r *row.Row, m *record.Meta, ts int64, id ID) {
	n := s.g.OrderNode
	if s.direct != nil {
		it := &s.dit
		*it = Item{Step: step, Now: now, TS: ts, Row: r, Meta: m, Weight: 1}
		if id.Has {
			s.dp.setID(it, id.Text, id.Hash, id.Payload)
		}
		if s.remote != nil {
			s.keyBuf = OrderKey(s.keyBuf[:0], s.g.Plan.OrderBy, r)
			if s.away(s.g.Owner(keygroup.OfHash(xxhash.Sum64(s.keyBuf), s.g.KeyGroups)), n, it) {
				return
			}
		}
		s.push(n, it)
		return
	}
	owner := 0
	if s.g.Tasks > 1 {
		s.keyBuf = OrderKey(s.keyBuf[:0], s.g.Plan.OrderBy, r)
		owner = s.g.Owner(keygroup.OfHash(xxhash.Sum64(s.keyBuf), s.g.KeyGroups))
	}
	p := s.Out[n][owner]
	it := p.add(step, nil)
	it.Now, it.TS, it.Row, it.Meta, it.Weight = now, ts, r, m, 1
	if id.Has {
		p.setID(it, id.Text, id.Hash, id.Payload)
	}
}

// ToRoots hands a record to every stage reading the source (its front:
// filter, derived fields, then its node or, for a select stage, its row).
// stable says whether r and m outlive the round (the source batch's) or
// must be copied (an entity's previous version, which order_by replaces).
// id is the record's event id (read during the call). It returns an
// error only for an aggregate or internal failure.
func (s *Sender) ToRoots(step uint64, tail []byte, now int64, r *row.Row, m *record.Meta, ts int64, weight int, id *ID, stable bool) {
	o := origin{meta: m, stable: stable}
	if roots := s.g.Roots; len(roots) == 1 && (len(s.g.JoinSides[0]) == 0 || weight <= 0) {
		// One stage reads the source, no join: nothing to do after it.
		s.toStage(roots[0], step, tail, now, r, &o, s.rootTime(roots[0], r, ts), weight, id)
		return
	}
	for _, si := range s.g.Roots {
		s.toStage(si, step, tail, now, r, &o, s.rootTime(si, r, ts), weight, id)
	}
	if len(s.g.JoinSides[0]) > 0 && weight > 0 {
		s.toJoins(0, step, tail, now, r, m, ts, stable)
	}
}

// rootTime is the event time of source record r for root stage si: the
// source's (ts), or the stage's own field's (plan.Stage.OwnTime; never
// null: the runner fills it).
func (s *Sender) rootTime(si int, r *row.Row, ts int64) int64 {
	if st := s.g.Plan.Stages[si]; st.OwnTime && !r.IsNull(st.EventTime.Index) {
		return r.I[st.EventTime.Slot]
	}
	return ts
}

// Invalid reports whether some root stage would quarantine r for an
// expression error, with that stage's reason and field, counting and
// emitting nothing (order_by quarantines such a version before it
// replaces the entity's row).
func (s *Sender) Invalid(r *row.Row) (reason, field string, bad bool) {
	for _, si := range s.g.Roots {
		st := s.g.Plan.Stages[si]
		w := s.scratch[si]
		w.CopyShallow(r)
		if _, reason, field, bad := evaluate(st, w); bad {
			if field != "" {
				reason = "stage " + st.Name + ": " + reason
			}
			return reason, field, true
		}
	}
	return "", "", false
}

// evaluate runs stage st's filter and computes r's derived fields (r must
// be writable). keep is false for a record the filter drops; bad is true
// for an expression error, with its reason and the derived field at fault
// ("" for the filter).
func evaluate(st *plan.Stage, r *row.Row) (keep bool, reason, field string, bad bool) {
	return evaluateFront(st, r, false)
}

// evaluateFront is evaluate, without the filter when tested says it has
// run already (front.test).
func evaluateFront(st *plan.Stage, r *row.Row, tested bool) (keep bool, reason, field string, bad bool) {
	if st.Filter != nil && !tested {
		k, ok, err := st.Filter.EvalBool(r)
		if err != nil {
			return false, "filter: " + err.Error(), "", true
		}
		if !ok || !k {
			return false, "", "", false
		}
	}
	if len(st.Derived) > 0 {
		st.Schema.ExtendFrom(r, st.InputFields)
		for i := range st.Derived {
			if err := derive(r, &st.Derived[i]); err != nil {
				return false, err.Error(), st.Derived[i].Field.Name, true
			}
		}
	}
	return true, "", "", false
}

// derive evaluates one derived field into its slot.
func derive(r *row.Row, d *plan.Derived) error {
	f := d.Field
	var ok bool
	var err error
	switch f.Kind {
	case row.KindBool:
		var v bool
		v, ok, err = d.Expr.EvalBool(r)
		if v {
			r.I[f.Slot] = 1
		} else {
			r.I[f.Slot] = 0
		}
	case row.KindInt, row.KindTime:
		r.I[f.Slot], ok, err = d.Expr.EvalInt(r)
	case row.KindDecimal:
		r.D[f.Slot], ok, err = d.Expr.EvalDecimal(r)
	case row.KindString:
		r.S[f.Slot], ok, err = d.Expr.EvalString(r)
	default:
		return fmt.Errorf("field %s: cannot store %s", f.Name, f.Kind)
	}
	if err != nil {
		return err
	}
	if ok {
		r.SetValid(f.Index)
	} else {
		r.SetNull(f.Index)
	}
	return nil
}

// toStage runs stage si's front for one input and hands it to the stage's
// node in the task owning its key group. r is read only unless it is the
// stage's scratch row; o.stable says whether r and the origin's meta
// outlive the round. o.loc is set to the stage's zone when the input goes
// to quarantine.
func (s *Sender) toStage(si int, step uint64, tail []byte, now int64, r *row.Row, o *origin, ts int64, weight int, id *ID) {
	g := s.g
	st := g.Plan.Stages[si]
	f := &s.fronts[si]
	c := &s.cnt.Stages[si]
	if weight > 0 {
		c.In++
	} else {
		c.Retractions++
	}
	if f.hasTest {
		// evaluate's filter without the calls (expr.IntTest), on the
		// input before any copy.
		if k, ok := f.test.Holds(r); !ok || !k {
			if weight > 0 {
				c.Filtered++
			}
			return
		}
	}
	w := r
	if f.derived && r != s.scratch[si] {
		w = s.scratch[si]
		w.CopyShallow(r)
	}
	if f.eval {
		keep, reason, field, bad := evaluateFront(st, w, f.hasTest)
		if bad {
			o.loc = st.Loc
			s.quarantineStage(si, step, o, reason, field, "expression")
			return
		}
		if !keep {
			if weight > 0 {
				c.Filtered++
			}
			return
		}
	}
	if f.stateless {
		s.selectRow(si, step, now, w, ts, weight, o.cr)
		return
	}
	if s.direct != nil {
		// Consumed at once: nothing needs copying.
		it := s.directItem(step, now, ts, weight, w, o.meta, o.cr)
		if len(tail) > 0 {
			it.tailOff, it.tailLen = s.dp.bytes(tail), uint32(len(tail))
		}
		if id.Has {
			s.dp.setID(it, id.Text, id.Hash, id.Payload)
		}
		if s.remote != nil {
			owner := g.keyless[si]
			if len(st.Key) > 0 {
				s.keyBuf = operator.AppendKey(s.keyBuf[:0], w, st.Key)
				owner = g.Owner(keygroup.OfKey(s.keyBuf, g.KeyGroups))
			}
			if s.away(owner, g.StageNode[si], it) {
				return
			}
		}
		n := g.StageNode[si]
		if t := s.into; t != nil {
			if nr := t.nodes[n]; nr.stage != nil {
				// push's case for a stage node (crLen is 0: directItem),
				// without its call.
				if err := nr.stage.item(nr, &s.dp, it); err != nil && s.err == nil {
					s.err = err
				}
				s.dp.arena = s.dp.arena[:0]
				return
			}
		}
		s.push(n, it)
		return
	}
	var owner int
	if g.Tasks == 1 || len(st.Key) == 0 {
		owner = g.keyless[si] // one task, or one key: one owner
	} else {
		s.keyBuf = operator.AppendKey(s.keyBuf[:0], w, st.Key)
		owner = g.Owner(keygroup.OfKey(s.keyBuf, g.KeyGroups))
	}
	p := s.Out[g.StageNode[si]][owner]
	var tailOff, tailLen uint32
	if len(tail) > 0 {
		tailOff, tailLen = p.bytes(tail), uint32(len(tail))
	}
	it := Item{Step: step, tailOff: tailOff, tailLen: tailLen, Now: now, TS: ts, Weight: int8(weight), Row: r}
	if w != r || !o.stable || o.cr != nil {
		// An upstream row's input row travels as made here (its fields
		// stored, its filter and derived fields evaluated): the receiver
		// takes it as is, without making it again.
		it.Row = p.copyRow(w)
	}
	switch {
	case o.cr != nil:
		// The upstream row itself is read only for a side output (the
		// input's quarantine or late record: stageNode.origin); without
		// those sinks it does not travel.
		if (g.HasQuarantine || g.HasLate[si]) && !p.putCR(&it, o.cr, &s.crEnc) {
			it.CR = p.copyCR(o.cr)
		}
	case o.stable:
		it.Meta = o.meta
	default:
		it.Meta = p.copyMeta(o.meta)
	}
	if id.Has {
		it.idOff, it.idLen = p.bytes(id.Text), uint32(len(id.Text))
		it.IDHash, it.Payload, it.HasID = id.Hash, id.Payload, true
	}
	*p.items.next() = it
}

// directItem returns the sender's reused item (push mode) holding step,
// now, ts, weight, r, m and cr, and nothing else: no tail, id or join
// side. A pointer that did not change since the previous item is not
// written again (no write barrier), the other fields are stored one by
// one: cheaper than writing a whole Item, which a running garbage
// collector's barriers make a bulk copy.
func (s *Sender) directItem(step uint64, now, ts int64, weight int, r *row.Row, m *record.Meta, cr *changelog.Row) *Item {
	it := &s.dit
	it.Step, it.Now, it.TS, it.Weight = step, now, ts, int8(weight)
	if it.Row != r {
		it.Row = r
	}
	if it.Meta != m {
		it.Meta = m
	}
	if it.CR != cr {
		it.CR = cr
	}
	// crOff and crLen stay 0: an upstream row is encoded into packets only.
	it.tailOff, it.tailLen, it.idOff, it.idLen = 0, 0, 0, 0
	it.IDHash, it.Payload, it.HasID, it.Side = 0, 0, false, 0
	return it
}

// selectRow emits record r of select stage si with weight ±1 as a row:
// an insert, or a retraction of the row an earlier insert emitted — a
// delete (weight −1), or the upstream row's own op when it is an
// update_before or update_after (cr, the upstream row; nil for a source
// record). A retraction is counted in Retractions (toStage), not OnTime,
// and its row is not final (a delete, as the operator's).
func (s *Sender) selectRow(si int, step uint64, now int64, r *row.Row, ts int64, weight int, cr *changelog.Row) {
	c := &s.cnt.Stages[si]
	op, final := changelog.Insert, true
	switch {
	case weight < 0:
		op, final = changelog.Delete, false
		if cr != nil && cr.Op == changelog.UpdateBefore {
			op = changelog.UpdateBefore
		}
	case cr != nil && cr.Op == changelog.UpdateAfter:
		op = changelog.UpdateAfter
	}
	if weight > 0 {
		c.OnTime++
	}
	c.RowsEmitted++
	if final {
		c.FinalRows++
	}
	if !s.g.HasSinks[si] {
		return
	}
	s.selVals = r.AppendValues(s.selVals[:0], s.g.Plan.Stages[si].Select)
	s.selRow[0] = changelog.Row{Op: op, WindowStart: ts, WindowEnd: ts, Values: s.selVals,
		Version: 1, IsFinal: final, WatermarkAt: s.wm, UpdatedAt: now}
	s.log.rows(step, ResultsOf(si), s.selRow[:], s.g.Lineage, s.g.LineageAt)
}

// SetWatermark tells the sender the pipeline watermark (the watermark_at
// of select rows it makes).
func (s *Sender) SetWatermark(wm int64) { s.wm = wm }

// inputRow makes r stage st's input row for the upstream row cr
// (window_start, window_end, keys, values, version, is_final) and returns
// its weight: −1 for update_before and delete, else +1. The fields are
// stored by their schema's kinds (changelogSchema: two times, the
// upstream's key and value columns, an int and a bool); a key or value
// whose kind is not its field's (null, an int for a decimal field) goes
// through row.Row.Set.
func inputRow(st *plan.Stage, r *row.Row, cr *changelog.Row) int {
	return schemaRow(st.Schema, r, cr)
}

// schemaRow is inputRow for a row of schema sc (changelogSchema's layout).
func schemaRow(sc *row.Schema, r *row.Row, cr *changelog.Row) int {
	sc.Clear(r)
	fs := sc.Fields
	if len(fs) > 64 {
		inputRowWide(fs, r, cr)
	} else {
		// Every field in the first word of null bits: the stored fields'
		// bits set at once (SetValidWord), not one SetValid each.
		r.I[fs[0].Slot], r.I[fs[1].Slot] = cr.WindowStart, cr.WindowEnd
		valid := bit(&fs[0]) | bit(&fs[1])
		i := 2
		for k := range cr.Key {
			valid |= storeField(r, &fs[i], &cr.Key[k])
			i++
		}
		for k := range cr.Values {
			valid |= storeField(r, &fs[i], &cr.Values[k])
			i++
		}
		r.I[fs[i].Slot] = int64(cr.Version)
		r.I[fs[i+1].Slot] = 0
		if cr.IsFinal {
			r.I[fs[i+1].Slot] = 1
		}
		r.SetValidWord(0, valid|bit(&fs[i])|bit(&fs[i+1]))
	}
	if cr.Op.Retracts() {
		return -1
	}
	return 1
}

// bit is field f's bit in the first word of a row's null bits (f.Index
// below 64).
func bit(f *row.Field) uint64 { return 1 << (uint(f.Index) & 63) }

// storeField stores v into f, a field of the first 64, as setField does,
// and returns f's bit for the caller to mark valid (SetValidWord); a value
// not of f's kind goes through row.Row.Set, which marks the field itself
// (0 returned).
func storeField(r *row.Row, f *row.Field, v *row.Value) uint64 {
	if !storeSameKind(r, f, v) {
		return 0
	}
	return bit(f)
}

// storeSameKind stores v into f's slot when v is of f's kind, without
// marking f valid, and reports whether it did; else it stores v through
// row.Row.Set (which marks f) and returns false.
func storeSameKind(r *row.Row, f *row.Field, v *row.Value) bool {
	if v.Kind != f.Kind {
		_ = r.Set(*f, *v)
		return false
	}
	switch v.Kind {
	case row.KindDecimal:
		r.D[f.Slot] = v.D
	case row.KindString:
		r.S[f.Slot] = v.S
	default:
		r.I[f.Slot] = v.I
	}
	return true
}

// inputRowWide is inputRow's storing for a schema of more than 64 fields,
// field by field.
func inputRowWide(fs []row.Field, r *row.Row, cr *changelog.Row) {
	setIntField(r, &fs[0], cr.WindowStart)
	setIntField(r, &fs[1], cr.WindowEnd)
	i := 2
	for k := range cr.Key {
		setField(r, &fs[i], &cr.Key[k])
		i++
	}
	for k := range cr.Values {
		setField(r, &fs[i], &cr.Values[k])
		i++
	}
	setIntField(r, &fs[i], int64(cr.Version))
	final := int64(0)
	if cr.IsFinal {
		final = 1
	}
	setIntField(r, &fs[i+1], final)
}

// setIntField stores v into f, a field held in Row.I (int, time, bool:
// 0 or 1), and marks it valid.
func setIntField(r *row.Row, f *row.Field, v int64) {
	r.I[f.Slot] = v
	r.SetValid(f.Index)
}

// setField stores v into f as row.Row.Set does (whose error, for a kind
// f cannot hold, leaves the field null), storing a value of f's own kind
// without the call.
func setField(r *row.Row, f *row.Field, v *row.Value) {
	if storeSameKind(r, f, v) {
		r.SetValid(f.Index)
	}
}

// FromChangelog hands a result row cr of stage up (desc) to stage si that
// reads its changelog: the row becomes si's input row (window_start,
// window_end, keys, values, version, is_final; weight −1 for
// update_before and delete), its event time is its event-time field plus
// the stage's shift, and the stage's front runs.
func (s *Sender) FromChangelog(si int, step uint64, tail []byte, now int64, cr *changelog.Row, up *changelog.Desc) {
	st := s.g.Plan.Stages[si]
	r := s.scratch[si]
	s.fromRow(si, step, tail, now, r, inputRow(st, r, cr), cr, up)
}

// fromRow runs stage si's front for r, its input row made from an
// upstream row cr (of desc up) with weight ±1: a null event time is
// quarantined, counted as an input or a retraction.
func (s *Sender) fromRow(si int, step uint64, tail []byte, now int64, r *row.Row, weight int, cr *changelog.Row, up *changelog.Desc) {
	st := s.g.Plan.Stages[si]
	et := &st.EventTime
	if r.IsNull(et.Index) {
		s.nullEventTime(si, step, weight, cr, up)
		return
	}
	o := origin{cr: cr, up: up, loc: st.Loc}
	s.toStage(si, step, tail, now, r, &o, r.I[et.Slot]+st.EventTimeShift, weight, &ID{})
}

// nullEventTime counts an input row of stage si whose event time is null
// (an input or a retraction) and quarantines it.
func (s *Sender) nullEventTime(si int, step uint64, weight int, cr *changelog.Row, up *changelog.Desc) {
	st := s.g.Plan.Stages[si]
	et := st.EventTime
	c := &s.cnt.Stages[si]
	if weight > 0 {
		c.In++
	} else {
		c.Retractions++
	}
	o := &origin{cr: cr, up: up, loc: st.Loc}
	s.quarantineStage(si, step, o, "event-time field "+et.Name+" is null", et.Name, "event_time")
}

// Retarget points the sender's outputs at another log and counters (a new
// round's).
func (s *Sender) Retarget(log *Log, cnt *Counters) { s.log, s.cnt = log, cnt }
