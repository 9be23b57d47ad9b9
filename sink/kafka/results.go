package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/confluent"
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
// package documentation, in JSON, Avro or Protobuf — for Results and for
// a runner that produces the records itself (a group run, whose one
// transaction carries every output: docs/scale-out.md). Not safe for
// concurrent use.
type RowEncoder struct {
	desc   changelog.Desc
	enc    *changelog.Encoder
	utc    row.TimeFormatter
	upsert bool
	keyBuf []byte
	valBuf []byte

	// Avro and Protobuf (format != FormatJSON).
	format       string
	scale        uint8
	key, value   layout
	keyID, valID int    // registered schema ids
	keyText      string // the registered schema texts
	valText      string
	err          error // Record's first error
}

// RowOptions configures a RowEncoder.
type RowOptions struct {
	// Topic is the topic the records go to; with Avro and Protobuf it
	// names the registry subjects "<Topic>-key" and "<Topic>-value".
	// Required with those formats.
	Topic string
	// Upsert skips update_before rows and writes deletes as tombstones
	// (a null value). Default false: every row.
	Upsert bool
	// Encoding is the format of keys and values. Default JSON.
	Encoding Encoding
}

// NewRowEncoder returns the JSON encoder of rows described by d; with
// upsert, update_before rows are skipped and deletes are tombstones.
// Errors: d.Timezone not a known IANA zone.
func NewRowEncoder(d changelog.Desc, upsert bool) (*RowEncoder, error) {
	return NewRowEncoderWith(context.Background(), d, RowOptions{Upsert: upsert})
}

// NewRowEncoderWith returns the encoder of rows described by d in
// o.Encoding's format. With Avro or Protobuf it derives the key and value
// schemas from d's columns (the package documentation's "Avro and
// Protobuf") and registers them under "<topic>-key" and "<topic>-value"
// (within ctx), so that their ids are known before the first row.
// Errors: d.Timezone not a known IANA zone; an unknown format, a missing
// registry or topic, a decimal scale outside 0 to 19; a column name Avro
// or Protobuf cannot carry; a registration the registry refuses (an
// incompatible schema wraps confluent.ErrIncompatible and names the
// subject and the registry's answer) or cannot be asked.
func NewRowEncoderWith(ctx context.Context, d changelog.Desc, o RowOptions) (*RowEncoder, error) {
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	if err := o.Encoding.check(o.Topic); err != nil {
		return nil, err
	}
	e := &RowEncoder{desc: d, enc: changelog.NewEncoder(loc), utc: row.NewTimeFormatter(time.UTC), upsert: o.Upsert, format: o.Encoding.format()}
	if e.format == FormatJSON {
		return e, nil
	}
	e.scale, _ = o.Encoding.scale()
	if e.key, e.value, err = rowLayouts(&d); err != nil {
		return nil, err
	}
	ns := namespace(d.Stage)
	keyDoc := fmt.Sprintf("The key of stage %s's result records: window_start and the group key.", d.Stage)
	valDoc := fmt.Sprintf("A result row of stage %s (emit mode %s); times are UTC instants (the window's time zone is %s).", d.Stage, d.EmitMode, d.Timezone)
	if d.Stateless {
		keyDoc = fmt.Sprintf("The key of stage %s's records: the event time.", d.Stage)
		valDoc = fmt.Sprintf("A row of select stage %s.", d.Stage)
	}
	var ks, vs sr.Schema
	if e.format == FormatAvro {
		ks = sr.Schema{Type: sr.TypeAvro, Schema: e.key.avroSchema(ns, keyDoc, e.scale)}
		vs = sr.Schema{Type: sr.TypeAvro, Schema: e.value.avroSchema(ns, valDoc, e.scale)}
	} else {
		ks = sr.Schema{Type: sr.TypeProtobuf, Schema: e.key.protoSchema(ns, keyDoc)}
		vs = sr.Schema{Type: sr.TypeProtobuf, Schema: e.value.protoSchema(ns, valDoc)}
	}
	e.keyText, e.valText = ks.Schema, vs.Schema
	reg := o.Encoding.Registry
	if e.format == FormatAvro {
		for _, sub := range []struct {
			subject string
			l       *layout
		}{{keySubject(o.Topic), &e.key}, {valueSubject(o.Topic), &e.value}} {
			if err := checkScales(ctx, reg, sub.subject, sub.l, e.scale); err != nil {
				return nil, err
			}
		}
	}
	if e.keyID, err = reg.Register(ctx, keySubject(o.Topic), ks); err != nil {
		return nil, err
	}
	if e.valID, err = reg.Register(ctx, valueSubject(o.Topic), vs); err != nil {
		return nil, err
	}
	return e, nil
}

