package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// cluster starts an in-process broker with the given topics (name →
// partitions) and returns its address.
func cluster(t *testing.T, topics map[string]int32) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// client returns a producer that honors Record.Partition.
func client(t *testing.T, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func rec(topic string, p int32, value string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}
}

// fields is the test schema: id (string), amount (decimal), ts (timestamp).
func fields(t testing.TB) format.Fields {
	t.Helper()
	s := row.NewSchema()
	for _, f := range []struct {
		name string
		kind row.Kind
	}{{"id", row.KindString}, {"amount", row.KindDecimal}, {"ts", row.KindTime}} {
		if _, err := s.Add(f.name, f.kind); err != nil {
			t.Fatal(err)
		}
	}
	return format.Fields{Schema: s}
}

func newSource(t *testing.T, cfg Config) *Source {
	t.Helper()
	if cfg.Fields.Schema == nil {
		cfg.Fields = fields(t)
	}
	if cfg.PollTimeoutMs == 0 {
		cfg.PollTimeoutMs = 50
	}
	if cfg.EventTimeField == "" {
		cfg.EventTimeField = "ts"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// got is one delivered record, rendered for comparison.
type got struct {
	part  string // partition name
	index int    // Meta.Partition
	pos   string // Meta.Pos.String()
	text  string // id|amount|ts, or "err <rule>: <reason>"
	raw   string
	event string // EventJSON
}

func render(s *Source, b *source.Batch, i int) got {
	m := &b.Meta[i]
	g := got{index: m.Partition, part: s.Partitions()[m.Partition], pos: m.Pos.String(), raw: string(m.Raw), event: string(s.EventJSON(nil, m))}
	if m.Err != nil {
		g.text = "err " + m.Err.Rule + ": " + m.Err.Error()
		return g
	}
	r := &b.Rows[i]
	sc := s.dec.schema
	var parts []string
	for _, f := range sc.Fields {
		parts = append(parts, r.Get(f).String())
	}
	g.text = strings.Join(parts, "|")
	return g
}

// read calls Next until n records came (max per call), failing after 10 s.
func read(t *testing.T, s *Source, n, max int) []got {
	t.Helper()
	var out []got
	deadline := time.Now().Add(10 * time.Second)
	var b source.Batch
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d records of %d: %v", len(out), n, out)
		}
		b.Reset()
		if _, err := s.Next(context.Background(), &b, min(max, n-len(out))); err != nil {
			t.Fatal(err)
		}
		for i := range b.Meta {
			out = append(out, render(s, &b, i))
		}
	}
	return out
}

// byPos orders records by partition index, then offset (the order within
// a partition is Kafka's; across partitions it is not defined).
func byPos(gs []got) []got {
	gs = slices.Clone(gs)
	slices.SortStableFunc(gs, func(a, b got) int { return a.index - b.index })
	return gs
}

func TestDecodeNamesAndPositions(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 2})
	cl := client(t, brokers)
	produce(t, cl,
		rec("orders", 0, `{"id":"a","amount":1.50,"ts":"2026-03-01T10:00:00+09:00"}`),
		rec("orders", 0, `not json`),
		&kgo.Record{Topic: "orders", Partition: 0}, // a tombstone: no value
		rec("orders", 1, "{\"id\":\"b\",\n\"amount\":\"x\"}"),
		rec("orders", 1, `{"id":"c","amount":2,"ts":"2026-03-01T01:00:01Z"}`),
	)
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}})
	if len(s.Partitions()) != 0 {
		t.Fatalf("partitions before the first read: %v", s.Partitions())
	}
	gs := byPos(read(t, s, 5, 100))
	want := []got{
		{"orders/0", 0, "orders[0]@0", "a|1.50|2026-03-01T01:00:00Z", `{"id":"a","amount":1.50,"ts":"2026-03-01T10:00:00+09:00"}`, `{"id":"a","amount":1.50,"ts":"2026-03-01T10:00:00+09:00"}`},
		{"orders/0", 0, "orders[0]@1", "err decode: cannot decode JSON: want a JSON value at offset 0 (\"not json\")", "not json", `{"_raw":"not json"}`},
		{"orders/0", 0, "orders[0]@2", "", "", `{"_raw":""}`},
		{"orders/1", 1, "orders[1]@0", `err type: field amount: want decimal, got string "x"`, "{\"id\":\"b\",\n\"amount\":\"x\"}", `{"id":"b", "amount":"x"}`},
		{"orders/1", 1, "orders[1]@1", "c|2|2026-03-01T01:00:01Z", `{"id":"c","amount":2,"ts":"2026-03-01T01:00:01Z"}`, `{"id":"c","amount":2,"ts":"2026-03-01T01:00:01Z"}`},
	}
	// The decoder's exact wording for an empty value and for non-JSON is
	// format's business: check the rule and that the reason is not empty.
	for i := range gs {
		if strings.HasPrefix(want[i].text, "err decode") || want[i].text == "" {
			if !strings.HasPrefix(gs[i].text, "err decode: ") {
				t.Errorf("record %d: %q, want a decode error", i, gs[i].text)
			}
			gs[i].text, want[i].text = "", ""
		}
	}
	if !slices.Equal(gs, want) {
		t.Errorf("records:\n got %+v\nwant %+v", gs, want)
	}
	if p := s.Partitions(); !slices.Equal(p, []string{"orders/0", "orders/1"}) {
		t.Errorf("partitions %q", p)
	}
	if l := s.Lag(); !slices.Equal(l, []int64{0, 0}) {
		t.Errorf("lag %v, want [0 0]", l)
	}
}

