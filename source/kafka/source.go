package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/source"
)

// Start positions (Config.Start).
const (
	StartEarliest  = "earliest"
	StartLatest    = "latest"
	StartTimestamp = "timestamp"
)

// Event-time origins (Config.EventTimeFrom).
const (
	EventTimePayload        = "payload"
	EventTimeKafkaTimestamp = "kafka_timestamp"
)

// Defaults of the Config fields in ms.
const (
	DefaultPollTimeoutMs       = 500
	DefaultFetchMaxWaitMs      = 500
	DefaultDiscoveryIntervalMs = 10_000
	DefaultRequestTimeoutMs    = 10_000
)

// Config configures a Kafka source. Durations are in ms; a zero duration
// takes its default.
type Config struct {
	// Brokers are the seed brokers, "host:port". Required.
	Brokers []string
	// Topics to read, every partition of each. Required; each must exist
	// when the source opens.
	Topics []string
	// Group, when not empty, is the consumer group that receives the
	// offsets of each completed checkpoint, for lag monitoring only: the
	// source never joins it and never reads its offsets.
	Group string
	// Start says where a partition is read from when there is no
	// checkpoint: StartEarliest (default: the log start offset),
	// StartLatest (the high watermark when the source opens: only records
	// produced afterwards) or StartTimestamp (the first record whose
	// timestamp is at or after StartTimestamp). Partitions discovered
	// after the source opened are read from their log start.
	Start string
	// StartTimestamp is the time, in ms since the epoch, that Start
	// "timestamp" reads from. Unused otherwise.
	StartTimestamp int64
	// EventTimeFrom is EventTimePayload (default: the EventTimeField of
	// the decoded value) or EventTimeKafkaTimestamp (the record's
	// timestamp in ms is written to the EventTimeField slot).
	EventTimeFrom string
	// Fields says what to decode from each record's value, a JSON object
	// (format.JSON). With EventTimeKafkaTimestamp it must hold
	// EventTimeField, which the decoder then skips.
	Fields format.Fields
	// EventTimeField names the event-time field (row.KindTime). Required
	// with EventTimeKafkaTimestamp; optional otherwise.
	EventTimeField string
	// PollTimeoutMs bounds how long Next waits for records when none are
	// buffered before it returns an empty batch. Default 500.
	PollTimeoutMs int64
	// FetchMaxWaitMs is how long a broker may hold a fetch request open
	// waiting for data (fetch.max.wait.ms). Default 500, and never more
	// than PollTimeoutMs.
	FetchMaxWaitMs int64
	// DiscoveryIntervalMs is how often Next refreshes topic metadata to
	// find new partitions and end offsets. Default 10,000.
	DiscoveryIntervalMs int64
	// RequestTimeoutMs bounds each metadata, ListOffsets and OffsetCommit
	// request the source makes itself. Default 10,000.
	RequestTimeoutMs int64
	// ReadUncommitted reads records of open and aborted transactions too
	// (isolation.level=read_uncommitted). Default false: read_committed.
	ReadUncommitted bool
	// StopAtEnd makes the source bounded: when it opens it lists the end
	// offset of every partition (the last stable offset under
	// read_committed, else the high watermark), delivers the records
	// before them and then says source.End. Partitions created later are
	// not read. A resumed run (Seek) lists the ends when it opens. Default
	// false: unbounded.
	StopAtEnd bool
	// ClientID names the client to the brokers. Default "tidemark".
	ClientID string
	// Clock returns the current time; it schedules discovery. Default
	// time.Now.
	Clock func() time.Time
	// ClientOptions are appended to the franz-go client's options (TLS,
	// SASL, a logger ...).
	ClientOptions []kgo.Opt

	// Format of the record values: FormatJSON (default, "" too),
	// confluent.FormatAvro or confluent.FormatProtobuf (the Confluent
	// wire format; see the package documentation).
	Format string
	// Registry holds the writers' schemas. Required with Avro and
	// Protobuf.
	Registry *confluent.Registry
	// Message, with Protobuf, is the message type every record must be
	// (confluent.DecoderConfig.Message). Default: any.
	Message string
	// Versions, when not nil, are the versions of each topic's subject
	// "<topic>-value" that the data contract accepts, and how each maps
	// onto Fields; a record of another schema is quarantined (Rule
	// "schema_version"). Nil accepts every schema.
	Versions map[int]confluent.Version
	// Contract names the contract of Versions, in reasons.
	Contract string
	// KeyColumns, with a Debezium format, are the columns identifying a
	// row (source.key_columns). Required with those formats.
	KeyColumns []string
	// Subject is the registry subject whose versions Versions lists.
	// Default "<topic>-value" for each topic (TopicNameStrategy).
	Subject string
	// RegistryMaxWaitMs bounds how long records wait for a Registry that
	// cannot be reached (a connection refused, reset or closed, a
	// timeout, an HTTP 5xx): the records are held, not quarantined, and
	// asked about again (after 100 ms, doubling up to 2 s); once they
	// have waited this long, Next fails with a *RegistryWaitError naming
	// the registry. Default 300,000 (5 minutes).
	RegistryMaxWaitMs int64
}

