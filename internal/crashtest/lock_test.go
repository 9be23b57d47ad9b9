package crashtest

import (
	"bytes"
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

const lockedYAML = `name: locked
source:
  type: kafka
  brokers: ["{{BROKERS}}"]
  topics: [orders]
  poll_timeout: 50ms
  schema: {amount: decimal}
event_time: {field: paid_at, out_of_orderness: 30s}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks:
  - {type: jsonl, path: {{OUT}}/revenue.jsonl}
  - {type: sqlite, path: {{OUT}}/revenue.db, table: revenue}
checkpoint: {dir: {{CK}}, interval: 50ms}
`

// otherYAML is another pipeline (no checkpoints) over a file, writing
// {{SINK}}.
const otherYAML = `name: other
source: {type: file, path: {{DIR}}/events.jsonl, schema: {amount: decimal}}
event_time: {field: paid_at}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {orders: count()}
sinks: [{{SINK}}]
`

// waitLocked waits until the lock file names pid as its holder.
func waitLocked(t *testing.T, lock string, pid int, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(lock)
		if strings.HasPrefix(string(b), fmt.Sprintf("pid=%d ", pid)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not name pid %d after 20s: %q\nstderr: %s", lock, pid, b, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newestCheckpoint is the name of the newest checkpoint file in the
// directory dir ("" when there is none); names sort by checkpoint id.
func newestCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "chk-*.tmck"))
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, n := range names {
		newest = max(newest, filepath.Base(n))
	}
	return newest
}

