package nexmarkq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
	"github.com/tidemark/tidemark/sql/planner"
)

// unionSpec plans script (tables and INSERTs) over the corpus's generator
// and views (ddl_gen.sql, ddl_views.sql) for run r.
func unionSpec(t *testing.T, script string, r sqlRun) *spec.Pipeline {
	t.Helper()
	dir := datatest.NexmarkSQL(t)
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gen := strings.Replace(read("ddl_gen.sql"), "'connector' = 'nexmark',", fmt.Sprintf("'connector' = 'nexmark',\n    'tidemark.seed' = '%d',", r.seed), 1)
	src := sqlPreamble + gen + ";\n" + read("ddl_views.sql") + ";\n" + script
	s, err := parser.Parse("union.sql", []byte(src), parser.Options{Lookup: sqlLookup(r)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.Compile(s, planner.Options{File: "union.sql"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSQLUnionAll: UNION ALL into one sink — a union stage
// (stages[].union) of one stage per branch — gives every row of each
// branch, a row kept by both branches twice: projections of the bids
// (inserts), and two windowed aggregations of different streams with
// disjoint keys (bids per bidder and auctions per seller, 10 s tumbling
// windows), each checked against a recomputation over the generated
// events at parallelism 1 and 2.
func TestSQLUnionAll(t *testing.T) {
	const selects = `
CREATE TABLE picked (auction BIGINT, price BIGINT, why STRING) WITH ('connector' = 'print');
INSERT INTO picked
SELECT auction, price, 'dear' FROM bid WHERE price > 5000000
UNION ALL
SELECT auction, price, 'even' FROM bid WHERE MOD(auction, 2) = 0
UNION ALL
SELECT id, initialBid, 'auction' FROM auction WHERE category = 10;`
	const aggs = `
CREATE TABLE counts (window_start TIMESTAMP(3), window_end TIMESTAMP(3), k BIGINT, n BIGINT) WITH ('connector' = 'print');
INSERT INTO counts
SELECT window_start, window_end, bidder AS k, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, bidder
UNION ALL
SELECT window_start, window_end, seller + 1000000000 AS k, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, seller + 1000000000;`
	for _, r := range sqlRuns {
		t.Run(r.name, func(t *testing.T) {
			evs := generateAll(t, r.run)
			var wantSel []string
			for _, b := range of(evs, nexmark.EventBid) {
				if b.price > 5_000_000 {
					wantSel = append(wantSel, want("auction", b.auction, "price", b.price, "why", "dear"))
				}
				if b.auction%2 == 0 {
					wantSel = append(wantSel, want("auction", b.auction, "price", b.price, "why", "even"))
				}
			}
			for _, a := range of(evs, nexmark.EventAuction) {
				if a.category == 10 {
					wantSel = append(wantSel, want("auction", a.aid, "price", a.initial, "why", "auction"))
				}
			}
			type wk struct{ start, k int64 }
			n := map[wk]int64{}
			var order []wk
			count := func(ts, k int64) {
				key := wk{ts - ts%10_000, k}
				if n[key] == 0 {
					order = append(order, key)
				}
				n[key]++
			}
			for _, b := range of(evs, nexmark.EventBid) {
				count(b.t, b.bidder)
			}
			for _, a := range of(evs, nexmark.EventAuction) {
				count(a.t, a.seller+1_000_000_000)
			}
			var wantAgg []string
			for _, key := range order {
				wantAgg = append(wantAgg, fmt.Sprintf("%d|%d|%s", key.start, key.start+10_000, want("k", key.k, "n", n[key])))
			}
			for _, tasks := range []int{1, 2} {
				sameRows(t, fmt.Sprintf("projections at parallelism %d", tasks), runSQL(t, unionSpec(t, selects, r.run), tasks), wantSel)
				sameRows(t, fmt.Sprintf("aggregations at parallelism %d", tasks), runWindowed(t, unionSpec(t, aggs, r.run), tasks), wantAgg)
			}
		})
	}
}

// runWindowed runs p at the given parallelism and returns the last row
// of each window and key its one stdout sink took, "start|end|columns"
// (canonSQL), failing on a row that is not an insert (the aggregations
// emit mode final: one row per window and key).
func runWindowed(t *testing.T, p *spec.Pipeline, tasks int) []string {
	t.Helper()
	var mu sync.Mutex
	rows := map[string][]capturedRow{}
	reg := engine.DefaultRegistry()
	reg.Results["stdout"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
		return &sqlCapture{mu: &mu, desc: d, rows: rows}, nil
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: tasks}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("rows of %d stages captured, want those of the union", len(rows))
	}
	var out []string
	for _, rs := range rows {
		for _, r := range rs {
			if r.op != changelog.Insert {
				t.Fatalf("a row %v of op %v: emit mode final inserts", r.cols, r.op)
			}
			out = append(out, fmt.Sprintf("%d|%d|%s", r.start, r.end, canonSQL(r.cols)))
		}
	}
	return out
}

// TestSQLQ19 runs q19, the Top-10 bids by price per auction
// (ROW_NUMBER() … WHERE rank_number <= 10): its rows are each auction's
// ten highest bids with their rank, ties on price to the bid that came
// first, as a batch sort of every auction's bids gives them (a stable
// sort by price descending over the bids in delivery order), at
// parallelism 1 and 2.
func TestSQLQ19(t *testing.T) {
	checkSQL(t, "q19", func(evs []ev, _ sqlRun) []string {
		byAuction := map[int64][]ev{}
		var order []int64
		for _, b := range of(evs, nexmark.EventBid) {
			if _, ok := byAuction[b.auction]; !ok {
				order = append(order, b.auction)
			}
			byAuction[b.auction] = append(byAuction[b.auction], b)
		}
		var out []string
		for _, a := range order {
			bids := byAuction[a]
			sort.SliceStable(bids, func(i, j int) bool { return bids[i].price > bids[j].price })
			for k, b := range bids[:min(10, len(bids))] {
				out = append(out, want("auction", b.auction, "bidder", b.bidder, "price", b.price, "channel", b.channel,
					"url", b.url, "dateTime", b.t, "extra", b.bextra, "rank_number", int64(k+1)))
			}
		}
		return out
	})
}
