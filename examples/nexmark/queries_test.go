package nexmarkq_test

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	nexmarkq "github.com/tidemark/tidemark/examples/nexmark"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/internal/nexbase"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/nexmark"
	"github.com/tidemark/tidemark/spec"
)

// A small seeded run: 50,000 events. At 1,000 events/s of event time they
// span 50 s (25 sliding windows, bidders with several sessions); at
// 10,000 events/s with another seed, 5 s.
var runs = []struct {
	name   string
	events int64
	rate   int64
	seed   uint64
}{
	{"50k_at_1000_per_s", 50_000, 1_000, 0},
	{"50k_at_10000_per_s_seed7", 50_000, 10_000, 7},
}

// event is one generated event, copied out of its batch.
type event struct {
	typ, t                 int64 // event_type; date_time in ms
	auction, bidder, price int64
	extra                  string
}

// generate returns every event of a run, in delivery order, read from the
// Nexmark source directly (no engine).
func generate(t *testing.T, events, rate int64, seed uint64) []event {
	t.Helper()
	s, err := nexmark.NewSchema("event_type", "date_time", "bid.auction", "bid.bidder", "bid.price", "bid.extra")
	if err != nil {
		t.Fatal(err)
	}
	src, err := nexmark.New(nexmark.Config{Fields: format.Fields{Schema: s}, Events: events, Rate: rate, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string) row.Field { x, _ := s.Lookup(name); return x }
	et, dt, au, bi, pr, ex := f("event_type"), f("date_time"), f("bid.auction"), f("bid.bidder"), f("bid.price"), f("bid.extra")
	var out []event
	var b source.Batch
	for {
		b.Reset()
		st, err := src.Next(context.Background(), &b, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			r := &b.Rows[i]
			e := event{typ: r.Get(et).I, t: r.Get(dt).I}
			if e.typ == nexmark.EventBid {
				e.auction, e.bidder, e.price = r.Get(au).I, r.Get(bi).I, r.Get(pr).I
				e.extra = strings.Clone(r.Get(ex).S)
			}
			out = append(out, e)
		}
		if st == source.End {
			break
		}
	}
	if int64(len(out)) != events {
		t.Fatalf("generated %d events, want %d", len(out), events)
	}
	return out
}

// capture is a result sink that keeps every row of a stage as canonical
// text (see canon).
type capture struct {
	desc changelog.Desc
	mu   *sync.Mutex
	rows map[string][]string // stage → rows
	bad  *[]string           // rows that are not final inserts
}

func (c *capture) Write(_ context.Context, rows []changelog.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		// Emit mode final: one insert per window and key, final. (Its
		// version is 1, except that a key's later sessions continue the
		// versions of its earlier ones.)
		if r.Op != changelog.Insert || c.desc.EmitMode == "final" && (r.Version < 1 || !c.desc.Session && r.Version != 1 || !r.IsFinal) {
			*c.bad = append(*c.bad, fmt.Sprintf("%s: %s version %d final %v", c.desc.Stage, r.Op, r.Version, r.IsFinal))
		}
		c.rows[c.desc.Stage] = append(c.rows[c.desc.Stage], canon(&c.desc, r))
	}
	return nil
}
func (c *capture) Flush(context.Context) error { return nil }
func (c *capture) Close(context.Context) error { return nil }

// canon renders a result row as "window_start=…;window_end=…;col=value…"
// with the columns in name order; ints and times as integers (ms),
// decimals as exact fractions, strings quoted. Stages without a window
// (stateless) render their columns only.
func canon(d *changelog.Desc, r *changelog.Row) string {
	var cols []string
	add := func(name string, v row.Value) {
		cols = append(cols, name+"="+value(v))
	}
	for i, c := range d.Key {
		add(c.Name, r.Key[i])
	}
	for i, c := range d.Values {
		add(c.Name, r.Values[i])
	}
	sort.Strings(cols)
	if r.WindowEnd > r.WindowStart {
		cols = append([]string{fmt.Sprintf("window_start=%d;window_end=%d", r.WindowStart, r.WindowEnd)}, cols...)
	}
	return strings.Join(cols, ";")
}

func value(v row.Value) string {
	switch v.Kind {
	case row.KindInt, row.KindTime:
		return strconv.FormatInt(v.I, 10)
	case row.KindDecimal:
		q, ok := new(big.Rat).SetString(string(row.FormatDecimal(nil, v.D)))
		if !ok {
			return "bad decimal " + v.String()
		}
		return q.RatString()
	case row.KindString:
		return strconv.Quote(v.S)
	}
	return v.String()
}

