package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
)

// positionVersion is the version byte of Position's encoding.
const positionVersion = 1

// entry is one partition of a position: read topic/p from offset next.
type entry struct {
	topic string
	p     int32
	next  int64
}

// Position implements source.Resumable. The encoding (package state) is a
// version byte, whether the source had opened, the number of partitions,
// then for each partition in index order its topic, partition number and
// next offset: equal offsets give equal bytes. With Config.Group set, the
// offsets are also remembered and committed to the group by the next call
// to Next (which the engine makes only after the checkpoint holding them
// is written) or CommitOffsets.
func (s *Source) Position() []byte {
	return s.position(func(i int) int64 { return s.parts[i].next })
}

// PositionAt implements source.PartialResumable: the position of the
// records of b before index n, b being the batch of the last Next. It is
// Position with each partition that has a record among b's others put
// back at the first of them (a partition's records come in a batch in
// offset order), so that a Seek to it delivers exactly the records that
// b's first n and the batches before b did not: a read from there may
// cut them into batches otherwise (fetches return up to a size per
// partition, in an order of their own), which "the position before b and
// n records of the read" cannot say. With Config.Group the offsets are
// remembered for the group as by Position. A record of b whose partition
// index the source does not know is ignored (b was not filled by this
// source).
func (s *Source) PositionAt(b *source.Batch, n int) []byte {
	next := make([]int64, len(s.parts))
	for i := range s.parts {
		next[i] = s.parts[i].next
	}
	for i := max(n, 0); i < b.Len(); i++ {
		m := &b.Meta[i]
		if m.Partition >= 0 && m.Partition < len(next) && m.Pos.Offset < next[m.Partition] {
			next[m.Partition] = m.Pos.Offset
		}
	}
	return s.position(func(i int) int64 { return next[i] })
}

// position encodes the source's partitions at the offsets next(i) (see
// Position) and, with Config.Group, remembers them for the group.
func (s *Source) position(next func(i int) int64) []byte {
	var e state.Encoder
	e.Byte(positionVersion)
	e.Bool(s.opened)
	e.Uint(uint64(len(s.parts)))
	for i := range s.parts {
		p := &s.parts[i]
		e.String(p.topic)
		e.Int(int64(p.num))
		e.Int(next(i))
	}
	if s.cfg.Group != "" && s.opened {
		var offs kadm.Offsets
		for i := range s.parts {
			p := &s.parts[i]
			offs.Add(kadm.Offset{Topic: p.topic, Partition: p.num, At: next(i), LeaderEpoch: -1, Metadata: "tidemark checkpoint"})
		}
		s.commit = offs
	}
	return e.Bytes()
}

// Seek implements source.Resumable on a source that has not read yet: the
// partitions of pos get their indexes in pos's order and resume at its
// offsets; partitions of the topics that pos does not list are appended
// and read from their log start. Errors: pos does not parse, the source
// already read or is closed, pos names a topic not in Config.Topics or a
// partition that no longer exists, a topic is missing, or the brokers
// cannot be reached within RequestTimeoutMs.
func (s *Source) Seek(ctx context.Context, pos []byte) error {
	if s.closed {
		return ErrClosed
	}
	if s.opened || s.delivered > 0 {
		return errors.New("kafka source: seek after the source started reading")
	}
	entries, opened, err := decodePosition(pos)
	if err != nil {
		return err
	}
	if !opened {
		return nil // checkpointed before the first read: start as configured
	}
	return s.open(ctx, entries)
}

// decodePosition parses what Position returned.
func decodePosition(pos []byte) ([]entry, bool, error) {
	d := state.NewDecoder(pos)
	d.Section("kafka source position", positionVersion)
	opened := d.Bool()
	n := d.Len(1<<20, 3)
	entries := make([]entry, 0, n)
	seen := map[tp]bool{}
	for i := 0; i < n && d.Err() == nil; i++ {
		e := entry{topic: d.String()}
		p := d.Int()
		e.next = d.Int()
		if d.Err() != nil {
			break
		}
		if p < 0 || p > math.MaxInt32 || e.next < 0 {
			d.Fail("partition %d at offset %d", p, e.next)
			break
		}
		e.p = int32(p)
		if seen[tp{e.topic, e.p}] {
			d.Fail("partition %s/%d listed twice", e.topic, e.p)
			break
		}
		seen[tp{e.topic, e.p}] = true
		entries = append(entries, e)
	}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail("%d bytes after the position", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return nil, false, fmt.Errorf("kafka source position: %w", err)
	}
	return entries, opened, nil
}

