package spec

import "time"

// Pipeline is a whole pipeline: one source and one or more stages.
//
// The top-level stage keys (filter, fields, key, window, allowed_lateness,
// aggregates, emit, late, sinks) describe a single stage named after the
// pipeline; `stages:` lists several instead (a stage may read another
// stage's changelog). Use one form or the other.
type Pipeline struct {
	// Name identifies the pipeline in outputs, commit markers and metrics.
	// YAML `name`. Required; letters, digits, '_' and '-'.
	Name string `yaml:"name"`
	// Source is where records come from. YAML `source`. Required.
	Source Source `yaml:"source"`
	// EventTime says which field is event time and how far the watermark
	// trails it. YAML `event_time`. Required.
	EventTime EventTime `yaml:"event_time"`
	// Quarantine is where records that cannot be decoded or that break a
	// rule go. YAML `quarantine`. Optional: without a sink they are counted.
	Quarantine Quarantine `yaml:"quarantine"`
	// Contract is the path of a data contract (YAML) whose field types,
	// event id, event time, ordering and quality rules the pipeline
	// follows; records that break a rule are quarantined with its name.
	// YAML `contract`. Optional. See docs/contracts.md.
	Contract string `yaml:"contract"`
	// Dedup drops redelivered events by a stable event id. YAML `dedup`.
	// Optional.
	Dedup *Dedup `yaml:"dedup"`
	// OrderBy keeps only the newest version of each entity (state events)
	// and turns it into an upsert stream for the stages. YAML `order_by`.
	// Optional.
	OrderBy *OrderBy `yaml:"order_by"`
	// Conflicts is where deliveries that reuse an event id with a
	// different payload go. YAML `conflicts`. Optional: without a sink
	// they are counted.
	Conflicts Quarantine `yaml:"conflicts"`

	// Reference joins reference data (a CSV or JSONL lookup file) to every
	// source record by key, e.g. store → region; its content hash is the
	// reference version every result row records (lineage). YAML
	// `reference`. Optional.
	Reference *Reference `yaml:"reference"`

	// Filter keeps the records for which this expr-lang expression is true;
	// it may use source fields only. YAML `filter`. Default: keep all.
	Filter string `yaml:"filter"`
	// Fields are derived fields, computed in order after the filter; each
	// may use source fields and the derived fields before it. YAML `fields`.
	Fields NamedExprs `yaml:"fields"`
	// Key lists the group-key fields. YAML `key`. Default: none (one group).
	Key []string `yaml:"key"`
	// Window is the window assigner. YAML `window`. Required.
	Window Window `yaml:"window"`
	// AllowedLateness is how long after a window fires it still accepts
	// late events and re-fires. YAML `allowed_lateness`. Default 0.
	AllowedLateness Duration `yaml:"allowed_lateness"`
	// Aggregates maps output column names to aggregate calls such as
	// count(), sum(amount), avg(x), min(x), max(x), count_distinct(x).
	// YAML `aggregates`. Required.
	Aggregates NamedExprs `yaml:"aggregates"`
	// Emit selects when and how results are emitted. YAML `emit`.
	Emit Emit `yaml:"emit"`
	// Late selects what happens to events beyond the allowed lateness.
	// YAML `late`.
	Late Late `yaml:"late"`
	// Select makes the stage a stateless select (no window, key or
	// aggregates): every record the filter keeps is emitted at once as an
	// insert row of these fields (input or derived), with its event time.
	// An item "field as name" writes the field under another column name
	// ("bid.price as price"; SelectItem). YAML `select`. Default: none (a
	// windowed aggregation).
	Select []string `yaml:"select"`
	// TopN makes the stage a Top-N instead of an aggregation (TopN):
	// per window and key, the first n rows in an order, each emitted as
	// a row with its rank. YAML `top_n`. Default: none.
	TopN *TopN `yaml:"top_n"`
	// Sinks receive the result rows. YAML `sinks`. Optional (a run with no
	// sink still prints its summary).
	Sinks []Sink `yaml:"sinks"`
	// Contributions records, for `tidemark explain`, every source event
	// the stage accepts into a window with its deltas (each aggregate's
	// argument). YAML `contributions`. Optional.
	Contributions *Contributions `yaml:"contributions"`

	// Stages replaces the top-level stage keys with a list of stages.
	// YAML `stages`.
	Stages []Stage `yaml:"stages"`
	// Inputs are named inputs beside Source (other files, Kafka topics or
	// Nexmark streams), each with its own event time and watermark, read by
	// join stages (stages[].join; docs/semantics.md, "Joins"). YAML
	// `inputs`. Default: none (the source is the only input).
	Inputs []Input `yaml:"inputs"`

	// Parallelism is the number of tasks the pipeline runs as: task i of N
	// owns the contiguous range of key groups [ceil(i·K/N), ceil((i+1)·K/N))
	// (K = KeyGroups; Flink's KeyGroupRangeAssignment) and runs on its own
	// goroutine. YAML `parallelism`. Default 0: the number of CPUs the
	// process may use (runtime.GOMAXPROCS(0)), at most KeyGroups; `tidemark
	// run --parallelism N` overrides it. It may change between a checkpoint
	// and its restore (docs/parallelism.md).
	Parallelism int `yaml:"parallelism"`
	// KeyGroups is the number of key groups every keyed state (windows,
	// sessions, dedup ids, order_by versions) hashes into: the most tasks
	// the pipeline can ever run as (Flink's max parallelism). Fixed for a
	// pipeline's state: a checkpoint taken with another value is refused.
	// YAML `key_groups`. Default 0: 128 (DefaultKeyGroups); 1 to 32768.
	// EffectiveKeyGroups resolves the default.
	KeyGroups int `yaml:"key_groups"`
	// ExchangeMemory bounds the memory between the tasks of a run of
	// several: the packets of items a node of one task has handed to the
	// next node of the tasks, not yet taken (docs/parallelism.md, "The
	// exchange"), in bytes, written with a unit ("64MiB"). A firing larger
	// than it streams through it: its senders wait for their receivers.
	// YAML `exchange_memory`. Default 0: 8MiB (DefaultExchangeMemory); at
	// least 64KiB (MinExchangeMemory). Not used at one task.
	ExchangeMemory Bytes `yaml:"exchange_memory" json:",omitempty"`

	// Checkpoint turns on periodic checkpoints, restore on start and
	// exactly-once sinks. YAML `checkpoint`. Optional: without it a run
	// recomputes from the start of its input and replaces its outputs.
	Checkpoint *Checkpoint `yaml:"checkpoint"`
	// State chooses where the keyed state lives and how much memory it
	// may take (docs/state.md). YAML `state`. Optional: every key has a
	// default.
	State State `yaml:"state"`
	// SLO states service-level objectives, evaluated during the run,
	// exported as metrics and shown on the status page; `run
	// --fail-on-slo` fails a run that missed one (docs/slo.md). YAML
	// `slo`. Optional.
	SLO *SLO `yaml:"slo"`
}

