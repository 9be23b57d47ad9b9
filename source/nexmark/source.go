package nexmark

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
)

// Defaults of Config.
const (
	// DefaultRate is the event rate when Config.Rate is 0: 10,000,000
	// events per second of event time, the tps of Flink's nexmark
	// benchmark suite (nexmark.yaml). Beam's and Flink's
	// NexmarkConfiguration default is 10,000.
	DefaultRate = 10_000_000
	// DefaultBaseTime is the event time of event 0 when Config.BaseTime
	// is 0: 2015-07-15T00:00:00Z in ms since the epoch, Beam's
	// NexmarkUtils.BASE_TIME.
	DefaultBaseTime = 1436918400000
	// DefaultDelayFraction is the share of events delivered late when
	// Config.Delay is nil: Beam's probDelayedEvent, 0.1.
	DefaultDelayFraction = 0.1
	// DefaultMaxDelayMs is the longest delivery delay in ms when
	// Config.Delay is nil: Beam's occasionalDelaySec, 3 s.
	DefaultMaxDelayMs = 3000
	// MaxEvents is the length of an unbounded stream (Config.Events 0):
	// Beam's cap, Long.MAX_VALUE / (50 × 500).
	MaxEvents = math.MaxInt64 / (proportions * avgAuctionBytes)
	// MaxRate is the highest Config.Rate, events per second.
	MaxRate = 1_000_000_000
	// MaxDelayMs is the highest Delay.MaxMs: 10 minutes (the source keeps
	// a bucket per ms of delay).
	MaxDelayMs = 600_000
	// SourceName is Meta.Pos.Source of every record.
	SourceName = "nexmark"
)

// Config configures a Nexmark source. The zero value of every field but
// Fields means the reference default.
type Config struct {
	// Fields says which fields to fill: names from Fields(), each with its
	// kind (an int field may also be declared decimal). Fields absent from
	// the schema are not generated at all, and what they would need is
	// not computed. Fields.Derived are left null; Fields.Time is unused.
	Fields format.Fields
	// Events is the number of events; 0 means MaxEvents (unbounded in
	// practice). YAML `events`.
	Events int64
	// Rate is the events per second of event time (Beam's and Flink's
	// firstEventRate): event n happens at BaseTime + n·1000/Rate ms. It
	// does not limit how fast events are produced: the source never
	// waits for the wall clock. 0 means DefaultRate. YAML `rate`.
	Rate int64
	// Seed chooses the event stream. 0 seeds each event's generator with
	// the event id exactly as Beam does, so every Beam field equals
	// Beam's; another value adds a hash of Seed to each id. The delivery
	// delays and the channel URLs are also drawn from Seed. YAML `seed`.
	Seed uint64
	// BaseTime is the event time of event 0, ms since the epoch; 0 means
	// DefaultBaseTime. YAML `base_time` (RFC 3339 in YAML).
	BaseTime int64
	// Delay makes a fraction of the events arrive late; nil means
	// DefaultDelayFraction up to DefaultMaxDelayMs. YAML `delay`.
	Delay *Delay
}

