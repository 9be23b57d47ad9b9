package perturb

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestSimulate runs the scenarios in testdata/simulate:
//
//	simulate [seed=N] [dist=uniform|exponential] [delay=D] [max-delay=D]
//	         [straggler=F] [redeliver=F] [conflict=F] [conflict-field=NAME]
//	         [conflict-change=C] [partitions=N] [partition-by=NAME]
//	         [offline=F] [offline-delay=D] [arrival-field=NAME]
//	         [partition-field=NAME] [zone=ZONE] [batch]
//	<event time, RFC 3339, or - for none> <JSON object>
//	...
//	----
//	<one line per delivery, in output order>
//
// A delivery prints as "+<arrival − event time> <kind> [straggler]
// [offline] <output JSON>" ("@<arrival>" for a record without event
// time), then the stats. Every scenario is also checked against the
// invariants (check), and, fed all at once (batch), must give the same
// deliveries. Rewrite expectations with -rewrite, then check the changes
// by hand.
func TestSimulate(t *testing.T) {
	datadriven.Walk(t, "testdata/simulate", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd != "simulate" {
				t.Fatalf("unknown command %s", td.Cmd)
			}
			o := scenarioOptions(t, td)
			events := scenarioEvents(t, td.Input)
			o.Disorder = disorder(events)
			ds, st, err := run(o, events, false)
			if err != nil {
				return "error: " + err.Error()
			}
			if err := check(o, events, ds); err != nil {
				t.Errorf("%s: %v", td.Pos, err)
			}
			batch, _, _ := run(o, events, true)
			if err := sameDeliveries(ds, batch); err != nil {
				t.Errorf("%s: streaming and batch differ: %v", td.Pos, err)
			}
			var b strings.Builder
			for _, d := range ds {
				if d.EventTime == NoTime {
					fmt.Fprintf(&b, "@%s", time.UnixMilli(d.Arrival).UTC().Format("15:04:05.000"))
				} else {
					fmt.Fprintf(&b, "+%s", time.Duration(d.Arrival-d.EventTime)*time.Millisecond)
				}
				fmt.Fprintf(&b, " %s", d.Kind)
				if d.Straggler {
					b.WriteString(" straggler")
				}
				if d.Offline {
					b.WriteString(" offline")
				}
				fmt.Fprintf(&b, " %s\n", d.JSON)
			}
			fmt.Fprintf(&b, "records=%d deliveries=%d redeliveries=%d conflicts=%d skipped=%d stragglers=%d bursts=%d offline=%d max-delay=%s no-time=%d\n",
				st.Records, st.Deliveries, st.Redeliveries, st.Conflicts, st.ConflictsSkipped, st.Stragglers,
				st.OfflineBursts, st.OfflineRecords, time.Duration(st.MaxDelay)*time.Millisecond, st.NoTime)
			return b.String()
		})
	})
}

func scenarioOptions(t *testing.T, td *datadriven.TestData) Options {
	var o Options
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		return d
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		return f
	}
	for _, a := range td.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "seed":
			o.Seed, err = strconv.ParseInt(v, 10, 64)
		case "dist":
			o.Distribution, err = ParseDistribution(v)
		case "delay":
			o.Delay = dur(v)
		case "max-delay":
			o.MaxDelay = dur(v)
		case "straggler":
			o.StragglerFraction = num(v)
		case "redeliver":
			o.RedeliverFraction = num(v)
		case "conflict":
			o.ConflictFraction = num(v)
		case "conflict-field":
			o.ConflictField = v
		case "conflict-change":
			o.ConflictChange, err = ParseChange(v)
		case "partitions":
			o.Partitions, err = strconv.Atoi(v)
		case "partition-by":
			o.PartitionBy = v
		case "offline":
			o.OfflineFraction = num(v)
		case "offline-delay":
			o.OfflineDelay = dur(v)
		case "arrival-field":
			o.ArrivalField = v
		case "partition-field":
			o.PartitionField = v
		case "zone":
			o.Zone, err = time.LoadLocation(v)
		default:
			t.Fatalf("%s: unknown argument %s", td.Pos, a.Key)
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", td.Pos, a.Key, err)
		}
	}
	return o
}

func scenarioEvents(t *testing.T, input string) []Event {
	var events []Event
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		ts, obj, _ := strings.Cut(line, " ")
		et := NoTime
		if ts != "-" {
			tm, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatal(err)
			}
			et = tm.UnixMilli()
		}
		events = append(events, Event{JSON: []byte(obj), EventTime: et})
	}
	return events
}

