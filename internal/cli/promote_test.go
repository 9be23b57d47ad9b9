package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPromoteSeptember: the walk-through of docs/reprocessing.md. The
// live table serves first (the live pipeline's first run made the serving
// view: promoting live again changes nothing); a backfill of September into v2 is promoted
// for September only (--from, --cutover): the view serves September from
// v2 and the rest from the live table, 100,000,000 for September and not
// the doubled 200,000,000 of an appended replay; rollback serves the live
// table again.
func TestPromoteSeptember(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		bf := livePipeline(t, r, "")
		if got, want := r.rows(t, "revenue_minute"), r.rows(t, "revenue_minute__live"); got != want || got == "" {
			t.Errorf("the serving view after the first run:\n%s\nwant the live table:\n%s", got, want)
		}
		out := mustRun(t, 0, "promote", "--db", r.db, r.table, "live")
		if got := r.clean(out); got != "revenue_minute already serves this (promotion 1): live (all windows); nothing changed\n" {
			t.Errorf("promote live:\n%s", got)
		}
		mustRun(t, 0, "backfill", "--quiet", bf, "--from", september, "--to", october, "--result-version", "v2")
		mustRun(t, 0, "diff", "--db", r.db, "--table", r.table, "--from", september, "--to", october, "live", "v2")
		out = mustRun(t, 0, "promote", "--db", r.db, r.table, "v2", "--from", september, "--cutover", october)
		want := "revenue_minute: promoted v2 (promotion 2)\n" +
			"  serving: live (window_start < 2026-09-01T00:00:00+09:00), v2 (2026-09-01T00:00:00+09:00 <= window_start < 2026-10-01T00:00:00+09:00), live (window_start >= 2026-10-01T00:00:00+09:00)\n" +
			"  undo:    tidemark promote --db DATABASE revenue_minute --rollback\n"
		// The database as given (a SQLite path), or "DSN" (a PostgreSQL
		// DSN may hold a password).
		out = strings.Replace(strings.Replace(out, "--db "+r.db+" ", "--db DATABASE ", 1), "--db DSN ", "--db DATABASE ", 1)
		if got := r.clean(out); got != want {
			t.Errorf("promote v2:\n%s\nwant\n%s", got, want)
		}
		served := `2026-09-01 10:00:00 | S1 | 40000000 | 2 | backfill
2026-09-15 14:30:00 | S2 | 27000000 | 2 | backfill
2026-09-20 09:00:00 | S2 | 3000000 | 2 | backfill
2026-09-30 23:59:00 | S3 | 30000000 | 1 | backfill
2026-10-01 00:00:00 | S1 | 1000000 | 1 | live
2026-10-01 00:01:00 | S2 | 500000 | 1 | live
`
		if got := r.rows(t, "revenue_minute"); got != served {
			t.Errorf("served after promote v2:\n%s\nwant\n%s", got, served)
		}
		// Promoting the same again changes nothing.
		out = mustRun(t, 0, "promote", "--db", r.db, r.table, "v2", "--from", september, "--cutover", october)
		if !strings.Contains(out, "already serves this (promotion 2)") {
			t.Errorf("promote v2 again:\n%s", out)
		}
		out = mustRun(t, 0, "promote", "--db", r.db, r.table, "--rollback", "v2")
		if got := regexp.MustCompile(`\(v2, [^)]*\)`).ReplaceAllString(r.clean(out), "(v2, T)"); got !=
			"revenue_minute: rolled back promotion 2 (v2, T)\n  serving again (promotion 1): live (all windows)\n" {
			t.Errorf("rollback:\n%s", got)
		}
		if got, want := r.rows(t, "revenue_minute"), r.rows(t, "revenue_minute__live"); got != want {
			t.Errorf("served after rollback:\n%s\nwant the live table:\n%s", got, want)
		}
		out = mustRun(t, 0, "promote", "--db", r.db, r.table, "--history")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "id  promoted_at") ||
			!regexp.MustCompile(`^1 .* live +live \(all windows\) +-$`).MatchString(lines[1]) ||
			!regexp.MustCompile(`^2 .* v2 +live \(window_start < .*\), v2 \(.*\), live \(.*\) +\d{4}-`).MatchString(lines[2]) {
			t.Errorf("history:\n%s", out)
		}
		// Nothing is left to roll back: promotion 1 made the view.
		code, _, errOut := run(t, "promote", "--db", r.db, r.table, "--rollback")
		if code != 1 || !strings.Contains(errOut, "nothing to roll back: promotion 1 (live) made the view") {
			t.Errorf("rollback of the first promotion: exit %d, %s", code, errOut)
		}
	})
}

