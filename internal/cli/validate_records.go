package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tavro "github.com/twmb/avro"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/expr"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/spec"
)

// day is the arrival bound of min_arrival_within_24h, in ms.
const day = 24 * 60 * 60 * 1000

// validator measures records against a contract.
type validator struct {
	c          *contract.Contract
	ord        *spec.Ordinal
	schema     *row.Schema
	types      spec.FieldTypes
	timeParse  map[int]*eventtime.Parser
	et         row.Field
	ingest     row.Field
	hasIngest  bool
	id         *expr.Expr
	undeclared map[string]bool // fields the event id reads that the contract does not declare
	checker    *contract.Checker
	checks     []contract.CheckInfo
	fields     []row.Field // the contract's fields, in order
	hasher     *dedup.Hasher

	// What has been measured so far.
	records, decoded int64
	notDecoded       int64
	notDecodedEx     []example
	nulls            []int64 // by contract field
	withoutID        int64
	duplicates       int64
	conflictIDs      int64
	conflictRecords  int64
	conflictEx       []conflictExample
	ids              map[uint64]idEntry // every event id (IDHash) seen
	files            []string           // file names, by idEntry.file
	fileIndex        map[string]uint32
	arrivalChecked   int64
	arrivalWithin    int64
	ruleChecked      []int64 // by check
	ruleViolations   []int64
	ruleExamples     [][]example
	idBuf, eventJSON []byte // scratch

	// Schema versions (Avro and Protobuf data with a contract's
	// schema_versions).
	versions     *confluent.VersionResolver // files: the subject's versions; nil without
	fileVersion  map[string]int             // Avro file → its version (0: not one of the subject)
	versionCount map[int]int64              // records by version (0: not a version of the subject)
	versioned    bool                       // the data has schema versions to report
	subjects     []string                   // the subjects they are versions of
}

// idEntry is what validate remembers of an event id's first delivery.
type idEntry struct {
	line     int64
	file     uint32
	payload  uint32
	conflict bool
}

// newValidator compiles what validate measures: the schema of the
// contract's fields (plus the event-time field, the ordinal and undeclared
// fields the event id or a check reads, as strings), the event id, the
// checks and the timestamp parsers.
func newValidator(c *contract.Contract, ord *spec.Ordinal) (*validator, error) {
	v := &validator{c: c, ord: ord, schema: row.NewSchema(), timeParse: map[int]*eventtime.Parser{},
		hasher: dedup.NewHasher(c.MetadataFields()), ids: map[uint64]idEntry{}, fileIndex: map[string]uint32{},
		undeclared: map[string]bool{}}
	addField := func(name string, k row.Kind, typ string) (row.Field, error) {
		if f, ok := v.schema.Lookup(name); ok {
			return f, nil
		}
		f, err := v.schema.Add(name, k)
		if err == nil {
			v.types = append(v.types, spec.FieldType{Name: name, Type: typ})
		}
		return f, err
	}
	for _, f := range c.Fields {
		k, err := row.ParseKind(f.Type)
		if err != nil {
			return nil, fmt.Errorf("fields.%s: %w", f.Name, err)
		}
		if ord != nil && f.Name == ord.Field && k != row.KindInt {
			return nil, fmt.Errorf("--ordinal: field %q is declared %s in the contract; an ordinal is an int", f.Name, f.Type)
		}
		rf, err := addField(f.Name, k, f.Type)
		if err != nil {
			return nil, err
		}
		v.fields = append(v.fields, rf)
	}
	var err error
	if v.et, err = addField(c.EventTime.Field, row.KindTime, "timestamp"); err != nil {
		return nil, err
	}
	if ord != nil {
		if _, err := addField(ord.Field, row.KindInt, "int"); err != nil {
			return nil, err
		}
		if ord.Per != "" {
			if _, err := addField(ord.Per, row.KindString, "string"); err != nil {
				return nil, err
			}
		}
	}
	idp, err := expr.Parse(c.EventID)
	if err != nil {
		return nil, fmt.Errorf("event_id: %w", err)
	}
	ruleFields, err := contract.RuleFields(c)
	if err != nil {
		return nil, err
	}
	for _, n := range idp.Identifiers() {
		if _, ok := v.schema.Lookup(n); !ok {
			v.undeclared[n] = true
		}
	}
	// Fields that the contract does not declare are read as strings, as a
	// pipeline reads undeclared fields.
	for _, n := range append(idp.Identifiers(), ruleFields...) {
		if _, err := addField(n, row.KindString, "string"); err != nil {
			return nil, err
		}
	}
	if v.id, err = expr.Compile(idp, v.schema); err != nil {
		return nil, fmt.Errorf("event_id: %w", err)
	}
	if k := v.id.Kind(); k == row.KindNull || k == row.KindBool {
		return nil, fmt.Errorf("event_id: %q is %s; an event id is a string or a number", c.EventID, k)
	}
	if c.IngestTime != "" {
		v.ingest, v.hasIngest = v.schema.Lookup(c.IngestTime)
	}
	if v.checker, err = contract.Compile(c, v.schema, v.ingest, v.hasIngest); err != nil {
		return nil, err
	}
	v.checks = v.checker.Checks()
	v.ruleChecked = make([]int64, len(v.checks))
	v.ruleViolations = make([]int64, len(v.checks))
	v.ruleExamples = make([][]example, len(v.checks))
	v.nulls = make([]int64, len(v.fields))
	etParser, err := eventtime.New(spec.EventTime{Field: c.EventTime.Field, Format: c.EventTime.Format, Layout: c.EventTime.Layout, Timezone: c.EventTime.Timezone})
	if err != nil {
		return nil, fmt.Errorf("event_time: %w", err)
	}
	for _, f := range v.schema.Fields {
		if f.Kind != row.KindTime {
			continue
		}
		if f.Index == v.et.Index {
			v.timeParse[f.Index] = etParser
		} else {
			v.timeParse[f.Index] = &eventtime.Parser{}
		}
	}
	return v, nil
}