// DefaultRegistryMaxWaitMs is Config.RegistryMaxWaitMs's default (5
// minutes): long enough for a registry's restart or failover, short
// enough that a run whose registry is gone says so the same day.
const DefaultRegistryMaxWaitMs = 300_000

// Config.Format values: JSON objects, and Debezium change events in JSON
// or in Avro through the registry (package format/debezium).
const (
	FormatJSON         = "json"
	FormatDebeziumJSON = "debezium_json"
	FormatDebeziumAvro = "debezium_avro"
)

// ErrClosed is returned by Next, Seek and CommitOffsets after Close.
var ErrClosed = errors.New("kafka source is closed")

// Source reads records from Kafka topics. It implements source.Source and
// source.Resumable; see the package documentation for its behavior. It is
// not safe for concurrent use, except Lag and Stats, which may be called
// from any goroutine.
type Source struct {
	cfg   Config
	poll  time.Duration
	every time.Duration
	reqTO time.Duration
	clock func() time.Time
	dec   *RecordDecoder

	// Records fetched but not delivered: the first could not be judged
	// (a schema registry that cannot be reached), and every record
	// fetched after it waits behind it, in fetch order.
	held     []heldRecord
	waitFrom time.Time // when the held records began to wait
	retryAt  time.Time // the next attempt
	attempts int       // failed attempts since waitFrom
	maxWait  time.Duration

	cl  *kgo.Client
	adm *kadm.Client

	parts  []part
	names  []string
	index  map[tp]int
	topics map[string]bool

	opened     bool
	delivered  int64
	closed     bool
	discoverAt time.Time
	commit     kadm.Offsets // offsets of the last Position, not yet committed to Group

	mu    sync.Mutex // guards lag, stats and wait
	lag   []int64
	stats Stats
	wait  *source.Wait // the records' wait on the registry, nil when none
}

// heldRecord is a fetched record not delivered yet, of partition i.
type heldRecord struct {
	i   int
	rec *kgo.Record
}

// tp names a Kafka partition.
type tp struct {
	topic string
	p     int32
}

// part is one Kafka partition the source reads.
type part struct {
	topic string
	num   int32
	pnum  string // the partition number as text, for Meta.Pos
	next  int64  // offset of the next record to deliver
	end   int64  // the newest end offset known, -1 before any
	stop  int64  // StopAtEnd: the end offset when the source opened
}

// Stats are the source's counters and last non-fatal errors.
type Stats struct {
	// DataLoss counts partitions reset because their next offset was
	// no longer in the log (retention or truncation): records were
	// skipped.
	DataLoss int64
	// CommitErr is the last error of committing offsets to Group, nil
	// after a success.
	CommitErr error
	// DiscoveryErr is the last error of refreshing partitions and end
	// offsets, nil after a success.
	DiscoveryErr error
}

