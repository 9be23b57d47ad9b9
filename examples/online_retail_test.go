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
	"github.com/tidemark/tidemark/backfill"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/datatest"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/results"
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
// the lines whose "file:line" is in exclude and the lines that break the
// contract's rules (examples/online-retail/contract.yaml: a negative
// Quantity only on a "C" invoice, no negative UnitPrice), which it
// returns by "file:line" with the rule's name.
func batchGroupBy(t *testing.T, dir string, exclude map[string]bool) (map[groupKey]*groupVal, map[string]string) {
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
	broken := map[string]string{}
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
			at := filepath.Base(f) + ":" + strconv.Itoa(line)
			switch {
			case q.Sign() < 0 && !strings.HasPrefix(rec[col["InvoiceNo"]], "C"):
				broken[at] = "quantity_sign"
				continue
			case p.Sign() < 0:
				broken[at] = "unit_price_not_negative"
				continue
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
	return out, broken
}

// runExample runs the bundled pipeline with its outputs in a temporary
// directory, after mutate, and returns that directory.
func runExample(t *testing.T, data string, mutate func(*spec.Pipeline)) (string, *engine.Summary) {
	t.Helper()
	return runExampleFileWith(t, data, "online-retail/pipeline.yaml", mutate)
}

// runExampleFile is runExample for another form of the pipeline (its SQL
// file).
func runExampleFile(t *testing.T, data, path string) (string, *engine.Summary) {
	t.Helper()
	return runExampleFileWith(t, data, path, nil)
}

func runExampleFileWith(t *testing.T, data, path string, mutate func(*spec.Pipeline)) (string, *engine.Summary) {
	t.Helper()
	t.Setenv("TIDEMARK_DATA", data)
	p, err := tidemark.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline names its contract relative to the repository root;
	// tests run in examples/.
	p.Contract = "online-retail/contract.yaml"
	out := t.TempDir()
	for i := range p.Sinks {
		p.Sinks[i].Path = filepath.Join(out, filepath.Base(p.Sinks[i].Path))
	}
	p.Late.Sink.Path = filepath.Join(out, "late.jsonl")
	p.Quarantine.Sink.Path = filepath.Join(out, "quarantine.jsonl")
	p.Conflicts.Sink.Path = filepath.Join(out, "conflicts.jsonl")
	// The contributions (every accepted line, about 146 MB) change no row;
	// TestOnlineRetailExplain checks them, the other runs go without.
	p.Contributions = nil
	if mutate != nil {
		mutate(p)
	}
	sum, err := tidemark.Run(context.Background(), p, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// finalRows reads the SQLite result through the serving view
// revenue_hourly (the live pipeline's table is revenue_hourly__live):
// every row must be final.
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

// readJSONL decodes every line of a JSONL file into a new T.
func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOnlineRetailMatchesBatch: the bundled run (contract, dedup,
// redeliveries and conflicting redeliveries) accounts for every delivery,
// quarantines exactly the lines that break the contract's rules, and its
// final rows equal a plain group-by over the same CSV lines minus those
// and the ones the run reported too late (every too-late line is in the
// late side output, by file and line).
func TestOnlineRetailMatchesBatch(t *testing.T) {
	data := datatest.Dir(t)
	out, sum := runExample(t, data, nil)
	st := sum.Stages[0]
	if sum.EventsRead != 541_909+sum.Redeliveries || sum.Redeliveries == 0 {
		t.Fatalf("read %d events with %d redelivered copies; want 541909 + copies, some copies", sum.EventsRead, sum.Redeliveries)
	}
	if st.TooLateSideOutput == 0 || st.LateAccepted == 0 || sum.Duplicates == 0 || sum.Conflicts == 0 {
		t.Fatalf("the replay should make some events late, too late, duplicated and conflicting: %+v %+v", sum, st.Counters)
	}
	if got := sum.Quarantined + sum.Duplicates + sum.Conflicts + st.Quarantined + st.OnTime + st.LateAccepted + st.TooLateSideOutput; got != sum.EventsRead {
		t.Fatalf("counters add up to %d, want the %d events read: %+v %+v", got, sum.EventsRead, sum, st.Counters)
	}

	// Too late: one record per line, first deliveries only (a redelivery
	// of a line is a duplicate before it can be late).
	late := map[string]bool{}
	for _, rec := range readJSONL[struct{ Source string }](t, filepath.Join(out, "late.jsonl")) {
		late[filepath.Base(rec.Source)] = true
	}
	if int64(len(late)) != st.TooLateSideOutput {
		t.Fatalf("late side output holds %d distinct lines, summary says %d", len(late), st.TooLateSideOutput)
	}
	want, broken := batchGroupBy(t, data, late)

	// Quarantine: exactly the lines that break a rule, with its name.
	type qrec struct {
		Rule   string
		Source struct {
			File string
			Line int
		}
	}
	quarantined := map[string]string{}
	qrecs := readJSONL[qrec](t, filepath.Join(out, "quarantine.jsonl"))
	if int64(len(qrecs)) != sum.Quarantined {
		t.Fatalf("quarantine holds %d records, summary says %d", len(qrecs), sum.Quarantined)
	}
	perRule := map[string]int64{}
	for _, q := range qrecs {
		quarantined[filepath.Base(q.Source.File)+":"+strconv.Itoa(q.Source.Line)] = q.Rule
		perRule[q.Rule]++
	}
	if len(quarantined) != len(broken) {
		t.Errorf("%d distinct lines quarantined, %d break a rule", len(quarantined), len(broken))
	}
	for at, rule := range broken {
		if quarantined[at] != rule {
			t.Errorf("%s breaks %s, quarantined as %q", at, rule, quarantined[at])
		}
	}
	for _, r := range sum.Rules {
		if perRule[r.Rule] != r.Count {
			t.Errorf("rule %s: summary %d, quarantine output %d", r.Rule, r.Count, perRule[r.Rule])
		}
	}

	// Conflicts: one record per conflicting copy, its payloads differing
	// in Quantity by one (source.replay.conflict_field).
	type crec struct {
		EventID      string            `json:"event_id"`
		FirstPayload map[string]string `json:"first_payload"`
		NewPayload   map[string]string `json:"new_payload"`
		FirstHash    string            `json:"first_payload_hash"`
		NewHash      string            `json:"new_payload_hash"`
	}
	crecs := readJSONL[crec](t, filepath.Join(out, "conflicts.jsonl"))
	if int64(len(crecs)) != sum.Conflicts {
		t.Fatalf("conflict output holds %d records, summary says %d", len(crecs), sum.Conflicts)
	}
	for _, c := range crecs {
		a, _ := strconv.Atoi(c.FirstPayload["Quantity"])
		b, _ := strconv.Atoi(c.NewPayload["Quantity"])
		if c.FirstHash == c.NewHash || b != a+1 || c.EventID != c.FirstPayload["InvoiceNo"]+"-"+strings.SplitN(c.EventID, "-", 2)[1] {
			t.Fatalf("conflict record %+v", c)
		}
		delete(c.FirstPayload, "Quantity")
		delete(c.NewPayload, "Quantity")
		if fmt.Sprint(c.FirstPayload) != fmt.Sprint(c.NewPayload) {
			t.Fatalf("conflict %s differs beyond Quantity: %v / %v", c.EventID, c.FirstPayload, c.NewPayload)
		}
	}

	got := finalRows(t, filepath.Join(out, "tidemark.db"))
	compareGroups(t, got, want)
	t.Logf("%d window/country rows equal the batch group-by; %d lines too late, %d late but accepted; %d quarantined (%d lines), %d duplicates, %d conflicts",
		len(got), st.TooLateSideOutput, st.LateAccepted, sum.Quarantined, len(broken), sum.Duplicates, sum.Conflicts)
}

// TestOnlineRetailNothingTooLate: with allowed lateness longer than any
// replay delay nothing is too late, and the totals equal the group-by over
// the raw CSV lines that pass the contract.
func TestOnlineRetailNothingTooLate(t *testing.T) {
	data := datatest.Dir(t)
	out, sum := runExample(t, data, func(p *spec.Pipeline) {
		p.AllowedLateness = spec.Duration(4 * time.Hour) // max replay delay is 3h
	})
	st := sum.Stages[0]
	if st.TooLateSideOutput != 0 || st.TooLateDropped != 0 {
		t.Fatalf("too late with 4h lateness: %+v", st.Counters)
	}
	want, _ := batchGroupBy(t, data, nil)
	compareGroups(t, finalRows(t, filepath.Join(out, "tidemark.db")), want)
}

// TestOnlineRetailDeterministic: two runs over the same replayed input give
// byte-identical changelogs, late records and tables' contents (processing
// time comes from the replay's recorded arrival times).
func TestOnlineRetailDeterministic(t *testing.T) {
	data := datatest.Dir(t)
	a, _ := runExample(t, data, nil)
	b, _ := runExample(t, data, nil)
	for _, f := range []string{"revenue_hourly.changelog.jsonl", "late.jsonl", "quarantine.jsonl", "conflicts.jsonl"} {
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

// TestOnlineRetailReprocessing runs docs/reprocessing.md's flow on the
// bundled example, which follows the versioning convention: the live run
// writes revenue_hourly__live and makes the serving view revenue_hourly
// (the README's query reads it); a backfill of January 2011 writes
// revenue_hourly__v2; diff live v2 over January agrees (nothing is too
// late with 4h of allowed lateness, so both count every line); promote v2
// for January serves January from v2 and every other window from the live
// table, none twice or missed; rollback serves the live table again.
func TestOnlineRetailReprocessing(t *testing.T) {
	ctx := context.Background()
	data := datatest.Dir(t)
	t.Setenv("TIDEMARK_DATA", data)
	out := t.TempDir()
	load := func() *spec.Pipeline {
		p, err := tidemark.Load("online-retail/pipeline.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Contract = "online-retail/contract.yaml"
		for i := range p.Sinks {
			p.Sinks[i].Path = filepath.Join(out, filepath.Base(p.Sinks[i].Path))
		}
		p.Late.Sink.Path = filepath.Join(out, "late.jsonl")
		p.Quarantine.Sink.Path = filepath.Join(out, "quarantine.jsonl")
		p.Conflicts.Sink.Path = filepath.Join(out, "conflicts.jsonl")
		p.Contributions = nil // TestOnlineRetailExplain checks them
		p.AllowedLateness = spec.Duration(4 * time.Hour)
		return p
	}
	sum, err := tidemark.Run(ctx, load(), engine.Options{Lineage: true})
	if err != nil {
		t.Fatal(err)
	}
	note := "revenue_hourly: sinks[0]: created the serving view revenue_hourly, which reads revenue_hourly__live (promotion 1): readers query revenue_hourly, and tidemark promote switches it to another version"
	if fmt.Sprint(sum.SinkNotes) != "["+note+"]" {
		t.Errorf("notes %q, want %q", sum.SinkNotes, note)
	}
	dbPath := filepath.Join(out, "tidemark.db")
	c, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := func(q string) int64 {
		t.Helper()
		var n int64
		if err := c.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	liveRows := count(`SELECT count(*) FROM revenue_hourly__live`)
	if n := count(`SELECT count(*) FROM (SELECT window_start, Country, net_revenue, lines, version, is_final FROM revenue_hourly ORDER BY window_start)`); n != liveRows || n == 0 {
		t.Fatalf("the README's query reads %d rows through the view, the live table holds %d", n, liveRows)
	}

	from, to := time.Date(2011, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2011, 2, 1, 0, 0, 0, 0, time.UTC) // London is UTC in January
	bp := load()
	if err := backfill.Apply(bp, "v2"); err != nil {
		t.Fatal(err)
	}
	bsum, err := tidemark.Run(ctx, bp, engine.Options{Lineage: true, ReplayID: "v2@test",
		Range: &engine.TimeRange{From: from.UnixMilli(), To: to.UnixMilli()}})
	if err != nil {
		t.Fatal(err)
	}
	if bsum.OutsideRange == 0 || len(bsum.SinkNotes) != 0 {
		t.Fatalf("backfill: %d events outside the range, notes %q", bsum.OutsideRange, bsum.SinkNotes)
	}
	db, err := results.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Diff(ctx, "revenue_hourly", "live", "v2", results.DiffOptions{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	january := count(`SELECT count(*) FROM revenue_hourly__v2`)
	if r.Differs || r.Old.Rows != january || r.New.Rows != january || r.Counts.Same != january || january == 0 {
		t.Fatalf("diff live v2 over January: differs %v, %d and %d rows, %+v; v2 holds %d", r.Differs, r.Old.Rows, r.New.Rows, r.Counts, january)
	}
	if _, err := db.Promote(ctx, "revenue_hourly", "v2", results.PromoteOptions{From: from, Cutover: to}); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM revenue_hourly`); n != liveRows {
		t.Errorf("after promote the view serves %d rows, want %d (each window once)", n, liveRows)
	}
	if n := count(`SELECT count(*) FROM revenue_hourly WHERE lineage LIKE '%;replay=v2@test'`); n != january {
		t.Errorf("%d rows served from v2, want January's %d", n, january)
	}
	if _, err := db.Rollback(ctx, "revenue_hourly", "v2"); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM revenue_hourly WHERE lineage LIKE '%;replay=%'`); n != 0 {
		t.Errorf("after rollback %d rows come from a backfill", n)
	}
}

// TestOnlineRetailSideOutputTables: late, quarantine and conflict records
// into SQLite and PostgreSQL tables, with checkpoints (exactly once), hold
// exactly the records the jsonl files of the same run hold, in the same
// order (seq), with the typed columns taken from them.
func TestOnlineRetailSideOutputTables(t *testing.T) {
	data := datatest.Dir(t)
	dsn, schema := pgtest.Schema(t)
	var jsonlDir string
	withTables := func(p *spec.Pipeline, out string) {
		p.Checkpoint = &spec.Checkpoint{Dir: filepath.Join(out, "ck"), Interval: spec.Duration(50 * time.Millisecond), Retain: 2}
		p.Late.Sink = &spec.Sink{Type: "sqlite", Path: filepath.Join(out, "side.db"), Table: "late"}
		p.Quarantine.Sink = &spec.Sink{Type: "postgres", DSN: dsn, Table: schema + ".quarantine"}
		p.Conflicts.Sink = &spec.Sink{Type: "sqlite", Path: filepath.Join(out, "side.db"), Table: "conflicts"}
	}
	jsonlDir, _ = runExample(t, data, nil)
	out, sum := runExample(t, data, func(p *spec.Pipeline) { withTables(p, filepath.Dir(p.Sinks[0].Path)) })
	if sum.Checkpoints.Taken < 2 {
		t.Fatalf("%d checkpoints taken: the test wants several", sum.Checkpoints.Taken)
	}
	side, err := sql.Open("sqlite", filepath.Join(out, "side.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	records := func(t *testing.T, q func(string) (*sql.Rows, error), table, kind string) []string {
		t.Helper()
		rows, err := q(`SELECT seq, kind, record FROM ` + table + ` ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var recs []string
		for rows.Next() {
			var seq int64
			var k, rec string
			if err := rows.Scan(&seq, &k, &rec); err != nil {
				t.Fatal(err)
			}
			if k != kind || seq != int64(len(recs)+1) {
				t.Fatalf("%s: record %d has seq %d, kind %s", table, len(recs)+1, seq, k)
			}
			recs = append(recs, rec)
		}
		return recs
	}
	lines := func(file string) []string {
		b, err := os.ReadFile(filepath.Join(jsonlDir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	sqliteQ := func(q string) (*sql.Rows, error) { return side.Query(q) }
	for _, c := range []struct {
		table, kind, file string
		q                 func(string) (*sql.Rows, error)
	}{
		{"late", "late", "late.jsonl", sqliteQ},
		{"conflicts", "conflict", "conflicts.jsonl", sqliteQ},
	} {
		got, want := records(t, c.q, c.table, c.kind), lines(c.file)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %d records, the jsonl file of the same input %d, or they differ", c.table, len(got), len(want))
		}
	}
	if got := int64(len(lines("late.jsonl"))); got != sum.Stages[0].TooLateSideOutput {
		t.Errorf("late records %d, summary %d", got, sum.Stages[0].TooLateSideOutput)
	}
	// PostgreSQL keeps the record as json text exactly.
	want := lines("quarantine.jsonl")
	got := strings.Split(strings.TrimSuffix(pgtest.Dump(t, dsn, `SELECT record FROM "`+schema+`".quarantine ORDER BY seq`), "\n"), "\n")
	if int64(len(got)) != sum.Quarantined || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("quarantine table: %d records (summary %d), or they differ from the jsonl file's %d", len(got), sum.Quarantined, len(want))
	}
	if n := pgtest.Dump(t, dsn, `SELECT count(*) FROM "`+schema+`".quarantine WHERE reason IS NULL OR source IS NULL OR stage IS NULL OR checkpoint_id IS NULL`); n != "0\n" {
		t.Errorf("quarantine rows without their typed columns: %s", n)
	}
}
