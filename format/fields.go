package format

import (
	"strings"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
)

// Fields says what to decode: every field of Schema (by name; nested JSON
// fields are dotted names such as "properties.time"), with its kind. Time
// holds the parser for timestamp fields by Field.Index; a KindTime field
// without an entry is parsed as RFC 3339 with a mandatory offset.
type Fields struct {
	Schema *row.Schema
	Time   map[int]*eventtime.Parser
	// Derived lists the indexes of fields that the caller fills in itself
	// (the file source's ordinal). Decoders leave them null, and NewCSV
	// needs no column for them. Optional.
	Derived []int
}

// rfc3339 is the parser of a timestamp field without an entry in Time.
var rfc3339 = &eventtime.Parser{Format: eventtime.RFC3339}

// plan is one field to decode.
type plan struct {
	f      row.Field
	path   []string            // JSON: Name split at dots
	parser *eventtime.Parser   // KindTime only
	dates  eventtime.DateCache // the field's last date, for parser (each decoder has its own plans)
}

// compile lists the fields of f to decode, in schema order.
func compile(f Fields) []plan {
	if f.Schema == nil {
		return nil
	}
	derived := map[int]bool{}
	for _, i := range f.Derived {
		derived[i] = true
	}
	var out []plan
	for _, fd := range f.Schema.Fields {
		if derived[fd.Index] {
			continue
		}
		p := plan{f: fd, path: strings.Split(fd.Name, ".")}
		if fd.Kind == row.KindTime {
			p.parser = f.Time[fd.Index]
			if p.parser == nil {
				p.parser = rfc3339
			}
		}
		out = append(out, p)
	}
	return out
}

// epoch reports whether p reads numbers (epoch_ms or epoch_s).
func epoch(p *eventtime.Parser) bool {
	return p.Format == eventtime.EpochMs || p.Format == eventtime.EpochS
}
