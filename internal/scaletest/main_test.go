// Package scaletest proves scale-out on Kafka (docs/scale-out.md) with
// real processes on loopback: a broker process (`tidemark dev-kafka`),
// inputs loaded with `tidemark perturb` and `tidemark produce`, and
// several `tidemark run` processes of one consumer group that are
// started, killed with SIGKILL and stopped at seeded instants, scaling
// 1 → 3 → 1. The outputs they commit are then checked against a
// single-instance run over the same topic, against a batch recomputation
// of the input, and for exactly-once properties of their own (scale_test.go).
// TestBrokerPauses (pauses_test.go) stops the broker process itself, and
// single instances, at seeded instants.
//
// Flags: -long runs 100 seeds of TestScaleOut instead of 10 and 200 of
// TestBrokerPauses instead of 20; -figures measures the figures of
// docs/scale-out.md (failover, restore, throughput, the cost of
// exactly-once) and logs them.
package scaletest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	long    = flag.Bool("long", false, "run 100 seeds of the scale-out harness instead of 10, and 200 broker-pause seeds instead of 20")
	figures = flag.Bool("figures", false, "measure the scale-out figures (failover, restore, throughput, exactly-once cost)")
)

var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "tidemark-scaletest-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "tidemark")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/tidemark/tidemark/cmd/tidemark").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building tidemark: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// minSession is the broker's group.min.session.timeout.ms in these tests
// and the pipelines' source.session_timeout: a killed instance's
// partitions move after about a second, not Kafka's default 6-45 s.
const (
	minSession     = "250ms"
	sessionTimeout = "1s"
)

// broker is a `tidemark dev-kafka` process.
type broker struct {
	addr string
	adm  *kadm.Client
	cmd  *exec.Cmd
}

// pause stops the broker process with SIGSTOP for d and continues it
// with SIGCONT: every connection stays open and nothing answers, as a
// broker in a long garbage-collection pause or a frozen virtual machine;
// its group sessions expire when it runs again.
func (b *broker) pause(d time.Duration) {
	b.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(d)
	b.cmd.Process.Signal(syscall.SIGCONT)
}

// startBroker starts `tidemark dev-kafka` on a free loopback port, with
// the short minimum session timeout; it is stopped when the test ends.
func startBroker(t *testing.T) *broker {
	t.Helper()
	cmd := exec.Command(binary, "dev-kafka", "--addr", "127.0.0.1:0", "--registry-addr", "", "--partitions", "4",
		"--group-min-session-timeout", minSession, "-q")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) // a test that failed during a pause
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dev-kafka: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "kafka listening on ")
	if !ok {
		t.Fatalf("dev-kafka printed %q", line)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &broker{addr: addr, adm: kadm.NewClient(cl), cmd: cmd}
}

// createTopics creates topics with partitions partitions each.
func (b *broker) createTopics(t *testing.T, partitions int32, topics ...string) {
	t.Helper()
	resp, err := b.adm.CreateTopics(context.Background(), partitions, 1, nil, topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
		}
	}
}

// openTransactions fails the test for every partition of topics whose
// last stable offset is below its high watermark once every writer
// stopped — a transaction left open, which hides everything after it
// from read_committed consumers — naming the partition and the state of
// the transactional ids txnIDs.
func (b *broker) openTransactions(t *testing.T, txnIDs []string, topics ...string) {
	t.Helper()
	ctx := context.Background()
	for try := 0; ; try++ {
		hw, err1 := b.adm.ListEndOffsets(ctx, topics...)
		lso, err2 := b.adm.ListCommittedOffsets(ctx, topics...)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		var open []string
		hw.Each(func(o kadm.ListedOffset) {
			if l, ok := lso.Lookup(o.Topic, o.Partition); ok && l.Offset < o.Offset {
				open = append(open, fmt.Sprintf("%s/%d: last stable offset %d, high watermark %d", o.Topic, o.Partition, l.Offset, o.Offset))
			}
		})
		if len(open) == 0 {
			return
		}
		// A killed instance's transaction ends when the broker's
		// transaction timeout aborts it: wait for that, a little.
		if try < 20 {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		slices.Sort(open)
		var states []string
		if ds, err := b.adm.DescribeTransactions(ctx, txnIDs...); err == nil {
			for _, d := range ds.Sorted() {
				states = append(states, fmt.Sprintf("%s %s epoch %d since %v topics %v", d.TxnID, d.State, d.ProducerEpoch, time.UnixMilli(d.StartTimestamp).Format(time.StampMilli), d.Topics))
			}
		}
		t.Errorf("transactions left open after the group ended (read_committed consumers see nothing past them):\n%s\ntransactional ids:\n%s",
			strings.Join(open, "\n"), strings.Join(states, "\n"))
		return
	}
}

// record is one record of a topic as a read_committed consumer sees it.
type record struct {
	partition int32
	offset    int64
	key       string
	value     []byte
}

// readCommitted returns the records of each topic visible to a
// read_committed consumer, in partition and offset order. The caller has
// stopped every writer: it reads until every partition's last stable
// offset (reported with its records) reaches the end offset listed
// first, or until two polls in a row bring nothing (a partition that
// holds only aborted records and transaction markers).
func (b *broker) readCommitted(t *testing.T, topics ...string) map[string][]record {
	t.Helper()
	ctx := context.Background()
	ends, err := b.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type tp struct {
		topic string
		p     int32
	}
	next := map[tp]int64{}
	done := func() bool {
		ok := true
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && next[tp{o.Topic, o.Partition}] < o.Offset {
				ok = false
			}
		})
		return ok
	}
	out := map[string][]record{}
	deadline := time.Now().Add(60 * time.Second)
	for empty := 0; empty < 2 && !done(); {
		if time.Now().After(deadline) {
			t.Fatalf("reading %v: not at the end offsets after 60 s", topics)
		}
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("reading %s/%d: %v", topic, p, err)
			}
		})
		n := 0
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			k := tp{p.Topic, p.Partition}
			for _, r := range p.Records {
				n++
				out[r.Topic] = append(out[r.Topic], record{r.Partition, r.Offset, string(r.Key), r.Value})
				next[k] = max(next[k], r.Offset+1)
			}
			next[k] = max(next[k], p.LastStableOffset)
		})
		if n == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	for topic, rs := range out {
		slices.SortStableFunc(rs, func(a, b record) int { return cmp.Compare(a.partition, b.partition) })
		out[topic] = rs
	}
	return out
}

