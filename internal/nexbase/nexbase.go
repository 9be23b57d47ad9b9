// Package nexbase holds hand-written Go loops that compute the Nexmark
// queries of examples/nexmark on the events of the Nexmark generator
// (source/nexmark), with plain maps and slices and no engine code: the
// practical limit that `tidemark bench --vs-baseline` compares the engine
// with.
//
// Each loop reads the generator through its public API (nexmark.New and
// Next, in batches of 1,024, with the fields its query's pipeline file
// reads), keeps a watermark as the engine does (the largest event time
// delivered minus Config.OutOfOrdernessMs, over every event, bids or
// not), emits a window's rows once the watermark reaches its end, and
// frees its state. At the end of the input every open window is emitted.
// With the generator's defaults (10 % of events delivered up to 3 s late)
// and the query files' 4 s out-of-orderness no event is late, so the
// results equal a batch computation over all events; a loop drops the
// updates of windows it has already emitted, as the engine does with
// allowed_lateness 0.
//
// Rows go to an optional callback; the row and its strings are valid only
// during the call. Without a callback the row is still built and counted.
package nexbase

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
)

// Config configures a baseline run.
type Config struct {
	// Source configures the generator as a pipeline's source section
	// does (events, rate, seed, base time, delay); each query sets Fields.
	Source nexmark.Config
	// OutOfOrdernessMs is how far the watermark trails the largest event
	// time delivered, in ms (4,000 in the query files, Flink's DDL).
	OutOfOrdernessMs int64
	// SideInput is the path of q13's side input file (CSV: key, value,
	// valid_from in seconds), taken from the pipeline's input named
	// side_input; empty when there is none.
	SideInput string
}

// FromSpec returns the Config of a pipeline with a nexmark source: its
// source keys and event_time.out_of_orderness. The pipeline needs no
// defaults applied.
func FromSpec(p *spec.Pipeline) (Config, error) {
	sp := &p.Source
	if sp.Type != "nexmark" {
		return Config{}, fmt.Errorf("source.type is %q; a baseline needs a nexmark source", sp.Type)
	}
	cfg := Config{
		Source:           nexmark.Config{Events: sp.Events, Rate: sp.Rate, Seed: sp.Seed},
		OutOfOrdernessMs: p.EventTime.OutOfOrderness.Ms(),
	}
	if sp.BaseTime != "" {
		t, err := time.Parse(time.RFC3339Nano, sp.BaseTime)
		if err != nil {
			return Config{}, fmt.Errorf("source.base_time: %w", err)
		}
		cfg.Source.BaseTime = t.UnixMilli()
	}
	for i := range p.Inputs {
		if in := &p.Inputs[i]; in.Name == "side_input" && in.Source.Type == "file" {
			cfg.SideInput = in.Source.Path
		}
	}
	if d := sp.Delay; d != nil {
		cfg.Source.Delay = &nexmark.Delay{Fraction: d.Fraction, MaxMs: d.Max.Ms()}
	}
	return cfg, nil
}

// Stats reports a baseline run.
type Stats struct {
	Events int64 // events delivered by the generator
	Rows   int64 // result rows emitted
}

// inf is the watermark at the end of the input: every window is due.
const inf = int64(1<<63 - 1)

// reader delivers the generator's events with the slots of the fields a
// query reads.
type reader struct {
	src    *nexmark.Source
	schema *row.Schema
	b      source.Batch
	done   bool
	events int64
}

// open starts the generator with the named fields (event_type and
// date_time first, then the query's).
func open(cfg Config, names ...string) (*reader, error) {
	s, err := nexmark.NewSchema(names...)
	if err != nil {
		return nil, err
	}
	c := cfg.Source
	c.Fields = format.Fields{Schema: s}
	src, err := nexmark.New(c)
	if err != nil {
		return nil, err
	}
	return &reader{src: src, schema: s}, nil
}

// slot returns the slot of field name (I, D or S by its kind).
func (r *reader) slot(name string) int {
	f, ok := r.schema.Lookup(name)
	if !ok {
		panic("nexbase: no field " + name)
	}
	return f.Slot
}

// next returns the next batch of rows, or nil at the end of the input.
func (r *reader) next(ctx context.Context) ([]row.Row, error) {
	if r.done {
		return nil, nil
	}
	r.b.Reset()
	st, err := r.src.Next(ctx, &r.b, 1024)
	if err != nil {
		return nil, err
	}
	r.done = st == source.End
	r.events += int64(len(r.b.Rows))
	return r.b.Rows, nil
}

// floorDiv rounds t down to a multiple of m (m > 0), also for negative t.
func floorDiv(t, m int64) int64 {
	q := t / m
	if t%m < 0 {
		q--
	}
	return q * m
}
