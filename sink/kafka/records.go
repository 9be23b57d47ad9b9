package kafka

import (
	"context"

	"github.com/tidemark/tidemark/sink"
)

// Records writes side-output records (late, quarantine, conflicts) to a
// topic: each JSON object is the value of a record without a key.
type Records struct {
	p *producer
}

var (
	_ sink.Records   = (*Records)(nil)
	_ sink.Committer = (*Records)(nil)
)

// NewRecords connects to o.Brokers and returns a side-output sink
// (o.Upsert is ignored). Errors: as NewResults.
func NewRecords(ctx context.Context, o Options) (*Records, error) {
	p, err := newProducer(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Records{p: p}, nil
}

// WriteRecord produces obj as a record's value. Errors: as
// Results.Write.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	v := r.p.keep(obj)
	if v == nil {
		v = []byte{}
	}
	return r.p.send(ctx, nil, v)
}

// Flush is Results.Flush.
func (r *Records) Flush(ctx context.Context) error { return r.p.flush(ctx) }

// Prepare is Results.Prepare.
func (r *Records) Prepare(ctx context.Context, id int64) ([]byte, error) {
	return r.p.prepare(ctx, id)
}

// Commit is Results.Commit.
func (r *Records) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.p.commit(ctx, id, prepared)
}

// Recover is Results.Recover.
func (r *Records) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.p.recover(ctx, id, prepared)
}

// Close is Results.Close.
func (r *Records) Close(ctx context.Context) error { return r.p.close(ctx) }
