package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/state"
)

// markerValue is a commit marker's value:
// {"pipeline":…,"sink":…,"checkpoint_id":id}.
func markerValue(pipeline, sink string, id int64) []byte {
	b := []byte(`{"pipeline":`)
	b = changelog.AppendJSONString(b, pipeline)
	b = append(b, `,"sink":`...)
	b = changelog.AppendJSONString(b, sink)
	return fmt.Appendf(b, `,"checkpoint_id":%d}`, id)
}

// markerID returns the checkpoint id of a marker value written by
// markerValue for this pipeline and sink.
func markerID(v []byte, pipeline, sink string) (int64, bool) {
	var m struct {
		Pipeline     string `json:"pipeline"`
		Sink         string `json:"sink"`
		CheckpointID *int64 `json:"checkpoint_id"`
	}
	if json.Unmarshal(v, &m) != nil || m.CheckpointID == nil || m.Pipeline != pipeline || m.Sink != sink {
		return 0, false
	}
	return *m.CheckpointID, true
}

// committed reports whether a committed marker of this sink for
// checkpoint id or a later one lies on the marker partition at offset
// from or after. It reads with read_committed from there to the
// partition's end as of the call. Only this sink's transactions write to
// the partition and recover has fenced the previous run first, so nothing
// on it is undecided and its last offset is readable (a transaction
// marker, which KeepControlRecords makes visible). Compaction keeps the
// newest marker of the key, so a marker it removed has a newer one after
// it.
func (p *producer) committed(ctx context.Context, partition int32, from, id int64) (bool, error) {
	ends, err := p.adm.ListEndOffsets(ctx, p.markerTopic)
	if err != nil {
		return false, fmt.Errorf("listing the end of %s: %w", p.markerTopic, err)
	}
	o, ok := ends.Lookup(p.markerTopic, partition)
	if !ok || o.Err != nil {
		return false, fmt.Errorf("end offset of %s/%d: %v", p.markerTopic, partition, o.Err)
	}
	end := o.Offset
	if end <= from {
		return false, nil
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(p.o.Brokers...),
		kgo.ClientID(p.o.ClientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.markerTopic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(opts, p.o.ClientOptions...)...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Duration(p.o.RecoverTimeoutMs)*time.Millisecond)
	defer cancel()
	for {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return false, fmt.Errorf("reading the commit markers of %s/%d from offset %d to %d: %w", p.markerTopic, partition, from, end, err)
		}
		for _, fe := range fs.Errors() {
			var loss *kgo.ErrDataLoss
			if !errors.As(fe.Err, &loss) {
				return false, fmt.Errorf("reading the commit markers of %s/%d: %w", p.markerTopic, partition, fe.Err)
			}
		}
		found, done := false, false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end-1 {
				done = true
			}
			if r.Attrs.IsControl() || !bytes.Equal(r.Key, p.markerKey) {
				return
			}
			if cid, ok := markerID(r.Value, p.o.Pipeline, p.o.Sink); ok && cid >= id {
				found = true
			}
		})
		if found || done {
			return found, nil
		}
	}
}

// prepared is what Prepare returns: the checkpoint's transaction, enough
// to tell whether it committed and to produce it again.
type prepared struct {
	id              int64
	topic           string
	markerPartition int32
	markerOffset    int64
	records         []staged
}

// preparedVersion is the version byte of the prepared encoding.
const preparedVersion = 1

// encodePrepared encodes p (package state): version, checkpoint id, topic,
// marker partition and offset, the record count, then per record whether
// it has a key, the key, whether it has a value, the value.
func encodePrepared(p *prepared) []byte {
	var e state.Encoder
	e.Byte(preparedVersion)
	e.Int(p.id)
	e.String(p.topic)
	e.Int(int64(p.markerPartition))
	e.Int(p.markerOffset)
	e.Uint(uint64(len(p.records)))
	for _, r := range p.records {
		e.Bool(r.key != nil)
		e.Bytes8(r.key)
		e.Bool(r.value != nil)
		e.Bytes8(r.value)
	}
	return e.Bytes()
}

// decodePrepared parses what encodePrepared wrote. Keys and values alias
// b.
func decodePrepared(b []byte) (*prepared, error) {
	d := state.NewDecoder(b)
	d.Section("kafka sink prepared output", preparedVersion)
	p := &prepared{id: d.Int(), topic: d.String()}
	part := d.Int()
	p.markerOffset = d.Int()
	n := d.Len(1<<30, 4)
	if d.Err() == nil && (part < 0 || part > 1<<31-1 || p.markerOffset < 0) {
		d.Fail("marker at partition %d offset %d", part, p.markerOffset)
	}
	p.markerPartition = int32(part)
	for i := 0; i < n && d.Err() == nil; i++ {
		var r staged
		hasKey := d.Bool()
		r.key = d.Bytes8()
		if !hasKey {
			r.key = nil
		} else if r.key == nil {
			r.key = []byte{}
		}
		hasValue := d.Bool()
		r.value = d.Bytes8()
		if !hasValue {
			r.value = nil
		} else if r.value == nil {
			r.value = []byte{}
		}
		p.records = append(p.records, r)
	}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail("%d bytes after the prepared output", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return p, nil
}
