package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/results"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/iceberg"
	"github.com/tidemark/tidemark/sink/jsonl"
	"github.com/tidemark/tidemark/sink/kafka"
	"github.com/tidemark/tidemark/sink/parquet"
	"github.com/tidemark/tidemark/sink/postgres"
	"github.com/tidemark/tidemark/sink/sqlite"
	"github.com/tidemark/tidemark/sink/stdout"
	"github.com/tidemark/tidemark/spec"
)

// ResultSinkFactory opens a result sink for a spec.Sink of one type.
type ResultSinkFactory func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error)

// RecordSinkFactory opens a side-output sink for a spec.Sink of one type.
type RecordSinkFactory func(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error)

// Env is what connectors may use from the environment.
type Env struct {
	// Stdout is where stdout sinks write.
	Stdout io.Writer
	// Pipeline is the pipeline's name (sinks' commit markers).
	Pipeline string
	// Checkpoints is true when the pipeline takes checkpoints: an
	// exactly-once sink (spec.Sink.Delivery not at_least_once) must then
	// implement sink.Committer.
	Checkpoints bool
	// Restoring is true when the checkpoint directory holds checkpoints:
	// the run resumes, and sinks must keep what earlier runs published
	// (no truncation, no replacement).
	Restoring bool
	// Task, in a group run (docs/scale-out.md), names the task the sink
	// belongs to: a SQL sink keeps its commit marker per task
	// ("<table>@<task>"), and never empties a table (the other tasks of
	// the group write it too). Empty otherwise.
	Task string
	// Group, in a group run, is its consumer group: the instances' SQL
	// sinks share the tables' writer locks, which a run outside the group
	// cannot take (docs/connectors/postgres.md, "One writer per table").
	// Empty otherwise.
	Group string
	// Fault is Options.FaultHook, for the named points inside a sink's
	// commit (parquet, iceberg); nil when none.
	Fault func(point string, id int64)
	// held are the lock files of parquet and iceberg outputs the run's
	// output guard holds (engine/paths.go): their sinks take none.
	held []string
}

// holds reports whether the run holds lock, a lock file of a parquet or
// iceberg output (compared after resolving the links of its directory,
// as the guard names it).
func (e *Env) holds(lock string) bool {
	if len(e.held) == 0 {
		return false
	}
	d, err := resolve(filepath.Dir(lock))
	if err != nil {
		return false
	}
	return slices.Contains(e.held, filepath.Join(d.real, filepath.Base(lock)))
}

// fresh reports whether a SQL sink of the run starts its table over
// (a run from the start of its input, not a group's task).
func (e *Env) fresh() bool { return !e.Restoring && e.Task == "" }

// marker is the commit marker's sink name of a SQL sink on table.
func (e *Env) marker(table string) string {
	if e.Task != "" {
		return table + "@" + e.Task
	}
	return table
}

// exactlyOnce reports whether sink s stages output for checkpoints.
func (e *Env) exactlyOnce(s spec.Sink) bool {
	return e.Checkpoints && s.Delivery != "at_least_once"
}

// Registry maps sink type names to constructors. Each Run uses its own
// (Options.Registry), defaulting to DefaultRegistry().
type Registry struct {
	Results map[string]ResultSinkFactory
	Records map[string]RecordSinkFactory
}

