package article_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/examples/article"
	"github.com/tidemark/tidemark/internal/articlebase"
	"github.com/tidemark/tidemark/internal/articlegen"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/spec"
)

// Streams the test runs: a slow one (100 first deliveries per second of
// event time over 50 stores, more copies and late events than the
// default, so windows fire and close during the run and late events land
// in them), and one with the generator's defaults.
var streams = []struct {
	name string
	cfg  articlegen.Config
}{
	{"60k_50_stores_100_per_s", articlegen.Config{Events: 60_000, Seed: 1, Stores: 50, Rate: 100,
		RedeliverFraction: 0.05, ConflictFraction: 0.005, LateFraction: 0.01, TooLateFraction: 0.005}},
	{"100k_defaults_seed7", articlegen.Config{Events: 100_000, Seed: 7}},
}

// ident is a row identity: a window and key.
type ident struct {
	start           int64
	store, currency string
}

// vals are a row's values, as text: exact decimals as reduced fractions.
type vals struct {
	orders, events int64
	revenue        string
	version        uint64
	final          bool
}

// acc is the recomputation's state of one identity: its accepted events
// in arrival order.
type acc struct {
	orders  []string
	amounts []*big.Rat
	late    []bool
}

// recomputation is what a batch pass over the lines says the pipeline
// must produce.
type recomputation struct {
	rows                                       map[ident][]vals
	tooLate, conflicts                         []string // event ids, in arrival order
	duplicates, filtered, onTime, lateAccepted int64
	fate                                       map[string]string // ORDER_PAID event id → "on time", "late", "too late"
}

