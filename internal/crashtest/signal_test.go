package crashtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMWhileStarting: a SIGTERM while `tidemark run` is still
// opening its sinks (here its SQLite sink waits for a lock another
// connection holds) stops it with the status of a stopped run (0) and a
// line saying it stopped before reading any record and which checkpoint
// the next run resumes from — not that rows were flushed.
func TestSIGTERMWhileStarting(t *testing.T) {
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 200, 5)
	yaml := strings.ReplaceAll(`name: sigterm
source: {type: file, path: {{DIR}}/events.jsonl, schema: {amount: decimal}}
event_time: {field: paid_at}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks: [{type: sqlite, path: {{DIR}}/out/r.db, table: revenue}]
checkpoint: {dir: {{DIR}}/ck, interval: 1ms}
`, "{{DIR}}", dir)
	yamlPath := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(yamlPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(binary, "run", "--quiet", yamlPath).CombinedOutput(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	ids, _ := os.ReadDir(filepath.Join(dir, "ck"))
	var last string
	for _, e := range ids {
		if strings.HasPrefix(e.Name(), "chk-") {
			last = e.Name()
		}
	}
	if last == "" {
		t.Fatal("no checkpoint")
	}
	// Hold the database's write lock, as another writer would.
	db, err := sql.Open("sqlite", filepath.Join(dir, "out", "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")

	cmd := exec.Command(binary, "run", yamlPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the run holds its output's lock it has its signal handler and
	// is opening the sink, which waits for the database lock (busy
	// timeout 5 s).
	lock := filepath.Join(dir, "out", "r.db.revenue.lock")
	for deadline := time.Now().Add(4 * time.Second); ; {
		if b, _ := os.ReadFile(lock); strings.Contains(string(b), "pid="+strconv.Itoa(cmd.Process.Pid)+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not take its output's lock in 4s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	id, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(last, "chk-"), ".tmck"))
	want := "tidemark: interrupted while opening the source and the sinks: stopped before reading any record, no row or record of this run was written; checkpoint " +
		strconv.Itoa(id) + " in " + filepath.Join(dir, "ck") + " holds the position: run again to resume from it\n"
	if err != nil || stderr.String() != want || strings.Contains(stdout.String(), "flushed") {
		t.Fatalf("exit %v, stderr %q, stdout %q\nwant exit 0 and stderr %q", err, stderr.String(), stdout.String(), want)
	}
}

// TestSIGTERMWithoutCheckpoints: a run that takes no checkpoints, stopped
// by SIGTERM while it reads (a Kafka source, read until stopped), exits 1
// saying its results are partial and that a new run starts over; the same
// run with checkpoints exits 0 saying which checkpoint holds the position.
func TestSIGTERMWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	brokers := devKafka(t, "orders")
	events := filepath.Join(dir, "events.jsonl")
	writeEvents(t, events, 300, 8)
	if out, err := exec.Command(binary, "produce", events, "--topic", "orders", "--brokers", brokers, "--skip-invalid", "-q").CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}
	for _, ck := range []string{"", "checkpoint: {dir: " + filepath.Join(dir, "ck") + ", interval: 50ms}\n"} {
		yaml := filepath.Join(dir, "pipeline.yaml")
		y := `name: sigterm
source: {type: kafka, brokers: ["` + brokers + `"], topics: [orders], poll_timeout: 50ms, schema: {amount: decimal}}
event_time: {field: paid_at}
key: [store_id]
window: {type: tumbling, size: 1m}
aggregates: {revenue: sum(amount)}
sinks: [{type: jsonl, path: ` + filepath.Join(dir, "out.jsonl") + `}]
` + ck
		if err := os.WriteFile(yaml, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, "run", "--quiet", yaml)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once it reads (with checkpoints: its third checkpoint; without,
		// 3 s after the start: it opened in well under a second) it waits
		// for more records: stop it.
		started := time.Now()
		for deadline := started.Add(20 * time.Second); ; {
			if ck == "" && time.Since(started) > 3*time.Second || ck != "" && newestCheckpoint(t, filepath.Join(dir, "ck")) >= checkpointName(3) {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no third checkpoint in 20s:\n%s", stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ck == "" {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "tidemark: interrupted; the rows and records emitted so far were flushed to the sinks, but the pipeline takes no checkpoints: its results are partial, and a new run recomputes from the start of the input") {
				t.Fatalf("without checkpoints: %v, stderr %q; want exit 1 saying the results are partial", err, stderr.String())
			}
			continue
		}
		if err != nil || !strings.Contains(stderr.String(), "tidemark: stopped by a signal; checkpoint ") {
			t.Fatalf("with checkpoints: %v, stderr %q; want exit 0 naming the checkpoint", err, stderr.String())
		}
	}
}
