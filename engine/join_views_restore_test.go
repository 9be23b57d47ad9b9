package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// viewEvents writes one input of invoices in arrival order: n invoices,
// one every 20 s, of 1 to 5 sale lines of one customer at one time; for a
// tenth of the invoices a cancellation of its first line 0 to 39 minutes
// later; for every 17th a new price of a stock (temporal versions). Every
// ninth invoice (and its cancellation) straggles 4 to 15 minutes behind
// its time (too late for a lateness of 2 minutes), another ninth 40 to 90
// seconds (late, within the lateness).
func viewEvents(t *testing.T, dir string, n int) string {
	type ev struct {
		at   time.Time
		line string
	}
	var evs []ev
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	put := func(ts, at time.Time, kind string, i, line, cust, stock, qty int) {
		evs = append(evs, ev{at, fmt.Sprintf(`{"at":"%s","ts":"%s","id":"%s%d-%d","kind":"%s","cust":"c%d","stock":"s%d","qty":%d}`,
			at.Format(time.RFC3339Nano), ts.Format(time.RFC3339), kind[:1], i, line, kind, cust, stock, qty)})
	}
	for i := range n {
		ts := base.Add(time.Duration(i) * 20 * time.Second)
		delay := time.Duration(i%4) * time.Second
		switch i % 9 {
		case 4:
			delay = time.Duration(4+i%12) * time.Minute
		case 7:
			delay = time.Duration(40+i%51) * time.Second
		}
		cust := i % 23
		for l := range 1 + i%5 {
			put(ts, ts.Add(delay+time.Duration(l)*time.Millisecond), "sale", i, l, cust, (i*7+l)%11, 1+(i+l)%6)
		}
		if i%10 == 3 {
			cts := ts.Add(time.Duration(i%40) * time.Minute)
			put(cts, cts.Add(delay+time.Second), "cancel", i, 0, cust, (i*7)%11, -1-i%6)
		}
		if i%17 == 0 {
			put(ts, ts.Add(delay+2*time.Second), "price", i, 0, 0, i%11, 10+i%13)
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.line + "\n")
	}
	path := filepath.Join(dir, "orders.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// viewsPipeline joins two filtered views of the one input at path: sale
// lines (S) with the cancellations (C) of the same customer and stock, or
// with the price versions (P) of their stock; a stage reading the join
// counts its rows per 10 minutes unless the join stands alone.
func viewsPipeline(path, out, ck string, j *spec.Join, mode string, downstream bool) *spec.Pipeline {
	p := &spec.Pipeline{
		Name:      "views",
		KeyGroups: 16,
		Source: spec.Source{Type: "file", Path: path, Format: "jsonl", ArrivalTimeField: "at",
			Schema: spec.FieldTypes{{Name: "qty", Type: "int"}}},
		EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(10 * time.Second)},
		Dedup:     &spec.Dedup{Key: "id", TTL: spec.Duration(time.Hour)},
		Stages: []spec.Stage{{
			Name:            "pairs",
			Join:            j,
			AllowedLateness: spec.Duration(2 * time.Minute),
			Emit:            spec.Emit{Mode: mode},
			Late:            spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "pairs.jsonl")}},
		}},
	}
	if downstream {
		p.Stages = append(p.Stages, spec.Stage{
			Name: "per_10m", Input: "pairs",
			Window:          spec.Window{Type: "tumbling", Size: spec.Duration(10 * time.Minute)},
			AllowedLateness: spec.Duration(time.Hour),
			Aggregates:      spec.NamedExprs{{Name: "rows", Expr: "count()"}, {Name: "sold", Expr: "sum(sold)"}},
			Emit:            spec.Emit{Mode: "update"},
			Sinks:           []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "per_10m.jsonl")}},
		})
	}
	if ck != "" {
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Hour), Retain: 2}
	}
	return p
}