func TestEmptyPollReturnsAfterTimeout(t *testing.T) {
	brokers := cluster(t, map[string]int32{"quiet": 1})
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"quiet"}, PollTimeoutMs: 100})
	var b source.Batch
	for range 3 {
		start := time.Now()
		if _, err := s.Next(context.Background(), &b, 10); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); b.Len() != 0 || d > 3*time.Second {
			t.Fatalf("Next: %d records after %v", b.Len(), d)
		}
	}
	if p := s.Partitions(); !slices.Equal(p, []string{"quiet/0"}) {
		t.Errorf("partitions %q", p)
	}
	if l := s.Lag(); !slices.Equal(l, []int64{0}) {
		t.Errorf("lag %v", l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx, &b, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context: %v", err)
	}
	s.Close()
	if _, err := s.Next(context.Background(), &b, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v", err)
	}
}

func TestPositionAndSeek(t *testing.T) {
	brokers := cluster(t, map[string]int32{"a": 2, "b": 1})
	cl := client(t, brokers)
	var all []string
	for i := range 4 {
		for _, k := range []struct {
			topic string
			p     int32
		}{{"a", 0}, {"a", 1}, {"b", 0}} {
			v := fmt.Sprintf(`{"id":"%s%d-%d","ts":"2026-03-01T00:00:0%dZ"}`, k.topic, k.p, i, i)
			produce(t, cl, rec(k.topic, k.p, v))
			all = append(all, v)
		}
	}
	cfg := Config{Brokers: brokers, Topics: []string{"b", "a"}}
	s1 := newSource(t, cfg)
	first := read(t, s1, 5, 2)
	pos := s1.Position()
	if !bytes.Equal(pos, s1.Position()) {
		t.Fatal("Position is not deterministic")
	}
	names := slices.Clone(s1.Partitions())
	if !slices.Equal(names, []string{"b/0", "a/0", "a/1"}) {
		t.Fatalf("partitions %q: want topics in config order, partitions ascending", names)
	}
	// The encoded offsets are one past the last record delivered per partition.
	entries, opened, err := decodePosition(pos)
	if err != nil || !opened {
		t.Fatal(err, opened)
	}
	for i, e := range entries {
		if fmt.Sprintf("%s/%d", e.topic, e.p) != names[i] {
			t.Errorf("entry %d is %s/%d, want %s", i, e.topic, e.p, names[i])
		}
		var n int64
		for _, g := range first {
			if g.index == i {
				n++
			}
		}
		if e.next != n {
			t.Errorf("%s: next offset %d, delivered %d", names[i], e.next, n)
		}
	}
	s1.Close()

	// A partition created after the checkpoint is appended and read from
	// its start.
	adm := kadm.NewClient(cl)
	if _, err := adm.CreatePartitions(context.Background(), 1, "a"); err != nil {
		t.Fatal(err)
	}
	late := `{"id":"a2-0","ts":"2026-03-01T00:00:09Z"}`
	produce(t, client(t, brokers), rec("a", 2, late)) // a client that knows the new partition
	all = append(all, late)

	s2 := newSource(t, cfg)
	if err := s2.Seek(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	if p := s2.Partitions(); !slices.Equal(p, []string{"b/0", "a/0", "a/1", "a/2"}) {
		t.Fatalf("partitions after Seek %q", p)
	}
	rest := read(t, s2, len(all)-len(first), 100)
	var seen []string
	for _, g := range append(first, rest...) {
		seen = append(seen, g.raw)
	}
	slices.Sort(seen)
	slices.Sort(all)
	if !slices.Equal(seen, all) {
		t.Errorf("records across the restart:\n got %q\nwant %q", seen, all)
	}
	if err := s2.Seek(context.Background(), pos); err == nil {
		t.Error("Seek after reading: no error")
	}
	// Nothing more: an empty batch.
	var b source.Batch
	if _, err := s2.Next(context.Background(), &b, 10); err != nil || b.Len() != 0 {
		t.Errorf("Next at the end: %d records, %v", b.Len(), err)
	}
	if l := s2.Lag(); !slices.Equal(l, []int64{0, 0, 0, 0}) {
		t.Errorf("lag %v", l)
	}
}

func TestSeekErrors(t *testing.T) {
	brokers := cluster(t, map[string]int32{"a": 1, "c": 1})
	cfg := Config{Brokers: brokers, Topics: []string{"a"}}
	pos := func(entries ...entry) []byte {
		s := &Source{opened: true, index: map[tp]int{}}
		for _, e := range entries {
			s.addPart(e.topic, e.p, e.next)
		}
		return s.Position()
	}
	for _, c := range []struct {
		pos  []byte
		want string
	}{
		{[]byte{9}, "section version 9"},
		{append(pos(entry{"a", 0, 3}), 0), "bytes after the position"},
		{pos(entry{"a", 0, 1}, entry{"a", 0, 2}), "listed twice"},
		{pos(entry{"a", 5, 1}), "partition a/5, which no longer exists"},
		{pos(entry{"c", 0, 1}), `topic "c", which is not in source.topics`},
	} {
		s := newSource(t, cfg)
		err := s.Seek(context.Background(), c.pos)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Seek: %v, want %q", err, c.want)
		}
	}
	// A position taken before the first read starts as configured.
	s := newSource(t, cfg)
	if err := s.Seek(context.Background(), (&Source{}).Position()); err != nil || s.opened {
		t.Errorf("Seek to an unopened position: %v, opened %v", err, s.opened)
	}
	// A topic that does not exist.
	s = newSource(t, Config{Brokers: brokers, Topics: []string{"nope"}})
	var b source.Batch
	if _, err := s.Next(context.Background(), &b, 1); err == nil || !strings.Contains(err.Error(), `topic "nope" does not exist`) {
		t.Errorf("missing topic: %v", err)
	}
}

