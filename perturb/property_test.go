package perturb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genEvents draws a few dozen events: mostly in event-time order, some
// behind (disorder), some without event time; devices from a small set or
// none; amounts of every JSON type, or missing.
func genEvents(t *rapid.T) []Event {
	n := rapid.IntRange(0, 60).Draw(t, "n")
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	et := base
	events := make([]Event, n)
	for i := range events {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%d`, i)
		if d := rapid.IntRange(-1, 5).Draw(t, "device"); d >= 0 {
			fmt.Fprintf(&b, `,"device":"d%d"`, d)
		}
		switch rapid.IntRange(0, 6).Draw(t, "amount") {
		case 0:
		case 1:
			b.WriteString(`,"amount":null`)
		case 2:
			fmt.Fprintf(&b, `,"amount":"s%d"`, i)
		case 3:
			fmt.Fprintf(&b, `,"amount":%d`, rapid.Int64Range(-1000, 1000).Draw(t, "int"))
		case 4:
			fmt.Fprintf(&b, `,"amount":%d.%02d`, rapid.IntRange(-50, 50).Draw(t, "units"), rapid.IntRange(0, 99).Draw(t, "cents"))
		case 5:
			fmt.Fprintf(&b, `,"amount":%de%d`, rapid.IntRange(1, 9).Draw(t, "mant"), rapid.IntRange(-3, 3).Draw(t, "exp"))
		case 6:
			b.WriteString(`,"amount":{"x":[1,2]}`)
		}
		b.WriteByte('}')
		events[i].JSON = []byte(b.String())
		switch rapid.IntRange(0, 9).Draw(t, "time") {
		case 0:
			events[i].EventTime = NoTime
		case 1:
			events[i].EventTime = et - rapid.Int64Range(0, 20_000).Draw(t, "behind")
		default:
			et += rapid.Int64Range(0, 5_000).Draw(t, "gap")
			events[i].EventTime = et
		}
	}
	return events
}

func genOptions(t *rapid.T) Options {
	o := Options{
		Seed:              rapid.Int64().Draw(t, "seed"),
		Distribution:      Distribution(rapid.IntRange(0, 1).Draw(t, "dist")),
		Delay:             time.Duration(rapid.Int64Range(0, 10_000).Draw(t, "delay")) * time.Millisecond,
		StragglerFraction: rapid.Float64Range(0, 1).Draw(t, "straggler"),
		RedeliverFraction: rapid.Float64Range(0, 1).Draw(t, "redeliver"),
		ConflictFraction:  rapid.Float64Range(0, 1).Draw(t, "conflict"),
		ConflictField:     "amount",
		ConflictChange:    Change(rapid.IntRange(0, 2).Draw(t, "change")),
		Partitions:        rapid.IntRange(1, 5).Draw(t, "partitions"),
		OfflineFraction:   rapid.Float64Range(0, 1).Draw(t, "offline"),
		OfflineDelay:      time.Duration(rapid.Int64Range(1, 60_000).Draw(t, "offlineDelay")) * time.Millisecond,
	}
	o.MaxDelay = o.Delay + time.Duration(rapid.Int64Range(0, 60_000).Draw(t, "extra"))*time.Millisecond
	if rapid.Bool().Draw(t, "byDevice") {
		o.PartitionBy = "device"
	}
	if rapid.Bool().Draw(t, "seoul") {
		o.Zone = time.FixedZone("KST", 9*3600)
	}
	return o
}

// TestProperties checks the invariants over random inputs and options;
// streaming (held only as far as the disorder requires) gives exactly
// what the whole input added before Close gives; and a second run gives
// the same bytes.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		events := genEvents(t)
		o := genOptions(t)
		o.Disorder = disorder(events)
		ds, st, err := run(o, events, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(o, events, ds); err != nil {
			t.Fatal(err)
		}
		if st.Unordered != 0 {
			t.Fatalf("%d deliveries out of order", st.Unordered)
		}
		if want := st.Records + st.Redeliveries + st.Conflicts; st.Deliveries != want || int64(len(ds)) != want {
			t.Fatalf("%d deliveries (stats %d), want %d", len(ds), st.Deliveries, want)
		}
		batch, _, err := run(o, events, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameDeliveries(ds, batch); err != nil {
			t.Fatalf("streaming and batch differ: %v", err)
		}
		again, _, _ := run(o, events, false)
		if err := sameDeliveries(ds, again); err != nil {
			t.Fatalf("not deterministic: %v", err)
		}
	})
}
