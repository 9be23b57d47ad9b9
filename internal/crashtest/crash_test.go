// Package crashtest kills `tidemark run` with SIGKILL at random instants
// and at named points of the checkpoint protocol, restarts it each time,
// and checks that the outputs end equal to those of a run that never
// crashed, row for row and version for version.
package crashtest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/internal/pgtest"
)

var binary string

// long runs the long rounds (more kills) of the crash tests; without it
// the package stays within a few minutes on a loaded machine.
var long = flag.Bool("long", false, "run the long rounds of the crash tests: more kills (the lakehouse sinks' runs at least 100 times instead of 24)")

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "tidemark-crashtest-")
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

// writeEvents writes n payment and refund events of 8 stores over about
// an hour, in event-time order, with a few invalid records.
func writeEvents(t *testing.T, path string, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.FixedZone("KST", 9*3600))
	for i := range n {
		ts := base.Add(time.Duration(i) * 1200 * time.Millisecond)
		typ, amount := "PAYMENT", 1000*(1+r.IntN(50))
		if r.IntN(8) == 0 {
			typ = "REFUND"
		}
		if i%997 == 500 {
			fmt.Fprintf(&b, `{"event_id":"e%d","store_id":"s%d","paid_at":"not a time","amount":1}`+"\n", i, r.IntN(8))
			continue
		}
		fmt.Fprintf(&b, `{"event_id":"e%d","event_type":"%s","store_id":"s%d","amount":%d,"paid_at":"%s"}`+"\n",
			i, typ, r.IntN(8), amount, ts.Format(time.RFC3339Nano))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

const pipelineYAML = `name: revenue
source:
  type: file
  path: {{DIR}}/events.jsonl
  schema: {amount: decimal}
  replay: {seed: 11, delay: 20s, straggler_fraction: 0.05, max_delay: 10m, redeliver_fraction: 0.05,
           conflict_fraction: 0.01, conflict_field: amount, partitions: 3, partition_by: store_id}
event_time: {field: paid_at, out_of_orderness: 30s, idle_timeout: 1m}
dedup: {key: event_id, ttl: 2h}
quarantine: {sink: {type: jsonl, path: {{OUT}}/quarantine.jsonl}}
conflicts: {sink: {type: jsonl, path: {{OUT}}/conflicts.jsonl}}
stages:
  - name: revenue
    fields: {delta: 'event_type == "REFUND" ? -amount : amount'}
    key: [store_id]
    window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
    allowed_lateness: 2m
    aggregates: {orders: count(), revenue: sum(delta), biggest: max(amount)}
    emit: {mode: update}
    late: {policy: side_output, sink: {type: jsonl, path: {{OUT}}/late.jsonl}}
    sinks:
      - {type: sqlite, path: {{OUT}}/tidemark.db, table: revenue}
      - {type: jsonl, path: {{OUT}}/changelog.jsonl}
      - {type: postgres, dsn: "{{DSN}}", table: {{PG}}.revenue}
  - name: ledger
    input: source
    fields: {delta: 'event_type == "REFUND" ? -amount : amount'}
    key: [store_id]
    window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
    allowed_lateness: 2m
    aggregates: {orders: count(), revenue: sum(delta)}
    sinks:
      - {type: postgres, dsn: "{{DSN}}", mode: ledger, table: {{PG}}.revenue_agg, ledger_table: {{PG}}.revenue_ledger}
{{CHECKPOINT}}
`

// job is one pipeline directory, with a PostgreSQL schema of its own.
type job struct {
	dir, out, ck, yaml string
	dsn, pg            string
}

func newJob(t *testing.T, dir, name string, checkpoints bool) job {
	return newJobState(t, dir, name, checkpoints, "")
}

// newJobState is newJob with a state section (YAML, "" for none).
func newJobState(t *testing.T, dir, name string, checkpoints bool, stateYAML string) job {
	j := job{dir: dir, out: filepath.Join(dir, name, "out"), ck: filepath.Join(dir, name, "ck"), yaml: filepath.Join(dir, name, "pipeline.yaml")}
	j.dsn, j.pg = pgtest.Schema(t)
	ckYAML := ""
	if checkpoints {
		ckYAML = "checkpoint: {dir: " + j.ck + ", interval: 1ms, retain: 2}"
	}
	if stateYAML != "" {
		ckYAML += "\n" + stateYAML
	}
	y := strings.NewReplacer("{{DIR}}", dir, "{{OUT}}", j.out, "{{CHECKPOINT}}", ckYAML, "{{DSN}}", j.dsn, "{{PG}}", j.pg).Replace(pipelineYAML)
	os.MkdirAll(filepath.Dir(j.yaml), 0o755)
	if err := os.WriteFile(j.yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

// start starts one run of the job.
func (j job) start(t *testing.T, fault string) (*exec.Cmd, *bytes.Buffer) {
	return j.startAt(t, fault, 1)
}

// startAt starts one run of the job as par tasks.
func (j job) startAt(t *testing.T, fault string, par int) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(binary, "run", "--quiet", "--batch-size", "16", "--parallelism", fmt.Sprint(par), j.yaml)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "TIDEMARK_FAULT="+fault)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// outputs returns the job's outputs as text: the result table ordered by
// key (every column), and each JSONL file.
func (j job) outputs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"changelog.jsonl", "late.jsonl", "quarantine.jsonl", "conflicts.jsonl"} {
		b, err := os.ReadFile(filepath.Join(j.out, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	db, err := sql.Open("sqlite", filepath.Join(j.out, "tidemark.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT * FROM revenue ORDER BY window_start, store_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	out["table"] = b.String()
	// PostgreSQL: the result table (every column but updated_at, which
	// is the database's clock), the ledger's aggregates and its ids.
	out["pg revenue"] = pgtest.Dump(t, j.dsn, `SELECT window_start, window_end, store_id, orders, revenue, biggest, version, is_final, watermark_at
		FROM "`+j.pg+`".revenue ORDER BY window_start, store_id`)
	out["pg revenue_agg"] = pgtest.Dump(t, j.dsn, `SELECT * FROM "`+j.pg+`".revenue_agg ORDER BY window_start, store_id`)
	out["pg revenue_ledger"] = pgtest.Dump(t, j.dsn, `SELECT count(*), count(DISTINCT event_id), sum(revenue), sum(hashtext(event_id || payload_hash::text)::bigint)
		FROM "`+j.pg+`".revenue_ledger`)
	return out
}

func compare(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			g := got[k]
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("%s differs (%d vs %d bytes) from byte %d: got %q, want %q", k, len(g), len(w), i,
				g[max(0, i-80):min(len(g), i+80)], w[max(0, i-80):min(len(w), i+80)])
		}
	}
}

// killTarget is a test's number of kills: ci in go test, more with
// -long (the package's CI share stays within a few minutes on a loaded
// 2-core machine).
func killTarget(ci, more int) int {
	if *long {
		return more
	}
	return ci
}

func runToEnd(t *testing.T, j job) time.Duration { return runToEndAt(t, j, 1) }

func runToEndAt(t *testing.T, j job, par int) time.Duration {
	start := time.Now()
	cmd, stderr := j.startAt(t, "", par)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	return time.Since(start)
}

// TestCrashRecovery: 12 SIGKILLs per parallelism schedule (24 with
// -long), at random instants and at named points of the protocol, each
// followed by a restart, end with
// the outputs of a run that never crashed (and of a run without
// checkpoints).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 3000, 7)

	plain := newJob(t, dir, "plain", false)
	runToEnd(t, plain)
	want := plain.outputs(t)
	if strings.Count(want["table"], "\n") < 400 || want["late.jsonl"] == "" || want["conflicts.jsonl"] == "" || want["quarantine.jsonl"] == "" {
		t.Fatalf("the reference run should have rows and every side output: %d rows, late %d, conflicts %d, quarantine %d bytes",
			strings.Count(want["table"], "\n"), len(want["late.jsonl"]), len(want["conflicts.jsonl"]), len(want["quarantine.jsonl"]))
	}
	// The ledger adds each accepted event's deltas once: its aggregates
	// equal the stream's final counts and sums, window by window.
	stream := pgtest.Dump(t, plain.dsn, `SELECT window_start, window_end, store_id, orders, revenue FROM "`+plain.pg+`".revenue ORDER BY window_start, store_id`)
	if stream != want["pg revenue_agg"] {
		t.Fatalf("ledger aggregates differ from the stream's results:\nledger\n%s\nstream\n%s", want["pg revenue_agg"], stream)
	}
	for _, c := range []struct {
		name string
		pars []int // each restart runs as one of these numbers of tasks
	}{{"parallelism 2", []int{2}}, {"parallelism 1, 2 and 4 across restarts", []int{1, 2, 4}}} {
		t.Run(c.name, func(t *testing.T) { crashLoop(t, dir, c.pars, want, "") })
	}
}

// TestCrashRecoveryDisk: the same kills with the dedup ids on the disk
// backend — also during a checkpoint's flush of the stores (point
// flushed), during the upload of their tables (uploading) and between
// the upload and the manifest (uploaded) — and restarts at 1, 2 and 4
// tasks end with the outputs of the memory backend's uninterrupted run;
// a missing table of the newest checkpoint makes it unusable, naming the
// file, and the previous one is restored.
func TestCrashRecoveryDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	writeEvents(t, filepath.Join(dir, "events.jsonl"), 3000, 7)
	plain := newJob(t, dir, "plain", false)
	runToEnd(t, plain)
	want := plain.outputs(t)
	crashLoop(t, dir, []int{1, 2, 4}, want, "state: {backend: disk, memory: 16MiB}")
}

// crashLoop kills and restarts a run of the job, each restart as one of
// pars tasks, and compares its outputs with want (a run at parallelism 1
// that never crashed): exactly for the tables; for the changelog, row for
// row within each (window, key), and the side outputs as sets, since the
// interleaving of different keys depends on the parallelism. With a single
// parallelism the outputs must also equal, byte for byte, an uncrashed run
// at that parallelism.
func crashLoop(t *testing.T, dir string, pars []int, want map[string]string, stateYAML string) {
	name := strings.Trim(strings.ReplaceAll(fmt.Sprint(pars), " ", "-"), "[]")
	if stateYAML != "" {
		name += "-disk"
	}
	ref := newJobState(t, dir, "ref"+name, true, stateYAML)
	took := runToEndAt(t, ref, pars[0])
	refOut := ref.outputs(t)
	compareCanonical(t, refOut, want)
	ids, _ := checkpoint.List(ref.ck)
	t.Logf("uninterrupted run with checkpoints at parallelism %d: %v; newest checkpoint %v", pars[0], took, ids)
	if len(pars) > 1 {
		refOut = want
	}

	crash := newJobState(t, dir, "crash"+name, true, stateYAML)
	target := killTarget(12, 24)
	r := rand.New(rand.NewPCG(42, uint64(len(pars))))
	points := []string{"prepared", "written", "committed:revenue: sinks[0]", "committed:revenue: sinks[1]", "committed:revenue: sinks[2]",
		"committed:conflicts.sink", "committed:quarantine.sink", "applied:ledger: sinks[0]", "committed:ledger: sinks[0]"}
	// The disk backend's points: during the flush of a checkpoint's
	// stores, during the upload of their tables, and between the upload
	// and the manifest: the first named kills, one each.
	diskPoints := []string{"flushed", "uploading", "uploaded"}
	kills, runs := 0, 0
	byPoint := map[string]int{}
	byPar := map[int]int{}
	for {
		runs++
		if runs > 300 {
			t.Fatalf("no end after %d runs (%d kills)", runs, kills)
		}
		fault := ""
		var timer *time.Timer
		var cmd *exec.Cmd
		var stderr *bytes.Buffer
		par := pars[r.IntN(len(pars))]
		byPar[par]++
		if kills < target {
			if kills%3 == 2 {
				// A named point of a checkpoint a little ahead.
				latest, _ := checkpoint.List(crash.ck)
				next := int64(1)
				if len(latest) > 0 {
					next = latest[0] + 1
				}
				p := points[r.IntN(len(points))]
				if stateYAML != "" && kills/3 < len(diskPoints) {
					p = diskPoints[kills/3]
				}
				fault = fmt.Sprintf("%s:%d", p, next+int64(r.IntN(3)))
				byPoint[p]++
			}
			cmd, stderr = crash.startAt(t, fault, par)
			if fault == "" {
				// Within the first half of an uninterrupted run's time:
				// a restored run, or one with more tasks, is shorter, and
				// one that ends before its kill starts over.
				delay := time.Duration(r.Int64N(int64(took / 2)))
				timer = time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
			}
		} else {
			cmd, stderr = crash.startAt(t, "", par)
		}
		err := cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		if killed(err) {
			kills++
			continue
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", runs, err, stderr)
		}
		if kills >= target {
			break
		}
		// Finished before the kill: start over from scratch for more kills.
		os.RemoveAll(crash.ck)
	}
	t.Logf("%d runs, %d kills (named points: %v; runs per parallelism: %v)", runs, kills, byPoint, byPar)
	got := crash.outputs(t)
	compareCanonical(t, got, want)
	if len(pars) == 1 {
		compare(t, got, refOut)
	}

	// A truncated newest checkpoint: the run falls back to the previous
	// one, says so, and the outputs stay exact.
	ids, _ = checkpoint.List(crash.ck)
	if len(ids) < 2 {
		t.Fatalf("retain 2 left %v", ids)
	}
	newest := filepath.Join(crash.ck, checkpoint.Name(ids[0]))
	b, _ := os.ReadFile(newest)
	os.WriteFile(newest, b[:len(b)/2], 0o644)
	cmd, stderr := crash.startAt(t, "", pars[len(pars)-1])
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after truncating %s: %v\n%s", newest, err, stderr)
	}
	if !strings.Contains(stderr.String(), "is unusable") || !strings.Contains(stderr.String(), fmt.Sprintf("restored checkpoint %d", ids[1])) {
		t.Errorf("no fallback log line: %s", stderr)
	}
	compareCanonical(t, crash.outputs(t), want)
	if stateYAML != "" {
		missingTable(t, crash, pars[len(pars)-1], want)
	}
}

