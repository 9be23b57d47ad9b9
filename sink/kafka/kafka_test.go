package kafka

import (
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

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// cluster starts an in-process broker with the given topics (one
// partition each unless named "name:N") and returns its address.
func cluster(t testing.TB, topics ...string) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	for _, name := range topics {
		n := int32(1)
		if i := strings.IndexByte(name, ':'); i >= 0 {
			fmt.Sscan(name[i+1:], &n)
			name = name[:i]
		}
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

var desc = changelog.Desc{
	Stage:    "revenue",
	Key:      []changelog.Column{{Name: "store", Kind: row.KindString}},
	Values:   []changelog.Column{{Name: "total", Kind: row.KindDecimal}},
	Timezone: "Asia/Seoul",
	EmitMode: "retract",
}

// t0 is 2026-03-01T01:00:00Z, 10:00 in Seoul.
var t0 = time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC).UnixMilli()

func mkRow(op changelog.Op, store, total string, version uint64) changelog.Row {
	d, err := row.ParseDecimal([]byte(total))
	if err != nil {
		panic(err)
	}
	return changelog.Row{
		Op: op, WindowStart: t0, WindowEnd: t0 + 3_600_000,
		Key: []row.Value{row.Str(store)}, Values: []row.Value{row.Dec(d)},
		Version: version, IsFinal: version == 3,
		WatermarkAt: t0 + 1_800_000, UpdatedAt: t0 + 1_860_500,
	}
}

// rec renders a consumed record as "key => value" (value "null" for a
// tombstone).
func rec(r *kgo.Record) string {
	v := "null"
	if r.Value != nil {
		v = string(r.Value)
	}
	return string(r.Key) + " => " + v
}

const (
	keyFR = `["2026-03-01T01:00:00Z","FR"]`
	keyDE = `["2026-03-01T01:00:00Z","DE"]`
	valFR = `{"op":"insert","window_start":"2026-03-01T10:00:00+09:00","window_end":"2026-03-01T11:00:00+09:00","store":"FR","total":12.50,"version":1,"is_final":false,"watermark_at":"2026-03-01T10:30:00+09:00","updated_at":"2026-03-01T10:31:00.500+09:00"}`
	valDE = `{"op":"insert","window_start":"2026-03-01T10:00:00+09:00","window_end":"2026-03-01T11:00:00+09:00","store":"DE","total":3,"version":1,"is_final":false,"watermark_at":"2026-03-01T10:30:00+09:00","updated_at":"2026-03-01T10:31:00.500+09:00"}`
)

var (
	rowFR = mkRow(changelog.Insert, "FR", "12.50", 1)
	rowDE = mkRow(changelog.Insert, "DE", "3", 1)
	outFR = keyFR + " => " + valFR
	outDE = keyDE + " => " + valDE
)

// consume reads topic from its start with read_committed (or not) until it
// has passed the partitions' high watermarks as of the call, or patience
// ran out (an open transaction holds a read_committed reader back). It
// returns the data records, partition by partition, and whether the end
// was reached.
func consume(t *testing.T, brokers []string, topic string, committed bool, patience time.Duration) ([]string, bool) {
	t.Helper()
	ctx := context.Background()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.KeepControlRecords(), kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	byPart := map[int32][]string{}
	pctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	for len(left) > 0 {
		fs := cl.PollFetches(pctx)
		if pctx.Err() != nil {
			break
		}
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= left[r.Partition]-1 {
				delete(left, r.Partition)
			}
			if !r.Attrs.IsControl() {
				byPart[r.Partition] = append(byPart[r.Partition], rec(r))
			}
		})
	}
	var out []string
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for p := range byPart {
			if !yield(p) {
				return
			}
		}
	}) {
		out = append(out, byPart[p]...)
	}
	return out, len(left) == 0
}

// committedRecords reads everything a read_committed consumer sees; the
// topic must have no open transaction.
func committedRecords(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	out, done := consume(t, brokers, topic, true, 10*time.Second)
	if !done {
		t.Fatalf("read_committed reader of %s did not reach the end: %q", topic, out)
	}
	return out
}