// Checkpoint configures checkpoints (docs/checkpoints.md).
type Checkpoint struct {
	// Dir holds the checkpoint files, relative to the working directory;
	// created if absent. YAML `dir`. Required unless Store is given, and
	// refused with it: a pipeline's checkpoints live in one place.
	Dir string `yaml:"dir"`
	// Store is where a group of instances (a Kafka consumer group) keeps
	// its tasks' checkpoints when not in Dir: a PostgreSQL URL,
	// "postgres://user@host:5432/db?sslmode=require" (or postgresql://),
	// holding them in the table tidemark_checkpoints of the connection's
	// first schema (search_path; checkpoint.PGTaskStore). YAML `store`.
	// Default "" (none): the checkpoints are files in Dir, a directory
	// that every instance mounts when there are several. Only with
	// source.assignment group; other schemes are refused. Keep a password
	// out of the file: write it as ${VAR}.
	Store string `yaml:"store"`
	// Interval is the wall-clock time between checkpoints. YAML
	// `interval`. Default 10s; at least 1ms. An explicit zero in YAML
	// (`interval: 0s`) is refused, not taken for the default; in Go the
	// zero value means the default.
	Interval Duration `yaml:"interval,omitempty" zero:"must be at least 1ms|10s"`
	// Retain is how many complete checkpoints are kept (the newest);
	// older ones are deleted. YAML `retain`. Default 3; at least 1. An
	// explicit `retain: 0` in YAML is refused; in Go 0 means the default.
	Retain int `yaml:"retain,omitempty" zero:"must be at least 1|3"`
}

// State configures the keyed-state backend (docs/state.md).
type State struct {
	// Backend is where the tasks keep their keyed state: "memory" (the Go
	// heap; fastest while it fits) or "disk" (an embedded LSM store per
	// task on local disk, under a hot tier in memory: state larger than
	// memory). YAML `backend`. Default "memory"; `tidemark run
	// --state-backend` overrides it. A checkpoint restores only under the
	// backend that wrote it (a change is refused, naming it).
	Backend string `yaml:"backend"`
	// Memory is the disk backend's memory budget in bytes, written with a
	// unit ("512MiB", "2GiB"): pebble's block cache, its memtables and the
	// operators' hot tiers together (docs/state.md, "Memory"). YAML
	// `memory`. Default 1GiB; at least 16MiB; `tidemark run --memory`
	// overrides it. Only with backend disk.
	Memory Bytes `yaml:"memory" json:",omitempty"`
	// Dir is the directory of the disk backend's stores (one
	// subdirectory per task), on a local disk. YAML `dir`. Default: DIR/state
	// under checkpoint.dir, or without checkpoints a temporary directory
	// removed when the run ends. Only with backend disk.
	Dir string `yaml:"dir" json:",omitempty"`
}

// DefaultStateMemory is state.memory's default, 1 GiB.
const DefaultStateMemory = Bytes(1 << 30)

// MinStateMemory is the least state.memory, 16 MiB.
const MinStateMemory = Bytes(16 << 20)

// Stage is one windowed aggregation: filter → derived fields → key → window
// → aggregates → emit, reading the source or another stage's changelog.
type Stage struct {
	// Name of the stage. YAML `name`. Required in `stages:`.
	Name string `yaml:"name"`
	// Input is "source" or the name of an earlier stage whose changelog this
	// stage reads. YAML `input`. Default: the previous stage, or the source
	// for the first stage.
	Input string `yaml:"input"`
	// EventTime overrides the event-time field for a stage that reads
	// another stage (e.g. window_start). YAML `event_time`. Optional.
	// Default: the upstream window_end − 1 ms (Flink's
	// window.maxTimestamp()); with it, the field's value as is. Only its
	// field is used (the watermark is the pipeline's); format has no
	// default here and must be given (rfc3339); the other keys are
	// validated but have no effect.
	EventTime *EventTime `yaml:"event_time"`

	// The stage keys below are those of the same name at the top level of
	// Pipeline, with the same meaning and defaults (table names default to
	// this stage's name).
	Filter          string         `yaml:"filter"`
	Fields          NamedExprs     `yaml:"fields"`
	Key             []string       `yaml:"key"`
	Window          Window         `yaml:"window"`
	AllowedLateness Duration       `yaml:"allowed_lateness"`
	Aggregates      NamedExprs     `yaml:"aggregates"`
	Select          []string       `yaml:"select"`
	TopN            *TopN          `yaml:"top_n"`
	Contributions   *Contributions `yaml:"contributions"`
	Emit            Emit           `yaml:"emit"`
	Late            Late           `yaml:"late"`
	Sinks           []Sink         `yaml:"sinks"`
	// Join makes the stage a join of two inputs instead of a windowed
	// aggregation: its rows are the joined rows (docs/semantics.md,
	// "Joins"). With it the stage has no filter, fields, key, window,
	// aggregates or select; allowed_lateness, emit, late and sinks apply
	// to the join. YAML `join`. Default: none.
	Join *Join `yaml:"join"`
	// Union makes the stage the union of earlier stages' rows (SQL's
	// UNION ALL): every row of each named stage, as that stage emits it
	// (op, window, key, values, version, is_final), is also a row of this
	// stage, written to this stage's sinks; the rows of the stages come
	// in the order they are produced (by input step). The stages need
	// the same output columns — keys and values of the same names and
	// types in the same order — and the same emit mode and kind (all
	// select stages, or all aggregations of the same window kind); two
	// to 64 stages, each at most once. A union stage has no other stage
	// key but name and sinks, and no stage or join reads it; it does not
	// run with source.assignment group. YAML `union`. Default: none.
	Union []string `yaml:"union"`
}

