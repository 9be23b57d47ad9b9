package engine

import (
	"sync/atomic"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/task"
)

// preBatch is the part of the router's per-record work that depends on
// the record alone, computed by a decoder for one claimed batch right
// after decoding it (decoders.go): per record, whether the contract's
// rules pass (when they cannot depend on processing time: the record
// has its ingest time), its event id's text and hash (dedup.key), and
// for a select stage reading the source (task.SelectFront) the verdict
// of its filter and derived fields and the values of its row, or for a
// stage with state reading the source (task.KeyedFront) the verdict of
// its filter and derived fields, its input row with the derived fields
// and the task owning its group key's key group. The
// router, routing the batch in claim order, runs everything that
// depends on the records before (processing time, the checks on event
// time, the timestamp rules, step numbers, the watermark, the counters)
// as for any record, and takes a precomputed result instead of
// computing it; a check that failed, or was not computed, it runs
// itself, in order, as before (runtime.record). So the rows, steps,
// side outputs and counters are those of the router's own front; only
// where the pure parts are computed changes.
//
// A preBatch belongs to one source batch (decoders.pres): its values
// stay valid while the batch's rows do, until the round that routed the
// batch is written, so the rows the router logs hold them uncopied.
type preBatch struct {
	verdict []uint8     // per record: task.PreKept, PreFiltered or PreRouter (a select or keyed front)
	vals    []row.Value // per record, stride values (a kept record's row; a select front)
	stride  int         // the values of one row: the select list's, 0 without result sinks
	keyed   bool        // verdict is a keyed front's (task.KeyedFront), owner holds its owners
	owner   []int32     // per record: the task owning a kept record's key group (a keyed front)
	// rows holds, per record, its input row of a keyed stage with
	// derived fields (one per record of the batch); reused batch after
	// batch, so the rows' slots are allocated once.
	rows   []*row.Row
	flags  []uint8  // per record: preRulesOK, preID
	ids    []byte   // the event ids' texts, back to back
	idEnd  []uint32 // per record: where its id's text ends in ids
	idHash []uint64 // per record: dedup.IDHash of its id (preID)
}

// The flags of a preBatch record.
const (
	preRulesOK = 1 << iota // the contract's rules pass
	preID                  // idEnd and idHash hold its event id
)

// preFront is what a decoder computes of each record (preBatch); one
// per decoder goroutine.
type preFront struct {
	sel    *task.SelectFront // nil: no select front
	key    *task.KeyedFront  // nil: no keyed front (sel and key are never both set)
	rules  *contract.Checker // nil: the rules are the router's
	et     row.Field         // the event-time field
	ingest row.Field         // the contract's ingest time (rules set)
	dedup  *plan.Dedup       // nil: no event id computed
	id     []byte
}

// fill computes the front of every record of b, decoded: a record the
// source could not decode (Meta.Err) is left to the router, which
// quarantines it, and so are the contract's rules and the event id of a
// record with a null event time, which the router quarantines first.
func (pb *preBatch) fill(pf *preFront, b *source.Batch) {
	n := len(b.Rows)
	pb.verdict, pb.vals, pb.flags = pb.verdict[:0], pb.vals[:0], pb.flags[:0]
	pb.ids, pb.idEnd, pb.idHash = pb.ids[:0], pb.idEnd[:0], pb.idHash[:0]
	pb.owner, pb.keyed = pb.owner[:0], pf.key != nil
	if kf := pf.key; kf != nil && kf.Derived() {
		for len(pb.rows) < n {
			pb.rows = append(pb.rows, kf.NewRow())
		}
	}
	for i := range n {
		r, ok := &b.Rows[i], b.Meta[i].Err == nil
		var fl uint8
		if ok && !r.IsNull(pf.et.Index) {
			if ch := pf.rules; ch != nil && !r.IsNull(pf.ingest.Index) {
				// The rules' arrival is the record's ingest time
				// (runtime.record), so they are the record's alone.
				at := r.I[pf.ingest.Slot]
				if _, _, _, pass := ch.Check(r, r.I[pf.et.Slot], at); pass {
					fl |= preRulesOK
				}
			}
			if d := pf.dedup; d != nil {
				if v, err := d.Key.Eval(r); err == nil && !v.IsNull() {
					start := len(pb.ids)
					pb.ids = v.AppendText(pb.ids, nil)
					pb.idHash = append(pb.idHash, dedup.IDHash(pb.ids[start:]))
					fl |= preID
				}
			}
		}
		if fl&preID == 0 && pf.dedup != nil {
			pb.idHash = append(pb.idHash, 0)
		}
		if pf.dedup != nil {
			pb.idEnd = append(pb.idEnd, uint32(len(pb.ids)))
		}
		pb.flags = append(pb.flags, fl)
		if kf := pf.key; kf != nil {
			v, owner := task.PreRouter, 0
			if ok {
				var w *row.Row
				if kf.Derived() {
					w = pb.rows[i]
				}
				v, owner = kf.Eval(r, w)
			}
			pb.verdict = append(pb.verdict, v)
			pb.owner = append(pb.owner, int32(owner))
			continue
		}
		if pf.sel == nil {
			continue
		}
		start := len(pb.vals)
		v := task.PreRouter
		if ok {
			v, pb.vals = pf.sel.Eval(r, pb.vals)
		}
		if len(pb.vals) == start {
			// Not kept (or no values made): the stride's place, unused.
			for range pb.stride {
				pb.vals = append(pb.vals, row.Null)
			}
		}
		pb.verdict = append(pb.verdict, v)
	}
}

