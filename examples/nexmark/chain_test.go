package nexmarkq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
)

// chainSpec is three stages in a chain, the first two without sinks (their
// operators' keys transient: task.newStageNode) and string-keyed: bids
// per (channel, auction) in 10 s windows sliding by 2 s, then per channel
// over those rows in 4 s windows sliding by 2 s (a sliced stage reading a
// changelog), then per channel in 2 s tumbling windows, with sinks; and a
// select stage with sinks reading the first stage's rows.
const chainSpec = `
name: chain
source: {type: nexmark, events: 50000}
event_time: {field: date_time, out_of_orderness: 4s}
stages:
  - name: chan_auction
    filter: event_type == 2
    key: [bid.channel, bid.auction]
    window: {type: sliding, size: 10s, slide: 2s}
    aggregates:
      bids: count()
      top: max(bid.price)
    emit: {mode: final}
  - name: chan
    input: chan_auction
    key: [bid.channel]
    window: {type: sliding, size: 4s, slide: 2s}
    aggregates:
      auctions: count()
      bids: sum(bids)
      top: max(top)
    emit: {mode: final}
  - name: chan_total
    input: chan
    key: [bid.channel]
    window: {type: tumbling, size: 2s}
    aggregates:
      n: count()
      bids: sum(bids)
      top: max(top)
    emit: {mode: final}
    sinks: [{type: capture}]
  - name: busy
    input: chan_auction
    filter: bids >= 3
    fields: {ws: window_start}
    select: [ws, bid.channel, bid.auction, bids, top]
    sinks: [{type: capture}]
`

// chainBid is a bid's fields the chain reads.
type chainBid struct {
	t, auction, price int64
	channel           string
}

func chainBids(t *testing.T, events, rate int64, seed uint64) []chainBid {
	t.Helper()
	s, err := nexmark.NewSchema("event_type", "date_time", "bid.auction", "bid.price", "bid.channel")
	if err != nil {
		t.Fatal(err)
	}
	src, err := nexmark.New(nexmark.Config{Fields: format.Fields{Schema: s}, Events: events, Rate: rate, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string) row.Field { x, _ := s.Lookup(name); return x }
	et, dt, au, pr, ch := f("event_type"), f("date_time"), f("bid.auction"), f("bid.price"), f("bid.channel")
	var out []chainBid
	var b source.Batch
	for {
		b.Reset()
		st, err := src.Next(context.Background(), &b, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			r := &b.Rows[i]
			if r.Get(et).I == nexmark.EventBid {
				out = append(out, chainBid{t: r.Get(dt).I, auction: r.Get(au).I, price: r.Get(pr).I, channel: strings.Clone(r.Get(ch).S)})
			}
		}
		if st == source.End {
			break
		}
	}
	return out
}

// floorTo is the multiple of m at or before x.
func floorTo(x, m int64) int64 { return x - ((x%m)+m)%m }

// chainExpected recomputes the chain's last stage and its select stage by
// plain group-bys over every bid (the 4 s out-of-orderness holds every
// event).
func chainExpected(bids []chainBid) (total, busy []string) {
	type ca struct {
		w       int64
		channel string
		auction int64
	}
	type agg struct{ n, bids, top int64 }
	a := map[ca]*agg{}
	for _, b := range bids {
		for w := floorTo(b.t, 2000); w > b.t-10_000; w -= 2000 {
			k := ca{w, b.channel, b.auction}
			x := a[k]
			if x == nil {
				x = &agg{top: b.price}
				a[k] = x
			}
			x.n++
			x.top = max(x.top, b.price)
		}
	}
	type cw struct {
		w       int64
		channel string
	}
	bch := map[cw]*agg{}
	for k, x := range a {
		ts := k.w + 10_000 - 1 // the upstream window's last instant
		for w := floorTo(ts, 2000); w > ts-4000; w -= 2000 {
			y := bch[cw{w, k.channel}]
			if y == nil {
				y = &agg{top: x.top}
				bch[cw{w, k.channel}] = y
			}
			y.n++
			y.bids += x.n
			y.top = max(y.top, x.top)
		}
	}
	for k, x := range a {
		if x.n >= 3 {
			busy = append(busy, expected(0, 0, "ws", k.w, "bid.channel", k.channel, "bid.auction", k.auction, "bids", x.n, "top", x.top))
		}
	}
	c := map[cw]*agg{}
	for k, y := range bch {
		w := floorTo(k.w+4000-1, 2000)
		z := c[cw{w, k.channel}]
		if z == nil {
			z = &agg{top: y.top}
			c[cw{w, k.channel}] = z
		}
		z.n++
		z.bids += y.bids
		z.top = max(z.top, y.top)
	}
	for k, z := range c {
		total = append(total, expected(k.w, k.w+2000, "bid.channel", k.channel, "n", z.n, "bids", z.bids, "top", z.top))
	}
	return total, busy
}

// TestChainWithoutSinksMatchesBatch: two string-keyed stages without sinks
// (their rows' keys reused after each drain) feed a third with sinks,
// which equals the batch recomputation at 1 task (push mode: rows handed
// on at once), 2 and 4 tasks (rows copied into packets), firings in
// chunks of 5 rows or the default 4,096 — whether the first stage has a
// sink of its own (keys kept) or not, and when it revises its rows (mode
// retract, early firings: the second stage takes update_before rows as
// retractions).
func TestChainWithoutSinksMatchesBatch(t *testing.T) {
	for _, r := range runs {
		bids := chainBids(t, r.events, r.rate, r.seed)
		want, wantBusy := chainExpected(bids)
		for _, tasks := range []int{1, 2, 4} {
			for _, chunk := range []int{5, 0} {
				for _, variant := range []string{"", "sink_first", "retract_early"} {
					if variant != "" && (chunk == 0 || tasks == 4) {
						continue
					}
					name := fmt.Sprintf("%s/tasks%d_chunk%d_%s", r.name, tasks, chunk, variant)
					t.Run(name, func(t *testing.T) {
						p, err := spec.Decode("chain.yaml", []byte(chainSpec))
						if err != nil {
							t.Fatal(err)
						}
						p.Source.Events, p.Source.Rate, p.Source.Seed = r.events, r.rate, r.seed
						var clock func() int64
						switch variant {
						case "sink_first":
							p.Stages[0].Sinks = []spec.Sink{{Type: "capture"}}
						case "retract_early":
							// The first stage revises its rows: early firings
							// every 20 ms of a clock that ticks 1 ms a read
							// record, each an update_before/update_after pair
							// the second stage retracts and adds.
							// (No select stage: it cannot take a row back.)
							p.Stages[0].Emit.Mode, p.Stages[0].Emit.EarlyEvery = "retract", spec.Duration(20*time.Millisecond)
							p.Stages = p.Stages[:3]
							var tick int64
							clock = func() int64 { tick++; return tick }
						}
						var mu sync.Mutex
						rows := map[string][]string{}
						var bad []string
						reg := engine.DefaultRegistry()
						reg.Results["capture"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
							return &capture{desc: d, mu: &mu, rows: rows, bad: &bad}, nil
						}
						pl, err := tidemark.Compile(p)
						if err != nil {
							t.Fatal(err)
						}
						sum, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: tasks, FireChunk: chunk, Clock: clock})
						if err != nil {
							t.Fatal(err)
						}
						if c := sum.Stages[1].Counters; variant == "retract_early" && c.Retractions == 0 {
							t.Errorf("stage chan took no retraction: %+v", c)
						}
						for _, st := range sum.Stages {
							if n := st.TooLateDropped + st.TooLateSideOutput + st.PartlyTooLate + st.Quarantined; n > 0 {
								t.Errorf("stage %s: %d records too late or quarantined", st.Name, n)
							}
							if st.Entries != 0 || st.Keys != 0 || st.OpenWindows != 0 {
								t.Errorf("stage %s: state left at the end: %+v", st.Name, st)
							}
						}
						if len(bad) > 0 && variant != "retract_early" {
							t.Errorf("%d rows are not final inserts, first: %s", len(bad), bad[0])
						}
						same(t, "chain stage chan_total", rows["chan_total"], want)
						if len(p.Stages) == 4 {
							same(t, "chain select stage busy", rows["busy"], wantBusy)
						}
					})
				}
			}
		}
	}
}

