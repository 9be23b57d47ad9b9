package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// The articles' September: 100,000,000 won of orders in four one-minute
// windows of three stores; S2 has two cancelled orders (5,000,000 and
// 2,000,000). October is the live pipeline's present. Windows are one
// minute, Asia/Seoul.
var (
	septemberEvents = []string{
		`{"event_id":"e1","ts":"2026-09-01T10:00:10+09:00","store_id":"S1","status":"paid","amount":30000000}`,
		`{"event_id":"e2","ts":"2026-09-01T10:00:40+09:00","store_id":"S1","status":"paid","amount":10000000}`,
		`{"event_id":"e3","ts":"2026-09-15T14:30:00+09:00","store_id":"S2","status":"paid","amount":22000000}`,
		`{"event_id":"e4","ts":"2026-09-15T14:30:30+09:00","store_id":"S2","status":"cancelled","amount":5000000}`,
		`{"event_id":"e5","ts":"2026-09-20T09:00:10+09:00","store_id":"S2","status":"cancelled","amount":2000000}`,
		`{"event_id":"e6","ts":"2026-09-20T09:00:50+09:00","store_id":"S2","status":"paid","amount":1000000}`,
		`{"event_id":"e7","ts":"2026-09-30T23:59:30+09:00","store_id":"S3","status":"paid","amount":30000000}`,
	}
	octoberEvents = []string{
		`{"event_id":"e8","ts":"2026-10-01T00:00:20+09:00","store_id":"S1","status":"paid","amount":1000000}`,
		`{"event_id":"e9","ts":"2026-10-01T00:01:10+09:00","store_id":"S2","status":"cancelled","amount":500000}`,
	}
)

const (
	september = "2026-09-01T00:00:00+09:00"
	october   = "2026-10-01T00:00:00+09:00"
)

// resultDB is a database for the reprocessing scenarios: a SQLite file or
// a PostgreSQL schema.
type resultDB struct {
	name   string
	db     string // the --db argument
	table  string // the serving name, schema-qualified for PostgreSQL
	schema string // PostgreSQL's schema, "" for SQLite
	exec   func(t *testing.T, stmts ...string)
	dump   func(t *testing.T, query string) string
}

// sink is the YAML sink entry writing table (a name without schema).
func (r *resultDB) sink(table string) string {
	if r.name == "sqlite" {
		return fmt.Sprintf("{type: sqlite, path: %q, table: %s}", r.db, table)
	}
	return fmt.Sprintf("{type: postgres, dsn: %q, table: %s.%s}", r.db, r.schema, table)
}

// rows returns a table's or view's rows: window_start (Seoul), store_id,
// net_revenue, orders, and where the row comes from (its lineage: a
// backfill's replay, or live).
func (r *resultDB) rows(t *testing.T, name string) string {
	t.Helper()
	ws := `replace(substr(window_start, 1, 19), 'T', ' ')`
	q := `"` + name + `"`
	if r.name == "postgres" {
		ws = `to_char(window_start AT TIME ZONE 'Asia/Seoul', 'YYYY-MM-DD HH24:MI:SS')`
		q = `"` + r.schema + `".` + q
	}
	return r.dump(t, "SELECT "+ws+", store_id, net_revenue, orders, CASE WHEN lineage LIKE '%;replay=%' THEN 'backfill' ELSE 'live' END FROM "+q+" ORDER BY 1, 2")
}

// clean removes the PostgreSQL schema from output.
func (r *resultDB) clean(s string) string {
	if r.schema == "" {
		return s
	}
	return strings.ReplaceAll(s, r.schema+".", "")
}

// resultDBs runs fn against a fresh SQLite file and PostgreSQL schema.
func resultDBs(t *testing.T, fn func(t *testing.T, r *resultDB)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "results.db")
		open := func(t *testing.T) *sql.DB {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
		fn(t, &resultDB{name: "sqlite", db: path, table: "revenue_minute",
			exec: func(t *testing.T, stmts ...string) {
				t.Helper()
				db := open(t)
				defer db.Close()
				for _, s := range stmts {
					if _, err := db.Exec(s); err != nil {
						t.Fatalf("%s: %v", s, err)
					}
				}
			},
			dump: func(t *testing.T, query string) string {
				t.Helper()
				db := open(t)
				defer db.Close()
				rs, err := db.Query(query)
				if err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				defer rs.Close()
				var b strings.Builder
				for rs.Next() {
					var ws, store, net, src string
					var n int64
					if err := rs.Scan(&ws, &store, &net, &n, &src); err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&b, "%s | %s | %s | %d | %s\n", ws, store, net, n, src)
				}
				return b.String()
			},
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		fn(t, &resultDB{name: "postgres", db: dsn, table: schema + ".revenue_minute", schema: schema,
			exec: func(t *testing.T, stmts ...string) { t.Helper(); pgtest.Exec(t, dsn, stmts...) },
			dump: func(t *testing.T, query string) string { t.Helper(); return pgtest.Dump(t, dsn, query) },
		})
	})
}

