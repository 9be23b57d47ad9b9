package task

import (
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/window"
)

// stageNode is a windowed stage's state in one task: its window operator
// over the task's key groups.
type stageNode struct {
	g     *Graph
	si    int
	st    *plan.Stage
	op    *operator.Operator
	enc   *changelog.Encoder
	buf   []byte
	cbuf  []byte
	cwins []window.Window
	tail  []byte
	ord   []operator.EmitOrder
	in    *row.Row // the input row made from an upstream row
	fired int      // rows of the current firing drained so far (tails' index)
	outs  bool     // the stage has ledger or contributions outputs (Graph.Ledger, HasContrib)
}

// DefaultFireChunk is Graph.FireChunk's default.
const DefaultFireChunk = 4096

// newStageNode builds stage si's operator with aggregate columns of its
// own (columns hold state: each task needs its own).
func newStageNode(g *Graph, si int) (*stageNode, error) {
	st := g.Plan.Stages[si]
	cfg := st.Operator
	cfg.Aggs = make([]aggregate.Column, len(st.Aggs))
	for i, sp := range st.Aggs {
		c, err := aggregate.New(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: aggregates.%s: %w", st.Name, sp.Name, err)
		}
		cfg.Aggs[i] = c
	}
	if cfg.Assigner != nil {
		cfg.Assigner = cfg.Assigner.Clone() // assigners cache: one per task
	}
	cfg.KeyGroups = g.KeyGroups
	// Every stage emits its firings in a canonical order, which survives
	// a restore into any number of tasks and lets the rows of several
	// tasks feeding another stage merge exactly: a stage reading the
	// source by birth step (first arrival: each step is one record), a
	// stage reading a changelog — where one step's rows create many
	// instances — by key group.
	cfg.Order = operator.OrderBirth
	if st.Input >= 0 {
		cfg.Order = operator.OrderGroup
	}
	op, err := operator.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", st.Name, err)
	}
	// Without result sinks a stage's rows only feed its downstream stages
	// (Sender.FromChangelog), which take them at once or copy them into
	// packets: nothing keeps a row's key past the drain.
	op.SetTransientKeys(!g.HasSinks[si])
	return &stageNode{g: g, si: si, st: st, op: op, enc: changelog.NewEncoder(st.Loc), in: st.Schema.NewRow(),
		outs: g.Ledger[si] || g.HasContrib[si]}, nil
}

// origin returns where item it of packet p came from, for a side output:
// an upstream row is decoded from the packet here (Packet.putCR), the
// only place it is read. An upstream row that did not travel (no sink
// reads it: Sender.toStage) leaves cr nil, with the stage it came from.
// Errors: damaged bytes (never for a packet this process wrote).
func (sn *stageNode) origin(nr *nodeRT, p *Packet, it *Item) (origin, error) {
	if it.CR == nil && it.crLen > 0 {
		if err := nr.cr.takeCR(p, it); err != nil {
			return origin{}, err
		}
	}
	if it.CR != nil || it.Meta == nil && sn.st.Input >= 0 {
		return origin{cr: it.CR, up: &sn.g.Plan.Stages[sn.st.Input].Desc, loc: sn.st.Loc}, nil
	}
	return origin{meta: it.Meta, loc: sn.st.Loc}, nil
}

// item applies one input to the windows. The common input — a record
// on time — takes the straight path; an upstream row's input row, an
// operator error and the other outcomes are out of line.
func (sn *stageNode) item(nr *nodeRT, p *Packet, it *Item) error {
	r := it.Row
	if r == nil {
		var err error
		if r, err = sn.upstreamInput(it); err != nil {
			return err
		}
	}
	sn.op.SetStep(it.Step)
	out, err := sn.op.Process(r, it.TS, int(it.Weight), it.Now)
	if err != nil {
		return sn.processErr(nr, p, it, err)
	}
	if out == operator.OnTime && it.Weight > 0 {
		nr.t.cnt.Stages[sn.si].OnTime++
		sn.accepted(nr, p, it)
	} else if err := sn.outcome(nr, p, it, out); err != nil {
		return err
	}
	if sn.op.Pending() > 0 {
		return sn.drain(nr, it.Step, p.Tail(it), false, it.Now)
	}
	return nil
}

