package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tableRows returns a SQLite table's (window_start, store, revenue, n) rows.
func tableRows(t *testing.T, db, table string) string {
	t.Helper()
	d, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.Query(`SELECT window_start, store, revenue, n FROM "` + table + `" ORDER BY window_start, store`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var ws, store, rev string
		var n int64
		if err := rows.Scan(&ws, &store, &rev, &n); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s %d\n", ws, store, rev, n)
	}
	return b.String()
}

// TestBackfillRecomputesIntoAVersion is the articles' September scenario:
// the live table v1 counted a replay of September on top of the first
// delivery (no dedup: every September payment twice); a backfill of
// September into v2 with the pipeline's dedup recomputes it from the
// events, writing revenue__v2 and leaving the live table as it was; events
// outside the range are skipped; running the backfill again gives the
// same table.
func TestBackfillRecomputesIntoAVersion(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	add := func(id, ts, store string, amount int) {
		lines = append(lines, fmt.Sprintf(`{"event_id":%q,"ts":%q,"store":%q,"amount":%d}`, id, ts, store, amount))
	}
	add("e1", "2026-08-31T23:59:00+09:00", "s1", 7) // August: outside the range
	add("e100", "2026-09-01T10:00:10+09:00", "s1", 25000)
	add("e101", "2026-09-01T10:00:20+09:00", "s1", -5000)
	add("e102", "2026-09-02T11:00:00+09:00", "s2", 1000)
	add("e2", "2026-10-01T00:00:00+09:00", "s1", 9) // October: outside
	first := strings.Join(lines, "\n") + "\n"
	// The replay: September delivered again, appended to the input.
	replay := strings.Join(lines[1:4], "\n") + "\n"
	in := filepath.Join(dir, "events.jsonl")
	os.WriteFile(in, []byte(first+replay), 0o644)
	db := filepath.Join(dir, "out.db")
	live := fmt.Sprintf(`name: revenue
source: {type: file, path: %s, schema: {amount: decimal}}
event_time: {field: ts}
key: [store]
window: {type: tumbling, size: 24h, timezone: Asia/Seoul}
allowed_lateness: 2000h
aggregates: {revenue: sum(amount), n: count()}
emit: {mode: final}
sinks: [{type: sqlite, path: %s, table: revenue__live}]
`, in, db)
	p := filepath.Join(dir, "live.yaml")
	os.WriteFile(p, []byte(live), 0o644)
	if code, _, errOut := run(t, "run", "--quiet", p); code != 0 {
		t.Fatalf("live run: %s", errOut)
	}
	wrong := "2026-08-31T00:00:00+09:00 s1 7 1\n2026-09-01T00:00:00+09:00 s1 40000 4\n2026-09-02T00:00:00+09:00 s2 2000 2\n2026-10-01T00:00:00+09:00 s1 9 1\n"
	if got := tableRows(t, db, "revenue__live"); got != wrong {
		t.Fatalf("live table (the replay appended):\n%s\nwant\n%s", got, wrong)
	}
	// The fixed pipeline deduplicates by event id.
	fixed := strings.Replace(live, "event_time: {field: ts}", "event_time: {field: ts}\ndedup: {key: event_id, ttl: 48h}", 1)
	os.WriteFile(p, []byte(fixed), 0o644)
	want := "2026-09-01T00:00:00+09:00 s1 20000 2\n2026-09-02T00:00:00+09:00 s2 1000 1\n"
	for i := range 2 {
		code, stdout, errOut := run(t, "backfill", p, "--from", "2026-09-01T00:00:00+09:00", "--to", "2026-10-01T00:00:00+09:00", "--result-version", "v2")
		if code != 0 {
			t.Fatalf("backfill %d: code %d: %s", i, code, errOut)
		}
		for _, s := range []string{"pipeline revenue__backfill_v2", "outside the range               2", "duplicates                      3", "into result version v2"} {
			if !strings.Contains(stdout, s) {
				t.Errorf("backfill %d summary lacks %q:\n%s", i, s, stdout)
			}
		}
		if got := tableRows(t, db, "revenue__v2"); got != want {
			t.Errorf("backfill %d: revenue__v2:\n%s\nwant\n%s", i, got, want)
		}
	}
	if got := tableRows(t, db, "revenue__live"); got != wrong {
		t.Errorf("the backfill changed the live table:\n%s", got)
	}
	for _, bad := range [][]string{
		{"--result-version", "live"},
		{"--result-version", "V 2"},
		{"--result-version", "LIVE"}, // SQLite table names ignore case
		{"--result-version", "V2"},
		{"--result-version", "2x"},
	} {
		args := append([]string{"backfill", p, "--from", "2026-09-01T00:00:00+09:00", "--to", "2026-10-01T00:00:00+09:00"}, bad...)
		if code, _, errOut := run(t, args...); code != 2 || !strings.Contains(errOut, "--result-version") {
			t.Errorf("%v: code %d, %s", bad, code, errOut)
		}
	}
	if code, _, errOut := run(t, "backfill", p, "--from", "2026-10-01T00:00:00+09:00", "--to", "2026-09-01T00:00:00+09:00", "--result-version", "v3"); code != 2 || !strings.Contains(errOut, "is not before") {
		t.Errorf("reversed range: code %d, %s", code, errOut)
	}
	// Once v2 serves September, recomputing v2 in place is refused: it
	// would change what readers see without a diff or a promote.
	for _, args := range [][]string{
		{"promote", "--db", db, "revenue", "live"},
		{"promote", "--db", db, "revenue", "v2", "--from", "2026-09-01T00:00:00+09:00", "--cutover", "2026-10-01T00:00:00+09:00"},
	} {
		if code, _, errOut := run(t, args...); code != 0 {
			t.Fatalf("%v: code %d: %s", args, code, errOut)
		}
	}
	code, _, errOut := run(t, "backfill", p, "--from", "2026-09-15T00:00:00+09:00", "--to", "2026-09-16T00:00:00+09:00", "--result-version", "v2")
	if code != 2 || !strings.Contains(errOut, "--result-version v2: revenue serves it") {
		t.Errorf("backfill into the served v2: code %d, %s", code, errOut)
	}
	if got := tableRows(t, db, "revenue__v2"); got != want {
		t.Errorf("the refused backfill changed revenue__v2:\n%s", got)
	}
}