// Delay configures late delivery: the source delivers a seeded Fraction
// of the events between 1 and MaxMs ms after their event time (uniform),
// behind events with a later event time. The event time itself does not
// change.
type Delay struct {
	// Fraction of events delayed, from 0 (none) to 1. YAML
	// `delay.fraction`.
	Fraction float64
	// MaxMs is the longest delay in ms, at least 1 when Fraction > 0.
	// YAML `delay.max` (a Go duration).
	MaxMs int64
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("nexmark source is closed")

// Source generates Nexmark events. It implements source.Source and
// source.Resumable; see the package documentation. It is not safe for
// concurrent use.
type Source struct {
	schema    *row.Schema
	g         gen
	o         *order
	dl        delays // o's, copied: Decode reads it on the decoders
	delivered int64  // records returned by Next
	last      int64  // id of the last record returned, -1 before the first
	shut      bool

	urlKey int64 // seeds the channel URLs

	// EventJSON's generator of every field: its plan, URLs and schema are
	// built on first use (once) and never change; each call takes its own
	// scratch (generator state, arena, row) from the pool.
	fullOnce sync.Once
	full     gen
	fullAll  *row.Schema
	scratch  sync.Pool // *jsonScratch

	// gens are Decode's generators, one per goroutine at a time: copies
	// of g sharing its plan and tables, each with its own event values.
	gens sync.Pool // *gen
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Resumable = (*Source)(nil)
	_ source.Splitter  = (*Source)(nil)
)

// New checks the configuration and returns the source. Errors name the
// configuration key at fault (source.events, source.rate,
// source.delay.fraction, source.delay.max, source.base_time,
// source.schema).
func New(cfg Config) (*Source, error) {
	if cfg.Fields.Schema == nil {
		return nil, errors.New("nexmark source: Fields.Schema is nil")
	}
	p, err := newPlan(cfg.Fields.Schema, cfg.Fields.Derived)
	if err != nil {
		return nil, err
	}
	n := cfg.Events
	switch {
	case n < 0:
		return nil, fmt.Errorf("source.events: %d is negative (0 means unbounded)", n)
	case n > MaxEvents:
		return nil, fmt.Errorf("source.events: %d is above the maximum %d", n, MaxEvents)
	case n == 0:
		n = MaxEvents
	}
	rate := cfg.Rate
	switch {
	case rate < 0:
		return nil, fmt.Errorf("source.rate: %d events/s is negative (0 means %d)", rate, DefaultRate)
	case rate == 0:
		rate = DefaultRate
	case rate > MaxRate:
		return nil, fmt.Errorf("source.rate: %d events/s is above the maximum %d", rate, MaxRate)
	}
	base := cfg.BaseTime
	if base == 0 {
		base = DefaultBaseTime
	}
	clk := clock{base: base, rate: rate}
	if base < -(1<<60) || clk.at(n) > 1<<60 {
		return nil, fmt.Errorf("source.base_time: %d ms puts event times out of range", base)
	}
	d := Delay{Fraction: DefaultDelayFraction, MaxMs: DefaultMaxDelayMs}
	if cfg.Delay != nil {
		d = *cfg.Delay
	}
	switch {
	case !(d.Fraction >= 0 && d.Fraction <= 1):
		return nil, fmt.Errorf("source.delay.fraction: %v is not between 0 and 1", d.Fraction)
	case d.Fraction > 0 && d.MaxMs < 1:
		return nil, fmt.Errorf("source.delay.max: %d ms; a delay needs at least 1 ms", d.MaxMs)
	case d.Fraction > 0 && d.MaxMs > MaxDelayMs:
		return nil, fmt.Errorf("source.delay.max: %d ms is above the maximum %d (10m)", d.MaxMs, MaxDelayMs)
	case d.Fraction > 0 && float64(rate)*float64(d.MaxMs+1)/1000 >= 1<<31:
		return nil, fmt.Errorf("source.delay.max: %d ms at %d events/s holds more than 2^31 events back; lower one of them", d.MaxMs, rate)
	}
	if d.Fraction == 0 {
		d.MaxMs = 0
	}
	s := &Source{schema: cfg.Fields.Schema, last: -1, urlKey: urlKey(cfg.Seed)}
	s.g = gen{p: p, clk: clk, seedOff: seedOffset(cfg.Seed)}
	if p.on(aBidURL) {
		s.g.urls = newURLTable(s.urlKey)
	}
	if p.on(aBidChannel) {
		s.g.chans = channelNames()
	}
	s.o = newOrder(n, clk, d.Fraction, d.MaxMs, mix64(cfg.Seed^0x6E65786D61726B31)) // "nexmark1"
	s.dl = s.o.delays
	return s, nil
}

// seedOffset is what Seed adds to an event id to seed its generator.
func seedOffset(seed uint64) int64 {
	if seed == 0 {
		return 0
	}
	return int64(mix64(seed))
}

// urlKey seeds the channel URLs.
func urlKey(seed uint64) int64 { return int64(mix64(seed^0x75726C73) & jMask) } // "urls"

// Partitions returns the one partition "0".
func (s *Source) Partitions() []string { return partitions }

var partitions = []string{"0"}

// Next appends up to max events (at least one) to b, in delivery order.
// It returns source.End, possibly with events, once a bounded stream has
// given its count of events,
// and ErrClosed after Close. Strings are in b's arena: they stay valid
// until b is Reset.
// Meta.Pos is {Source: "nexmark", Offset: event id}; Meta.Arrival is the
// delivery time (the event time, plus the delay of a delayed event);
// Meta.Raw is nil (EventJSON rebuilds the event from its id).
func (s *Source) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	if err := s.ready(ctx); err != nil {
		return source.More, err
	}
	if max < 1 {
		max = 1
	}
	s.g.arena = b.Arena()
	for range max {
		id, t, at, ok := s.o.next()
		if !ok {
			return source.End, nil
		}
		r, m := b.Next(s.schema)
		s.g.fill(r, id, t)
		m.Arrival = at
		m.Pos = changelog.Position{Source: SourceName, Offset: id}
		s.delivered++
		s.last = id
	}
	return s.status(), nil
}

// ready returns ErrClosed after Close, else ctx's error.
func (s *Source) ready(ctx context.Context) error {
	if s.shut {
		return ErrClosed
	}
	return ctx.Err()
}