// missingTable removes the table of the disk backend that only the newest
// checkpoint holds (the newest file), reruns the job over the same
// checkpoints and requires the fallback to the previous one, named in a
// log line with the file.
func missingTable(t *testing.T, j job, par int, want map[string]string) {
	ents, err := os.ReadDir(j.ck)
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	var at time.Time
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), checkpoint.TablePrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().After(at) {
			newest, at = e.Name(), fi.ModTime()
		}
	}
	if newest == "" {
		t.Fatal("the disk backend left no table in the checkpoint directory")
	}
	if err := os.Remove(filepath.Join(j.ck, newest)); err != nil {
		t.Fatal(err)
	}
	cmd, stderr := j.startAt(t, "", par)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after removing %s: %v\n%s", newest, err, stderr)
	}
	if !strings.Contains(stderr.String(), "is unusable") || !strings.Contains(stderr.String(), newest) {
		t.Errorf("no fallback log line naming %s: %s", newest, stderr)
	}
	compareCanonical(t, j.outputs(t), want)
}

// compareCanonical compares outputs up to the interleaving of different
// keys: JSONL changelogs per (window_start, store_id) in order, side
// outputs as sorted lines, tables exactly.
func compareCanonical(t *testing.T, got, want map[string]string) {
	t.Helper()
	canon := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			switch {
			case k == "changelog.jsonl":
				out[k] = canonChangelog(t, v)
			case strings.HasSuffix(k, ".jsonl"):
				lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
				slices.Sort(lines)
				out[k] = strings.Join(lines, "\n")
			default:
				out[k] = v
			}
		}
		return out
	}
	compare(t, canon(got), canon(want))
}

// canonChangelog groups changelog lines by (window_start, store_id),
// keeping each group's order, groups sorted.
func canonChangelog(t *testing.T, s string) string {
	groups := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m struct {
			WindowStart string `json:"window_start"`
			Store       string `json:"store_id"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("changelog line %q: %v", l, err)
		}
		k := m.WindowStart + " " + m.Store
		groups[k] = append(groups[k], l)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		b.WriteString(k + "\n" + strings.Join(groups[k], "\n") + "\n")
	}
	return b.String()
}

// killed reports whether a child's exit error says SIGKILL ended it.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
