package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaCluster starts an in-process broker on loopback with the given
// topics and partition count, and returns its address.
func kafkaCluster(t *testing.T, partitions int32, topics ...string) string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// consumeAll reads n records of topic from its start, then checks for
// 200 ms that no more arrive.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(recs), n, topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		recs = append(recs, fs.Records()...)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if extra := cl.PollFetches(short).Records(); len(extra) > 0 {
		t.Fatalf("%d records more than the %d expected, the first %q", len(extra), n, extra[0].Value)
	}
	return recs
}

// endOffsets returns the sum of the end offsets of topic's partitions.
func endOffsets(t *testing.T, addr, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum
}

// murmur2 is the Java client's Utils.murmur2, written from its
// definition so that the test does not trust the producer's copy.
func murmur2(data []byte) int32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	h := seed ^ uint32(len(data))
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h = h*m ^ k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is the partition the Java client's default partitioner
// picks for a key: toPositive(murmur2(key)) % n.
func javaPartition(key []byte, n int32) int32 {
	return (murmur2(key) & 0x7fffffff) % n
}

func TestMurmur2MatchesJava(t *testing.T) {
	// From Kafka's UtilsTest.testMurmur2.
	for s, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := murmur2([]byte(s)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProduceKeysValuesTimestamps: values byte for byte, keys from the
// key field's text, partitions by murmur2 of the key, timestamps from an
// RFC 3339 field, per-partition order kept.
func TestProduceKeysValuesTimestamps(t *testing.T) {
	addr := kafkaCluster(t, 5, "orders")
	lines := []string{
		`{"store":"S1","paid_at":"2026-09-01T10:02:00+09:00","amount":25000}`,
		`  {"store" : "S2", "paid_at":"2026-09-01T01:03:00.123456Z", "amount": 1e2, "note":"caf\u00e9"}  `,
		`{"store":"S1","paid_at":"2026-09-01T10:04:00.5+09:00","amount":-5000}`,
		`{"store":42,"paid_at":"2026-09-01T01:05:00Z"}`,
		`{"store":"tab\tbed","paid_at":"2026-09-01T01:06:00Z"}`,
		`{"store":"","paid_at":"2026-09-01T01:07:00Z"}`,
	}
	wantKeys := []string{"S1", "S2", "S1", "42", "tab\tbed", ""}
	wantTS := []string{"2026-09-01T01:02:00Z", "2026-09-01T01:03:00.123Z", "2026-09-01T01:04:00.5Z", "2026-09-01T01:05:00Z", "2026-09-01T01:06:00Z", "2026-09-01T01:07:00Z"}
	// A byte-order mark, CRLF endings and a blank line are not part of
	// any record.
	in := writeFile(t, "orders.jsonl", "\xEF\xBB\xBF"+lines[0]+"\r\n"+strings.Join(lines[1:3], "\n")+"\n\n"+strings.Join(lines[3:], "\n"))
	code, stdout, stderr := run(t, "produce", in, "--topic", "orders", "--brokers", addr, "--key-field", "store", "--timestamp-field", "paid_at")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
	counts := make([]int, 5)
	for _, k := range wantKeys {
		counts[javaPartition([]byte(k), 5)]++
	}
	wantSummary := fmt.Sprintf("produce: 6 records to orders (partition=records: 0=%d 1=%d 2=%d 3=%d 4=%d)\n", counts[0], counts[1], counts[2], counts[3], counts[4])
	if stderr != wantSummary {
		t.Errorf("stderr %q, want %q", stderr, wantSummary)
	}
	recs := consumeAll(t, addr, "orders", len(lines))
	lastOffset := map[int32]int64{}
	seen := map[string]bool{}
	for _, r := range recs {
		i := -1
		for j, l := range lines {
			if string(r.Value) == l {
				i = j
			}
		}
		if i < 0 {
			t.Errorf("value %q is no line of the file", r.Value)
			continue
		}
		seen[lines[i]] = true
		if r.Key == nil || string(r.Key) != wantKeys[i] {
			t.Errorf("line %d: key %q, want %q", i+1, r.Key, wantKeys[i])
		}
		if want := javaPartition([]byte(wantKeys[i]), 5); r.Partition != want {
			t.Errorf("line %d: partition %d, want %d (murmur2)", i+1, r.Partition, want)
		}
		want, _ := time.Parse(time.RFC3339Nano, wantTS[i])
		if !r.Timestamp.Equal(want) {
			t.Errorf("line %d: timestamp %s, want %s", i+1, r.Timestamp.UTC().Format(time.RFC3339Nano), wantTS[i])
		}
		// Offsets rise with line order within a partition.
		if last, ok := lastOffset[r.Partition]; ok && r.Offset <= last {
			t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, last)
		}
		lastOffset[r.Partition] = r.Offset
	}
	if len(seen) != len(lines) {
		t.Errorf("%d distinct lines arrived, want %d", len(seen), len(lines))
	}
	// S1's two lines share a partition, in file order.
	var s1 []string
	for _, r := range recs {
		if string(r.Key) == "S1" {
			s1 = append(s1, string(r.Value))
		}
	}
	if len(s1) != 2 || s1[0] != lines[0] || s1[1] != lines[2] {
		t.Errorf("S1 records out of order: %q", s1)
	}
}

// TestProducePartitionField: --create makes the topic with --partitions,
// and --partition-field places every record exactly; records without
// --key-field have no key and, without --timestamp-field, the time of
// producing.
func TestProducePartitionField(t *testing.T) {
	addr := kafkaCluster(t, 1, "other")
	lines := []string{
		`{"id":1,"partition":"p2"}`,
		`{"id":2,"partition":0}`,
		`{"id":3,"partition":"3"}`,
		`{"id":4,"partition":"p2"}`,
		`{"id":5,"partition":3}`,
	}
	wantPart := []int32{2, 0, 3, 2, 3}
	in := writeFile(t, "perturbed.jsonl", strings.Join(lines, "\n")+"\n")
	before := time.Now().Add(-time.Second)
	code, _, stderr := run(t, "produce", in, "--topic", "placed", "--brokers", addr, "--create", "--partitions", "4", "--partition-field", "partition")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "produce: created topic placed with 4 partitions\nproduce: 5 records to placed (partition=records: 0=1 1=0 2=2 3=2)\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	recs := consumeAll(t, addr, "placed", len(lines))
	for _, r := range recs {
		var i int
		fmt.Sscanf(string(r.Value), `{"id":%d`, &i)
		if i < 1 || i > len(lines) || string(r.Value) != lines[i-1] {
			t.Fatalf("value %q", r.Value)
		}
		if r.Partition != wantPart[i-1] {
			t.Errorf("id %d: partition %d, want %d", i, r.Partition, wantPart[i-1])
		}
		if r.Key != nil {
			t.Errorf("id %d: key %q, want none", i, r.Key)
		}
		if r.Timestamp.Before(before) || r.Timestamp.After(time.Now().Add(time.Second)) {
			t.Errorf("id %d: timestamp %s is not the time of producing", i, r.Timestamp)
		}
	}

	// Again with --create: the topic exists, so it is kept as it is.
	code, _, stderr = run(t, "produce", in, "--topic", "placed", "--brokers", addr, "--create", "--partitions", "8", "--partition-field", "partition", "-q")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %q", code, stderr)
	}
	if n := endOffsets(t, addr, "placed"); n != 10 {
		t.Errorf("end offsets sum to %d, want 10", n)
	}
	// A partition the topic does not have.
	bad := writeFile(t, "bad.jsonl", `{"partition":1}`+"\n"+`{"partition":"p4"}`+"\n")
	code, _, stderr = run(t, "produce", bad, "--topic", "placed", "--brokers", addr, "--partition-field", "partition")
	if code != 1 || !strings.Contains(stderr, bad+`:2: partition field "partition": partition 4 does not exist (the topic has partitions 0 to 3)`) {
		t.Errorf("exit %d: %q", code, stderr)
	}
}