func TestPartitionAddedAtRunTime(t *testing.T) {
	brokers := cluster(t, map[string]int32{"grow": 1})
	cl := client(t, brokers)
	produce(t, cl, rec("grow", 0, `{"id":"x"}`))
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"grow"}, DiscoveryIntervalMs: 50})
	if g := read(t, s, 1, 10); g[0].pos != "grow[0]@0" {
		t.Fatalf("first record %v", g)
	}
	if _, err := kadm.NewClient(cl).CreatePartitions(context.Background(), 2, "grow"); err != nil {
		t.Fatal(err)
	}
	produce(t, client(t, brokers), rec("grow", 2, `{"id":"z"}`), rec("grow", 1, `{"id":"y"}`))
	gs := byPos(read(t, s, 2, 10))
	want := []got{
		{"grow/1", 1, "grow[1]@0", "y|null|null", `{"id":"y"}`, `{"id":"y"}`},
		{"grow/2", 2, "grow[2]@0", "z|null|null", `{"id":"z"}`, `{"id":"z"}`},
	}
	if !slices.Equal(gs, want) {
		t.Errorf("records:\n got %+v\nwant %+v", gs, want)
	}
	if p := s.Partitions(); !slices.Equal(p, []string{"grow/0", "grow/1", "grow/2"}) {
		t.Errorf("partitions %q", p)
	}
	if st := s.Stats(); st.DiscoveryErr != nil {
		t.Error(st.DiscoveryErr)
	}
}