// TopN is a Top-N stage (Stage.TopN): Flink's Rank operator over an
// append-only input (AppendOnlyTopNFunction; SQL's ROW_NUMBER() OVER
// (PARTITION BY key ORDER BY order) <= n). For each window and key (the
// stage's key, the partition) it keeps the n first rows in Order — ties
// to the row that came first — with their Columns: one state per key
// (aggregate top_n) shared by the columns. When the window closes (the
// global window: when the input ends) it emits each kept row as a final
// insert keyed by the stage's key and Rank (1 to n), its values the
// columns; a key with fewer than n rows emits those it has. The stage
// has no aggregates or select; its emit mode is final (the ranks as the
// whole window sorts them), or, over the global window, update or
// retract: Flink's updating result, each record that enters the n first
// emitting at once the ranks it changed (an insert for a rank newly
// filled, an update_after — in mode retract after an update_before of the
// rank's previous row — for a rank whose row changed; versions 1, 2, 3 …
// per window, key and rank), and the close every rank's row again with
// is_final. No early firings; its input must not retract.
type TopN struct {
	// N is the number of rows kept per window and key, 1 to 1000. YAML
	// `n`. Required.
	N int `yaml:"n"`
	// Order lists the expressions the rows sort by, the first deciding
	// first, each ascending or, written desc(x), descending; a null sorts
	// below every value. YAML `order`. Required.
	Order []string `yaml:"order"`
	// Columns lists the values kept of each row: input or derived fields,
	// "field as name" writing one under another column name
	// (SelectItem). YAML `columns`. Default: none (the rows are the key
	// and the rank).
	Columns []string `yaml:"columns"`
	// Rank names the rank column, the last key column of the rows. YAML
	// `rank`. Default "rn".
	Rank string `yaml:"rank"`
}

