package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/perturb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceFlags are the flags of tidemark produce.
type produceFlags struct {
	topic          string
	brokers        []string
	keyField       string
	partitionField string
	timestampField string
	partitions     int32
	create         bool
	skipInvalid    bool
	timeout        time.Duration
	quiet          bool
	format         string // json, avro, protobuf
	schemaFile     string // --schema: .avsc or .proto
	registry       string // --registry URL
	registrySet    bool   // --registry given, not only $SCHEMA_REGISTRY_URL
	message        string // --message: the Protobuf message type
}

// newProduceCmd is tidemark produce; its summary goes to stderr.
func newProduceCmd(stderr io.Writer) *cobra.Command {
	var f produceFlags
	cmd := &cobra.Command{
		Use:   "produce FILE --topic TOPIC [flags]",
		Short: "Load a JSON-lines file into a Kafka topic, one record per line (for demos and tests)",
		Long: `Load a JSON-lines file into a Kafka topic, one record per line (for demos
and tests).

Every line must be one JSON object; it becomes a record value byte for byte
(without its line ending; blank lines are skipped, a UTF-8 byte-order mark at
the start of the file is dropped). The record key is the text of
--key-field (a string unescaped, a number as written, true or false; a dotted
name reaches into nested objects as in pipelines); without --key-field
records have no key. Keyed records go to the partition murmur2(key) picks, as
the Java client's default partitioner does; records without a key fill one
partition per batch of up to 64 KiB, then move on (the sticky partitioner of
KIP-794). --partition-field places each record on the partition its field
names instead.

The whole file is checked before the first record is sent, so a bad line
(not a JSON object, key, partition or timestamp field missing or unusable)
produces nothing and the error names FILE:LINE; with --skip-invalid bad lines
are skipped and counted. The command waits until the brokers have
acknowledged every record; a summary (records per partition) goes to stderr.

With --format avro or protobuf each line is converted to a record of the
--schema file (an Avro schema, .avsc, or a .proto file; --message picks its
message type, by default the first), which is registered first under the
subject TOPIC-value in the Schema Registry at --registry (tidemark dev-kafka
serves one); values are written in the Confluent wire format (magic byte 0,
the 4-byte schema id, for Protobuf the message indexes). Avro fields take
JSON numbers or numeric text (decimals exactly, "17850.0" as a long), RFC
3339 text for timestamps, null or a missing member for a union's null or the
field's default; Protobuf messages are read with protojson. A line that does
not convert is a bad line.

Exit status: 0 when every record was acknowledged, 1 when the file holds a
bad line, the topic does not exist (see --create) or a record failed, 2 for a
usage error.`,
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			partitionsSet := cmd.Flags().Changed("partitions")
			f.registrySet = cmd.Flags().Changed("registry")
			return runProduce(cmd.Context(), args[0], &f, partitionsSet, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.topic, "topic", "t", "", "topic to produce to (required)")
	fl.StringSliceVar(&f.brokers, "brokers", defaultBrokers(), "seed brokers, host:port, comma separated (default $KAFKA_BROKERS when set)")
	fl.StringVar(&f.keyField, "key-field", "", "field whose text is the record key (default: no key)")
	fl.StringVar(&f.partitionField, "partition-field", "", `field holding the partition index: a whole number, or a string "3" or "p3" as tidemark perturb writes (default: partition by key)`)
	fl.StringVar(&f.timestampField, "timestamp-field", "", "RFC 3339 field (with a UTC offset) used as the record timestamp, truncated to ms (default: the time of producing)")
	fl.Int32Var(&f.partitions, "partitions", 4, "partitions of the topic --create creates (only with --create)")
	fl.BoolVar(&f.create, "create", false, "create the topic when it does not exist")
	fl.BoolVar(&f.skipInvalid, "skip-invalid", false, "skip and count bad lines instead of failing")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the brokers: the topic lookup and creation, and any acknowledgement while records wait")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no summary")
	fl.StringVar(&f.format, "format", "json", "record values: json (the lines as they are), avro or protobuf (Confluent wire format, with --schema and --registry)")
	fl.StringVar(&f.schemaFile, "schema", "", "the Avro schema (.avsc) or .proto file of --format avro or protobuf")
	fl.StringVar(&f.registry, "registry", os.Getenv("SCHEMA_REGISTRY_URL"), "Schema Registry URL (default $SCHEMA_REGISTRY_URL)")
	fl.StringVar(&f.message, "message", "", "the Protobuf message type of --format protobuf (default: the file's first)")
	return cmd
}