func TestKafkaTimestampEventTime(t *testing.T) {
	brokers := cluster(t, map[string]int32{"ts": 1})
	cl := client(t, brokers)
	produce(t, cl,
		&kgo.Record{Topic: "ts", Value: []byte(`{"id":"a","ts":"2000-01-01T00:00:00Z"}`), Timestamp: time.UnixMilli(1_772_330_400_250)},
		&kgo.Record{Topic: "ts", Value: []byte(`{"id":"b","ts":"garbage"}`), Timestamp: time.UnixMilli(1_772_330_401_000)},
		&kgo.Record{Topic: "ts", Value: []byte(`[1]`), Timestamp: time.UnixMilli(1_772_330_402_000)},
	)
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"ts"}, EventTimeFrom: EventTimeKafkaTimestamp})
	gs := read(t, s, 3, 10)
	wantText := []string{
		"a|null|2026-03-01T02:00:00.250Z", // the payload's ts is not read
		"b|null|2026-03-01T02:00:01Z",
	}
	for i, w := range wantText {
		if gs[i].text != w {
			t.Errorf("record %d: %q, want %q", i, gs[i].text, w)
		}
	}
	if !strings.HasPrefix(gs[2].text, "err decode: ") {
		t.Errorf("an array value: %q", gs[2].text)
	}
	// The payload decoder is the same as with payload event time.
	s2 := newSource(t, Config{Brokers: brokers, Topics: []string{"ts"}})
	if g := read(t, s2, 1, 1); g[0].text != "a|null|2000-01-01T00:00:00Z" {
		t.Errorf("payload event time: %q", g[0].text)
	}
}

func TestTransactionalInputAndLag(t *testing.T) {
	brokers := cluster(t, map[string]int32{"tx": 1})
	tx := client(t, brokers, kgo.TransactionalID("writer"))
	ctx := context.Background()
	txn := func(commit kgo.TransactionEndTry, ids ...string) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			produce(t, tx, rec("tx", 0, `{"id":"`+id+`"}`))
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets: 0..5 committed, 6 its marker; 7, 8 aborted, 9 the abort marker.
	txn(kgo.TryCommit, "0", "1", "2", "3", "4", "5")
	txn(kgo.TryAbort, "x", "y")

	s := newSource(t, Config{Brokers: brokers, Topics: []string{"tx"}})
	read(t, s, 2, 2)
	if l := s.Lag(); !slices.Equal(l, []int64{8}) {
		t.Errorf("lag after 2 of 6 records: %v, want [8] (end offset 10, next 2)", l)
	}
	gs := read(t, s, 4, 100)
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.text)
	}
	if want := []string{"2|null|null", "3|null|null", "4|null|null", "5|null|null"}; !slices.Equal(ids, want) {
		t.Errorf("records %q, want %q", ids, want)
	}
	// The markers and the aborted records are passed over.
	var b source.Batch
	deadline := time.Now().Add(10 * time.Second)
	for s.parts[0].next != 10 && time.Now().Before(deadline) {
		b.Reset()
		if _, err := s.Next(ctx, &b, 10); err != nil || b.Len() != 0 {
			t.Fatalf("Next: %d records (%v), want none", b.Len(), err)
		}
	}
	if l := s.Lag(); !slices.Equal(l, []int64{0}) {
		t.Errorf("lag at the end %v, want [0]", l)
	}
	entries, _, _ := decodePosition(s.Position())
	if len(entries) != 1 || entries[0].next != 10 {
		t.Errorf("position %+v, want tx/0 at 10", entries)
	}

	// read_uncommitted sees the aborted records.
	u := newSource(t, Config{Brokers: brokers, Topics: []string{"tx"}, ReadUncommitted: true})
	if gs := read(t, u, 8, 100); gs[7].text != "y|null|null" {
		t.Errorf("read_uncommitted: %v", gs)
	}
}

