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

	"github.com/tidemark/tidemark/internal/datatest"
)

// viewsYAML: an interval join of two filtered views of one input — the
// Online Retail lines of April and May 2011, delivered by a seeded replay
// over 4 partitions with stragglers (3 % up to 3 hours late) — pairing
// each sale line with the cancellations of the same customer and stock
// code within 30 days, with a lateness of 10 minutes, in mode final; a
// stage reading the join counts the pairs per day into SQLite. Both sides
// read the source's watermark and the inner join holds nothing back, so
// the join's watermarks are the source's: a restore must bring them back
// with the rest of its state (the rows too late by the checkpoint's
// watermark stay too late).
const viewsYAML = `name: cancels
source:
  type: file
  path: {{DATA}}/online-retail/by-day/2011-0[45]-*.csv
  format: csv
  schema: {Quantity: int, UnitPrice: decimal}
  ordinal: {field: line_no, per: InvoiceNo}
  replay: {seed: 7, delay: 2m, straggler_fraction: 0.03, max_delay: 3h, partitions: 4, partition_by: InvoiceNo}
event_time:
  field: InvoiceDate
  layout: "2006-01-02 15:04:05"
  timezone: Europe/London
  out_of_orderness: 5m
  idle_timeout: 15m
quarantine: {sink: {type: jsonl, path: {{OUT}}/quarantine.jsonl}}
stages:
  - name: pairs
    join:
      type: interval
      left: {as: S, filter: 'Quantity > 0'}
      right: {as: C, filter: 'Quantity < 0'}
      on: ["S.CustomerID = C.CustomerID", "S.StockCode = C.StockCode"]
      between: {lower: 0s, upper: 720h}
      select: {customer: S.CustomerID, stock: S.StockCode, sold: S.Quantity, cancelled: C.Quantity, sale: S.InvoiceNo, cancel: C.InvoiceNo}
    allowed_lateness: 10m
    emit: {mode: final}
    late: {sink: {type: jsonl, path: {{OUT}}/late.jsonl}}
    sinks: [{type: jsonl, path: {{OUT}}/pairs.jsonl}]
  - name: daily
    input: pairs
    key: []
    window: {type: tumbling, size: 24h, timezone: Europe/London}
    aggregates: {pairs: count(), sold: sum(sold), cancelled: sum(cancelled)}
    emit: {mode: final}
    sinks: [{type: sqlite, path: {{OUT}}/tidemark.db, table: daily}]
checkpoint: {dir: {{OUT}}/ck, interval: 100ms, retain: 2}
`

// viewsJob is one directory of the views pipeline.
type viewsJob struct{ out, yaml string }

func newViewsJob(t *testing.T, dir, name string) viewsJob {
	j := viewsJob{out: filepath.Join(dir, name), yaml: filepath.Join(dir, name+".yaml")}
	y := strings.NewReplacer("{{DATA}}", datatest.Dir(t), "{{OUT}}", j.out).Replace(viewsYAML)
	if err := os.WriteFile(j.yaml, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j viewsJob) start(t *testing.T, par int) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(binary, "run", "--quiet", "--parallelism", fmt.Sprint(par), j.yaml)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// outputs returns the join's rows, the late and quarantine records (each
// file's lines sorted: the interleaving of keys depends on the
// parallelism) and the daily table (every column, by day).
func (j viewsJob) outputs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"pairs.jsonl", "late.jsonl", "quarantine.jsonl"} {
		b, err := os.ReadFile(filepath.Join(j.out, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(lines)
		out[f] = strings.Join(lines, "\n")
	}
	db, err := sql.Open("sqlite", filepath.Join(j.out, "tidemark.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT * FROM daily ORDER BY window_start`)
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
	out["daily"] = b.String()
	return out
}

// TestCrashJoinOfViews: the join of two views of one input (viewsYAML),
// killed with SIGKILL at random instants and restarted each time at
// parallelism 1, 2 or 3, ends with the late records, the pairs and the
// daily table of a run that never crashed: 17 kills in each of 3 rounds
// (51 kills; 12 rounds with -long), each round from scratch with its own
// seed, each kill within the first half of an uninterrupted run's time
// after its start; each time a run reaches the end of the input, its
// outputs are compared (and the next kills start from scratch). A join restored without its sides' watermarks judged the rows
// arriving after the restore against −∞ until the next advance: rows too
// late by the checkpoint's watermark were taken as on time (1–5 late
// records lost in about a third of the restores).
func TestCrashJoinOfViews(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	ref := newViewsJob(t, dir, "ref")
	start := time.Now()
	if cmd, stderr := ref.start(t, 1); cmd.Wait() != nil {
		t.Fatalf("run: %s", stderr)
	}
	took := time.Since(start)
	want := ref.outputs(t)
	lines := func(s string) int { return strings.Count(s, "\n") + 1 }
	t.Logf("uninterrupted run %v: %d pairs, %d late, %d quarantined, %d days", took.Round(time.Millisecond),
		lines(want["pairs.jsonl"]), lines(want["late.jsonl"]), lines(want["quarantine.jsonl"]), strings.Count(want["daily"], "\n"))
	if lines(want["pairs.jsonl"]) < 500 || lines(want["late.jsonl"]) < 500 || strings.Count(want["daily"], "\n") < 35 {
		t.Fatalf("the reference run should have pairs, late records and a row a day")
	}
	rounds, perRound := 3, 17
	if *long {
		rounds = 12
	}
	total := 0
	for round := range rounds {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			crash := newViewsJob(t, dir, fmt.Sprint("crash", round))
			r := rand.New(rand.NewPCG(uint64(round), 25))
			kills, runs, ends, since := 0, 0, 0, 0
			byPar := map[int]int{}
			for {
				runs++
				if runs > 20*perRound {
					t.Fatalf("no end after %d runs (%d kills)", runs, kills)
				}
				par := 1 + r.IntN(3)
				cmd, stderr := crash.start(t, par)
				var timer *time.Timer
				if kills < perRound {
					delay := time.Duration(r.Int64N(int64(took / 2)))
					timer = time.AfterFunc(delay, func() { cmd.Process.Signal(syscall.SIGKILL) })
				}
				err := cmd.Wait()
				if timer != nil {
					timer.Stop()
				}
				if killed(err) {
					kills++
					since++
					byPar[par]++
					continue
				}
				if err != nil {
					t.Fatalf("run %d: %v\n%s", runs, err, stderr)
				}
				// The input's end, after the kills since the last start
				// from scratch: the outputs are the uninterrupted run's.
				ends++
				if since > 0 {
					compare(t, crash.outputs(t), want)
					if t.Failed() {
						t.Fatalf("after %d kills since the start from scratch (run %d)", since, runs)
					}
				}
				if kills >= perRound {
					break
				}
				os.RemoveAll(crash.out) // more kills: over again from scratch
				since = 0
			}
			total += kills
			t.Logf("%d runs, %d kills (by parallelism %v), %d ends compared", runs, kills, byPar, ends)
		})
	}
	t.Logf("%d kills in %d rounds", total, rounds)
}