// Source configures the record source.
type Source struct {
	// Type of source: "file", "kafka" (docs/connectors/kafka.md),
	// "postgres_cdc" (a PostgreSQL table's changes through logical
	// replication, docs/connectors/postgres-cdc.md) or "nexmark" (a
	// generator, docs/nexmark.md). YAML `type`. Required.
	Type string `yaml:"type" enum:"source type|file,kafka,postgres_cdc,nexmark"`
	// About says what the data is and where it comes from; it is printed
	// when the source's files are missing. YAML `about`. Optional.
	About string `yaml:"about"`
	// Path is a file, a directory (every regular file in it, sorted by
	// name) or a glob ("data/*.csv"), relative to the working directory.
	// "${VAR}" and "${VAR:-default}" are expanded from the environment.
	// YAML `path`. Required for type file.
	Path string `yaml:"path"`
	// Format is "jsonl", "csv" or "avro" (Avro object container files,
	// docs/connectors/file.md) for a file source; for a kafka source
	// the format of record values: "jsonl" (JSON objects; "json" is the
	// same), "avro" or "protobuf" (the Confluent wire format, schemas
	// from SchemaRegistry; docs/connectors/kafka.md). YAML `format`.
	// Default: from the file extension (.jsonl, .json, .ndjson → jsonl;
	// .csv → csv; .avro → avro); jsonl for kafka.
	Format string `yaml:"format"`
	// Schema declares field types (bool, int, decimal, string, timestamp).
	// A field the pipeline uses that is not declared is a string. JSON
	// values are checked against the declared type; CSV text is parsed.
	// Nested JSON fields are named with dots ("properties.time").
	// YAML `schema`. Default: none.
	Schema FieldTypes `yaml:"schema"`
	// SchemaComplete says that Schema lists every field of the records
	// (the event-time field included), not only those whose type matters:
	// a field the pipeline uses that Schema does not declare (in a key, an
	// aggregate, the filter, a derived field, dedup, order_by, select, the
	// reference key, the partition or arrival-time field) is then a
	// configuration error naming it, the key that uses it and the declared
	// names close to it, instead of a field that is null in every record.
	// A contract's fields and, for CSV without a header, csv.columns list
	// the fields too, with or without this key (docs/pipeline.md, "Field
	// names"). YAML `schema_complete`. Default false: Schema may declare
	// only some fields; an undeclared one is read as a string.
	SchemaComplete bool `yaml:"schema_complete"`
	// PartitionField names a field whose value is the record's source
	// partition (for files that simulate a partitioned log). Each partition
	// keeps its own watermark. YAML `partition_field`. Default: the whole
	// source is one partition.
	PartitionField string `yaml:"partition_field"`
	// ArrivalTimeField names a timestamp field that records when the event
	// arrived; it drives the processing-time clock, so a replay of a capture
	// is deterministic. YAML `arrival_time_field`. Default: the wall clock.
	ArrivalTimeField string `yaml:"arrival_time_field"`
	// ProcessingTimeField names a timestamp field the runner fills with
	// each record's processing time — its arrival time when the source
	// records one (the Nexmark generator's delivery time, a replay,
	// arrival_time_field), else the clock when the record is read — for a
	// stage that windows on processing time (its event_time.field; SQL's
	// PROCTIME()). The field is not in the records, and the name must be
	// no field of theirs. YAML `processing_time_field`. Default: none.
	ProcessingTimeField string `yaml:"processing_time_field"`
	// Ordinal adds an int field numbering records within consecutive runs
	// of the same value of another field (e.g. the line within an invoice).
	// YAML `ordinal`. Optional.
	Ordinal *Ordinal `yaml:"ordinal"`
	// CSV options. YAML `csv`.
	CSV CSVOptions `yaml:"csv"`
	// Replay delivers the file's records in a seeded, bounded, shuffled
	// arrival order with recorded arrival times, simulating a real log.
	// YAML `replay`. Optional.
	Replay *Replay `yaml:"replay"`

	// Kafka (type kafka; docs/connectors/kafka.md).

	// Brokers are the seed brokers, "host:port". YAML `brokers`. Required
	// for kafka.
	Brokers HostPorts `yaml:"brokers"`
	// Topics are read, every partition of each. YAML `topics`. Required
	// for kafka.
	Topics []string `yaml:"topics"`
	// Group receives the offsets of each completed checkpoint, for lag
	// monitoring only (never joined, never read). YAML `group`. Optional.
	Group string `yaml:"group"`
	// Start is where partitions are read from without a checkpoint:
	// "earliest", "latest" or "timestamp". YAML `start`. Default earliest.
	Start string `yaml:"start"`
	// StartTimestamp (RFC 3339 with an offset) is the first record
	// timestamp read with start timestamp. YAML `start_timestamp`.
	StartTimestamp string `yaml:"start_timestamp"`
	// Isolation is "read_committed" or "read_uncommitted". YAML
	// `isolation`. Default read_committed.
	Isolation string `yaml:"isolation"`
	// PollTimeout is the longest wait of one read for records. YAML
	// `poll_timeout`. Default 500ms; at least 1ms (an explicit 0s in YAML
	// is refused; in Go 0 means the default).
	PollTimeout Duration `yaml:"poll_timeout,omitempty" zero:"must be at least 1ms|500ms"`
	// DiscoveryInterval is how often new partitions are looked for and
	// end offsets (lag) refreshed. YAML `discovery_interval`. Default
	// 10s; at least 1ms (an explicit 0s in YAML is refused; in Go 0 means
	// the default).
	DiscoveryInterval Duration `yaml:"discovery_interval,omitempty" zero:"must be at least 1ms|10s"`
	// StopAtEnd makes a kafka source bounded: it stops at the end offsets
	// of its partitions when the run started (the last stable offsets
	// under read_committed), and the run ends as at the end of a file.
	// YAML `stop_at_end`. Default false (read until stopped).
	StopAtEnd bool `yaml:"stop_at_end"`
	// ClientID is the Kafka client.id. YAML `client_id`. Default
	// "tidemark".
	ClientID string `yaml:"client_id"`
	// Assignment says how the topics' partitions are shared out: "direct"
	// (this process reads every partition itself) or "group" (the process
	// joins consumer group `group` with the other instances started with
	// the same pipeline, and runs the tasks of the partitions the group
	// gives it: docs/scale-out.md). YAML `assignment`. Default direct.
	Assignment string `yaml:"assignment" enum:"source.assignment|direct,group"`
	// RepartitionPartitions (assignment group) is the number of partitions
	// of the pipeline's repartition topic "<name>-repartition", which
	// carries each record to the instance owning its key group: the most
	// instances that hold keyed state. YAML `repartition_partitions`.
	// Default 0: the number of partitions of the input topics, at most
	// key_groups. Fixed once the topic exists (it is created if absent).
	RepartitionPartitions int `yaml:"repartition_partitions"`
	// SessionTimeout (assignment group) is how long the group waits for a
	// silent instance before its partitions move to the others
	// (session.timeout.ms). YAML `session_timeout`. Default 10s.
	SessionTimeout Duration `yaml:"session_timeout,omitempty" zero:"must be at least 1ms|10s"`
	// TransactionTimeout (assignment group) is the transaction.timeout.ms
	// of the instance's transactions: longer than checkpoint.interval plus
	// the time a checkpoint takes. The partitions of a killed instance
	// wait up to this long for the broker to abort its open transaction.
	// YAML `transaction_timeout`. Default 30s.
	TransactionTimeout Duration `yaml:"transaction_timeout,omitempty" zero:"must be at least 1ms|30s"`
	// SchemaRegistry is the Confluent-compatible Schema Registry that
	// holds the writers' schemas of format avro or protobuf. YAML
	// `schema_registry`. Required with those formats for kafka; for a
	// file source with format avro, where each file carries its schema,
	// it is needed only to apply a contract's schema_versions (each
	// file's schema is looked up in the contract's subject).
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`
	// Message is the Protobuf message type every record must be, a full
	// name ("shop.v1.Order"); a record of another type is quarantined.
	// YAML `message`. Default: any type (fields read by name).
	Message string `yaml:"message"`

	// PostgreSQL change data capture (type postgres_cdc;
	// docs/connectors/postgres-cdc.md).

	// DSN is the connection string (a URL or key=value pairs; "${VAR}"
	// expanded) of a role with the REPLICATION attribute and SELECT on
	// the table. YAML `dsn`. Required for postgres_cdc.
	DSN string `yaml:"dsn"`
	// Table is the table whose rows and changes are read, "schema.table"
	// or "table" (schema public). YAML `table`. Required for postgres_cdc.
	Table string `yaml:"table"`
	// Publication names the publication holding Table (CREATE PUBLICATION
	// … FOR TABLE …), which tidemark reads and never creates or alters.
	// YAML `publication`. Required for postgres_cdc.
	Publication string `yaml:"publication"`
	// Slot names the logical replication slot. YAML `slot`. Default
	// "tidemark_<name>" (the pipeline's name lowercased, other characters
	// than a-z, 0-9 and _ as _), created by tidemark with the initial
	// snapshot; without a checkpoint section the slot is temporary (it
	// goes with the run's connection).
	Slot string `yaml:"slot"`
	// Snapshot is "initial" (read the table's rows first, in the snapshot
	// the slot exports when tidemark creates it, then the changes after
	// it) or "never" (only the changes after the slot's confirmed
	// position). YAML `snapshot`. Default initial.
	Snapshot string `yaml:"snapshot" enum:"source.snapshot|initial,never"`
	// KeyColumns are the columns identifying a row. YAML `key_columns`.
	// Default: the table's primary key.
	KeyColumns []string `yaml:"key_columns"`
	// Timezone is the IANA zone of timestamp (without time zone) and date
	// columns read into timestamp fields. YAML `timezone`. Default: none
	// (such columns are refused for timestamp fields).
	Timezone string `yaml:"timezone"`
	// StatusInterval is how often a standby status update tells the
	// server what tidemark received and what its checkpoints confirm.
	// YAML `status_interval`. Default 10s; at least 1ms (an explicit 0s
	// in YAML is refused; in Go 0 means the default).
	StatusInterval Duration `yaml:"status_interval,omitempty" zero:"must be at least 1ms|10s"`
	// HeartbeatInterval, when set, makes the source write a heartbeat
	// that often (pg_logical_emit_message, or an upsert into
	// HeartbeatTable) so that the slot moves on even when its database
	// writes nothing. YAML `heartbeat_interval`. Default 0: none.
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	// HeartbeatTable is a table (slot text primary key, at timestamptz)
	// that receives the heartbeats instead of pg_logical_emit_message.
	// YAML `heartbeat_table`. Optional; needs heartbeat_interval.
	HeartbeatTable string `yaml:"heartbeat_table"`

	// Nexmark (type nexmark; docs/nexmark.md).

	// Events is the number of events generated. YAML `events`. Required
	// for nexmark.
	Events int64 `yaml:"events"`
	// Rate is events per second of event time (Nexmark's first event
	// rate); it does not limit how fast events are generated. YAML
	// `rate`. Default 10,000,000 (the rate of Flink's published Nexmark
	// runs; docs/nexmark.md).
	Rate int64 `yaml:"rate"`
	// Seed chooses the event stream; 0 gives the reference generator's
	// events. YAML `seed`. Default 0.
	Seed uint64 `yaml:"seed"`
	// BaseTime (RFC 3339 with an offset) is the event time of the first
	// event. YAML `base_time`. Default: the generator's.
	BaseTime string `yaml:"base_time"`
	// Delay makes a fraction of the events arrive late. YAML `delay`.
	// Default: the generator's (docs/nexmark.md).
	Delay *NexmarkDelay `yaml:"delay"`
}

// SLO lists service-level objectives; an unset one is not evaluated.
type SLO struct {
	// EventTimeLagP95 bounds the 95th percentile of the event-time lag
	// (processing time − pipeline watermark) over the run's snapshots
	// (one a second). YAML `event_time_lag_p95`.
	EventTimeLagP95 Duration `yaml:"event_time_lag_p95"`
	// LateRatio bounds the share of valid records that arrived after
	// their window fired (late accepted + too late), "0.1%" or 0.001.
	// YAML `late_ratio`.
	LateRatio *Ratio `yaml:"late_ratio"`
	// CheckpointSuccess is the least share of checkpoints that succeed,
	// "99.9%" or 0.999. YAML `checkpoint_success`.
	CheckpointSuccess *Ratio `yaml:"checkpoint_success"`
	// SinkCommitP95 bounds the 95th percentile of sink commit durations.
	// YAML `sink_commit_p95`.
	SinkCommitP95 Duration `yaml:"sink_commit_p95"`
}

// Reference is a lookup file joined to the source records by key.
type Reference struct {
	// Path is the file: CSV with a header line (.csv) or JSON lines
	// (.jsonl, .json, .ndjson). "${VAR}" is expanded. YAML `path`.
	// Required unless topic is set.
	Path string `yaml:"path"`
	// Topic is a Kafka topic holding the reference data as a compacted
	// changelog instead of a file: each record's value a JSON object with
	// the key, the fields (and valid_from), the newest record of each
	// record key its current value, a record with a null value (a
	// tombstone) deleting it. It is read to its end (the last stable
	// offsets) when the run starts. YAML `topic`. Default: none.
	Topic string `yaml:"topic"`
	// Brokers are the seed brokers of Topic, "host:port". YAML
	// `brokers`. Required with topic.
	Brokers HostPorts `yaml:"brokers"`
	// Key is the source field whose value is looked up, and the file's
	// column of the same name. YAML `key`. Required.
	Key string `yaml:"key"`
	// Fields are the file's columns added to each record, with their
	// types (bool, int, decimal, string, timestamp); a record whose key
	// the file lacks gets nulls. YAML `fields`. Required.
	Fields FieldTypes `yaml:"fields"`
	// ValidFrom names the file's version-time column: each line is then
	// one version of its key's fields, valid from that instant (RFC 3339
	// with an offset) until the key's next version, and a record takes
	// the version valid at its event time (the newest whose valid_from is
	// at or before it; nulls before the key's first version), as a
	// temporal join would (FOR SYSTEM_TIME AS OF the event time). A key
	// may then be listed once per valid_from. The column is not added to
	// the records. YAML `valid_from`. Default: none (one version per key:
	// the file as it is).
	ValidFrom string `yaml:"valid_from"`
}

// Contributions is where a stage records the events behind its rows.
type Contributions struct {
	// Sink receives one record per accepted event: type jsonl (a file;
	// exactly once with checkpoints). YAML `sink`. Required.
	Sink *Sink `yaml:"sink"`
}

// NexmarkDelay configures the late delivery of generated events.
type NexmarkDelay struct {
	// Fraction of the events delayed, 0 to 1. YAML `fraction`.
	Fraction float64 `yaml:"fraction"`
	// Max is the longest delay. YAML `max`.
	Max Duration `yaml:"max"`
}

// Ordinal configures a derived record-number field.
type Ordinal struct {
	// Field is the name of the new int field (1-based). YAML `field`.
	// When it is also event_time.field, the field is a timestamp: record
	// n's event time is n ms after the epoch (the version times of a
	// lookup table's lines, which have no time of their own: SQL's
	// processing-time lookup joins, docs/sql.md).
	Field string `yaml:"field"`
	// Per is the field whose consecutive equal values form a group; the
	// number restarts at 1 when it changes. YAML `per`. Default: none (the
	// number counts records of the file).
	Per string `yaml:"per"`
}

// CSVOptions configures CSV decoding.
type CSVOptions struct {
	// Delimiter is the field separator, one character (not '"', CR or LF,
	// which the source rejects when it opens). YAML `delimiter`.
	// Default ",".
	Delimiter string `yaml:"delimiter"`
	// Header: the first line of each file names the columns. YAML `header`.
	// Default true. When false, Columns must be given.
	Header *bool `yaml:"header"`
	// Columns names the columns when there is no header line. YAML `columns`.
	Columns []string `yaml:"columns"`
}

// Replay configures the file source's simulated delivery.
type Replay struct {
	// Seed makes the shuffle reproducible. YAML `seed`. Default 1 (0 also
	// means 1).
	Seed int64 `yaml:"seed"`
	// Delay bounds the usual transport delay: each record arrives its
	// event time plus a uniform delay in [0, delay]. YAML `delay`.
	// Default 30s; 0 also means 30s.
	Delay Duration `yaml:"delay"`
	// StragglerFraction of records (0..1) are delayed uniformly in
	// [0, max_delay] instead. YAML `straggler_fraction`. Default 0.
	StragglerFraction float64 `yaml:"straggler_fraction"`
	// MaxDelay bounds every delay: stragglers' delays and the extra delay
	// of a redelivery. YAML `max_delay`. Default (and when 0): delay.
	MaxDelay Duration `yaml:"max_delay"`
	// RedeliverFraction of records (0..1) are delivered a second time, a
	// uniform [0, max_delay] after the first delivery (an at-least-once
	// redelivery). YAML `redeliver_fraction`. Default 0.
	RedeliverFraction float64 `yaml:"redeliver_fraction"`
	// ConflictFraction of records (0..1) are delivered a second time with
	// a changed payload (the same event id, a different ConflictField): a
	// producer bug the pipeline must report. YAML `conflict_fraction`.
	// Default 0.
	ConflictFraction float64 `yaml:"conflict_fraction"`
	// ConflictField is the field a conflicting redelivery changes: a
	// number gets 1 added, a string gets "-x" appended. YAML
	// `conflict_field`. Required with conflict_fraction.
	ConflictField string `yaml:"conflict_field"`
	// Partitions spreads records over this many simulated partitions
	// (1..4096). YAML `partitions`. Default 1 (0 also means 1).
	Partitions int `yaml:"partitions"`
	// PartitionBy names the field whose hash picks the partition, so that
	// related records stay in order on one partition. YAML `partition_by`.
	// Default: the record's sequence number.
	PartitionBy string `yaml:"partition_by"`
}

// EventTime configures event-time extraction and the watermark.
type EventTime struct {
	// Field holding the event time. YAML `field`. Required.
	Field string `yaml:"field"`
	// Format of the field: "rfc3339" (an offset is required), "epoch_ms",
	// "epoch_s", or "layout" (a Go reference layout in Layout, read in
	// Timezone). YAML `format`. Default "rfc3339", or "layout" when Layout
	// is set.
	Format string `yaml:"format" enum:"format|rfc3339,epoch_ms,epoch_s,layout"`
	// Layout is a Go time layout for timestamps that carry no offset
	// ("2006-01-02 15:04:05"). YAML `layout`.
	Layout string `yaml:"layout"`
	// Timezone is the IANA zone in which Layout timestamps are read
	// ("Europe/London"). YAML `timezone`. Required with Layout; checked
	// but unused with the other formats.
	Timezone string `yaml:"timezone"`
	// OutOfOrderness is how far the watermark trails the largest event
	// time seen on a partition. YAML `out_of_orderness`. Default 0.
	OutOfOrderness Duration `yaml:"out_of_orderness"`
	// IdleTimeout marks a partition idle when it has had no record for this
	// long in processing time; an idle partition does not hold the
	// watermark back until its next record. YAML `idle_timeout`.
	// Default 0 (never idle).
	IdleTimeout Duration `yaml:"idle_timeout"`
	// IdleAdvance makes the watermark advance with processing time once
	// every partition is idle, so that the last windows fire and close when
	// the input stops: to processing time − out_of_orderness, but never
	// beyond the watermark that closes the windows of the newest event
	// seen (docs/semantics.md, "When the input stops"). Needs
	// idle_timeout. YAML `idle_advance`. Default false (the watermark
	// holds while every partition is idle).
	IdleAdvance bool `yaml:"idle_advance"`
	// MaxFuture quarantines a record whose event time is more than this
	// after its processing time (rule max_future): a producer clock that
	// runs ahead would otherwise move the watermark and make every on-time
	// event after it late. Processing time is the record's arrival time
	// when the source records one, else the clock; for a file source
	// without arrival times, the time the run started (docs/semantics.md,
	// "Timestamp rules"). YAML `max_future`. Default 24h (an absent key;
	// with a contract, the smallest max_future of its rules); 0s turns the
	// rule off.
	MaxFuture *Duration `yaml:"max_future"`
	// MaxPast quarantines a record whose event time is more than this
	// before its processing time (rule max_past): a backfill published
	// into a realtime topic. YAML `max_past`. Default off (an absent key;
	// with a contract, the smallest max_age of its rules); 0s turns the
	// rule off.
	MaxPast *Duration `yaml:"max_past"`
	// IngestTimeField names a timestamp field holding when the event was
	// produced or ingested (produced_at): a record whose event time is
	// after it is quarantined (rule ingest_time), since an event cannot
	// be produced before it happened. A null value passes. YAML
	// `ingest_time_field`. Default: the contract's ingest_time; none
	// without a contract.
	IngestTimeField string `yaml:"ingest_time_field"`
	// From is where event time comes from: "payload" (the field of the
	// record) or, for a kafka source, "kafka_timestamp" (the record's
	// timestamp in ms is written into the field). YAML `from`. Default
	// payload.
	From string `yaml:"from" enum:"event-time origin|payload,kafka_timestamp"`
}

// Window configures the window assigner.
type Window struct {
	// Type is "tumbling", "sliding", "session", "cumulate" (windows of a
	// fixed start growing by step up to size: Flink's CUMULATE) or
	// "global" (one window per key over all event time, from
	// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, that fires when the
	// input ends — the watermark at +∞ — or at early firings: the
	// windowless GROUP BY of SQL). YAML `type`. Required.
	Type string `yaml:"type" enum:"window type|tumbling,sliding,session,cumulate,global"`
	// Size of tumbling and sliding windows, and the largest size of
	// cumulate windows (a multiple of step). YAML `size`.
	Size Duration `yaml:"size"`
	// Slide of sliding windows: a window starts every slide (plus offset),
	// and an event belongs to every window that contains it, ⌈size/slide⌉
	// at most (size need not be a multiple of slide). At most size. YAML
	// `slide`.
	Slide Duration `yaml:"slide"`
	// Gap of session windows: a session ends after this much event time
	// without an event for its key. YAML `gap`.
	Gap Duration `yaml:"gap"`
	// Step of cumulate windows: every size-long period (from the epoch
	// plus offset) holds the windows [s, s+step), [s, s+2·step), …,
	// [s, s+size), and an event belongs to those that end after it (Flink's
	// CUMULATE(…, step, size)). YAML `step`.
	Step Duration `yaml:"step"`
	// Offset shifts fixed-length windows from the Unix epoch (Flink's
	// window offset), taken modulo the slide (the size for tumbling
	// windows). Not with session windows or whole-day sizes. YAML
	// `offset`. Default 0.
	Offset Duration `yaml:"offset"`
	// Timezone is the IANA zone for calendar windows (sizes that are whole
	// days align to local midnight, and a day with a DST change is 23 or 25
	// hours long) and for rendering window times. YAML `timezone`.
	// Default "UTC".
	Timezone string `yaml:"timezone"`
}

// Emit configures result emission.
type Emit struct {
	// Mode is "final" (one row per window and key when it closes),
	// "update" (a row at the on-time firing, at each late update and when
	// the window closes, with version and is_final) or "retract" (the same
	// firings as changelog pairs: update_before / update_after, delete).
	// YAML `mode`. Default "update".
	Mode string `yaml:"mode" enum:"mode|final,update,retract"`
	// EarlyEvery adds provisional firings of open windows that changed, on
	// the processing-time clock. Not with mode final. YAML `early_every`.
	// Default 0 (none).
	EarlyEvery Duration `yaml:"early_every"`
}

// Late configures events that arrive after their windows closed.
type Late struct {
	// Policy is "drop" (counted) or "side_output" (written to Sink).
	// YAML `policy`. Default: side_output when a sink is set, else drop.
	Policy string `yaml:"policy" enum:"policy|drop,side_output"`
	// Sink receives late records: jsonl, kafka, stdout, or a table of
	// sqlite or postgres. YAML `sink`.
	Sink *Sink `yaml:"sink"`
}

// Dedup configures deduplication by event id (docs/semantics.md,
// "Duplicates").
type Dedup struct {
	// Key is the event id: a field name, or an expr-lang expression over
	// the source fields for a composite id (`InvoiceNo + "-" +
	// string(line_no)`). YAML `key`. Default: the contract's event_id.
	Key string `yaml:"key"`
	// TTL is how long, in event time, an id is remembered: a redelivery
	// within TTL of the event is caught; one later is taken for a new
	// event. YAML `ttl`. Required.
	TTL Duration `yaml:"ttl"`
	// KeepPayloads is how many first payloads are kept (newest first) so
	// that a conflict record can show the first delivery next to the new
	// one; older first payloads are shown by hash only. YAML
	// `keep_payloads`. Default (nil, an absent key) DefaultKeepPayloads,
	// filled in by Defaults; 0 keeps none.
	KeepPayloads *int `yaml:"keep_payloads"`
	// Ignore lists top-level fields that describe the delivery, not the
	// event (ingested_at): two deliveries differing only there are
	// duplicates, not a conflict. YAML `ignore`. Default: the contract's
	// metadata fields and ingest_time, and source.arrival_time_field.
	Ignore []string `yaml:"ignore"`
}