var (
	_ source.Source           = (*Source)(nil)
	_ source.Resumable        = (*Source)(nil)
	_ source.PartialResumable = (*Source)(nil)
)

// New checks cfg and returns a source; it does no IO (the first Next or
// Seek connects). Errors name the setting: no brokers or topics, an
// unknown Start or EventTimeFrom, a negative duration, a nil
// Fields.Schema, an EventTimeField missing from it or not a timestamp
// field, or a franz-go option franz-go refuses.
func New(cfg Config) (*Source, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("source.brokers: required for a kafka source")
	}
	if len(cfg.Topics) == 0 {
		return nil, errors.New("source.topics: required for a kafka source")
	}
	topics := map[string]bool{}
	for _, t := range cfg.Topics {
		if t == "" {
			return nil, errors.New("source.topics: empty topic name")
		}
		if topics[t] {
			return nil, fmt.Errorf("source.topics: %q listed twice", t)
		}
		topics[t] = true
	}
	switch cfg.Start {
	case "":
		cfg.Start = StartEarliest
	case StartEarliest, StartLatest, StartTimestamp:
	default:
		return nil, fmt.Errorf("source.start: %q: want earliest, latest or timestamp", cfg.Start)
	}
	switch cfg.EventTimeFrom {
	case "":
		cfg.EventTimeFrom = EventTimePayload
	case EventTimePayload, EventTimeKafkaTimestamp:
	default:
		return nil, fmt.Errorf("event_time.from: %q: want payload or kafka_timestamp", cfg.EventTimeFrom)
	}
	if cfg.Fields.Schema == nil {
		return nil, errors.New("kafka source: Fields.Schema is nil")
	}
	for _, d := range []struct {
		key string
		v   *int64
		def int64
	}{
		{"poll_timeout", &cfg.PollTimeoutMs, DefaultPollTimeoutMs},
		{"fetch_max_wait", &cfg.FetchMaxWaitMs, DefaultFetchMaxWaitMs},
		{"discovery_interval", &cfg.DiscoveryIntervalMs, DefaultDiscoveryIntervalMs},
		{"request_timeout", &cfg.RequestTimeoutMs, DefaultRequestTimeoutMs},
		{"schema_registry.max_wait", &cfg.RegistryMaxWaitMs, DefaultRegistryMaxWaitMs},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("source.%s: %d ms is negative", d.key, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	cfg.FetchMaxWaitMs = min(cfg.FetchMaxWaitMs, cfg.PollTimeoutMs)
	if cfg.ClientID == "" {
		cfg.ClientID = "tidemark"
	}
	d, err := NewRecordDecoder(cfg)
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg:     cfg,
		poll:    time.Duration(cfg.PollTimeoutMs) * time.Millisecond,
		every:   time.Duration(cfg.DiscoveryIntervalMs) * time.Millisecond,
		reqTO:   time.Duration(cfg.RequestTimeoutMs) * time.Millisecond,
		clock:   cfg.Clock,
		dec:     d,
		maxWait: time.Duration(cfg.RegistryMaxWaitMs) * time.Millisecond,
		index:   map[tp]int{},
		topics:  topics,
	}
	if s.clock == nil {
		s.clock = time.Now
	}

	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.FetchMaxWait(time.Duration(cfg.FetchMaxWaitMs) * time.Millisecond),
		kgo.KeepControlRecords(),
		// A partition found by discovery is read once franz-go's metadata
		// knows it; its refreshes are at most this frequent.
		kgo.MetadataMinAge(min(5*time.Second, time.Duration(cfg.DiscoveryIntervalMs)*time.Millisecond)),
		// An offset no longer in the log (retention) restarts at the log
		// start; franz-go reports it as data loss.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if !cfg.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	opts = append(opts, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: %w", err)
	}
	s.cl = cl
	s.adm = kadm.NewClient(cl)
	s.adm.SetTimeoutMillis(int32(min(cfg.RequestTimeoutMs, 1<<30)))
	return s, nil
}