// produceLine is one line of the input turned into a record.
type produceLine struct {
	key       []byte // nil: no key
	partition int32  // -1: by the partitioner
	timestamp int64  // ms since the epoch; -1: the time of producing
}

// lineError is a bad line of the input.
type lineError struct {
	path   string
	line   int64
	reason string
}

func (e *lineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.reason) }

// produceParser turns lines into records by the flags.
type produceParser struct {
	f          *produceFlags
	partitions int32 // of the topic
	text       []byte
	enc        valueEncoder // nil: the line is the value
	value      []byte       // the encoded value of the last parse
}

// parse checks one line and extracts its key, partition and timestamp.
// The reason is "" for a usable line.
func (p *produceParser) parse(b []byte) (produceLine, string) {
	l := produceLine{partition: -1, timestamp: -1}
	if !perturb.Valid(b) {
		return l, "not a JSON object"
	}
	var reason string
	if p.f.keyField != "" {
		if p.text, reason = fieldText(p.text[:0], b, p.f.keyField, "key"); reason != "" {
			return l, reason
		}
		l.key = append([]byte{}, p.text...) // non-nil even when empty: "" is a key
	}
	if p.f.partitionField != "" {
		if p.text, reason = fieldText(p.text[:0], b, p.f.partitionField, "partition"); reason != "" {
			return l, reason
		}
		s := strings.TrimPrefix(string(p.text), "p")
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || strings.Trim(s, "0123456789") != "" {
			return l, fmt.Sprintf("partition field %q: %q is not a partition index (a whole number, or \"p3\")", p.f.partitionField, p.text)
		}
		if n >= int64(p.partitions) {
			return l, fmt.Sprintf("partition field %q: partition %d does not exist (the topic has partitions 0 to %d)", p.f.partitionField, n, p.partitions-1)
		}
		l.partition = int32(n)
	}
	if p.f.timestampField != "" {
		if p.text, reason = fieldText(p.text[:0], b, p.f.timestampField, "timestamp"); reason != "" {
			return l, reason
		}
		ms, err := eventtime.ParseRFC3339(string(p.text))
		if err != nil {
			return l, fmt.Sprintf("timestamp field %q: %v", p.f.timestampField, err)
		}
		if ms < 0 {
			return l, fmt.Sprintf("timestamp field %q: %q is before 1970-01-01T00:00:00Z, which a Kafka timestamp cannot be", p.f.timestampField, p.text)
		}
		l.timestamp = ms
	}
	if p.enc != nil {
		v, err := p.enc.encode(p.value[:0], b)
		if err != nil {
			return l, fmt.Sprintf("%s: %v", p.f.format, err)
		}
		p.value = v
	}
	return l, ""
}

// fieldText appends the text of field in the JSON object obj (see
// perturb.AppendFieldText: the file source's rules); the reason says why
// there is none. role names the field's use in messages.
func fieldText(dst, obj []byte, field, role string) ([]byte, string) {
	if out, ok := perturb.AppendFieldText(dst, obj, field); ok {
		return out, ""
	}
	s, e, ok := perturb.Lookup(obj, field)
	if !ok {
		return dst, fmt.Sprintf("%s field %q is missing", role, field)
	}
	kind := map[byte]string{'n': "null", '{': "an object", '[': "an array"}[obj[s:e][0]]
	return dst, fmt.Sprintf("%s field %q is %s, not a string, number or boolean", role, field, kind)
}

// maxSkippedShown is how many skipped lines --skip-invalid lists.
const maxSkippedShown = 10