// Schemas returns the registered schema texts of the key and value
// records (Avro JSON or .proto), "" with JSON.
func (e *RowEncoder) Schemas() (key, value string) { return e.keyText, e.valText }

// Encode returns the key and the value of r's record (a nil value: a
// tombstone), valid until the next call, or skip for a row the stream
// leaves out (update_before with upsert). Errors (Avro and Protobuf): a
// value its column cannot hold without loss — a decimal with more digits
// after the point than the scale or more than 38 digits, text that is not
// UTF-8, a Protobuf timestamp outside the years 1 to 9999 — naming the
// row (window start, key, version) and the column.
func (e *RowEncoder) Encode(r *changelog.Row) (key, value []byte, skip bool, err error) {
	if e.upsert && r.Op == changelog.UpdateBefore {
		return nil, nil, true, nil
	}
	if e.format == FormatJSON {
		e.keyBuf = e.appendKey(e.keyBuf[:0], r)
		if !e.upsert || r.Op != changelog.Delete {
			e.valBuf = e.enc.Row(e.valBuf[:0], r, &e.desc)
			return e.keyBuf, e.valBuf, false, nil
		}
		return e.keyBuf, nil, false, nil
	}
	if e.keyBuf, err = e.appendBinary(e.keyBuf[:0], &e.key, e.keyID, r); err != nil {
		return nil, nil, false, e.rowErr(r, "key", err)
	}
	if e.upsert && r.Op == changelog.Delete {
		return e.keyBuf, nil, false, nil
	}
	if e.valBuf, err = e.appendBinary(e.valBuf[:0], &e.value, e.valID, r); err != nil {
		return nil, nil, false, e.rowErr(r, "value", err)
	}
	return e.keyBuf, e.valBuf, false, nil
}

// appendBinary appends the wire format's header (and Protobuf's message
// index), then r's record of layout l.
func (e *RowEncoder) appendBinary(dst []byte, l *layout, id int, r *changelog.Row) ([]byte, error) {
	dst = confluent.AppendHeader(dst, id)
	if e.format == FormatAvro {
		return l.appendAvro(dst, r, e.scale)
	}
	dst = confluent.AppendIndexes(dst, nil)
	return l.appendProto(dst, r, e.scale)
}

// rowErr names the row and the part of its record in an encoding error.
func (e *RowEncoder) rowErr(r *changelog.Row, part string, err error) error {
	return fmt.Errorf("%s record of %s: %w", e.format, describeRow(&e.desc, r), err)
}

// Record is Encode for an encoder that cannot fail (JSON, from
// NewRowEncoder): it returns the key and the value of r's record (a nil
// value: a tombstone), valid until the next call, or skip for a row the
// stream leaves out (update_before with upsert). With Avro or Protobuf a
// row that cannot be encoded is reported as skipped and its error kept
// for Err; callers of such encoders use Encode.
func (e *RowEncoder) Record(r *changelog.Row) (key, value []byte, skip bool) {
	key, value, skip, err := e.Encode(r)
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		return nil, nil, true
	}
	return key, value, skip
}

// Err returns the first error Record met, or nil.
func (e *RowEncoder) Err() error { return e.err }

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
	enc, err := NewRowEncoderWith(ctx, d, RowOptions{Topic: o.Topic, Upsert: o.Upsert, Encoding: o.Encoding})
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
		key, value, skip, err := r.enc.Encode(&rows[i])
		if err != nil {
			return fmt.Errorf("kafka sink %s: %w", r.p.o.Topic, err)
		}
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