// upstreamInput returns the input row of an upstream row sent alone
// (it.Row nil): its input row again, as the sender made it (its filter
// kept it and its fields evaluated).
func (sn *stageNode) upstreamInput(it *Item) (*row.Row, error) {
	r := sn.in
	if sn.g.upstreamIsJoin(sn.si) {
		joinInputRow(sn.st, r, it.CR)
	} else {
		inputRow(sn.st, r, it.CR)
	}
	if _, reason, _, bad := evaluate(sn.st, r); bad {
		return nil, fmt.Errorf("%s: an input row evaluated twice gave an error the first time did not: %s", sn.st.Name, reason)
	}
	return r, nil
}

// processErr handles an error of the operator's Process for it: an
// aggregate's rejection quarantines the input, any other error is
// returned.
func (sn *stageNode) processErr(nr *nodeRT, p *Packet, it *Item, err error) error {
	var rej *operator.RejectError
	if errors.As(err, &rej) {
		o, oerr := sn.origin(nr, p, it)
		if oerr != nil {
			return oerr
		}
		quarantineStage(sn.g, nr.log, nr.t.cnt, sn.enc, sn.si, it.Step, &o, rej.Error(), "", "aggregate", &sn.buf)
		return nil
	}
	return fmt.Errorf("%s: %w", sn.st.Name, err)
}

// outcome counts an input whose outcome out is not an on-time insert
// (item's straight path) and applies it. Errors: tooLate's.
func (sn *stageNode) outcome(nr *nodeRT, p *Packet, it *Item, out operator.Outcome) error {
	c := &nr.t.cnt.Stages[sn.si]
	switch out {
	case operator.LateAccepted:
		if it.Weight > 0 {
			c.LateAccepted++
			sn.accepted(nr, p, it)
		}
	case operator.RetractMissing:
		c.RetractMissing++
	case operator.RetractTooLate:
		c.RetractTooLate++
	case operator.TooLate:
		return sn.tooLate(nr, p, it)
	}
	return nil
}

// marker applies a watermark advance or an early firing.
func (sn *stageNode) marker(nr *nodeRT, m *Marker) error {
	switch m.Kind {
	case Advance:
		// In bounded steps: a firing of a million windows goes out a
		// chunk at a time (to the sinks at once in push mode).
		sn.fired = 0
		chunk := sn.g.FireChunk
		if chunk <= 0 {
			chunk = DefaultFireChunk
		}
		more := sn.op.AdvanceWatermarkLimit(m.WM, m.Now, chunk)
		for more {
			// The chunk's rows go on to the next stage's tasks as they
			// are made (Task.SetCheck).
			if err := sn.drain(nr, m.Step, nil, true, m.Now); err != nil {
				return err
			}
			if err := nr.snd.checked(); err != nil {
				return err
			}
			more = sn.op.ContinueAdvance(chunk)
		}
		if err := sn.op.StoreErr(); err != nil {
			return fmt.Errorf("%s: %w", sn.st.Name, err)
		}
	case Early:
		sn.fired = 0
		due := false
		for _, s := range m.Stages {
			due = due || s == sn.si
		}
		if !due {
			return nil
		}
		sn.op.FireEarly(m.Now)
	}
	if sn.op.Pending() > 0 {
		return sn.drain(nr, m.Step, nil, true, m.Now)
	}
	return nil
}