// open connects: it lists the topics' partitions, gives the partitions of
// from (a checkpoint's position, nil on a fresh start) their offsets and
// the others their start offsets, and starts consuming them all.
func (s *Source) open(ctx context.Context, from []entry) error {
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	parts, err := s.listPartitions(rctx)
	if err != nil {
		return err
	}
	for _, e := range from {
		if !s.topics[e.topic] {
			return fmt.Errorf("kafka source: the checkpoint reads topic %q, which is not in source.topics", e.topic)
		}
		if !slices.Contains(parts[e.topic], e.p) {
			return fmt.Errorf("kafka source: the checkpoint reads partition %s/%d, which no longer exists", e.topic, e.p)
		}
		s.addPart(e.topic, e.p, e.next)
	}
	how := s.cfg.Start
	if from != nil {
		how = StartEarliest // created after the checkpoint: read all of it
	}
	fresh := s.unknown(parts)
	offs, err := s.listOffsets(rctx, how, fresh)
	if err != nil {
		return err
	}
	for _, k := range fresh {
		s.addPart(k.topic, k.p, offs[k])
	}
	s.consume(0)
	s.opened = true
	s.discoverAt = s.clock().Add(s.every)
	err = s.refreshEnds(rctx) // not fatal: Lag is -1 until a fetch or the next discovery
	if s.cfg.StopAtEnd {
		if err != nil {
			return fmt.Errorf("kafka source: stop_at_end: %w", err)
		}
		for i := range s.parts {
			s.parts[i].stop = max(s.parts[i].end, 0)
		}
	}
	s.mu.Lock()
	s.stats.DiscoveryErr = err
	s.mu.Unlock()
	s.updateLag()
	return nil
}

// discover looks for partitions created since the last look, starts
// reading them from their log start, and refreshes the end offsets.
// Failures are kept in Stats and retried at the next interval.
func (s *Source) discover(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	err := s.discoverErr(rctx)
	s.mu.Lock()
	s.stats.DiscoveryErr = err
	s.mu.Unlock()
	s.updateLag()
}

func (s *Source) discoverErr(ctx context.Context) error {
	parts, err := s.listPartitions(ctx)
	if err != nil {
		return err
	}
	if fresh := s.unknown(parts); len(fresh) > 0 && !s.cfg.StopAtEnd {
		offs, err := s.listOffsets(ctx, StartEarliest, fresh)
		if err != nil {
			return err
		}
		n := len(s.parts)
		for _, k := range fresh {
			s.addPart(k.topic, k.p, offs[k])
		}
		s.consume(n)
	}
	return s.refreshEnds(ctx)
}

// refreshEnds lists the end offsets of every partition (for Lag).
func (s *Source) refreshEnds(ctx context.Context) error {
	var (
		ends kadm.ListedOffsets
		err  error
	)
	if s.cfg.ReadUncommitted {
		ends, err = s.adm.ListEndOffsets(ctx, s.cfg.Topics...)
	} else {
		ends, err = s.adm.ListCommittedOffsets(ctx, s.cfg.Topics...)
	}
	if err != nil {
		return fmt.Errorf("listing end offsets: %w", err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if i, ok := s.index[tp{o.Topic, o.Partition}]; ok && o.Err == nil {
			if o.Offset > s.parts[i].end {
				s.parts[i].end = o.Offset
			}
		}
	})
	return nil
}

// unknown returns the partitions of parts the source does not read yet,
// topics in Config order, partitions ascending.
func (s *Source) unknown(parts map[string][]int32) []tp {
	var out []tp
	for _, t := range s.cfg.Topics {
		for _, p := range parts[t] {
			if _, ok := s.index[tp{t, p}]; !ok {
				out = append(out, tp{t, p})
			}
		}
	}
	return out
}

// consume starts reading the partitions from index from on, each at its
// next offset.
func (s *Source) consume(from int) {
	m := map[string]map[int32]kgo.Offset{}
	for i := from; i < len(s.parts); i++ {
		p := &s.parts[i]
		if m[p.topic] == nil {
			m[p.topic] = map[int32]kgo.Offset{}
		}
		m[p.topic][p.num] = kgo.NewOffset().At(p.next)
	}
	if len(m) > 0 {
		s.cl.AddConsumePartitions(m)
	}
}

