package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	tavro "github.com/twmb/avro"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/source/kafka"
	"github.com/tidemark/tidemark/spec"
)

// openSource opens the source the spec describes: file, kafka,
// postgres_cdc or nexmark.
func (rt *runtime) openSource() (source.Source, error) {
	p := rt.plan
	sp := &p.Spec.Source
	fields := format.Fields{Schema: p.SourceSchema, Time: p.TimeParsers}
	if r := p.Spec.Reference; r != nil {
		// Reference fields are the runner's to fill, not the decoder's.
		for _, f := range r.Fields {
			if fd, ok := p.SourceSchema.Lookup(f.Name); ok {
				fields.Derived = append(fields.Derived, fd.Index)
			}
		}
	}
	if f := sp.ProcessingTimeField; f != "" {
		// The runner's to fill: the record's processing time.
		if fd, ok := p.SourceSchema.Lookup(f); ok {
			fields.Derived = append(fields.Derived, fd.Index)
		}
	}
	switch sp.Type {
	case "kafka":
		cfg := kafka.Config{
			Brokers:             sp.Brokers,
			Topics:              sp.Topics,
			Group:               sp.Group,
			Start:               sp.Start,
			EventTimeFrom:       p.Spec.EventTime.From,
			Fields:              fields,
			EventTimeField:      p.EventTimeField,
			PollTimeoutMs:       sp.PollTimeout.Ms(),
			DiscoveryIntervalMs: sp.DiscoveryInterval.Ms(),
			ReadUncommitted:     sp.Isolation == "read_uncommitted",
			StopAtEnd:           sp.StopAtEnd,
			ClientID:            sp.ClientID,
		}
		if cfg.EventTimeFrom == "" {
			cfg.EventTimeFrom = kafka.EventTimePayload
		}
		if sp.Format == kafka.FormatDebeziumJSON {
			cfg.Format, cfg.KeyColumns = sp.Format, sp.KeyColumns
		}
		if err := KafkaFormat(&cfg, p); err != nil {
			return nil, err
		}
		if sp.StartTimestamp != "" {
			t, err := time.Parse(time.RFC3339Nano, sp.StartTimestamp)
			if err != nil {
				return nil, fmt.Errorf("source.start_timestamp: %w", err)
			}
			cfg.StartTimestamp = t.UnixMilli()
		}
		return kafka.New(cfg)
	case "nexmark":
		return openNexmark(p, fields)
	case "postgres_cdc":
		return openCDC(p, fields, rt.logf)
	}
	cfg := file.Config{Spec: *sp, Fields: fields, EventTimeField: p.EventTimeField}
	if sp.Format == "avro" {
		proj, err := avroFileVersions(p, fields)
		if err != nil {
			return nil, err
		}
		cfg.AvroProjection = proj
	}
	return file.New(cfg)
}

// avroFileVersions applies a contract's schema versions to Avro files:
// each file's schema is looked up in the contract's subject, and read
// with its version's renames and defaults (quarantined when the contract
// does not accept it). Nil without schema versions.
func avroFileVersions(p *plan.Plan, fields format.Fields) (file.AvroProjection, error) {
	c := p.Contract
	if c == nil || c.SchemaVersions == nil {
		return nil, nil
	}
	sv := c.SchemaVersions
	if sv.Subject == "" {
		return nil, fmt.Errorf("contract %s: schema_versions.subject: required to read Avro files (the default, <topic>-value, names a Kafka topic)", c.Product)
	}
	if p.Spec.Source.SchemaRegistry == nil {
		return nil, fmt.Errorf("source.schema_registry: required: contract %s lists versions of subject %s, and an Avro file's version is found by looking its schema up there", c.Product, sv.Subject)
	}
	reg, err := schemaRegistry(p.Spec.Source.SchemaRegistry)
	if err != nil {
		return nil, fmt.Errorf("source.%w", err)
	}
	vr := &confluent.VersionResolver{Registry: reg, Subject: sv.Subject, Contract: c.Product, Fields: fields, Versions: map[int]confluent.Version{}}
	for v, m := range c.Mappings() {
		vr.Versions[v] = confluent.Version{Rename: m.Rename, Defaults: m.Defaults}
	}
	return func(path, text string, _ *tavro.Schema) (format.Projection, *source.DecodeError, error) {
		_, proj, reject, err := vr.Resolve(context.Background(), "file "+path, text)
		return proj, reject, err
	}, nil
}

// KafkaFormat sets a kafka source's value format: Avro and Protobuf with
// their registry, and the contract's schema versions.
func KafkaFormat(cfg *kafka.Config, p *plan.Plan) error {
	sp := &p.Spec.Source
	if sp.Format != "avro" && sp.Format != "protobuf" && sp.Format != kafka.FormatDebeziumAvro {
		return nil
	}
	cfg.KeyColumns = sp.KeyColumns
	reg, err := schemaRegistry(sp.SchemaRegistry)
	if err != nil {
		return fmt.Errorf("source.%w", err)
	}
	cfg.Format, cfg.Registry, cfg.Message = sp.Format, reg, sp.Message
	cfg.RegistryMaxWaitMs = sp.SchemaRegistry.MaxWait.Ms()
	if c := p.Contract; c != nil && c.SchemaVersions != nil {
		cfg.Contract, cfg.Subject = c.Product, c.SchemaVersions.Subject
		cfg.Versions = map[int]confluent.Version{}
		for v, m := range c.Mappings() {
			cfg.Versions[v] = confluent.Version{Rename: m.Rename, Defaults: m.Defaults}
		}
	}
	return nil
}

// schemaRegistry returns a client of the Schema Registry a spec names.
func schemaRegistry(r *spec.SchemaRegistry) (*confluent.Registry, error) {
	if r == nil {
		return nil, fmt.Errorf("schema_registry: required with format avro or protobuf")
	}
	var urls []string
	for _, u := range strings.Split(r.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return confluent.NewRegistry(confluent.RegistryConfig{URLs: urls, Username: r.Username, Password: r.Password, TimeoutMs: r.Timeout.Ms()})
}

// processingField returns source.processing_time_field's field, Index −1
// without one.
func processingField(p *plan.Plan) row.Field {
	if n := p.Spec.Source.ProcessingTimeField; n != "" {
		if f, ok := p.SourceSchema.Lookup(n); ok {
			return f
		}
	}
	return row.Field{Index: -1}
}