// pipeline writes a pipeline over events into table and returns its path.
// rule is an extra top-level line (a filter) or "".
func pipeline(t *testing.T, r *resultDB, name string, events []string, table, rule string) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(events, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".yaml")
	y := fmt.Sprintf(`name: revenue_minute
source: {type: file, path: %q, schema: {amount: decimal}}
event_time: {field: ts}
%s
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
allowed_lateness: 2000h
aggregates: {net_revenue: sum(amount), orders: count()}
emit: {mode: final}
sinks: [%s]
`, in, rule, r.sink(table))
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustRun runs tidemark and fails the test unless it exits with code.
func mustRun(t *testing.T, code int, args ...string) string {
	t.Helper()
	got, out, errOut := run(t, args...)
	if got != code {
		t.Fatalf("tidemark %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out, errOut)
	}
	return out
}

// livePipeline runs the live pipeline (old rule: cancelled orders count)
// over September and October into revenue_minute__live, and returns the
// pipeline used by backfills, whose sink names the serving table.
func livePipeline(t *testing.T, r *resultDB, rule string) (backfill string) {
	t.Helper()
	all := slices.Concat(septemberEvents, octoberEvents)
	mustRun(t, 0, "run", "--quiet", pipeline(t, r, "live", all, "revenue_minute__live", ""))
	return pipeline(t, r, "backfill", all, "revenue_minute", rule)
}

// TestDiffSeptemberDoubleCount is the articles' chapter 27 at the table
// level: September's replay appended to the existing totals doubles them
// (100,000,000 → 200,000,000); diff shows exactly the doubled rows. The
// recomputation into v2 (tidemark backfill) agrees with the live result
// over September; October is only in the live table.
func TestDiffSeptemberDoubleCount(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		bf := livePipeline(t, r, "")
		// The replay appended: September delivered again into the totals.
		appended := slices.Concat(septemberEvents, octoberEvents, septemberEvents)
		mustRun(t, 0, "run", "--quiet", pipeline(t, r, "appended", appended, "revenue_minute__appended", ""))
		out := mustRun(t, 1, "diff", "--db", r.db, "--table", r.table, "--timezone", "Asia/Seoul",
			"--from", september, "--to", october, "live", "appended")
		want := `revenue_minute: live (revenue_minute__live, 4 rows) -> appended (revenue_minute__appended, 4 rows)
key: window_start, store_id; values: window_end, net_revenue, orders; tolerance 0
windows: 2026-09-01T00:00:00+09:00 <= window_start < 2026-10-01T00:00:00+09:00

changed: 4 rows
  window_start=2026-09-01T10:00:00+09:00 store_id=S1
    column       live      appended  difference
    net_revenue  40000000  80000000  40000000
    orders       2         4         2
  window_start=2026-09-15T14:30:00+09:00 store_id=S2
    column       live      appended  difference
    net_revenue  27000000  54000000  27000000
    orders       2         4         2
  window_start=2026-09-20T09:00:00+09:00 store_id=S2
    column       live     appended  difference
    net_revenue  3000000  6000000   3000000
    orders       2        4         2
  window_start=2026-09-30T23:59:00+09:00 store_id=S3
    column       live      appended  difference
    net_revenue  30000000  60000000  30000000
    orders       1         2         1

totals per key value:
  key          column       live      appended  difference
  store_id=S1  rows         1         1         0
               net_revenue  40000000  80000000  40000000
               orders       2         4         2
  store_id=S2  rows         2         2         0
               net_revenue  30000000  60000000  30000000
               orders       4         8         4
  store_id=S3  rows         1         1         0
               net_revenue  30000000  60000000  30000000
               orders       1         2         1

totals over all rows compared:
  column       live       appended   difference
  rows         4          4          0
  net_revenue  100000000  200000000  100000000
  orders       7          14         7

live and appended differ: 0 rows only in live, 0 only in appended, 4 changed beyond the tolerance 0, 0 within it, 0 the same
`
		if got := r.clean(out); got != want {
			t.Errorf("diff live appended:\n%s\nwant\n%s", got, want)
		}
		// --max-rows cuts the lists and says so, the totals per key value
		// too (S1, S2 and S3 differ; one is listed).
		out = mustRun(t, 1, "diff", "--db", r.db, "--table", r.table, "--timezone", "Asia/Seoul",
			"--from", september, "--to", october, "--max-rows", "1", "live", "appended")
		for _, s := range []string{
			"\nchanged: 4 rows\n  window_start=2026-09-01T10:00:00+09:00 store_id=S1\n",
			"    orders       2         4         2\n  ... 3 more (--max-rows)\n",
			"\ntotals per key value:\n  key          column       live      appended  difference\n  store_id=S1  rows         1         1         0\n" +
				"               net_revenue  40000000  80000000  40000000\n               orders       2         4         2\n" +
				"  ... 2 more key values not listed (--max-rows; 0 lists all)\n\ntotals over all rows compared:\n",
		} {
			if !strings.Contains(r.clean(out), s) {
				t.Errorf("diff --max-rows 1 lacks %q:\n%s", s, out)
			}
		}
		// The recomputation: a backfill of September into v2.
		mustRun(t, 0, "backfill", "--quiet", bf, "--from", september, "--to", october, "--result-version", "v2")
		out = mustRun(t, 0, "diff", "--db", r.db, "--table", r.table, "--from", september, "--to", october, "live", "v2")
		if !strings.HasSuffix(out, "\nlive and v2 agree: 4 rows the same\n") {
			t.Errorf("diff live v2 over September:\n%s", out)
		}
		// Over all windows, October is only in the live table.
		out = mustRun(t, 1, "diff", "--db", r.db, "--table", r.table, "--timezone", "Asia/Seoul", "live", "v2")
		for _, s := range []string{
			"\nonly in live: 2 rows\n  window_start=2026-10-01T00:00:00+09:00 store_id=S1: window_end=2026-10-01T00:01:00+09:00 net_revenue=1000000 orders=1\n" +
				"  window_start=2026-10-01T00:01:00+09:00 store_id=S2: window_end=2026-10-01T00:02:00+09:00 net_revenue=500000 orders=1\n",
			"\nlive and v2 differ: 2 rows only in live, 0 only in v2, 0 changed beyond the tolerance 0, 0 within it, 4 the same\n",
		} {
			if !strings.Contains(out, s) {
				t.Errorf("diff live v2 lacks %q:\n%s", s, out)
			}
		}
	})
}

