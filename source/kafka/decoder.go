package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/format/debezium"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// RecordDecoder turns Kafka records into typed rows: the decoding half of
// Source, also for a runner that consumes the records itself (a group of
// instances sharing a consumer group, docs/scale-out.md). It decodes a
// record's value as Config.Format says (JSON, or Avro and Protobuf in the
// Confluent wire format), takes the event time from the record timestamp
// with EventTimeKafkaTimestamp, and fills the record's Meta. Append is
// not safe for concurrent use; EventJSON and SchemaCounts are.
type RecordDecoder struct {
	schema *row.Schema
	json   *format.JSON
	decs   map[string]*confluent.Decoder // by topic, with Avro and Protobuf
	// A Debezium format: dbz decodes debezium_json; with debezium_avro,
	// decs decode envelopes into dbzRow, which env maps onto the row.
	dbz    *debezium.JSON
	env    *debezium.Envelope
	dbzRow *row.Row
	render *confluent.Renderer
	et     row.Field
	tsTime bool // event time from the record timestamp
}

// NewRecordDecoder returns the decoder of cfg's records (it reads Topics,
// Fields, EventTimeFrom, EventTimeField, Format, Registry, Message,
// Versions, Contract and Subject). Errors name the setting: a nil
// Fields.Schema, an EventTimeField missing from it or not a timestamp
// field, an unknown format, a decoder the format cannot build.
func NewRecordDecoder(cfg Config) (*RecordDecoder, error) {
	if cfg.Fields.Schema == nil {
		return nil, errors.New("kafka source: Fields.Schema is nil")
	}
	if cfg.EventTimeFrom == "" {
		cfg.EventTimeFrom = EventTimePayload
	}
	d := &RecordDecoder{schema: cfg.Fields.Schema}
	fields := cfg.Fields
	if n := cfg.EventTimeField; n != "" {
		f, ok := d.schema.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("event_time.field: field %q is not in the source schema", n)
		}
		if f.Kind != row.KindTime {
			return nil, fmt.Errorf("event_time.field: field %q is %s, want %s", n, f.Kind, row.KindTime)
		}
		d.et = f
	} else if cfg.EventTimeFrom == EventTimeKafkaTimestamp {
		return nil, errors.New("event_time.field: required with event_time.from kafka_timestamp (the field the record timestamp is written to)")
	}
	if cfg.EventTimeFrom == EventTimeKafkaTimestamp {
		d.tsTime = true
		fields.Derived = append(slices.Clone(fields.Derived), d.et.Index)
	}
	format_ := cfg.Format
	switch cfg.Format {
	case FormatDebeziumJSON:
		dbz, err := debezium.NewJSON(debezium.Config{Fields: fields, Key: cfg.KeyColumns})
		if err != nil {
			return nil, err
		}
		d.dbz = dbz
		return d, nil
	case FormatDebeziumAvro:
		env, err := debezium.New(debezium.Config{Fields: fields, Key: cfg.KeyColumns})
		if err != nil {
			return nil, err
		}
		d.env, d.dbzRow = env, env.WideSchema().NewRow()
		fields, format_ = env.Wide(""), confluent.FormatAvro
	}
	switch format_ {
	case "", FormatJSON, "jsonl":
		d.json = format.NewJSON(fields)
	case confluent.FormatAvro, confluent.FormatProtobuf:
		d.decs = map[string]*confluent.Decoder{}
		d.render = &confluent.Renderer{}
		for _, t := range cfg.Topics {
			dec, err := confluent.NewDecoder(confluent.DecoderConfig{
				Registry: cfg.Registry, Format: format_, Fields: fields, Topic: t,
				Message: cfg.Message, Versions: cfg.Versions, Contract: cfg.Contract, Renderer: d.render,
				Subject: cfg.Subject,
			})
			if err != nil {
				return nil, fmt.Errorf("source: %w", err)
			}
			d.decs[t] = dec
		}
	default:
		return nil, fmt.Errorf("source.format: %q: want json, avro, protobuf, debezium_json or debezium_avro", cfg.Format)
	}
	return d, nil
}