// DefaultKeepPayloads is dedup.keep_payloads when the key is absent.
const DefaultKeepPayloads = 10_000

// DefaultMaxFuture is event_time.max_future when the key is absent (and no
// contract gives one): the first article's "not more than 24h in the
// future".
const DefaultMaxFuture = Duration(24 * time.Hour)

// MaxFutureMs returns max_future in ms: 0 when the rule is off, the
// default when the key is unset (before Defaults).
func (et *EventTime) MaxFutureMs() int64 {
	if et.MaxFuture == nil {
		return DefaultMaxFuture.Ms()
	}
	return et.MaxFuture.Ms()
}

// MaxPastMs returns max_past in ms: 0 when the rule is off or unset.
func (et *EventTime) MaxPastMs() int64 {
	if et.MaxPast == nil {
		return 0
	}
	return et.MaxPast.Ms()
}

// OrderBy configures per-key version ordering of state events.
type OrderBy struct {
	// Key is the field identifying the entity (order_id). YAML `key`.
	// Default: the contract's ordering.key.
	Key string `yaml:"key"`
	// Version is the int field that grows with each state change. YAML
	// `version`. Default: the contract's ordering.version.
	Version string `yaml:"version"`
	// TTL is how long, in event time after its latest version, an
	// entity's state is kept; 0 keeps it for the whole run. YAML `ttl`.
	// Default 0.
	TTL Duration `yaml:"ttl"`
}

