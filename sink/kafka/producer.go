package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults of the Options durations, in ms.
const (
	DefaultTransactionTimeoutMs = 60_000
	DefaultDeliveryTimeoutMs    = 120_000
	DefaultRecoverTimeoutMs     = 30_000
)

// Options configures a Kafka sink. Durations are in ms; a zero duration
// takes its default.
type Options struct {
	// Brokers are the seed brokers, "host:port". Required.
	Brokers []string
	// Topic receives the records. Required; it must exist (for result
	// rows, ideally with cleanup.policy=compact).
	Topic string
	// AtLeastOnce selects an idempotent, non-transactional producer:
	// records are visible when acknowledged, Flush waits for them, and
	// the sink.Committer methods return ErrAtLeastOnce. False (the
	// default) is exactly-once: every record is produced in a transaction
	// that commits with the engine's checkpoint (see the package
	// documentation).
	AtLeastOnce bool
	// Pipeline is the pipeline's name and Sink the sink's id, stable
	// across runs and unique within the pipeline (the engine's committer
	// id, e.g. "revenue: sinks[0]"). They name the commit marker and the
	// default TransactionalID. Both required for exactly-once.
	Pipeline, Sink string
	// TransactionalID is the producer's transactional.id. Default
	// "tidemark-<Pipeline>-<Sink>". It must be the same in every run of
	// the pipeline (so that a restart fences the previous run) and differ
	// between sinks and pipelines.
	TransactionalID string
	// MarkerTopic receives the commit markers; only this sink may write
	// to it. Default "tidemark-commits.<TransactionalID>" with characters
	// other than [A-Za-z0-9._-] replaced by '_'; created when missing
	// (one partition, cleanup.policy=compact).
	MarkerTopic string
	// TransactionTimeoutMs is the transaction.timeout.ms the producer
	// asks for: longer than the checkpoint interval plus the time a
	// checkpoint takes. Default 60,000.
	TransactionTimeoutMs int64
	// DeliveryTimeoutMs bounds how long a record may wait to be
	// acknowledged before it fails (delivery.timeout.ms). Default 120,000.
	DeliveryTimeoutMs int64
	// RecoverTimeoutMs bounds reading the marker partition in Recover.
	// Default 30,000.
	RecoverTimeoutMs int64
	// Upsert (Results only) leaves update_before rows out and writes a
	// delete as a tombstone (a null value), as Flink's upsert-kafka does.
	// Default false: every row, with its op, as a JSON object.
	Upsert bool
	// ClientID names the client to the brokers. Default "tidemark".
	ClientID string
	// Encoding is the format of record keys and values: JSON (the
	// default), or Avro or Protobuf in the Confluent wire format with
	// schemas registered under "<Topic>-key" and "<Topic>-value" (the
	// package documentation's "Avro and Protobuf").
	Encoding Encoding
	// ClientOptions are appended to the franz-go client's options (TLS,
	// SASL, a logger ...); they apply to the marker reader too.
	ClientOptions []kgo.Opt
}

// ErrAtLeastOnce is returned by the sink.Committer methods of a sink
// opened with Options.AtLeastOnce.
var ErrAtLeastOnce = errors.New("kafka sink: opened for at-least-once delivery, it takes no part in checkpoints")

// ErrClosed is returned by every method but Close after Close.
var ErrClosed = errors.New("kafka sink is closed")

// producer is what Results and Records share: the client, the open
// transaction and the records it holds, the checkpoint protocol.
type producer struct {
	o           Options
	ctx         context.Context // records' context: the sink's life, not a call's
	cancel      context.CancelFunc
	cl          *kgo.Client
	adm         *kadm.Client
	markerTopic string
	markerKey   []byte

	inTxn  bool
	staged []staged  // the open transaction's records, for Prepare
	prep   *prepInfo // set by Prepare, cleared by Commit
	chunk  []byte    // backing store of record keys and values
	closed bool

	mu  sync.Mutex
	err error // the first record that failed; sticky until Recover
}

