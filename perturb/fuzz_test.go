package perturb

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// FuzzSimulator feeds arbitrary bytes and times: the simulator never
// panics, refuses what is not an object, and writes valid JSON for what
// is.
func FuzzSimulator(f *testing.F) {
	f.Add([]byte(`{"a":1,"d":"x"}`), int64(0), uint8(3))
	f.Add([]byte(`{"a":"s","d":{"x":[1]}}`), int64(math.MaxInt64), uint8(0))
	f.Add([]byte(`{}`), int64(math.MinInt64), uint8(255))
	f.Fuzz(func(t *testing.T, obj []byte, et int64, flags uint8) {
		o := Options{Seed: int64(flags), Delay: time.Second, MaxDelay: time.Hour, StragglerFraction: 0.5,
			RedeliverFraction: 0.5, ConflictFraction: 1, ConflictField: "a", ConflictChange: Change(flags % 3),
			Partitions: int(flags%7) + 1, PartitionBy: "d", OfflineFraction: 0.5,
			Distribution: Distribution(flags % 2)}
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		valid := Valid(obj)
		for i := range 3 {
			err := s.Add(Event{JSON: obj, EventTime: et + int64(i)})
			if (err == nil) != valid {
				t.Fatalf("Add(%q) = %v, Valid = %v", obj, err, valid)
			}
		}
		s.Close()
		for d, ok := s.Next(); ok; d, ok = s.Next() {
			if !json.Valid(d.JSON) {
				t.Fatalf("invalid output %q from %q", d.JSON, obj)
			}
		}
	})
}