// Partitions returns the names ("topic/N") of the partitions known so
// far, in index order. The list only grows.
func (s *Source) Partitions() []string { return s.names }

// Next appends up to max records to b, waiting at most PollTimeoutMs for
// some; it returns More with no record when none came. It returns
// source.End (possibly with records) only with StopAtEnd, once every
// partition is read up to its end offset: the offsets, never an error,
// say the input ended (a registry or fetch failure wrapping io.EOF is a
// failure). Errors: ctx's error, ErrClosed, a
// topic missing when the source opens, a starting offset that cannot be
// listed, a fetch error franz-go does not retry (authorization, a
// deleted topic), and a *RegistryWaitError once records have waited
// RegistryMaxWaitMs for a registry that cannot be reached (until then
// Next returns the records before them and holds the others: see
// Waiting). A record whose value does not decode is not an error: it
// carries Meta.Err.
func (s *Source) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	if s.closed {
		return source.More, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	if !s.opened {
		if err := s.open(ctx, nil); err != nil {
			return source.More, err
		}
	}
	if s.atEnd() {
		return source.End, nil
	}
	if now := s.clock(); !now.Before(s.discoverAt) {
		s.discoverAt = now.Add(s.every)
		s.discover(ctx)
	}
	if s.commit != nil {
		s.commitGroup(ctx)
	}
	if max < 1 {
		max = 1
	}
	if len(s.held) > 0 {
		return s.retryHeld(ctx, b)
	}
	pctx, cancel := context.WithTimeout(ctx, s.poll)
	fs := s.cl.PollRecords(pctx, max)
	cancel()
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	if err := s.fetchErrors(fs); err != nil {
		return source.More, err
	}
	n := len(b.Meta)
	asked := time.Now()
	var refused error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		i, ok := s.index[tp{p.Topic, p.Partition}]
		if !ok { // not asked for: cannot happen with a direct consumer
			return
		}
		s.observeEnd(i, p.HighWatermark, p.LastStableOffset)
		for _, rec := range p.Records {
			if len(s.held) > 0 {
				// Behind a record the registry could not judge: every
				// record fetched after it waits too, so that no
				// partition's position passes a record not delivered.
				s.held = append(s.held, heldRecord{i, rec})
				continue
			}
			if err := s.deliver(ctx, i, rec, b); err != nil {
				s.held = append(s.held, heldRecord{i, rec})
				if !confluent.Unreachable(err) {
					refused = err
					continue
				}
				s.failed(err, asked)
			}
		}
	})
	s.delivered += int64(len(b.Meta) - n)
	s.updateLag()
	if refused != nil {
		// The registry answered, refusing (credentials, a bad request):
		// waiting would not change its answer.
		return source.More, refused
	}
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	if len(s.held) > 0 {
		return source.More, nil
	}
	if s.atEnd() {
		return source.End, nil
	}
	return source.More, nil
}

// atEnd reports whether a StopAtEnd source has read every partition up to
// its stop offset.
func (s *Source) atEnd() bool {
	if !s.cfg.StopAtEnd {
		return false
	}
	for i := range s.parts {
		if s.parts[i].next < s.parts[i].stop {
			return false
		}
	}
	return true
}

// fetchErrors returns the first fatal error of a poll. The poll's own
// timeout is not one; data loss is counted and reading goes on.
func (s *Source) fetchErrors(fs kgo.Fetches) error {
	for _, fe := range fs.Errors() {
		var loss *kgo.ErrDataLoss
		switch {
		case errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, context.Canceled):
		case errors.As(fe.Err, &loss):
			s.mu.Lock()
			s.stats.DataLoss++
			s.mu.Unlock()
		case errors.Is(fe.Err, kgo.ErrClientClosed):
			return ErrClosed
		default:
			if fe.Topic == "" {
				return fmt.Errorf("kafka source: %w", fe.Err)
			}
			return fmt.Errorf("kafka source: topic %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
		}
	}
	return nil
}