// expected builds the canonical text of an expected row: window bounds
// (none when end ≤ start) and name=value pairs.
func expected(start, end int64, kv ...any) string {
	var cols []string
	for i := 0; i < len(kv); i += 2 {
		var s string
		switch v := kv[i+1].(type) {
		case int64:
			s = strconv.FormatInt(v, 10)
		case string:
			s = strconv.Quote(v)
		case *big.Rat:
			s = v.RatString()
		default:
			panic(fmt.Sprintf("%T", v))
		}
		cols = append(cols, kv[i].(string)+"="+s)
	}
	sort.Strings(cols)
	if end > start {
		cols = append([]string{fmt.Sprintf("window_start=%d;window_end=%d", start, end)}, cols...)
	}
	return strings.Join(cols, ";")
}

// runQuery runs the named query through the engine on a small run, the
// sinks of every stage (also a stage without sinks) replaced by one
// capturing sink, and returns the rows of each stage.
func runQuery(t *testing.T, name string, events, rate int64, seed uint64) (*spec.Pipeline, map[string][]string) {
	t.Helper()
	return runQueryAt(t, name, events, rate, seed, 0)
}

// runQueryAt is runQuery at the given parallelism (0: the engine's
// default, GOMAXPROCS).
func runQueryAt(t *testing.T, name string, events, rate int64, seed uint64, tasks int) (*spec.Pipeline, map[string][]string) {
	t.Helper()
	p, err := nexmarkq.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	p.Source.Events, p.Source.Rate, p.Source.Seed = events, rate, seed
	if err := nexmarkq.WriteInputs(p, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	capt := []spec.Sink{{Type: "capture"}}
	if len(p.Stages) == 0 {
		p.Sinks = capt
	} else {
		for i := range p.Stages {
			p.Stages[i].Sinks = capt
		}
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
	sum, err := engine.Run(context.Background(), pl, engine.Options{Registry: reg, Parallelism: tasks})
	if err != nil {
		t.Fatal(err)
	}
	read := events // and the rows of the inputs' CSV files (q13's side input)
	for _, in := range p.Inputs {
		data, err := os.ReadFile(in.Source.Path)
		if err != nil {
			t.Fatal(err)
		}
		read += int64(strings.Count(string(data), "\n") - 1)
	}
	if sum.EventsRead != read {
		t.Fatalf("read %d events, want %d", sum.EventsRead, read)
	}
	for _, st := range sum.Stages {
		// Nothing outlives its last match (FLINK-21833's class of state
		// leaks): at the end of a bounded run no join holds a row, no
		// window a key.
		if st.Entries != 0 || st.Keys != 0 || st.OpenWindows != 0 {
			t.Errorf("stage %s: %d rows or (window, key) entries, %d keys, %d windows left in its state at the end of the run", st.Name, st.Entries, st.Keys, st.OpenWindows)
		}
		// A join gives its memory back at the end (its key tables and
		// column stores), not only its rows.
		for _, ps := range p.Stages {
			if ps.Name == st.Name && ps.Join != nil && st.StateBytes != 0 {
				t.Errorf("join stage %s: %d bytes of state at the end of the run, with no row left", st.Name, st.StateBytes)
			}
		}
		if n := st.TooLateDropped + st.TooLateSideOutput + st.PartlyTooLate + st.Quarantined; n > 0 {
			t.Errorf("stage %s: %d records too late or quarantined; the 4 s watermark should hold every event", st.Name, n)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d rows are not final inserts, first: %s", len(bad), bad[0])
	}
	return p, rows
}

// same compares two lists of canonical rows as multisets.
func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if len(want) == 0 {
		t.Errorf("%s: the recomputation has no rows; the run is too small to test anything", what)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: first difference at sorted row %d:\n got %s\nwant %s", what, i, got[i], want[i])
			return
		}
	}
}

// inOrder compares two lists of canonical rows in order: a select stage
// emits each record as it comes, in delivery order.
func inOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Errorf("%s: the recomputation has no rows; the run is too small to test anything", what)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: first difference at row %d:\n got %s\nwant %s", what, i, got[i], want[i])
			return
		}
	}
}