func runProduce(ctx context.Context, path string, f *produceFlags, partitionsSet bool, stderr io.Writer) error {
	switch {
	case f.topic == "":
		return usageErr("--topic: required")
	case !validTopic(f.topic):
		return usageErr("--topic: %q is not a topic name (1 to 249 of [a-zA-Z0-9._-], not . or ..)", f.topic)
	case len(f.brokers) == 0:
		return usageErr("--brokers: required")
	case partitionsSet && !f.create:
		return usageErr("--partitions: only with --create (the partitions of the topic it creates)")
	case f.partitions < 1:
		return usageErr("--partitions: must be at least 1")
	case f.timeout <= 0:
		return usageErr("--timeout: must be positive")
	}
	for _, b := range f.brokers {
		if strings.TrimSpace(b) == "" {
			return usageErr("--brokers: an empty address")
		}
	}
	// The file first: a missing file needs no broker.
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	fh.Close()
	say := func(format string, args ...any) {
		if !f.quiet {
			fmt.Fprintf(stderr, "produce: "+format+"\n", args...)
		}
	}

	// The client's default partitioner, spelled out because the docs
	// promise it: keys hashed with murmur2 like the Java client, keyless
	// records sticky per 64 KiB batch.
	partitioner := kgo.UniformBytesPartitioner(64<<10, true, true, nil)
	if f.partitionField != "" {
		partitioner = kgo.ManualPartitioner()
	}
	// No kgo.RecordDeliveryTimeout: it counts from the record's
	// timestamp, which --timestamp-field may set years back. The
	// watchdog below bounds the wait instead.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(f.brokers...),
		kgo.ClientID("tidemark-produce"),
		kgo.DefaultProduceTopic(f.topic),
		kgo.RecordPartitioner(partitioner),
	)
	if err != nil {
		return usageErr("--brokers: %v", err)
	}
	defer cl.Close()
	nparts, err := produceTopic(ctx, kadm.NewClient(cl), f, say)
	if err != nil {
		return err
	}

	enc, note, err := newValueEncoder(ctx, f)
	if err != nil {
		return err
	}
	if note != "" {
		say("%s", note)
	}
	p := &produceParser{f: f, partitions: nparts, enc: enc}
	if !f.skipInvalid {
		// Check the whole file before sending anything.
		if err := eachLine(ctx, path, func(n int64, b []byte) error {
			if _, reason := p.parse(b); reason != "" {
				return &lineError{path, n, reason}
			}
			return nil
		}); err != nil {
			return err
		}
	}

	var (
		mu       sync.Mutex
		firstErr error
		failed   int64
		acked    = make([]int64, nparts)
		wg       sync.WaitGroup
		waiting  int64     // records sent and not yet answered
		progress time.Time // of the last answer, or when waiting began
	)
	// The watchdog gives up when records wait and the brokers have
	// answered none of them for --timeout.
	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		tick := time.NewTicker(min(f.timeout/10, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			stalled := waiting > 0 && time.Since(progress) > f.timeout
			mu.Unlock()
			if stalled {
				stop(errNoAcks)
				return
			}
		}
	}()
	promise := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		waiting--
		progress = time.Now()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		} else if r.Partition >= 0 && int(r.Partition) < len(acked) {
			acked[r.Partition]++
		}
		wg.Done()
	}
	failing := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	var sent, skipped int64
	var skippedShown []string
	readErr := eachLine(ctx, path, func(n int64, b []byte) error {
		l, reason := p.parse(b)
		if reason != "" {
			if !f.skipInvalid {
				return &lineError{path, n, reason}
			}
			skipped++
			if len(skippedShown) < maxSkippedShown {
				skippedShown = append(skippedShown, (&lineError{path, n, reason}).Error())
			}
			return nil
		}
		if failing() {
			return errStopProducing
		}
		value := b
		if p.enc != nil {
			value = p.value
		}
		r := &kgo.Record{Key: l.key, Value: append([]byte(nil), value...), Partition: l.partition}
		if l.timestamp >= 0 {
			r.Timestamp = time.UnixMilli(l.timestamp)
		}
		wg.Add(1)
		sent++
		mu.Lock()
		if waiting == 0 {
			progress = time.Now()
		}
		waiting++
		mu.Unlock()
		cl.Produce(pctx, r, promise)
		return nil
	})
	flushErr := cl.Flush(pctx)
	if flushErr == nil {
		wg.Wait()
	}
	stalled := errors.Is(context.Cause(pctx), errNoAcks)

	mu.Lock()
	defer mu.Unlock()
	var total int64
	for _, n := range acked {
		total += n
	}
	parts := make([]string, len(acked))
	for i, n := range acked {
		parts[i] = fmt.Sprintf("%d=%d", i, n)
	}
	for _, s := range skippedShown {
		say("skipped %s", s)
	}
	if skipped > int64(len(skippedShown)) {
		say("skipped %s more", plural(skipped-int64(len(skippedShown)), "bad line"))
	}
	summary := fmt.Sprintf("%s to %s (partition=records: %s)", plural(total, "record"), f.topic, strings.Join(parts, " "))
	if f.skipInvalid {
		summary += fmt.Sprintf(", %s skipped", plural(skipped, "bad line"))
	}
	switch {
	case stalled:
		return fmt.Errorf("no acknowledgement from %s for %s (--timeout); %s were acknowledged", strings.Join(f.brokers, ","), f.timeout, summary)
	case readErr != nil && !errors.Is(readErr, errStopProducing):
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; %s were acknowledged", summary)
		}
		// A line that changed since the check, or a read error.
		return fmt.Errorf("%w (%s were acknowledged before)", readErr, summary)
	case flushErr != nil:
		return fmt.Errorf("interrupted while waiting for acknowledgements; %s were acknowledged", summary)
	case firstErr != nil:
		return fmt.Errorf("%d of %d records failed, the first with: %w; %s were acknowledged", failed, sent, firstErr, summary)
	}
	say("%s", summary)
	return nil
}

