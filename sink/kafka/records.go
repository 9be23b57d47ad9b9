package kafka

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/sink"
)

// Records writes side-output records (late, quarantine, conflicts) to a
// topic: each is the value of a record without a key, the JSON object
// itself or, with Options.Encoding Avro or Protobuf, a record of its
// kind's schema (RecordEncoder).
type Records struct {
	p   *producer
	enc *RecordEncoder
}

var (
	_ sink.Records   = (*Records)(nil)
	_ sink.Committer = (*Records)(nil)
)

// NewRecords connects to o.Brokers and returns a side-output sink
// (o.Upsert is ignored). Errors: as NewResults (an encoding that
// NewRecordEncoder refuses instead of NewRowEncoderWith's).
func NewRecords(ctx context.Context, o Options) (*Records, error) {
	enc, err := NewRecordEncoder(o.Topic, o.Encoding)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", o.Topic, err)
	}
	p, err := newProducer(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Records{p: p, enc: enc}, nil
}

// WriteRecord produces obj, a side-output JSON object, as a record's
// value (encoded by RecordEncoder.Encode). Errors: as Results.Write, and
// RecordEncoder.Encode's.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	if r.p.closed {
		return ErrClosed
	}
	obj, err := r.enc.Encode(ctx, obj)
	if err != nil {
		return fmt.Errorf("kafka sink %s: %w", r.p.o.Topic, err)
	}
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