func TestAddRejectsNonObjects(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{``, `[]`, `{"a":1`, `{"a":1}x`, `"s"`, `{"a":01}`, `{"a":"\q"}`, "{\"a\":\"\x01\"}", `{a:1}`, `{"a":1,}`, `{"a" 1}`} {
		if err := s.Add(Event{JSON: []byte(in)}); !errors.Is(err, ErrNotObject) {
			t.Errorf("Add(%q) = %v, want ErrNotObject", in, err)
		}
	}
	if st := s.Stats(); st.Records != 0 {
		t.Errorf("%d records counted", st.Records)
	}
}

func TestEventKeyOverridesPartitionBy(t *testing.T) {
	o := Options{Partitions: 7, PartitionBy: "device"}
	events := []Event{
		{JSON: []byte(`{"device":"a"}`), EventTime: 1},
		{JSON: []byte(`{"device":"a"}`), EventTime: 2, Key: "zz", HasKey: true},
		{JSON: []byte(`{}`), EventTime: 3},
	}
	ds, _, err := run(o, events, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(o, events, ds); err != nil {
		t.Fatal(err)
	}
	want := []int{int(FNV1a([]byte("a")) % 7), int(FNV1a([]byte("zz")) % 7), 2}
	for i, d := range ds {
		if d.Partition != want[i] {
			t.Errorf("record %d: partition %d, want %d", i, d.Partition, want[i])
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Delay: -time.Second}, "delays must not be negative"},
		{Options{Delay: 2 * time.Second, MaxDelay: time.Second}, "max_delay: 1s is less than delay 2s"},
		{Options{StragglerFraction: 1.5}, "straggler_fraction: must be between 0 and 1"},
		{Options{RedeliverFraction: -0.1}, "redeliver_fraction: must be between 0 and 1"},
		{Options{OfflineFraction: 2}, "offline_fraction: must be between 0 and 1"},
		{Options{ConflictFraction: 0.1}, "conflict_field: required with conflict_fraction"},
		{Options{Partitions: 5000}, "partitions: must be between 1 and 4096"},
		{Options{PartitionField: "ingested_at"}, `partition_field: "ingested_at" is also the arrival field`},
		{Options{ConflictFraction: 0.1, ConflictField: "partition"}, `conflict_field: "partition" is a field the simulator sets`},
		{Options{Distribution: 7}, "distribution: unknown distribution 7"},
	} {
		err := tc.o.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.o, err, tc.want)
		}
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%v is not an *OptionError", err)
		}
		if _, err := New(tc.o); err == nil {
			t.Errorf("New(%+v) succeeded", tc.o)
		}
	}
	if _, err := ParseDistribution("normal"); err == nil || err.Error() != `distribution: "normal" is neither uniform nor exponential` {
		t.Errorf("ParseDistribution: %v", err)
	}
}

// TestDeterminism: the same seed gives the same bytes; other seeds give
// other orders.
func TestDeterminism(t *testing.T) {
	events := make([]Event, 500)
	for i := range events {
		events[i] = Event{
			JSON:      fmt.Appendf(nil, `{"id":%d,"device":"d%d","amount":%d.5}`, i, i%17, i),
			EventTime: int64(i) * 700,
		}
	}
	o := Options{Seed: 42, Delay: 5 * time.Second, MaxDelay: time.Minute, StragglerFraction: 0.1,
		RedeliverFraction: 0.1, ConflictFraction: 0.1, ConflictField: "amount", Partitions: 3,
		PartitionBy: "device", OfflineFraction: 0.3, OfflineDelay: 20 * time.Second}
	render := func(o Options) string {
		ds, _, err := run(o, events, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(o, events, ds); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, d := range ds {
			b.Write(d.JSON)
			b.WriteByte('\n')
		}
		return b.String()
	}
	a := render(o)
	if b := render(o); a != b {
		t.Fatal("same seed, different bytes")
	}
	seen := map[string]int64{a: 42}
	for seed := range int64(20) {
		o.Seed = seed
		out := render(o)
		if prev, dup := seen[out]; dup {
			t.Fatalf("seeds %d and %d give the same output", prev, seed)
		}
		seen[out] = seed
	}
	// Turning conflicts off moves no other delivery.
	o.Seed = 42
	o.ConflictFraction = 0
	var without []string
	for l := range strings.SplitSeq(render(o), "\n") {
		without = append(without, l)
	}
	var with []string
	o.ConflictFraction = 0.1
	ds, _, _ := run(o, events, false)
	for _, d := range ds {
		if d.Kind != Conflict {
			with = append(with, string(d.JSON))
		}
	}
	if strings.Join(with, "\n")+"\n" != strings.Join(without, "\n") {
		t.Fatal("turning conflicts on moved other deliveries")
	}
}
