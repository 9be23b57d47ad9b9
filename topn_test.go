package tidemark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
)

// topNYAML is a Top-N stage in a pipeline file: each auction's three
// highest bids over the whole input (stages[].top_n), ties on price to
// the earlier bid, ties on both to the bid that came first.
const topNYAML = `name: top_bids
source: {type: file, path: %s, schema: {auction: int, bidder: int, price: int}}
event_time: {field: ts, out_of_orderness: 1m}
%s
stages:
  - name: top
    key: [auction]
    top_n: {n: 3, order: [desc(price), ts], columns: [bidder, price], rank: rank_number}
    sinks: [{type: jsonl, path: %s}]
`

// topNInput is the bids in arrival order.
var topNInput = []string{
	`{"ts":"2026-01-01T00:00:01Z","auction":1,"bidder":10,"price":5}`,
	`{"ts":"2026-01-01T00:00:02Z","auction":2,"bidder":11,"price":7}`,
	`{"ts":"2026-01-01T00:00:03Z","auction":1,"bidder":12,"price":9}`,
	`{"ts":"2026-01-01T00:00:03Z","auction":1,"bidder":13,"price":9}`,
	`{"ts":"2026-01-01T00:00:04Z","auction":3,"bidder":14,"price":1}`,
	`{"ts":"2026-01-01T00:00:05Z","auction":1,"bidder":15,"price":6}`,
	`{"ts":"2026-01-01T00:00:01Z","auction":2,"bidder":16,"price":7}`,
	`{"ts":"2026-01-01T00:00:06Z","auction":1,"bidder":17,"price":10}`,
	`{"ts":"2026-01-01T00:00:07Z","auction":2,"bidder":18,"price":3}`,
	`{"ts":"2026-01-01T00:00:08Z","auction":4,"bidder":19,"price":2}`,
}

// topNWant is the rows worked out by hand: auction 1's bids by price are
// 17 (10), 12 and 13 (9 at 00:03 both: 12 came first), 15 (6), 10 (5);
// auction 2's 16 and 11 (7: 16's bid is earlier), 18 (3); auctions 3 and
// 4 have one bid each. Every row an insert, version 1, final, in the
// order of the auctions' first bids.
var topNWant = []string{
	"insert auction=1 rank_number=1 bidder=17 price=10 v1 final",
	"insert auction=1 rank_number=2 bidder=12 price=9 v1 final",
	"insert auction=1 rank_number=3 bidder=13 price=9 v1 final",
	"insert auction=2 rank_number=1 bidder=16 price=7 v1 final",
	"insert auction=2 rank_number=2 bidder=11 price=7 v1 final",
	"insert auction=2 rank_number=3 bidder=18 price=3 v1 final",
	"insert auction=3 rank_number=1 bidder=14 price=1 v1 final",
	"insert auction=4 rank_number=1 bidder=19 price=2 v1 final",
}

// TestTopNStage runs the Top-N stage of a pipeline file on both state
// backends at parallelism 1 and 2, straight through and stopped twice
// mid-input with a checkpoint (after 3 and 7 bids, each resumed at the
// other parallelism): every run writes the rows worked out by hand, and
// at one task in their order.
func TestTopNStage(t *testing.T) {
	for _, backend := range []string{"memory", "disk"} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", backend, par), func(t *testing.T) {
				dir := t.TempDir()
				got := runTopN(t, dir, backend, "final", []int{par}, nil)
				check(t, "straight", got)
				if par == 1 && strings.Join(got, "\n") != strings.Join(topNWant, "\n") {
					t.Errorf("at one task the rows come in the order of the auctions' first bids: %q", got)
				}
				other := 3 - par
				got = runTopN(t, filepath.Join(dir, "stopped"), backend, "final", []int{par, other, par}, []int64{3, 7})
				check(t, "stopped and resumed", got)
			})
		}
	}
}

// check compares got with topNWant, each auction's rows in the order
// they came: the interleaving of different keys' rows may vary with the
// number of tasks (the last run's), the order within a key may not.
func check(t *testing.T, what string, got []string) {
	t.Helper()
	checkRows(t, what, got, topNWant)
}

func checkRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	auction := func(r string) string { return strings.Fields(r)[1] }
	got = slices.Clone(got)
	slices.SortStableFunc(got, func(a, b string) int { return strings.Compare(auction(a), auction(b)) })
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// topNUpdateWant is the Top-N stage's rows in emit mode update, worked
// out by hand from topNInput (order: price descending, then the earlier
// bid, then the one that came first), each auction's in the order they
// come: a bid that enters an auction's three first emits every rank from
// its own down (the rows there each move a rank lower), an insert for a
// rank newly filled, an update_after for one that held a row; a rank's
// versions count 1, 2, 3 …; when the input ends every rank's row again,
// final. Auction 1: 10 (5) at rank 1; 12 (9) takes rank 1, 10 moves to
// 2; 13 (9, same time as 12: after it) takes 2, 10 moves to 3; 15 (6)
// takes 3, 10 leaves; 17 (10) takes 1, 12 and 13 move to 2 and 3, 15
// leaves. Auction 2: 11 (7); 16 (7, an earlier bid) takes 1, 11 moves to
// 2; 18 (3) fills 3.
var topNUpdateWant = []string{
	"insert auction=1 rank_number=1 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=1 bidder=12 price=9 v2",
	"insert auction=1 rank_number=2 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=2 bidder=13 price=9 v2",
	"insert auction=1 rank_number=3 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=3 bidder=15 price=6 v2",
	"update_after auction=1 rank_number=1 bidder=17 price=10 v3",
	"update_after auction=1 rank_number=2 bidder=12 price=9 v3",
	"update_after auction=1 rank_number=3 bidder=13 price=9 v3",
	"update_after auction=1 rank_number=1 bidder=17 price=10 v4 final",
	"update_after auction=1 rank_number=2 bidder=12 price=9 v4 final",
	"update_after auction=1 rank_number=3 bidder=13 price=9 v4 final",
	"insert auction=2 rank_number=1 bidder=11 price=7 v1",
	"update_after auction=2 rank_number=1 bidder=16 price=7 v2",
	"insert auction=2 rank_number=2 bidder=11 price=7 v1",
	"insert auction=2 rank_number=3 bidder=18 price=3 v1",
	"update_after auction=2 rank_number=1 bidder=16 price=7 v3 final",
	"update_after auction=2 rank_number=2 bidder=11 price=7 v2 final",
	"update_after auction=2 rank_number=3 bidder=18 price=3 v2 final",
	"insert auction=3 rank_number=1 bidder=14 price=1 v1",
	"update_after auction=3 rank_number=1 bidder=14 price=1 v2 final",
	"insert auction=4 rank_number=1 bidder=19 price=2 v1",
	"update_after auction=4 rank_number=1 bidder=19 price=2 v2 final",
}

// topNRetractWant is mode retract's rows: mode update's with, before
// each update_after, an update_before of the rank's previous row and
// version (by hand from the same steps).
var topNRetractWant = []string{
	"insert auction=1 rank_number=1 bidder=10 price=5 v1",
	"update_before auction=1 rank_number=1 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=1 bidder=12 price=9 v2",
	"insert auction=1 rank_number=2 bidder=10 price=5 v1",
	"update_before auction=1 rank_number=2 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=2 bidder=13 price=9 v2",
	"insert auction=1 rank_number=3 bidder=10 price=5 v1",
	"update_before auction=1 rank_number=3 bidder=10 price=5 v1",
	"update_after auction=1 rank_number=3 bidder=15 price=6 v2",
	"update_before auction=1 rank_number=1 bidder=12 price=9 v2",
	"update_after auction=1 rank_number=1 bidder=17 price=10 v3",
	"update_before auction=1 rank_number=2 bidder=13 price=9 v2",
	"update_after auction=1 rank_number=2 bidder=12 price=9 v3",
	"update_before auction=1 rank_number=3 bidder=15 price=6 v2",
	"update_after auction=1 rank_number=3 bidder=13 price=9 v3",
	"update_before auction=1 rank_number=1 bidder=17 price=10 v3",
	"update_after auction=1 rank_number=1 bidder=17 price=10 v4 final",
	"update_before auction=1 rank_number=2 bidder=12 price=9 v3",
	"update_after auction=1 rank_number=2 bidder=12 price=9 v4 final",
	"update_before auction=1 rank_number=3 bidder=13 price=9 v3",
	"update_after auction=1 rank_number=3 bidder=13 price=9 v4 final",
	"insert auction=2 rank_number=1 bidder=11 price=7 v1",
	"update_before auction=2 rank_number=1 bidder=11 price=7 v1",
	"update_after auction=2 rank_number=1 bidder=16 price=7 v2",
	"insert auction=2 rank_number=2 bidder=11 price=7 v1",
	"insert auction=2 rank_number=3 bidder=18 price=3 v1",
	"update_before auction=2 rank_number=1 bidder=16 price=7 v2",
	"update_after auction=2 rank_number=1 bidder=16 price=7 v3 final",
	"update_before auction=2 rank_number=2 bidder=11 price=7 v1",
	"update_after auction=2 rank_number=2 bidder=11 price=7 v2 final",
	"update_before auction=2 rank_number=3 bidder=18 price=3 v1",
	"update_after auction=2 rank_number=3 bidder=18 price=3 v2 final",
	"insert auction=3 rank_number=1 bidder=14 price=1 v1",
	"update_before auction=3 rank_number=1 bidder=14 price=1 v1",
	"update_after auction=3 rank_number=1 bidder=14 price=1 v2 final",
	"insert auction=4 rank_number=1 bidder=19 price=2 v1",
	"update_before auction=4 rank_number=1 bidder=19 price=2 v1",
	"update_after auction=4 rank_number=1 bidder=19 price=2 v2 final",
}