// recompute decodes every line with encoding/json and recomputes the
// pipeline: dedup by event_id on a canonical payload (json.Marshal of the
// object without produced_at: sorted keys, numbers as written), the
// watermark (largest accepted paid_at − 2 m, judged before each record),
// the filter, 1-minute windows by (store_id, currency), lateness with
// 3 m allowed, and the rows of emit mode update: a row at the on-time
// firing when the window fired before the end of the input, one per late
// event, and the final one.
func recompute(t *testing.T, path string) *recomputation {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recomputation{rows: map[ident][]vals{}, fate: map[string]string{}}
	first := map[string]string{} // event id → canonical payload
	accs := map[ident]*acc{}
	onTimeKeys := map[ident]bool{}
	maxT := int64(-1 << 63)
	wm := int64(-1 << 63)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		paid, err := time.Parse(time.RFC3339, m["paid_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		produced, err := time.Parse(time.RFC3339, m["produced_at"].(string))
		if err != nil || produced.Before(paid) {
			t.Fatalf("produced_at %v, paid_at %v: the generator breaks the contract", m["produced_at"], paid)
		}
		id := m["event_id"].(string)
		delete(m, "produced_at")
		canon, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := first[id]; ok {
			if c == string(canon) {
				rc.duplicates++
			} else {
				rc.conflicts = append(rc.conflicts, id)
			}
			continue
		}
		first[id] = string(canon)
		ts := paid.UnixMilli()
		before := wm
		if ts > maxT {
			maxT = ts
			wm = max(wm, maxT-2*60_000)
		}
		if m["event_type"] != "ORDER_PAID" {
			rc.filtered++
			continue
		}
		start := ts - ((ts%60_000)+60_000)%60_000
		end := start + 60_000
		k := ident{start, m["store_id"].(string), m["currency"].(string)}
		switch {
		case end+3*60_000 <= before:
			rc.tooLate = append(rc.tooLate, id)
			rc.fate[id] = "too late"
			continue
		case end <= before:
			rc.lateAccepted++
			rc.fate[id] = "late"
		default:
			rc.onTime++
			rc.fate[id] = "on time"
			onTimeKeys[k] = true
		}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		amount, ok := new(big.Rat).SetString(string(m["amount"].(json.Number)))
		if !ok {
			t.Fatalf("amount %v", m["amount"])
		}
		a.orders = append(a.orders, m["order_id"].(string))
		a.amounts = append(a.amounts, roundHalfAway(amount, 2))
		a.late = append(a.late, end <= before)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	final := wm // the watermark before the end of the input
	for k, a := range accs {
		var rows []vals
		emit := func(n int, isFinal bool) {
			distinct := map[string]bool{}
			sum := new(big.Rat)
			for i := range n {
				distinct[a.orders[i]] = true
				sum.Add(sum, a.amounts[i])
			}
			rows = append(rows, vals{orders: int64(len(distinct)), events: int64(n), revenue: sum.RatString(),
				version: uint64(len(rows) + 1), final: isFinal})
		}
		onTime := 0
		for onTime < len(a.late) && !a.late[onTime] {
			onTime++
		}
		for _, l := range a.late[onTime:] {
			if !l {
				t.Fatalf("%v: an on-time event after a late one", k)
			}
		}
		if onTimeKeys[k] && k.start+60_000 <= final {
			emit(onTime, false) // the on-time firing
		}
		for i := onTime; i < len(a.late); i++ {
			emit(i+1, false) // each late event re-fires the window
		}
		emit(len(a.late), true)
		rc.rows[k] = rows
	}
	return rc
}

// roundHalfAway rounds x half away from zero to n digits.
func roundHalfAway(x *big.Rat, n int) *big.Rat {
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
	y := new(big.Rat).Mul(new(big.Rat).Abs(x), scale)
	y.Add(y, big.NewRat(1, 2))
	q := new(big.Int).Quo(y.Num(), y.Denom())
	if x.Sign() < 0 {
		q.Neg(q)
	}
	return new(big.Rat).Quo(new(big.Rat).SetInt(q), scale)
}

// captured is what a run wrote: rows per identity, late and conflict
// records' event ids in order.
type captured struct {
	mu        sync.Mutex
	rows      map[ident][]vals
	late      []string
	conflicts []string
	bad       []string
}

type resultSink struct {
	c    *captured
	desc changelog.Desc
}

func (s *resultSink) Write(_ context.Context, rows []changelog.Row) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	col := func(cols []changelog.Column, name string) int {
		for i, c := range cols {
			if c.Name == name {
				return i
			}
		}
		panic("no column " + name)
	}
	store, cur := col(s.desc.Key, "store_id"), col(s.desc.Key, "currency")
	oc, rv, ec := col(s.desc.Values, "order_count"), col(s.desc.Values, "revenue_amount"), col(s.desc.Values, "source_event_count")
	for i := range rows {
		r := &rows[i]
		if r.WindowEnd-r.WindowStart != 60_000 {
			s.c.bad = append(s.c.bad, fmt.Sprintf("window [%d, %d)", r.WindowStart, r.WindowEnd))
		}
		k := ident{r.WindowStart, r.Key[store].S, r.Key[cur].S}
		want := changelog.Insert
		if len(s.c.rows[k]) > 0 {
			want = changelog.UpdateAfter
		}
		if r.Op != want {
			s.c.bad = append(s.c.bad, fmt.Sprintf("%v: op %v, want %v", k, r.Op, want))
		}
		rev := r.Values[rv]
		if rev.Kind != row.KindDecimal || !strings.HasSuffix(rev.String(), "") {
			s.c.bad = append(s.c.bad, fmt.Sprintf("%v: revenue %v", k, rev))
		}
		q, ok := new(big.Rat).SetString(string(row.FormatDecimal(nil, rev.D)))
		if !ok {
			s.c.bad = append(s.c.bad, fmt.Sprintf("%v: revenue %v", k, rev))
			continue
		}
		s.c.rows[k] = append(s.c.rows[k], vals{orders: r.Values[oc].I, events: r.Values[ec].I, revenue: q.RatString(),
			version: r.Version, final: r.IsFinal})
	}
	return nil
}
func (s *resultSink) Flush(context.Context) error { return nil }
func (s *resultSink) Close(context.Context) error { return nil }

type recordSink struct {
	c    *captured
	late bool
}

func (s *recordSink) WriteRecord(_ context.Context, rec []byte) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	var m struct {
		EventID string `json:"event_id"`
		Event   struct {
			EventID string `json:"event_id"`
		} `json:"event"`
	}
	if err := json.Unmarshal(rec, &m); err != nil {
		s.c.bad = append(s.c.bad, fmt.Sprintf("record %q: %v", rec, err))
		return nil
	}
	if s.late {
		s.c.late = append(s.c.late, m.Event.EventID)
	} else {
		s.c.conflicts = append(s.c.conflicts, m.EventID)
	}
	return nil
}
func (s *recordSink) Flush(context.Context) error { return nil }
func (s *recordSink) Close(context.Context) error { return nil }

// runPipeline runs the bundled pipeline over the file at events with
// capturing sinks, at the given parallelism.
func runPipeline(t *testing.T, dir, events string, parallelism int) (*captured, *engine.Summary) {
	t.Helper()
	return runPipelineOn(t, dir, events, parallelism, false)
}

