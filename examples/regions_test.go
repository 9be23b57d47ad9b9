package examples

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/backfill"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/spec"
)

// regionKey is one (London day, region) of the batch recomputation.
type regionKey struct {
	day    int64 // the day's start, ms
	region string
}

// regionVersion is one line of regions.csv, read here independently.
type regionVersion struct {
	from   time.Time
	region string
}

// readRegions reads the example's versioned reference with encoding/csv:
// per country its versions, oldest first.
func readRegions(t *testing.T, path string) map[string][]regionVersion {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]regionVersion{}
	for _, r := range recs[1:] {
		from, err := time.Parse(time.RFC3339, r[2])
		if err != nil {
			t.Fatal(err)
		}
		out[r[0]] = append(out[r[0]], regionVersion{from, r[1]})
	}
	for _, vs := range out {
		sort.Slice(vs, func(i, j int) bool { return vs[i].from.Before(vs[j].from) })
	}
	return out
}

// regionAt is the as-of search, by a plain scan: the region of the newest
// version at or before ts, "" when none.
func regionAt(vs []regionVersion, ts time.Time) string {
	region := ""
	for _, v := range vs {
		if !v.from.After(ts) {
			region = v.region
		}
	}
	return region
}

// batchRegionDaily is the independent recomputation of regions.yaml: every
// CSV line (encoding/csv, time.ParseInLocation, math/big) that passes the
// contract's rules and whose "file:line" is not in exclude, given its
// country's region as of its time, summed per London calendar day and
// region. It also returns the EIRE lines per region.
func batchRegionDaily(t *testing.T, dir string, regions map[string][]regionVersion, exclude map[string]bool) (map[regionKey]*groupVal, map[string]int64) {
	t.Helper()
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "online-retail", "by-day", "*.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files: %v", err)
	}
	out := map[regionKey]*groupVal{}
	eire := map[string]int64{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r := csv.NewReader(bufio.NewReader(fh))
		header, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range header {
			col[h] = i
		}
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			line, _ := r.FieldPos(0)
			if exclude[filepath.Base(f)+":"+strconv.Itoa(line)] {
				continue
			}
			ts, err := time.ParseInLocation("2006-01-02 15:04:05", rec[col["InvoiceDate"]], london)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := new(big.Rat).SetString(rec[col["Quantity"]])
			p, ok2 := new(big.Rat).SetString(rec[col["UnitPrice"]])
			if !ok || !ok2 {
				t.Fatalf("%s:%d: bad number", f, line)
			}
			if q.Sign() < 0 && !strings.HasPrefix(rec[col["InvoiceNo"]], "C") || p.Sign() < 0 {
				continue // quarantined by the contract
			}
			country := rec[col["Country"]]
			region := regionAt(regions[country], ts)
			if country == "EIRE" {
				eire[region]++
			}
			day := time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, london)
			k := regionKey{day.UnixMilli(), region}
			g := out[k]
			if g == nil {
				g = &groupVal{net: new(big.Rat)}
				out[k] = g
			}
			g.net.Add(g.net, q.Mul(q, p))
			g.lines++
		}
		fh.Close()
	}
	return out, eire
}

// runRegions runs examples/online-retail/regions.yaml with its outputs in a
// temporary directory, after mutate, recording lineage.
func runRegions(t *testing.T, data string, mutate func(*spec.Pipeline)) (string, *engine.Summary) {
	return runRegionsWith(t, data, mutate, engine.Options{Lineage: true})
}

