package engine

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/file"
	"github.com/tidemark/tidemark/source/kafka"
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
