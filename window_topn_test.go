package tidemark_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWindowTopNSQL: Flink's window Top-N — ROW_NUMBER() OVER (PARTITION
// BY window_start, window_end ORDER BY price DESC, ts) over TUMBLE's
// rows, WHERE rn <= 2 — plans one top_n stage with the tumbling window
// and writes each window's two highest bids once, when the window closes
// (inserts: the select stage naming the sink's columns after the top_n). The rows are worked out by hand: window [00:00, 00:10) has
// prices 5, 9, 7, 9 — bidder 11 (9 at 00:03) first, bidder 13 (9 at
// 00:09, later) second; [00:10, 00:20) has 2, 8, 3 — bidders 15, 16;
// [00:20, 00:30) bidder 17 alone. Parallelism 1 and 2 write the same rows.
func TestWindowTopNSQL(t *testing.T) {
	input := []string{
		`{"ts":"2026-01-01T00:00:01Z","auction":1,"bidder":10,"price":5}`,
		`{"ts":"2026-01-01T00:00:03Z","auction":2,"bidder":11,"price":9}`,
		`{"ts":"2026-01-01T00:00:08Z","auction":3,"bidder":12,"price":7}`,
		`{"ts":"2026-01-01T00:00:09Z","auction":1,"bidder":13,"price":9}`,
		`{"ts":"2026-01-01T00:00:12Z","auction":4,"bidder":14,"price":2}`,
		`{"ts":"2026-01-01T00:00:15Z","auction":5,"bidder":15,"price":8}`,
		`{"ts":"2026-01-01T00:00:11Z","auction":6,"bidder":16,"price":3}`,
		`{"ts":"2026-01-01T00:00:25Z","auction":7,"bidder":17,"price":1}`,
	}
	want := []string{
		"ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z bidder=11 price=9 rn=1 op=insert",
		"ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z bidder=13 price=9 rn=2 op=insert",
		"ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z bidder=15 price=8 rn=1 op=insert",
		"ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z bidder=16 price=3 rn=2 op=insert",
		"ws=2026-01-01T00:00:20Z we=2026-01-01T00:00:30Z bidder=17 price=1 rn=1 op=insert",
	}
	var runs [][]string
	for _, par := range []int{1, 2} {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "top.jsonl")
		if err := os.WriteFile(in, []byte(strings.Join(input, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf(`CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), bidder BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT window_start, window_end, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, ts) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
) WHERE rn <= 2;
`, in, out)
		path := filepath.Join(dir, "job.sql")
		if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		pl := compileJob(t, path)
		if !pl.Stages[0].Operator.Ranked {
			t.Fatalf("want a Top-N stage first: %d stages", len(pl.Stages))
		}
		runJob(t, pl, par)
		rows, data := readJSONL(t, out)
		var got []string
		for _, m := range rows {
			got = append(got, fmt.Sprintf("ws=%v we=%v bidder=%v price=%v rn=%v op=%v", m["ws"], m["we"], m["bidder"], m["price"], m["rn"], m["op"]))
		}
		// Row order across windows and keys is the sink's; compare sorted.
		slices.Sort(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parallelism %d:\n%s\nwant\n%s\n(file:\n%s)", par, strings.Join(got, "\n"), strings.Join(want, "\n"), data)
		}
		runs = append(runs, got)
	}
	if strings.Join(runs[0], "\n") != strings.Join(runs[1], "\n") {
		t.Errorf("parallelism 1 and 2 differ")
	}
}

// TestWindowTopNSQLRecompute: window Top-N over TUMBLE, HOP and CUMULATE
// rows of random bids (no late ones: the disorder stays within the
// watermark's delay), each auction's three highest bids per window by
// price descending, then time, ties to the bid that came first, against
// a batch recomputation in Go — the windows each bid falls in worked out
// from its time, each window's and auction's bids sorted stably — at
// parallelism 1 and 2.
func TestWindowTopNSQLRecompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type bid struct {
		ms                     int64 // since base
		auction, bidder, price int
	}
	var bids []bid
	var lines []string
	clock := int64(0)
	for i := 0; i < 400; i++ {
		clock += rng.Int64N(400)
		ms := clock - rng.Int64N(3000) // out of order by up to 3 s (the watermark: 5 s)
		if ms < 0 {
			ms = 0
		}
		b := bid{ms: ms, auction: rng.IntN(4), bidder: i, price: rng.IntN(20)}
		bids = append(bids, b)
		lines = append(lines, fmt.Sprintf(`{"ts":"%s","auction":%d,"bidder":%d,"price":%d}`,
			base.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano), b.auction, b.bidder, b.price))
	}
	const sec = 1000
	tvfs := []struct {
		tvf  string
		wins func(ms int64) [][2]int64
	}{
		{"TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)", func(ms int64) [][2]int64 {
			s := ms / (10 * sec) * 10 * sec
			return [][2]int64{{s, s + 10*sec}}
		}},
		{"HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)", func(ms int64) [][2]int64 {
			s := ms / (5 * sec) * 5 * sec
			return [][2]int64{{s - 5*sec, s + 5*sec}, {s, s + 10*sec}}
		}},
		{"CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)", func(ms int64) [][2]int64 {
			s := ms / (10 * sec) * 10 * sec
			var out [][2]int64
			for _, e := range []int64{s + 5*sec, s + 10*sec} {
				if e > ms {
					out = append(out, [2]int64{s, e})
				}
			}
			return out
		}},
	}
	stamp := func(ms int64) string { return base.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano) }
	for _, tc := range tvfs {
		// The recomputation.
		type wk struct {
			w       [2]int64
			auction int
		}
		groups := map[wk][]bid{}
		for _, b := range bids {
			for _, w := range tc.wins(b.ms) {
				k := wk{w, b.auction}
				groups[k] = append(groups[k], b)
			}
		}
		var want []string
		for k, g := range groups {
			slices.SortStableFunc(g, func(a, b bid) int {
				if a.price != b.price {
					return b.price - a.price
				}
				return int(a.ms - b.ms)
			})
			for i := 0; i < len(g) && i < 3; i++ {
				want = append(want, fmt.Sprintf("ws=%s we=%s auction=%d bidder=%d price=%d rn=%d", stamp(k.w[0]), stamp(k.w[1]), k.auction, g[i].bidder, g[i].price, i+1))
			}
		}
		slices.Sort(want)
		for _, par := range []int{1, 2} {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "top.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf(`CREATE TABLE bids (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), auction BIGINT, bidder BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT window_start, window_end, auction, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, auction ORDER BY price DESC, ts) AS rn
  FROM TABLE(%s)
) WHERE rn <= 3;
`, in, out, tc.tvf)
			path := filepath.Join(dir, "job.sql")
			if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			pl := compileJob(t, path)
			runJob(t, pl, par)
			rows, _ := readJSONL(t, out)
			var got []string
			for _, m := range rows {
				got = append(got, fmt.Sprintf("ws=%v we=%v auction=%v bidder=%v price=%v rn=%v", m["ws"], m["we"], m["auction"], m["bidder"], m["price"], m["rn"]))
			}
			slices.Sort(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, parallelism %d: %d rows, want %d; first difference:\n%s", tc.tvf, par, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return "got  " + g + "\nwant " + w
		}
	}
	return ""
}