// TestProduceBadLines: a bad line fails the command before anything is
// produced and is named by file and line; --skip-invalid skips and counts
// them.
func TestProduceBadLines(t *testing.T) {
	addr := kafkaCluster(t, 2, "t")
	for _, tc := range []struct {
		body, flags, want string
	}{
		{`{"k":"a"}` + "\n" + `{"k":"b"` + "\n", "", ":2: not a JSON object"},
		{`{"k":"a"}` + "\n\n" + `[1]` + "\n", "", ":3: not a JSON object"},
		{`{"k":"a"}` + "\n" + `{"x":"b"}` + "\n", "--key-field k", `:2: key field "k" is missing`},
		{`{"k":null}` + "\n", "--key-field k", `:1: key field "k" is null, not a string, number or boolean`},
		{`{"k":{"a":1}}` + "\n", "--key-field k", `:1: key field "k" is an object, not a string, number or boolean`},
		{`{"ts":"2026-09-01T10:00:00"}` + "\n", "--timestamp-field ts", `:1: timestamp field "ts": `},
		{`{"ts":"1969-12-31T23:59:59Z"}` + "\n", "--timestamp-field ts", `:1: timestamp field "ts": "1969-12-31T23:59:59Z" is before 1970-01-01T00:00:00Z`},
		{`{"p":-1}` + "\n", "--partition-field p", `:1: partition field "p": "-1" is not a partition index`},
		{`{"p":1.5}` + "\n", "--partition-field p", `:1: partition field "p": "1.5" is not a partition index`},
	} {
		in := writeFile(t, "in.jsonl", tc.body)
		args := append([]string{"produce", in, "--topic", "t", "--brokers", addr}, strings.Fields(tc.flags)...)
		code, _, stderr := run(t, args...)
		if code != 1 || !strings.Contains(stderr, "tidemark: "+in+tc.want) {
			t.Errorf("%q %s: exit %d, stderr %q, want %q", tc.body, tc.flags, code, stderr, in+tc.want)
		}
	}
	if n := endOffsets(t, addr, "t"); n != 0 {
		t.Fatalf("%d records produced by failed commands", n)
	}

	in := writeFile(t, "mixed.jsonl", `{"k":"a","n":1}`+"\nnope\n"+`{"n":2}`+"\n"+`{"k":"b","n":3}`+"\n")
	code, _, stderr := run(t, "produce", in, "--topic", "t", "--brokers", addr, "--key-field", "k", "--skip-invalid")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"produce: skipped " + in + ":2: not a JSON object\n",
		"produce: skipped " + in + `:3: key field "k" is missing` + "\n",
		"produce: 2 records to t (partition=records: ",
		", 2 bad lines skipped\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	recs := consumeAll(t, addr, "t", 2)
	got := map[string]string{}
	for _, r := range recs {
		got[string(r.Key)] = string(r.Value)
	}
	if got["a"] != `{"k":"a","n":1}` || got["b"] != `{"k":"b","n":3}` {
		t.Errorf("records %v", got)
	}
}