// proc is one `tidemark run` process.
type proc struct {
	id     string
	cmd    *exec.Cmd
	stderr *syncBuffer
	stdout *syncBuffer
	done   chan struct{}
	err    error
	end    time.Time // when it exited
	killed bool      // by the harness, with SIGKILL
	termed bool      // by the harness, with SIGTERM
	start  time.Time
}

// stampWriter prefixes each line with the time since t0.
type stampWriter struct {
	mu   sync.Mutex
	w    io.Writer
	t0   time.Time
	part []byte
}

func (s *stampWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		fmt.Fprintf(s.w, "%8.3f %s\n", time.Since(s.t0).Seconds(), s.part[:i])
		s.part = s.part[i+1:]
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
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

// startRun starts `tidemark run` of yaml as instance id (static
// membership) at parallelism 1, with extra environment.
func startRun(t *testing.T, yaml, id string, env ...string) *proc {
	t.Helper()
	return startRunArgs(t, yaml, id, []string{"--quiet", "--batch-size", "16"}, env...)
}

// startRunArgs starts `tidemark run` of yaml with flags (and
// --parallelism 1) as instance id; its stdout (the summary without
// --quiet) is kept in proc.stdout.
func startRunArgs(t *testing.T, yaml, id string, flags []string, env ...string) *proc {
	t.Helper()
	args := append([]string{"run", "--parallelism", "1"}, flags...)
	if id != "" {
		args = append(args, "--instance-id", id)
	}
	cmd := exec.Command(binary, append(args, yaml)...)
	p := &proc{id: id, cmd: cmd, stderr: &syncBuffer{}, stdout: &syncBuffer{}, done: make(chan struct{}), start: time.Now()}
	cmd.Stderr = p.stderr
	cmd.Stdout = p.stdout
	if d := os.Getenv("SCALETEST_LOGS"); d != "" {
		// A development aid: each process's log also in a file.
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("%s-%s-%d.log", filepath.Base(yaml), id, time.Now().UnixNano())))
		if err == nil {
			cmd.Stderr = io.MultiWriter(p.stderr, &stampWriter{w: f, t0: p.start})
			defer func() { go func() { <-p.done; f.Close() }() }()
		}
	}
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		p.end = time.Now()
		close(p.done)
	}()
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	if p.running() {
		p.killed = true
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// freeze stops the process with SIGSTOP for d and continues it with
// SIGCONT: its heartbeats stop, so the group expires its member, and it
// runs on afterwards as a member the group no longer knows.
func (p *proc) freeze(d time.Duration) {
	if p.running() {
		p.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(d)
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// term sends SIGTERM: the instance commits and leaves the group.
func (p *proc) term() {
	if p.running() {
		p.termed = true
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// wait waits for the process to end, at most d; false if it did not.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// ok reports whether the process ended as the harness meant: exit 0, or
// the SIGKILL it sent.
func (p *proc) ok() bool {
	if p.err == nil {
		return true
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return false
	}
	ws, isWS := ee.Sys().(syscall.WaitStatus)
	if !isWS || !ws.Signaled() {
		return false
	}
	// SIGTERM ends a process by its default action only before the
	// runtime installed its handler: a process stopped as it started.
	return p.killed && ws.Signal() == syscall.SIGKILL || p.termed && ws.Signal() == syscall.SIGTERM
}