// open opens the data at path with the contract's schema.
func (v *validator) open(path, dataFormat string) (*file.Source, error) {
	sp := spec.Source{Type: "file", Path: path, Format: dataFormat, Schema: v.types, Ordinal: v.ord}
	cfg := file.Config{
		Spec:           sp,
		Fields:         format.Fields{Schema: v.schema, Time: v.timeParse},
		EventTimeField: v.c.EventTime.Field,
	}
	if dataFormat == "avro" && v.versions != nil {
		cfg.AvroProjection = func(path, text string, _ *tavro.Schema) (format.Projection, *source.DecodeError, error) {
			version, proj, reject, err := v.versions.Resolve(context.Background(), "file "+path, text)
			v.fileVersion[path] = version
			return proj, reject, err
		}
	}
	src, err := file.New(cfg)
	if err != nil {
		var mc *format.MissingColumnsError
		if errors.As(err, &mc) {
			var hints []string
			for _, m := range mc.Missing {
				if v.undeclared[m] {
					hints = append(hints, fmt.Sprintf("event_id reads %s, which the contract does not declare: if it numbers records, give --ordinal %s:FIELD", m, m))
				}
			}
			if len(hints) > 0 {
				// A usage error: the command line lacks the field.
				return nil, &exitError{code: 2, err: fmt.Errorf("%w (%s)", err, strings.Join(hints, "; "))}
			}
		}
		return nil, err
	}
	return src, nil
}

// recordSource is what validate reads: a file source or a Kafka source.
type recordSource interface {
	Next(ctx context.Context, b *source.Batch, max int) (source.Status, error)
	EventJSON(dst []byte, m *source.Meta) []byte
}

// read measures every record of src.
func (v *validator) read(ctx context.Context, src recordSource) error {
	var b source.Batch
	for {
		b.Reset()
		st, err := src.Next(ctx, &b, 1024)
		if err != nil {
			return err
		}
		for i := range b.Meta {
			v.record(src, &b.Rows[i], &b.Meta[i])
		}
		if st == source.End {
			return nil
		}
	}
}

// record measures one record.
func (v *validator) record(src recordSource, r *row.Row, m *source.Meta) {
	v.records++
	if v.fileVersion != nil {
		if ver, ok := v.fileVersion[m.Pos.Source]; ok {
			v.versionCount[ver]++
		}
	}
	if m.Err != nil {
		v.notDecoded++
		v.notDecodedEx = addExample(v.notDecodedEx, m.Pos.String(), m.Err.Error())
		return
	}
	if r.IsNull(v.et.Index) {
		v.notDecoded++
		v.notDecodedEx = addExample(v.notDecodedEx, m.Pos.String(), "event-time field "+v.et.Name+" is null or missing")
		return
	}
	v.decoded++
	ts := r.I[v.et.Slot]
	for i, f := range v.fields {
		if r.IsNull(f.Index) {
			v.nulls[i]++
		}
	}

	// Event ids: every id is remembered with its first payload.
	if id, err := v.id.Eval(r); err != nil || id.IsNull() {
		v.withoutID++
	} else {
		v.idBuf = id.AppendText(v.idBuf[:0], nil)
		h := dedup.IDHash(v.idBuf)
		v.eventJSON = src.EventJSON(v.eventJSON[:0], m)
		payload, _ := v.hasher.Sum(v.eventJSON)
		// Files name a record file:line, Kafka topic[partition]@offset.
		line, fi := m.Pos.Line, uint32(0)
		if m.Pos.Line > 0 {
			fi = v.fileOf(m.Pos.Source + ":")
		} else {
			line, fi = m.Pos.Offset, v.fileOf(m.Pos.Source+"["+m.Pos.Partition+"]@")
		}
		if e, seen := v.ids[h]; !seen {
			v.ids[h] = idEntry{line: line, file: fi, payload: payload}
		} else {
			v.duplicates++
			if e.payload != payload {
				v.conflictRecords++
				if !e.conflict {
					v.conflictIDs++
					e.conflict = true
					v.ids[h] = e
				}
				if len(v.conflictEx) < maxExamples {
					v.conflictEx = append(v.conflictEx, conflictExample{
						ID:     string(v.idBuf),
						First:  v.files[e.file] + strconv.FormatInt(e.line, 10),
						Second: m.Pos.String(),
					})
				}
			}
		}
	}

	ingestKnown := v.hasIngest && !r.IsNull(v.ingest.Index)
	var ingest int64
	if ingestKnown {
		ingest = r.I[v.ingest.Slot]
		v.arrivalChecked++
		if ingest-ts <= day {
			v.arrivalWithin++
		}
	}

	for i, info := range v.checks {
		if info.Kind.TimeRule() && !ingestKnown {
			continue // measured against the ingest time only
		}
		v.ruleChecked[i]++
		if _, reason, ok := v.checker.CheckOne(i, r, ts, ingest); !ok {
			v.ruleViolations[i]++
			v.ruleExamples[i] = addExample(v.ruleExamples[i], m.Pos.String(), reason)
		}
	}
}

// fileOf returns the index of a file name in v.files, adding it.
func (v *validator) fileOf(name string) uint32 {
	if i, ok := v.fileIndex[name]; ok {
		return i
	}
	i := uint32(len(v.files))
	v.files = append(v.files, name)
	v.fileIndex[name] = i
	return i
}
