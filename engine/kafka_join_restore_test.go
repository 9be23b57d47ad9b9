package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// kjoinRow is one generated record of the Kafka join test.
type kjoinRow struct {
	id     int
	k      string
	ts     int64 // ms since the epoch
	amount int
}

// kjoinEvents generates n left rows (id) and n right rows (rid), seeded:
// row i
// "arrives" at i·100 ms (+50 ms on the right) and has an event time up to
// 10 s either side of that; its key is "hot" with probability 0.3 (left)
// or 0.05 (right), else one of k0 … k500. Rows are returned in arrival
// order, as they are produced.
func kjoinEvents(seed uint64, n int) (left, right []kjoinRow) {
	r := rand.New(rand.NewPCG(seed, 7))
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	gen := func(i int, shift int64, hot float64) kjoinRow {
		ts := base + int64(i)*100 + shift + int64(r.IntN(20001)) - 10000
		k := "hot"
		if r.Float64() >= hot {
			k = fmt.Sprintf("k%d", r.IntN(501))
		}
		return kjoinRow{id: i, k: k, ts: ts, amount: 1 + r.IntN(1000)}
	}
	for i := range n {
		left = append(left, gen(i, 0, 0.3))
		right = append(right, gen(i, 50, 0.05))
	}
	return left, right
}

// kjoinWant is the full interval join of left and right (lower −2 s,
// upper 3 s) by nested loops over each key's rows: the multiset of
// "event_time id rid la ra" lines, padded sides as "null".
func kjoinWant(left, right []kjoinRow) map[string]int {
	byKey := map[string][]kjoinRow{}
	for _, r := range right {
		byKey[r.k] = append(byKey[r.k], r)
	}
	matchedR := map[int]bool{}
	want := map[string]int{}
	for _, l := range left {
		n := 0
		for _, r := range byKey[l.k] {
			if d := r.ts - l.ts; d >= -2000 && d <= 3000 {
				n++
				matchedR[r.id] = true
				want[fmt.Sprintf("%d %d %d %d %d", max(l.ts, r.ts), l.id, r.id, l.amount, r.amount)]++
			}
		}
		if n == 0 {
			want[fmt.Sprintf("%d %d null %d null", l.ts, l.id, l.amount)]++
		}
	}
	for _, r := range right {
		if !matchedR[r.id] {
			want[fmt.Sprintf("%d null %d null %d", r.ts, r.id, r.amount)]++
		}
	}
	return want
}

// kjoinGot sums the weights of a jsonl output's rows (insert and
// update_after +1, update_before and delete −1) by "event_time id rid la
// ra", dropping the lines whose sum is 0.
func kjoinGot(t *testing.T, path string) map[string]int {
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
			Op        string          `json:"op"`
			EventTime time.Time       `json:"event_time"`
			ID        json.RawMessage `json:"id"`
			RID       json.RawMessage `json:"rid"`
			LA        json.RawMessage `json:"la"`
			RA        json.RawMessage `json:"ra"`
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

// diffCounts describes how got differs from want (at most a few lines).
func diffCounts(got, want map[string]int) string {
	var missing, extra []string
	nm, ne := 0, 0
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if d := want[k] - got[k]; d > 0 {
			nm += d
			missing = append(missing, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if d := got[k] - want[k]; d > 0 {
			ne += d
			extra = append(extra, k)
		}
	}
	if nm == 0 && ne == 0 {
		return ""
	}
	return fmt.Sprintf("%d rows missing (%q …), %d extra (%q …)", nm, missing[:min(3, len(missing))], ne, extra[:min(3, len(extra))])
}

// kjoinPipeline is the full interval join of topics jl (the source) and jr
// (input rt), both bounded (stop_at_end), with checkpoints in ck when not
// empty.
func kjoinPipeline(brokers []string, out, ck string) *spec.Pipeline {
	lower, upper := spec.Duration(-2*time.Second), spec.Duration(3*time.Second)
	p := &spec.Pipeline{
		Name: "kjoin",
		Source: spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"jl"}, StopAtEnd: true,
			PollTimeout: spec.Duration(50 * time.Millisecond),
			Schema:      spec.FieldTypes{{Name: "amount", Type: "int"}, {Name: "id", Type: "int"}}},
		EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(30 * time.Second)},
		Inputs: []spec.Input{{Name: "rt",
			Source: spec.Source{Type: "kafka", Brokers: brokers, Topics: []string{"jr"}, StopAtEnd: true,
				PollTimeout: spec.Duration(50 * time.Millisecond),
				Schema:      spec.FieldTypes{{Name: "amount", Type: "int"}, {Name: "rid", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(30 * time.Second)}}},
		Stages: []spec.Stage{{
			Name: "joined",
			Join: &spec.Join{Type: "interval", Kind: "full",
				Left: spec.JoinSide{Input: "source", As: "l"}, Right: spec.JoinSide{Input: "rt", As: "r"},
				On: []string{"l.k = r.k"}, Between: &spec.JoinBounds{Lower: lower, Upper: &upper},
				Select: spec.NamedExprs{{Name: "id", Expr: "l.id"}, {Name: "rid", Expr: "r.rid"}, {Name: "la", Expr: "l.amount"}, {Name: "ra", Expr: "r.amount"}}},
			AllowedLateness: spec.Duration(10 * time.Minute),
			Emit:            spec.Emit{Mode: "retract"},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "joined.jsonl")}},
		}},
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Millisecond), Retain: 3}
	}
	return p
}

