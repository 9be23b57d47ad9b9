package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/operator"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/window"
)

// stage is the runtime of one plan stage.
type stage struct {
	rt      *runtime
	p       *plan.Stage
	op      *operator.Operator
	sinks   []sink.Results
	late    sink.Records
	ledger  []*ledgerSink // postgres sinks in mode ledger (also in sinks)
	contrib sink.Records  // contributions.sink: the events behind the rows
	cbuf    []byte
	cwins   []window.Window

	// A select stage (p.Desc.Stateless; op is nil): the rows of the
	// current source batch, written at its end (their strings point into
	// the batch).
	selRows []changelog.Row
	selVals []row.Value

	// Rows with the lineage value, for the sinks (Options.Lineage).
	linRows []changelog.Row
	linVals []row.Value
	down    []*stage
	in      *row.Row // input row for a stage reading a changelog
	enc     *changelog.Encoder
	cnt     Counters
	firstQ  string
}

// origin describes where an input record came from, for side outputs: a
// source record, or an upstream stage's result row.
type origin struct {
	meta *source.Meta
	src  source.Source
	cr   *changelog.Row
	up   *changelog.Desc
	loc  *time.Location
}

// raw returns the record's original bytes.
func (o *origin) raw() []byte {
	if o.meta != nil {
		if o.meta.Raw == nil { // a generated record (nexmark)
			return o.src.EventJSON(nil, o.meta)
		}
		return o.meta.Raw
	}
	return changelog.AppendRowJSON(nil, o.cr, o.up, o.loc)
}

// event appends the record as a JSON object.
func (o *origin) event(dst []byte) []byte {
	if o.meta != nil {
		return o.src.EventJSON(dst, o.meta)
	}
	return changelog.AppendRowJSON(dst, o.cr, o.up, o.loc)
}

func (o *origin) pos() changelog.Position {
	if o.meta != nil {
		return o.meta.Pos
	}
	return changelog.Position{Source: "stage " + o.up.Stage}
}

// process runs one input record (weight +1, or −1 for a retraction) through
// filter, derived fields and the operator. It reports whether the record
// was valid (not quarantined).
func (st *stage) process(ctx context.Context, r *row.Row, ts int64, weight int, org *origin) (bool, error) {
	if weight > 0 {
		st.cnt.In++
	} else {
		st.cnt.Retractions++
	}
	p := st.p
	keep, reason, field, bad := st.evaluate(r)
	if bad {
		return false, st.quarantine(ctx, org.raw(), reason, field, "expression", org.pos())
	}
	if !keep {
		if weight > 0 {
			st.cnt.Filtered++
		}
		return true, nil
	}
	if st.op == nil {
		st.selectRow(r, ts)
		return true, nil
	}
	out, err := st.op.Process(r, ts, weight, st.rt.now)
	if err != nil {
		var rej *operator.RejectError
		if errors.As(err, &rej) {
			return false, st.quarantine(ctx, org.raw(), rej.Error(), "", "aggregate", org.pos())
		}
		return false, fmt.Errorf("%s: %w", p.Name, err)
	}
	switch out {
	case operator.OnTime:
		if weight > 0 {
			st.cnt.OnTime++
			st.toLedgers(r, ts, org)
		}
	case operator.LateAccepted:
		if weight > 0 {
			st.cnt.LateAccepted++
			st.toLedgers(r, ts, org)
		}
	case operator.RetractMissing:
		st.cnt.RetractMissing++
	case operator.RetractTooLate:
		st.cnt.RetractTooLate++
	case operator.TooLate:
		if err := st.tooLate(ctx, ts, org); err != nil {
			return false, err
		}
	}
	return true, st.emitPending(ctx)
}

// toLedgers hands an accepted source record to the stage's ledger sinks
// and contributions sink.
func (st *stage) toLedgers(r *row.Row, ts int64, org *origin) {
	if org.meta == nil {
		return
	}
	for _, ls := range st.ledger {
		ls.add(r, ts, org)
	}
	if st.contrib != nil {
		st.contribution(r, ts, org)
	}
}