func TestStartLatestAndTimestamp(t *testing.T) {
	brokers := cluster(t, map[string]int32{"st": 1})
	cl := client(t, brokers)
	for i := 1; i <= 3; i++ {
		produce(t, cl, &kgo.Record{Topic: "st", Value: fmt.Appendf(nil, `{"id":"%d"}`, i), Timestamp: time.UnixMilli(int64(i) * 1000)})
	}
	latest := newSource(t, Config{Brokers: brokers, Topics: []string{"st"}, Start: StartLatest})
	var b source.Batch
	if _, err := latest.Next(context.Background(), &b, 10); err != nil || b.Len() != 0 {
		t.Fatalf("latest: %d records (%v) before any new one", b.Len(), err)
	}
	produce(t, cl, &kgo.Record{Topic: "st", Value: []byte(`{"id":"4"}`), Timestamp: time.UnixMilli(4000)})
	if g := read(t, latest, 1, 10); g[0].pos != "st[0]@3" {
		t.Errorf("latest: %v", g)
	}
	at := newSource(t, Config{Brokers: brokers, Topics: []string{"st"}, Start: StartTimestamp, StartTimestamp: 2000})
	gs := read(t, at, 3, 10)
	if gs[0].pos != "st[0]@1" || gs[2].pos != "st[0]@3" {
		t.Errorf("timestamp 2000: %v", gs)
	}
}

func TestGroupOffsetsForLagMonitoring(t *testing.T) {
	brokers := cluster(t, map[string]int32{"g": 2})
	cl := client(t, brokers)
	produce(t, cl, rec("g", 0, `{}`), rec("g", 0, `{}`), rec("g", 1, `{}`))
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"g"}, Group: "tidemark-test"})
	read(t, s, 3, 10)
	s.Position() // a checkpoint
	var b source.Batch
	if _, err := s.Next(context.Background(), &b, 10); err != nil { // commits
		t.Fatal(err)
	}
	if err := s.Stats().CommitErr; err != nil {
		t.Fatal(err)
	}
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "tidemark-test")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range []int64{2, 1} {
		o, ok := resp.Lookup("g", int32(p))
		if !ok || o.Err != nil || o.At != want {
			t.Errorf("group offset of g/%d: %+v, want %d", p, o, want)
		}
	}
	if err := s.CommitOffsets(context.Background()); err != nil { // nothing pending
		t.Error(err)
	}
}

func TestNewErrors(t *testing.T) {
	f := fields(t)
	ok := Config{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"t"}, Fields: f}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Brokers = nil }, "source.brokers: required"},
		{func(c *Config) { c.Topics = nil }, "source.topics: required"},
		{func(c *Config) { c.Topics = []string{"t", "t"} }, `"t" listed twice`},
		{func(c *Config) { c.Start = "beginning" }, `source.start: "beginning"`},
		{func(c *Config) { c.EventTimeFrom = "header" }, `event_time.from: "header"`},
		{func(c *Config) { c.EventTimeFrom = EventTimeKafkaTimestamp }, "event_time.field: required"},
		{func(c *Config) { c.EventTimeField = "id" }, `field "id" is string, want timestamp`},
		{func(c *Config) { c.EventTimeField = "when" }, `field "when" is not in the source schema`},
		{func(c *Config) { c.PollTimeoutMs = -1 }, "source.poll_timeout: -1 ms is negative"},
		{func(c *Config) { c.Fields = format.Fields{} }, "Fields.Schema is nil"},
	} {
		cfg := ok
		c.edit(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want %q", err, c.want)
		}
	}
	s, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.cfg.Start != StartEarliest || s.cfg.EventTimeFrom != EventTimePayload || s.poll != 500*time.Millisecond || s.cfg.FetchMaxWaitMs != 500 {
		t.Errorf("defaults: %+v", s.cfg)
	}
}

// TestStopAtEnd: a bounded read delivers exactly the records before the
// end offsets listed when the source opened, then io.EOF; records
// produced afterwards are not read.
func TestStopAtEnd(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 2})
	cl := client(t, brokers)
	produce(t, cl,
		rec("orders", 0, `{"id":"a","amount":1,"ts":"2026-09-01T10:00:00Z"}`),
		rec("orders", 1, `{"id":"b","amount":2,"ts":"2026-09-01T10:00:01Z"}`),
		rec("orders", 0, `{"id":"c","amount":3,"ts":"2026-09-01T10:00:02Z"}`))
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}, StopAtEnd: true})
	var b source.Batch
	var out []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no source.End; read %v", out)
		}
		b.Reset()
		st, err := s.Next(context.Background(), &b, 10)
		for i := range b.Meta {
			out = append(out, render(s, &b, i).pos)
			if len(out) == 1 {
				// Produced after the source opened: past its end.
				produce(t, cl, rec("orders", 1, `{"id":"d","amount":4,"ts":"2026-09-01T10:00:03Z"}`))
			}
		}
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	if want := []string{"orders[0]@0", "orders[0]@1", "orders[1]@0"}; !slices.Equal(out, want) {
		t.Errorf("read %v, want %v", out, want)
	}
	b.Reset()
	if st, err := s.Next(context.Background(), &b, 10); err != nil || st != source.End || b.Len() != 0 {
		t.Errorf("after the end: %d records, err %v; want 0, source.End", b.Len(), err)
	}
}