// TestDiffRuleChange: v2 recomputes September with a new rule (cancelled
// orders are not revenue). The diff shows exactly S2's two windows with a
// cancelled order, by exactly the excluded amounts; the tolerance decides
// the exit status; --format json gives one object of arrays.
func TestDiffRuleChange(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		bf := livePipeline(t, r, `filter: status != "cancelled"`)
		mustRun(t, 0, "backfill", "--quiet", bf, "--from", september, "--to", october, "--result-version", "v2")
		args := []string{"diff", "--db", r.db, "--table", r.table, "--timezone", "Asia/Seoul", "--from", september, "--to", october, "--format", "json", "live", "v2"}
		out := mustRun(t, 1, args...)
		var rep map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		var keys []string
		for k := range rep {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if got := strings.Join(keys, " "); got != "changed columns_only_in_new columns_only_in_old counts differs from ignored_columns key_columns new numeric_columns old only_in_new only_in_old overall table to tolerance totals value_columns" {
			t.Errorf("JSON keys: %s", got)
		}
		for k, want := range map[string]string{
			"old":                 `{"version":"live","table":"revenue_minute__live","rows":4}`,
			"new":                 `{"version":"v2","table":"revenue_minute__v2","rows":4}`,
			"key_columns":         `["window_start","store_id"]`,
			"value_columns":       `["window_end","net_revenue","orders"]`,
			"numeric_columns":     `["net_revenue","orders"]`,
			"ignored_columns":     `["lineage","version","is_final","watermark_at","updated_at"]`,
			"columns_only_in_old": `[]`,
			"columns_only_in_new": `[]`,
			"tolerance":           `"0"`,
			"from":                `"2026-09-01T00:00:00+09:00"`,
			"to":                  `"2026-10-01T00:00:00+09:00"`,
			"only_in_old":         `[]`,
			"only_in_new":         `[]`,
			"changed": `[{"key":{"window_start":"2026-09-15T14:30:00+09:00","store_id":"S2"},"columns":[` +
				`{"column":"net_revenue","old":"27000000","new":"22000000","difference":"-5000000","within_tolerance":false},` +
				`{"column":"orders","old":"2","new":"1","difference":"-1","within_tolerance":false}],"within_tolerance":false},` +
				`{"key":{"window_start":"2026-09-20T09:00:00+09:00","store_id":"S2"},"columns":[` +
				`{"column":"net_revenue","old":"3000000","new":"1000000","difference":"-2000000","within_tolerance":false},` +
				`{"column":"orders","old":"2","new":"1","difference":"-1","within_tolerance":false}],"within_tolerance":false}]`,
			"totals": `[{"column":"store_id","value":"S2","old_rows":2,"new_rows":2,"sums":[` +
				`{"column":"net_revenue","old":"30000000","new":"23000000","difference":"-7000000"},` +
				`{"column":"orders","old":"4","new":"2","difference":"-2"}],"differs":true}]`,
			"overall": `{"old_rows":4,"new_rows":4,"sums":[` +
				`{"column":"net_revenue","old":"100000000","new":"93000000","difference":"-7000000"},` +
				`{"column":"orders","old":"7","new":"5","difference":"-2"}]}`,
			"counts":  `{"same":2,"only_in_old":0,"only_in_new":0,"changed":2,"within_tolerance":0,"key_totals":1,"truncated":false}`,
			"differs": `true`,
		} {
			var v any
			json.Unmarshal(rep[k], &v)
			got, _ := json.Marshal(v)
			var w any
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			wantNorm, _ := json.Marshal(w)
			if k == "old" || k == "new" {
				got = []byte(r.clean(string(got)))
			}
			if string(got) != string(wantNorm) {
				t.Errorf("%s:\n%s\nwant\n%s", k, got, wantNorm)
			}
		}
		// Tolerance: 5,000,000 accepts both differences (absolute, per
		// value); 4,999,999 accepts the 2,000,000 but not the 5,000,000.
		out = mustRun(t, 0, "diff", "--db", r.db, "--table", r.table, "--from", september, "--to", october, "--tolerance", "5000000", "live", "v2")
		if !strings.HasSuffix(out, "\nlive and v2 agree: 2 rows the same, 2 rows within the tolerance 5000000\n") || !strings.Contains(out, "\nwithin the tolerance 5000000: 2 rows\n") {
			t.Errorf("tolerance 5000000:\n%s", out)
		}
		out = mustRun(t, 1, "diff", "--db", r.db, "--table", r.table, "--from", september, "--to", october, "--tolerance", "4999999.99", "--format", "json", "live", "v2")
		if !strings.Contains(out, `"changed": 1,`) || !strings.Contains(out, `"within_tolerance": 1,`) {
			t.Errorf("tolerance 4999999.99:\n%s", out)
		}
	})
}

