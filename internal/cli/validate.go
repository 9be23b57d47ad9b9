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
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/contract"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/spec"
)

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
"data/*.csv", as for a file source, with ${VAR} and ${VAR:-default}
expanded as in a pipeline file ('${TIDEMARK_DATA}/online-retail/by-day',
quoted for the shell, reads the shared data sets as the example
pipelines do); the format is jsonl, csv or avro (Avro
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

// runValidate loads the contract, reads every path and prints the report
// to stdout; the error carries the exit status.
func runValidate(ctx context.Context, stdout io.Writer, o validateOptions, paths []string) error {
	if o.contract == "" {
		return usageErr("validate: --contract is required")
	}
	if o.format != "text" && o.format != "json" {
		return usageErr("validate: --format %q: want text or json", o.format)
	}
	switch {
	case len(o.topics) > 0 && len(paths) > 0:
		return usageErr("validate: give DATA files or --topic, not both")
	case len(o.topics) == 0 && len(paths) == 0:
		return usageErr("validate: give DATA files (or --topic TOPIC)")
	case len(o.topics) > 0 && o.ordinal != "":
		return usageErr("validate: --ordinal numbers the records of files; Kafka records have offsets")
	}
	switch o.dataFormat {
	case "", "jsonl", "csv", "avro":
		if len(o.topics) > 0 && o.dataFormat == "csv" {
			return usageErr("validate: --data-format csv: Kafka records are jsonl, avro or protobuf")
		}
	case "protobuf":
		if len(o.topics) == 0 {
			return usageErr("validate: --data-format protobuf: only with --topic (files are jsonl, csv or avro)")
		}
	default:
		return usageErr("validate: --data-format %q: want jsonl, csv or avro (with --topic: jsonl, avro or protobuf)", o.dataFormat)
	}
	var ord *spec.Ordinal
	if o.ordinal != "" {
		field, per, _ := strings.Cut(o.ordinal, ":")
		if field == "" {
			return usageErr("validate: --ordinal %q: want FIELD:PER or FIELD", o.ordinal)
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
	// Check every path before reading any. ${VAR} and ${VAR:-default}
	// expand as in a pipeline file: '${TIDEMARK_DATA}/online-retail/by-day'
	// (quoted, so the shell leaves it) finds the shared data sets as the
	// example pipelines do.
	paths = slices.Clone(paths)
	for i, p := range paths {
		x, err := spec.ExpandEnv([]byte(p), os.LookupEnv)
		if err != nil {
			return usageErr("validate: DATA %q: %w", p, err)
		}
		paths[i] = string(x)
	}
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