// runRegionsWith is runRegions with the engine's options.
func runRegionsWith(t *testing.T, data string, mutate func(*spec.Pipeline), opts engine.Options) (string, *engine.Summary) {
	t.Helper()
	t.Setenv("TIDEMARK_DATA", data)
	p, err := tidemark.Load("online-retail/regions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Paths relative to the repository root; tests run in examples/.
	p.Contract = "online-retail/contract.yaml"
	p.Reference.Path = "online-retail/regions.csv"
	out := t.TempDir()
	for i := range p.Stages {
		st := &p.Stages[i]
		for j := range st.Sinks {
			st.Sinks[j].Path = filepath.Join(out, filepath.Base(st.Sinks[j].Path))
		}
		if st.Late.Sink != nil {
			st.Late.Sink.Path = filepath.Join(out, filepath.Base(st.Late.Sink.Path))
		}
	}
	p.Quarantine.Sink.Path = filepath.Join(out, "quarantine.jsonl")
	p.Conflicts.Sink.Path = filepath.Join(out, "conflicts.jsonl")
	if mutate != nil {
		mutate(p)
	}
	sum, err := tidemark.Run(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// regionRows reads the result table: every row must be final; it returns
// the rows and each row's lineage reference part.
func regionRows(t *testing.T, db string) (map[regionKey]*groupVal, map[regionKey]string) {
	return regionRowsOf(t, db, "revenue_region_daily")
}

// regionRowsOf is regionRows of table.
func regionRowsOf(t *testing.T, db, table string) (map[regionKey]*groupVal, map[regionKey]string) {
	t.Helper()
	c, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Query(`SELECT window_start, region, net_revenue, lines, is_final, lineage FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[regionKey]*groupVal{}
	refs := map[regionKey]string{}
	for rows.Next() {
		var ws, region, net, lin string
		var lines int64
		var final bool
		if err := rows.Scan(&ws, &region, &net, &lines, &final, &lin); err != nil {
			t.Fatal(err)
		}
		if !final {
			t.Fatalf("row %s %s is not final after the end of input", ws, region)
		}
		tm, err := time.Parse(time.RFC3339, ws)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := new(big.Rat).SetString(net)
		if !ok {
			t.Fatalf("net_revenue %q is not a decimal", net)
		}
		k := regionKey{tm.UnixMilli(), region}
		out[k] = &groupVal{n, lines}
		l := engine.ParseLineage(lin)
		refs[k] = l.Reference
		if l.Replay != "" {
			refs[k] += " replay=" + l.Replay
		}
	}
	return out, refs
}

// TestRegionsMatchBatch: the Online Retail lines joined as of their time to
// the versioned country → region reference (a temporal join over
// regions.csv, the join's rows summed per region and London day) give the
// rows of a batch recomputation over the same CSV files — each line's
// region found by scanning its country's versions — minus the lines
// quarantined by the contract and those the join reported too late (in its
// late output by file and line). EIRE's lines count for British Isles
// before 1 July 2011 and for EU from then on, and each row's lineage names
// the reference version as of its day.
func TestRegionsMatchBatch(t *testing.T) {
	data := datatest.Dir(t)
	out, sum := runRegions(t, data, nil)
	j, daily := sum.Stages[0], sum.Stages[1]
	if j.TooLateSideOutput == 0 || j.LateAccepted == 0 || daily.TooLateSideOutput+daily.TooLateDropped != 0 {
		t.Fatalf("the replay should make some lines late and too late for the join, none for the daily sums: join %+v, daily %+v", j.Counters, daily.Counters)
	}
	late := map[string]bool{}
	for _, rec := range readJSONL[struct{ Source, Reason string }](t, filepath.Join(out, "regions.late.jsonl")) {
		if !strings.HasPrefix(rec.Reason, "left side (l, input source)") {
			t.Fatalf("late record of another side: %q", rec.Reason)
		}
		late[filepath.Base(rec.Source)] = true
	}
	if int64(len(late)) != j.TooLateSideOutput {
		t.Fatalf("the join's late output holds %d distinct lines, the summary says %d", len(late), j.TooLateSideOutput)
	}
	regions := readRegions(t, "online-retail/regions.csv")
	want, eire := batchRegionDaily(t, data, regions, late)
	got, refs := regionRows(t, filepath.Join(out, "regions.db"))
	compareRegions(t, got, want)
	if eire["British Isles"] == 0 || eire["EU"] == 0 || len(eire) != 2 {
		t.Fatalf("EIRE's lines by region: %v, want some in British Isles and some in EU", eire)
	}
	cut := time.Date(2011, 7, 1, 0, 0, 0, 0, time.FixedZone("BST", 3600)).UnixMilli()
	ref := sum.Reference.Version
	for k, r := range refs {
		at := "@2010-12-01T00:00:00Z"
		if k.day >= cut {
			at = "@2011-06-30T23:00:00Z"
		}
		if r != ref+at {
			t.Fatalf("row %v: lineage reference %q, want %q", k, r, ref+at)
		}
	}
	t.Logf("%d day/region rows equal the batch; EIRE lines %v; %d lines too late for the join, %d late but joined", len(got), eire, j.TooLateSideOutput, j.LateAccepted)
}

func compareRegions(t *testing.T, got, want map[regionKey]*groupVal) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+time.UnixMilli(k.day).UTC().Format(time.RFC3339)+" "+k.region)
		case g.net.Cmp(w.net) != 0 || g.lines != w.lines:
			diffs = append(diffs, time.UnixMilli(k.day).UTC().Format(time.RFC3339)+" "+k.region+": got "+g.net.FloatString(2)+" / "+strconv.FormatInt(g.lines, 10)+", want "+w.net.FloatString(2)+" / "+strconv.FormatInt(w.lines, 10))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra row "+time.UnixMilli(k.day).UTC().Format(time.RFC3339)+" "+k.region)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%d differences, first: %s", len(diffs), strings.Join(diffs[:min(10, len(diffs))], "\n"))
	}
}

// TestRegionsBackfill: a backfill of 20 June – 10 July 2011 run after the
// live run (allowed lateness 4 h in both, longer than any replay delay, so
// nothing is too late) recomputes those days with the regions valid then:
// its rows equal the batch recomputation's days of the range, EIRE's
// lines count for British Isles up to 30 June and for EU from 1 July, and
// each row's lineage names the reference version as of its day and the
// replay.
func TestRegionsBackfill(t *testing.T) {
	data := datatest.Dir(t)
	late := func(p *spec.Pipeline) {
		for i := range p.Stages {
			p.Stages[i].AllowedLateness = spec.Duration(4 * time.Hour)
		}
	}
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2011, 6, 20, 0, 0, 0, 0, london), time.Date(2011, 7, 10, 0, 0, 0, 0, london)
	out, sum := runRegionsWith(t, data, func(p *spec.Pipeline) {
		late(p)
		if err := backfill.Apply(p, "v2"); err != nil {
			t.Fatal(err)
		}
	}, engine.Options{Lineage: true, ReplayID: "v2@test", Range: &engine.TimeRange{From: from.UnixMilli(), To: to.UnixMilli()}})
	if j := sum.Stages[0]; j.TooLateSideOutput+j.TooLateDropped != 0 || sum.OutsideRange == 0 {
		t.Fatalf("backfill: join %+v, %d outside the range", j.Counters, sum.OutsideRange)
	}
	all, _ := batchRegionDaily(t, data, readRegions(t, "online-retail/regions.csv"), nil)
	want := map[regionKey]*groupVal{}
	for k, v := range all {
		if k.day >= from.UnixMilli() && k.day < to.UnixMilli() {
			want[k] = v
		}
	}
	got, refs := regionRowsOf(t, filepath.Join(out, "regions.db"), "revenue_region_daily__v2")
	compareRegions(t, got, want)
	cut := time.Date(2011, 7, 1, 0, 0, 0, 0, london).UnixMilli()
	if got[regionKey{cut - 86_400_000, "British Isles"}] == nil || got[regionKey{cut, "EU"}] == nil {
		t.Fatalf("no rows on 30 June (British Isles) and 1 July (EU)")
	}
	for k, r := range refs {
		at := "@2010-12-01T00:00:00Z"
		if k.day >= cut {
			at = "@2011-06-30T23:00:00Z"
		}
		if want := sum.Reference.Version + at + " replay=v2@test"; r != want {
			t.Fatalf("row %v: lineage %q, want %q", k, r, want)
		}
	}
	t.Logf("backfill: %d day/region rows of 20 June – 10 July equal the batch; %d events outside the range", len(got), sum.OutsideRange)
}
