package perturb

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// benchEvents are order events, one every 100 ms over 50 devices.
func benchEvents(n int) []Event {
	events := make([]Event, n)
	for i := range events {
		events[i] = Event{
			JSON:      fmt.Appendf(nil, `{"event_id":"e%d","device":"d%d","store":"s%d","amount":%d.99,"currency":"EUR"}`, i, i%50, i%7, i%100),
			EventTime: 1_788_000_000_000 + int64(i)*100,
		}
	}
	return events
}

// BenchmarkSimulator streams events through a simulator with every
// feature on and reports deliveries per second.
func BenchmarkSimulator(b *testing.B) {
	events := benchEvents(100_000)
	o := Options{Seed: 1, Delay: 2 * time.Second, MaxDelay: time.Minute, StragglerFraction: 0.03,
		RedeliverFraction: 0.05, ConflictFraction: 0.01, ConflictField: "amount", Partitions: 4,
		PartitionBy: "device", OfflineFraction: 0.1, OfflineDelay: 5 * time.Minute}
	b.ReportAllocs()
	var deliveries int64
	for b.Loop() {
		s, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range events {
			s.Add(ev)
			for _, ok := s.Next(); ok; _, ok = s.Next() {
			}
		}
		s.Close()
		for _, ok := s.Next(); ok; _, ok = s.Next() {
		}
		deliveries += s.Stats().Deliveries
	}
	b.ReportMetric(float64(deliveries)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkBaseline is the hand-written floor the simulator is compared
// with: copy each record, append an arrival member, sort by arrival.
func BenchmarkBaseline(b *testing.B) {
	events := benchEvents(100_000)
	type rec struct {
		at  int64
		obj []byte
	}
	b.ReportAllocs()
	var deliveries int64
	for b.Loop() {
		recs := make([]rec, len(events))
		for i, ev := range events {
			at := ev.EventTime + int64(i*7919%2000)
			obj := append([]byte(nil), ev.JSON[:len(ev.JSON)-1]...)
			obj = append(obj, `,"ingested_at":"`...)
			obj = time.UnixMilli(at).UTC().AppendFormat(obj, arrivalLayout)
			obj = append(obj, `"}`...)
			recs[i] = rec{at, obj}
		}
		slices.SortStableFunc(recs, func(x, y rec) int { return int(x.at - y.at) })
		deliveries += int64(len(recs))
	}
	b.ReportMetric(float64(deliveries)/b.Elapsed().Seconds(), "deliveries/s")
}
