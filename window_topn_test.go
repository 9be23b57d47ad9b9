package tidemark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
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
		p, err := tidemark.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := tidemark.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !pl.Stages[0].Operator.Ranked {
			t.Fatalf("want a Top-N stage first: %d stages", len(pl.Stages))
		}
		if _, err := engine.Run(context.Background(), pl, engine.Options{Parallelism: par, Logf: func(string, ...any) {}}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
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
