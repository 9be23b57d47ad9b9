package crashtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGroupInstanceFenced: a group instance (docs/scale-out.md) fenced by
// a second process started with the same --instance-id — which registers
// the same transactional id and group.instance.id — stops with exit
// status 3 and an error naming the fencing, its transactional id and the
// partitions it held; the process that fenced it goes on and stops
// normally (SIGTERM: status 0, and a line naming what holds its
// position, not "checkpoint 0 in "). Against tidemark dev-kafka in its own
// process.
func TestGroupInstanceFenced(t *testing.T) {
	brokers := devKafka(t, "fin", "fout")
	dir := t.TempDir()
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, `{"id":"e%d","store_id":"s%d","amount":"1.5","paid_at":"2026-01-01T00:%02d:00Z"}`+"\n", i, i%5, i%60)
	}
	events := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(events, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "produce", events, "--topic", "fin", "--brokers", brokers).CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}
	yaml := strings.NewReplacer("{{B}}", brokers, "{{DIR}}", dir).Replace(`name: fence
source: {type: kafka, brokers: ["{{B}}"], topics: [fin], assignment: group, group: fence-g, session_timeout: 6s, poll_timeout: 50ms, schema: {amount: decimal}}
event_time: {field: paid_at, idle_timeout: 2s}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks: [{type: kafka, brokers: ["{{B}}"], topic: fout}]
checkpoint: {dir: {{DIR}}/ck, interval: 200ms}
`)
	yamlPath := filepath.Join(dir, "group.yaml")
	if err := os.WriteFile(yamlPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(name string) (*exec.Cmd, string) {
		errPath := filepath.Join(dir, name+".err")
		f, err := os.Create(errPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, "run", "--quiet", yamlPath, "--instance-id", "a")
		cmd.Stderr = f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, errPath
	}
	waitFor := func(path, text string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), text) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		b, _ := os.ReadFile(path)
		t.Fatalf("%s: no %q in 30s:\n%s", path, text, b)
	}
	first, firstErr := start("first")
	waitFor(firstErr, "assigned")
	time.Sleep(time.Second) // a few commits
	second, secondErr := start("second")
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the fenced instance did not stop in 60s")
	}
	stderr, _ := os.ReadFile(firstErr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("fenced instance: %v, want exit status 3\n%s", err, stderr)
	}
	want := "tidemark: group fence-g: instance a was fenced: another process started with the same --instance-id a registered its transactional id tidemark-fence-a or its group.instance.id ("
	held := "). It held partitions fence-repartition/0, fence-repartition/1, fence-repartition/2, fin/0, fin/1, fin/2; the broker aborted its open transaction, so nothing since its last commit is visible, and the other process owns those partitions now. " +
		"The instance stops (exit status 3): do not restart it with the same --instance-id while the other one runs, which would fence that one in turn\n"
	if !strings.Contains(string(stderr), want) || !strings.HasSuffix(string(stderr), held) {
		t.Fatalf("fenced instance's stderr:\n%s\nwant\n%s…%s", stderr, want, held)
	}
	waitFor(secondErr, "assigned")
	second.Process.Signal(syscall.SIGTERM)
	err = second.Wait()
	stderr, _ = os.ReadFile(secondErr)
	if err != nil {
		t.Fatalf("the instance that fenced it: %v\n%s", err, stderr)
	}
	// Its stop names what holds the position (not "checkpoint 0 in ").
	if want := "tidemark: stopped by a signal; instance a committed its tasks' offsets and checkpoints in group fence-g: run again to resume\n"; !strings.HasSuffix(string(stderr), want) {
		t.Fatalf("the instance that fenced it, stopped:\n%s\nwant the line %q", stderr, want)
	}
}