// id returns the event id of record i (preID set).
func (pb *preBatch) id(i int) task.ID {
	start := uint32(0)
	if i > 0 {
		start = pb.idEnd[i-1]
	}
	return task.ID{Text: pb.ids[start:pb.idEnd[i]:pb.idEnd[i]], Hash: pb.idHash[i], Has: true}
}

// preRouted counts, over the process, the batches the router routed
// with a front their decoder computed (the tests' evidence that the path
// ran).
var preRouted atomic.Int64

// row returns the values of record i (kept).
func (pb *preBatch) row(i int) []row.Value {
	return pb.vals[i*pb.stride : (i+1)*pb.stride : (i+1)*pb.stride]
}

// input returns record i's input row of a keyed stage with derived
// fields (kept), nil for a stage without them (the source row is its
// input).
func (pb *preBatch) input(i int) *row.Row {
	if i < len(pb.rows) {
		return pb.rows[i]
	}
	return nil
}

// preFronts returns the decoders' preFront, one per decoder (nil when
// they compute none), and a preBatch's stride. They compute one for a
// run where nothing the router does writes into a record before its
// checks (no source.processing_time_field, no reference data, no change
// stream), whose source's batches are the claimed ones once decoded (no
// replay reordering them) and complete but for their metas (a
// source.Finisher may fill in partitions and arrival times, not an
// ordinal: source.RowFinisher): the contract's rules when it names an
// ingest time, the event id with dedup, and the front of a select stage
// when it is the only stage reading the source, with no join on the
// source, no lineage column and no dedup or order_by before it.
func (rt *runtime) preFronts(d *decoders, n int) (fronts []*preFront, stride int) {
	p := rt.plan
	if d.fin != nil {
		if rf, ok := d.fin.(source.RowFinisher); !ok || rf.FinishesRows() {
			return nil, 0
		}
	}
	if d.reo != nil || rt.inline || rt.groupMarker != nil || rt.ptField.Index >= 0 || rt.ref != nil || p.Changes != nil {
		return nil, 0
	}
	sel := rt.g.DedupNode < 0 && rt.g.OrderNode < 0
	key := sel
	if sel {
		sf, ok := task.NewSelectFront(rt.g)
		if sel = ok; ok && rt.g.HasSinks[sf.Stage()] {
			stride = len(p.Stages[sf.Stage()].Select)
		}
	}
	if key = key && !sel; key {
		_, key = task.NewKeyedFront(rt.g)
	}
	rules := p.Rules != nil && p.HasIngest
	if !sel && !key && !rules && p.Dedup == nil {
		return nil, 0
	}
	for range n {
		pf := &preFront{et: rt.etField, dedup: p.Dedup}
		if rules {
			pf.rules, pf.ingest = p.Rules, p.Ingest
		}
		if sel {
			pf.sel, _ = task.NewSelectFront(rt.g) // one per goroutine: its scratch row
		}
		if key {
			pf.key, _ = task.NewKeyedFront(rt.g) // one per goroutine: its key buffer
		}
		fronts = append(fronts, pf)
	}
	return fronts, stride
}