func open(t *testing.T, brokers []string, o Options) *Results {
	t.Helper()
	o.Brokers = brokers
	if o.Topic == "" {
		o.Topic = "results"
	}
	if o.Pipeline == "" {
		o.Pipeline = "shop"
	}
	if o.Sink == "" {
		o.Sink = "revenue: sinks[0]"
	}
	r, err := NewResults(context.Background(), desc, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestAtLeastOnce(t *testing.T) {
	brokers := cluster(t, "results:2")
	ctx := context.Background()
	r := open(t, brokers, Options{AtLeastOnce: true})
	rows := []changelog.Row{rowFR, rowDE, mkRow(changelog.UpdateBefore, "FR", "12.50", 1), mkRow(changelog.UpdateAfter, "FR", "20.00", 2)}
	must(t, r.Write(ctx, rows))
	must(t, r.Flush(ctx))
	got := committedRecords(t, brokers, "results")
	// Both rows of FR share a key, hence a partition, in emission order.
	var fr, de []string
	for _, g := range got {
		if strings.HasPrefix(g, keyFR) {
			fr = append(fr, g)
		} else {
			de = append(de, g)
		}
	}
	equal(t, "FR", fr, []string{
		outFR,
		keyFR + ` => {"op":"update_before","window_start":"2026-03-01T10:00:00+09:00","window_end":"2026-03-01T11:00:00+09:00","store":"FR","total":12.50,"version":1,"is_final":false,"watermark_at":"2026-03-01T10:30:00+09:00","updated_at":"2026-03-01T10:31:00.500+09:00"}`,
		keyFR + ` => {"op":"update_after","window_start":"2026-03-01T10:00:00+09:00","window_end":"2026-03-01T11:00:00+09:00","store":"FR","total":20.00,"version":2,"is_final":false,"watermark_at":"2026-03-01T10:30:00+09:00","updated_at":"2026-03-01T10:31:00.500+09:00"}`,
	})
	equal(t, "DE", de, []string{outDE})
	for _, err := range []error{
		func() error { _, err := r.Prepare(ctx, 1); return err }(),
		r.Commit(ctx, 1, nil),
		r.Recover(ctx, 0, nil),
	} {
		if !errors.Is(err, ErrAtLeastOnce) {
			t.Errorf("Committer method of an at-least-once sink: %v", err)
		}
	}
	must(t, r.Close(ctx))
	must(t, r.Close(ctx))
	if err := r.Write(ctx, rows); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestUpsertTombstones(t *testing.T) {
	brokers := cluster(t, "results")
	ctx := context.Background()
	r := open(t, brokers, Options{AtLeastOnce: true, Upsert: true})
	must(t, r.Write(ctx, []changelog.Row{
		rowFR,
		mkRow(changelog.UpdateBefore, "FR", "12.50", 1),
		mkRow(changelog.UpdateAfter, "FR", "20.00", 2),
		mkRow(changelog.Delete, "FR", "20.00", 3),
	}))
	must(t, r.Flush(ctx))
	equal(t, "upsert stream", committedRecords(t, brokers, "results"), []string{
		outFR,
		keyFR + ` => {"op":"update_after","window_start":"2026-03-01T10:00:00+09:00","window_end":"2026-03-01T11:00:00+09:00","store":"FR","total":20.00,"version":2,"is_final":false,"watermark_at":"2026-03-01T10:30:00+09:00","updated_at":"2026-03-01T10:31:00.500+09:00"}`,
		keyFR + " => null",
	})
}

func TestExactlyOnceUncommittedInvisible(t *testing.T) {
	brokers := cluster(t, "results")
	ctx := context.Background()
	r := open(t, brokers, Options{})
	must(t, r.Recover(ctx, 0, nil))
	must(t, r.Write(ctx, []changelog.Row{rowFR, rowDE}))
	must(t, r.Flush(ctx)) // publishes nothing
	if got, _ := consume(t, brokers, "results", true, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("read_committed sees rows before the checkpoint: %q", got)
	}
	prep, err := r.Prepare(ctx, 1)
	must(t, err)
	// Prepared: in the log (a read_uncommitted reader sees them) but not
	// visible to read_committed.
	uncommitted, _ := consume(t, brokers, "results", false, 10*time.Second)
	equal(t, "read_uncommitted after Prepare", uncommitted, []string{outFR, outDE})
	if got, _ := consume(t, brokers, "results", true, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("read_committed sees prepared rows: %q", got)
	}
	must(t, r.Commit(ctx, 1, prep))
	equal(t, "read_committed after Commit", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	equal(t, "markers", committedRecords(t, brokers, r.p.markerTopic), []string{
		`shop/revenue: sinks[0] => {"pipeline":"shop","sink":"revenue: sinks[0]","checkpoint_id":1}`,
	})
	if r.p.markerTopic != "tidemark-commits.tidemark-shop-revenue__sinks_0_" {
		t.Errorf("marker topic %q", r.p.markerTopic)
	}
	// A checkpoint without rows: no transaction, nothing stored.
	prep, err = r.Prepare(ctx, 2)
	if err != nil || prep != nil {
		t.Fatalf("empty Prepare: %q, %v", prep, err)
	}
	must(t, r.Commit(ctx, 2, nil))
	equal(t, "after an empty checkpoint", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	// Rows after the last checkpoint are aborted by Close.
	must(t, r.Write(ctx, []changelog.Row{mkRow(changelog.UpdateAfter, "FR", "99", 2)}))
	must(t, r.Close(ctx))
	equal(t, "after Close", committedRecords(t, brokers, "results"), []string{outFR, outDE})
}

// TestExactlyOnceFailedAttemptInvisible: a run writes and prepares
// checkpoint 2 but dies before the checkpoint is written; the restart
// resumes from checkpoint 1 and replays the same rows. Readers see them
// once; the dead run cannot commit any more.
func TestExactlyOnceFailedAttemptInvisible(t *testing.T) {
	brokers := cluster(t, "results")
	ctx := context.Background()
	a := open(t, brokers, Options{})
	must(t, a.Recover(ctx, 0, nil))
	must(t, a.Write(ctx, []changelog.Row{rowFR}))
	prep1, err := a.Prepare(ctx, 1)
	must(t, err)
	must(t, a.Commit(ctx, 1, prep1))
	must(t, a.Write(ctx, []changelog.Row{rowDE}))
	if _, err := a.Prepare(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// a dies here: no checkpoint 2. The restart recovers checkpoint 1.
	b := open(t, brokers, Options{})
	must(t, b.Recover(ctx, 1, prep1)) // committed already: nothing published
	if err := a.Commit(ctx, 2, nil); err == nil {
		t.Error("the fenced run committed")
	}
	must(t, b.Write(ctx, []changelog.Row{rowDE}))
	prep2, err := b.Prepare(ctx, 2)
	must(t, err)
	must(t, b.Commit(ctx, 2, prep2))
	equal(t, "read_committed", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	all, _ := consume(t, brokers, "results", false, 10*time.Second)
	equal(t, "read_uncommitted (the aborted attempt is in the log)", all, []string{outFR, outDE, outDE})
}

// TestRecoverAfterCrashBeforeCommit: checkpoint 1 is written but the run
// dies before Kafka commits; the restart publishes checkpoint 1's rows
// from the checkpoint, once, even when it dies again and recovers the same
// checkpoint a second time.
func TestRecoverAfterCrashBeforeCommit(t *testing.T) {
	brokers := cluster(t, "results")
	ctx := context.Background()
	a := open(t, brokers, Options{})
	must(t, a.Recover(ctx, 0, nil))
	must(t, a.Write(ctx, []changelog.Row{rowFR, rowDE}))
	prep1, err := a.Prepare(ctx, 1)
	must(t, err)
	// checkpoint 1 written; a dies before Commit (it stays a zombie).

	b := open(t, brokers, Options{})
	must(t, b.Recover(ctx, 1, prep1))
	equal(t, "after Recover", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	if err := a.Commit(ctx, 1, prep1); err == nil {
		t.Error("the fenced run committed")
	}
	// b writes on, then dies before checkpoint 2.
	must(t, b.Write(ctx, []changelog.Row{mkRow(changelog.UpdateAfter, "FR", "13", 2)}))
	must(t, b.p.cl.Flush(ctx)) // in the log, in b's open transaction

	c := open(t, brokers, Options{})
	must(t, c.Recover(ctx, 1, prep1)) // the republication committed: nothing again
	equal(t, "after a second Recover", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	equal(t, "markers", committedRecords(t, brokers, c.p.markerTopic), []string{
		`shop/revenue: sinks[0] => {"pipeline":"shop","sink":"revenue: sinks[0]","checkpoint_id":1}`,
	})
	// Commit of checkpoint 1 in a process that did not prepare it is
	// Recover: the marker says it is done.
	must(t, c.Commit(ctx, 1, prep1))
	equal(t, "after Commit of a committed checkpoint", committedRecords(t, brokers, "results"), []string{outFR, outDE})
	all, _ := consume(t, brokers, "results", false, 10*time.Second)
	if len(all) != 5 { // FR, DE aborted; FR, DE republished; the aborted update
		t.Errorf("read_uncommitted: %q", all)
	}
}

// TestGracefulStop: the engine stops by cancelling the context of its
// calls, then takes a final checkpoint with another; the rows written
// before must be in it.
func TestGracefulStop(t *testing.T) {
	brokers := cluster(t, "results")
	r := open(t, brokers, Options{})
	must(t, r.Recover(context.Background(), 0, nil))
	ctx, cancel := context.WithCancel(context.Background())
	must(t, r.Write(ctx, []changelog.Row{rowFR, rowDE}))
	cancel()
	if err := r.Write(ctx, []changelog.Row{rowFR}); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a cancelled context: %v", err)
	}
	prep, err := r.Prepare(context.Background(), 1)
	must(t, err)
	must(t, r.Commit(context.Background(), 1, prep))
	equal(t, "rows", committedRecords(t, brokers, "results"), []string{outFR, outDE})
}

func TestRecordsExactlyOnce(t *testing.T) {
	brokers := cluster(t, "late")
	ctx := context.Background()
	r, err := NewRecords(ctx, Options{Brokers: brokers, Topic: "late", Pipeline: "shop", Sink: "revenue: late.sink"})
	must(t, err)
	defer r.Close(ctx)
	must(t, r.Recover(ctx, 0, nil))
	objs := []string{`{"stage":"revenue","event":{"id":"a"},"lateness_ms":61000}`, `{"stage":"revenue","event":{"id":"b"},"lateness_ms":5}`}
	for _, o := range objs {
		must(t, r.WriteRecord(ctx, []byte(o)))
	}
	prep, err := r.Prepare(ctx, 7)
	must(t, err)
	if got, _ := consume(t, brokers, "late", true, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("visible before Commit: %q", got)
	}
	must(t, r.Commit(ctx, 7, prep))
	equal(t, "late records", committedRecords(t, brokers, "late"), []string{" => " + objs[0], " => " + objs[1]})
	if _, err := r.Prepare(ctx, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(ctx, 9); err == nil {
		t.Error("Prepare twice without Commit: no error")
	}
}

func TestNewErrors(t *testing.T) {
	brokers := cluster(t, "results")
	ctx := context.Background()
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Topic: "results"}, "brokers: required"},
		{Options{Brokers: brokers}, "topic: required"},
		{Options{Brokers: brokers, Topic: "results"}, "needs the pipeline name and the sink id"},
		{Options{Brokers: brokers, Topic: "nope", AtLeastOnce: true}, `topic "nope" does not exist`},
		{Options{Brokers: brokers, Topic: "results", AtLeastOnce: true, DeliveryTimeoutMs: -1}, "delivery timeout: -1 ms is negative"},
	} {
		if _, err := NewResults(ctx, desc, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewResults(%+v): %v, want %q", c.o, err, c.want)
		}
	}
	bad := desc
	bad.Timezone = "Mars/Olympus"
	if _, err := NewResults(ctx, bad, Options{Brokers: brokers, Topic: "results", AtLeastOnce: true}); err == nil {
		t.Error("unknown time zone: no error")
	}
}

func TestMarkerTopicName(t *testing.T) {
	if got := markerTopicFor("tidemark-p-s"); got != "tidemark-commits.tidemark-p-s" {
		t.Errorf("%q", got)
	}
	long := markerTopicFor(strings.Repeat("x", 300))
	if len(long) != 249 || long == markerTopicFor(strings.Repeat("x", 301)) {
		t.Errorf("long names: %q", long)
	}
}

func TestKeys(t *testing.T) {
	d := changelog.Desc{Key: []changelog.Column{{Name: "s"}, {Name: "n"}, {Name: "d"}, {Name: "b"}, {Name: "t"}, {Name: "z"}}}
	r, err := NewRowEncoder(d, false)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := row.ParseDecimal([]byte("-0.50"))
	got, _, _ := r.Record(&changelog.Row{WindowStart: t0 + 250, Key: []row.Value{
		row.Str("a\"b\n"), row.Int(-7), row.Dec(dec), row.Bool(true), row.Time(t0), row.Null,
	}})
	want := `["2026-03-01T01:00:00.250Z","a\"b\n",-7,-0.50,true,"2026-03-01T01:00:00Z",null]`
	if string(got) != want {
		t.Errorf("key %s, want %s", got, want)
	}
}

func TestPreparedEncoding(t *testing.T) {
	p := &prepared{id: 9, topic: "t", markerPartition: 0, markerOffset: 41, records: []staged{
		{key: []byte("k"), value: []byte("v")}, {key: nil, value: []byte{}}, {key: []byte{}, value: nil},
	}}
	enc := encodePrepared(p)
	back, err := decodePrepared(enc)
	must(t, err)
	if back.id != 9 || back.topic != "t" || back.markerOffset != 41 || len(back.records) != 3 ||
		string(back.records[0].key) != "k" || back.records[1].key != nil || back.records[1].value == nil ||
		back.records[2].key == nil || back.records[2].value != nil {
		t.Errorf("round trip: %+v", back)
	}
	for i := range enc {
		if _, err := decodePrepared(enc[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
	}
	if _, err := decodePrepared(append(enc, 0)); err == nil {
		t.Error("trailing byte: no error")
	}
	if _, ok := markerID(markerValue("p", "s", 12), "p", "s"); !ok {
		t.Error("markerID")
	}
	if _, ok := markerID(markerValue("p", "s", 12), "p", "other"); ok {
		t.Error("markerID of another sink")
	}
}
