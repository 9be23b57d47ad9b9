package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/perturb"
	"github.com/tidemark/tidemark/spec"
)

// perturbFlags are the flags of tidemark perturb.
type perturbFlags struct {
	out            string
	format         string
	delimiter      string
	eventTime      string
	timeFormat     string
	layout         string
	timezone       string
	seed           int64
	delay          time.Duration
	distribution   string
	maxDelay       time.Duration
	straggler      float64
	redeliver      float64
	conflict       float64
	conflictField  string
	conflictChange string
	partitions     int
	partitionBy    string
	offline        float64
	offlineDelay   time.Duration
	arrivalField   string
	partitionField string
	zone           string
}

func newPerturbCmd(stderr io.Writer) *cobra.Command {
	var f perturbFlags
	cmd := &cobra.Command{
		Use:   "perturb FILE... --out OUT.jsonl --event-time FIELD [flags]",
		Short: "Write event files as a simulated transport delivers them: late, shuffled, redelivered, conflicting",
		Long: `Write event files as a simulated transport delivers them: late, shuffled,
redelivered, conflicting, partitioned, with devices that go offline.

The records of the files (JSON lines, or CSV whose rows become JSON objects of
strings) are given seeded delays and copies and written to --out as JSON lines
sorted by arrival (ties in input order), each with its arrival time in
--arrival-field and its partition in --partition-field. A pipeline reads the
output with

  source: {path: OUT.jsonl, arrival_time_field: ingested_at, partition_field: partition}

The same seed, flags and files give the same bytes. A summary goes to stderr.
See docs/perturb.md for the model.

Exit status: 0 when the output was written, 1 when an input could not be read
or holds a line that is not a JSON object, 2 for a usage error.`,
		Args: usage(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPerturb(cmd.Context(), args, &f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "output file (JSON lines; required)")
	fl.StringVar(&f.format, "format", "", "input format, jsonl or csv (default: from each file's extension)")
	fl.StringVar(&f.delimiter, "csv-delimiter", ",", "CSV field separator (one character)")
	fl.StringVar(&f.eventTime, "event-time", "", "event-time field (required; dotted for nested JSON: properties.time)")
	fl.StringVar(&f.timeFormat, "event-time-format", "", "rfc3339, epoch_ms, epoch_s or layout (default rfc3339, or layout with --layout)")
	fl.StringVar(&f.layout, "layout", "", `Go layout of event times without an offset ("2006-01-02 15:04:05")`)
	fl.StringVar(&f.timezone, "timezone", "", "IANA zone of --layout event times (required with --layout)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the simulated transport")
	fl.DurationVar(&f.delay, "delay", 30*time.Second, "usual delay: the bound of a uniform delay, the mean of an exponential one")
	fl.StringVar(&f.distribution, "distribution", "uniform", "delay distribution: uniform in [0, delay] or exponential (mean delay, capped at max-delay)")
	fl.DurationVar(&f.maxDelay, "max-delay", 0, "bound of straggler, exponential and copy delays (default: delay, or 10 × delay with exponential)")
	fl.Float64Var(&f.straggler, "straggler-fraction", 0, "share of records (0..1) delayed uniformly up to max-delay")
	fl.Float64Var(&f.redeliver, "redeliver-fraction", 0, "share of records (0..1) delivered twice, byte-identical")
	fl.Float64Var(&f.conflict, "conflict-fraction", 0, "share of records (0..1) delivered again with conflict-field changed")
	fl.StringVar(&f.conflictField, "conflict-field", "", "field a conflicting copy changes (required with conflict-fraction)")
	fl.StringVar(&f.conflictChange, "conflict-change", "", `how: json-type (a number +1, a string + "-x"), number (+1, also in a numeric string, as CSV values are) or string (default json-type)`)
	fl.IntVar(&f.partitions, "partitions", 1, "simulated partitions p0 … pN-1 (1..4096)")
	fl.StringVar(&f.partitionBy, "partition-by", "", "field whose value is the partition key (the device); default round robin")
	fl.Float64Var(&f.offline, "offline-fraction", 0, "share of partition-key values (devices, 0..1) that go offline once and send a burst")
	fl.DurationVar(&f.offlineDelay, "offline-delay", perturb.DefaultOfflineDelay, "how long an offline device stays offline")
	fl.StringVar(&f.arrivalField, "arrival-field", perturb.DefaultArrivalField, "output field holding the arrival time")
	fl.StringVar(&f.partitionField, "partition-field", perturb.DefaultPartitionField, `output field holding the partition name ("" or "-": none)`)
	fl.StringVar(&f.zone, "zone", "UTC", "IANA zone of arrival times")
	return cmd
}

// perturbInput is one input file and how to read it.
type perturbInput struct {
	path string
	csv  bool
}

func runPerturb(ctx context.Context, args []string, f *perturbFlags, stderr io.Writer) error {
	o, parser, inputs, comma, err := f.options(args)
	if err != nil {
		return err
	}
	// The output must not be an input: it is replaced only at the end,
	// but reading it back would be a mistake.
	for _, in := range inputs {
		if samePath(in.path, f.out) {
			return usageErr("--out: %s is also an input", f.out)
		}
	}
	rd := &perturbReader{field: f.eventTime, parser: parser, comma: comma}

	// Pass 1: the input's disorder (how far an event time lies behind the
	// largest before it), so that pass 2 streams sorted input and holds
	// only what its disorder requires.
	var horizon, disorder int64
	seen := false
	if err := rd.each(ctx, inputs, false, func(_ []byte, et int64) error {
		if et == perturb.NoTime {
			return nil
		}
		switch {
		case !seen:
			horizon, seen = et, true
		case et > horizon:
			horizon = et
		default:
			disorder = max(disorder, horizon-et)
		}
		return nil
	}); err != nil {
		return err
	}
	o.Disorder = time.Duration(disorder) * time.Millisecond
	sim, err := perturb.New(o)
	if err != nil {
		return usageErr("%v", flagNames(err))
	}

	// A regular file is replaced atomically (a temporary file renamed over
	// it); a device or a pipe (/dev/stdout, /dev/null) is written in place,
	// never replaced.
	var tmp *os.File
	special := false
	if st, err := os.Stat(f.out); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return usageErr("--out %s is a directory", f.out)
		}
		special = true
		if tmp, err = os.OpenFile(f.out, os.O_WRONLY, 0); err != nil {
			return err
		}
	} else {
		dir := filepath.Dir(f.out)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if tmp, err = os.CreateTemp(dir, "."+filepath.Base(f.out)+".tmp-*"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name()) // after the rename, a no-op
	}
	w := bufio.NewWriterSize(tmp, 256<<10)
	drain := func() error {
		for d, ok := sim.Next(); ok; d, ok = sim.Next() {
			w.Write(d.JSON)
			if err := w.WriteByte('\n'); err != nil {
				return err
			}
		}
		return nil
	}
	err = rd.each(ctx, inputs, true, func(obj []byte, et int64) error {
		if err := sim.Add(perturb.Event{JSON: obj, EventTime: et}); err != nil {
			return err
		}
		return drain()
	})
	if err != nil {
		tmp.Close()
		return err
	}
	sim.Close()
	if err := drain(); err != nil {
		tmp.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	st := sim.Stats()
	if st.Unordered != 0 { // the disorder pass makes this impossible
		return fmt.Errorf("perturb: %d deliveries out of arrival order (input changed while it was read?)", st.Unordered)
	}
	if !special {
		if err := os.Rename(tmp.Name(), f.out); err != nil {
			return err
		}
	}
	writePerturbSummary(stderr, st, o, f.out)
	return nil
}

// options checks the flags and builds the simulator's options, the
// event-time parser and the list of inputs.
func (f *perturbFlags) options(args []string) (o perturb.Options, p *eventtime.Parser, inputs []perturbInput, comma rune, err error) {
	fail := func(e error) (perturb.Options, *eventtime.Parser, []perturbInput, rune, error) {
		return perturb.Options{}, nil, nil, 0, e
	}
	switch {
	case f.out == "":
		return fail(usageErr("--out: required"))
	case f.eventTime == "":
		return fail(usageErr("--event-time: required"))
	case f.layout != "" && f.timezone == "":
		return fail(usageErr("--timezone: required with --layout"))
	}
	et := spec.EventTime{Field: f.eventTime, Format: f.timeFormat, Layout: f.layout, Timezone: f.timezone}
	if et.Format == "" {
		et.Format = "rfc3339"
		if et.Layout != "" {
			et.Format = "layout"
		}
	}
	if et.Format == "layout" && et.Layout == "" {
		return fail(usageErr("--layout: required with --event-time-format layout"))
	}
	if p, err = eventtime.New(et); err != nil {
		return fail(usageErr("%s", flagText(err.Error())))
	}
	r, n := utf8.DecodeRuneInString(f.delimiter)
	if n != len(f.delimiter) || n == 0 || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
		return fail(usageErr("--csv-delimiter: %q is not one usable character", f.delimiter))
	}
	comma = r
	for _, a := range args {
		format := f.format
		if format == "" {
			switch ext := strings.ToLower(filepath.Ext(a)); ext {
			case ".jsonl", ".json", ".ndjson":
				format = "jsonl"
			case ".csv":
				format = "csv"
			default:
				return fail(usageErr("%s: cannot tell the format from the extension %q; set --format", a, ext))
			}
		}
		if format != "jsonl" && format != "csv" {
			return fail(usageErr("--format: %q is neither jsonl nor csv", format))
		}
		inputs = append(inputs, perturbInput{path: a, csv: format == "csv"})
	}
	dist, err := perturb.ParseDistribution(f.distribution)
	if err != nil {
		return fail(usageErr("%v", flagNames(err)))
	}
	change, err := perturb.ParseChange(f.conflictChange)
	if err != nil {
		return fail(usageErr("%v", flagNames(err)))
	}
	loc, err := time.LoadLocation(f.zone)
	if err != nil {
		return fail(usageErr("--zone: %v", err))
	}
	pf := f.partitionField
	if pf == "" {
		pf = perturb.NoField
	}
	if f.arrivalField == "" {
		return fail(usageErr("--arrival-field: must not be empty"))
	}
	if f.arrivalField == f.eventTime {
		return fail(usageErr("--arrival-field %q is also --event-time: the arrival time would overwrite the event time", f.arrivalField))
	}
	o = perturb.Options{
		Seed: f.seed, Distribution: dist, Delay: f.delay, MaxDelay: f.maxDelay,
		StragglerFraction: f.straggler, RedeliverFraction: f.redeliver,
		ConflictFraction: f.conflict, ConflictField: f.conflictField, ConflictChange: change,
		Partitions: f.partitions, PartitionBy: f.partitionBy,
		OfflineFraction: f.offline, OfflineDelay: f.offlineDelay,
		ArrivalField: f.arrivalField, PartitionField: pf, Zone: loc,
	}
	if f.partitions == 0 {
		return fail(usageErr("--partitions: must be between 1 and %d", perturb.MaxPartitions))
	}
	if f.offline > 0 && f.partitionBy == "" {
		return fail(usageErr("--offline-fraction: needs --partition-by (the field naming the device)"))
	}
	if f.offline > 0 && f.offlineDelay <= 0 {
		return fail(usageErr("--offline-delay: must be positive"))
	}
	if err := o.Validate(); err != nil {
		return fail(usageErr("%v", flagNames(err)))
	}
	return o, p, inputs, comma, nil
}

