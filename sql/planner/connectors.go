package planner

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/suggest"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// Connectors ('connector' = …). Sources: nexmark, filesystem, kafka,
// postgres-cdc (Flink CDC's: source.type postgres_cdc).
// Sinks: blackhole (no sink: rows are counted), print and stdout,
// filesystem and jsonl (a JSON-lines file), sqlite, jdbc and postgres,
// kafka, upsert-kafka.
var knownConnector = map[string]bool{
	"nexmark": true, "filesystem": true, "kafka": true, "upsert-kafka": true,
	"blackhole": true, "print": true, "stdout": true, "jsonl": true,
	"sqlite": true, "jdbc": true, "postgres": true, "postgres-cdc": true, "iceberg": true,
}

func connectorNames() []string {
	var out []string
	for n := range knownConnector {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func hintOf(name string, cands []string) string { return suggest.Hint(name, cands) }

// SourceOptions and SinkOptions list, per connector, the WITH options a
// table reads (besides 'connector' and 'tidemark.<key>'), for docs/sql.md
// and its test.
var SourceOptions = map[string][]string{
	"nexmark": {"first-event.rate", "next-event.rate", "events.num", "person.proportion", "auction.proportion", "bid.proportion",
		"keep-alive", "stop-at", "max-emit-speed", "scan.watermark.idle-timeout"},
	"filesystem": {"path", "format", "csv.field-delimiter", "connector.path", "format.type", "source.monitor-interval", "scan.watermark.idle-timeout"},
	"kafka": {"topic", "properties.bootstrap.servers", "properties.group.id", "properties.client.id", "properties.isolation.level",
		"scan.startup.mode", "scan.startup.timestamp-millis", "scan.bounded.mode", "format", "value.format",
		"avro-confluent.url", "value.avro-confluent.url", "avro-confluent.schema-registry.url", "scan.watermark.idle-timeout",
		"debezium-avro-confluent.url", "value.debezium-avro-confluent.url", "debezium-json.schema-include"},
	"postgres-cdc": {"hostname", "port", "username", "password", "database-name", "schema-name", "table-name", "slot.name",
		"decoding.plugin.name", "debezium.publication.name", "debezium.database.sslmode", "scan.startup.mode", "scan.incremental.snapshot.enabled",
		"scan.watermark.idle-timeout"},
}

// SinkOptions: see SourceOptions.
var SinkOptions = map[string][]string{
	"blackhole": {},
	"print":     {"print-identifier", "standard-error"},
	"stdout":    {},
	"filesystem": {"path", "format", "connector.path", "format.type", "parquet.compression", "sink.rolling-policy.file-size",
		"sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval", "sink.partition-commit.trigger",
		"sink.partition-commit.delay", "sink.partition-commit.policy.kind", "partition.time-extractor.timestamp-pattern"},
	"jsonl": {"path"},
	"iceberg": {"catalog-name", "catalog-type", "catalog-impl", "uri", "token", "warehouse", "catalog-database", "catalog-table",
		"write.parquet.compression-codec", "write.parquet.row-group-size-rows", "write.target-file-size-bytes", "format-version"},
	"sqlite":       {"path", "table-name"},
	"jdbc":         {"url", "table-name", "username", "password", "driver"},
	"postgres":     {"url", "dsn", "table-name", "username", "password"},
	"kafka":        {"topic", "properties.bootstrap.servers", "properties.client.id", "properties.transaction.timeout.ms", "format", "value.format", "key.format", "avro-confluent.url", "value.avro-confluent.url", "sink.delivery-guarantee", "sink.transactional-id-prefix"},
	"upsert-kafka": {"topic", "properties.bootstrap.servers", "properties.client.id", "properties.transaction.timeout.ms", "format", "value.format", "key.format", "avro-confluent.url", "value.avro-confluent.url", "sink.delivery-guarantee", "sink.transactional-id-prefix"},
}

// stripScheme removes file:// from a path.
func stripScheme(p string) string {
	if s, ok := strings.CutPrefix(p, "file://"); ok {
		return s
	}
	return p
}

// sourceOf builds the spec of table t read as a source: the connector's
// options, the columns' types (source.schema), the event time from the
// WATERMARK, and 'tidemark.<key>' options (keys under source; event_time
// keys as 'tidemark.event_time.<key>').
func (pl *planner) sourceOf(t *table) (spec.Source, spec.EventTime, error) {
	var src spec.Source
	var et spec.EventTime
	o := t.opts
	switch t.connector {
	case "nexmark":
		src.Type = "nexmark"
		first, hasFirst := o.get("first-event.rate")
		next, hasNext := o.get("next-event.rate")
		if hasFirst {
			n, err := pl.intOpt(first)
			if err != nil {
				return src, et, err
			}
			src.Rate = n
		}
		if hasNext && (!hasFirst || next.Value != first.Value) {
			return src, et, pl.errAt(next.ValueAt, "'next-event.rate' differs from 'first-event.rate': tidemark's generator has one rate")
		}
		if e, ok := o.get("events.num"); ok {
			n, err := pl.intOpt(e)
			if err != nil {
				return src, et, err
			}
			src.Events = n
		} else {
			return src, et, pl.errAt(t.connAt, "a nexmark table needs 'events.num' (the number of events: tidemark runs a bounded generator)")
		}
		for k, want := range map[string]string{"person.proportion": "1", "auction.proportion": "3", "bid.proportion": "46"} {
			if p, ok := o.get(k); ok && strings.TrimSpace(p.Value) != want {
				return src, et, pl.errAt(p.ValueAt, "'%s' = '%s': the generator has Nexmark's proportions 1:3:46 (person:auction:bid); leave the option out or give %s", k, p.Value, want)
			}
		}
		// Flink's run-time knobs have no meaning for a bounded generator
		// that never waits for the wall clock.
		o.accept("keep-alive", "stop-at", "max-emit-speed")
	case "filesystem":
		src.Type = "file"
		p, ok := o.first("path", "connector.path")
		if !ok {
			return src, et, pl.errAt(t.connAt, "a filesystem table needs 'path'")
		}
		src.Path = stripScheme(p.Value)
		if f, ok := o.first("format", "format.type"); ok {
			switch strings.ToLower(f.Value) {
			case "csv":
				src.Format = "csv"
			case "json":
				src.Format = "jsonl"
			case "avro":
				src.Format = "avro"
			default:
				return src, et, pl.errAt(f.ValueAt, "format '%s': a filesystem source reads csv, json (JSON lines) or avro", f.Value)
			}
		}
		if d, ok := o.get("csv.field-delimiter"); ok {
			src.CSV.Delimiter = d.Value
		}
		if m, ok := o.get("source.monitor-interval"); ok {
			return src, et, pl.errAt(m.KeyAt, "'source.monitor-interval': tidemark reads the files there are and ends (a bounded source)")
		}
	case "kafka":
		src.Type = "kafka"
		topic, ok := o.get("topic")
		if !ok {
			return src, et, pl.errAt(t.connAt, "a kafka table needs 'topic'")
		}
		for _, tp := range strings.Split(topic.Value, ";") {
			if tp = strings.TrimSpace(tp); tp != "" {
				src.Topics = append(src.Topics, tp)
			}
		}
		if b, ok := o.get("properties.bootstrap.servers"); ok {
			src.Brokers = splitList(b.Value)
		} else {
			return src, et, pl.errAt(t.connAt, "a kafka table needs 'properties.bootstrap.servers'")
		}
		src.Group = o.value("properties.group.id")
		src.ClientID = o.value("properties.client.id")
		if iso, ok := o.get("properties.isolation.level"); ok {
			switch iso.Value {
			case "read_committed", "read_uncommitted":
				src.Isolation = iso.Value
			default:
				return src, et, pl.errAt(iso.ValueAt, "'properties.isolation.level' is read_committed or read_uncommitted")
			}
		}
		if m, ok := o.get("scan.startup.mode"); ok {
			switch m.Value {
			case "earliest-offset":
				src.Start = "earliest"
			case "latest-offset":
				src.Start = "latest"
			case "timestamp":
				src.Start = "timestamp"
				ts, ok := o.get("scan.startup.timestamp-millis")
				if !ok {
					return src, et, pl.errAt(m.ValueAt, "'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'")
				}
				n, err := pl.intOpt(ts)
				if err != nil {
					return src, et, err
				}
				src.StartTimestamp = time.UnixMilli(n).UTC().Format(time.RFC3339Nano)
			default:
				return src, et, pl.errAt(m.ValueAt, "'scan.startup.mode' = '%s': tidemark starts at earliest-offset, latest-offset or timestamp, and resumes from its checkpoints (not the group's offsets)", m.Value)
			}
		}
		if b, ok := o.get("scan.bounded.mode"); ok {
			switch b.Value {
			case "latest-offset":
				src.StopAtEnd = true
			case "unbounded":
			default:
				return src, et, pl.errAt(b.ValueAt, "'scan.bounded.mode' is latest-offset (stop at the end offsets of the start) or unbounded")
			}
		}
		if f, ok := o.first("value.format", "format"); ok {
			switch f.Value {
			case "json":
				src.Format = "jsonl"
			case "avro-confluent":
				src.Format = "avro"
			case "protobuf-confluent", "protobuf":
				src.Format = "protobuf"
			case "debezium-json":
				// Debezium's envelope, bare or in the JsonConverter's
				// schema wrapper (read either way).
				src.Format = "debezium_json"
				o.accept("debezium-json.schema-include")
			case "debezium-avro-confluent":
				src.Format = "debezium_avro"
			default:
				return src, et, pl.errAt(f.ValueAt, "format '%s': a kafka source reads json, avro-confluent, protobuf-confluent (the Confluent wire format), debezium-json or debezium-avro-confluent", f.Value)
			}
			if strings.HasPrefix(src.Format, "debezium") {
				// A change stream keyed by the table's primary key.
				pk := t.def.PrimaryKey
				if pk == nil {
					return src, et, pl.errAt(f.ValueAt, "format '%s' reads a table's changes: declare the table's PRIMARY KEY (…) NOT ENFORCED, the columns that identify a row", f.Value)
				}
				for _, c := range pk.Columns {
					src.KeyColumns = append(src.KeyColumns, c.Name)
				}
			}
			if src.Format != "jsonl" && src.Format != "debezium_json" {
				u, ok := o.first("value.avro-confluent.url", "avro-confluent.url", "avro-confluent.schema-registry.url", "debezium-avro-confluent.url", "value.debezium-avro-confluent.url")
				if !ok {
					key := "avro-confluent.url"
					if src.Format == "debezium_avro" {
						key = "debezium-avro-confluent.url"
					}
					return src, et, pl.errAt(f.ValueAt, "format '%s' needs the schema registry's '%s'", f.Value, key)
				}
				src.SchemaRegistry = &spec.SchemaRegistry{URL: u.Value}
			}
		}
	case "postgres-cdc":
		// Flink CDC's PostgreSQL connector: a publication read through
		// logical replication (docs/connectors/postgres-cdc.md).
		src.Type = "postgres_cdc"
		need := func(key string) (*parser.Option, error) {
			v, ok := o.get(key)
			if !ok {
				return nil, pl.errAt(t.connAt, "a postgres-cdc table needs '%s'", key)
			}
			return v, nil
		}
		tbl, err := need("table-name")
		if err != nil {
			return src, et, err
		}
		pub, err := need("debezium.publication.name")
		if err != nil {
			return src, et, pl.errAt(t.connAt, "a postgres-cdc table needs 'debezium.publication.name': tidemark reads a publication (CREATE PUBLICATION … FOR TABLE …) and never creates one")
		}
		// The connection: Flink CDC's options, or a whole connection
		// string as 'tidemark.dsn' (applied with the other 'tidemark.'
		// keys below).
		if _, whole := o.get("tidemark.dsn"); !whole {
			host, err := need("hostname")
			if err != nil {
				return src, et, err
			}
			db, err := need("database-name")
			if err != nil {
				return src, et, err
			}
			u := url.URL{Scheme: "postgres", Host: host.Value, Path: "/" + db.Value}
			if p, ok := o.get("port"); ok {
				if _, err := pl.intOpt(p); err != nil {
					return src, et, err
				}
				u.Host += ":" + strings.TrimSpace(p.Value)
			}
			if user := o.value("username"); user != "" {
				if pass := o.value("password"); pass != "" {
					u.User = url.UserPassword(user, pass)
				} else {
					u.User = url.User(user)
				}
			}
			if m := o.value("debezium.database.sslmode"); m != "" {
				u.RawQuery = url.Values{"sslmode": {m}}.Encode()
			}
			src.DSN = u.String()
		}
		src.Table = tbl.Value
		if s := o.value("schema-name"); s != "" && !strings.Contains(tbl.Value, ".") {
			src.Table = s + "." + tbl.Value
		}
		src.Publication = pub.Value
		src.Slot = o.value("slot.name")
		if d, ok := o.get("decoding.plugin.name"); ok && d.Value != "pgoutput" {
			return src, et, pl.errAt(d.ValueAt, "'decoding.plugin.name' = '%s': tidemark decodes pgoutput, PostgreSQL's built-in plugin", d.Value)
		}
		if m, ok := o.get("scan.startup.mode"); ok {
			switch m.Value {
			case "initial":
				src.Snapshot = "initial"
			case "latest-offset":
				src.Snapshot = "never"
			default:
				return src, et, pl.errAt(m.ValueAt, "'scan.startup.mode' = '%s': a postgres-cdc table starts with initial (the rows, then the changes) or latest-offset (the changes only)", m.Value)
			}
		}
		// The snapshot is one transaction in the slot's exported snapshot,
		// whatever Flink CDC's incremental snapshot option says.
		o.accept("scan.incremental.snapshot.enabled")
		if pk := t.def.PrimaryKey; pk != nil {
			for _, c := range pk.Columns {
				src.KeyColumns = append(src.KeyColumns, c.Name)
			}
		}
	default:
		return src, et, pl.errAt(t.connAt, "connector '%s' is a sink; a table read in FROM needs a source connector (nexmark, filesystem, kafka, postgres-cdc)", t.connector)
	}
	if len(t.def.PartitionBy) > 0 {
		return src, et, pl.errAt(t.def.PartitionBy[0].At, "PARTITIONED BY on a table read in FROM is not supported: tidemark reads the files its 'path' names (a glob reads a partitioned directory)")
	}
	// The columns' types: the non-string ones (a field not declared is a
	// string) but the event time (always a timestamp); the nexmark
	// generator's are fixed.
	if src.Type == "postgres_cdc" {
		// A change stream's columns are checked against the table's
		// (pgcdc.Check: column types): every one declared, in order.
		for _, pc := range t.phys {
			if _, shadow := t.shadowed[pc.name]; !shadow {
				src.Schema = append(src.Schema, spec.FieldType{Name: pc.field, Type: pc.t.specType()})
			}
		}
	} else if src.Type != "nexmark" {
		for _, pc := range t.phys {
			if t.wm != nil && pc.field == t.wm.field {
				continue
			}
			if _, shadow := t.shadowed[pc.name]; shadow {
				continue
			}
			if pc.t.specType() != "string" {
				src.Schema = append(src.Schema, spec.FieldType{Name: pc.field, Type: pc.t.specType()})
			}
		}
		if src.Format == "csv" && t.csvNoHeader() {
			for _, pc := range t.phys {
				src.CSV.Columns = append(src.CSV.Columns, pc.field)
			}
		}
	}
	if w := t.wm; w != nil {
		et = spec.EventTime{Field: w.field, OutOfOrderness: spec.Duration(time.Duration(w.delayMs) * time.Millisecond)}
		switch w.format {
		case "layout":
			et.Layout = w.layout
			et.Timezone = pl.localZone()
		case "epoch_ms", "epoch_s":
			et.Format = w.format
		}
	}
	if it, ok := o.get("scan.watermark.idle-timeout"); ok {
		d, err := pl.durationOpt(it)
		if err != nil {
			return src, et, err
		}
		et.IdleTimeout = d
	} else if d, ok := pl.setting("table.exec.source.idle-timeout"); ok {
		v, err := pl.durationOpt(d)
		if err != nil {
			return src, et, err
		}
		et.IdleTimeout = v
	}
	// tidemark's own keys: event_time.<key>, then source keys.
	var etOpts, srcOpts []*parser.Option
	for _, x := range o.prefixed("tidemark.") {
		if strings.HasPrefix(x.Key, "tidemark.event_time.") {
			etOpts = append(etOpts, x)
		} else {
			srcOpts = append(srcOpts, x)
		}
	}
	if err := pl.overlay(&et, etOpts, "tidemark.event_time."); err != nil {
		return src, et, err
	}
	if err := pl.overlay(&src, srcOpts, "tidemark."); err != nil {
		return src, et, err
	}
	known := append([]string{"connector"}, SourceOptions[t.connector]...)
	if err := pl.checkUnused(o, "a "+t.connector+" source", known); err != nil {
		return src, et, err
	}
	return src, et, nil
}

// csvNoHeader reports whether 'tidemark.csv.header' = 'false'.
func (t *table) csvNoHeader() bool {
	for _, o := range t.def.With {
		if o.Key == "tidemark.csv.header" && strings.EqualFold(strings.TrimSpace(o.Value), "false") {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sinkOf builds the sink of table t (nil for blackhole: the rows are
// counted, not written).
func (pl *planner) sinkOf(t *table) (*spec.Sink, error) {
	o := t.opts
	s := &spec.Sink{}
	switch t.connector {
	case "blackhole":
		s = nil
	case "print", "stdout":
		s.Type = "stdout"
		o.accept("print-identifier", "standard-error")
	case "filesystem", "jsonl":
		s.Type = "jsonl"
		p, ok := o.first("path", "connector.path")
		if !ok {
			return nil, pl.errAt(t.connAt, "a %s sink needs 'path' (the JSON-lines file, or Parquet's directory)", t.connector)
		}
		s.Path = stripScheme(p.Value)
		f, hasFormat := o.first("format", "format.type")
		switch {
		case hasFormat && f.Value == "parquet":
			// Parquet files in a directory, published at checkpoints and at
			// the end (Flink's FileSink): the rolling and commit options
			// of Flink's have no other effect.
			s.Type = "parquet"
			s.Path = strings.TrimSuffix(s.Path, "/")
			for _, pc := range t.def.PartitionBy {
				s.PartitionBy = append(s.PartitionBy, pc.Name)
			}
			if c, ok := o.get("parquet.compression"); ok {
				s.Compression = strings.ToLower(c.Value)
			}
			if fs, ok := o.get("sink.rolling-policy.file-size"); ok {
				n, err := byteSize(fs.Value)
				if err != nil {
					return nil, pl.errAt(fs.ValueAt, "'sink.rolling-policy.file-size': %v", err)
				}
				s.RollBytes = n
			}
			o.accept("sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval", "sink.partition-commit.trigger",
				"sink.partition-commit.delay", "sink.partition-commit.policy.kind", "partition.time-extractor.timestamp-pattern")
		case hasFormat && f.Value != "json":
			return nil, pl.errAt(f.ValueAt, "format '%s': a filesystem sink writes JSON lines ('format' = 'json') or Parquet ('format' = 'parquet')", f.Value)
		case strings.HasSuffix(s.Path, "/"):
			return nil, pl.errAt(p.ValueAt, "'path' is a directory: a JSON-lines sink writes one file (give its name: %sresults.jsonl), a Parquet sink a directory ('format' = 'parquet')", s.Path)
		}
		if len(t.def.PartitionBy) > 0 && s.Type != "parquet" {
			return nil, pl.errAt(t.def.PartitionBy[0].At, "PARTITIONED BY needs a partitioned file sink: 'format' = 'parquet' (directories col=value)")
		}
	case "iceberg":
		// Flink's Iceberg connector (a table in a catalog):
		// docs/connectors/iceberg.md.
		if err := pl.icebergSink(t, s); err != nil {
			return nil, err
		}
	case "sqlite":
		s.Type = "sqlite"
		p, ok := o.get("path")
		if !ok {
			return nil, pl.errAt(t.connAt, "a sqlite sink needs 'path' (the database file)")
		}
		s.Path = p.Value
		s.Table = o.value("table-name")
	case "jdbc", "postgres":
		s.Type = "postgres"
		dsn, err := pl.postgresDSN(t)
		if err != nil {
			return nil, err
		}
		s.DSN = dsn
		s.Table = o.value("table-name")
	case "kafka", "upsert-kafka":
		s.Type = "kafka"
		s.Upsert = t.connector == "upsert-kafka"
		tp, ok := o.get("topic")
		if !ok {
			return nil, pl.errAt(t.connAt, "a %s sink needs 'topic'", t.connector)
		}
		s.Topic = tp.Value
		b, ok := o.get("properties.bootstrap.servers")
		if !ok {
			return nil, pl.errAt(t.connAt, "a %s sink needs 'properties.bootstrap.servers'", t.connector)
		}
		s.Brokers = splitList(b.Value)
		s.ClientID = o.value("properties.client.id")
		s.TransactionalID = o.value("sink.transactional-id-prefix")
		if tt, ok := o.get("properties.transaction.timeout.ms"); ok {
			n, err := pl.intOpt(tt)
			if err != nil {
				return nil, err
			}
			s.TransactionTimeout = spec.Duration(time.Duration(n) * time.Millisecond)
		}
		if d, ok := o.get("sink.delivery-guarantee"); ok {
			switch d.Value {
			case "exactly-once":
				s.Delivery = "exactly_once"
			case "at-least-once":
				s.Delivery = "at_least_once"
			default:
				return nil, pl.errAt(d.ValueAt, "'sink.delivery-guarantee' is exactly-once or at-least-once")
			}
		}
		o.accept("key.format")
		if f, ok := o.first("value.format", "format"); ok {
			switch f.Value {
			case "json":
			case "avro-confluent":
				s.Format = "avro"
			case "protobuf-confluent", "protobuf":
				s.Format = "protobuf"
			default:
				return nil, pl.errAt(f.ValueAt, "format '%s': a kafka sink writes json, avro-confluent or protobuf-confluent", f.Value)
			}
			if s.Format != "" {
				u, ok := o.first("value.avro-confluent.url", "avro-confluent.url")
				if !ok {
					return nil, pl.errAt(f.ValueAt, "format '%s' needs the schema registry's 'avro-confluent.url'", f.Value)
				}
				s.SchemaRegistry = &spec.SchemaRegistry{URL: u.Value}
			}
		}
	default:
		return nil, pl.errAt(t.connAt, "connector '%s' is a source; INSERT INTO needs a sink connector (blackhole, print, filesystem, sqlite, jdbc, kafka, upsert-kafka)", t.connector)
	}
	if len(t.def.PartitionBy) > 0 && (s == nil || s.Type != "parquet" && s.Type != "iceberg") {
		return nil, pl.errAt(t.def.PartitionBy[0].At, "PARTITIONED BY needs a partitioned sink: 'connector' = 'filesystem', 'format' = 'parquet' (directories col=value), or 'connector' = 'iceberg'")
	}
	opts := o.prefixed("tidemark.")
	if s == nil && len(opts) > 0 {
		return nil, pl.errAt(opts[0].KeyAt, "a blackhole sink writes nothing: it has no 'tidemark.' keys")
	}
	if s != nil {
		if err := pl.overlay(s, opts, "tidemark."); err != nil {
			return nil, err
		}
	}
	known := append([]string{"connector"}, SinkOptions[t.connector]...)
	if err := pl.checkUnused(o, "a "+t.connector+" sink", known); err != nil {
		return nil, err
	}
	return s, nil
}

// icebergSink reads Flink's Iceberg connector options into s (type
// iceberg): the warehouse directory, the table (catalog-database and
// catalog-table, default the sink table's name), the catalog (hadoop,
// rest, or jdbc — tidemark's sql catalog — by catalog-type or
// catalog-impl; its uri, name and token), PARTITIONED BY terms and the
// write options.
func (pl *planner) icebergSink(t *table, s *spec.Sink) error {
	o := t.opts
	s.Type = "iceberg"
	wh, ok := o.get("warehouse")
	if !ok {
		return pl.errAt(t.connAt, "an iceberg table needs 'warehouse' (the directory its tables' files are written under: file:///var/lib/lake)")
	}
	if strings.Contains(wh.Value, "://") && !strings.HasPrefix(wh.Value, "file://") {
		return pl.errAt(wh.ValueAt, "'warehouse' = '%s': tidemark writes a table's files to a local or mounted directory (file:///…, or a path)", wh.Value)
	}
	s.Path = stripScheme(wh.Value)
	name := t.name
	if ct := o.value("catalog-table"); ct != "" {
		name = ct
	}
	s.Table = name
	if db := o.value("catalog-database"); db != "" {
		s.Table = db + "." + name
	}
	typ := "hadoop"
	if ct, ok := o.get("catalog-type"); ok {
		switch strings.ToLower(ct.Value) {
		case "hadoop":
		case "rest":
			typ = "rest"
		case "jdbc", "sql":
			typ = "sql"
		default:
			return pl.errAt(ct.ValueAt, "'catalog-type' = '%s': tidemark's Iceberg catalogs are hadoop (the table's directory), jdbc (SQLite or PostgreSQL) and rest", ct.Value)
		}
	}
	if ci, ok := o.get("catalog-impl"); ok {
		switch ci.Value {
		case "org.apache.iceberg.jdbc.JdbcCatalog":
			typ = "sql"
		case "org.apache.iceberg.rest.RESTCatalog":
			typ = "rest"
		case "org.apache.iceberg.hadoop.HadoopCatalog":
			typ = "hadoop"
		default:
			return pl.errAt(ci.ValueAt, "'catalog-impl' = '%s': tidemark's Iceberg catalogs are HadoopCatalog, JdbcCatalog and RESTCatalog", ci.Value)
		}
	}
	uri, hasURI := o.get("uri")
	if typ != "hadoop" {
		if !hasURI {
			return pl.errAt(t.connAt, "an iceberg table in a %s catalog needs 'uri' (jdbc:sqlite:/path/catalog.db, jdbc:postgresql://host/db, or the REST catalog's http(s) URL)", map[string]string{"sql": "jdbc", "rest": "rest"}[typ])
		}
		c := &spec.IcebergCatalog{Type: typ, Name: o.value("catalog-name"), Token: o.value("token")}
		switch v := uri.Value; {
		case typ == "rest":
			c.URI = v
		case strings.HasPrefix(v, "jdbc:sqlite:"):
			c.URI = stripScheme(strings.TrimPrefix(v, "jdbc:sqlite:"))
		case strings.HasPrefix(v, "jdbc:postgresql://"):
			c.URI = "postgres://" + strings.TrimPrefix(v, "jdbc:postgresql://")
		case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
			c.URI = v
		default:
			return pl.errAt(uri.ValueAt, "'uri' = '%s': a jdbc catalog is SQLite (jdbc:sqlite:/path/catalog.db) or PostgreSQL (jdbc:postgresql://host:5432/db)", v)
		}
		s.Catalog = c
	} else {
		o.accept("catalog-name")
		if hasURI {
			return pl.errAt(uri.KeyAt, "a hadoop catalog has no 'uri': its tables' metadata is in their directories under 'warehouse'")
		}
	}
	for _, pc := range t.def.PartitionBy {
		s.PartitionBy = append(s.PartitionBy, pc.Name)
	}
	if c, ok := o.get("write.parquet.compression-codec"); ok {
		s.Compression = strings.ToLower(c.Value)
	}
	if rg, ok := o.get("write.parquet.row-group-size-rows"); ok {
		n, err := pl.intOpt(rg)
		if err != nil {
			return err
		}
		s.RowGroupRows = n
	}
	if fs, ok := o.get("write.target-file-size-bytes"); ok {
		n, err := byteSize(fs.Value)
		if err != nil {
			return pl.errAt(fs.ValueAt, "'write.target-file-size-bytes': %v", err)
		}
		s.RollBytes = n
	}
	if fv, ok := o.get("format-version"); ok && strings.TrimSpace(fv.Value) != "2" {
		return pl.errAt(fv.ValueAt, "'format-version' = '%s': tidemark writes Iceberg format version 2", fv.Value)
	}
	return nil
}

// byteSize reads a size in bytes: 128MB, 64 mb, 1048576.
func byteSize(v string) (int64, error) {
	s := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(v), " ", ""))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size (128MB, 1048576)", v)
	}
	return n * mult, nil
}

// postgresDSN makes a pgx connection string from 'url' (jdbc:postgresql://
// or postgres://) and 'username' / 'password', or 'dsn'.
func (pl *planner) postgresDSN(t *table) (string, error) {
	o := t.opts
	if d, ok := o.get("dsn"); ok {
		return d.Value, nil
	}
	u, ok := o.get("url")
	if !ok {
		return "", pl.errAt(t.connAt, "a %s sink needs 'url' (jdbc:postgresql://host:5432/db)", t.connector)
	}
	raw := u.Value
	switch {
	case strings.HasPrefix(raw, "jdbc:postgresql://"):
		raw = "postgres://" + strings.TrimPrefix(raw, "jdbc:postgresql://")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
	default:
		return "", pl.errAt(u.ValueAt, "'url' = '%s': tidemark's SQL sink is PostgreSQL (jdbc:postgresql://…); for an embedded table use 'connector' = 'sqlite'", u.Value)
	}
	o.accept("driver")
	pu, err := url.Parse(raw)
	if err != nil {
		return "", pl.errAt(u.ValueAt, "'url': %v", err)
	}
	user, pass := o.value("username"), o.value("password")
	if user != "" {
		if pass != "" {
			pu.User = url.UserPassword(user, pass)
		} else {
			pu.User = url.User(user)
		}
	}
	return pu.String(), nil
}

// intervalMs is an INTERVAL literal's length in ms (day-time units only).
func (pl *planner) intervalMs(iv *parser.IntervalLit) (int64, error) {
	unit := strings.TrimSuffix(iv.Unit, "S")
	if iv.ToUnit != "" {
		return pl.intervalToMs(iv)
	}
	ms, ok := unitMs[unit]
	if !ok {
		return 0, pl.errAt(iv.At, "INTERVAL … %s has no fixed length: use SECOND, MINUTE, HOUR or DAY", iv.Unit)
	}
	v := strings.TrimSpace(iv.Value)
	neg := iv.Neg
	if s, ok := strings.CutPrefix(v, "-"); ok {
		neg, v = !neg, s
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// SECOND may have a fraction: INTERVAL '1.5' SECOND.
		if unit == "SECOND" {
			if f, ferr := strconv.ParseFloat(v, 64); ferr == nil && f*1000 == float64(int64(f*1000)) {
				ms := int64(f * 1000)
				if neg {
					ms = -ms
				}
				return ms, nil
			}
		}
		return 0, pl.errAt(iv.At, "INTERVAL '%s' %s: the value is a whole number", iv.Value, iv.Unit)
	}
	if neg {
		n = -n
	}
	return n * ms, nil
}

// intervalToMs reads INTERVAL 'd h:m:s' DAY TO SECOND and its kin.
func (pl *planner) intervalToMs(iv *parser.IntervalLit) (int64, error) {
	order := []string{"DAY", "HOUR", "MINUTE", "SECOND"}
	from, to := -1, -1
	for i, u := range order {
		if u == strings.TrimSuffix(iv.Unit, "S") {
			from = i
		}
		if u == iv.ToUnit {
			to = i
		}
	}
	if from < 0 || to <= from {
		return 0, pl.errAt(iv.At, "INTERVAL … %s TO %s is not supported (DAY, HOUR, MINUTE TO a smaller unit are)", iv.Unit, iv.ToUnit)
	}
	fields := strings.FieldsFunc(strings.TrimSpace(iv.Value), func(r rune) bool { return r == ' ' || r == ':' })
	if len(fields) != to-from+1 {
		return 0, pl.errAt(iv.At, "INTERVAL '%s' %s TO %s: want %d parts", iv.Value, iv.Unit, iv.ToUnit, to-from+1)
	}
	var ms int64
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, pl.errAt(iv.At, "INTERVAL '%s': %q is not a whole number", iv.Value, f)
		}
		ms += n * unitMs[order[from+i]]
	}
	if iv.Neg {
		ms = -ms
	}
	return ms, nil
}

func durationOf(ms int64) spec.Duration { return spec.Duration(time.Duration(ms) * time.Millisecond) }

var _ = fmt.Sprint