// TestDiffUsage: usage errors and tables that cannot be compared exit 2.
func TestDiffUsage(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	os.WriteFile(db, nil, 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"diff", "--table", "t", "v1", "v2"}, "--db and --table are required"},
		{[]string{"diff", "--db", db, "--table", "t", "v1"}, "accepts 2 arg(s)"},
		{[]string{"diff", "--db", db, "--table", "t", "--format", "xml", "v1", "v2"}, `--format "xml"`},
		{[]string{"diff", "--db", db, "--table", "t", "--tolerance", "-1", "v1", "v2"}, `--tolerance "-1"`},
		{[]string{"diff", "--db", db, "--table", "t", "--from", "2026-09-01T00:00:00", "v1", "v2"}, "with an offset"},
		{[]string{"diff", "--db", db, "--table", "t", "v1", "v-2"}, `version "v-2"`},
		{[]string{"diff", "--db", db, "--table", "t__v1", "v1", "v2"}, `names version "v1"`},
		{[]string{"diff", "--db", db, "--table", "t", "v1", "v2"}, "no table t__v1 (version v1); versions present: none"},
		{[]string{"diff", "--db", filepath.Join(dir, "missing.db"), "--table", "t", "v1", "v2"}, "no such file"},
		{[]string{"diff", "--db", "sqlite://" + db, "--table", "t", "v1", "v2"}, "no table t__v1"},
		{[]string{"diff", "--db", "postgres://[::1", "--table", "t", "v1", "v2"}, "postgres: invalid connection URL"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.msg)
		}
	}
}