// baselineConfig is the nexbase configuration of a run.
func baselineConfig(t *testing.T, p *spec.Pipeline) nexbase.Config {
	t.Helper()
	cfg, err := nexbase.FromSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Batch recomputations: plain group-bys over every generated event, with
// no watermark (with the 4 s out-of-orderness no event is late, so the
// streaming results must equal them).

// q5Counts returns the bids per (window start, auction) of 10 s windows
// sliding by 2 s: a bid at t is in the windows starting at the multiples
// of 2 s in (t − 10 s, t].
func q5Counts(evs []event) map[[2]int64]int64 {
	out := map[[2]int64]int64{}
	for _, e := range evs {
		if e.typ != nexmark.EventBid {
			continue
		}
		last := e.t - ((e.t%2000)+2000)%2000
		for w := last; w > e.t-10_000; w -= 2000 {
			out[[2]int64{w, e.auction}]++
		}
	}
	return out
}

func TestQ5(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q5", r.events, r.rate, r.seed)
			counts := q5Counts(evs)
			var want []string
			for k, n := range counts {
				want = append(want, expected(k[0], k[0]+10_000, "bid.auction", k[1], "bids", n))
			}
			same(t, "q5 stage auction_bids", rows["auction_bids"], want)

			// The hottest auction per window: the largest count, the
			// smallest auction id on a tie (arg_max's rule).
			type best struct{ auction, n int64 }
			hot := map[int64]best{}
			for k, n := range counts {
				b, ok := hot[k[0]]
				if !ok || n > b.n || n == b.n && k[1] < b.auction {
					hot[k[0]] = best{k[1], n}
				}
			}
			var wantHot []string
			for w, b := range hot {
				// Stage 2 reads each upstream window at its end − 1 ms
				// into a 2 s tumbling window, keyed by the upstream start.
				wantHot = append(wantHot, expected(w+8000, w+10_000, "starttime", w, "auction", b.auction, "bids", b.n))
			}
			if len(p.Stages) > 1 {
				same(t, "q5 stage hot_auctions", rows["hot_auctions"], wantHot)
			}

			// The hand-written baselines compute the same rows.
			cfg := baselineConfig(t, p)
			var base []string
			if _, err := nexbase.Q5Counts(context.Background(), cfg, func(w *nexbase.WindowCount) {
				base = append(base, expected(w.Start, w.End, "bid.auction", w.Key, "bids", w.Count))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q5Counts", base, want)
			base = nil
			if _, err := nexbase.Q5(context.Background(), cfg, func(w *nexbase.WindowCount) {
				base = append(base, expected(w.End-2000, w.End, "starttime", w.Start, "auction", w.Key, "bids", w.Count))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q5", base, wantHot)
		})
	}
}

func TestQ11(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q11", r.events, r.rate, r.seed)
			// Sessions: each bidder's bid times sorted; a gap of more
			// than 10 s starts a new session (bids exactly 10 s apart
			// share one); a session is [first, last + 10 s).
			times := map[int64][]int64{}
			for _, e := range evs {
				if e.typ == nexmark.EventBid {
					times[e.bidder] = append(times[e.bidder], e.t)
				}
			}
			var want []string
			sessions := 0
			for bidder, ts := range times {
				slices.Sort(ts)
				start, n := ts[0], int64(1)
				for i := 1; i <= len(ts); i++ {
					if i == len(ts) || ts[i]-ts[i-1] > 10_000 {
						want = append(want, expected(start, ts[i-1]+10_000, "bid.bidder", bidder, "bids", n))
						sessions++
						if i < len(ts) {
							start, n = ts[i], 0
						}
					}
					n++
				}
			}
			if sessions <= len(times) && r.rate <= 1000 {
				t.Errorf("%d sessions of %d bidders: no bidder has two sessions; the run does not test the gap", sessions, len(times))
			}
			same(t, "q11", rows["q11"], want)

			var base []string
			if _, err := nexbase.Q11(context.Background(), baselineConfig(t, p), func(w *nexbase.WindowCount) {
				base = append(base, expected(w.Start, w.End, "bid.bidder", w.Key, "bids", w.Count))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q11", base, want)
		})
	}
}

func TestQ7(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q7", r.events, r.rate, r.seed)
			// Per 10 s tumbling window: the highest price, then for each
			// other column its smallest value among the bids with that
			// price (arg_max's tie rule, column by column).
			maxPrice := map[int64]int64{}
			for _, e := range evs {
				if e.typ == nexmark.EventBid {
					w := e.t - e.t%10_000
					if p, ok := maxPrice[w]; !ok || e.price > p {
						maxPrice[w] = e.price
					}
				}
			}
			type cols struct {
				auction, bidder, t int64
				extra              string
				set                bool
			}
			top := map[int64]*cols{}
			for _, e := range evs {
				if e.typ != nexmark.EventBid {
					continue
				}
				w := e.t - e.t%10_000
				if e.price != maxPrice[w] {
					continue
				}
				c := top[w]
				if c == nil {
					top[w] = &cols{e.auction, e.bidder, e.t, e.extra, true}
					continue
				}
				c.auction, c.bidder, c.t = min(c.auction, e.auction), min(c.bidder, e.bidder), min(c.t, e.t)
				c.extra = min(c.extra, e.extra)
			}
			var want []string
			for w, c := range top {
				want = append(want, expected(w, w+10_000, "price", maxPrice[w], "auction", c.auction, "bidder", c.bidder, "date_time", c.t, "extra", c.extra))
			}
			same(t, "q7", rows["q7"], want)

			var base []string
			if _, err := nexbase.Q7(context.Background(), baselineConfig(t, p), func(r *nexbase.Q7Row) {
				base = append(base, expected(r.Start, r.End, "price", r.Price, "auction", r.Auction, "bidder", r.Bidder, "date_time", r.DateTime, "extra", r.Extra))
			}); err != nil {
				t.Fatal(err)
			}
			same(t, "nexbase.Q7", base, want)
		})
	}
}