// staged is one record of the open transaction.
type staged struct{ key, value []byte }

// prepInfo is what Prepare left for Commit.
type prepInfo struct {
	id    int64
	empty bool // no transaction: nothing to commit
}

// chunkSize is the size of the blocks record keys and values are copied
// into (one allocation per block rather than per record).
const chunkSize = 64 << 10

// newProducer checks o, connects, checks that the topic exists and, for
// exactly-once, that the marker topic exists (creating it if missing).
func newProducer(ctx context.Context, o Options) (*producer, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("kafka sink: brokers: required")
	}
	if o.Topic == "" {
		return nil, errors.New("kafka sink: topic: required")
	}
	for _, d := range []struct {
		key string
		v   *int64
		def int64
	}{
		{"transaction timeout", &o.TransactionTimeoutMs, DefaultTransactionTimeoutMs},
		{"delivery timeout", &o.DeliveryTimeoutMs, DefaultDeliveryTimeoutMs},
		{"recover timeout", &o.RecoverTimeoutMs, DefaultRecoverTimeoutMs},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("kafka sink: %s: %d ms is negative", d.key, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.ClientID == "" {
		o.ClientID = "tidemark"
	}
	p := &producer{o: o}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ClientID(o.ClientID),
		kgo.RecordDeliveryTimeout(time.Duration(o.DeliveryTimeoutMs) * time.Millisecond),
	}
	if !o.AtLeastOnce {
		if o.Pipeline == "" || o.Sink == "" {
			return nil, errors.New("kafka sink: exactly-once delivery needs the pipeline name and the sink id (commit marker, transactional ID)")
		}
		if o.TransactionalID == "" {
			p.o.TransactionalID = "tidemark-" + o.Pipeline + "-" + o.Sink
		}
		if o.MarkerTopic == "" {
			p.markerTopic = markerTopicFor(p.o.TransactionalID)
		} else {
			p.markerTopic = o.MarkerTopic
		}
		p.markerKey = []byte(o.Pipeline + "/" + o.Sink)
		opts = append(opts,
			kgo.TransactionalID(p.o.TransactionalID),
			kgo.TransactionTimeout(time.Duration(o.TransactionTimeoutMs)*time.Millisecond))
	}
	cl, err := kgo.NewClient(append(opts, o.ClientOptions...)...)
	if err != nil {
		p.cancel()
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	p.cl, p.adm = cl, kadm.NewClient(cl)
	if err := p.checkTopics(ctx); err != nil {
		p.cancel()
		cl.Close()
		return nil, err
	}
	return p, nil
}

// checkTopics fails when the topic is missing and creates a missing
// marker topic.
func (p *producer) checkTopics(ctx context.Context) error {
	topics := []string{p.o.Topic}
	if p.markerTopic != "" {
		topics = append(topics, p.markerTopic)
	}
	tds, err := p.adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("kafka sink: listing topics %v: %w", topics, err)
	}
	if td, ok := tds[p.o.Topic]; !ok || td.Err != nil {
		if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("kafka sink: topic %q: %w", p.o.Topic, td.Err)
		}
		return fmt.Errorf("kafka sink: topic %q does not exist (create it; for result rows with cleanup.policy=compact)", p.o.Topic)
	}
	if p.markerTopic == "" {
		return nil
	}
	if td, ok := tds[p.markerTopic]; ok && td.Err == nil {
		return nil
	}
	_, err = p.adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, p.markerTopic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka sink: creating the commit-marker topic %q: %w", p.markerTopic, err)
	}
	return nil
}

