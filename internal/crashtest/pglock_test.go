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

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/internal/pgtest"
)

// pgLockYAML writes a PostgreSQL result table and a PostgreSQL table of
// late records, one record per batch and a checkpoint after each, so that
// a run lasts seconds. {{CK}} is its checkpoint directory: two runs with
// different directories share no lock file, only the tables.
const pgLockYAML = `name: {{NAME}}
source:
  type: file
  path: {{DIR}}/events.jsonl
  schema: {amount: decimal}
  replay: {seed: 3, delay: 20s, straggler_fraction: 0.05, max_delay: 10m, partitions: 2, partition_by: store_id}
event_time: {field: paid_at, out_of_orderness: 30s}
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
allowed_lateness: 1m
aggregates: {orders: count(), revenue: sum(amount)}
emit: {mode: update}
late: {policy: side_output, sink: {type: postgres, dsn: "{{DSN}}", table: {{PG}}.late}}
sinks:
  - {type: postgres, dsn: "{{DSN}}", table: {{PG}}.{{TABLE}}}
checkpoint: {dir: {{CK}}, interval: 1ms}
`

// TestOneWriterPerPostgresTable: while one `tidemark run` writes a
// PostgreSQL result table, a second run of the same pipeline with another
// checkpoint directory (a fresh start, which would empty the table) and a
// run of another pipeline writing only the same table of late records
// both exit 1 before writing anything, naming the table and the session
// holding it — the first run's process (its pid in application_name) —
// and the first run's rows end equal to those of an undisturbed run in a
// schema of its own. Then the first run is killed with SIGKILL and run
// again at once: no lock is left behind, and it resumes to the same rows.
func TestOneWriterPerPostgresTable(t *testing.T) {
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 800, 9)
	dsn, pg := pgtest.Schema(t)
	_, clean := pgtest.Schema(t)
	pipeline := func(name, schema, table, ck string) string {
		p := filepath.Join(dir, name+"-"+filepath.Base(ck)+".yaml")
		y := strings.NewReplacer("{{NAME}}", name, "{{DIR}}", dir, "{{DSN}}", dsn, "{{PG}}", schema, "{{TABLE}}", table, "{{CK}}", ck).Replace(pgLockYAML)
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(yaml string, args ...string) (string, error) {
		b, err := exec.Command(binary, append([]string{"run", "--quiet", "--batch-size", "1"}, append(args, yaml)...)...).CombinedOutput()
		return string(b), err
	}
	tables := func(schema string) string {
		return pgtest.Dump(t, dsn, `SELECT window_start, store_id, orders, revenue, version, is_final FROM "`+schema+`".revenue_minute ORDER BY window_start, store_id`) +
			"--\n" + pgtest.Dump(t, dsn, `SELECT kind, stage, event_id, event_time, reason, source FROM "`+schema+`".late ORDER BY seq`)
	}
	if out, err := run(pipeline("revenue", clean, "revenue_minute", filepath.Join(dir, "ck-clean"))); err != nil {
		t.Fatalf("the undisturbed run: %v\n%s", err, out)
	}
	want := tables(clean)
	if strings.Count(want, "\n") < 50 || !strings.Contains(want, "late") {
		t.Fatalf("the undisturbed run wrote too little to compare:\n%s", want)
	}

	first := exec.Command(binary, "run", "--quiet", "--batch-size", "1", pipeline("revenue", pg, "revenue_minute", filepath.Join(dir, "ck-1")))
	var firstErr bytes.Buffer
	first.Stderr, first.Stdout = &firstErr, &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Process.Kill(); first.Wait() })
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	// Wait for the first run's rows, so that an emptying would show.
	deadline := time.Now().Add(30 * time.Second)
	for newestCheckpoint(t, filepath.Join(dir, "ck-1")) < checkpointName(40) {
		if time.Now().After(deadline) {
			t.Fatalf("the first run took no 40th checkpoint in 30s:\n%s", firstErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := pgtest.Dump(t, dsn, `SELECT count(*) FROM "`+pg+`".revenue_minute`)
	holder := fmt.Sprintf(`application_name "tidemark revenue pid %d on `, first.Process.Pid)
	refused := func(what, yaml, table string) {
		t.Helper()
		out, err := run(yaml)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: %v, want exit status 1\n%s", what, err, out)
		}
		for _, w := range []string{"another run writes table " + pg + "." + table + ": refused before writing — its writer lock is held by the session pid ", holder} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message lacks %q:\n%s", what, w, out)
			}
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the first run ended before the second started (%v): make it longer\n%s", err, firstErr.String())
	default:
	}
	refused("a second run of the pipeline, another checkpoint directory", pipeline("revenue", pg, "revenue_minute", filepath.Join(dir, "ck-2")), "revenue_minute")
	refused("another pipeline writing the same late table", pipeline("other", pg, "other_minute", filepath.Join(dir, "ck-3")), "late")
	if got := pgtest.Dump(t, dsn, `SELECT count(*) FROM pg_tables WHERE schemaname = '`+pg+`' AND tablename = 'other_minute'`); got != "0\n" {
		t.Errorf("the refused run created its own table before it was refused")
	}
	if now := pgtest.Dump(t, dsn, `SELECT count(*) >= `+strings.TrimSpace(before)+` FROM "`+pg+`".revenue_minute`); now != "t\n" {
		t.Errorf("the refused runs removed rows: %s before them", before)
	}
	select {
	case err := <-done:
		t.Fatalf("the first run ended while the others were refused (%v): make it longer\n%s", err, firstErr.String())
	default:
	}
	if err := <-done; err != nil {
		t.Fatalf("the first run: %v\n%s", err, firstErr.String())
	}
	if got := tables(pg); got != want {
		t.Fatalf("the first run's tables differ from an undisturbed run's:\n%s\nwant\n%s", got, want)
	}

	// kill -9 in the middle of a run, and a restart at once: the killed
	// process's session, and with it its locks, is gone.
	pgtest.Exec(t, dsn, `DROP TABLE "`+pg+`".revenue_minute, "`+pg+`".late`)
	ck := filepath.Join(dir, "ck-4")
	yaml := pipeline("revenue", pg, "revenue_minute", ck)
	third := exec.Command(binary, "run", "--quiet", "--batch-size", "1", yaml)
	var thirdErr bytes.Buffer
	third.Stderr = &thirdErr
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for newestCheckpoint(t, ck) < checkpointName(50) {
		if time.Now().After(deadline) {
			t.Fatalf("no 50th checkpoint in 30s:\n%s", thirdErr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	third.Process.Signal(syscall.SIGKILL)
	if err := third.Wait(); !killed(err) {
		t.Fatalf("the third run: %v, want killed\n%s", err, thirdErr.String())
	}
	start := time.Now()
	if out, err := run(yaml); err != nil {
		t.Fatalf("the run right after kill -9: %v\n%s", err, out)
	}
	t.Logf("the restart after kill -9 took %s", time.Since(start).Round(time.Millisecond))
	if got := tables(pg); got != want {
		t.Fatalf("after kill -9 and a restart the tables differ from an undisturbed run's:\n%s\nwant\n%s", got, want)
	}
}

// checkpointName is the file name of checkpoint id.
func checkpointName(id int64) string { return checkpoint.Name(id) }