// Append appends rec, which the caller numbers as partition part, to b:
// its row and its Meta (Partition part, Pos {topic, partition number as
// text, offset}, Raw the value, which franz-go never reuses). A tombstone
// (a null value) or a value that does not decode is appended with
// Meta.Err (quarantined by the runner). The caller skips transaction
// control records. It returns an error, appending nothing, only when the
// record cannot be judged (a schema registry that cannot be reached): the
// caller must not pass the record's offset.
func (d *RecordDecoder) Append(ctx context.Context, rec *kgo.Record, part int, b *source.Batch) error {
	r, m := b.Next(d.schema)
	m.Partition = part
	m.Pos = changelog.Position{Source: rec.Topic, Partition: itoa32(rec.Partition), Offset: rec.Offset}
	m.Raw = rec.Value
	if rec.Value == nil && (d.dbz != nil || d.env != nil) {
		// Debezium's tombstone after a delete (for log compaction): the
		// delete event before it carried the change.
		b.Rows, b.Meta = b.Rows[:len(b.Rows)-1], b.Meta[:len(b.Meta)-1]
		return nil
	}
	if rec.Value == nil {
		// A tombstone (a delete marker on a compacted topic) is not an
		// event: quarantined with a reason that says so.
		m.Err = &source.DecodeError{Rule: "decode", Reason: "a tombstone (null value): not an event"}
		return nil
	}
	if dec := d.decs[rec.Topic]; d.decs != nil {
		if dec == nil {
			b.Rows, b.Meta = b.Rows[:len(b.Rows)-1], b.Meta[:len(b.Meta)-1]
			return fmt.Errorf("kafka source: topic %s is not one of the source's topics", rec.Topic)
		}
		into := r
		if d.env != nil {
			into = d.dbzRow
			d.env.WideSchema().Clear(into)
		}
		de, err := dec.Decode(ctx, rec.Value, into, b.Arena())
		if err != nil {
			// Not judged: the record is taken back out of the batch.
			b.Rows, b.Meta = b.Rows[:len(b.Rows)-1], b.Meta[:len(b.Meta)-1]
			return fmt.Errorf("kafka source: topic %s partition %d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
		if d.env != nil && de == nil {
			var skip bool
			if skip, de = d.env.Map(into, r, b.Arena()); skip {
				b.Rows, b.Meta = b.Rows[:len(b.Rows)-1], b.Meta[:len(b.Meta)-1]
				return nil
			}
		}
		d.stamp(rec, r)
		m.Err = de
		return nil
	}
	if d.dbz != nil {
		skip, de := d.dbz.Decode(rec.Value, r, b.Arena())
		if skip {
			b.Rows, b.Meta = b.Rows[:len(b.Rows)-1], b.Meta[:len(b.Meta)-1]
			return nil
		}
		m.Err = de
		d.stamp(rec, r)
		return nil
	}
	m.Err = d.json.Decode(rec.Value, r, b.Arena())
	d.stamp(rec, r)
	return nil
}

// stamp writes the record timestamp to the event-time field, when the
// event time comes from it.
func (d *RecordDecoder) stamp(rec *kgo.Record, r *row.Row) {
	if ts := rec.Timestamp.UnixMilli(); d.tsTime && ts >= 0 {
		r.I[d.et.Slot] = ts
		r.SetValid(d.et.Index)
	}
}

// EventJSON appends the record's value when it is a JSON object (line
// breaks, which a valid object holds only between tokens, become spaces),
// the decoded record as JSON for Avro and Protobuf, else {"_raw": "<the
// value as a JSON string>"}. It reads only m.Raw, so it is safe for
// concurrent use.
func (d *RecordDecoder) EventJSON(dst []byte, m *source.Meta) []byte {
	raw := m.Raw
	if d.render != nil {
		return d.render.AppendJSON(dst, raw)
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' && json.Valid(raw) {
		for _, c := range raw {
			if c == '\n' || c == '\r' {
				c = ' '
			}
			dst = append(dst, c)
		}
		return dst
	}
	dst = append(dst, `{"_raw":`...)
	dst = changelog.AppendJSONString(dst, string(raw))
	return append(dst, '}')
}

// SchemaCounts returns, for Avro and Protobuf, the records decoded so far
// per topic and schema id (with the id's version in the topic's subject).
// Safe for concurrent use.
func (d *RecordDecoder) SchemaCounts() map[string][]confluent.Count {
	if d.decs == nil {
		return nil
	}
	out := map[string][]confluent.Count{}
	for t, dec := range d.decs {
		out[t] = dec.Counts()
	}
	return out
}

// smallNums holds "0" … "1023": partition numbers as text without an
// allocation per record.
var smallNums = func() []string {
	out := make([]string, 1024)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func itoa32(n int32) string {
	if n >= 0 && int(n) < len(smallNums) {
		return smallNums[n]
	}
	return strconv.Itoa(int(n))
}