// markerTopicFor returns the default marker topic of a transactional ID.
func markerTopicFor(txnID string) string {
	b := []byte("tidemark-commits.")
	for i := 0; i < len(txnID); i++ {
		c := txnID[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			c = '_'
		}
		b = append(b, c)
	}
	const maxTopic = 249
	if len(b) > maxTopic {
		h := fnv.New64a()
		h.Write([]byte(txnID))
		b = append(b[:maxTopic-17], '-')
		b = strconv.AppendUint(b, h.Sum64()|1<<63, 16)[:maxTopic]
	}
	return string(b)
}

// keep copies b into the chunk and returns the copy (nil for nil).
func (p *producer) keep(b []byte) []byte {
	if b == nil {
		return nil
	}
	if cap(p.chunk)-len(p.chunk) < len(b) {
		p.chunk = make([]byte, 0, max(chunkSize, len(b)))
	}
	n := len(p.chunk)
	p.chunk = append(p.chunk, b...)
	return p.chunk[n:len(p.chunk):len(p.chunk)]
}

// fail is franz-go's promise: it keeps the first error.
func (p *producer) fail(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// failed returns the first record error, if any.
func (p *producer) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("kafka sink: topic %s: producing a record: %w", p.o.Topic, p.err)
	}
	return nil
}

// send produces one record (key and value already kept), beginning a
// transaction if none is open.
func (p *producer) send(ctx context.Context, key, value []byte) error {
	if p.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.failed(); err != nil {
		return err
	}
	if !p.o.AtLeastOnce {
		if p.prep != nil {
			return fmt.Errorf("kafka sink: write between Prepare(%d) and Commit", p.prep.id)
		}
		if !p.inTxn {
			if err := p.cl.BeginTransaction(); err != nil {
				return fmt.Errorf("kafka sink: beginning a transaction: %w", err)
			}
			p.inTxn = true
		}
		p.staged = append(p.staged, staged{key, value})
	}
	// A record's context is the sink's: the engine cancels a call's
	// context to stop gracefully and then takes a final checkpoint, which
	// needs the records already written. (When franz-go's buffer is full,
	// Produce waits for space, which DeliveryTimeoutMs bounds.)
	p.cl.Produce(p.ctx, &kgo.Record{Topic: p.o.Topic, Key: key, Value: value}, p.fail)
	return nil
}

// flush waits for every record to be acknowledged (at-least-once); in
// exactly-once mode it only reports failed records.
func (p *producer) flush(ctx context.Context) error {
	if p.closed {
		return ErrClosed
	}
	if p.o.AtLeastOnce {
		if err := p.cl.Flush(ctx); err != nil {
			return fmt.Errorf("kafka sink: flushing: %w", err)
		}
	}
	return p.failed()
}

// close flushes (at-least-once) or aborts the open transaction
// (exactly-once: its records belong to no checkpoint), then closes the
// client. It does so even when ctx is done, waiting at most 10 s.
func (p *producer) close(ctx context.Context) error {
	if p.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var err error
	if p.o.AtLeastOnce {
		err = p.flush(ctx)
	} else {
		err = p.abort(ctx)
	}
	p.closed = true
	p.cancel()
	p.cl.Close()
	return err
}

// abort aborts the open transaction, if any.
func (p *producer) abort(ctx context.Context) error {
	clear(p.staged)
	p.staged = p.staged[:0]
	if !p.inTxn {
		return nil
	}
	p.inTxn = false
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("kafka sink: aborting: %w", err)
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafka sink: aborting the transaction: %w", err)
	}
	return nil
}

