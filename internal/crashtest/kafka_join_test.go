package crashtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/checkpoint"
)

// kjoinRec is one generated record of TestCrashJoinKafka.
type kjoinRec struct {
	id, amount int
	k          string
	ts         int64 // ms since the epoch
}

// writeKafkaJoinEvents writes n left records (field id) to left.jsonl and
// n right records (rid) to right.jsonl, seeded: record i arrives at
// i·100 ms (+50 on the right) with an event time at most 10 s either side
// (so never late behind a 30 s out-of-orderness), key "hot" with
// probability 0.3 (left) or 0.05 (right), else k0 … k500, and 200 bytes of
// random hex (so that a partition's fetch, at most 1 MiB, holds only part
// of it).
func writeKafkaJoinEvents(t *testing.T, dir string, n int, seed uint64) (left, right []kjoinRec) {
	r := rand.New(rand.NewPCG(seed, 11))
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	var lb, rb strings.Builder
	for i := range n {
		for side := range 2 {
			arr, hot, idf := int64(i)*100, 0.3, "id"
			if side == 1 {
				arr, hot, idf = arr+50, 0.05, "rid"
			}
			x := kjoinRec{id: i, ts: base.UnixMilli() + arr + int64(r.IntN(20001)) - 10000, k: "hot"}
			if r.Float64() >= hot {
				x.k = fmt.Sprintf("k%d", r.IntN(501))
			}
			x.amount = 1 + r.IntN(1000)
			var pad strings.Builder
			for range 13 {
				fmt.Fprintf(&pad, "%016x", r.Uint64())
			}
			line := fmt.Sprintf(`{"ts":"%s","k":"%s","amount":%d,"%s":%d,"pad":"%s"}`+"\n",
				time.UnixMilli(x.ts).UTC().Format(time.RFC3339Nano), x.k, x.amount, idf, i, pad.String()[:200])
			if side == 0 {
				left = append(left, x)
				lb.WriteString(line)
			} else {
				right = append(right, x)
				rb.WriteString(line)
			}
		}
	}
	for name, b := range map[string]*strings.Builder{"left.jsonl": &lb, "right.jsonl": &rb} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return left, right
}

// kjoinNested is the full interval join (r.ts − l.ts in [−2 s, 3 s]) of
// left and right by nested loops over each key's records: the multiset of
// "event_time id rid la ra", padded sides "null".
func kjoinNested(left, right []kjoinRec) map[string]int {
	byKey := map[string][]int{}
	for j, r := range right {
		byKey[r.k] = append(byKey[r.k], j)
	}
	matched := make([]bool, len(right))
	want := map[string]int{}
	for _, l := range left {
		n := 0
		for _, j := range byKey[l.k] {
			r := right[j]
			if d := r.ts - l.ts; d >= -2000 && d <= 3000 {
				n++
				matched[j] = true
				want[fmt.Sprintf("%d %d %d %d %d", max(l.ts, r.ts), l.id, r.id, l.amount, r.amount)]++
			}
		}
		if n == 0 {
			want[fmt.Sprintf("%d %d null %d null", l.ts, l.id, l.amount)]++
		}
	}
	for j, r := range right {
		if !matched[j] {
			want[fmt.Sprintf("%d null %d null %d", r.ts, r.id, r.amount)]++
		}
	}
	return want
}

// kjoinWeights sums the weights of a retract-mode output's rows by
// "event_time id rid la ra" (lines summing to 0 dropped).
func kjoinWeights(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r struct {
			Op              string
			EventTime       time.Time `json:"event_time"`
			ID, RID, LA, RA json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		w := 1
		if r.Op == "update_before" || r.Op == "delete" {
			w = -1
		}
		k := fmt.Sprintf("%d %s %s %s %s", r.EventTime.UnixMilli(), r.ID, r.RID, r.LA, r.RA)
		if got[k] += w; got[k] == 0 {
			delete(got, k)
		}
	}
	return got
}

const kafkaJoinYAML = `name: kjoin
source: {type: kafka, brokers: ["{{BROKERS}}"], topics: [jl], stop_at_end: true, poll_timeout: 50ms, schema: {amount: int, id: int}}
event_time: {field: ts, out_of_orderness: 30s}
inputs:
  - name: rt
    source: {type: kafka, brokers: ["{{BROKERS}}"], topics: [jr], stop_at_end: true, poll_timeout: 50ms, schema: {amount: int, rid: int}}
    event_time: {field: ts, out_of_orderness: 30s}
checkpoint: {dir: {{OUT}}/ck, interval: 20ms, retain: 2}
stages:
  - name: joined
    join:
      type: interval
      kind: full
      left: {input: source, as: l}
      right: {input: rt, as: r}
      on: ["l.k = r.k"]
      between: {lower: -2s, upper: 3s}
      select: {id: l.id, rid: r.rid, la: l.amount, ra: r.amount}
    allowed_lateness: 10m
    emit: {mode: retract}
    late: {sink: {type: jsonl, path: {{OUT}}/late.jsonl}}
    sinks: [{type: jsonl, path: {{OUT}}/joined.jsonl}]
`

