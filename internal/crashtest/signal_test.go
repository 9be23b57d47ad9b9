package crashtest

import (
	"bytes"
	"context"
	"database/sql"
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
