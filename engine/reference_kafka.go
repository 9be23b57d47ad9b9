package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/spec"
)

// referenceReadTimeout bounds the read of a Kafka reference topic to its
// end when a run starts.
const referenceReadTimeout = 2 * time.Minute

// refRecord is one record of a reference topic.
type refRecord struct {
	part       int32
	off        int64
	key, value []byte
	tombstone  bool
}

// readReferenceTopic reads reference topic r.Topic from its start to its
// last stable offsets (read_committed) as a compacted changelog — per
// record key its newest record, a tombstone (null value) deleting it —
// and adds the surviving records, in partition and offset order, through
// add (errors name "topic/partition@offset"). The version is the SHA-256
// of the surviving records' keys and values in that order, so a
// compaction of the topic does not change it.
func (rt *runtime) readReferenceTopic(ref *reference, r *spec.Reference, add func(where string, get func(string) (string, bool)) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), referenceReadTimeout)
	defer cancel()
	recs, err := readTopicToEnd(ctx, r.Brokers, r.Topic)
	if err != nil {
		return fmt.Errorf("reference.topic: %s: %w", r.Topic, err)
	}
	// The changelog: the newest record of each record key.
	last := map[string]int{}
	for i, rec := range recs {
		if rec.key != nil {
			last[string(rec.key)] = i
		}
	}
	h := sha256.New()
	var n [8]byte
	for i, rec := range recs {
		if rec.tombstone || rec.key != nil && last[string(rec.key)] != i {
			continue
		}
		for _, b := range [][]byte{rec.key, rec.value} {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
		where := fmt.Sprintf("%s/%d@%d", r.Topic, rec.part, rec.off)
		get, err := jsonGetter(rec.value)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := add(where, get); err != nil {
			return err
		}
	}
	ref.version = "sha256:" + hex.EncodeToString(h.Sum(nil)[:6])
	return nil
}

// readTopicToEnd returns every record of topic up to its partitions'
// last stable offsets when it is called, by partition and offset.
func readTopicToEnd(ctx context.Context, brokers []string, topic string) ([]refRecord, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("tidemark-reference"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	if len(ends[topic]) == 0 {
		return nil, fmt.Errorf("no such topic, or no partitions")
	}
	want := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	for p, o := range ends[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, o.Err)
		}
		s, ok := starts.Lookup(topic, p)
		if !ok || s.Err != nil {
			return nil, fmt.Errorf("partition %d: no start offset", p)
		}
		if o.Offset > s.Offset {
			want[p] = kgo.NewOffset().At(s.Offset)
			end[p] = o.Offset
		}
	}
	var recs []refRecord
	if len(want) > 0 {
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: want})
	}
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("not read to its end in %s (%d records read; partitions left: %d)", referenceReadTimeout, len(recs), len(end))
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("partition %d: %w", p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok || r.Offset >= e {
				return
			}
			if !r.Attrs.IsControl() {
				recs = append(recs, refRecord{part: r.Partition, off: r.Offset, key: r.Key, value: r.Value, tombstone: r.Value == nil})
			}
			if r.Offset+1 >= e {
				delete(end, r.Partition)
			}
		})
	}
	slices.SortStableFunc(recs, func(a, b refRecord) int {
		if a.part != b.part {
			return int(a.part - b.part)
		}
		return int(a.off - b.off)
	})
	return recs, nil
}