// TestCrashJoinKafka: a full interval join of two Kafka topics (4 and 3
// partitions, loaded with tidemark produce into tidemark dev-kafka), run
// at parallelism 1, 2, 3 and 7 in turn, killed with SIGKILL at
// 6 times (20 with -long) — at random instants and at named points of the
// checkpoint protocol — and restarted each time, ends with the rows of a
// nested-loop join (weights summed: each pair, and each unmatched row
// padded, once) and no late record, as an uninterrupted run does. The
// join's checkpoints fall in the middle of the inputs' batches, whose
// records a read after a restore returns cut otherwise.
func TestCrashJoinKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tidemark dozens of times")
	}
	dir := t.TempDir()
	left, right := writeKafkaJoinEvents(t, dir, 40000, 7)
	want := kjoinNested(left, right)
	brokers := devKafka(t)
	for _, x := range []struct{ file, topic, parts string }{{"left.jsonl", "jl", "4"}, {"right.jsonl", "jr", "3"}} {
		if out, err := exec.Command(binary, "produce", filepath.Join(dir, x.file), "--topic", x.topic, "--create", "--partitions", x.parts,
			"--key-field", "k", "--brokers", brokers, "-q").CombinedOutput(); err != nil {
			t.Fatalf("produce: %v\n%s", err, out)
		}
	}
	job := func(name string) (yaml, out string) {
		out = filepath.Join(dir, name)
		yaml = filepath.Join(dir, name+".yaml")
		y := strings.NewReplacer("{{BROKERS}}", brokers, "{{OUT}}", out).Replace(kafkaJoinYAML)
		if err := os.WriteFile(yaml, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return yaml, out
	}
	start := func(yaml, fault string, par int) *exec.Cmd {
		cmd := exec.Command(binary, "run", "--quiet", "--parallelism", fmt.Sprint(par), yaml)
		cmd.Stderr = &strings.Builder{}
		cmd.Env = append(os.Environ(), "TIDEMARK_FAULT="+fault)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	check := func(what, out string) {
		t.Helper()
		got := kjoinWeights(t, filepath.Join(out, "joined.jsonl"))
		missing, extra := 0, 0
		var first []string
		for k, w := range want {
			if d := w - got[k]; d > 0 {
				missing += d
				first = append(first, "missing "+k)
			}
		}
		for k, g := range got {
			if d := g - want[k]; d > 0 {
				extra += d
				first = append(first, "extra "+k)
			}
		}
		if missing+extra > 0 {
			t.Errorf("%s: %d rows missing, %d extra (%q)", what, missing, extra, first[:min(4, len(first))])
		}
		if b, err := os.ReadFile(filepath.Join(out, "late.jsonl")); err != nil || len(b) > 0 {
			t.Errorf("%s: late records: %d bytes, %v", what, len(b), err)
		}
	}

	refYAML, refOut := job("ref")
	t0 := time.Now()
	if cmd := start(refYAML, "", 2); cmd.Wait() != nil {
		t.Fatalf("reference run: %s", cmd.Stderr)
	}
	took := time.Since(t0)
	check("the uninterrupted run", refOut)

	crashYAML, out := job("crash")
	ck := filepath.Join(out, "ck")
	r := rand.New(rand.NewPCG(3, 9))
	points := []string{"prepared", "written", "committed:joined: sinks[0]", "committed:joined: late.sink"}
	kills, runs := 0, 0
	target := killTarget(6, 20)
	pars := map[int]int{}
	for {
		runs++
		if runs > 200 {
			t.Fatalf("no end after %d runs (%d kills)", runs, kills)
		}
		par := []int{2, 1, 3, 7}[runs%4]
		fault := ""
		if kills < target && kills%3 == 2 {
			latest, _ := checkpoint.List(ck)
			next := int64(1)
			if len(latest) > 0 {
				next = latest[0] + 1
			}
			fault = fmt.Sprintf("%s:%d", points[r.IntN(len(points))], next+int64(r.IntN(3)))
		}
		cmd := start(crashYAML, fault, par)
		var timer *time.Timer
		if kills < target && fault == "" {
			timer = time.AfterFunc(time.Duration(r.Int64N(int64(took))), func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
		err := cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		if killed(err) {
			kills++
			pars[par]++
			continue
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", runs, err, cmd.Stderr)
		}
		if kills >= target {
			break
		}
		os.RemoveAll(out) // finished before the kills: over again
	}
	t.Logf("reference run %v; %d runs, %d kills (by parallelism %v)", took, runs, kills, pars)
	check(fmt.Sprintf("after %d kills", kills), out)
}