// listPartitions returns the partition numbers of every configured topic,
// ascending. Errors: a topic does not exist, or the request fails.
func (s *Source) listPartitions(ctx context.Context) (map[string][]int32, error) {
	tds, err := s.adm.ListTopics(ctx, s.cfg.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing topics %v: %w", s.cfg.Topics, err)
	}
	out := make(map[string][]int32, len(s.cfg.Topics))
	for _, t := range s.cfg.Topics {
		td, ok := tds[t]
		switch {
		case !ok, errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("kafka source: topic %q does not exist", t)
		case td.Err != nil:
			return nil, fmt.Errorf("kafka source: topic %q: %w", t, td.Err)
		}
		ps := make([]int32, 0, len(td.Partitions))
		for p := range td.Partitions {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		out[t] = ps
	}
	return out, nil
}

// listOffsets resolves where each partition of tps starts: its log start
// (StartEarliest), its end (StartLatest: the last stable offset under
// read_committed, the high watermark otherwise) or its first offset at or
// after Config.StartTimestamp (StartTimestamp).
func (s *Source) listOffsets(ctx context.Context, how string, tps []tp) (map[tp]int64, error) {
	if len(tps) == 0 {
		return nil, nil
	}
	var topics []string
	for _, k := range tps {
		if !slices.Contains(topics, k.topic) {
			topics = append(topics, k.topic)
		}
	}
	var (
		l   kadm.ListedOffsets
		err error
	)
	switch how {
	case StartLatest:
		if s.cfg.ReadUncommitted {
			l, err = s.adm.ListEndOffsets(ctx, topics...)
		} else {
			l, err = s.adm.ListCommittedOffsets(ctx, topics...)
		}
	case StartTimestamp:
		l, err = s.adm.ListOffsetsAfterMilli(ctx, s.cfg.StartTimestamp, topics...)
	default:
		l, err = s.adm.ListStartOffsets(ctx, topics...)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka source: listing %s offsets: %w", how, err)
	}
	out := make(map[tp]int64, len(tps))
	for _, k := range tps {
		o, ok := l.Lookup(k.topic, k.p)
		switch {
		case !ok:
			return nil, fmt.Errorf("kafka source: no %s offset for %s/%d", how, k.topic, k.p)
		case o.Err != nil:
			return nil, fmt.Errorf("kafka source: %s offset of %s/%d: %w", how, k.topic, k.p, o.Err)
		case o.Offset < 0:
			return nil, fmt.Errorf("kafka source: %s offset of %s/%d is %d", how, k.topic, k.p, o.Offset)
		}
		out[k] = o.Offset
	}
	return out, nil
}

// commitGroup commits the offsets of the last Position to Config.Group;
// a failure is kept in Stats.
func (s *Source) commitGroup(ctx context.Context) {
	err := s.CommitOffsets(ctx)
	s.mu.Lock()
	s.stats.CommitErr = err
	s.mu.Unlock()
}

// CommitOffsets commits the offsets of the last Position to Config.Group
// now, if they have not been (Next does it on its next call). Use it after
// the final checkpoint of a run. It does nothing without a Group. Errors:
// ErrClosed, or the commit request failed or was refused (within
// RequestTimeoutMs); the offsets are then not retried.
func (s *Source) CommitOffsets(ctx context.Context) error {
	if s.closed {
		return ErrClosed
	}
	offs := s.commit
	s.commit = nil
	if offs == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.reqTO)
	defer cancel()
	resp, err := s.adm.CommitOffsets(rctx, s.cfg.Group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka source: committing offsets to group %q: %w", s.cfg.Group, err)
	}
	return nil
}

// CheckRetention returns an error when the topics of cfg may have lost
// records of a backfill starting at fromMs (ms since the epoch): a
// partition whose log no longer starts at offset 0 (retention deleted its
// oldest records) and whose first remaining record is already at or after
// fromMs (by record timestamp) may have held records of the range before
// them. The error names the partitions. It reads metadata and offsets
// only (ListOffsets), within RequestTimeoutMs.
func CheckRetention(ctx context.Context, cfg Config, fromMs int64) error {
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka source: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	to := cfg.RequestTimeoutMs
	if to <= 0 {
		to = DefaultRequestTimeoutMs
	}
	rctx, cancel := context.WithTimeout(ctx, time.Duration(to)*time.Millisecond)
	defer cancel()
	starts, err := adm.ListStartOffsets(rctx, cfg.Topics...)
	if err != nil {
		return fmt.Errorf("kafka source: listing start offsets: %w", err)
	}
	after, err := adm.ListOffsetsAfterMilli(rctx, fromMs, cfg.Topics...)
	if err != nil {
		return fmt.Errorf("kafka source: listing offsets after %d ms: %w", fromMs, err)
	}
	var lost []string
	starts.Each(func(s kadm.ListedOffset) {
		a, ok := after.Lookup(s.Topic, s.Partition)
		if s.Err != nil || !ok || a.Err != nil {
			return
		}
		if s.Offset > 0 && a.Offset <= s.Offset {
			lost = append(lost, fmt.Sprintf("%s/%d (log starts at offset %d)", s.Topic, s.Partition, s.Offset))
		}
	})
	slices.Sort(lost)
	if len(lost) > 0 {
		return fmt.Errorf("the range starts before the topics' retention: records before the first remaining one were deleted in %s; the backfill would miss events of the range (start later, or restore the events from an archive)", strings.Join(lost, ", "))
	}
	return nil
}