// TestCheckRetention: after retention deleted offsets 0–4 of a partition,
// a backfill from a time inside the deleted records is refused, naming the
// partition; one from a time after the first remaining record passes.
func TestCheckRetention(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 1})
	cl := client(t, brokers)
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range 10 {
		r := rec("orders", 0, fmt.Sprintf(`{"id":"e%d"}`, i))
		r.Timestamp = base.Add(time.Duration(i) * time.Minute)
		produce(t, cl, r)
	}
	cfg := Config{Brokers: brokers, Topics: []string{"orders"}}
	if err := CheckRetention(context.Background(), cfg, base.UnixMilli()); err != nil {
		t.Fatalf("nothing deleted yet: %v", err)
	}
	adm := kadm.NewClient(cl)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 5})
	res, err := adm.DeleteRecords(context.Background(), offs)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	err = CheckRetention(context.Background(), cfg, base.Add(2*time.Minute).UnixMilli())
	if err == nil || !strings.Contains(err.Error(), "orders/0 (log starts at offset 5)") {
		t.Errorf("from 10:02 after deleting 0–4: %v", err)
	}
	if err := CheckRetention(context.Background(), cfg, base.Add(7*time.Minute).UnixMilli()); err != nil {
		t.Errorf("from 10:07: %v", err)
	}
}

// TestBatchesStayValid: a batch's rows, strings and raw values belong to
// the batch: three batches filled by successive calls to Next are intact
// after the third, while another goroutine reads the first one (run with
// -race), and together hold the records in offset order.
func TestBatchesStayValid(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 1})
	cl := client(t, brokers)
	var recs []*kgo.Record
	for i := range 90 {
		recs = append(recs, rec("orders", 0, fmt.Sprintf(`{"id":"order-%d-%s","amount":%d.25,"ts":"2026-03-01T10:00:%02d+09:00"}`, i, strings.Repeat("x", i%13), i, i%60)))
	}
	produce(t, cl, recs...)
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}})
	var b [3]source.Batch
	fill := func(b *source.Batch) {
		deadline := time.Now().Add(10 * time.Second)
		for b.Len() < 30 {
			if time.Now().After(deadline) {
				t.Fatalf("%d records", b.Len())
			}
			if _, err := s.Next(context.Background(), b, 30-b.Len()); err != nil {
				t.Fatal(err)
			}
		}
	}
	renderAll := func(b *source.Batch) []got {
		var out []got
		for i := range b.Meta {
			out = append(out, render(s, b, i))
		}
		return out
	}
	fill(&b[0])
	first := renderAll(&b[0])
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := range b[0].Meta {
				_ = b[0].Rows[i].Get(s.dec.schema.Fields[0]).String() + string(b[0].Meta[i].Raw)
				_ = s.EventJSON(nil, &b[0].Meta[i])
			}
		}
	}()
	fill(&b[1])
	fill(&b[2])
	close(stop)
	<-done
	if g := renderAll(&b[0]); !slices.Equal(g, first) {
		t.Fatalf("first batch changed:\n got %v\nwant %v", g, first)
	}
	for k := range b {
		for i := range b[k].Meta {
			n := 30*k + i
			want := fmt.Sprintf(`{"id":"order-%d-%s","amount":%d.25,"ts":"2026-03-01T10:00:%02d+09:00"}`, n, strings.Repeat("x", n%13), n, n%60)
			if g := render(s, &b[k], i); g.raw != want || g.event != want || !strings.HasPrefix(g.text, fmt.Sprintf("order-%d-%s|%d.25|", n, strings.Repeat("x", n%13), n)) {
				t.Fatalf("batch %d record %d: %+v, want %s", k, i, g, want)
			}
		}
	}
}