// TestKafkaJoinRestore: a full interval join of two Kafka topics of 4 and
// 3 partitions, stopped several times — each stop's final checkpoint
// taken in the middle of the inputs' batches, at parallelism 2 and 3 —
// and resumed at another parallelism, gives the rows of a nested-loop
// join, with no record late: each input resumes from where its routed
// records end in every partition, whatever the batches a read from there
// returns.
func TestKafkaJoinRestore(t *testing.T) {
	const n = 6000
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "jl"), kfake.SeedTopics(3, "jr"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	// Records of 2 KB in uncompressed record batches of 16 KiB: a fetch
	// returns up to 1 MiB of each partition, about 500 records, so the
	// source's batches of 100 hold the end of one fetch of a partition and
	// the start of another partition's, and a read after a seek to the
	// position before such a batch returns other records first.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	left, right := kjoinEvents(7, n)
	var recs []*kgo.Record
	pad := strings.Repeat("x", 2000) // see the client's options
	for i := range n {
		for _, x := range []struct {
			topic, idField string
			r              kjoinRow
		}{{"jl", "id", left[i]}, {"jr", "rid", right[i]}} {
			v := fmt.Sprintf(`{"%s":%d,"k":"%s","ts":"%s","amount":%d,"pad":"%s"}`, x.idField, x.r.id, x.r.k,
				time.UnixMilli(x.r.ts).UTC().Format(time.RFC3339Nano), x.r.amount, pad)
			recs = append(recs, &kgo.Record{Topic: x.topic, Key: []byte(x.r.k), Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := kjoinWant(left, right)

	dir := t.TempDir()
	run := func(p *spec.Pipeline, par int, stop int64) *engine.Summary {
		t.Helper()
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Compile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := engine.Options{Parallelism: par, BatchSize: 100}
		if stop > 0 {
			opts.ProgressEvery = stop
			opts.Progress = func(engine.Progress) { cancel() }
		}
		sum, err := engine.Run(ctx, pl, opts)
		if err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		return sum
	}

	refOut := filepath.Join(dir, "ref")
	sum := run(kjoinPipeline(brokers, refOut, ""), 2, 0)
	if d := diffCounts(kjoinGot(t, filepath.Join(refOut, "joined.jsonl")), want); d != "" {
		t.Fatalf("the uninterrupted run: %s", d)
	}
	if st := sum.Stages[0]; st.LateAccepted != 0 || st.TooLateSideOutput != 0 {
		t.Fatalf("the uninterrupted run: %d late, %d too late", st.LateAccepted, st.TooLateSideOutput)
	}

	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	restored := 0
	var late int64
	for _, step := range []struct {
		stop int64
		par  int
	}{{1500, 2}, {3000, 3}, {5000, 2}, {7000, 1}, {9000, 3}, {0, 2}} {
		s := run(kjoinPipeline(brokers, out, ck), step.par, step.stop)
		if step.stop > 0 && !s.Stopped {
			t.Fatalf("the run at parallelism %d did not stop", step.par)
		}
		if s.Checkpoints.Restored > 0 {
			restored++
		}
		late = s.Stages[0].LateAccepted + s.Stages[0].TooLateSideOutput
	}
	if restored != 5 {
		t.Fatalf("%d restores, want 5", restored)
	}
	if d := diffCounts(kjoinGot(t, filepath.Join(out, "joined.jsonl")), want); d != "" || late != 0 {
		t.Fatalf("after the restores: %d records late; %s", late, d)
	}
}