// Quarantine configures the destination of invalid records.
type Quarantine struct {
	// Sink receives quarantined records: jsonl, kafka, stdout, or a table
	// of sqlite or postgres. YAML `sink`.
	Sink *Sink `yaml:"sink"`
	// MaxFraction fails the run when more than this share (0 to 1) of the
	// records read were quarantined before the stages (decode, event time,
	// contract rules, null event ids or keys): checked after every batch
	// once 1,000 records were read, and at the end of a bounded input,
	// before the batch's outputs are written — a dead-letter queue's
	// tolerance, as errors.tolerance in Kafka Connect. 0 tolerates no
	// quarantined record. YAML `max_fraction`. Default: none (any
	// share is counted and the run goes on).
	MaxFraction *float64 `yaml:"max_fraction"`
}

// MaxFractionMinRecords is the number of records read before
// quarantine.max_fraction is checked (at the end of a bounded input it is
// checked whatever the count): a share of a few records says little.
const MaxFractionMinRecords = 1000

// Sink configures one output.
type Sink struct {
	// Type is "sqlite", "postgres", "jsonl", "kafka", "parquet",
	// "iceberg" (result rows only) or "stdout". YAML `type`. Required.
	Type string `yaml:"type"`
	// Path of the database (sqlite), file (jsonl), output directory
	// (parquet) or warehouse directory (iceberg: the table is
	// PATH/<namespace>/<table>), relative to the working directory;
	// parent directories are created (a jsonl file is truncated when the
	// run opens it). YAML `path`. Required for sqlite, jsonl, parquet and
	// iceberg.
	Path string `yaml:"path"`
	// Table for SQL sinks, and an iceberg sink's table as
	// "<namespace>.<table>" (namespace default). YAML `table`. Default:
	// the stage name with '-' replaced by '_'. Unused by other sink types. For postgres it may be
	// schema-qualified ("analytics.revenue_minute"); in ledger mode it is
	// the aggregate table.
	Table string `yaml:"table"`
	// DSN is the PostgreSQL connection string, a URL
	// ("postgres://user@host:5432/db") or key=value pairs, read by pgx.
	// Write secrets as "${VAR}" so that they come from the environment.
	// YAML `dsn`. Required for postgres.
	DSN string `yaml:"dsn"`
	// Mode is how a postgres sink writes: "results" (an upsert table of
	// result rows guarded by version) or "ledger" (an event ledger: each
	// accepted event id is inserted into LedgerTable and its deltas are
	// added to Table in one transaction, so a redelivered event never
	// counts twice; docs/connectors/postgres.md). YAML `mode`. Default
	// results.
	Mode string `yaml:"mode"`
	// LedgerTable is the event ledger table of mode ledger, optionally
	// schema-qualified. YAML `ledger_table`. Default: Table + "_ledger".
	LedgerTable string `yaml:"ledger_table"`
	// Replace lets a fresh run (one that resumes no checkpoint) drop and
	// create anew a table of an sqlite or postgres sink that tidemark
	// created and whose layout no longer matches the pipeline (other keys
	// or aggregates); the run's summary says what was replaced. A table
	// tidemark did not create is never dropped. YAML `replace`. Default
	// false: such a table is refused, naming each difference.
	Replace bool `yaml:"replace"`
	// Lineage is whether an sqlite or postgres result sink writes the
	// lineage column: into the tables it creates, and into an existing
	// table that has a lineage column. YAML `lineage`. Default true;
	// false leaves the column out (a table's lineage column then keeps
	// its default).
	Lineage *bool `yaml:"lineage"`
	// Retries is how many times a postgres sink retries a transaction
	// that failed for a transient reason (connection lost, serialization
	// failure, deadlock), with exponential backoff from 250 ms doubling
	// up to 8 s (docs/connectors/postgres.md). YAML `retries`. Default 6
	// (about 16 s of waiting in all); 0 fails at the first error.
	Retries *int `yaml:"retries"`

	// Kafka sinks (docs/connectors/kafka.md).

	// Brokers are the seed brokers, "host:port". YAML `brokers`. Required
	// for kafka.
	Brokers HostPorts `yaml:"brokers"`
	// Topic receives the records; it must exist. YAML `topic`. Required
	// for kafka.
	Topic string `yaml:"topic"`
	// Upsert writes an upsert stream: no update_before rows, deletes as
	// tombstones. YAML `upsert`. Default false (the whole changelog).
	Upsert bool `yaml:"upsert"`
	// TransactionalID is the producer's transactional.id. YAML
	// `transactional_id`. Default "tidemark-<pipeline>-<topic>".
	TransactionalID string `yaml:"transactional_id"`
	// MarkerTopic holds the sink's commit markers. YAML `marker_topic`.
	// Default "tidemark-commits.<transactional id>".
	MarkerTopic string `yaml:"marker_topic"`
	// TransactionTimeout is transaction.timeout.ms; more than the
	// checkpoint interval plus a checkpoint's duration. YAML
	// `transaction_timeout`. Default 60s.
	TransactionTimeout Duration `yaml:"transaction_timeout"`
	// ClientID is the Kafka client.id. YAML `client_id`. Default
	// "tidemark".
	ClientID string `yaml:"client_id"`
	// Format is how a kafka sink writes record keys and values: "json"
	// (the default), "avro" or "protobuf" (the Confluent wire format: a
	// schema derived from the rows' columns, registered under the
	// topic's subjects <topic>-key and <topic>-value in SchemaRegistry;
	// docs/connectors/kafka.md). YAML `format`. Default json.
	Format string `yaml:"format"`
	// SchemaRegistry receives the schemas of format avro or protobuf.
	// YAML `schema_registry`. Required with those formats.
	SchemaRegistry *SchemaRegistry `yaml:"schema_registry"`
	// DecimalScale is the scale (digits after the point) of decimal
	// columns in avro and protobuf records: Avro's decimal logical type
	// fixes one per column (precision 38). A value with more digits
	// fails the run, naming the row and column. YAML `decimal_scale`.
	// Default 6; 0 to 19.
	DecimalScale *int `yaml:"decimal_scale"`
	// Parquet and Iceberg sinks (docs/connectors/parquet.md,
	// docs/connectors/iceberg.md).

	// PartitionBy lists the partition terms of a parquet or iceberg sink,
	// outermost first: "day" or "hour" of the window's start (a select
	// stage: the event time; parquet: in the stage's timezone, directories
	// window_day=2011-12-09; iceberg: Iceberg's day and hour transforms,
	// in UTC), or a group-key column (its value; a select stage's parquet
	// sink: one of its columns); a parquet side output takes "kind" or
	// "day". YAML `partition_by`. Default none.
	PartitionBy []string `yaml:"partition_by"`
	// Compression is the Parquet codec of a parquet or iceberg sink:
	// "zstd", "snappy" or "none". YAML `compression`. Default zstd.
	Compression string `yaml:"compression" enum:"compression|zstd,snappy,none"`
	// RowGroupRows is the rows per Parquet row group of a parquet or
	// iceberg sink. YAML `row_group_rows`. Default 131072.
	RowGroupRows int64 `yaml:"row_group_rows" zero:"must be at least 1|131072"`
	// RollBytes closes a parquet or iceberg sink's file when it reaches
	// this many bytes and starts the next; files are also closed at every
	// checkpoint. YAML `roll_bytes`. Default 134217728 (128 MiB).
	RollBytes int64 `yaml:"roll_bytes" zero:"must be at least 1|134217728"`
	// Catalog is where an iceberg sink's table is registered. YAML
	// `catalog`. Default {type: hadoop}: the table's metadata files in
	// its directory under Path.
	Catalog *IcebergCatalog `yaml:"catalog"`

	// Delivery is "exactly_once" (the default with checkpoints: output is
	// published when its checkpoint completes) or "at_least_once" (output
	// is written as it comes; after a restore some of it is written
	// again). A sink that cannot take part in checkpoints (stdout) needs
	// at_least_once in a pipeline with checkpoints. YAML `delivery`.
	Delivery string `yaml:"delivery"`
}

