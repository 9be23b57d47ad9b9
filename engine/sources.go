package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/source/kafka"
	"github.com/tidemark/tidemark/spec"
)

// openSource opens the source the spec describes: file, kafka or nexmark.
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
		if err := kafkaFormat(&cfg, p); err != nil {
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
	}
	return file.New(file.Config{Spec: *sp, Fields: fields, EventTimeField: p.EventTimeField})
}

// kafkaFormat sets a kafka source's value format: Avro and Protobuf with
// their registry, and the contract's schema versions.
func kafkaFormat(cfg *kafka.Config, p *plan.Plan) error {
	sp := &p.Spec.Source
	if sp.Format != "avro" && sp.Format != "protobuf" {
		return nil
	}
	reg, err := schemaRegistry(sp.SchemaRegistry)
	if err != nil {
		return fmt.Errorf("source.%w", err)
	}
	cfg.Format, cfg.Registry, cfg.Message = sp.Format, reg, sp.Message
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