// DefaultRegistry returns the built-in sinks: sqlite, postgres (mode
// results; the runner opens mode ledger itself), kafka, jsonl, parquet
// and stdout for results; sqlite and postgres (tables of records), kafka,
// jsonl, parquet and stdout for side outputs; iceberg for results.
func DefaultRegistry() *Registry {
	return &Registry{
		Results: map[string]ResultSinkFactory{
			"sqlite": func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				// A run that recomputes its results from the start of its
				// input empties a table tidemark created (in its first
				// commit) rather than being held back by the versions a
				// previous run left; a run resuming from a checkpoint keeps
				// the rows, and needs the table to exist still.
				return sqlite.NewWithOptions(ctx, s.Path, s.Table, d, sqlite.Options{
					Fresh: !env.Restoring, Resume: env.Restoring, ReplaceLayout: s.Replace,
					Lineage: LineageColumn, NoLineage: s.Lineage != nil && !*s.Lineage, Serve: isLive(s.Table),
					ExactlyOnce: env.exactlyOnce(s), Pipeline: env.Pipeline, Sink: s.Table})
			},
			"postgres": func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				if s.Mode == "ledger" {
					// The runner opens ledgers itself: they take events, not rows.
					return nil, errors.New("mode ledger is opened by the runner, not the registry")
				}
				return postgres.New(ctx, s.DSN, s.Table, d, postgres.Options{
					Pipeline: env.Pipeline, Sink: env.marker(s.Table),
					Fresh: env.fresh(), Resume: env.Restoring, ReplaceLayout: s.Replace,
					Lineage: LineageColumn, NoLineage: s.Lineage != nil && !*s.Lineage, Serve: isLive(s.Table),
					AtLeastOnce: !env.exactlyOnce(s), Retry: pgRetry(s), Group: env.Group})
			},
			"kafka": func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				o, err := kafkaOptions(s, env)
				if err != nil {
					return nil, err
				}
				return kafka.NewResults(ctx, d, o)
			},
			"jsonl": func(_ context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				return jsonl.NewResultsWithOptions(s.Path, d, jsonl.Options{ExactlyOnce: env.exactlyOnce(s), Append: env.Restoring})
			},
			"stdout": func(_ context.Context, _ spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				return stdout.New(env.Stdout, d), nil
			},
			"parquet": func(_ context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				return parquet.NewResults(d, parquetOptions(s, env))
			},
			"iceberg": func(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
				return iceberg.NewResults(ctx, d, icebergOptions(s, env))
			},
		},
		Records: map[string]RecordSinkFactory{
			"sqlite": func(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error) {
				return sqlite.NewRecords(ctx, s.Path, s.Table, sqlite.RecordsOptions{
					Pipeline: env.Pipeline, Sink: s.Table, Fresh: !env.Restoring, Resume: env.Restoring,
					ReplaceLayout: s.Replace, ExactlyOnce: env.exactlyOnce(s)})
			},
			"postgres": func(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error) {
				return postgres.NewRecords(ctx, s.DSN, s.Table, postgres.RecordsOptions{
					Pipeline: env.Pipeline, Sink: env.marker(s.Table), Fresh: env.fresh(), Resume: env.Restoring,
					ReplaceLayout: s.Replace, AtLeastOnce: !env.exactlyOnce(s), Retry: pgRetry(s), Group: env.Group})
			},
			"kafka": func(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error) {
				o, err := kafkaOptions(s, env)
				if err != nil {
					return nil, err
				}
				return kafka.NewRecords(ctx, o)
			},
			"jsonl": func(_ context.Context, s spec.Sink, env *Env) (sink.Records, error) {
				return jsonl.NewRecordsWithOptions(s.Path, jsonl.Options{ExactlyOnce: env.exactlyOnce(s), Append: env.Restoring})
			},
			"stdout": func(_ context.Context, _ spec.Sink, env *Env) (sink.Records, error) {
				return newLineRecords(env.Stdout), nil
			},
			"parquet": func(_ context.Context, s spec.Sink, env *Env) (sink.Records, error) {
				return parquet.NewRecords(parquetOptions(s, env))
			},
		},
	}
}

// parquetOptions are a parquet sink's options.
func parquetOptions(s spec.Sink, env *Env) parquet.Options {
	return parquet.Options{
		Dir: s.Path, PartitionBy: s.PartitionBy, Compression: s.Compression, RowGroupRows: s.RowGroupRows,
		RollBytes: s.RollBytes, DecimalScale: s.DecimalScale, ExactlyOnce: env.exactlyOnce(s),
		PublishOnFlush: env.Checkpoints, Restoring: env.Restoring, Pipeline: env.Pipeline, Sink: s.Path, Fault: env.Fault,
		LockHeld: env.holds(parquet.LockFile(s.Path)),
	}
}

// icebergOptions are an iceberg sink's options: table "ns.name" (default
// namespace "default"; the name defaults to the stage's, spec.Defaults).
func icebergOptions(s spec.Sink, env *Env) iceberg.Options {
	ns, table, ok := strings.Cut(s.Table, ".")
	if !ok {
		ns, table = "", s.Table
	}
	o := iceberg.Options{
		Warehouse: s.Path, Namespace: ns, Table: table, PartitionBy: s.PartitionBy, Compression: s.Compression,
		RowGroupRows: s.RowGroupRows, RollBytes: s.RollBytes, DecimalScale: s.DecimalScale, ExactlyOnce: env.exactlyOnce(s),
		PublishOnFlush: env.Checkpoints, Restoring: env.Restoring, Pipeline: env.Pipeline, Sink: s.Table, Fault: env.Fault,
		LockHeld: env.holds(iceberg.LockFile(iceberg.TableDir(s.Path, ns, table))),
	}
	if c := s.Catalog; c != nil {
		o.Catalog, o.CatalogURI, o.CatalogName, o.CatalogToken = c.Type, c.URI, c.Name, c.Token
	}
	return o
}

// isLive reports whether table is the live version of the versioning
// convention (revenue__live): the sink that creates it also creates the
// serving view (revenue) when nothing has that name (docs/reprocessing.md).
func isLive(table string) bool {
	_, v, ok := results.SplitVersion(table)
	return ok && v == results.LiveVersion
}