// IcebergCatalog is the catalog of an iceberg sink's table
// (docs/connectors/iceberg.md).
type IcebergCatalog struct {
	// Type is "hadoop" (the table's metadata files under the warehouse
	// directory, Path, the current one named by version-hint.text) or
	// "sql" (Iceberg's JDBC catalog: a table iceberg_tables in a SQLite
	// file or a PostgreSQL database holding each table's metadata
	// location, swapped atomically) or "rest" (an Iceberg REST catalog
	// server, which writes the metadata; the data files go under Path,
	// which the catalog's table location must be). YAML `type`. Default
	// hadoop.
	Type string `yaml:"type" enum:"catalog type|hadoop,sql,rest"`
	// URI is a sql catalog's database — a postgres:// or postgresql://
	// URL, else the path of a SQLite file (created if absent) — or a rest
	// catalog's base URL (http:// or https://, without /v1). YAML `uri`.
	// Required for sql and rest.
	URI string `yaml:"uri"`
	// Token is a rest catalog's bearer token (write it as "${VAR}"). YAML
	// `token`. Default none.
	Token string `yaml:"token"`
	// Name is the catalog's name in the iceberg_tables rows (a sql
	// catalog's catalog_name). YAML `name`. Default tidemark.
	Name string `yaml:"name"`
}

