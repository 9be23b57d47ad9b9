package file

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/perturb"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

func TestReplayWithoutDelay(t *testing.T) {
	// With no delay, arrival = event time and the order is the read order;
	// records without an event time arrive at the horizon.
	dir := writeFiles(t, map[string]string{"a.jsonl": `{"id":"bad","ts":"x"}
{"id":"a","ts":"2026-09-01T10:00:05Z"}
{"id":"b","ts":"2026-09-01T10:00:05Z"}
{"id":"c","ts":"2026-09-01T10:00:03Z"}
{"id":"d"}
{"id":"e","ts":"2026-09-01T10:00:09Z"}
`})
	s, err := New(Config{
		Spec:           spec.Source{Path: dir + "/a.jsonl", Replay: &spec.Replay{Seed: 1, Partitions: 2}},
		Fields:         testFields(t, "id:string", "ts:timestamp"),
		EventTimeField: "ts",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Partitions(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("Partitions() = %q", got)
	}
	diff(t, drain(t, s, 2, dir), []rec{
		{`id="bad" ts=null`, `p=0/p0 at=2026-09-01T10:00:05Z a.jsonl:1@0 raw="{\"id\":\"bad\",\"ts\":\"x\"}" err=timestamp field ts: unparsable timestamp: "x" is not RFC 3339`},
		{`id="a" ts=2026-09-01T10:00:05Z`, `p=1/p1 at=2026-09-01T10:00:05Z a.jsonl:2@22 raw="{\"id\":\"a\",\"ts\":\"2026-09-01T10:00:05Z\"}"`},
		{`id="b" ts=2026-09-01T10:00:05Z`, `p=0/p0 at=2026-09-01T10:00:05Z a.jsonl:3@61 raw="{\"id\":\"b\",\"ts\":\"2026-09-01T10:00:05Z\"}"`},
		{`id="c" ts=2026-09-01T10:00:03Z`, `p=1/p1 at=2026-09-01T10:00:03Z a.jsonl:4@100 raw="{\"id\":\"c\",\"ts\":\"2026-09-01T10:00:03Z\"}"`},
		{`id="d" ts=null`, `p=0/p0 at=2026-09-01T10:00:05Z a.jsonl:5@139 raw="{\"id\":\"d\"}"`},
		{`id="e" ts=2026-09-01T10:00:09Z`, `p=1/p1 at=2026-09-01T10:00:09Z a.jsonl:6@150 raw="{\"id\":\"e\",\"ts\":\"2026-09-01T10:00:09Z\"}"`},
	})
}

func TestReplayOnlyInvalidRecords(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": "{}\n[]\n"})
	s, err := New(Config{
		Spec:           spec.Source{Path: dir + "/a.jsonl", Replay: &spec.Replay{Seed: 1, Partitions: 1, RedeliverFraction: 1}},
		Fields:         testFields(t, "ts:timestamp"),
		EventTimeField: "ts",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	diff(t, drain(t, s, 10, dir), []rec{
		{`ts=null`, `p=0/p0 at=1970-01-01T00:00:00Z a.jsonl:1@0 raw="{}"`},
		{`ts=null`, `p=0/p0 at=1970-01-01T00:00:00Z a.jsonl:2@3 raw="[]" err=decode want a JSON object, got array []`},
	})
}

// orders writes n order events, one per second with every tenth second
// repeated, over stores s0…s9, and returns the directory.
func orders(t testing.TB, n int) string {
	var b strings.Builder
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		ts := t0.Add(time.Duration(i-i/10) * time.Second)
		if i%97 == 13 {
			fmt.Fprintf(&b, "{\"id\":\"e%d\",\"store\":\"s%d\",\"ts\":\"broken\"}\n", i, i%10)
			continue
		}
		fmt.Fprintf(&b, "{\"id\":\"e%d\",\"store\":\"s%d\",\"ts\":\"%s\"}\n", i, i%10, ts.Format(time.RFC3339))
	}
	return writeFiles(t, map[string]string{"orders.jsonl": b.String()})
}

func replayConfig(dir string, seed int64, t testing.TB) Config {
	return Config{
		Spec: spec.Source{
			Path:    dir + "/orders.jsonl",
			Ordinal: &spec.Ordinal{Field: "n"},
			Replay: &spec.Replay{
				Seed: seed, Delay: spec.Duration(10 * time.Second), MaxDelay: spec.Duration(60 * time.Second),
				StragglerFraction: 0.1, RedeliverFraction: 0.05, Partitions: 4, PartitionBy: "store",
			},
		},
		Fields:         testFields(t, "id:string", "store:string", "ts:timestamp", "n:int"),
		EventTimeField: "ts",
	}
}

func TestReplayIsDeterministic(t *testing.T) {
	dir := orders(t, 3000)
	run := func(seed int64, max int) []rec {
		s, err := New(replayConfig(dir, seed, t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return drain(t, s, max, dir)
	}
	a, b := run(7, 100), run(7, 33)
	if !slices.Equal(a, b) {
		t.Fatal("same seed and files, different output (batch sizes 100 and 33)")
	}
	if c := run(8, 100); slices.Equal(a, c) {
		t.Fatal("seeds 7 and 8 give the same output")
	}
}

func TestReplayProperties(t *testing.T) {
	const n = 3000
	dir := orders(t, n)
	cfg := replayConfig(dir, 42, t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := cfg.Fields.Schema
	id, _ := sc.Lookup("id")
	store, _ := sc.Lookup("store")
	ts, _ := sc.Lookup("ts")
	ord, _ := sc.Lookup("n")
	maxDelay := cfg.Spec.Replay.MaxDelay.Ms()
	delay := cfg.Spec.Replay.Delay.Ms()

	first := map[string]int64{} // id → arrival of the first delivery
	var last int64 = source.NoArrival
	var stragglers, redeliveries, invalid, maxHeld int
	var b source.Batch
	for {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 64)
		maxHeld = max(maxHeld, s.rp.q.Len())
		for i := range b.Meta {
			r, m := &b.Rows[i], &b.Meta[i]
			if m.Arrival < last {
				t.Fatalf("arrival %d after %d: not in arrival order", m.Arrival, last)
			}
			last = m.Arrival
			if got := r.I[ord.Slot]; got != m.Pos.Line {
				t.Fatalf("ordinal %d on line %d", got, m.Pos.Line)
			}
			key := strings.Clone(r.S[id.Slot]) // kept across batches
			if !r.IsNull(store.Index) {
				if want := int(perturb.FNV1a([]byte(r.S[store.Slot])) % 4); m.Partition != want {
					t.Fatalf("%s: partition %d, want %d", key, m.Partition, want)
				}
			}
			if m.Err != nil {
				invalid++
				if m.Redelivery {
					t.Fatalf("%s: invalid record redelivered", key)
				}
			}
			if m.Redelivery {
				redeliveries++
				a, ok := first[key]
				if !ok || m.Arrival < a || m.Arrival-a > maxDelay {
					t.Fatalf("%s: redelivery at %d, first delivery at %d (seen %v)", key, m.Arrival, a, ok)
				}
				continue
			}
			if _, dup := first[key]; dup {
				t.Fatalf("%s delivered twice without Redelivery", key)
			}
			first[key] = m.Arrival
			if m.Err == nil {
				d := m.Arrival - r.I[ts.Slot]
				if d < 0 || d > maxDelay {
					t.Fatalf("%s: delay %d ms outside [0, %d]", key, d, maxDelay)
				}
				if d > delay {
					stragglers++
				}
			}
		}
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(first) != n {
		t.Fatalf("%d records delivered, want %d", len(first), n)
	}
	t.Logf("%d invalid, %d redeliveries, %d delays above %d ms, at most %d held", invalid, redeliveries, stragglers, delay, maxHeld)
	if invalid != 31 {
		t.Errorf("%d invalid records, want 31", invalid)
	}
	// 5% redelivered, 10% stragglers of which 5/6 exceed delay: loose bounds.
	if redeliveries < 100 || redeliveries > 200 {
		t.Errorf("%d redeliveries, want about 150", redeliveries)
	}
	if stragglers < 150 || stragglers > 350 {
		t.Errorf("%d delays above delay, want about 250", stragglers)
	}
	// Events are ~0.9 s apart: the heap holds about the last max_delay.
	if maxHeld > 2*int(maxDelay/900) {
		t.Errorf("held up to %d records; the bound is about %d", maxHeld, maxDelay/900)
	}
}

// TestReplayRowsOwnMemory checks that held rows do not share the decoder's
// buffers: delivered strings match the input although the decoder and the
// line buffer were reused many times while the rows were held.
func TestReplayRowsOwnMemory(t *testing.T) {
	dir := orders(t, 2000)
	cfg := replayConfig(dir, 3, t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range drain(t, s, 500, dir) {
		// The raw line holds the id; the row's id must agree.
		i := strings.Index(r.Meta, `{\"id\":\"`)
		j := strings.Index(r.Row, `id="`)
		if i < 0 || j < 0 {
			t.Fatalf("unexpected record %v", r)
		}
		rawID := r.Meta[i+len(`{\"id\":\"`):]
		rawID = rawID[:strings.Index(rawID, `\"`)]
		rowID := r.Row[j+4:]
		rowID = rowID[:strings.Index(rowID, `"`)]
		if rawID != rowID {
			t.Fatalf("row id %q, raw id %q", rowID, rawID)
		}
	}
}