// status is what Next and Claim return after delivering: End once every
// event is generated and none is held back.
func (s *Source) status() source.Status {
	if s.o.gen >= s.o.n && s.o.held == 0 {
		return source.End
	}
	return source.More
}

// Splits implements source.Splitter: always, since an event is
// generated from its id alone (Beam's generator seeds each event by its
// id, which is how its own generator splits a stream into event-number
// ranges for parallel readers).
func (s *Source) Splits() bool { return true }

// Claim implements source.Splitter: the next up to max events in
// delivery order, described in b.Spans (order.claim: ranges of on-time
// ids and the delayed events one by one), which Decode turns into the
// events, metas and rows, those Next would have delivered. It returns
// what Next would. Its cost is a delay hash per event and a little per
// delayed event, not a meta per event: the rest is Decode's, on any
// goroutine.
func (s *Source) Claim(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	if err := s.ready(ctx); err != nil {
		return source.More, err
	}
	if max < 1 {
		max = 1
	}
	spans, k, last := s.o.claim(max, b.Spans[:0])
	b.Spans = spans
	if k > 0 {
		s.delivered += int64(k)
		s.last = last
	}
	return s.status(), nil // End when fewer than max: the stream ended
}

// Decode implements source.Splitter: it appends to b the events Claim
// described in b.Spans, in that order — the on-time events of each
// range of ids (those the delay hash does not delay, delivered at their
// event time) and each delayed event (delivered at its span's At) —
// with their metas (Pos.Offset the event id, Arrival the delivery time)
// and rows generated from their ids (the event time of event id is
// clk.at(id), delayed or not), their strings into b's arena. Safe for
// concurrent use.
func (s *Source) Decode(b *source.Batch) {
	g, _ := s.gens.Get().(*gen)
	if g == nil {
		g = &gen{p: s.g.p, clk: s.g.clk, seedOff: s.g.seedOff, urls: s.g.urls, chans: s.g.chans}
	}
	g.arena = b.Arena()
	dl := &s.dl
	for _, sp := range b.Spans {
		if sp.At != onTime {
			s.decodeOne(g, b, sp.Lo, sp.At)
			continue
		}
		for id := sp.Lo; id < sp.Hi; id++ {
			if dl.thresh != 0 && dl.delay(id) != 0 {
				continue
			}
			s.decodeOne(g, b, id, g.clk.at(id))
		}
	}
	g.arena = nil
	s.gens.Put(g)
}

// decodeOne appends event id, delivered at at, to b.
func (s *Source) decodeOne(g *gen, b *source.Batch, id, at int64) {
	r, m := b.Next(s.schema)
	g.fill(r, id, g.clk.at(id))
	m.Arrival = at
	m.Pos = changelog.Position{Source: SourceName, Offset: id}
}

// Position implements source.Resumable: the number of events delivered
// and the id of the last one.
func (s *Source) Position() []byte {
	var e state.Encoder
	e.Byte(1)
	e.Uint(uint64(s.delivered))
	e.Int(s.last)
	return e.Bytes()
}

// Seek implements source.Resumable on a source that has delivered
// nothing: the next event is the one after pos. It does not replay the
// stream: events are generated from their ids, and the delivery state is
// rebuilt from the events of the last max-delay window (about 3 s of
// event time; 30M hashes at 10M events/s, under a second). Errors: pos
// does not parse, the source has delivered events, or pos does not fit
// this configuration (the seed, rate, events or delay changed since).
func (s *Source) Seek(ctx context.Context, pos []byte) error {
	d := state.NewDecoder(pos)
	d.Section("nexmark source position", 1)
	delivered := int64(d.Uint())
	last := d.Int()
	if err := d.Err(); err != nil {
		return err
	}
	if s.delivered != 0 {
		return fmt.Errorf("nexmark source: seek after %d events were delivered", s.delivered)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if last < 0 {
		if delivered != 0 {
			return fmt.Errorf("nexmark source: invalid position (%d events, none last)", delivered)
		}
		return nil
	}
	got, err := s.o.seek(last)
	if err != nil {
		return err
	}
	if got != delivered {
		return fmt.Errorf("nexmark source: the checkpoint delivered %d events up to event %d, this configuration %d: the seed, rate or delay changed since", delivered, last, got)
	}
	s.delivered, s.last = delivered, last
	return nil
}

// Close stops the source: Next returns ErrClosed afterwards.
func (s *Source) Close() error {
	s.shut = true
	return nil
}

// Progress reports the events delivered of the events configured.
func (s *Source) Progress() (done, total int64) { return s.delivered, s.o.n }