// errStopProducing ends the read loop once a record has failed.
var errStopProducing = errors.New("a record failed")

// errNoAcks is the cause of giving up on the brokers.
var errNoAcks = errors.New("no acknowledgements")

// produceTopic looks the topic up, creating it with --create, and
// returns its partition count.
func produceTopic(ctx context.Context, adm *kadm.Client, f *produceFlags, say func(string, ...any)) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	tds, err := adm.ListTopics(ctx, f.topic)
	if err != nil {
		return 0, fmt.Errorf("looking up topic %q at %s: %w", f.topic, strings.Join(f.brokers, ","), err)
	}
	td, ok := tds[f.topic]
	switch {
	case ok && td.Err == nil:
		if f.create {
			say("topic %s exists with %d partitions; not created", f.topic, len(td.Partitions))
		}
		return int32(len(td.Partitions)), nil
	case ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return 0, fmt.Errorf("topic %q: %w", f.topic, td.Err)
	case !f.create:
		return 0, fmt.Errorf("topic %q does not exist at %s (add --create to create it with --partitions partitions)", f.topic, strings.Join(f.brokers, ","))
	}
	resp, err := adm.CreateTopic(ctx, f.partitions, -1, nil, f.topic)
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		// Created by someone else meanwhile: look again.
		tds, err := adm.ListTopics(ctx, f.topic)
		if err != nil {
			return 0, fmt.Errorf("looking up topic %q: %w", f.topic, err)
		}
		if td, ok := tds[f.topic]; ok && td.Err == nil {
			return int32(len(td.Partitions)), nil
		}
		return 0, fmt.Errorf("topic %q: exists, yet cannot be described", f.topic)
	case err != nil:
		return 0, fmt.Errorf("creating topic %q: %w", f.topic, err)
	}
	say("created topic %s with %d partitions", f.topic, resp.NumPartitions)
	if resp.NumPartitions > 0 {
		return resp.NumPartitions, nil
	}
	return f.partitions, nil
}

// validTopic reports whether name is a legal Kafka topic name.
func validTopic(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