// prepare implements sink.Committer.Prepare.
func (p *producer) prepare(ctx context.Context, id int64) ([]byte, error) {
	if p.o.AtLeastOnce {
		return nil, ErrAtLeastOnce
	}
	if p.closed {
		return nil, ErrClosed
	}
	if p.prep != nil {
		return nil, fmt.Errorf("kafka sink: Prepare(%d) before Commit(%d)", id, p.prep.id)
	}
	if err := p.failed(); err != nil {
		return nil, err
	}
	if !p.inTxn {
		p.prep = &prepInfo{id: id, empty: true}
		return nil, nil
	}
	m, err := p.produceMarker(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := p.cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("kafka sink: checkpoint %d: flushing: %w", id, err)
	}
	if err := p.failed(); err != nil {
		return nil, err
	}
	enc := encodePrepared(&prepared{id: id, topic: p.o.Topic, markerPartition: m.Partition, markerOffset: m.Offset, records: p.staged})
	clear(p.staged)
	p.staged = p.staged[:0]
	p.prep = &prepInfo{id: id}
	return enc, nil
}

// produceMarker produces the commit marker of checkpoint id into the open
// transaction and returns it with its partition and offset.
func (p *producer) produceMarker(ctx context.Context, id int64) (*kgo.Record, error) {
	m := &kgo.Record{Topic: p.markerTopic, Key: p.markerKey, Value: markerValue(p.o.Pipeline, p.o.Sink, id)}
	if err := p.cl.ProduceSync(ctx, m).FirstErr(); err != nil {
		return nil, fmt.Errorf("kafka sink: checkpoint %d: producing the commit marker to %s: %w", id, p.markerTopic, err)
	}
	return m, nil
}

// commit implements sink.Committer.Commit.
func (p *producer) commit(ctx context.Context, id int64, prepared []byte) error {
	if p.o.AtLeastOnce {
		return ErrAtLeastOnce
	}
	if p.closed {
		return ErrClosed
	}
	if pr := p.prep; pr != nil && pr.id == id {
		p.prep = nil
		if pr.empty {
			return nil
		}
		p.inTxn = false
		if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("kafka sink: checkpoint %d: committing the transaction: %w", id, err)
		}
		return nil
	}
	if prepared == nil {
		return nil
	}
	return p.publish(ctx, id, prepared)
}

// recover implements sink.Committer.Recover.
func (p *producer) recover(ctx context.Context, id int64, prepared []byte) error {
	if p.o.AtLeastOnce {
		return ErrAtLeastOnce
	}
	if p.closed {
		return ErrClosed
	}
	p.prep = nil
	if err := p.abort(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	p.err = nil
	p.mu.Unlock()
	// Initializing the transactional ID fences the previous run and
	// aborts the transaction it left open.
	if _, _, err := p.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("kafka sink: initializing transactional ID %q: %w", p.o.TransactionalID, err)
	}
	if id == 0 || prepared == nil {
		return nil
	}
	return p.publish(ctx, id, prepared)
}

// publish commits the records of checkpoint id, stored in prepared, in a
// new transaction with a new marker, unless a committed marker shows that
// the original transaction (or an earlier republication) committed.
func (p *producer) publish(ctx context.Context, id int64, enc []byte) error {
	pr, err := decodePrepared(enc)
	if err != nil {
		return fmt.Errorf("kafka sink: checkpoint %d: %w", id, err)
	}
	if pr.id != id {
		return fmt.Errorf("kafka sink: the prepared output is checkpoint %d's, not %d's", pr.id, id)
	}
	done, err := p.committed(ctx, pr.markerPartition, pr.markerOffset, id)
	if err != nil {
		return fmt.Errorf("kafka sink: checkpoint %d: %w", id, err)
	}
	if done {
		return nil
	}
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafka sink: checkpoint %d: beginning a transaction: %w", id, err)
	}
	p.inTxn = true
	for _, r := range pr.records {
		p.cl.Produce(p.ctx, &kgo.Record{Topic: pr.topic, Key: r.key, Value: r.value}, p.fail)
	}
	if _, err := p.produceMarker(ctx, id); err != nil {
		return err
	}
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka sink: checkpoint %d: flushing: %w", id, err)
	}
	if err := p.failed(); err != nil {
		return err
	}
	p.inTxn = false
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("kafka sink: checkpoint %d: committing the republished transaction: %w", id, err)
	}
	return nil
}