// pgRetry is a postgres sink's retry bound (spec key retries).
func pgRetry(s spec.Sink) postgres.Retry {
	if s.Retries == nil {
		return postgres.Retry{}
	}
	return postgres.RetryCount(*s.Retries)
}

// sinkNotes returns what the run's sinks did besides writing output (a
// table emptied, replaced, or kept: sink.Noter), each prefixed by the
// sink's place in the pipeline.
func (rt *runtime) sinkNotes() []string {
	var out []string
	add := func(where string, s any) {
		if n, ok := s.(sink.Noter); ok {
			for _, note := range n.Notes() {
				out = append(out, where+": "+note)
			}
		}
	}
	add("quarantine.sink", rt.quarantine)
	add("conflicts.sink", rt.conflictS)
	for _, st := range rt.stages {
		for i, s := range st.sinks {
			add(fmt.Sprintf("%s: sinks[%d]", st.p.Name, i), s)
		}
		add(st.p.Name+": late.sink", st.late)
	}
	return out
}

// kafkaOptions are a kafka sink's options. The topic names the sink
// (spec validation keeps it unique in the pipeline).
func kafkaOptions(s spec.Sink, env *Env) (kafka.Options, error) {
	enc, err := kafkaEncoding(s)
	if err != nil {
		return kafka.Options{}, err
	}
	return kafka.Options{
		Brokers:              s.Brokers,
		Topic:                s.Topic,
		AtLeastOnce:          !env.exactlyOnce(s),
		Pipeline:             env.Pipeline,
		Sink:                 s.Topic,
		TransactionalID:      s.TransactionalID,
		MarkerTopic:          s.MarkerTopic,
		TransactionTimeoutMs: s.TransactionTimeout.Ms(),
		Upsert:               s.Upsert,
		ClientID:             s.ClientID,
		Encoding:             enc,
	}, nil
}

// kafkaEncoding is a kafka sink's format (format, schema_registry,
// decimal_scale).
func kafkaEncoding(s spec.Sink) (kafka.Encoding, error) {
	enc := kafka.Encoding{Format: s.Format, DecimalScale: s.DecimalScale}
	if s.Format == kafka.FormatAvro || s.Format == kafka.FormatProtobuf {
		reg, err := schemaRegistry(s.SchemaRegistry)
		if err != nil {
			return enc, err
		}
		enc.Registry = reg
	}
	return enc, nil
}

// KafkaRowEncoder is the encoder of a kafka result sink's records in a
// group run, which produces them itself.
func KafkaRowEncoder(ctx context.Context, s spec.Sink, d changelog.Desc) (*kafka.RowEncoder, error) {
	enc, err := kafkaEncoding(s)
	if err != nil {
		return nil, err
	}
	return kafka.NewRowEncoderWith(ctx, d, kafka.RowOptions{Topic: s.Topic, Upsert: s.Upsert, Encoding: enc})
}

// KafkaRecordEncoder is KafkaRowEncoder for a kafka side-output sink.
func KafkaRecordEncoder(s spec.Sink) (*kafka.RecordEncoder, error) {
	enc, err := kafkaEncoding(s)
	if err != nil {
		return nil, err
	}
	return kafka.NewRecordEncoder(s.Topic, enc)
}

func (r *Registry) OpenResults(ctx context.Context, s spec.Sink, d changelog.Desc, env *Env) (sink.Results, error) {
	f, ok := r.Results[s.Type]
	if !ok {
		return nil, fmt.Errorf("no result sink of type %q (known: %s)", s.Type, names(r.Results))
	}
	return f(ctx, s, d, env)
}

func (r *Registry) OpenRecords(ctx context.Context, s spec.Sink, env *Env) (sink.Records, error) {
	f, ok := r.Records[s.Type]
	if !ok {
		return nil, fmt.Errorf("no side-output sink of type %q (known: %s)", s.Type, names(r.Records))
	}
	return f(ctx, s, env)
}

// names lists a registry map's type names, sorted.
func names[V any](m map[string]V) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// lineRecords writes side-output records as lines to a writer.
type lineRecords struct{ w io.Writer }

func newLineRecords(w io.Writer) *lineRecords { return &lineRecords{w: w} }

func (l *lineRecords) WriteRecord(_ context.Context, obj []byte) error {
	if _, err := l.w.Write(obj); err != nil {
		return err
	}
	_, err := l.w.Write([]byte{'\n'})
	return err
}
func (l *lineRecords) Flush(context.Context) error { return nil }
func (l *lineRecords) Close(context.Context) error { return nil }