// runPipelineOn is runPipeline on the memory backend, or (disk) on the
// disk backend with a hot tier of one byte: the dedup tier turning and the
// window's panes written to the store every 256 records.
func runPipelineOn(t *testing.T, dir, events string, parallelism int, disk bool) (*captured, *engine.Summary) {
	t.Helper()
	p, err := article.Load(dir, events)
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{}
	if disk {
		p.State = spec.State{Backend: "disk", Memory: 16 << 20}
		opts.HotTier = 1
	}
	p.Sinks = []spec.Sink{{Type: "capture"}}
	p.Late.Sink = &spec.Sink{Type: "capturelate"}
	p.Conflicts.Sink = &spec.Sink{Type: "captureconflicts"}
	p.Quarantine.Sink = &spec.Sink{Type: "capturequarantine"}
	c := &captured{rows: map[ident][]vals{}}
	reg := engine.DefaultRegistry()
	reg.Results["capture"] = func(_ context.Context, _ spec.Sink, d changelog.Desc, _ *engine.Env) (sink.Results, error) {
		return &resultSink{c: c, desc: d}, nil
	}
	var quarantined []string
	reg.Records["capturelate"] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return &recordSink{c: c, late: true}, nil
	}
	reg.Records["captureconflicts"] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return &recordSink{c: c}, nil
	}
	reg.Records["capturequarantine"] = func(context.Context, spec.Sink, *engine.Env) (sink.Records, error) {
		return quarantineSink{&quarantined}, nil
	}
	pl, err := tidemark.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	opts.Registry, opts.Parallelism = reg, parallelism
	sum, err := engine.Run(context.Background(), pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(quarantined) > 0 {
		t.Errorf("%d records quarantined, first %s", len(quarantined), quarantined[0])
	}
	if len(c.bad) > 0 {
		t.Errorf("%d bad rows or records, first: %s", len(c.bad), c.bad[0])
	}
	return c, sum
}

type quarantineSink struct{ recs *[]string }

func (q quarantineSink) WriteRecord(_ context.Context, rec []byte) error {
	*q.recs = append(*q.recs, string(rec))
	return nil
}
func (quarantineSink) Flush(context.Context) error { return nil }
func (quarantineSink) Close(context.Context) error { return nil }

// sameRows compares rows per identity, each identity's rows in order.
func sameRows(t *testing.T, what string, got, want map[ident][]vals) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the recomputation has no rows", what)
	}
	keys := slices.SortedFunc(func(yield func(ident) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}, func(a, b ident) int {
		if a.start != b.start {
			return int(a.start - b.start)
		}
		return strings.Compare(a.store+"/"+a.currency, b.store+"/"+b.currency)
	})
	bad := 0
	for _, k := range keys {
		if !slices.Equal(got[k], want[k]) {
			if bad++; bad <= 3 {
				t.Errorf("%s: %s %s/%s:\n got %+v\nwant %+v", what, time.UnixMilli(k.start).UTC().Format(time.RFC3339), k.store, k.currency, got[k], want[k])
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			if bad++; bad <= 3 {
				t.Errorf("%s: unexpected identity %+v: %+v", what, k, got[k])
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d identities differ", what, bad)
	}
}

// TestPipelineMatchesRecomputation runs the bundled pipeline over
// generated order events at parallelism 1 and 2, on the disk backend with
// a one-byte hot tier (dedup ids and window panes through the store) at
// 1, 2 and 4, and the hand-written loop, and checks every row (each window and key's versions in order,
// their values and is_final), the late and conflict records and the
// summary's counts against a batch recomputation; it also checks the
// generator's promise about each event's fate.
func TestPipelineMatchesRecomputation(t *testing.T) {
	for _, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			dir := t.TempDir()
			events := filepath.Join(dir, "orders.jsonl")
			gst, err := articlegen.WriteFile(events, s.cfg)
			if err != nil {
				t.Fatal(err)
			}
			rc := recompute(t, events)
			if rc.lateAccepted == 0 || len(rc.tooLate) == 0 || len(rc.conflicts) == 0 || rc.duplicates == 0 {
				t.Fatalf("the stream lacks a case: %d late, %d too late, %d conflicts, %d duplicates", rc.lateAccepted, len(rc.tooLate), len(rc.conflicts), rc.duplicates)
			}
			if rc.duplicates != gst.Redeliveries || int64(len(rc.conflicts)) != gst.Conflicting {
				t.Errorf("recomputation: %d duplicates, %d conflicts; generator: %d redeliveries, %d conflicting", rc.duplicates, len(rc.conflicts), gst.Redeliveries, gst.Conflicting)
			}
			checkFates(t, s.cfg, rc)
			for _, run := range []struct {
				par  int
				disk bool
			}{{1, false}, {2, false}, {1, true}, {2, true}, {4, true}} {
				par := run.par
				name := fmt.Sprintf("parallelism_%d", par)
				if run.disk {
					name += "_disk"
				}
				t.Run(name, func(t *testing.T) {
					c, sum := runPipelineOn(t, dir, events, par, run.disk)
					if d := sum.DiskState; run.disk && (d == nil || d.WindowWrites == 0 || d.WindowReads != d.WindowWrites) {
						t.Errorf("disk state %+v: the window's panes did not go through the store", d)
					}
					sameRows(t, "rows", c.rows, rc.rows)
					if !slices.Equal(c.late, rc.tooLate) {
						t.Errorf("late records: %d, want %d (first %v, want %v)", len(c.late), len(rc.tooLate), head(c.late), head(rc.tooLate))
					}
					if !slices.Equal(c.conflicts, rc.conflicts) {
						t.Errorf("conflict records: %d, want %d", len(c.conflicts), len(rc.conflicts))
					}
					st := sum.Stages[0]
					if sum.EventsRead != gst.Lines || sum.Duplicates != rc.duplicates || sum.Conflicts != int64(len(rc.conflicts)) || sum.Quarantined != 0 ||
						st.Filtered != rc.filtered || st.OnTime != rc.onTime || st.LateAccepted != rc.lateAccepted || st.TooLateSideOutput != int64(len(rc.tooLate)) {
						t.Errorf("summary: read %d, %d duplicates, %d conflicts, %d quarantined, stage %+v\nwant read %d, %d duplicates, %d conflicts, %d filtered, %d on time, %d late, %d too late",
							sum.EventsRead, sum.Duplicates, sum.Conflicts, sum.Quarantined, st.Counters,
							gst.Lines, rc.duplicates, len(rc.conflicts), rc.filtered, rc.onTime, rc.lateAccepted, len(rc.tooLate))
					}
				})
			}
			t.Run("articlebase", func(t *testing.T) {
				got := map[ident][]vals{}
				st, err := articlebase.Run(context.Background(), events, func(r *articlebase.Row) {
					k := ident{r.Start, r.Store, r.Currency}
					got[k] = append(got[k], vals{orders: r.Orders, events: r.Events, revenue: big.NewRat(r.Revenue, 100).RatString(),
						version: uint64(r.Version), final: r.IsFinal})
				})
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, "articlebase rows", got, rc.rows)
				if st.Events != gst.Lines || st.Duplicates != rc.duplicates || st.Conflicts != int64(len(rc.conflicts)) || st.Filtered != rc.filtered ||
					st.OnTime != rc.onTime || st.Late != rc.lateAccepted || st.TooLate != int64(len(rc.tooLate)) || st.Quarantined != 0 {
					t.Errorf("articlebase stats %+v", st)
				}
			})
		})
	}
}