// TestPromoteCutover: the Lambda boundary over a rule change. v2
// (cancelled orders excluded) serves windows starting before the cutover
// T, the live table those starting at or after T. With T = 09:00:30, S2's
// window 09:00–09:01 straddles T and comes wholly from v2 (its start is
// before T): 1,000,000, not the live 3,000,000, and not both. With
// T = 09:00:00 that window starts at T and comes from the live table.
func TestPromoteCutover(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		bf := livePipeline(t, r, `filter: status != "cancelled"`)
		mustRun(t, 0, "backfill", "--quiet", bf, "--from", september, "--to", october, "--result-version", "v2")
		// A cutover needs a view to keep serving the windows after it.
		view := `"revenue_minute"`
		if r.schema != "" {
			view = `"` + r.schema + `".` + view
		}
		r.exec(t, "DROP VIEW "+view, "DELETE FROM "+strings.Replace(view, "revenue_minute", "tidemark_promotions", 1))
		code, _, errOut := run(t, "promote", "--db", r.db, r.table, "v2", "--cutover", "2026-09-20T09:00:30+09:00")
		if code != 1 || !strings.Contains(errOut, "serves nothing yet") {
			t.Errorf("cutover before any promotion: exit %d, %s", code, errOut)
		}
		mustRun(t, 0, "promote", "--db", r.db, r.table, "live")
		mustRun(t, 0, "promote", "--db", r.db, r.table, "v2", "--cutover", "2026-09-20T09:00:30+09:00")
		want := `2026-09-01 10:00:00 | S1 | 40000000 | 2 | backfill
2026-09-15 14:30:00 | S2 | 22000000 | 1 | backfill
2026-09-20 09:00:00 | S2 | 1000000 | 1 | backfill
2026-09-30 23:59:00 | S3 | 30000000 | 1 | live
2026-10-01 00:00:00 | S1 | 1000000 | 1 | live
2026-10-01 00:01:00 | S2 | 500000 | 1 | live
`
		if got := r.rows(t, "revenue_minute"); got != want {
			t.Errorf("cutover 09:00:30 (a window straddles it):\n%s\nwant\n%s", got, want)
		}
		// The same boundary in UTC is the same instant.
		out := mustRun(t, 0, "promote", "--db", r.db, r.table, "v2", "--cutover", "2026-09-20T00:00:30Z")
		if !strings.Contains(out, "already serves this (promotion 3)") { // 1, made by the run, was deleted above
			t.Errorf("the cutover in UTC:\n%s", out)
		}
		mustRun(t, 0, "promote", "--db", r.db, r.table, "v2", "--cutover", "2026-09-20T09:00:00+09:00")
		want = `2026-09-01 10:00:00 | S1 | 40000000 | 2 | backfill
2026-09-15 14:30:00 | S2 | 22000000 | 1 | backfill
2026-09-20 09:00:00 | S2 | 3000000 | 2 | live
2026-09-30 23:59:00 | S3 | 30000000 | 1 | live
2026-10-01 00:00:00 | S1 | 1000000 | 1 | live
2026-10-01 00:01:00 | S2 | 500000 | 1 | live
`
		if got := r.rows(t, "revenue_minute"); got != want {
			t.Errorf("cutover 09:00:00 (a window starts at it):\n%s\nwant\n%s", got, want)
		}
		// Rolling back walks back through the promotions.
		mustRun(t, 0, "promote", "--db", r.db, r.table, "--rollback")
		if got := r.rows(t, "revenue_minute"); !strings.Contains(got, "2026-09-20 09:00:00 | S2 | 1000000 | 1 | backfill\n") {
			t.Errorf("after one rollback:\n%s", got)
		}
		mustRun(t, 0, "promote", "--db", r.db, r.table, "--rollback")
		if got, live := r.rows(t, "revenue_minute"), r.rows(t, "revenue_minute__live"); got != live {
			t.Errorf("after two rollbacks:\n%s\nwant\n%s", got, live)
		}
	})
}