// SchemaRegistry locates a Confluent-compatible Schema Registry.
type SchemaRegistry struct {
	// URL of the registry ("http://127.0.0.1:8081"; several comma
	// separated). "${VAR}" is expanded. YAML `url`. Required.
	URL string `yaml:"url"`
	// Username and Password authenticate with HTTP basic auth (an API
	// key and secret); write them as "${VAR}". YAML `username`,
	// `password`. Default: none.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// Timeout bounds each request to the registry. YAML `timeout`.
	// Default 10s.
	Timeout Duration `yaml:"timeout"`
	// MaxWait, for a source, bounds how long records wait for a registry
	// that cannot be reached (refused, reset or closed connections,
	// timeouts, HTTP 5xx): they are held, neither quarantined nor
	// skipped, and asked about again; after MaxWait the run fails naming
	// the registry, its checkpoint before them. YAML `max_wait`. Default
	// 5m; at least 1ms. Only for a source.
	MaxWait Duration `yaml:"max_wait,omitempty" zero:"must be at least 1ms|5m"`
}

// Key-group bounds (Pipeline.KeyGroups).
const (
	// DefaultKeyGroups is the default number of key groups: Flink's
	// default maximum parallelism for small jobs (128).
	DefaultKeyGroups = 128
	// MaxKeyGroups is the largest number of key groups: Flink's upper
	// bound on maximum parallelism (2^15), which keeps a key group in 16 bits.
	MaxKeyGroups = 1 << 15
)

// Exchange memory bounds (Pipeline.ExchangeMemory).
const (
	// DefaultExchangeMemory is exchange_memory's default, 8 MiB: Nexmark
	// q5 at two tasks peaks at 1.16× the RSS of one task with it, 1.23×
	// with 16 MiB (docs/parallelism.md, Figures, "Exchange memory"); at
	// two tasks a sender's packets are 1 MiB with either.
	DefaultExchangeMemory = Bytes(8 << 20)
	// MinExchangeMemory is the least exchange_memory, 64 KiB.
	MinExchangeMemory = Bytes(64 << 10)
)

// EffectiveKeyGroups returns KeyGroups, or DefaultKeyGroups when it is 0.
func (p *Pipeline) EffectiveKeyGroups() int {
	if p.KeyGroups == 0 {
		return DefaultKeyGroups
	}
	return p.KeyGroups
}