func TestQ0(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q0", r.events, r.rate, r.seed)
			var want []string
			for _, e := range evs {
				if e.typ == nexmark.EventBid {
					want = append(want, expected(0, 0, "bid.auction", e.auction, "bid.bidder", e.bidder, "bid.price", e.price, "date_time", e.t, "bid.extra", e.extra))
				}
			}
			inOrder(t, "q0", rows["q0"], want)
			var base []string
			if _, err := nexbase.Q0(context.Background(), baselineConfig(t, p), func(b *nexbase.BidRow) {
				base = append(base, expected(0, 0, "bid.auction", b.Auction, "bid.bidder", b.Bidder, "bid.price", b.Price, "date_time", b.DateTime, "bid.extra", b.Extra))
			}); err != nil {
				t.Fatal(err)
			}
			inOrder(t, "nexbase.Q0", base, want)
		})
	}
}

func TestQ1(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q1", r.events, r.rate, r.seed)
			var want []string
			for _, e := range evs {
				if e.typ == nexmark.EventBid {
					eur := new(big.Rat).Mul(big.NewRat(e.price, 1), big.NewRat(908, 1000))
					want = append(want, expected(0, 0, "bid.auction", e.auction, "bid.bidder", e.bidder, "price", eur, "date_time", e.t, "bid.extra", e.extra))
				}
			}
			inOrder(t, "q1", rows["q1"], want)
			var base []string
			if _, err := nexbase.Q1(context.Background(), baselineConfig(t, p), func(b *nexbase.Q1Row) {
				base = append(base, expected(0, 0, "bid.auction", b.Auction, "bid.bidder", b.Bidder, "price", big.NewRat(b.PriceMilli, 1000), "date_time", b.DateTime, "bid.extra", b.Extra))
			}); err != nil {
				t.Fatal(err)
			}
			inOrder(t, "nexbase.Q1", base, want)
		})
	}
}

func TestQ2(t *testing.T) {
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			evs := generate(t, r.events, r.rate, r.seed)
			p, rows := runQuery(t, "q2", r.events, r.rate, r.seed)
			var want []string
			for _, e := range evs {
				if e.typ == nexmark.EventBid && e.auction%123 == 0 {
					want = append(want, expected(0, 0, "bid.auction", e.auction, "bid.price", e.price))
				}
			}
			inOrder(t, "q2", rows["q2"], want)
			var base []string
			if _, err := nexbase.Q2(context.Background(), baselineConfig(t, p), func(b *nexbase.Q2Row) {
				base = append(base, expected(0, 0, "bid.auction", b.Auction, "bid.price", b.Price))
			}); err != nil {
				t.Fatal(err)
			}
			inOrder(t, "nexbase.Q2", base, want)
		})
	}
}

// TestNames lists the bundled queries and checks that each decodes.
func TestNames(t *testing.T) {
	want := []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q13"}
	if got := nexmarkq.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if _, err := nexmarkq.Load("q6"); err == nil || !strings.Contains(err.Error(), "q0, q1, q2, q3, q4, q5, q7, q8, q9, q11, q13") {
		t.Errorf("Load(q6): %v", err)
	}
}
