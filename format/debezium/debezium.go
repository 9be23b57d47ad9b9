// Package debezium reads Debezium's change events (the envelope of
// io.debezium.connector.postgresql and the other relational connectors:
// before, after, op, source.lsn, source.ts_ms, source.txId,
// source.schema, source.table) as the records of a change stream
// (package source, "Change streams"), so that a Debezium topic and
// source.type postgres_cdc give the same rows (docs/connectors/kafka.md,
// "Debezium change events").
//
// The envelope is decoded by the format's own decoder into a wide row —
// after.<column>, before.<column> and the envelope's fields, as dotted
// paths — and Envelope.Map moves it onto the pipeline's row: the columns
// from after (create, update, read) or before (delete), the change
// fields from the envelope. JSON (debezium_json, with or without the
// JsonConverter's schema/payload wrapper) uses format.JSON; Avro in the
// Confluent wire format uses format/confluent's decoder, which compiles
// the envelope's writer schema against the same dotted paths.
package debezium

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// DefaultUnavailable is the value Debezium writes for an unchanged TOAST
// column it could not read (unavailable.value.placeholder).
const DefaultUnavailable = "__debezium_unavailable_value"

// Config configures an Envelope.
type Config struct {
	// Fields are the pipeline's source fields: table columns and the
	// change fields of package source (record.ChangeFields).
	Fields format.Fields
	// Key lists the key columns (source.key_columns): the row's key
	// (__key) is their text, from after, or before for a delete.
	// Required.
	Key []string
	// Unavailable is the placeholder of an unchanged TOAST value: a
	// string field holding it is marked unchanged (__unchanged) and taken
	// from the key's previous row by the engine. Default
	// DefaultUnavailable.
	Unavailable string
}

// Envelope maps decoded Debezium envelopes onto a change stream's rows.
type Envelope struct {
	cfg    Config
	wide   *row.Schema
	times  map[int]*eventtime.Parser
	cols   []col // per column field of the target
	keys   []keyCol
	op     row.Field
	lsn    row.Field
	tsMs   row.Field
	txID   row.Field
	schema row.Field
	table  row.Field
	meta   struct {
		op, lsn, commitTime, xid, table, key, unchanged row.Field
		has                                             [7]bool
	}
	keyBuf []byte
	unch   []byte
}

// col is a column field: its target field and its after and before wide
// fields.
type col struct {
	f, after, before row.Field
}

// keyCol is a key column's after and before wide fields.
type keyCol struct {
	after, before row.Field
}

// New builds the envelope of cfg. Errors: no key columns, a change field
// of the wrong kind.
func New(cfg Config) (*Envelope, error) {
	if len(cfg.Key) == 0 {
		return nil, errors.New("source.key_columns: required with a Debezium format: the columns that identify a row (its primary key)")
	}
	if cfg.Unavailable == "" {
		cfg.Unavailable = DefaultUnavailable
	}
	e := &Envelope{cfg: cfg, wide: row.NewSchema(), times: map[int]*eventtime.Parser{}}
	add := func(name string, k row.Kind, parser *eventtime.Parser) row.Field {
		f, ok := e.wide.Lookup(name)
		if ok {
			return f
		}
		f, _ = e.wide.Add(name, k)
		if parser != nil {
			e.times[f.Index] = parser
		}
		return f
	}
	e.op = add("op", row.KindString, nil)
	e.lsn = add("source.lsn", row.KindInt, nil)
	e.tsMs = add("source.ts_ms", row.KindInt, nil)
	e.txID = add("source.txId", row.KindInt, nil)
	e.schema = add("source.schema", row.KindString, nil)
	e.table = add("source.table", row.KindString, nil)
	metas := []struct {
		name string
		dst  *row.Field
	}{
		{record.FieldOp, &e.meta.op}, {record.FieldLSN, &e.meta.lsn}, {record.FieldCommitTime, &e.meta.commitTime},
		{record.FieldXid, &e.meta.xid}, {record.FieldTable, &e.meta.table}, {record.FieldKey, &e.meta.key}, {record.FieldUnchanged, &e.meta.unchanged},
	}
	for i, m := range metas {
		f, ok := cfg.Fields.Schema.Lookup(m.name)
		if !ok {
			continue
		}
		if k, _ := record.ChangeFieldKind(m.name); f.Kind != k {
			return nil, fmt.Errorf("source.schema.%s: the change field %s is %s, not %s", m.name, m.name, k, f.Kind)
		}
		*m.dst, e.meta.has[i] = f, true
	}
	for _, f := range cfg.Fields.Schema.Fields {
		if record.IsChangeField(f.Name) {
			continue
		}
		p := cfg.Fields.Time[f.Index]
		e.cols = append(e.cols, col{f: f, after: add("after."+f.Name, f.Kind, p), before: add("before."+f.Name, f.Kind, p)})
	}
	for _, k := range cfg.Key {
		kind := row.KindString
		var p *eventtime.Parser
		if f, ok := cfg.Fields.Schema.Lookup(k); ok && !record.IsChangeField(k) {
			kind, p = f.Kind, cfg.Fields.Time[f.Index]
		}
		e.keys = append(e.keys, keyCol{after: add("after."+k, kind, p), before: add("before."+k, kind, p)})
	}
	return e, nil
}

// Wide returns what the format's decoder decodes: the envelope's fields
// as dotted paths under prefix ("" or "payload.").
func (e *Envelope) Wide(prefix string) format.Fields {
	if prefix == "" {
		return format.Fields{Schema: e.wide, Time: e.times}
	}
	s := row.NewSchema()
	times := map[int]*eventtime.Parser{}
	for _, f := range e.wide.Fields {
		nf, _ := s.Add(prefix+f.Name, f.Kind)
		if p := e.times[f.Index]; p != nil {
			times[nf.Index] = p
		}
	}
	return format.Fields{Schema: s, Time: times}
}