// drain hands the operator's rows to the stage's sinks (the log) and to
// the stages reading its changelog, each with its order tail: the input's
// tail and the row's index for the rows of one input, the stage's depth,
// the row's EmitOrder and index for the rows of a firing. A firing's
// rows reach the runner's check (Task.SetCheck) after every checkEvery
// rows handed on, so a sender passes its share of the exchange by at most
// that many rows, however wide they are (a chunk of Graph.FireChunk rows
// of about 300 bytes each in packets would be 1.2 MB). Errors: the
// check's.
func (sn *stageNode) drain(nr *nodeRT, step uint64, tail []byte, firing bool, now int64) error {
	g := sn.g
	down := g.Downstream[sn.si]
	jdown := g.JoinDown[sn.si]
	if (len(down) > 0 || len(jdown) > 0) && firing {
		sn.ord = append(sn.ord[:0], sn.op.DrainOrder()...)
	}
	rows := sn.op.Drain()
	c := &nr.t.cnt.Stages[sn.si]
	c.RowsEmitted += int64(len(rows))
	for i := range rows {
		if rows[i].IsFinal {
			c.FinalRows++
		}
	}
	if g.HasSinks[sn.si] {
		nr.log.rows(step, ResultsOf(sn.si), rows, g.Lineage, g.LineageAt)
	}
	if len(down) == 0 && len(jdown) == 0 {
		return nil
	}
	if firing {
		defer func() { sn.fired += len(rows) }()
	}
	sent := 0
	desc := &sn.st.Desc
	for i := 0; i < len(rows); i++ {
		// An update_before/update_after pair that changes no value is a
		// no-op for a downstream aggregate.
		if i+1 < len(rows) && noChange(&rows[i], &rows[i+1]) {
			i++
			continue
		}
		if firing {
			o := sn.ord[i]
			sn.tail = appendFiring(sn.tail[:0], nr.n.Depth, o.A, o.B, o.C, sn.fired+i)
		} else {
			sn.tail = appendChild(sn.tail[:0], tail, i)
		}
		for _, d := range down {
			nr.snd.FromChangelog(d, step, sn.tail, now, &rows[i], desc)
		}
		for _, js := range jdown {
			nr.snd.FromStageToJoin(js.Stage, js.Side, step, sn.tail, now, &rows[i], desc)
		}
		if sent++; firing && sent%checkEvery == 0 {
			if err := nr.snd.checked(); err != nil {
				return err
			}
		}
	}
	return nil
}

// accepted hands an accepted source record to the stage's ledger and
// contributions outputs, when it has either: small enough to inline, so a
// stage without them pays no call per record.
func (sn *stageNode) accepted(nr *nodeRT, p *Packet, it *Item) {
	if sn.outs && it.Meta != nil {
		sn.toOutputs(nr, p, it)
	}
}

// toOutputs is accepted's work.
func (sn *stageNode) toOutputs(nr *nodeRT, p *Packet, it *Item) {
	if sn.g.Ledger[sn.si] {
		sn.ledger(nr, p, it)
	}
	if sn.g.HasContrib[sn.si] {
		sn.contribution(nr, p, it)
	}
}

// ledger records one accepted source event for the ledger sinks: its id
// and payload hash (from the dedup step), its window (tumbling: exactly
// one), its key and deltas.
func (sn *stageNode) ledger(nr *nodeRT, p *Packet, it *Item) {
	st := sn.st
	sn.cwins = sn.op.Assigner().Assign(it.TS, sn.cwins[:0])
	w := sn.cwins[0]
	ev := LedgerEvent{Stage: sn.si, PayloadHash: it.Payload, EventTime: it.TS, Now: it.Now, WindowStart: w.Start, WindowEnd: w.End, Position: it.Meta.Pos}
	if it.HasID {
		ev.EventID = string(p.ID(it))
	}
	for _, f := range st.Key {
		ev.Key = append(ev.Key, ownValue(it.Row.Get(f)))
	}
	for _, a := range st.Aggs {
		v := row.Null
		if a.HasArg {
			v = ownValue(it.Row.Get(a.Arg))
		}
		ev.Deltas = append(ev.Deltas, v)
	}
	ev.JSON = sn.g.EventJSON(nil, it.Meta)
	nr.log.ledger(it.Step, ev)
}

