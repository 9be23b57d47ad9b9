package engine

import (
	"sync/atomic"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/task"
)

// preBatch is the stateless front of a select stage reading the source
// (task.SelectFront), computed by a decoder for one claimed batch right
// after decoding it: per record, the verdict of the stage's filter and
// derived fields, and for a record kept the values of its row. The
// router, routing the batch in claim order, runs everything that depends
// on the records before (processing time, the checks on event time,
// contract and timestamp rules, step numbers, the watermark, the
// counters) as for any record, and for a record that reaches the stage
// takes its precomputed verdict instead of evaluating the stage itself
// (runtime.record). So the rows, steps and counters are those of the
// router's own front; only where the filter, the derived fields and the
// values are computed changes.
//
// A preBatch belongs to one source batch (decoders.pres): its values
// stay valid while the batch's rows do, until the round that routed the
// batch is written, so the rows the router logs hold them uncopied.
type preBatch struct {
	verdict []uint8     // per record: task.PreKept, PreFiltered or PreRouter
	vals    []row.Value // per record, stride values (a kept record's row)
	stride  int         // the values of one row: the select list's, 0 without result sinks
}

// preRouted counts, over the process, the batches the router routed
// with a front their decoder computed (the tests' evidence that the path
// ran).
var preRouted atomic.Int64

// fill computes the front of sf for every record of b, decoded: a record
// the source could not decode (Meta.Err) is left to the router
// (PreRouter), which quarantines it before the stage.
func (pb *preBatch) fill(sf *task.SelectFront, b *source.Batch) {
	n := len(b.Rows)
	pb.verdict = pb.verdict[:0]
	pb.vals = pb.vals[:0]
	for i := range n {
		start := len(pb.vals)
		v := task.PreRouter
		if b.Meta[i].Err == nil {
			v, pb.vals = sf.Eval(&b.Rows[i], pb.vals)
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

// row returns the values of record i (kept).
func (pb *preBatch) row(i int) []row.Value {
	return pb.vals[i*pb.stride : (i+1)*pb.stride : (i+1)*pb.stride]
}

// selectFront reports whether the decoders compute the front of the
// source's select stage (preBatch), and its stride: a run whose only
// stage reading the source is a select stage, with no join on the
// source, no lineage column, no dedup, order_by or change stream before
// the stage, and nothing the router writes into a record before its
// front (source.processing_time_field, reference data). The source's
// batches must be the claimed ones (no replay reordering them) and be
// complete once decoded but for their metas (a source.Finisher may fill
// in partitions and arrival times, not an ordinal: source.RowFinisher).
func (rt *runtime) selectFront(d *decoders) (stride int, ok bool) {
	p := rt.plan
	if d.fin != nil {
		if rf, ok := d.fin.(source.RowFinisher); !ok || rf.FinishesRows() {
			return 0, false
		}
	}
	if d.reo != nil || rt.inline || rt.groupMarker != nil ||
		rt.ptField.Index >= 0 || rt.ref != nil || p.Changes != nil ||
		rt.g.DedupNode >= 0 || rt.g.OrderNode >= 0 {
		return 0, false
	}
	sf, ok := task.NewSelectFront(rt.g)
	if !ok {
		return 0, false
	}
	if si := sf.Stage(); rt.g.HasSinks[si] {
		stride = len(p.Stages[si].Select)
	}
	return stride, true
}