// checkFates checks the generator's promise: every ORDER_PAID first
// delivery it made on time, late or too late is what the recomputation
// finds, whatever the batching.
func checkFates(t *testing.T, cfg articlegen.Config, rc *recomputation) {
	t.Helper()
	g, err := articlegen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := map[articlegen.Fate]string{articlegen.OnTime: "on time", articlegen.Late: "late", articlegen.TooLate: "too late"}
	var line []byte
	var e *articlegen.Event
	n := map[articlegen.Fate]int{}
	for {
		if line, e = g.Next(line[:0]); e == nil {
			break
		}
		if e.Delivery != articlegen.First || e.Type != articlegen.OrderPaid {
			continue
		}
		var m struct {
			ID string `json:"event_id"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if got := rc.fate[m.ID]; got != names[e.Fate] {
			t.Fatalf("%s: generated %s, recomputed %s", m.ID, names[e.Fate], got)
		}
		n[e.Fate]++
	}
	if n[articlegen.Late] == 0 || n[articlegen.TooLate] == 0 {
		t.Errorf("fates %v: the stream lacks late or too-late payments", n)
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }

// TestPostgresVariant: postgres.yaml is pipeline.yaml with its results in
// PostgreSQL and checkpoints, nothing else.
func TestPostgresVariant(t *testing.T) {
	dir := t.TempDir()
	a, err := article.Load(dir, "orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b, err := article.LoadPostgres(dir, "orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Sinks) != 1 || b.Sinks[0].Type != "postgres" || b.Sinks[0].Mode != "results" || b.Sinks[0].Table != "revenue_minute" ||
		b.Checkpoint == nil || time.Duration(b.Checkpoint.Interval) != time.Second {
		t.Fatalf("postgres.yaml: sinks %+v, checkpoint %+v", b.Sinks, b.Checkpoint)
	}
	b.Sinks, b.Checkpoint = a.Sinks, a.Checkpoint
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("the two pipelines differ beyond sinks and checkpoint:\n%s\n%s", ja, jb)
	}
}
