package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
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

// maxExamples is how many examples a report gives of each problem.
const maxExamples = 3

// day is the arrival bound of min_arrival_within_24h, in ms.
const day = 24 * 60 * 60 * 1000

// newValidateCmd is `tidemark validate`: it measures data files against a
// data contract (docs/contracts.md, "tidemark validate").
func newValidateCmd(stdout io.Writer) *cobra.Command {
	var contractPath, reportFormat, dataFormat, ordinal, registry, subject string
	var topics, brokers []string
	cmd := &cobra.Command{
		Use:   "validate --contract CONTRACT.yaml (DATA... | --topic TOPIC...)",
		Short: "Measure data files against a data contract and report its quality",
		Long: `Measure data files against a data contract and report its quality.

DATA is a file, a directory (its files, sorted by name) or a glob such as
"data/*.csv", as for a file source; the format is jsonl, csv or avro (Avro
object container files), from the file extensions or --data-format. With
--topic the data is instead every record of Kafka topics up to their end
(read_committed), in --data-format jsonl, avro or protobuf. Fields are
decoded with the contract's types and its event_time; nothing else is
derived, except the record number --ordinal adds (an event_id such as
InvoiceNo + "-" + string(line_no) needs it when the data has no line
number).

With Avro or Protobuf data and a contract that lists schema_versions, each
record's schema is a version of the contract's subject (--subject
overrides it), found in the schema registry (--registry): records are read
with their version's field mapping, those of versions the contract does
not accept count as not decoded, and the report counts the records of
each version.

The report gives the records read and those that failed to decode (or have
no event time); per contract field the share of null or missing values;
the share of records whose event id was seen before and the ids delivered
with different payloads (conflicts); the share of records that arrived
(ingest_time) within 24h of their event time; each rule's violations; and
each quality threshold of the contract, pass or fail. docs/contracts.md
describes it and the JSON shape of --format json.

Exit status: 0 when every rule and threshold passes and every record
decoded, 1 when any fails (the report says which) or the data cannot be
read, 2 for a usage or contract error.`,
		Args: usage(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := validateOptions{contract: contractPath, format: reportFormat, dataFormat: dataFormat, ordinal: ordinal,
				registry: registry, subject: subject, topics: topics, brokers: brokers}
			return runValidate(cmd.Context(), stdout, opts, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&contractPath, "contract", "", "the data contract (YAML); required")
	f.StringVar(&reportFormat, "format", "text", "report format: text or json (one JSON object)")
	f.StringVar(&dataFormat, "data-format", "", "format of the data files: jsonl or csv (default: from the file extensions)")
	f.StringVar(&ordinal, "ordinal", "", "add an int field numbering records within runs of equal values of another field, FIELD:PER (or FIELD alone: per file), as source.ordinal")
	f.StringVar(&registry, "registry", os.Getenv("SCHEMA_REGISTRY_URL"), "Schema Registry URL of Avro and Protobuf data (default $SCHEMA_REGISTRY_URL)")
	f.StringVar(&subject, "subject", "", "the registry subject whose versions the contract's schema_versions lists (default: the contract's schema_versions.subject, or <topic>-value)")
	f.StringSliceVar(&topics, "topic", nil, "read these Kafka topics to their end instead of DATA files")
	f.StringSliceVar(&brokers, "brokers", nil, "seed brokers of --topic, host:port (default $KAFKA_BROKERS, else "+devKafkaDefaultAddr+")")
	return cmd
}

// validateOptions are the flags of validate.
type validateOptions struct {
	contract   string
	format     string // text or json
	dataFormat string // jsonl, csv, avro, protobuf or "" (from the extensions)
	ordinal    string // FIELD[:PER]
	registry   string // schema registry URLs, comma separated
	subject    string // overrides schema_versions.subject
	topics     []string
	brokers    []string
}

// validateUsageErr is an error that exits 2.
func validateUsageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// runValidate loads the contract, reads every path and prints the report
// to stdout; the error carries the exit status.
func runValidate(ctx context.Context, stdout io.Writer, o validateOptions, paths []string) error {
	if o.contract == "" {
		return validateUsageErr("validate: --contract is required")
	}
	if o.format != "text" && o.format != "json" {
		return validateUsageErr("validate: --format %q: want text or json", o.format)
	}
	switch {
	case len(o.topics) > 0 && len(paths) > 0:
		return validateUsageErr("validate: give DATA files or --topic, not both")
	case len(o.topics) == 0 && len(paths) == 0:
		return validateUsageErr("validate: give DATA files (or --topic TOPIC)")
	case len(o.topics) > 0 && o.ordinal != "":
		return validateUsageErr("validate: --ordinal numbers the records of files; Kafka records have offsets")
	}
	switch o.dataFormat {
	case "", "jsonl", "csv", "avro":
		if len(o.topics) > 0 && o.dataFormat == "csv" {
			return validateUsageErr("validate: --data-format csv: Kafka records are jsonl, avro or protobuf")
		}
	case "protobuf":
		if len(o.topics) == 0 {
			return validateUsageErr("validate: --data-format protobuf: only with --topic (files are jsonl, csv or avro)")
		}
	default:
		return validateUsageErr("validate: --data-format %q: want jsonl, csv or avro (with --topic: jsonl, avro or protobuf)", o.dataFormat)
	}
	var ord *spec.Ordinal
	if o.ordinal != "" {
		field, per, _ := strings.Cut(o.ordinal, ":")
		if field == "" {
			return validateUsageErr("validate: --ordinal %q: want FIELD:PER or FIELD", o.ordinal)
		}
		ord = &spec.Ordinal{Field: field, Per: per}
	}
	c, err := contract.Load(o.contract)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	v, err := newValidator(c, ord)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", o.contract, err)}
	}
	if len(o.topics) > 0 {
		if err := v.readTopics(ctx, o); err != nil {
			return err
		}
		return v.finish(stdout, o, append([]string(nil), o.topics...))
	}
	// Check every path before reading any.
	formats := make([]string, len(paths))
	for i, p := range paths {
		if formats[i], err = dataFileFormat(p, o.dataFormat); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	// Open every source (listing the files, reading CSV headers) before
	// reading a record.
	sources := make([]*file.Source, 0, len(paths))
	defer func() {
		for _, src := range sources {
			src.Close()
		}
	}()
	for i, p := range paths {
		if formats[i] == "avro" {
			if err := v.useRegistry(o, ""); err != nil {
				return err
			}
		}
		src, err := v.open(p, formats[i])
		if err != nil {
			var nf *file.NoFilesError
			if errors.As(err, &nf) {
				return &exitError{code: 2, err: err}
			}
			return err
		}
		sources = append(sources, src)
	}
	for _, src := range sources {
		if err := v.read(ctx, src); err != nil {
			return err
		}
	}
	return v.finish(stdout, o, paths)
}

// finish prints the report of what v read; the error carries the exit
// status.
func (v *validator) finish(stdout io.Writer, o validateOptions, paths []string) error {
	rep := v.report(paths)
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.writeText(stdout)
	}
	if !rep.Pass {
		return &exitError{code: 1, err: fmt.Errorf("validate: the data fails contract %s: %d failures (listed at the end of the report)", rep.Contract.Product, len(rep.Failures))}
	}
	return nil
}

// dataFileFormat returns the format of the data at path: flag when set,
// else from the extension of path, or of the files a directory holds or a
// glob matches (which must agree).
func dataFileFormat(path, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if f := formatOfName(path); f != "" {
		return f, nil
	}
	var names []string
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") && !e.IsDir() {
				names = append(names, e.Name())
			}
		}
	} else if err == nil || !strings.ContainsAny(path, "*?[") {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &file.NoFilesError{Path: path, Why: "does not exist", Err: err}
		}
		return "", fmt.Errorf("%s: cannot tell the format (jsonl, csv, avro) by the name: give --data-format", path)
	} else {
		m, err := filepath.Glob(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		for _, n := range m {
			if st, err := os.Stat(n); err == nil && st.Mode().IsRegular() {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return "", &file.NoFilesError{Path: path, Why: "no file matches the pattern", Err: fs.ErrNotExist}
		}
	}
	found := map[string]bool{}
	for _, n := range names {
		found[formatOfName(n)] = true
	}
	switch {
	case len(names) == 0:
		return "", &file.NoFilesError{Path: path, Why: "directory has no files"}
	case len(found) == 1 && !found[""]:
		for f := range found {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: cannot tell the format (jsonl, csv, avro) by the file names: give --data-format", path)
}

// formatOfName is the data format a file name's extension implies, or "".
func formatOfName(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".jsonl"), strings.HasSuffix(n, ".json"), strings.HasSuffix(n, ".ndjson"):
		return "jsonl"
	case strings.HasSuffix(n, ".csv"):
		return "csv"
	case strings.HasSuffix(n, ".avro"):
		return "avro"
	}
	return ""
}

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

// addExample appends an example unless there are maxExamples already.
func addExample(ex []example, pos, reason string) []example {
	if len(ex) >= maxExamples {
		return ex
	}
	return append(ex, example{Source: pos, Reason: reason})
}

// Report is the result of validate; --format json prints it as is (the
// field order is the JSON key order; docs/contracts.md documents it).
type Report struct {
	Contract contractInfo `json:"contract"`
	Data     []string     `json:"data"`
	Records  recordCounts `json:"records"`
	// SchemaVersions counts the records of each schema version (Avro and
	// Protobuf data read against the registry); null for other data.
	SchemaVersions *versionsReport   `json:"schema_versions"`
	Fields         []fieldReport     `json:"fields"`
	EventIDs       idReport          `json:"event_ids"`
	Arrival        *arrivalReport    `json:"arrival_within_24h"`
	Rules          []ruleReport      `json:"rules"`
	Thresholds     []thresholdReport `json:"thresholds"`
	Failures       []string          `json:"failures"`
	Pass           bool              `json:"pass"`
}

// contractInfo names the contract in a Report.
type contractInfo struct {
	Product       string `json:"product"`
	SchemaVersion string `json:"schema_version"`
	Owner         string `json:"owner"`
}

// recordCounts are the records read, not decoded and checked.
type recordCounts struct {
	Read               int64     `json:"read"`
	NotDecoded         int64     `json:"not_decoded"`
	Checked            int64     `json:"checked"`
	NotDecodedExamples []example `json:"not_decoded_examples"`
}

// example is one record that shows a problem: its file:line and why.
type example struct {
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// fieldReport is the null rate of one contract field.
type fieldReport struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Required bool    `json:"required"`
	Nulls    int64   `json:"nulls"`
	NullRate float64 `json:"null_rate"`
}

// idReport measures the event ids: duplicates and conflicts.
type idReport struct {
	EventID          string            `json:"event_id"`
	WithoutID        int64             `json:"without_id"`
	Duplicates       int64             `json:"duplicates"`
	DuplicateRate    float64           `json:"duplicate_rate"`
	ConflictIDs      int64             `json:"conflict_ids"`
	ConflictRecords  int64             `json:"conflict_records"`
	ConflictExamples []conflictExample `json:"conflict_examples"`
}

// conflictExample is an id delivered with two payloads, and where.
type conflictExample struct {
	ID     string `json:"id"`
	First  string `json:"first"`
	Second string `json:"second"`
}

// arrivalReport is the share of records that arrived within 24h.
type arrivalReport struct {
	Checked int64   `json:"checked"`
	Within  int64   `json:"within"`
	Ratio   float64 `json:"ratio"`
}

// ruleReport is one check's violations against its max_violation_rate.
type ruleReport struct {
	Name             string    `json:"name"`
	Kind             string    `json:"kind"`
	Field            string    `json:"field"`
	Status           string    `json:"status"` // pass, fail, not_checked
	Note             string    `json:"note"`
	Checked          int64     `json:"checked"`
	Violations       int64     `json:"violations"`
	Rate             float64   `json:"rate"`
	MaxViolationRate float64   `json:"max_violation_rate"`
	Examples         []example `json:"examples"`
}

// thresholdReport is one quality threshold, pass or fail.
type thresholdReport struct {
	Name   string  `json:"name"`
	Limit  float64 `json:"limit"`
	Value  float64 `json:"value"`
	Status string  `json:"status"` // pass, fail
}

// rate is n/of, 0 when of is 0.
func rate(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// nonNil makes a nil slice empty, so that JSON shows [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// report builds the report of everything read.
func (v *validator) report(paths []string) *Report {
	c := v.c
	rep := &Report{
		Contract: contractInfo{Product: c.Product, SchemaVersion: c.SchemaVersion, Owner: c.Owner},
		Data:     paths,
		Records: recordCounts{Read: v.records, NotDecoded: v.notDecoded, Checked: v.decoded,
			NotDecodedExamples: nonNil(v.notDecodedEx)},
		SchemaVersions: v.versionsReport(),
		Fields:         []fieldReport{},
		Rules:          []ruleReport{},
		Thresholds:     []thresholdReport{},
		Failures:       []string{},
	}
	fail := func(format string, args ...any) { rep.Failures = append(rep.Failures, fmt.Sprintf(format, args...)) }
	if v.notDecoded > 0 {
		fail("not decoded: %d records failed to decode or have no event time (the contract admits none)", v.notDecoded)
	}
	for i, f := range c.Fields {
		rep.Fields = append(rep.Fields, fieldReport{Name: f.Name, Type: f.Type, Required: f.Required,
			Nulls: v.nulls[i], NullRate: rate(v.nulls[i], v.decoded)})
	}
	rep.EventIDs = idReport{
		EventID: c.EventID, WithoutID: v.withoutID,
		Duplicates: v.duplicates, DuplicateRate: rate(v.duplicates, v.decoded),
		ConflictIDs: v.conflictIDs, ConflictRecords: v.conflictRecords,
		ConflictExamples: nonNil(v.conflictEx),
	}
	if v.hasIngest {
		rep.Arrival = &arrivalReport{Checked: v.arrivalChecked, Within: v.arrivalWithin, Ratio: rate(v.arrivalWithin, v.arrivalChecked)}
	}
	for i, info := range v.checks {
		rr := ruleReport{Name: info.Rule, Kind: info.Kind.String(), Field: info.Field,
			Checked: v.ruleChecked[i], Violations: v.ruleViolations[i],
			Rate: rate(v.ruleViolations[i], v.ruleChecked[i]), MaxViolationRate: info.MaxViolationRate,
			Examples: nonNil(v.ruleExamples[i])}
		switch {
		case info.Kind.TimeRule() && !v.hasIngest:
			rr.Status, rr.Note = "not_checked", "no ingest_time"
		case info.Kind.TimeRule() && rr.Checked == 0:
			rr.Status, rr.Note = "not_checked", "no record has an ingest_time"
		case rr.Rate <= rr.MaxViolationRate:
			rr.Status = "pass"
		default:
			rr.Status = "fail"
			fail("rule %s: violation rate %s (%d of %d) is above max_violation_rate %s", rr.Name, pct(rr.Rate), rr.Violations, rr.Checked, pct(rr.MaxViolationRate))
		}
		rep.Rules = append(rep.Rules, rr)
	}
	threshold := func(name string, limit, value float64, ok bool) {
		t := thresholdReport{Name: name, Limit: limit, Value: value, Status: "pass"}
		if !ok {
			t.Status = "fail"
			fail("%s: %s, want %s", name, num(value), bound(name, limit))
		}
		rep.Thresholds = append(rep.Thresholds, t)
	}
	q := &c.Quality
	// max_null_rate in field order (Validate made every key a field).
	names := make([]string, 0, len(q.MaxNullRate))
	for n := range q.MaxNullRate {
		names = append(names, n)
	}
	order := map[string]int{}
	for i, f := range c.Fields {
		order[f.Name] = i
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	for _, n := range names {
		limit := q.MaxNullRate[n]
		var value float64
		for _, fr := range rep.Fields {
			if fr.Name == n {
				value = fr.NullRate
			}
		}
		threshold("max_null_rate."+n, limit, value, value <= limit)
	}
	if q.MaxDuplicateIDRate != nil {
		threshold("max_duplicate_id_rate", *q.MaxDuplicateIDRate, rep.EventIDs.DuplicateRate, rep.EventIDs.DuplicateRate <= *q.MaxDuplicateIDRate)
	}
	if q.MaxConflicts != nil {
		threshold("max_conflicts", float64(*q.MaxConflicts), float64(v.conflictIDs), v.conflictIDs <= *q.MaxConflicts)
	}
	if q.MinArrivalWithin24h != nil {
		var ratio float64
		ok := false
		if rep.Arrival != nil && rep.Arrival.Checked > 0 {
			ratio, ok = rep.Arrival.Ratio, rep.Arrival.Ratio >= *q.MinArrivalWithin24h
		}
		threshold("min_arrival_within_24h", *q.MinArrivalWithin24h, ratio, ok)
	}
	rep.Pass = len(rep.Failures) == 0
	return rep
}

// num writes a number as briefly as it reads back exactly.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// bound says which side of its limit a threshold wants: "at most 0.01";
// min_ thresholds want "at least".
func bound(name string, limit float64) string {
	if strings.HasPrefix(name, "min_") {
		return "at least " + num(limit)
	}
	return "at most " + num(limit)
}

// pct writes a share as a percentage with four decimals: "0.2466%".
func pct(r float64) string { return strconv.FormatFloat(r*100, 'f', 4, 64) + "%" }

// writeText writes the report for people.
func (rep *Report) writeText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("contract %s (schema_version %s, owner %s)\n", rep.Contract.Product, rep.Contract.SchemaVersion, rep.Contract.Owner)
	p("data %s\n", strings.Join(rep.Data, " "))
	p("\nrecords\n")
	p("  read         %d\n", rep.Records.Read)
	p("  not decoded  %d\n", rep.Records.NotDecoded)
	for _, e := range rep.Records.NotDecodedExamples {
		p("    %s: %s\n", e.Source, e.Reason)
	}
	p("  checked      %d\n", rep.Records.Checked)
	rep.writeVersions(p)

	p("\nfields (null or missing)\n")
	nameW, typeW := 0, 0
	for _, f := range rep.Fields {
		nameW, typeW = max(nameW, len(f.Name)), max(typeW, len(f.Type))
	}
	for _, f := range rep.Fields {
		req := "        "
		if f.Required {
			req = "required"
		}
		p("  %-*s  %-*s  %s  %d (%s)\n", nameW, f.Name, typeW, f.Type, req, f.Nulls, pct(f.NullRate))
	}

	id := rep.EventIDs
	p("\nevent ids (%s)\n", id.EventID)
	p("  without an id  %d\n", id.WithoutID)
	p("  duplicate ids  %d (%s)\n", id.Duplicates, pct(id.DuplicateRate))
	p("  conflicts      %d ids, %d records\n", id.ConflictIDs, id.ConflictRecords)
	for _, e := range id.ConflictExamples {
		p("    %s: first %s, then %s\n", e.ID, e.First, e.Second)
	}

	if a := rep.Arrival; a != nil {
		p("\narrival within 24h  %d of %d (%s)\n", a.Within, a.Checked, pct(a.Ratio))
	} else {
		p("\narrival within 24h  n/a (no ingest_time)\n")
	}

	p("\nrules\n")
	if len(rep.Rules) == 0 {
		p("  (none)\n")
	}
	nameW = 0
	for _, r := range rep.Rules {
		nameW = max(nameW, len(r.Name))
	}
	for _, r := range rep.Rules {
		if r.Status == "not_checked" {
			p("  %-*s  not checked (%s)\n", nameW, r.Name, r.Note)
			continue
		}
		p("  %-*s  %s  %d of %d (%s), max %s\n", nameW, r.Name, strings.ToUpper(r.Status), r.Violations, r.Checked, pct(r.Rate), pct(r.MaxViolationRate))
		for _, e := range r.Examples {
			p("    %s: %s\n", e.Source, e.Reason)
		}
	}

	p("\nthresholds\n")
	if len(rep.Thresholds) == 0 {
		p("  (none)\n")
	}
	nameW = 0
	for _, t := range rep.Thresholds {
		nameW = max(nameW, len(t.Name))
	}
	for _, t := range rep.Thresholds {
		p("  %-*s  %s  %s, %s\n", nameW, t.Name, strings.ToUpper(t.Status), num(t.Value), bound(t.Name, t.Limit))
	}

	if rep.Pass {
		p("\nresult PASS\n")
		return
	}
	p("\nresult FAIL\n")
	for _, f := range rep.Failures {
		p("  %s\n", f)
	}
}
