package crashtest

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/checkpoint"
)

// writeJoinEvents writes n payments (the source) of 6 stores, one every
// 1.5 s, and refunds (an input) for about a third of them, 0 to 15 minutes
// after their payment (beyond the join's 10-minute bound for a third of
// those), both in event-time order, with a few payments without an order.
func writeJoinEvents(t *testing.T, dir string, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 2))
	var pay, ref strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	type refund struct {
		ts   time.Time
		line string
	}
	var refunds []refund
	for i := range n {
		ts := base.Add(time.Duration(i) * 1500 * time.Millisecond)
		amount := 1000 * (1 + r.IntN(50))
		if i%499 == 250 {
			fmt.Fprintf(&pay, `{"event_id":"p%d","store_id":"s%d","amount":%d,"paid_at":"%s"}`+"\n", i, r.IntN(6), amount, ts.Format(time.RFC3339Nano))
			continue
		}
		fmt.Fprintf(&pay, `{"event_id":"p%d","order":"o%d","store_id":"s%d","amount":%d,"paid_at":"%s"}`+"\n", i, i, r.IntN(6), amount, ts.Format(time.RFC3339Nano))
		if r.IntN(3) == 0 {
			rts := ts.Add(time.Duration(r.IntN(900)) * time.Second)
			refunds = append(refunds, refund{rts, fmt.Sprintf(`{"refund_id":"r%d","order":"o%d","refund":%d,"refunded_at":"%s"}`, i, i, amount/(1+r.IntN(4)), rts.Format(time.RFC3339Nano))})
		}
	}
	slices.SortStableFunc(refunds, func(a, b refund) int { return a.ts.Compare(b.ts) })
	for _, x := range refunds {
		ref.WriteString(x.line + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(pay.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refunds.jsonl"), []byte(ref.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// joinPipelineYAML: payments (shuffled, redelivered, 3 partitions, dedup)
// left-joined to refunds (shuffled, 2 partitions) within 10 minutes after
// the payment, in retract mode with a late output; a stage reading the
// join sums paid and refunded per store and 5 minutes into SQLite.
const joinPipelineYAML = `name: refunds
source:
  type: file
  path: {{DIR}}/payments.jsonl
  schema: {amount: decimal}
  replay: {seed: 5, delay: 20s, straggler_fraction: 0.05, max_delay: 6m, redeliver_fraction: 0.05, partitions: 3, partition_by: store_id}
event_time: {field: paid_at, out_of_orderness: 30s, idle_timeout: 1m}
dedup: {key: event_id, ttl: 2h}
quarantine: {sink: {type: jsonl, path: {{OUT}}/quarantine.jsonl}}
inputs:
  - name: refunds
    source:
      type: file
      path: {{DIR}}/refunds.jsonl
      schema: {refund: decimal}
      replay: {seed: 9, delay: 20s, straggler_fraction: 0.05, max_delay: 6m, partitions: 2, partition_by: order}
    event_time: {field: refunded_at, out_of_orderness: 30s, idle_timeout: 1m}
stages:
  - name: matched
    join:
      type: interval
      kind: left
      left: {as: p}
      right: {input: refunds, as: r}
      on: ["p.order = r.order"]
      between: {lower: 0s, upper: 10m}
      select: {order: p.order, store_id: p.store_id, paid: p.amount, refunded: r.refund}
    allowed_lateness: 4m
    emit: {mode: retract}
    late: {sink: {type: jsonl, path: {{OUT}}/late.jsonl}}
    sinks: [{type: jsonl, path: {{OUT}}/matched.jsonl}]
  - name: net
    input: matched
    key: [store_id]
    window: {type: tumbling, size: 5m}
    allowed_lateness: 20m
    aggregates: {paid: sum(paid), refunded: sum(refunded), rows: count()}
    emit: {mode: update}
    sinks:
      - {type: sqlite, path: {{OUT}}/tidemark.db, table: net}
      - {type: jsonl, path: {{OUT}}/net.jsonl}
{{CHECKPOINT}}
`

// joinJob is one directory of the join pipeline.
type joinJob struct{ out, ck, yaml string }

func newJoinJob(t *testing.T, dir, name string, checkpoints bool) joinJob {
	j := joinJob{out: filepath.Join(dir, name, "out"), ck: filepath.Join(dir, name, "ck"), yaml: filepath.Join(dir, name, "pipeline.yaml")}
	ckYAML := ""
	if checkpoints {
		ckYAML = "checkpoint: {dir: " + j.ck + ", interval: 1ms, retain: 2}"
	}
	y := strings.NewReplacer("{{DIR}}", dir, "{{OUT}}", j.out, "{{CHECKPOINT}}", ckYAML).Replace(joinPipelineYAML)
	os.MkdirAll(filepath.Dir(j.yaml), 0o755)
	if err := os.WriteFile(j.yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j joinJob) start(t *testing.T, fault string, par int) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(binary, "run", "--quiet", "--batch-size", "16", "--parallelism", fmt.Sprint(par), j.yaml)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "TIDEMARK_FAULT="+fault)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// outputs returns the job's JSONL files and its SQLite table (every
// column, by key).
func (j joinJob) outputs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"matched.jsonl", "late.jsonl", "quarantine.jsonl", "net.jsonl"} {
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
	rows, err := db.Query(`SELECT * FROM net ORDER BY window_start, store_id`)
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
	return out
}

// sortedOutputs sorts every JSONL file's lines (the interleaving of
// different keys depends on the parallelism; within a key the order is
// checked by the exact comparison at one parallelism).
func sortedOutputs(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasSuffix(k, ".jsonl") {
			lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
			slices.Sort(lines)
			v = strings.Join(lines, "\n")
		}
		out[k] = v
	}
	return out
}

// TestCrashJoin: a two-input join pipeline (a left interval join in
// retract mode, with late rows, and a stage aggregating the join's rows)
// run as 2 tasks, killed with SIGKILL 6 times (20 with -long) — at random
// instants and at named points of the checkpoint protocol — and restarted
// each time, ends with the outputs of a run at 2 tasks that never crashed,
// byte for byte, and line for line (each file's lines as a set) with those
// of an uncrashed run at 1 task without checkpoints. (Restores at other
// parallelisms are engine.TestJoinRestore's.)
func TestCrashJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	writeJoinEvents(t, dir, 1200, 3)
	plain := newJoinJob(t, dir, "plain", false)
	if cmd, stderr := plain.start(t, "", 1); cmd.Wait() != nil {
		t.Fatalf("run: %s", stderr)
	}
	want := plain.outputs(t)
	t.Logf("reference run: %d join rows (%d update_before, %d padded), %d late, %d quarantined, %d table rows",
		strings.Count(want["matched.jsonl"], "\n"), strings.Count(want["matched.jsonl"], `"op":"update_before"`), strings.Count(want["matched.jsonl"], `"refunded":null`),
		strings.Count(want["late.jsonl"], "\n"), strings.Count(want["quarantine.jsonl"], "\n"), strings.Count(want["table"], "\n"))
	matched := want["matched.jsonl"]
	if strings.Count(want["table"], "\n") < 40 || want["late.jsonl"] == "" || want["quarantine.jsonl"] == "" ||
		!strings.Contains(matched, `"op":"update_before"`) || !strings.Contains(matched, `"refunded":null`) {
		t.Fatalf("the reference run should have rows, padded rows revised by late refunds, late rows and quarantined records: %d table rows, late %d, quarantine %d bytes, update_before %v",
			strings.Count(want["table"], "\n"), len(want["late.jsonl"]), len(want["quarantine.jsonl"]), strings.Contains(matched, `"op":"update_before"`))
	}
	for _, pars := range [][]int{{2}} {
		t.Run(fmt.Sprint(pars), func(t *testing.T) {
			name := strings.Trim(strings.ReplaceAll(fmt.Sprint(pars), " ", "-"), "[]")
			ref := newJoinJob(t, dir, "ref"+name, true)
			start := time.Now()
			if cmd, stderr := ref.start(t, "", pars[0]); cmd.Wait() != nil {
				t.Fatalf("run: %s", stderr)
			}
			took := time.Since(start)
			compare(t, sortedOutputs(ref.outputs(t)), sortedOutputs(want))

			crash := newJoinJob(t, dir, "crash"+name, true)
			r := rand.New(rand.NewPCG(17, uint64(len(pars))))
			points := []string{"prepared", "written", "committed:matched: sinks[0]", "committed:net: sinks[0]", "committed:net: sinks[1]", "committed:matched: late.sink"}
			kills, runs := 0, 0
			target := killTarget(6, 20)
			byPoint := map[string]int{}
			for {
				runs++
				if runs > 200 {
					t.Fatalf("no end after %d runs (%d kills)", runs, kills)
				}
				par := pars[r.IntN(len(pars))]
				fault := ""
				var timer *time.Timer
				if kills < target && kills%3 == 2 {
					latest, _ := checkpoint.List(crash.ck)
					next := int64(1)
					if len(latest) > 0 {
						next = latest[0] + 1
					}
					p := points[r.IntN(len(points))]
					fault = fmt.Sprintf("%s:%d", p, next+int64(r.IntN(3)))
					byPoint[p]++
				}
				cmd, stderr := crash.start(t, fault, par)
				if kills < target && fault == "" {
					delay := time.Duration(r.Int64N(int64(took)))
					timer = time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
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
				os.RemoveAll(crash.ck) // finished before the kill: over again
			}
			t.Logf("%d runs, %d kills (named points %v)", runs, kills, byPoint)
			got := crash.outputs(t)
			compare(t, sortedOutputs(got), sortedOutputs(want))
			if len(pars) == 1 {
				compare(t, got, ref.outputs(t))
			}
		})
	}
}