// TestJoinOfViewsRestore: a join of two filtered views of one input —
// whose watermark is the source's on both sides, with no hold-back for
// the inner interval, regular and temporal joins — stopped just before
// records that are too late and resumed each time at another parallelism,
// judges every row as the uninterrupted run does: the same late records
// (with the same current_watermark), joined rows and downstream counts.
// Each resumed run's first record is a row that the checkpoint's
// watermark makes too late, so a join restored without its sides'
// watermarks (−∞ until the next advance) takes it as on time. Every join
// type is run: interval (inner in mode final, standing alone in update,
// left in retract), regular, temporal (inner and left) and window.
func TestJoinOfViewsRestore(t *testing.T) {
	dir := t.TempDir()
	path := viewEvents(t, dir, 700)
	sale, cancel, price := `kind == "sale"`, `kind == "cancel"`, `kind == "price"`
	up := spec.Duration(30 * time.Minute)
	pairSel := spec.NamedExprs{{Name: "cust", Expr: "S.cust"}, {Name: "stock", Expr: "S.stock"}, {Name: "sold", Expr: "S.qty"},
		{Name: "sale", Expr: "S.id"}, {Name: "other", Expr: "C.id"}}
	cases := []struct {
		name       string
		join       spec.Join
		mode       string
		downstream bool
	}{
		{"interval inner final", spec.Join{Type: "interval", Between: &spec.JoinBounds{Upper: &up}}, "final", true},
		{"interval inner alone", spec.Join{Type: "interval", Between: &spec.JoinBounds{Upper: &up}}, "update", false},
		{"interval left retract", spec.Join{Type: "interval", Kind: "left", Between: &spec.JoinBounds{Upper: &up}}, "retract", true},
		{"regular inner", spec.Join{Type: "regular", TTL: spec.Duration(20 * time.Minute)}, "retract", true},
		{"window inner", spec.Join{Type: "window", Window: &spec.Window{Type: "tumbling", Size: spec.Duration(30 * time.Minute)}}, "update", true},
		{"temporal inner", spec.Join{Type: "temporal"}, "update", true},
		{"temporal left final", spec.Join{Type: "temporal", Kind: "left"}, "final", false},
	}
	files := []string{"pairs.jsonl", "late.jsonl", "per_10m.jsonl"}
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
		opts := engine.Options{Parallelism: par, BatchSize: 1}
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
	lineOf := regexp.MustCompile(`"source":"[^"]*:(\d+)"`)
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.join
			j.Left = spec.JoinSide{As: "S", Filter: sale}
			j.Right = spec.JoinSide{As: "C", Filter: cancel}
			j.On = []string{"S.cust = C.cust", "S.stock = C.stock"}
			j.Select = pairSel
			if j.Type == "temporal" {
				j.Right = spec.JoinSide{As: "C", Filter: price}
				j.On = []string{"S.stock = C.stock"}
				j.Select = slices.Clone(pairSel)
				j.Select[4] = spec.NamedExpr{Name: "other", Expr: "C.qty"}
			}
			build := func(out, ck string) *spec.Pipeline {
				jj := j
				return viewsPipeline(path, out, ck, &jj, c.mode, c.downstream)
			}
			refOut := filepath.Join(dir, fmt.Sprint(ci), "ref")
			sum := run(build(refOut, ""), 1, 0)
			want := map[string]string{}
			for _, f := range files {
				if f == "per_10m.jsonl" && !c.downstream {
					continue
				}
				want[f] = sortedLines(t, filepath.Join(refOut, f))
			}
			st := sum.Stages[0]
			if st.RowsEmitted < 50 || st.TooLateSideOutput < 20 || st.LateAccepted == 0 {
				t.Fatalf("the reference run lacks cases: %d rows, %d too late, %d late accepted", st.RowsEmitted, st.TooLateSideOutput, st.LateAccepted)
			}
			// Stop just before too-late records (their line in the file
			// is their place in the arrival order), spread over the run.
			var lines []int64
			for _, l := range strings.Split(want["late.jsonl"], "\n") {
				m := lineOf.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("late record without a source line: %s", l)
				}
				n, _ := strconv.ParseInt(m[1], 10, 64)
				lines = append(lines, n)
			}
			slices.Sort(lines)
			var stops []int64
			for k := 1; k <= 6; k++ {
				if s := lines[k*len(lines)/7] - 1; len(stops) == 0 || s > stops[len(stops)-1] {
					stops = append(stops, s)
				}
			}
			out, ck := filepath.Join(dir, fmt.Sprint(ci), "out"), filepath.Join(dir, fmt.Sprint(ci), "ck")
			restored := 0
			for k, stop := range append(stops, 0) {
				s := run(build(out, ck), 1+k%4, stop)
				if stop > 0 && (!s.Stopped || s.EventsRead != stop) {
					t.Fatalf("the run at parallelism %d stopped %v after %d records, want %d", 1+k%4, s.Stopped, s.EventsRead, stop)
				}
				if s.Checkpoints.Restored > 0 {
					restored++
				}
			}
			if restored != len(stops) {
				t.Fatalf("%d restores, want %d", restored, len(stops))
			}
			for _, f := range files {
				if _, ok := want[f]; !ok {
					continue
				}
				if got := sortedLines(t, filepath.Join(out, f)); got != want[f] {
					t.Errorf("%s differs from the uninterrupted run's:\n%s", f, lineDiff(got, want[f]))
				}
			}
		})
	}
}

// lineDiff lists the lines only one of two sorted texts has (at most 10
// of each).
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var extra, missing []string
	i, k := 0, 0
	for i < len(g) || k < len(w) {
		switch {
		case k == len(w) || i < len(g) && g[i] < w[k]:
			extra = append(extra, g[i])
			i++
		case i == len(g) || w[k] < g[i]:
			missing = append(missing, w[k])
			k++
		default:
			i++
			k++
		}
	}
	return fmt.Sprintf("%d missing %q\n%d extra %q", len(missing), missing[:min(10, len(missing))], len(extra), extra[:min(10, len(extra))])
}