// TestEncodingRule: a payload whose decoded string holds a NUL character
// (\u0000) or invalid UTF-8 carries an "encoding" error naming the field
// and the byte offset, so the record is quarantined before any state; the
// other records are decoded.
func TestEncodingRule(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 1})
	cl := client(t, brokers)
	produce(t, cl,
		rec("orders", 0, `{"id":"a\u0000","amount":1,"ts":"2026-03-01T10:00:00Z"}`),
		rec("orders", 0, "{\"id\":\"\xff\",\"amount\":2,\"ts\":\"2026-03-01T10:00:01Z\"}"),
		rec("orders", 0, `{"id":"c","amount":3,"ts":"2026-03-01T10:00:02Z"}`),
	)
	s := newSource(t, Config{Brokers: brokers, Topics: []string{"orders"}})
	gs := read(t, s, 3, 10)
	want := []string{
		"err encoding: field id: NUL character at byte 8 (PostgreSQL text cannot store it)",
		"err encoding: field id: invalid UTF-8 at byte 7",
		"c|3|2026-03-01T10:00:02Z",
	}
	for i, g := range gs {
		if g.text != want[i] {
			t.Errorf("record %d: %s, want %s", i, g.text, want[i])
		}
	}
}

// TestPositionAt: for batches of a read of three partitions (records
// produced one per partition in turn, read 7 at a time, so that batches
// hold the end of one partition and the start of the next), the position
// after the first n records of a batch, sought by a new source, delivers
// exactly the records that those n and the batches before left out —
// each once — and PositionAt of a whole batch is Position.
func TestPositionAt(t *testing.T) {
	brokers := cluster(t, map[string]int32{"orders": 3})
	cl := client(t, brokers)
	var all []string
	for i := range 10 {
		for p := range int32(3) {
			v := fmt.Sprintf(`{"id":"p%d-%d","amount":%d,"ts":"2026-09-01T10:00:%02dZ"}`, p, i, i, i)
			produce(t, cl, rec("orders", p, v))
			all = append(all, v)
		}
	}
	cfg := Config{Brokers: brokers, Topics: []string{"orders"}, StopAtEnd: true}
	// readAll reads s to its end, returning the raw values.
	readAll := func(s *Source) []string {
		var out []string
		var b source.Batch
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			b.Reset()
			st, err := s.Next(context.Background(), &b, 7)
			for i := range b.Meta {
				out = append(out, string(b.Meta[i].Raw))
			}
			if st == source.End {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("no end after %d records", len(out))
		return nil
	}
	s := newSource(t, cfg)
	var before []string // the records of the batches before b
	mixed := 0
	var b source.Batch
	for k := 0; ; k++ {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 7)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() > 0 && b.Meta[0].Partition != b.Meta[b.Len()-1].Partition {
			mixed++
		}
		if !bytes.Equal(s.PositionAt(&b, b.Len()), s.Position()) {
			t.Fatalf("batch %d: PositionAt of the whole batch is not Position", k)
		}
		for _, n := range []int{0, 1, b.Len() / 2, b.Len() - 1, b.Len()} {
			if n < 0 || n > b.Len() {
				continue
			}
			pos := s.PositionAt(&b, n)
			routed := slices.Clone(before)
			for i := range n {
				routed = append(routed, string(b.Meta[i].Raw))
			}
			s2 := newSource(t, cfg)
			if err := s2.Seek(context.Background(), pos); err != nil {
				t.Fatal(err)
			}
			got := append(routed, readAll(s2)...)
			s2.Close()
			slices.Sort(got)
			want := slices.Sorted(slices.Values(all))
			if !slices.Equal(got, want) {
				t.Fatalf("batch %d, after %d of its %d records: the records routed and those read after the seek are\n%q\nwant each record once:\n%q", k, n, b.Len(), got, want)
			}
		}
		for i := range b.Meta {
			before = append(before, string(b.Meta[i].Raw))
		}
		if st == source.End {
			break
		}
	}
	if len(before) != len(all) || mixed == 0 {
		t.Fatalf("read %d records of %d, %d batches of two partitions; want all, some", len(before), len(all), mixed)
	}
}