// TestProduceErrors: usage errors exit 2; a missing topic or file, or
// an unreachable broker, exit 1 with a message saying what to do.
func TestProduceErrors(t *testing.T) {
	addr := kafkaCluster(t, 1, "t")
	in := writeFile(t, "in.jsonl", `{"a":1}`+"\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{in}, 2, "--topic: required"},
		{[]string{in, "--topic", "a/b"}, 2, `--topic: "a/b" is not a topic name`},
		{[]string{in, "--topic", "t", "--partitions", "3"}, 2, "--partitions: only with --create"},
		{[]string{in, "--topic", "t", "--create", "--partitions", "0"}, 2, "--partitions: must be at least 1"},
		{[]string{"--topic", "t"}, 2, "accepts 1 arg(s)"},
		{[]string{in, "--topic", "t", "--nope"}, 2, "unknown flag"},
		{[]string{in, "--topic", "missing", "--brokers", addr}, 1, `topic "missing" does not exist at ` + addr + ` (add --create`},
		{[]string{filepath.Join(t.TempDir(), "none.jsonl"), "--topic", "t", "--brokers", addr}, 1, "no such file"},
	} {
		code, _, stderr := run(t, append([]string{"produce"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if n := endOffsets(t, addr, "t"); n != 0 {
		t.Fatalf("%d records produced", n)
	}

	// A broker that is not there: the lookup gives up after --timeout.
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	gone := c.ListenAddrs()[0]
	c.Close()
	start := time.Now()
	code, _, stderr := run(t, "produce", in, "--topic", "t", "--brokers", gone, "--timeout", "500ms")
	if code != 1 || !strings.Contains(stderr, `looking up topic "t" at `+gone) {
		t.Errorf("exit %d: %q", code, stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s with --timeout 500ms", d)
	}
}

// dropProduce is a listener whose connections swallow Kafka produce
// requests (API key 0): the broker never sees them, the client never gets
// an answer. Other requests pass.
type dropProduce struct{ net.Listener }

func (l dropProduce) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c}, nil
}

type dropConn struct {
	net.Conn
	buf []byte
}

// Read returns whole requests other than produce ones.
func (c *dropConn) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		var size [4]byte
		if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
			return 0, err
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c.Conn, body); err != nil {
			return 0, err
		}
		if len(body) >= 2 && body[0] == 0 && body[1] == 0 {
			continue // produce: swallowed
		}
		c.buf = append(size[:], body...)
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// TestProduceNoAcks: a broker that takes records and never answers makes
// the command give up after --timeout without an acknowledgement.
func TestProduceNoAcks(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			l, err := net.Listen(network, address)
			return dropProduce{l}, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	in := writeFile(t, "in.jsonl", `{"a":1}`+"\n"+`{"a":2}`+"\n")
	start := time.Now()
	code, _, stderr := run(t, "produce", in, "--topic", "t", "--brokers", addr, "--timeout", "1s")
	want := "tidemark: no acknowledgement from " + addr + " for 1s (--timeout); 0 records to t (partition=records: 0=0) were acknowledged\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("gave up after %s with --timeout 1s", d)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDevKafka starts the command, waits for its line, uses the broker
// (a seeded topic, a created one, produce and consume), and stops it by
// cancelling its context.
func TestDevKafka(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb syncBuffer
	root := newRoot(strings.NewReader(""), pw, &errb)
	// No schema registry: its default port may be taken on the machine.
	root.SetArgs([]string{"dev-kafka", "--addr", "127.0.0.1:0", "--registry-addr", "", "--partitions", "3", "--topic", "seeded", "--topic", "x,y", "--auto-create"})
	done := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()

	lineC := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(pr).ReadString('\n')
		lineC <- l
		io.Copy(io.Discard, pr) // nothing more is written; never block the command
	}()
	var addr string
	select {
	case l := <-lineC:
		var ok bool
		addr, ok = strings.CutPrefix(strings.TrimSuffix(l, "\n"), "kafka listening on 127.0.0.1:")
		if !ok || addr == "0" || addr == "" {
			t.Fatalf("first line %q", l)
		}
		addr = "127.0.0.1:" + addr
	case err := <-done:
		t.Fatalf("returned before listening: %v; stderr %s", err, errb.String())
	case <-time.After(5 * time.Second):
		t.Fatal("no listening line within 5s")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, "seeded", "x", "y", "absent")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"seeded", "x", "y"} {
		if td := tds[name]; td.Err != nil || len(td.Partitions) != 3 {
			t.Errorf("topic %s: %v, %d partitions, want 3", name, td.Err, len(td.Partitions))
		}
	}
	if td, ok := tds["absent"]; ok && td.Err == nil {
		t.Errorf("topic absent exists (a lookup must not create topics)")
	}
	// With --auto-create, a client that asks creates a topic by producing
	// to it, with --partitions partitions.
	asker, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer asker.Close()
	if err := asker.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("{}")}).FirstErr(); err != nil {
		t.Fatalf("producing to a new topic with --auto-create: %v", err)
	}
	if tds, err := adm.ListTopics(ctx, "auto"); err != nil || tds["auto"].Err != nil || len(tds["auto"].Partitions) != 3 {
		t.Errorf("auto-created topic: %v, %+v", err, tds["auto"])
	}
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "made"); err != nil {
		t.Fatal(err)
	}

	in := writeFile(t, "in.jsonl", `{"k":"a"}`+"\n"+`{"k":"b"}`+"\n")
	for _, topic := range []string{"made", "seeded"} {
		if code, _, stderr := run(t, "produce", in, "--topic", topic, "--brokers", addr, "--key-field", "k", "-q"); code != 0 {
			t.Fatalf("produce to %s: exit %d: %s", topic, code, stderr)
		}
		recs := consumeAll(t, addr, topic, 2)
		for _, r := range recs {
			if string(r.Value) != `{"k":"`+string(r.Key)+`"}` {
				t.Errorf("%s: record %q => %q", topic, r.Key, r.Value)
			}
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5s after its context ended")
	}
	for _, want := range []string{"everything is lost when it stops", "topics seeded, x, y, 3 partitions each", "KAFKA_BROKERS=" + addr, "dev-kafka: stopped"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	// The broker is gone.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if err := cl2.Ping(short); err == nil {
		t.Error("the broker still answers after the command returned")
	}
}

