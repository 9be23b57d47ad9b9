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

// runWindowTopNScript writes the input lines, runs the script (its %[1]s
// the input's path, %[2]s the output's) at the given parallelism and
// returns the output file's rows, each rendered by the given columns
// (name=value, in that order) with its op, version and is_final where the
// sink writes them, sorted.
func runWindowTopNScript(t *testing.T, script string, input []string, par int, cols ...string) []string {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "bids.jsonl"), filepath.Join(dir, "top.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(input, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(script, in, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := compileJob(t, path)
	runJob(t, pl, par)
	rows, _ := readJSONL(t, out)
	var got []string
	for _, m := range rows {
		var parts []string
		for _, c := range append(cols, "op", "version", "is_final") {
			if v, ok := m[c]; ok {
				parts = append(parts, fmt.Sprintf("%s=%v", c, v))
			}
		}
		got = append(got, strings.Join(parts, " "))
	}
	slices.Sort(got)
	return got
}

// TestWindowTopNOfAggregationSQL: Flink's "Window Top-N follows after
// Window Aggregation" — ROW_NUMBER() OVER (PARTITION BY window_start,
// window_end ORDER BY price DESC, supplier) over the rows of a TUMBLE
// aggregation (SUM(price), COUNT(*) per supplier and window), WHERE
// rownum <= 2: each window's two suppliers of the largest sums, once,
// when the window closes. By hand: [00:00, 00:10) sums a 5+2 = 7 (2
// bids), b 4+3 = 7 (2), c 3+6 = 9 (2) — c first, then a (the tie with b
// goes to the supplier ordered first); [00:10, 00:20) a 1+4 = 5, b 8, d 2
// (its bid out of order, within the watermark) — b, a; [00:20, 00:30) c
// alone. The plan: the aggregation, a top_n stage keyed by the upstream's
// window bounds over a 1 ms window, a select naming the sink's columns;
// each row's event time is its window's last millisecond (written as the
// window closes).
// Parallelism 1 and 2 write the same rows.
func TestWindowTopNOfAggregationSQL(t *testing.T) {
	input := []string{
		`{"ts":"2026-01-01T00:00:01Z","supplier":"a","price":5}`,
		`{"ts":"2026-01-01T00:00:02Z","supplier":"b","price":4}`,
		`{"ts":"2026-01-01T00:00:03Z","supplier":"c","price":3}`,
		`{"ts":"2026-01-01T00:00:05Z","supplier":"a","price":2}`,
		`{"ts":"2026-01-01T00:00:08Z","supplier":"b","price":3}`,
		`{"ts":"2026-01-01T00:00:09Z","supplier":"c","price":6}`,
		`{"ts":"2026-01-01T00:00:11Z","supplier":"a","price":1}`,
		`{"ts":"2026-01-01T00:00:12Z","supplier":"b","price":8}`,
		`{"ts":"2026-01-01T00:00:10.500Z","supplier":"d","price":2}`,
		`{"ts":"2026-01-01T00:00:15Z","supplier":"a","price":4}`,
		`{"ts":"2026-01-01T00:00:25Z","supplier":"c","price":1}`,
	}
	script := `CREATE TABLE bids (supplier STRING, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, price BIGINT, cnt BIGINT, rownum BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, supplier) AS rownum
  FROM (
    SELECT window_start, window_end, supplier, SUM(price) AS price, COUNT(*) AS cnt
    FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY window_start, window_end, supplier
  )
) WHERE rownum <= 2;
`
	want := []string{
		"event_time=2026-01-01T00:00:09.999Z ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z supplier=a price=7 cnt=2 rownum=2 op=insert",
		"event_time=2026-01-01T00:00:09.999Z ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z supplier=c price=9 cnt=2 rownum=1 op=insert",
		"event_time=2026-01-01T00:00:19.999Z ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z supplier=a price=5 cnt=2 rownum=2 op=insert",
		"event_time=2026-01-01T00:00:19.999Z ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z supplier=b price=8 cnt=1 rownum=1 op=insert",
		"event_time=2026-01-01T00:00:29.999Z ws=2026-01-01T00:00:20Z we=2026-01-01T00:00:30Z supplier=c price=1 cnt=1 rownum=1 op=insert",
	}
	for _, par := range []int{1, 2} {
		got := runWindowTopNScript(t, script, input, par, "event_time", "ws", "we", "supplier", "price", "cnt", "rownum")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parallelism %d:\n%s\nwant\n%s", par, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWindowTopNOfSessionAggregationSQL: a window Top-N over a SESSION
// aggregation's rows (SESSION(TABLE bids PARTITION BY supplier, …, 2 s)
// GROUP BY window_start, window_end, supplier), partitioned by the
// sessions' bounds: the suppliers whose sessions have the same start and
// end, ranked by their sums. By hand (a session is [first bid, last bid
// + 2 s); bids 2 s apart touch and merge): a bids at 00:01 and 00:03
// (session [00:01, 00:05), 2+2 = 4), b at 00:01 and 00:03 ([00:01,
// 00:05), 1+5 = 6), c at 00:01 and 00:02 ([00:01, 00:04), 4+6 = 10), d at
// 00:20 ([00:20, 00:22), 7): [00:01, 00:05) ranks b then a; c (same
// start, another end) and d are alone in theirs.
// The top_n stage writes the sink itself (its key columns are the sink's
// ws and we): inserts, version 1, final. Parallelism 1 and 2 write the
// same rows.
func TestWindowTopNOfSessionAggregationSQL(t *testing.T) {
	input := []string{
		`{"ts":"2026-01-01T00:00:01Z","supplier":"a","price":2}`,
		`{"ts":"2026-01-01T00:00:01Z","supplier":"b","price":1}`,
		`{"ts":"2026-01-01T00:00:01Z","supplier":"c","price":4}`,
		`{"ts":"2026-01-01T00:00:03Z","supplier":"a","price":2}`,
		`{"ts":"2026-01-01T00:00:03Z","supplier":"b","price":5}`,
		`{"ts":"2026-01-01T00:00:02Z","supplier":"c","price":6}`,
		`{"ts":"2026-01-01T00:00:20Z","supplier":"d","price":7}`,
	}
	script := `CREATE TABLE bids (supplier STRING, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, price BIGINT, rownum BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT ws, we, supplier, price, rownum FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
  FROM (
    SELECT window_start AS ws, window_end AS we, window_start, window_end, supplier, SUM(price) AS price
    FROM TABLE(SESSION(TABLE bids PARTITION BY supplier, DESCRIPTOR(ts), INTERVAL '2' SECOND))
    GROUP BY window_start, window_end, supplier
  )
) WHERE rownum <= 2;
`
	want := []string{
		"ws=2026-01-01T00:00:01Z we=2026-01-01T00:00:04Z supplier=c price=10 rownum=1 op=insert version=1 is_final=true",
		"ws=2026-01-01T00:00:01Z we=2026-01-01T00:00:05Z supplier=a price=4 rownum=2 op=insert version=1 is_final=true",
		"ws=2026-01-01T00:00:01Z we=2026-01-01T00:00:05Z supplier=b price=6 rownum=1 op=insert version=1 is_final=true",
		"ws=2026-01-01T00:00:20Z we=2026-01-01T00:00:22Z supplier=d price=7 rownum=1 op=insert version=1 is_final=true",
	}
	for _, par := range []int{1, 2} {
		got := runWindowTopNScript(t, script, input, par, "ws", "we", "supplier", "price", "rownum")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parallelism %d:\n%s\nwant\n%s", par, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWindowTopNOfAggregationSQLRecompute: a window Top-N over the rows
// of a TUMBLE, HOP, CUMULATE and SESSION aggregation of 400 random bids
// at whole seconds (disorder within the watermark; 38 of the SESSION
// case's rows are a second rank, sessions of two suppliers sharing their
// bounds) — SUM(price) and COUNT(*) per window,
// region and supplier, then each window's and region's two suppliers of
// the largest sums (ORDER BY total DESC, supplier) — against a batch
// recomputation in Go: the windows each bid falls in worked out from its
// time (a supplier's sessions from its sorted times, bids at most the gap
// apart in one session), the sums per window, region and supplier, each
// window's and region's sorted. At parallelism 1 and 2.
func TestWindowTopNOfAggregationSQLRecompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type bid struct {
		ms                      int64 // since base
		region, supplier, price int
	}
	var bids []bid
	var lines []string
	clock := int64(0)
	for i := 0; i < 400; i++ {
		clock += rng.Int64N(600)
		// Out of order by up to 3 s (the watermark: 5 s), in whole
		// seconds: sessions of different suppliers then share bounds.
		ms := max(clock-rng.Int64N(3000), 0) / 1000 * 1000
		b := bid{ms: ms, region: rng.IntN(2), supplier: rng.IntN(5), price: 1 + rng.IntN(20)}
		bids = append(bids, b)
		lines = append(lines, fmt.Sprintf(`{"ts":"%s","region":%d,"supplier":%d,"price":%d}`,
			base.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano), b.region, b.supplier, b.price))
	}
	const sec, gap = 1000, 1000
	// sessions: each (region, supplier)'s sessions, [first, last + gap).
	sessions := map[[2]int][][2]int64{}
	{
		times := map[[2]int][]int64{}
		for _, b := range bids {
			k := [2]int{b.region, b.supplier}
			times[k] = append(times[k], b.ms)
		}
		for k, ts := range times {
			slices.Sort(ts)
			start, last := ts[0], ts[0]
			for _, x := range ts[1:] {
				if x-last > gap {
					sessions[k] = append(sessions[k], [2]int64{start, last + gap})
					start = x
				}
				last = x
			}
			sessions[k] = append(sessions[k], [2]int64{start, last + gap})
		}
	}
	tvfs := []struct {
		tvf  string
		wins func(b bid) [][2]int64
	}{
		{"TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)", func(b bid) [][2]int64 {
			s := b.ms / (10 * sec) * 10 * sec
			return [][2]int64{{s, s + 10*sec}}
		}},
		{"HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)", func(b bid) [][2]int64 {
			s := b.ms / (5 * sec) * 5 * sec
			return [][2]int64{{s - 5*sec, s + 5*sec}, {s, s + 10*sec}}
		}},
		{"CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)", func(b bid) [][2]int64 {
			s := b.ms / (10 * sec) * 10 * sec
			var out [][2]int64
			for _, e := range []int64{s + 5*sec, s + 10*sec} {
				if e > b.ms {
					out = append(out, [2]int64{s, e})
				}
			}
			return out
		}},
		{"SESSION(TABLE bids PARTITION BY (region, supplier), DESCRIPTOR(ts), INTERVAL '1' SECOND)", func(b bid) [][2]int64 {
			for _, w := range sessions[[2]int{b.region, b.supplier}] {
				if b.ms >= w[0] && b.ms < w[1] {
					return [][2]int64{w}
				}
			}
			panic("a bid outside its supplier's sessions")
		}},
	}
	stamp := func(ms int64) string { // as the sink writes a time: milliseconds when not whole seconds
		t := base.Add(time.Duration(ms) * time.Millisecond)
		if ms%sec == 0 {
			return t.Format(time.RFC3339)
		}
		return t.Format("2006-01-02T15:04:05.000Z07:00")
	}
	for _, tc := range tvfs {
		// The recomputation.
		type group struct {
			w                [2]int64
			region, supplier int
		}
		type sums struct{ total, cnt int }
		agg := map[group]*sums{}
		for _, b := range bids {
			for _, w := range tc.wins(b) {
				g := group{w, b.region, b.supplier}
				if agg[g] == nil {
					agg[g] = &sums{}
				}
				agg[g].total += b.price
				agg[g].cnt++
			}
		}
		type part struct {
			w      [2]int64
			region int
		}
		parts := map[part][]group{}
		for g := range agg {
			p := part{g.w, g.region}
			parts[p] = append(parts[p], g)
		}
		var want []string
		for _, gs := range parts {
			slices.SortFunc(gs, func(a, b group) int {
				if agg[a].total != agg[b].total {
					return agg[b].total - agg[a].total
				}
				return a.supplier - b.supplier
			})
			for i := 0; i < len(gs) && i < 2; i++ {
				g := gs[i]
				want = append(want, fmt.Sprintf("ws=%s we=%s region=%d supplier=%d total=%d cnt=%d rn=%d op=insert version=1 is_final=true",
					stamp(g.w[0]), stamp(g.w[1]), g.region, g.supplier, agg[g].total, agg[g].cnt, i+1))
			}
		}
		slices.Sort(want)
		script := strings.Replace(`CREATE TABLE bids (region BIGINT, supplier BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), region BIGINT, supplier BIGINT, total BIGINT, cnt BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT ws, we, region, supplier, total, cnt, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, region ORDER BY total DESC, supplier) AS rn
  FROM (
    SELECT window_start AS ws, window_end AS we, window_start, window_end, region, supplier, SUM(price) AS total, COUNT(*) AS cnt
    FROM TABLE(TVF)
    GROUP BY window_start, window_end, region, supplier
  )
) WHERE rn <= 2;
`, "TVF", tc.tvf, 1)
		for _, par := range []int{1, 2} {
			got := runWindowTopNScript(t, script, lines, par, "ws", "we", "region", "supplier", "total", "cnt", "rn")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, parallelism %d: %d rows, want %d; first difference:\n%s", tc.tvf, par, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

// TestWindowTopNOfWindowJoinSQL: a window Top-N over the rows of a join of
// two aggregations of the same TUMBLE windows (SUM and MAX of each
// supplier's bids, joined on the supplier, window_start and window_end),
// partitioned by window_start, window_end: ranked per window as each
// window closes — each row's event time its window's last millisecond,
// not the end of the input. By hand, over TestWindowTopNOfAggregationSQL's
// bids: [00:00, 00:10) c (sum 9, max 6), a (7, 5) — b (7, 4) after a;
// [00:10, 00:20) b (8, 8), a (5, 4); [00:20, 00:30) c (1, 1). Parallelism
// 1 and 2 write the same rows.
func TestWindowTopNOfWindowJoinSQL(t *testing.T) {
	input := []string{
		`{"ts":"2026-01-01T00:00:01Z","supplier":"a","price":5}`,
		`{"ts":"2026-01-01T00:00:02Z","supplier":"b","price":4}`,
		`{"ts":"2026-01-01T00:00:03Z","supplier":"c","price":3}`,
		`{"ts":"2026-01-01T00:00:05Z","supplier":"a","price":2}`,
		`{"ts":"2026-01-01T00:00:08Z","supplier":"b","price":3}`,
		`{"ts":"2026-01-01T00:00:09Z","supplier":"c","price":6}`,
		`{"ts":"2026-01-01T00:00:11Z","supplier":"a","price":1}`,
		`{"ts":"2026-01-01T00:00:12Z","supplier":"b","price":8}`,
		`{"ts":"2026-01-01T00:00:10.500Z","supplier":"d","price":2}`,
		`{"ts":"2026-01-01T00:00:15Z","supplier":"a","price":4}`,
		`{"ts":"2026-01-01T00:00:25Z","supplier":"c","price":1}`,
	}
	script := `CREATE TABLE bids (supplier STRING, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), supplier STRING, lp BIGINT, rp BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT window_start, window_end, supplier, lp, rp, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY lp DESC, supplier) AS rn
  FROM (
    SELECT L.window_start, L.window_end, L.supplier, L.price AS lp, R.price AS rp
    FROM (SELECT window_start, window_end, supplier, SUM(price) AS price FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, supplier) L
    JOIN (SELECT window_start, window_end, supplier, MAX(price) AS price FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, supplier) R
    ON L.supplier = R.supplier AND L.window_start = R.window_start AND L.window_end = R.window_end
  )
) WHERE rn <= 2;
`
	want := []string{
		"event_time=2026-01-01T00:00:09.999Z ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z supplier=a lp=7 rp=5 rn=2 op=insert",
		"event_time=2026-01-01T00:00:09.999Z ws=2026-01-01T00:00:00Z we=2026-01-01T00:00:10Z supplier=c lp=9 rp=6 rn=1 op=insert",
		"event_time=2026-01-01T00:00:19.999Z ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z supplier=a lp=5 rp=4 rn=2 op=insert",
		"event_time=2026-01-01T00:00:19.999Z ws=2026-01-01T00:00:10Z we=2026-01-01T00:00:20Z supplier=b lp=8 rp=8 rn=1 op=insert",
		"event_time=2026-01-01T00:00:29.999Z ws=2026-01-01T00:00:20Z we=2026-01-01T00:00:30Z supplier=c lp=1 rp=1 rn=1 op=insert",
	}
	for _, par := range []int{1, 2} {
		got := runWindowTopNScript(t, script, input, par, "event_time", "ws", "we", "supplier", "lp", "rp", "rn")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parallelism %d:\n%s\nwant\n%s", par, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestWindowTopNSessionSQLRecompute: a window Top-N directly over SESSION
// table function rows — SESSION(TABLE bids PARTITION BY (region,
// supplier), …, 1 s), ROW_NUMBER() OVER (PARTITION BY window_start,
// window_end, region, supplier ORDER BY price DESC, ts) <= 2: each
// session's two highest bids (ties in price and time to the bid that came
// first), as the session closes — planned as a top_n stage with the
// session window keyed by the SESSION's partition columns. Against a
// batch recomputation in Go: each (region, supplier)'s sessions from its
// sorted times (bids at most the gap apart in one session), each
// session's bids sorted stably in input order. 400 random bids at whole
// seconds (disorder within the watermark), at parallelism 1 and 2.
func TestWindowTopNSessionSQLRecompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type bid struct {
		ms                              int64 // since base
		region, supplier, bidder, price int
	}
	var bids []bid
	var lines []string
	clock := int64(0)
	for i := 0; i < 400; i++ {
		clock += rng.Int64N(600)
		ms := max(clock-rng.Int64N(3000), 0) / 1000 * 1000
		b := bid{ms: ms, region: rng.IntN(2), supplier: rng.IntN(5), bidder: i, price: rng.IntN(8)}
		bids = append(bids, b)
		lines = append(lines, fmt.Sprintf(`{"ts":"%s","region":%d,"supplier":%d,"bidder":%d,"price":%d}`,
			base.Add(time.Duration(ms)*time.Millisecond).Format(time.RFC3339Nano), b.region, b.supplier, b.bidder, b.price))
	}
	const gap = 1000
	type key struct{ region, supplier int }
	byKey := map[key][]bid{}
	for _, b := range bids {
		k := key{b.region, b.supplier}
		byKey[k] = append(byKey[k], b)
	}
	stamp := func(ms int64) string { return base.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339) }
	var want []string
	for k, bs := range byKey {
		times := make([]int64, 0, len(bs))
		for _, b := range bs {
			times = append(times, b.ms)
		}
		slices.Sort(times)
		var sessions [][2]int64
		start, last := times[0], times[0]
		for _, x := range times[1:] {
			if x-last > gap {
				sessions = append(sessions, [2]int64{start, last + gap})
				start = x
			}
			last = x
		}
		sessions = append(sessions, [2]int64{start, last + gap})
		for _, w := range sessions {
			var in []bid // in input order
			for _, b := range bs {
				if b.ms >= w[0] && b.ms < w[1] {
					in = append(in, b)
				}
			}
			slices.SortStableFunc(in, func(a, b bid) int {
				if a.price != b.price {
					return b.price - a.price
				}
				return int(a.ms - b.ms)
			})
			for i := 0; i < len(in) && i < 2; i++ {
				want = append(want, fmt.Sprintf("ws=%s we=%s region=%d supplier=%d bidder=%d price=%d rn=%d op=insert",
					stamp(w[0]), stamp(w[1]), k.region, k.supplier, in[i].bidder, in[i].price, i+1))
			}
		}
	}
	slices.Sort(want)
	script := `CREATE TABLE bids (region BIGINT, supplier BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP_LTZ(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (ws TIMESTAMP(3), we TIMESTAMP(3), region BIGINT, supplier BIGINT, bidder BIGINT, price BIGINT, rn BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top
SELECT window_start, window_end, region, supplier, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, region, supplier ORDER BY price DESC, ts) AS rn
  FROM TABLE(SESSION(TABLE bids PARTITION BY (region, supplier), DESCRIPTOR(ts), INTERVAL '1' SECOND))
) WHERE rn <= 2;
`
	if n := strings.Count(strings.Join(want, "\n"), "rn=2"); n < 20 {
		t.Fatalf("the recomputation has %d second ranks: too few to test the order", n)
	}
	for _, par := range []int{1, 2} {
		got := runWindowTopNScript(t, script, lines, par, "ws", "we", "region", "supplier", "bidder", "price", "rn")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("parallelism %d: %d rows, want %d; first difference:\n%s", par, len(got), len(want), firstDiff(got, want))
		}
	}
}
