package kafka

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/source"
)

// FuzzRecord feeds arbitrary values and timestamps through the path a
// record takes in Next after the fetch (decode, the kafka_timestamp slot,
// EventJSON): it must never panic, the event time must be the timestamp
// whenever one is given, and EventJSON must always be one valid JSON
// object on one line (late records embed it).
func FuzzRecord(f *testing.F) {
	for _, v := range []string{`{"id":"a","amount":1.5,"ts":"2026-03-01T00:00:00Z"}`, `not json`, ``, `[1]`, "{\"id\":\n\"x\"}", `{"amount":"x"}`, "\xff"} {
		f.Add([]byte(v), int64(1_772_330_400_250))
	}
	f.Add([]byte(`{}`), int64(-1))
	var srcs []*Source
	for _, from := range []string{EventTimePayload, EventTimeKafkaTimestamp} {
		// New does no IO: the unreachable broker is never dialed.
		s, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"t"}, Fields: fields(f), EventTimeField: "ts", EventTimeFrom: from})
		if err != nil {
			f.Fatal(err)
		}
		defer s.Close()
		srcs = append(srcs, s)
	}
	f.Fuzz(func(t *testing.T, value []byte, ts int64) {
		for _, s := range srcs {
			var b source.Batch
			d := s.dec
			if err := d.Append(context.Background(), &kgo.Record{Topic: "t", Value: value, Timestamp: time.UnixMilli(ts)}, 0, &b); err != nil {
				t.Fatal(err)
			}
			r, m := &b.Rows[0], &b.Meta[0]
			if value != nil && d.tsTime && ts >= 0 && (r.IsNull(d.et.Index) || r.I[d.et.Slot] != ts) {
				t.Fatalf("event time %v, want %d", r.Get(d.et), ts)
			}
			obj := s.EventJSON(nil, m)
			var v map[string]any
			if err := json.Unmarshal(obj, &v); err != nil {
				t.Fatalf("EventJSON %q: %v", obj, err)
			}
			for _, c := range obj {
				if c == '\n' || c == '\r' {
					t.Fatalf("EventJSON %q holds a line break", obj)
				}
			}
		}
	})
}
