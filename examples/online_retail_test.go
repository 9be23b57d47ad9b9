package examples

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/spec"
)

// groupKey is one (hour window, country) of the batch recomputation.
type groupKey struct {
	start   int64 // window start, ms
	country string
}

type groupVal struct {
	net   *big.Rat
	lines int64
}

// batchGroupBy is the independent recomputation: a plain group-by over the
// raw CSV files (encoding/csv, time.ParseInLocation, math/big), skipping
// the lines whose "file:line" is in exclude.
func batchGroupBy(t *testing.T, dir string, exclude map[string]bool) map[groupKey]*groupVal {
	t.Helper()
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "online-retail", "by-day", "*.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files: %v", err)
	}
	out := map[groupKey]*groupVal{}
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
			ms := ts.UnixMilli()
			k := groupKey{ms - ms%3_600_000, rec[col["Country"]]}
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
	return out
}

// runExample runs the bundled pipeline with its outputs in a temporary
// directory, after mutate, and returns that directory.
func runExample(t *testing.T, data string, mutate func(*spec.Pipeline)) (string, *engine.Summary) {
	t.Helper()
	t.Setenv("TIDEMARK_DATA", data)
	p, err := tidemark.Load("online-retail/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for i := range p.Sinks {
		p.Sinks[i].Path = filepath.Join(out, filepath.Base(p.Sinks[i].Path))
	}
	p.Late.Sink.Path = filepath.Join(out, "late.jsonl")
	p.Quarantine.Sink.Path = filepath.Join(out, "quarantine.jsonl")
	if mutate != nil {
		mutate(p)
	}
	sum, err := tidemark.Run(context.Background(), p, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// finalRows reads the SQLite result table: every row must be final.
func finalRows(t *testing.T, db string) map[groupKey]*groupVal {
	t.Helper()
	c, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Query(`SELECT window_start, Country, net_revenue, lines, is_final FROM revenue_hourly`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[groupKey]*groupVal{}
	for rows.Next() {
		var ws, country, net string
		var lines int64
		var final bool
		if err := rows.Scan(&ws, &country, &net, &lines, &final); err != nil {
			t.Fatal(err)
		}
		if !final {
			t.Fatalf("row %s %s is not final after the end of input", ws, country)
		}
		tm, err := time.Parse(time.RFC3339, ws)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := new(big.Rat).SetString(net)
		if !ok {
			t.Fatalf("net_revenue %q is not a decimal", net)
		}
		out[groupKey{tm.UnixMilli(), country}] = &groupVal{n, lines}
	}
	return out
}

func compareGroups(t *testing.T, got, want map[groupKey]*groupVal) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %v: want %s / %d", k, w.net.FloatString(3), w.lines))
		case g.net.Cmp(w.net) != 0 || g.lines != w.lines:
			diffs = append(diffs, fmt.Sprintf("%v: got %s / %d, want %s / %d", k, g.net.FloatString(3), g.lines, w.net.FloatString(3), w.lines))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra row %v", k))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%d differences, first: %s", len(diffs), strings.Join(diffs[:min(10, len(diffs))], "\n"))
	}
}

// TestOnlineRetailMatchesBatch: the bundled run's final rows equal a plain
// group-by over the same CSV lines minus the ones the run reported too late
// (every too-late line is in the late side output, by file and line).
func TestOnlineRetailMatchesBatch(t *testing.T) {
	data := dataDir(t)
	out, sum := runExample(t, data, nil)
	st := sum.Stages[0]
	if sum.EventsRead != 541_909 || st.Quarantined != 0 {
		t.Fatalf("read %d events, %d quarantined; want 541909 and 0", sum.EventsRead, st.Quarantined)
	}
	if st.TooLateSideOutput == 0 || st.LateAccepted == 0 {
		t.Fatalf("the replay should make some events late and some too late: %+v", st.Counters)
	}
	if st.OnTime+st.LateAccepted+st.TooLateSideOutput != sum.EventsRead {
		t.Fatalf("counters do not add up: %+v", st.Counters)
	}
	late := map[string]bool{}
	f, err := os.Open(filepath.Join(out, "late.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Source string `json:"source"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		late[filepath.Base(rec.Source)] = true
	}
	if int64(len(late)) != st.TooLateSideOutput {
		t.Fatalf("late side output holds %d distinct lines, summary says %d", len(late), st.TooLateSideOutput)
	}
	want := batchGroupBy(t, data, late)
	got := finalRows(t, filepath.Join(out, "tidemark.db"))
	compareGroups(t, got, want)
	t.Logf("%d window/country rows equal the batch group-by; %d lines too late, %d late but accepted", len(got), st.TooLateSideOutput, st.LateAccepted)
}

// TestOnlineRetailNothingTooLate: with allowed lateness longer than any
// replay delay nothing is too late, and the totals equal the group-by over
// the raw CSV.
func TestOnlineRetailNothingTooLate(t *testing.T) {
	data := dataDir(t)
	out, sum := runExample(t, data, func(p *spec.Pipeline) {
		p.AllowedLateness = spec.Duration(4 * time.Hour) // max replay delay is 3h
	})
	st := sum.Stages[0]
	if st.TooLateSideOutput != 0 || st.TooLateDropped != 0 {
		t.Fatalf("too late with 4h lateness: %+v", st.Counters)
	}
	compareGroups(t, finalRows(t, filepath.Join(out, "tidemark.db")), batchGroupBy(t, data, nil))
}

// TestOnlineRetailDeterministic: two runs over the same replayed input give
// byte-identical changelogs, late records and tables' contents (processing
// time comes from the replay's recorded arrival times).
func TestOnlineRetailDeterministic(t *testing.T) {
	data := dataDir(t)
	a, _ := runExample(t, data, nil)
	b, _ := runExample(t, data, nil)
	for _, f := range []string{"revenue_hourly.changelog.jsonl", "late.jsonl", "quarantine.jsonl"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(x) != string(y) {
			t.Fatalf("%s differs between two runs of the same input", f)
		}
	}
	ra, rb := finalRows(t, filepath.Join(a, "tidemark.db")), finalRows(t, filepath.Join(b, "tidemark.db"))
	compareGroups(t, ra, rb)
}