// deliver appends rec, read from partition i, to b; a transaction marker
// only advances the position. It returns the decoder's error, appending
// nothing and leaving the position before rec, when the record cannot be
// judged (a registry that cannot be reached).
func (s *Source) deliver(ctx context.Context, i int, rec *kgo.Record, b *source.Batch) error {
	p := &s.parts[i]
	if rec.Offset < p.next {
		return nil // already delivered (never expected from franz-go)
	}
	if s.cfg.StopAtEnd && rec.Offset >= p.stop {
		return nil // after the end of a bounded read
	}
	if rec.Attrs.IsControl() {
		p.next = rec.Offset + 1
		return nil
	}
	if err := s.dec.Append(ctx, rec, i, b); err != nil {
		return err
	}
	p.next = rec.Offset + 1
	return nil
}

// Retries of a registry that cannot be reached: the first after
// registryRetryMin, doubling up to registryRetryMax.
const (
	registryRetryMin = 100 * time.Millisecond
	registryRetryMax = 2 * time.Second
)

// failed notes a failed attempt, begun at asked, to judge the first held
// record: the wait begins (or goes on) and the next attempt is
// scheduled.
func (s *Source) failed(err error, asked time.Time) {
	now := time.Now()
	if s.attempts == 0 {
		s.waitFrom = asked
	}
	s.attempts++
	delay := registryRetryMin << min(s.attempts-1, 5)
	s.retryAt = now.Add(min(delay, registryRetryMax))
	h := s.held[0]
	p := &s.parts[h.i]
	w := &source.Wait{
		Service:  "schema registry " + s.cfg.Registry.URL(),
		Since:    s.waitFrom,
		Attempts: s.attempts,
		Err:      err.Error(),
		Records:  fmt.Sprintf("%s/%d from offset %d", p.topic, p.num, h.rec.Offset),
		Limit:    s.maxWait,
	}
	s.mu.Lock()
	s.wait = w
	s.mu.Unlock()
}