// TestPromoteGuards: a missing version, a version with other columns, a
// serving name that is a table, and usage errors change nothing.
func TestPromoteGuards(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		livePipeline(t, r, "")
		mustRun(t, 0, "promote", "--db", r.db, r.table, "live")
		// v3 computes one more aggregate.
		all := slices.Concat(septemberEvents, octoberEvents)
		mustRun(t, 0, "run", "--quiet", pipeline(t, r, "v3", all, "revenue_minute__v3", ""))
		q := `"revenue_minute__v3"`
		if r.schema != "" {
			q = `"` + r.schema + `".` + q
		}
		r.exec(t, "ALTER TABLE "+q+" ADD COLUMN refunds TEXT")
		for _, c := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"v9"}, 1, "no table revenue_minute__v9 (version v9); versions present: live, v3"},
			{[]string{"v3"}, 1, "revenue_minute__v3 has other columns than the serving view revenue_minute: extra columns refunds"},
			{[]string{"v3", "--cutover", "2026-10-01"}, 2, "--cutover \"2026-10-01\": want an RFC 3339 instant with an offset"},
			{[]string{"v3", "--from", october, "--cutover", september}, 2, "is not before --cutover"},
			{[]string{"v3", "--rollback", "--history"}, 2, "--rollback and --history exclude each other"},
			{[]string{"--rollback", "--cutover", october}, 2, "--cutover and --from apply to a promotion"},
			{[]string{"-v"}, 2, "unknown shorthand flag"},
			{nil, 2, "accepts 2 arg(s), received 1"},
		} {
			args := append([]string{"promote", "--db", r.db, r.table}, c.args...)
			code, _, errOut := run(t, args...)
			if code != c.code || !strings.Contains(r.clean(errOut), c.msg) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
			}
		}
		if got, live := r.rows(t, "revenue_minute"), r.rows(t, "revenue_minute__live"); got != live {
			t.Errorf("a refused promotion changed the view:\n%s", got)
		}
		// The serving name is the live pipeline's table, as before the
		// versioning convention.
		mustRun(t, 0, "run", "--quiet", pipeline(t, r, "old", all, "orders", ""))
		table := strings.Replace(r.table, "revenue_minute", "orders", 1)
		code, _, errOut := run(t, "promote", "--db", r.db, table, "v2")
		if code != 1 || !strings.Contains(r.clean(errOut), "orders is a table, not a view: rename it to a version (orders__live)") {
			t.Errorf("serving name is a table: exit %d, %s", code, errOut)
		}
		// The move to the convention (docs/reprocessing.md): rename the
		// table, a view by hand in its place, then promote replaces it.
		qual := func(n string) string {
			if r.schema == "" {
				return `"` + n + `"`
			}
			return `"` + r.schema + `"."` + n + `"`
		}
		r.exec(t, "ALTER TABLE "+qual("orders")+" RENAME TO \"orders__live\"",
			"CREATE VIEW "+qual("orders")+" AS SELECT * FROM "+qual("orders__live"))
		before := r.rows(t, "orders")
		mustRun(t, 0, "promote", "--db", r.db, table, "live")
		if got := r.rows(t, "orders"); got != before || !strings.Contains(got, "2026-10-01 00:01:00 | S2 | 500000 | 1 | live") {
			t.Errorf("orders after promote live:\n%s\nwant\n%s", got, before)
		}
		// Rolling back restores the hand-made view.
		mustRun(t, 0, "promote", "--db", r.db, table, "--rollback")
		if got := r.rows(t, "orders"); got != before {
			t.Errorf("orders after rollback:\n%s", got)
		}
	})
}