// TestQ5AsShipped runs q5 with its own sinks — none on auction_bids, whose
// keys are then transient — at 1 and 2 tasks with fire chunks of 7 and
// 4,096 rows, hot_auctions captured: its rows equal TestQ5's recomputation. (runQuery
// gives every stage a sink, so TestQ5 keeps every key.)
func TestQ5AsShipped(t *testing.T) {
	for _, r := range runs {
		evs := generate(t, r.events, r.rate, r.seed)
		type best struct{ auction, n int64 }
		hot := map[int64]best{}
		for k, n := range q5Counts(evs) {
			b, ok := hot[k[0]]
			if !ok || n > b.n || n == b.n && k[1] < b.auction {
				hot[k[0]] = best{k[1], n}
			}
		}
		var want []string
		for w, b := range hot {
			want = append(want, expected(w+8000, w+10_000, "starttime", w, "auction", b.auction, "bids", b.n))
		}
		for _, tc := range [][2]int{{1, 7}, {1, 0}, {2, 7}, {2, 0}} {
			tasks, chunk := tc[0], tc[1]
			t.Run(fmt.Sprintf("%s/tasks%d_chunk%d", r.name, tasks, chunk), func(t *testing.T) {
				p, err := nexmarkq.Load("q5")
				if err != nil {
					t.Fatal(err)
				}
				p.Source.Events, p.Source.Rate, p.Source.Seed = r.events, r.rate, r.seed
				if len(p.Stages) != 2 || len(p.Stages[0].Sinks) != 0 || len(p.Stages[1].Sinks) == 0 {
					t.Fatalf("q5 is no longer two stages with sinks on the second only")
				}
				p.Stages[1].Sinks = []spec.Sink{{Type: "capture"}}
				var mu sync.Mutex
				rows := map[string][]string{}
				var bad []string
				reg := engine.DefaultRegistry()
				reg.Results["capture"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
					return &capture{desc: d, mu: &mu, rows: rows, bad: &bad}, nil
				}
				pl, err := tidemark.Compile(p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: tasks, FireChunk: chunk}); err != nil {
					t.Fatal(err)
				}
				if len(bad) > 0 {
					t.Errorf("%d rows are not final inserts, first: %s", len(bad), bad[0])
				}
				same(t, "q5 hot_auctions", rows["hot_auctions"], want)
			})
		}
	}
}