// TestTopNStageUpdating runs the Top-N stage in emit modes update and
// retract on both state backends at parallelism 1 and 2, straight
// through and stopped twice mid-input with a checkpoint (resumed at the
// other parallelism): every run writes the changelog worked out by hand,
// each auction's rows in their order.
func TestTopNStageUpdating(t *testing.T) {
	for _, mode := range []string{"update", "retract"} {
		want := topNUpdateWant
		if mode == "retract" {
			want = topNRetractWant
		}
		for _, backend := range []string{"memory", "disk"} {
			for _, par := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/p%d", mode, backend, par), func(t *testing.T) {
					dir := t.TempDir()
					checkRows(t, "straight", runTopN(t, dir, backend, mode, []int{par}, nil), want)
					other := 3 - par
					checkRows(t, "stopped and resumed", runTopN(t, filepath.Join(dir, "stopped"), backend, mode, []int{par, other, par}, []int64{3, 7}), want)
				})
			}
		}
	}
}

// runTopN runs topNYAML in dir, its stage in emit mode mode, once per
// parallelism in pars, each run but the last stopped after stops[i]
// records read (a checkpoint after every round), and returns the
// output's rows.
func runTopN(t *testing.T, dir, backend, mode string, pars []int, stops []int64) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "top.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(topNInput, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("state: {backend: %s}", backend)
	if backend == "disk" {
		extra = fmt.Sprintf("state: {backend: disk, dir: %s}", filepath.Join(dir, "state"))
	}
	if len(stops) > 0 {
		extra += fmt.Sprintf("\ncheckpoint: {dir: %s, interval: 1ms}", filepath.Join(dir, "ck"))
	}
	path := filepath.Join(dir, "pipeline.yaml")
	y := fmt.Sprintf(topNYAML, in, extra, out)
	if mode != "final" {
		y = strings.Replace(y, "    sinks:", "    emit: {mode: "+mode+"}\n    sinks:", 1)
	}
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	var tick atomic.Int64
	restored := 0
	for i, par := range pars {
		pl := compileJob(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		opts := engine.Options{Parallelism: par, BatchSize: 1, Logf: func(string, ...any) {},
			Clock:     func() int64 { return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).UnixMilli() },
			WallClock: func() time.Time { return time.Unix(tick.Add(1), 0) }}
		if i < len(stops) {
			opts.ProgressEvery = stops[i]
			opts.Progress = func(engine.Progress) { cancel() }
		}
		sum, err := engine.Run(ctx, pl, opts)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if i < len(stops) && (!sum.Stopped || sum.EventsRead >= int64(len(topNInput))) {
			t.Fatalf("run %d did not stop (%d records read)", i+1, sum.EventsRead)
		}
		if sum.Checkpoints.Restored > 0 {
			restored++
		}
	}
	if restored != len(stops) {
		t.Fatalf("%d runs restored, want %d", restored, len(stops))
	}
	return readTopNRows(t, out)
}

