package cli

import (
	"context"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/spec"
)

// blackholeType is the sink type tidemark bench writes every output to:
// it counts rows and records and keeps nothing (Nexmark's blackhole sink).
const blackholeType = "blackhole"

// blackhole is the discarding sink: it counts what it receives.
type blackhole struct{ rows *int64 }

func (b *blackhole) Write(_ context.Context, rows []changelog.Row) error {
	*b.rows += int64(len(rows))
	return nil
}

func (b *blackhole) WriteRecord(context.Context, []byte) error { *b.rows++; return nil }

func (b *blackhole) Flush(context.Context) error { return nil }

func (b *blackhole) Close(context.Context) error { return nil }

// blackholeSinks points every sink of p at the blackhole (adding one to
// each last stage without sinks, one that no other stage reads) and turns
// checkpoints off; with keepResults, the result sinks and checkpoints stay
// and only the side outputs go to the blackhole. It returns the counter of
// result rows the blackhole sinks receive.
func blackholeSinks(p *spec.Pipeline, keepResults bool) *int64 {
	rows := new(int64)
	bh := func() *spec.Sink {
		if keepResults {
			// The blackhole keeps nothing, so it takes no part in the
			// checkpoints the run keeps.
			return &spec.Sink{Type: blackholeType, Delivery: "at_least_once"}
		}
		return &spec.Sink{Type: blackholeType}
	}
	results := func(s []spec.Sink, leaf bool) []spec.Sink {
		if keepResults {
			return s
		}
		n := len(s)
		if n == 0 && leaf {
			n = 1
		}
		out := make([]spec.Sink, n)
		for i := range out {
			out[i] = *bh()
		}
		return out
	}
	if !keepResults {
		p.Checkpoint = nil
	}
	if p.Quarantine.Sink != nil {
		p.Quarantine.Sink = bh()
	}
	if p.Conflicts.Sink != nil {
		p.Conflicts.Sink = bh()
	}
	if len(p.Stages) == 0 {
		p.Sinks = results(p.Sinks, true)
		if p.Late.Sink != nil {
			p.Late.Sink = bh()
		}
		return rows
	}
	read := map[string]bool{}
	for i, s := range p.Stages {
		switch {
		case s.Input != "":
			read[s.Input] = true
		case i > 0:
			read[p.Stages[i-1].Name] = true
		}
	}
	for i := range p.Stages {
		s := &p.Stages[i]
		s.Sinks = results(s.Sinks, !read[s.Name])
		if s.Late.Sink != nil {
			s.Late.Sink = bh()
		}
	}
	return rows
}