// flagNames rewrites perturb's option errors with the command's flag
// names: "max_delay: …" becomes "--max-delay: …".
func flagNames(err error) string {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		var oe *perturb.OptionError
		if errors.As(e, &oe) && oe.Key != "" {
			b.WriteString("--" + strings.ReplaceAll(oe.Key, "_", "-") + ": " + oe.Reason)
			continue
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// flagText turns the event_time keys of eventtime's errors into flags.
func flagText(s string) string {
	s = strings.ReplaceAll(s, "event_time.timezone", "--timezone")
	return strings.ReplaceAll(s, "event_time.format", "--event-time-format")
}

// samePath reports whether a and b name the same file (or would).
func samePath(a, b string) bool {
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// perturbReader reads the input files record by record: a JSON object
// and its event time (perturb.NoTime when the field is missing, null or
// does not parse).
type perturbReader struct {
	field  string
	parser *eventtime.Parser
	comma  rune
	obj    []byte // a CSV record as a JSON object
	text   []byte // scratch
}

// each calls fn for every record of the inputs, in order. With build
// false, CSV records are not turned into JSON objects (fn gets nil).
// Errors name the file and line.
func (rd *perturbReader) each(ctx context.Context, inputs []perturbInput, build bool, fn func(obj []byte, et int64) error) error {
	for _, in := range inputs {
		var err error
		if in.csv {
			err = rd.eachCSV(ctx, in.path, build, fn)
		} else {
			err = rd.eachJSONL(ctx, in.path, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (rd *perturbReader) eachJSONL(ctx context.Context, path string, fn func([]byte, int64) error) error {
	return eachLine(ctx, path, func(line int64, b []byte) error {
		if !perturb.Valid(b) {
			return fmt.Errorf("%s:%d: %w", path, line, perturb.ErrNotObject)
		}
		et := perturb.NoTime
		var ok bool
		if rd.text, ok = perturb.AppendFieldText(rd.text[:0], b, rd.field); ok {
			if ms, err := rd.parser.Parse(rd.text); err == nil {
				et = ms
			}
		}
		if err := fn(b, et); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		return nil
	})
}

func (rd *perturbReader) eachCSV(ctx context.Context, path string, build bool, fn func([]byte, int64) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 256<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.Comma = rd.comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: header: %w", path, err)
	}
	header = append([]string(nil), header...)
	col := -1
	for i, h := range header {
		if h == rd.field {
			col = i
			break
		}
	}
	if col < 0 {
		return fmt.Errorf("%s: no column %q (the event-time field) in CSV header %q", path, rd.field, header)
	}
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		et := perturb.NoTime
		if col < len(rec) && rec[col] != "" {
			if ms, err := rd.parser.Parse([]byte(rec[col])); err == nil {
				et = ms
			}
		}
		var obj []byte
		if build {
			rd.obj = appendCSVObject(rd.obj[:0], header, rec)
			obj = rd.obj
		}
		if err := fn(obj, et); err != nil {
			line, _ := cr.FieldPos(0)
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// appendCSVObject appends a CSV record as a JSON object of strings in
// header order; empty text, which the file source reads as null, is
// null. Fields beyond the header are named "_9", "_10" … (1-based), as in
// the file source's EventJSON; missing ones are left out.
func appendCSVObject(dst []byte, header, rec []string) []byte {
	dst = append(dst, '{')
	for i, v := range rec {
		if i > 0 {
			dst = append(dst, ',')
		}
		if i < len(header) {
			dst = changelog.AppendJSONString(dst, header[i])
		} else {
			dst = fmt.Appendf(dst, `"_%d"`, i+1)
		}
		dst = append(dst, ':')
		if v == "" {
			dst = append(dst, "null"...)
			continue
		}
		dst = changelog.AppendJSONString(dst, v)
	}
	return append(dst, '}')
}

// writePerturbSummary prints what the simulation did.
func writePerturbSummary(w io.Writer, st perturb.Stats, o perturb.Options, out string) {
	line := func(name string, v any, extra string) {
		fmt.Fprintf(w, "  %-22s %12v%s\n", name, v, extra)
	}
	fmt.Fprintf(w, "perturb: wrote %s\n", out)
	line("records in", st.Records, "")
	if st.NoTime > 0 {
		line("without event time", st.NoTime, "  (delivered once, at the horizon)")
	}
	line("deliveries out", st.Deliveries, "")
	line("redeliveries", st.Redeliveries, "")
	skipped := ""
	if st.ConflictsSkipped > 0 {
		skipped = fmt.Sprintf("  (%d more chosen without a changeable %s)", st.ConflictsSkipped, o.ConflictField)
	}
	line("conflicts", st.Conflicts, skipped)
	line("stragglers", st.Stragglers, "")
	line("offline bursts", st.OfflineBursts, fmt.Sprintf("  (%d records)", st.OfflineRecords))
	line("max delay seen", time.Duration(st.MaxDelay)*time.Millisecond, "")
	line("partitions", o.Partitions, "")
	line("held at most", st.MaxHeld, fmt.Sprintf("  (input disorder %s)", o.Disorder))
}
