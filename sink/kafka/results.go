package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// Results writes a stage's result rows to a topic as keyed records (see
// the package documentation for the key and value).
type Results struct {
	p   *producer
	enc *RowEncoder
}

// RowEncoder makes the record of a result row — the key and value of the
// package documentation — for Results and for a runner that produces the
// records itself (a group run, whose one transaction carries every
// output: docs/scale-out.md). Not safe for concurrent use.
type RowEncoder struct {
	desc   changelog.Desc
	enc    *changelog.Encoder
	utc    row.TimeFormatter
	upsert bool
	keyBuf []byte
	valBuf []byte
}

// NewRowEncoder returns the encoder of rows described by d; with upsert,
// update_before rows are skipped and deletes are tombstones. Errors:
// d.Timezone not a known IANA zone.
func NewRowEncoder(d changelog.Desc, upsert bool) (*RowEncoder, error) {
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	return &RowEncoder{desc: d, enc: changelog.NewEncoder(loc), utc: row.NewTimeFormatter(time.UTC), upsert: upsert}, nil
}

// Record returns the key and the value of r's record (a nil value: a
// tombstone), valid until the next call, or skip for a row the stream
// leaves out (update_before with upsert).
func (e *RowEncoder) Record(r *changelog.Row) (key, value []byte, skip bool) {
	if e.upsert && r.Op == changelog.UpdateBefore {
		return nil, nil, true
	}
	e.keyBuf = e.appendKey(e.keyBuf[:0], r)
	if !e.upsert || r.Op != changelog.Delete {
		e.valBuf = e.enc.Row(e.valBuf[:0], r, &e.desc)
		return e.keyBuf, e.valBuf, false
	}
	return e.keyBuf, nil, false
}

var (
	_ sink.Results   = (*Results)(nil)
	_ sink.Committer = (*Results)(nil)
)

// NewResults connects to o.Brokers and returns a sink for rows described
// by d. Errors: a missing broker list, topic, or (exactly-once) pipeline
// name or sink id; a negative duration; d.Timezone not a known IANA zone
// ("" is UTC); the topic does not exist; the brokers cannot be reached or
// the marker topic cannot be created (within ctx).
func NewResults(ctx context.Context, d changelog.Desc, o Options) (*Results, error) {
	enc, err := NewRowEncoder(d, o.Upsert)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", o.Topic, err)
	}
	p, err := newProducer(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Results{p: p, enc: enc}, nil
}

// Write produces one record per row, in order (with Options.Upsert,
// update_before rows are skipped and deletes are tombstones). Records are
// sent asynchronously: an error of an earlier record is returned by a
// later Write, Flush or Prepare. Errors: ErrClosed, a failed earlier
// record, a Write between Prepare and Commit, or a transaction that cannot
// begin.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	for i := range rows {
		key, value, skip := r.enc.Record(&rows[i])
		if skip {
			continue
		}
		if value != nil {
			value = r.p.keep(value)
		}
		if err := r.p.send(ctx, r.p.keep(key), value); err != nil {
			return err
		}
	}
	return nil
}

// appendKey appends the record key of a row: a JSON array of
// window_start (RFC 3339 in UTC) and the group-key values (strings as
// JSON strings, numbers and decimals as changelog.AppendRowJSON writes
// them, times in UTC, null).
func (e *RowEncoder) appendKey(dst []byte, cr *changelog.Row) []byte {
	dst = append(dst, '[', '"')
	dst = e.utc.Append(dst, cr.WindowStart)
	dst = append(dst, '"')
	for _, v := range cr.Key {
		dst = append(dst, ',')
		switch v.Kind {
		case row.KindBool:
			dst = strconv.AppendBool(dst, v.I != 0)
		case row.KindInt:
			dst = strconv.AppendInt(dst, v.I, 10)
		case row.KindDecimal:
			dst = row.FormatDecimal(dst, v.D)
		case row.KindString:
			dst = changelog.AppendJSONString(dst, v.S)
		case row.KindTime:
			dst = append(dst, '"')
			dst = e.utc.Append(dst, v.I)
			dst = append(dst, '"')
		default:
			dst = append(dst, "null"...)
		}
	}
	return append(dst, ']')
}

// Flush waits until every record written is acknowledged (at-least-once);
// with exactly-once it only reports a failed record: rows are published by
// Commit. Errors: ErrClosed, a failed record, ctx done.
func (r *Results) Flush(ctx context.Context) error { return r.p.flush(ctx) }

// Prepare implements sink.Committer: it adds checkpoint id's commit marker
// to the open transaction, flushes it, and returns the marker's place and
// a copy of the transaction's records (nil when no row was written since
// the last checkpoint). Errors: ErrAtLeastOnce, ErrClosed, a failed
// record, a Prepare without Commit, ctx done.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) {
	return r.p.prepare(ctx, id)
}

// Commit implements sink.Committer: it commits the transaction Prepare(id)
// flushed. In a process that did not prepare id it publishes prepared as
// Recover does. Errors: ErrAtLeastOnce, ErrClosed, EndTxn failed (the
// outcome is then settled by the next run's Recover), prepared does not
// parse.
func (r *Results) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.p.commit(ctx, id, prepared)
}

// Recover implements sink.Committer: it fences the previous run (its open
// transaction is aborted) and, unless checkpoint id's marker committed,
// produces prepared's records again in a new transaction and commits it.
// With id 0 or nil prepared it only fences. Errors: ErrAtLeastOnce,
// ErrClosed, prepared does not parse, the marker partition cannot be read
// within Options.RecoverTimeoutMs, a produce or EndTxn failure.
func (r *Results) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.p.recover(ctx, id, prepared)
}

// Close flushes (at-least-once) or aborts the transaction opened since the
// last checkpoint (exactly-once), and closes the client, even when ctx is
// done (waiting at most 10 s). Closing twice is not an error.
func (r *Results) Close(ctx context.Context) error { return r.p.close(ctx) }