// readTopNRows reads a Top-N stage's JSON-lines output as
// "op auction=… rank_number=… bidder=… price=… vN[ final]" lines.
func readTopNRows(t *testing.T, out string) []string {
	t.Helper()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Op                              string
			Auction, RankNumber, Bidder, Px int64
			Version                         int64
			IsFinal                         bool
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		num := func(k string) int64 {
			f, _ := m[k].(float64)
			return int64(f)
		}
		r.Op, _ = m["op"].(string)
		r.Auction, r.RankNumber, r.Bidder, r.Px, r.Version = num("auction"), num("rank_number"), num("bidder"), num("price"), num("version")
		r.IsFinal, _ = m["is_final"].(bool)
		final := ""
		if r.IsFinal {
			final = " final"
		}
		rows = append(rows, fmt.Sprintf("%s auction=%d rank_number=%d bidder=%d price=%d v%d%s", r.Op, r.Auction, r.RankNumber, r.Bidder, r.Px, r.Version, final))
	}
	return rows
}

// TestTopNStageFeedsAggregation: a stage reading a Top-N stage's rows
// takes each kept row as an input row, its rank a field: per auction the
// rows kept, the sum of their ranks and the best price, worked out from
// topNWant (auctions 1 and 2: 3 rows, ranks 1+2+3, best 10 and 7;
// auctions 3 and 4: one row, best 1 and 2), at parallelism 1 and 2.
// Over the Top-N in emit mode retract the aggregation takes back each
// rank's previous row (update_before) as the ranks change and ends with
// the same rows.
func TestTopNStageFeedsAggregation(t *testing.T) {
	want := []string{"auction=1 bids=3 ranks=6 best=10", "auction=2 bids=3 ranks=6 best=7", "auction=3 bids=1 ranks=1 best=1", "auction=4 bids=1 ranks=1 best=2"}
	for _, tc := range []struct {
		mode string
		par  int
	}{{"final", 1}, {"final", 2}, {"retract", 1}, {"retract", 2}} {
		mode, par := tc.mode, tc.par
		dir := t.TempDir()
		in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "per_auction.jsonl")
		if err := os.WriteFile(in, []byte(strings.Join(topNInput, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		y := fmt.Sprintf(topNYAML, in, "", filepath.Join(dir, "top.jsonl"))
		if mode != "final" {
			y = strings.Replace(y, "    sinks:", "    emit: {mode: "+mode+"}\n    sinks:", 1)
		}
		y +=
			fmt.Sprintf("  - name: per_auction\n    input: top\n    key: [auction]\n    window: {type: global}\n    emit: {mode: final}\n"+
				"    aggregates: {bids: count(), ranks: sum(rank_number), best: max(price)}\n    sinks: [{type: jsonl, path: %s}]\n", out)
		path := filepath.Join(dir, "pipeline.yaml")
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		pl := compileJob(t, path)
		runJob(t, pl, par)
		rows, _ := readJSONL(t, out)
		var got []string
		for _, m := range rows {
			got = append(got, fmt.Sprintf("auction=%v bids=%v ranks=%v best=%v", m["auction"], m["bids"], m["ranks"], m["best"]))
		}
		slices.Sort(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("mode %s, parallelism %d:\n%s\nwant\n%s", mode, par, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// topNFlatYAML is topNYAML's stage in the top-level keys.
const topNFlatYAML = `name: top
source: {type: file, path: %s, schema: {auction: int, bidder: int, price: int}}
event_time: {field: ts, out_of_orderness: 1m}
key: [auction]
top_n: {n: 3, order: [desc(price), ts], columns: [bidder, price], rank: rank_number}
sinks: [{type: jsonl, path: %s}]
`

// topNSQL is topNYAML's job in SQL (%s: the emit mode's SET, or none),
// the pipeline named top (the sink's table).
const topNSQL = `%s
CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (auction BIGINT, rank_number BIGINT, bidder BIGINT, price BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT auction, rank_number, bidder, price FROM (
  SELECT auction, bidder, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, ts) AS rank_number FROM bids
) WHERE rank_number <= 3;
`

// TestTopNSQL: the Top-N stage in SQL (ROW_NUMBER() … <= 3, the emit
// mode by SET 'tidemark.emit.mode') plans the pipeline file's plan — the
// same plan fingerprint — and writes the rows worked out by hand for
// each emit mode, at parallelism 1 and 2.
func TestTopNSQL(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{{"final", topNWant}, {"update", topNUpdateWant}, {"retract", topNRetractWant}} {
		for _, par := range []int{1, 2} {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "top.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(topNInput, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			set := ""
			// The pipeline file of the same job, its one stage in the
			// top-level keys as the SQL's, named as the SQL names it (its
			// one INSERT's sink).
			y := fmt.Sprintf(topNFlatYAML, in, out)
			if tc.mode != "final" {
				set = "SET 'tidemark.emit.mode' = '" + tc.mode + "';"
				y += "emit: {mode: " + tc.mode + "}\n"
			}
			sqlPath, yamlPath := filepath.Join(dir, "job.sql"), filepath.Join(dir, "job.yaml")
			if err := os.WriteFile(sqlPath, []byte(fmt.Sprintf(topNSQL, set, in, out)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(yamlPath, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			var fps []string
			for _, path := range []string{yamlPath, sqlPath} {
				pl := compileJob(t, path)
				fp, err := engine.PlanFingerprint(pl.Spec)
				if err != nil {
					t.Fatal(err)
				}
				fps = append(fps, fp)
			}
			if fps[0] != fps[1] {
				t.Errorf("mode %s: fingerprint of the YAML %s, of the SQL %s", tc.mode, fps[0], fps[1])
			}
			pl := compileJob(t, sqlPath)
			runJob(t, pl, par)
			checkRows(t, fmt.Sprintf("mode %s, parallelism %d", tc.mode, par), readTopNRows(t, out), tc.want)
		}
	}
}

// TestTopNSQLFeedsAggregation: a Top-N of three rows per key read by a
// GROUP BY in SQL (once refused) plans a Top-N stage and an aggregation
// reading it, and writes TestTopNStageFeedsAggregation's rows, worked out
// by hand, in emit mode final (the final ranks) and retract (the ranks'
// changelog, each rank's previous row taken back), at parallelism 1 and 2.
func TestTopNSQLFeedsAggregation(t *testing.T) {
	want := []string{"auction=1 bids=3 ranks=6 best=10", "auction=2 bids=3 ranks=6 best=7", "auction=3 bids=1 ranks=1 best=1", "auction=4 bids=1 ranks=1 best=2"}
	for _, mode := range []string{"final", "retract"} {
		for _, par := range []int{1, 2} {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "per.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(topNInput, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf(`SET 'tidemark.emit.mode' = '%s';
CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE per (auction BIGINT, bids BIGINT, ranks BIGINT, best BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO per
SELECT auction, COUNT(*) AS bids, SUM(rn) AS ranks, MAX(price) AS best FROM (
  SELECT * FROM (
    SELECT auction, bidder, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, ts) AS rn FROM bids
  ) WHERE rn <= 3
) GROUP BY auction;
`, mode, in, out)
			path := filepath.Join(dir, "job.sql")
			if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			pl := compileJob(t, path)
			if len(pl.Stages) != 2 || !pl.Stages[0].Operator.Ranked || pl.Stages[1].Input != 0 {
				t.Fatalf("mode %s: want a Top-N stage and an aggregation reading it: %d stages", mode, len(pl.Stages))
			}
			runJob(t, pl, par)
			rows, _ := readJSONL(t, out)
			// The table the rows leave: the last row of each auction
			// (mode retract's rows before the close are provisional).
			last := map[string]string{}
			for _, m := range rows {
				if m["op"] == "update_before" {
					continue
				}
				if mode == "final" && m["is_final"] != true {
					t.Errorf("mode final: a row not final: %v", m)
				}
				last[fmt.Sprint(m["auction"])] = fmt.Sprintf("auction=%v bids=%v ranks=%v best=%v", m["auction"], m["bids"], m["ranks"], m["best"])
			}
			var got []string
			for _, r := range last {
				got = append(got, r)
			}
			slices.Sort(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("mode %s, parallelism %d:\n%s\nwant\n%s", mode, par, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