// WideSchema is the schema of the rows Map reads (Wide("")'s).
func (e *Envelope) WideSchema() *row.Schema { return e.wide }

// Map moves the decoded envelope w (of WideSchema's shape; strings in
// the batch's arena a) onto r, the pipeline's row (shaped and null). skip
// is true for an event that is not a row's change (a logical decoding
// message, op "m"); an event it cannot map is a decode error naming
// what: no op or an unknown one, a truncate, no row image, a null key
// column.
func (e *Envelope) Map(w, r *row.Row, a *source.Arena) (skip bool, de *source.DecodeError) {
	if w.IsNull(e.op.Index) {
		return false, &source.DecodeError{Field: "op", Rule: "decode", Reason: "not a Debezium change event: no op"}
	}
	op := w.S[e.op.Slot]
	after := true
	switch op {
	case record.OpCreate, record.OpUpdate, record.OpRead:
	case record.OpDelete:
		after = false
	case "m":
		return true, nil
	case "t":
		return false, &source.DecodeError{Field: "op", Rule: "decode", Reason: "a truncate event: the table's rows cannot be taken back one by one"}
	default:
		return false, &source.DecodeError{Field: "op", Rule: "decode", Reason: "unknown op " + strconv.Quote(op) + " (want c, u, d or r)"}
	}
	e.unch = e.unch[:0]
	image := false
	for i := range e.cols {
		c := &e.cols[i]
		from := c.after
		if !after {
			from = c.before
		}
		if w.IsNull(from.Index) {
			continue
		}
		image = true
		v := w.Get(from)
		if v.Kind == row.KindString && v.S == e.cfg.Unavailable {
			e.unch = record.MarkUnchanged(e.unch, c.f.Index)
			continue
		}
		_ = r.Set(c.f, v)
	}
	texts := e.keyBuf[:0]
	if len(e.keys) > 1 {
		texts = append(texts, '[')
	}
	for i, k := range e.keys {
		from := k.after
		if !after {
			from = k.before
		}
		if w.IsNull(from.Index) {
			side := "after"
			if !after {
				side = "before"
			}
			return false, &source.DecodeError{Field: e.cfg.Key[i], Rule: "key", Reason: "key column " + e.cfg.Key[i] + " is null or missing in " + side}
		}
		image = true
		t := w.Get(from).AppendText(nil, nil)
		if len(e.keys) == 1 {
			texts = append(texts, t...)
			continue
		}
		if i > 0 {
			texts = append(texts, ',')
		}
		texts = strconv.AppendQuote(texts, string(t))
	}
	if len(e.keys) > 1 {
		texts = append(texts, ']')
	}
	e.keyBuf = texts
	if !image {
		return false, &source.DecodeError{Rule: "decode", Reason: "the " + op + " event has no row image (after or before)"}
	}
	m := &e.meta
	set := func(i int, f row.Field, v row.Value) {
		if m.has[i] && !v.IsNull() {
			_ = r.Set(f, v)
		}
	}
	set(0, m.op, row.Str(op))
	lsn := w.Get(e.lsn)
	if op == record.OpRead {
		lsn = row.Int(0) // as postgres_cdc's snapshot rows: every change is newer
	}
	if lsn.IsNull() && m.has[1] {
		return false, &source.DecodeError{Field: "source.lsn", Rule: "decode", Reason: "the " + op + " event has no source.lsn, the version of its row"}
	}
	set(1, m.lsn, lsn)
	if ts := w.Get(e.tsMs); !ts.IsNull() {
		set(2, m.commitTime, row.Time(ts.I))
	}
	set(3, m.xid, w.Get(e.txID))
	if !w.IsNull(e.schema.Index) && !w.IsNull(e.table.Index) {
		set(4, m.table, row.Str(a.String([]byte(w.S[e.schema.Slot]+"."+w.S[e.table.Slot]))))
	}
	set(5, m.key, row.Str(a.String(texts)))
	if len(e.unch) > 0 {
		set(6, m.unchanged, row.Str(a.String(e.unch)))
	}
	return false, nil
}

// JSON decodes debezium_json values: a Debezium envelope as a JSON object,
// bare or inside the JsonConverter's {"schema": …, "payload": …}. Not
// safe for concurrent use.
type JSON struct {
	env          *Envelope
	bare         *format.JSON
	wrapped      *format.JSON
	w            *row.Row
	wrappedFirst bool // the last event was wrapped: try that first
}

// NewJSON returns the JSON decoder of cfg's envelopes.
func NewJSON(cfg Config) (*JSON, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &JSON{env: e, bare: format.NewJSON(e.Wide("")), wrapped: format.NewJSON(e.Wide("payload.")), w: e.wide.NewRow()}, nil
}

// Decode fills r (shaped, null) from one envelope; skip is true for an
// event that is not a row's change. Errors are format.JSON's (the wide
// row's fields named by their paths) and Map's.
func (d *JSON) Decode(value []byte, r *row.Row, a *source.Arena) (skip bool, de *source.DecodeError) {
	order := []*format.JSON{d.bare, d.wrapped}
	if d.wrappedFirst {
		order[0], order[1] = order[1], order[0]
	}
	for i, dec := range order {
		d.env.wide.Clear(d.w)
		de = dec.Decode(value, d.w, a)
		if de == nil && d.w.IsNull(d.env.op.Index) && i == 0 {
			continue // no op here: the other layout
		}
		if dec == d.wrapped {
			d.wrappedFirst = de == nil
		}
		break
	}
	if de != nil {
		return false, de
	}
	return d.env.Map(d.w, r, a)
}