// retryHeld delivers the held records once the registry answers: it
// waits for the next attempt (at most PollTimeoutMs: Next returns with
// no record meanwhile, so that the run goes on taking checkpoints and
// reporting), then asks again. It fails with a *RegistryWaitError when
// the records have waited RegistryMaxWaitMs.
func (s *Source) retryHeld(ctx context.Context, b *source.Batch) (source.Status, error) {
	if d := time.Until(s.retryAt); d > 0 {
		t := time.NewTimer(min(d, s.poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return source.More, ctx.Err()
		case <-t.C:
		}
		if time.Until(s.retryAt) > 0 {
			return source.More, nil
		}
	}
	n := len(b.Meta)
	k := 0
	for ; k < len(s.held); k++ {
		h := s.held[k]
		asked := time.Now()
		if err := s.deliver(ctx, h.i, h.rec, b); err != nil {
			if ctx.Err() != nil {
				break // stopping: the records stay held, the position before them
			}
			s.held = s.held[k:]
			if !confluent.Unreachable(err) {
				return source.More, err
			}
			s.failed(err, asked)
			s.delivered += int64(len(b.Meta) - n)
			s.updateLag()
			if waited := time.Since(s.waitFrom); waited >= s.maxWait {
				s.mu.Lock()
				w := *s.wait
				s.mu.Unlock()
				return source.More, &RegistryWaitError{Wait: w, Waited: waited, Err: err}
			}
			return source.More, nil
		}
	}
	s.held = s.held[k:]
	s.delivered += int64(len(b.Meta) - n)
	s.updateLag()
	if len(s.held) > 0 {
		return source.More, ctx.Err()
	}
	s.held, s.attempts = nil, 0
	s.mu.Lock()
	s.wait = nil
	s.mu.Unlock()
	if s.atEnd() {
		return source.End, nil
	}
	return source.More, nil
}

// Waiting implements source.Waiter: the records' wait on a schema
// registry that cannot be reached, after a failed request or while one
// has gone unanswered for a second. Safe for concurrent use.
func (s *Source) Waiting() []source.Wait {
	s.mu.Lock()
	w := s.wait
	s.mu.Unlock()
	if w != nil {
		return []source.Wait{*w}
	}
	if s.cfg.Registry == nil {
		return nil
	}
	if since, ok := s.cfg.Registry.Outstanding(); ok && time.Since(since) >= time.Second {
		return []source.Wait{{Service: "schema registry " + s.cfg.Registry.URL(), Since: since,
			Err: "no answer yet", Limit: s.maxWait}}
	}
	return nil
}

// RegistryWaitError is Next's error once records have waited
// Config.RegistryMaxWaitMs for a schema registry that cannot be reached:
// the run stops, its position before them.
type RegistryWaitError struct {
	Wait   source.Wait
	Waited time.Duration
	Err    error // the last attempt's error
}

// Error names the registry, the records and how long they waited:
// "schema registry http://…: unreachable since …, gave up after …".
func (e *RegistryWaitError) Error() string {
	return fmt.Sprintf("%s: unreachable since %s, gave up after %s (source.schema_registry.max_wait %s, %d attempts): records of %s were not read; the last attempt: %v",
		e.Wait.Service, e.Wait.Since.UTC().Format(time.RFC3339), e.Waited.Round(time.Millisecond), e.Wait.Limit, e.Wait.Attempts, e.Wait.Records, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *RegistryWaitError) Unwrap() error { return e.Err }

// observeEnd records the end offsets a fetch response reported for
// partition i: the last stable offset under read_committed, the high
// watermark otherwise. End offsets only grow.
func (s *Source) observeEnd(i int, hwm, lso int64) {
	end := hwm
	if !s.cfg.ReadUncommitted && lso >= 0 {
		end = lso
	}
	if p := &s.parts[i]; end > p.end {
		p.end = end
	}
}

// updateLag refreshes the snapshot Lag returns.
func (s *Source) updateLag() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag = s.lag[:0]
	for i := range s.parts {
		p := &s.parts[i]
		l := int64(-1)
		if p.end >= 0 {
			l = max(0, p.end-p.next)
		}
		s.lag = append(s.lag, l)
	}
}

// Lag returns, for each partition in the order of Partitions, the number
// of offsets between the next record to deliver and the end of the
// partition (the last stable offset under read_committed, else the high
// watermark), as of the last fetch or discovery; -1 while the end is not
// known. Safe for concurrent use.
func (s *Source) Lag() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lag)
}

// Stats returns the source's counters and last non-fatal errors. Safe for
// concurrent use.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// EventJSON appends the record's value as a JSON object
// (RecordDecoder.EventJSON). It reads only m.Raw, so it is safe for
// concurrent use, also while Next runs.
func (s *Source) EventJSON(dst []byte, m *source.Meta) []byte { return s.dec.EventJSON(dst, m) }

// SchemaCounts returns, for Avro and Protobuf, the records decoded so far
// per topic and schema id (with the id's version in the topic's subject).
// Safe for concurrent use.
func (s *Source) SchemaCounts() map[string][]confluent.Count { return s.dec.SchemaCounts() }

// Close closes the client. Next returns ErrClosed afterwards; closing
// twice is not an error.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cl.Close()
	return nil
}

// addPart appends a partition to read from offset next (consume starts
// reading it).
func (s *Source) addPart(topic string, num int32, next int64) {
	s.index[tp{topic, num}] = len(s.parts)
	s.parts = append(s.parts, part{topic: topic, num: num, pnum: strconv.Itoa(int(num)), next: next, end: -1})
	s.names = append(s.names, topic+"/"+strconv.Itoa(int(num)))
}
