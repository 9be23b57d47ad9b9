package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/state/disk"
)

var long = flag.Bool("long", false, "run bench state's bounded-memory test (10,000,000 ids under a 32 MiB budget)")

// TestStateGenCounts: the generator's deliveries, copies and conflicting
// copies, counted by hand from its rule (every 20th delivery a copy,
// every 50th group's copy conflicting), and every copy's id is an
// earlier first delivery's within the lookback.
func TestStateGenCounts(t *testing.T) {
	const ids = 1_000_003 // 52,631 groups of 19 firsts (999,989), and 14 more
	pl, err := tidemark.Compile(statePipeline(24*time.Hour, "memory", 0, ""))
	if err != nil {
		t.Fatal(err)
	}
	g, err := newStateGen(pl, ids, stateRate(ids, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// 52,631 full groups of 20 deliveries, then 14 firsts.
	if g.n != 52_631*20+14 {
		t.Fatalf("deliveries %d", g.n)
	}
	if r := stateRate(ids, 24*time.Hour); r != 12 { // ⌈1,000,003 / 86,400⌉
		t.Fatalf("rate %d", r)
	}
	seen := make([]bool, ids)
	var firsts, copies, conflicts int64
	for k := range g.n {
		id, store, amount, ts, at := g.event(k)
		if store != id%stateStores || ts != g.base+id*1000/g.rate || ts > at {
			t.Fatalf("delivery %d: id %d store %d ts %d arrival %d", k, id, store, ts, at)
		}
		if k%stateCopyEvery != stateCopyEvery-1 {
			if id != firsts || seen[id] {
				t.Fatalf("delivery %d: first delivery of %d, want %d", k, id, firsts)
			}
			seen[id] = true
			firsts++
			continue
		}
		copies++
		if !seen[id] || firsts-1-id >= g.lookback {
			t.Fatalf("delivery %d: a copy of %d (newest first %d)", k, id, firsts-1)
		}
		_, _, first, _, _ := g.event(id + id/(stateCopyEvery-1)) // the first delivery's number
		if amount != first {
			conflicts++
		}
	}
	if firsts != ids || copies != 52_631 || conflicts != 1_053 { // groups 0, 50, …, 52,600
		t.Fatalf("firsts %d copies %d conflicts %d", firsts, copies, conflicts)
	}
}

// TestBenchStateSample: the comparison of the backends on 40,000 ids at
// one and two tasks — equal rows, the generator's duplicates and
// conflicts counted exactly (2,105 copies, 43 of them conflicting: the
// copies of groups 0, 50, …, 2,100), and the disk run read its store.
func TestBenchStateSample(t *testing.T) {
	for _, par := range []int{1, 2} {
		var out bytes.Buffer
		err := runBenchState(context.Background(), stateBenchFlags{ids: 100, ttl: 24 * time.Hour, memory: "16MiB", parallelism: par,
			sample: 40_000, sampleOnly: true, dir: t.TempDir(), format: "json"}, &out, io.Discard)
		if err != nil {
			t.Fatalf("parallelism %d: %v\n%s", par, err, out.String())
		}
		var rep stateBenchReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		s := rep.Sample
		// 40,000 ids: 2,105 groups of 19 (39,995) and 5 more firsts.
		if s == nil || !s.Equal || s.Deliveries != 42_105 || s.Duplicates+s.Conflicts != 2_105 || s.Conflicts != 43 {
			t.Fatalf("parallelism %d: %+v", par, s)
		}
		// Rows: 40,000 ids at ⌈40,000 / 86,400⌉ = 1 event/s: 11 full
		// hours of 3,600 ids, every store, and ids 39,600 to 39,999 in
		// the 12th, stores 600 to 999: 11 × 1,000 + 400.
		if s.Rows != 11_400 {
			t.Errorf("parallelism %d: %d rows", par, s.Rows)
		}
		if s.StoreReads == 0 || s.StoreHits == 0 {
			t.Errorf("parallelism %d: the disk run read nothing from its store: %+v", par, s)
		}
	}
}

// TestBenchStateBounded (-long, about 40 minutes on a loaded 2-vCPU
// machine): 10,000,000 ids (324 MiB in memory at 34 bytes each: 10× the
// budget) under a 32 MiB budget keep the resident set, less the
// executable's file-mapped pages, within the budget and its stated
// overhead (disk.Overhead: 15 % and 64 MiB; 100.0 MiB against 100.8 MiB
// measured on 2026-12-02) for the whole run, and the resident set does not
// grow: the last tenth's largest sample is at most the first tenth's.
// (Under the least budget, 16 MiB, 5,000,000 ids took 86.5 MiB against
// 82.4 MiB: docs/state.md, "Figures".)
func TestBenchStateBounded(t *testing.T) {
	if !*long {
		t.Skip("with -long")
	}
	var out bytes.Buffer
	err := runBenchState(context.Background(), stateBenchFlags{ids: 10_000_000, ttl: 24 * time.Hour, memory: "32MiB",
		dir: t.TempDir(), format: "json"}, &out, io.Discard)
	var rep stateBenchReport
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || rep.Run == nil {
		t.Fatalf("%v %v\n%s", err, jerr, out.String())
	}
	r := rep.Run
	limit := r.BudgetBytes + disk.Overhead(r.BudgetBytes)
	t.Logf("peak RSS %d (file-mapped %d; limit %d), %d samples, by tenth %v, %d bytes on disk, %.0f events/s", r.PeakRSSBytes, r.FileRSSBytes, limit, r.Samples, r.RSSByDecile, r.DiskBytes, r.EventsPerSec)
	if own := r.PeakRSSBytes - r.FileRSSBytes; own > limit {
		t.Errorf("peak RSS less the file-mapped pages %d above budget + overhead %d", own, limit)
	}
	if d := r.RSSByDecile; len(d) != 10 || d[9] > d[0] {
		t.Errorf("the resident set grew: %v", d)
	}
	if r.Duplicates+r.Conflicts != r.Deliveries-r.IDs || r.StoreHits == 0 {
		t.Errorf("counters: %+v", r)
	}
	if err != nil && !strings.Contains(err.Error(), "above the budget + 15 %") {
		t.Fatal(err)
	}
}

// TestPauseFigures: the median, the nearest-rank 99th percentile and the
// longest of the checkpoints' pauses, and the median bytes sent, worked
// out by hand.
func TestPauseFigures(t *testing.T) {
	var cks []engine.DiskCheckpoint
	// 200 checkpoints with pauses 1..200 ms in a shuffled order, and sent
	// bytes 10·i: p50 of 1..200 is 100.5, the 99th by nearest rank the
	// 198th smallest (⌈0.99·200⌉), the longest 200; sent's median is the
	// 101st smallest (index 100), 1010.
	for i := range 200 {
		ms := (i*73)%200 + 1
		d := time.Duration(ms) * time.Millisecond
		cks = append(cks, engine.DiskCheckpoint{ID: int64(i + 1), Pause: d, Sent: int64(10 * ms),
			WriteBack: 2 * d, Flush: 3 * d, Checkpoint: 4 * d, List: 5 * d, Upload: 6 * d, Wait: 7 * d, Snapshot: 8 * d})
	}
	var r stateRun
	r.pauseFigures(cks)
	if r.PauseP50Ms != 100.5 || r.PauseP99Ms != 198 || r.PauseMaxMs != 200 || r.SentP50Bytes != 1010 {
		t.Fatalf("p50 %v, p99 %v, max %v, sent %d; want 100.5, 198, 200, 1010", r.PauseP50Ms, r.PauseP99Ms, r.PauseMaxMs, r.SentP50Bytes)
	}
	// Each part is k·pause: its p50 and p99 are k·100.5 and k·198.
	parts := [][2]float64{{r.WriteBackP50Ms, r.WriteBackP99Ms}, {r.FlushP50Ms, r.FlushP99Ms}, {r.CheckpointP50Ms, r.CheckpointP99Ms}, {r.ListP50Ms, r.ListP99Ms}, {r.UploadP50Ms, r.UploadP99Ms}, {r.WaitP50Ms, r.WaitP99Ms}, {r.SnapshotP50Ms, r.SnapshotP99Ms}}
	for k, p := range parts {
		if want := [2]float64{float64(k+2) * 100.5, float64(k+2) * 198}; p != want {
			t.Errorf("part %d: p50/p99 %v, want %v", k, p, want)
		}
	}
	if got := nearestRank([]float64{5}, 0.99); got != 5 {
		t.Fatalf("one value: %v", got)
	}
	if got := nearestRank(nil, 0.5); got != 0 {
		t.Fatalf("no values: %v", got)
	}
}

// TestBenchStateRestart: --restart runs the measured run again from its
// latest checkpoint at 2 tasks (the run's) and then at 1: both restores
// take every table of the checkpoint by hard links (0 bytes copied: one
// file system), the first into 2 stores, one per task, the second both
// old stores into the one task whole (none excised); each restart counts
// the checkpoint's records. (The tables' bytes differ a little between
// the two: the first restart's run checkpoints again, and its stores may
// have compacted in between.)
func TestBenchStateRestart(t *testing.T) {
	var out bytes.Buffer
	err := runBenchState(context.Background(), stateBenchFlags{ids: 20_000, ttl: 24 * time.Hour, memory: "16MiB", parallelism: 2,
		dir: t.TempDir(), format: "json", checkpoint: 20 * time.Millisecond, restarts: []int{0, 1}}, &out, io.Discard)
	var rep stateBenchReport
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || rep.Run == nil {
		t.Fatalf("%v %v\n%s", err, jerr, out.String())
	}
	r := rep.Run
	if len(r.Restarts) != 2 {
		t.Fatalf("%d restarts, want 2: %+v", len(r.Restarts), r.Restarts)
	}
	a, b := r.Restarts[0], r.Restarts[1]
	if a.Parallelism != 2 || a.Stores != 2 || a.Excised != 0 || a.Tables == 0 || a.CopiedBytes != 0 || a.RestoreMs <= 0 {
		t.Errorf("restart at 2 tasks: %+v", a)
	}
	if b.Parallelism != 1 || b.Stores != 2 || b.Excised != 0 || b.Tables == 0 || b.TableBytes == 0 || b.CopiedBytes != 0 {
		t.Errorf("restart at 1 task: %+v", b)
	}
	for _, x := range r.Restarts {
		if x.Deliveries != r.Deliveries {
			t.Errorf("restart at %d tasks: %d records in, the run had %d", x.Parallelism, x.Deliveries, r.Deliveries)
		}
	}
	if err := runBenchState(context.Background(), stateBenchFlags{ids: 20_000, ttl: time.Hour, memory: "16MiB", restarts: []int{1}, format: "text"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--restart needs --checkpoint-interval") {
		t.Errorf("--restart without checkpoints: %v", err)
	}
}