// TestRunAndTheServingView: the live pipeline's first run makes the
// serving view and says so; its next run empties the table it created and
// says how many rows it removed; a run that would replace the table (a
// changed aggregate, replace: true) while the promoted view reads it is
// refused naming the view and what to do — not a raw SQLSTATE 2BP01 —,
// and the table and view are left as they were.
func TestRunAndTheServingView(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		all := slices.Concat(septemberEvents, octoberEvents)
		live := pipeline(t, r, "live", all, "revenue_minute__live", "")
		out := mustRun(t, 0, "run", live)
		table, view := "revenue_minute__live", "revenue_minute"
		if r.schema != "" {
			table, view = r.schema+"."+table, r.schema+"."+view
		}
		if want := "  note: revenue_minute: sinks[0]: created the serving view " + view + ", which reads " + table + " (promotion 1): readers query " + view + ", and tidemark promote switches it to another version\n"; !strings.Contains(out, want) {
			t.Errorf("first run's summary lacks %q:\n%s", want, out)
		}
		out = mustRun(t, 0, "run", live)
		if want := "  note: revenue_minute: sinks[0]: emptied table " + table + ", which tidemark created, for this fresh start: 6 rows of earlier runs removed\n"; !strings.Contains(out, want) {
			t.Errorf("second run's summary lacks %q:\n%s", want, out)
		}
		served := r.rows(t, "revenue_minute")
		y, err := os.ReadFile(live)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(strings.Replace(string(y), "orders: count()", "orders: count(), top: max(amount)", 1), "table: ", "replace: true, table: ", 1)
		if err := os.WriteFile(live, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, "run", "--quiet", live)
		if code == 0 || strings.Contains(errOut, "2BP01") || !strings.Contains(errOut, "cannot be replaced: the view "+view) ||
			!strings.Contains(errOut, "Drop the view (DROP VIEW ") {
			t.Errorf("replace under a view: exit %d\n%s", code, errOut)
		}
		if got := r.rows(t, "revenue_minute"); got != served {
			t.Errorf("the view changed:\n%s\nwant\n%s", got, served)
		}
	})
}

// TestRunRefusesATableDroppedWhileDown: the pipeline's checkpoints say
// rows were committed to its table; the table (and its view) were dropped
// while it was down; the restart is an error naming the table, and does
// not create an empty one.
func TestRunRefusesATableDroppedWhileDown(t *testing.T) {
	resultDBs(t, func(t *testing.T, r *resultDB) {
		all := slices.Concat(septemberEvents, octoberEvents)
		live := pipeline(t, r, "live", all, "revenue_minute__live", "")
		y, err := os.ReadFile(live)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(live, append(y, "checkpoint: {dir: "+t.TempDir()+"}\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, 0, "run", "--quiet", live)
		view, table := `"revenue_minute"`, `"revenue_minute__live"`
		if r.schema != "" {
			view, table = `"`+r.schema+`".`+view, `"`+r.schema+`".`+table
		}
		r.exec(t, "DROP VIEW "+view, "DROP TABLE "+table)
		code, _, errOut := run(t, "run", "--quiet", live)
		if code == 0 || !strings.Contains(errOut, "does not exist") ||
			!strings.Contains(errOut, "but the run resumes from a checkpoint whose rows were committed to it (its commit marker in tidemark_commits records checkpoint ") ||
			!strings.Contains(errOut, "tidemark does not create it anew empty") {
			t.Errorf("restart: exit %d\n%s", code, errOut)
		}
		n := `SELECT count(*), '', '', 0, '' FROM sqlite_schema WHERE name = 'revenue_minute__live'`
		want := "0 |  |  | 0 | \n"
		if r.schema != "" {
			n = `SELECT count(*) FROM pg_class WHERE oid = to_regclass('` + table + `')`
			want = "0\n"
		}
		if got := r.dump(t, n); got != want {
			t.Errorf("the table was created again: %q", got)
		}
	})
}
