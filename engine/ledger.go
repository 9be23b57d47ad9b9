package engine

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/aggregate"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/postgres"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// ledgerBatch is the number of pending events at which a ledger sink
// applies them between checkpoints (one PostgreSQL transaction each).
const ledgerBatch = 4096

// ledgerSink is a stage's postgres sink in mode ledger
// (docs/connectors/postgres.md): the stage hands it every source event it
// accepts into a window (on time or late within allowed lateness), and it
// applies them to the event ledger in batches — before each checkpoint,
// at each flush, and every ledgerBatch events. The stage's result rows do
// not reach it: the ledger's aggregate table is the sum of the deltas of
// the event ids in its ledger.
//
// A ledger conflict (an event id the ledger holds with another payload
// hash: the stream's own dedup state did not know the id) goes to the
// pipeline's conflict output, without the first payload (the ledger keeps
// only its hash).
type ledgerSink struct {
	rt  *runtime
	si  int    // the stage
	id  string // "<stage>: sinks[i]"
	l   *postgres.Ledger
	agg []aggregate.Spec

	events []postgres.LedgerEvent
	raw    []byte // events' JSON, back to back
	ends   []int  // end of each event's JSON in raw
	pos    []changelog.Position
	seen   []int64 // processing time of each event
	enc    *changelog.Encoder
	buf    []byte

	applied, duplicates, conflicts int64
}

var _ sink.Results = (*ledgerSink)(nil)
var _ sink.Committer = (*ledgerSink)(nil)

// openLedger connects the ledger sink s of stage si.
func (rt *runtime) openLedger(ctx context.Context, si int, s spec.Sink, id string) (*ledgerSink, error) {
	p := rt.plan.Stages[si]
	cfg := postgres.LedgerConfig{
		Table:          s.LedgerTable,
		AggregateTable: s.Table,
		Keys:           p.Desc.Key,
		Pipeline:       rt.plan.Spec.Name,
		Sink:           s.LedgerTable,
		Group:          rt.env.Group,
	}
	for i, a := range p.Aggs {
		la := postgres.LedgerAggregate{Name: a.Name, Func: postgres.LedgerSum, Kind: p.Desc.Values[i].Kind}
		if a.Func == "count" {
			la.Func, la.Kind = postgres.LedgerCount, row.KindInt
		}
		cfg.Aggregates = append(cfg.Aggregates, la)
	}
	l, err := postgres.NewLedger(ctx, s.DSN, cfg)
	if err != nil {
		return nil, err
	}
	return &ledgerSink{rt: rt, si: si, id: id, l: l, agg: p.Aggs, enc: changelog.NewEncoder(p.Loc)}, nil
}

// add records one accepted source event (task.LedgerEvent: its values are
// its own).
func (ls *ledgerSink) add(ev *task.LedgerEvent) {
	ls.events = append(ls.events, postgres.LedgerEvent{
		EventID:     ev.EventID,
		PayloadHash: int64(ev.PayloadHash),
		EventTime:   ev.EventTime,
		WindowStart: ev.WindowStart,
		WindowEnd:   ev.WindowEnd,
		Key:         ev.Key,
		Deltas:      ev.Deltas,
	})
	ls.raw = append(ls.raw, ev.JSON...)
	ls.ends = append(ls.ends, len(ls.raw))
	ls.pos = append(ls.pos, ev.Position)
	ls.seen = append(ls.seen, ev.Now)
}

// apply sends the pending events to the ledger in one transaction and
// writes the ledger's conflicts to the conflict output.
func (ls *ledgerSink) apply(ctx context.Context) error {
	if len(ls.events) == 0 {
		return nil
	}
	res, err := ls.l.Apply(ctx, ls.events)
	if err != nil {
		return fmt.Errorf("%s: %w", ls.id, err)
	}
	ls.applied += int64(res.Applied)
	ls.duplicates += int64(res.Duplicates)
	ls.conflicts += int64(len(res.Conflicts))
	rt := ls.rt
	for _, c := range res.Conflicts {
		if rt.conflictS == nil {
			continue
		}
		start := 0
		if c.Index > 0 {
			start = ls.ends[c.Index-1]
		}
		rec := changelog.ConflictRecord{
			EventID:          c.EventID,
			FirstPayloadHash: uint32(c.StoredHash),
			NewPayloadHash:   uint32(c.NewHash),
			NewPayload:       ls.raw[start:ls.ends[c.Index]],
			EventTime:        ls.events[c.Index].EventTime,
			ObservedAt:       ls.seen[c.Index],
			Position:         ls.pos[c.Index],
		}
		ls.buf = ls.enc.Conflict(ls.buf[:0], &rec)
		if err := rt.conflictS.WriteRecord(ctx, ls.buf); err != nil {
			return fmt.Errorf("conflicts sink: %w", err)
		}
	}
	ls.reset()
	var next int64
	if rt.ck != nil {
		next = rt.ck.nextID
	}
	rt.fault("applied:"+ls.id, next)
	return nil
}

// reset empties the pending events.
func (ls *ledgerSink) reset() {
	clear(ls.events)
	ls.events = ls.events[:0]
	ls.raw, ls.ends, ls.pos, ls.seen = ls.raw[:0], ls.ends[:0], ls.pos[:0], ls.seen[:0]
}

// Write implements sink.Results: result rows are not the ledger's input.
func (ls *ledgerSink) Write(context.Context, []changelog.Row) error { return nil }

// Flush applies the pending events.
func (ls *ledgerSink) Flush(ctx context.Context) error { return ls.apply(ctx) }

// Close applies the pending events and closes the connection.
func (ls *ledgerSink) Close(ctx context.Context) error {
	err := ls.apply(ctx)
	if cerr := ls.l.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Prepare implements sink.Committer. The runner applied every pending
// event before the checkpoint (applyLedgers); the ledger commits before
// the checkpoint and stores nothing in it.
func (ls *ledgerSink) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := ls.apply(ctx); err != nil {
		return nil, err
	}
	return ls.l.Prepare(ctx, id)
}

// Commit implements sink.Committer: it moves the ledger's commit marker.
func (ls *ledgerSink) Commit(ctx context.Context, id int64, prepared []byte) error {
	return ls.l.Commit(ctx, id, prepared)
}

// Recover implements sink.Committer: pending events are dropped (the
// source replays them) and the marker set to id.
func (ls *ledgerSink) Recover(ctx context.Context, id int64, prepared []byte) error {
	ls.reset()
	return ls.l.Recover(ctx, id, prepared)
}

// applyLedgers applies every ledger sink's pending events (all of them, or
// only those of sinks holding at least min).
func (rt *runtime) applyLedgers(ctx context.Context, min int) error {
	for _, ls := range rt.ledgers {
		if len(ls.events) >= min {
			if err := ls.apply(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rt *runtime) ledgerSummaries() []LedgerSummary {
	var out []LedgerSummary
	for _, ls := range rt.ledgers {
		out = append(out, LedgerSummary{Sink: ls.id, Applied: ls.applied, Duplicates: ls.duplicates, Conflicts: ls.conflicts})
	}
	return out
}