// TestOneWriterPerOutput: while one `tidemark run` (a Kafka source, so it
// runs until stopped) holds its checkpoint directory, a second run of the
// same pipeline exits 1 naming the directory and the holder's pid and
// start; runs of another pipeline, without checkpoints, are refused the
// same way on its JSONL file and its SQLite table, and leave them as they
// were, while another table of the same database is free. After kill -9 of
// the holder a new run takes the lock at once (no stale lock).
func TestOneWriterPerOutput(t *testing.T) {
	dir := t.TempDir()
	brokers := devKafka(t, "orders")
	events := filepath.Join(dir, "events.jsonl")
	writeEvents(t, events, 600, 4)
	if out, err := exec.Command(binary, "produce", events, "--topic", "orders", "--brokers", brokers, "--key-field", "store_id", "--skip-invalid", "-q").CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	yaml := filepath.Join(dir, "locked.yaml")
	y := strings.NewReplacer("{{BROKERS}}", brokers, "{{OUT}}", out, "{{CK}}", ck).Replace(lockedYAML)
	if err := os.WriteFile(yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(binary, "run", "--quiet", yaml)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &stderr
	}
	first, firstErr := start()
	pid := first.Process.Pid
	waitLocked(t, filepath.Join(ck, "LOCK"), pid, firstErr)
	// Wait for the first run's rows, so that a truncation would show.
	deadline := time.Now().Add(20 * time.Second)
	var published []byte
	for len(published) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no rows published in 20s; stderr: %s", firstErr)
		}
		time.Sleep(50 * time.Millisecond)
		published, _ = os.ReadFile(filepath.Join(out, "revenue.jsonl"))
	}

	refused := func(what, yamlPath string, want ...string) {
		t.Helper()
		outb, err := exec.Command(binary, "run", "--quiet", yamlPath).CombinedOutput()
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit status 1\n%s", what, err, outb)
		}
		msg := string(outb)
		for _, w := range append(want, fmt.Sprintf("is held by pid %d on host ", pid), ", since ", "even after kill -9") {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q:\n%s", what, w, msg)
			}
		}
	}
	refused("a second run of the pipeline", yaml,
		"checkpoint.dir "+ck+": another run is writing this checkpoint directory: lock "+filepath.Join(ck, "LOCK"))
	other := func(name, sink string) string {
		p := filepath.Join(dir, name+".yaml")
		y := strings.NewReplacer("{{DIR}}", dir, "{{SINK}}", sink).Replace(otherYAML)
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refused("another pipeline on the JSONL file", other("jsonl", "{type: jsonl, path: "+out+"/revenue.jsonl}"),
		"sinks[0].path "+out+"/revenue.jsonl: another run is writing this file: lock "+out+"/revenue.jsonl.lock")
	refused("another pipeline on the SQLite table", other("sqlite", "{type: sqlite, path: "+out+"/revenue.db, table: revenue}"),
		"sinks[0].path "+out+"/revenue.db (table revenue): another run is writing this table: lock "+out+"/revenue.db.revenue.lock")
	if now, _ := os.ReadFile(filepath.Join(out, "revenue.jsonl")); !bytes.HasPrefix(now, published) {
		t.Fatalf("a refused run changed %s/revenue.jsonl", out)
	}
	if b, err := exec.Command(binary, "run", "--quiet", other("table", "{type: sqlite, path: "+out+"/revenue.db, table: orders}")).CombinedOutput(); err != nil {
		t.Fatalf("another table of the database, while the first run writes its own: %v\n%s", err, b)
	}

	// kill -9: the kernel releases the lock with the process.
	first.Process.Signal(syscall.SIGKILL)
	if err := first.Wait(); !killed(err) {
		t.Fatalf("first run: %v, want killed\n%s", err, firstErr)
	}
	last := newestCheckpoint(t, ck)
	second, secondErr := start()
	waitLocked(t, filepath.Join(ck, "LOCK"), second.Process.Pid, secondErr)
	// Stop it once it has resumed and taken a checkpoint of its own: a
	// signal while it still opens its sinks or restores is a stop before
	// the run started, which this test does not look at.
	deadline = time.Now().Add(20 * time.Second)
	for newestCheckpoint(t, ck) <= last {
		if time.Now().After(deadline) {
			t.Fatalf("the run after kill -9 took no checkpoint after %s in 20s; stderr: %s", last, secondErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("the run after kill -9: %v\n%s", err, secondErr)
	}
	if !strings.Contains(secondErr.String(), "stopped by a signal; checkpoint") {
		t.Errorf("the run after kill -9 did not resume and stop cleanly:\n%s", secondErr)
	}
}

// TestRestartRefusesTruncatedOutput: a published JSONL file truncated or
// deleted while the pipeline is down (logrotate, an operator) makes the
// restart fail naming the file and both sizes, and leaves the file as it
// found it (no NUL bytes, not recreated); with the file put back, the
// restart succeeds and changes nothing.
func TestRestartRefusesTruncatedOutput(t *testing.T) {
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 400, 6)
	yaml := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(yaml, []byte(strings.ReplaceAll(refuseYAML, "{{DIR}}", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		b, err := exec.Command(binary, "run", "--quiet", yaml).CombinedOutput()
		return string(b), err
	}
	if out, err := run(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "out.jsonl")
	full, err := os.ReadFile(path)
	if err != nil || len(full) < 100 {
		t.Fatalf("output: %d bytes, %v", len(full), err)
	}
	marker := fmt.Sprintf("its commit marker %s.commit records %d bytes published through checkpoint ", path, len(full))

	half := int64(len(full) / 2)
	if err := os.Truncate(path, half); err != nil {
		t.Fatal(err)
	}
	out, err := run()
	if err == nil || !strings.Contains(out, fmt.Sprintf("jsonl %s holds %d bytes, but ", path, half)) || !strings.Contains(out, marker) {
		t.Errorf("restart after a truncation: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, full[:half]) {
		t.Errorf("the refused restart changed the file: %d bytes, %d NULs", len(b), bytes.Count(b, []byte{0}))
	}

	os.Remove(path)
	out, err = run()
	if err == nil || !strings.Contains(out, fmt.Sprintf("jsonl %s does not exist, but ", path)) || !strings.Contains(out, marker) {
		t.Errorf("restart after a deletion: %v\n%s", err, out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the refused restart created %s: %v", path, err)
	}

	if err := os.WriteFile(path, full, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil {
		t.Fatalf("restart with the file put back: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, full) {
		t.Errorf("the restart changed the file put back")
	}
}