// ownValue returns v with a string it owns.
func ownValue(v row.Value) row.Value {
	if v.Kind == row.KindString {
		v.S = string([]byte(v.S))
	}
	return v
}

// contribution writes one contributions record:
//
//	{"event_id":…,"event_time":…,"windows":[[start,end],…],"key":{…},
//	 "deltas":{"<aggregate>":<argument>|1,…},"source":"file:line"}
//
// event_id is the dedup key's text (null without dedup); deltas hold each
// aggregate's argument value (count(): 1; a null argument: null).
func (sn *stageNode) contribution(nr *nodeRT, p *Packet, it *Item) {
	st := sn.st
	r := it.Row
	b := append(sn.cbuf[:0], `{"event_id":`...)
	if it.HasID {
		b = changelog.AppendJSONString(b, string(p.ID(it)))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"event_time":`...)
	b = sn.enc.Time(b, it.TS)
	b = append(b, `,"windows":[`...)
	if a := sn.op.Assigner(); a != nil {
		sn.cwins = a.Assign(it.TS, sn.cwins[:0])
		for i, w := range sn.cwins {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = sn.enc.Time(b, w.Start)
			b = append(b, ',')
			b = sn.enc.Time(b, w.End)
			b = append(b, ']')
		}
	}
	b = append(b, `],"key":{`...)
	for i, f := range st.Key {
		if i > 0 {
			b = append(b, ',')
		}
		b = changelog.AppendJSONString(b, f.Name)
		b = append(b, ':')
		b = sn.enc.Value(b, r.Get(f))
	}
	b = append(b, `},"deltas":{`...)
	for i, a := range st.Aggs {
		if i > 0 {
			b = append(b, ',')
		}
		b = changelog.AppendJSONString(b, a.Name)
		b = append(b, ':')
		if !a.HasArg {
			b = append(b, '1')
		} else {
			b = sn.enc.Value(b, r.Get(a.Arg))
		}
	}
	b = append(b, `},"source":`...)
	b = changelog.AppendJSONString(b, it.Meta.Pos.String())
	b = append(b, '}')
	sn.cbuf = b
	start := len(nr.log.Bytes)
	nr.log.Bytes = append(nr.log.Bytes, b...)
	nr.log.record(it.Step, ContribOf(sn.si), start)
}

// tooLate applies the late policy to a record every window of which has
// closed. Errors: origin's.
func (sn *stageNode) tooLate(nr *nodeRT, p *Packet, it *Item) error {
	c := &nr.t.cnt.Stages[sn.si]
	if !sn.g.HasLate[sn.si] {
		c.TooLateDropped++
		return nil
	}
	c.TooLateSideOutput++
	wm := sn.op.Watermark()
	o, err := sn.origin(nr, p, it)
	if err != nil {
		return err
	}
	sn.buf = sn.g.event(sn.buf[:0], &o)
	rec := changelog.LateRecord{
		Stage:            sn.st.Name,
		Event:            sn.buf,
		EventTime:        it.TS,
		ObservedAt:       it.Now,
		CurrentWatermark: wm,
		LatenessMs:       changelog.Lateness(wm, it.TS),
		Reason: fmt.Sprintf("every window of the event had closed: watermark %s passed window end + allowed lateness %s",
			changelog.FormatWatermark(wm, sn.st.Loc), time.Duration(sn.st.Operator.AllowedLateness)*time.Millisecond),
		Position: o.pos(),
	}
	start := len(nr.log.Bytes)
	nr.log.Bytes = sn.enc.Late(nr.log.Bytes, &rec)
	nr.log.record(it.Step, LateOf(sn.si), start)
	return nil
}