// TestDevKafkaUsage: bad flags exit 2; a port in use exits 1.
func TestDevKafkaUsage(t *testing.T) {
	busy := kafkaCluster(t, 1)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--addr", "0.0.0.0:9092"}, 2, "not a wildcard"},
		{[]string{"--addr", ":9092"}, 2, "not a wildcard"},
		{[]string{"--addr", "127.0.0.1"}, 2, "missing port"},
		{[]string{"--addr", "127.0.0.1:99999"}, 2, "is not a number from 0 to 65535"},
		{[]string{"--partitions", "0"}, 2, "--partitions: must be at least 1"},
		{[]string{"--topic", "a b"}, 2, `--topic: "a b" is not a topic name`},
		{[]string{"extra"}, 2, "unknown command"},
		{[]string{"--addr", busy}, 1, "address already in use"},
	} {
		code, stdout, stderr := run(t, append([]string{"dev-kafka"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want %d and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestProduceJSONIgnoresRegistryEnv (issue 25 item 5): with
// SCHEMA_REGISTRY_URL set in the environment, as for the Avro examples,
// produce in JSON uses no registry and does not refuse; a --registry
// given with JSON is still refused.
func TestProduceJSONIgnoresRegistryEnv(t *testing.T) {
	addr := kafkaCluster(t, 1, "t")
	in := writeFile(t, "in.jsonl", `{"a":1}`+"\n")
	t.Setenv("SCHEMA_REGISTRY_URL", "http://127.0.0.1:1")
	if code, _, stderr := run(t, "produce", in, "--topic", "t", "--brokers", addr, "-q"); code != 0 {
		t.Fatalf("JSON with SCHEMA_REGISTRY_URL set: exit %d: %s", code, stderr)
	}
	if n := endOffsets(t, addr, "t"); n != 1 {
		t.Fatalf("%d records produced, want 1", n)
	}
	code, _, stderr := run(t, "produce", in, "--topic", "t", "--brokers", addr, "--registry", "http://127.0.0.1:1")
	if code != 2 || !strings.Contains(stderr, "--schema and --registry: only with --format avro or protobuf") {
		t.Errorf("JSON with --registry: exit %d, %q", code, stderr)
	}
}