// contribution writes one contributions record:
//
//	{"event_id":…,"event_time":…,"windows":[[start,end],…],"key":{…},
//	 "deltas":{"<aggregate>":<argument>|1,…},"source":"file:line"}
//
// event_id is the dedup key's text (null without dedup); deltas hold each
// aggregate's argument value (count(): 1; a null argument: null).
func (st *stage) contribution(r *row.Row, ts int64, org *origin) {
	p := st.p
	b := append(st.cbuf[:0], `{"event_id":`...)
	if d := st.rt.dedup; d != nil {
		b = changelog.AppendJSONString(b, string(d.key))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"event_time":`...)
	b = st.enc.Time(b, ts)
	b = append(b, `,"windows":[`...)
	if a := p.Operator.Assigner; a != nil {
		st.cwins = a.Assign(ts, st.cwins[:0])
		for i, w := range st.cwins {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = st.enc.Time(b, w.Start)
			b = append(b, ',')
			b = st.enc.Time(b, w.End)
			b = append(b, ']')
		}
	}
	b = append(b, `],"key":{`...)
	for i, f := range p.Key {
		if i > 0 {
			b = append(b, ',')
		}
		b = changelog.AppendJSONString(b, f.Name)
		b = append(b, ':')
		b = st.enc.Value(b, r.Get(f))
	}
	b = append(b, `},"deltas":{`...)
	for i, a := range p.Aggs {
		if i > 0 {
			b = append(b, ',')
		}
		b = changelog.AppendJSONString(b, a.Name)
		b = append(b, ':')
		switch {
		case !a.HasArg:
			b = append(b, '1')
		default:
			b = st.enc.Value(b, r.Get(a.Arg))
		}
	}
	b = append(b, `},"source":`...)
	b = changelog.AppendJSONString(b, org.pos().String())
	b = append(b, '}')
	st.cbuf = b
	if err := st.contrib.WriteRecord(context.Background(), b); err != nil && st.rt.contribErr == nil {
		st.rt.contribErr = fmt.Errorf("%s: contributions sink: %w", p.Name, err)
	}
}

// invalid reports whether the stage would quarantine r for an expression
// error (filter or derived field), with the reason and field, without
// counting or emitting anything. It computes r's derived fields.
func (st *stage) invalid(r *row.Row) (reason, field string, bad bool) {
	_, reason, field, bad = st.evaluate(r)
	if bad && field != "" {
		reason = "stage " + st.p.Name + ": " + reason
	}
	return reason, field, bad
}

// evaluate runs the stage's filter and computes r's derived fields. keep
// is false for a record the filter drops (valid, contributes nothing); bad
// is true for an expression error, with its reason and the derived field
// at fault ("" for the filter).
func (st *stage) evaluate(r *row.Row) (keep bool, reason, field string, bad bool) {
	p := st.p
	if p.Filter != nil {
		k, ok, err := p.Filter.EvalBool(r)
		if err != nil {
			return false, "filter: " + err.Error(), "", true
		}
		if !ok || !k {
			return false, "", "", false
		}
	}
	if len(p.Derived) > 0 {
		p.Schema.ExtendFrom(r, p.InputFields)
		for i := range p.Derived {
			if err := derive(r, &p.Derived[i]); err != nil {
				return false, err.Error(), p.Derived[i].Field.Name, true
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

func (st *stage) quarantine(ctx context.Context, raw []byte, reason, field, rule string, pos changelog.Position) error {
	st.cnt.Quarantined++
	if st.firstQ == "" {
		st.firstQ = pos.String() + ": "
		if field != "" && !strings.Contains(reason, field) {
			st.firstQ += "field " + field + ": "
		}
		st.firstQ += reason
	}
	q := st.rt.quarantine
	if q == nil {
		return nil
	}
	rec := changelog.QuarantineRecord{Stage: st.p.Name, Raw: raw, Reason: reason, Field: field, Rule: rule, Position: pos}
	st.rt.buf = st.enc.Quarantine(st.rt.buf[:0], &rec)
	if err := q.WriteRecord(ctx, st.rt.buf); err != nil {
		return fmt.Errorf("quarantine sink: %w", err)
	}
	return nil
}

func (st *stage) tooLate(ctx context.Context, ts int64, org *origin) error {
	if st.late == nil {
		st.cnt.TooLateDropped++
		return nil
	}
	st.cnt.TooLateSideOutput++
	wm := st.op.Watermark()
	rec := changelog.LateRecord{
		Stage:            st.p.Name,
		Event:            org.event(nil),
		EventTime:        ts,
		ObservedAt:       st.rt.now,
		CurrentWatermark: wm,
		LatenessMs:       wm - ts,
		Reason: fmt.Sprintf("every window of the event had closed: watermark %s passed window end + allowed lateness %s",
			row.FormatTime(wm, st.p.Loc), time.Duration(st.p.Operator.AllowedLateness)*time.Millisecond),
		Position: org.pos(),
	}
	st.rt.buf = st.enc.Late(st.rt.buf[:0], &rec)
	if err := st.late.WriteRecord(ctx, st.rt.buf); err != nil {
		return fmt.Errorf("%s: late sink: %w", st.p.Name, err)
	}
	return nil
}

// selectRow emits record r of a select stage as an insert row.
func (st *stage) selectRow(r *row.Row, ts int64) {
	st.cnt.OnTime++
	for _, f := range st.p.Select {
		st.selVals = append(st.selVals, r.Get(f))
	}
	if lin := st.rt.linVal; lin.Kind == row.KindString {
		st.selVals = append(st.selVals, lin) // the sinks' last column (sinkDesc)
	}
	st.selRows = append(st.selRows, changelog.Row{Op: changelog.Insert, WindowStart: ts, WindowEnd: ts,
		Version: 1, IsFinal: true, WatermarkAt: st.rt.wm, UpdatedAt: st.rt.now})
}

// flushSelect writes a select stage's rows to its sinks.
func (st *stage) flushSelect(ctx context.Context) error {
	if len(st.selRows) == 0 {
		return nil
	}
	k := len(st.selVals) / len(st.selRows) // the selected fields, and the lineage value
	for i := range st.selRows {
		st.selRows[i].Values = st.selVals[i*k : (i+1)*k : (i+1)*k]
	}
	st.cnt.RowsEmitted += int64(len(st.selRows))
	st.cnt.FinalRows += int64(len(st.selRows))
	for _, s := range st.sinks {
		if err := s.Write(ctx, st.selRows); err != nil {
			return fmt.Errorf("%s: sink: %w", st.p.Name, err)
		}
	}
	clear(st.selVals)
	st.selRows, st.selVals = st.selRows[:0], st.selVals[:0]
	return nil
}

// advance moves the stage's watermark, then its downstream stages'.
func (st *stage) advance(ctx context.Context, wm int64) error {
	if st.op == nil {
		return nil // a select stage: no windows, no downstream stages
	}
	if err := st.op.AdvanceWatermark(wm, st.rt.now); err != nil {
		return err
	}
	if err := st.emitPending(ctx); err != nil {
		return err
	}
	for _, d := range st.down {
		if err := d.advance(ctx, wm); err != nil {
			return err
		}
	}
	return nil
}

// emitPending hands the operator's emitted rows to the sinks and to the
// downstream stages.
func (st *stage) emitPending(ctx context.Context) error {
	if st.op == nil || st.op.Pending() == 0 {
		return nil
	}
	rows := st.op.Drain()
	st.cnt.RowsEmitted += int64(len(rows))
	for i := range rows {
		if rows[i].IsFinal {
			st.cnt.FinalRows++
		}
	}
	if len(st.sinks) > 0 {
		// The sinks get copies with the lineage value; rows stay as the
		// operator made them for the downstream stages.
		out := st.withLineage(rows)
		for _, s := range st.sinks {
			if err := s.Write(ctx, out); err != nil {
				return fmt.Errorf("%s: sink: %w", st.p.Name, err)
			}
		}
	}
	for _, d := range st.down {
		for i := 0; i < len(rows); i++ {
			// An update_before/update_after pair that changes no value
			// (a window closing in retract mode: only is_final and the
			// version change) is a no-op for a downstream aggregate.
			if i+1 < len(rows) && noChange(&rows[i], &rows[i+1]) {
				i++
				continue
			}
			if err := d.changelogRow(ctx, &rows[i], &st.p.Desc); err != nil {
				return err
			}
		}
	}
	return nil
}

// noChange reports whether a and b are an update_before/update_after pair
// of one row with the same window and values.
func noChange(a, b *changelog.Row) bool {
	if a.Op != changelog.UpdateBefore || b.Op != changelog.UpdateAfter ||
		a.WindowStart != b.WindowStart || a.WindowEnd != b.WindowEnd || len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Key {
		if !a.Key[i].Equal(b.Key[i]) {
			return false
		}
	}
	for i := range a.Values {
		if !a.Values[i].Equal(b.Values[i]) {
			return false
		}
	}
	return true
}

// changelogRow feeds one upstream result row into this stage.
func (st *stage) changelogRow(ctx context.Context, cr *changelog.Row, up *changelog.Desc) error {
	r := st.in
	st.p.Schema.Shape(r)
	s := st.p.Schema
	set := func(i int, v row.Value) { _ = r.Set(s.Fields[i], v) }
	set(0, row.Time(cr.WindowStart))
	set(1, row.Time(cr.WindowEnd))
	i := 2
	for _, v := range cr.Key {
		set(i, v)
		i++
	}
	for _, v := range cr.Values {
		set(i, v)
		i++
	}
	set(i, row.Int(int64(cr.Version)))
	set(i+1, row.Bool(cr.IsFinal))
	weight := 1
	if cr.Op.Retracts() {
		weight = -1
	}
	org := origin{cr: cr, up: up, loc: st.p.Loc}
	et := st.p.EventTime
	if r.IsNull(et.Index) {
		if weight > 0 {
			st.cnt.In++
		} else {
			st.cnt.Retractions++
		}
		return st.quarantine(ctx, org.raw(), "event-time field "+et.Name+" is null", et.Name, "event_time", org.pos())
	}
	ts := r.I[et.Slot] + st.p.EventTimeShift
	_, err := st.process(ctx, r, ts, weight, &org)
	return err
}
