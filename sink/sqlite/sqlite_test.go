package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zones in tests do not depend on the machine

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

var revenue = changelog.Desc{
	Stage:    "revenue",
	Key:      []changelog.Column{{Name: "store", Kind: row.KindString}},
	Values:   []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "orders", Kind: row.KindInt}},
	Timezone: "Asia/Seoul",
}

func ms(t testing.TB, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

func dec(t testing.TB, s string) row.Value {
	t.Helper()
	d, err := row.ParseDecimal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return row.Dec(d)
}

// res builds a revenue row for the 10:00 (Seoul) window.
func res(t testing.TB, op changelog.Op, store row.Value, version uint64, amount string, orders int64) changelog.Row {
	return changelog.Row{
		Op:          op,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{store},
		Values:      []row.Value{dec(t, amount), row.Int(orders)},
		Version:     version,
		IsFinal:     false,
		WatermarkAt: ms(t, "2026-09-01T01:01:30Z"),
		UpdatedAt:   ms(t, "2026-09-01T01:01:31Z"),
	}
}

func newSink(t testing.TB, path, table string, d changelog.Desc) *Results {
	t.Helper()
	s, err := New(context.Background(), path, table, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func write(t testing.TB, s *Results, rows ...changelog.Row) {
	t.Helper()
	ctx := context.Background()
	if err := s.Write(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// dump returns the table's rows as text, one line per row ordered by
// primary key: each value as SQLite returns it, with its storage class
// for text ('20.00'), NULL for null.
func dump(t testing.TB, path, query string) string {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			switch v := v.(type) {
			case nil:
				b.WriteString("NULL")
			case string:
				fmt.Fprintf(&b, "'%s'", v)
			case []byte:
				fmt.Fprintf(&b, "'%s'", v)
			default:
				fmt.Fprint(&b, v)
			}
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const selectRevenue = `SELECT * FROM revenue ORDER BY window_start, store`

func check(t testing.TB, path, query, want string) {
	t.Helper()
	if got := dump(t, path, query); got != want {
		t.Fatalf("table\n%s\nwant\n%s", got, want)
	}
}

func TestUpsertGuardedByVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db", "out.db")
	s := newSink(t, path, "revenue", revenue)
	a := row.Str("s-1")

	write(t, s, res(t, changelog.Insert, a, 1, "20.00", 1))
	check(t, path, selectRevenue,
		"'2026-09-01T10:00:00+09:00' | '2026-09-01T10:01:00+09:00' | 's-1' | '20.00' | 1 | 1 | 0 | '2026-09-01T10:01:30+09:00' | '2026-09-01T10:01:31+09:00'\n")

	// A later version replaces the row; update_before is not applied.
	up := res(t, changelog.UpdateAfter, a, 2, "35.50", 2)
	up.IsFinal, up.WatermarkAt = true, changelog.WatermarkInfinity
	write(t, s, res(t, changelog.UpdateBefore, a, 7, "20.00", 1), up)
	want := "'2026-09-01T10:00:00+09:00' | '2026-09-01T10:01:00+09:00' | 's-1' | '35.50' | 2 | 2 | 1 | 'infinity' | '2026-09-01T10:01:31+09:00'\n"
	check(t, path, selectRevenue, want)

	// Replaying the older rows changes nothing.
	write(t, s, res(t, changelog.Insert, a, 1, "20.00", 1), res(t, changelog.UpdateAfter, a, 2, "99.99", 9))
	check(t, path, selectRevenue, want)

	check(t, path, `SELECT typeof(revenue), typeof(orders), typeof(version), typeof(is_final) FROM revenue`,
		"'text' | 'integer' | 'integer' | 'integer'\n")
}

func TestSameKeyInOneFlushAppliesInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "revenue", revenue)
	a, b := row.Str("a"), row.Str("b")
	write(t, s,
		res(t, changelog.Insert, a, 1, "1.0", 1),
		res(t, changelog.Insert, b, 1, "2.0", 1),
		res(t, changelog.UpdateAfter, a, 2, "1.5", 2),
		res(t, changelog.UpdateAfter, b, 3, "2.5", 3), // b: a lower version after a higher one
		res(t, changelog.UpdateAfter, b, 2, "2.2", 2),
	)
	check(t, path, `SELECT store, revenue, version FROM revenue ORDER BY store`,
		"'a' | '1.5' | 2\n'b' | '2.5' | 3\n")
}

func TestDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "revenue", revenue)
	a, b := row.Str("a"), row.Str("b")
	write(t, s, res(t, changelog.Insert, a, 1, "1.0", 1), res(t, changelog.Insert, b, 3, "2.0", 1))
	write(t, s,
		res(t, changelog.Delete, a, 2, "1.0", 1), // removes a (version 1 < 2)
		res(t, changelog.Delete, b, 3, "2.0", 1), // stale for b (version 3 is not < 3)
	)
	check(t, path, `SELECT store, version FROM revenue ORDER BY store`, "'b' | 3\n")

	// Insert, delete, insert again within one flush.
	write(t, s,
		res(t, changelog.Insert, a, 4, "7.00", 1),
		res(t, changelog.Delete, a, 5, "7.00", 1),
		res(t, changelog.Insert, a, 6, "8.00", 2),
	)
	check(t, path, `SELECT store, revenue, version FROM revenue ORDER BY store`, "'a' | '8.00' | 6\n'b' | '2.0' | 3\n")
}

func TestNullKeys(t *testing.T) {
	d := changelog.Desc{
		Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindInt}},
		Values: []changelog.Column{{Name: "n", Kind: row.KindInt}},
	}
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "t", d)
	r := func(op changelog.Op, store, region row.Value, version uint64, n int64) changelog.Row {
		return changelog.Row{Op: op, WindowStart: 0, WindowEnd: 60000, Key: []row.Value{store, region},
			Values: []row.Value{row.Int(n)}, Version: version, WatermarkAt: changelog.WatermarkNone, UpdatedAt: 0}
	}
	null, a, one := row.Null, row.Str("a"), row.Int(1)
	write(t, s,
		r(changelog.Insert, null, null, 1, 10),
		r(changelog.Insert, null, one, 1, 20),
		r(changelog.Insert, a, null, 1, 30),
		r(changelog.UpdateAfter, null, null, 2, 11), // same key as the first row
	)
	const q = `SELECT store, region, n, version, watermark_at FROM t ORDER BY store, region`
	check(t, path, q, "NULL | NULL | 11 | 2 | NULL\nNULL | 1 | 20 | 1 | NULL\n'a' | NULL | 30 | 1 | NULL\n")

	// Stale versions are ignored; a higher one updates; deletes match NULL.
	write(t, s,
		r(changelog.Insert, null, null, 1, 99),
		r(changelog.UpdateAfter, null, one, 2, 21),
		r(changelog.Delete, a, null, 2, 0),
		r(changelog.Delete, null, null, 2, 0), // stale: version 2 is not < 2
	)
	check(t, path, q, "NULL | NULL | 11 | 2 | NULL\nNULL | 1 | 21 | 2 | NULL\n")
	write(t, s, r(changelog.Delete, null, null, 3, 0))
	check(t, path, q, "NULL | 1 | 21 | 2 | NULL\n")
}

func TestReopenExistingTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s, err := New(ctx, path, "revenue", revenue)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1.00", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil { // Close flushes
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(ctx, nil); !errors.Is(err, sql.ErrConnDone) {
		t.Fatalf("Write after Close: %v", err)
	}

	s = newSink(t, path, "revenue", revenue)
	write(t, s, res(t, changelog.UpdateAfter, row.Str("a"), 2, "2.00", 2), res(t, changelog.Insert, row.Str("b"), 1, "3", 1))
	check(t, path, `SELECT store, revenue, version FROM revenue ORDER BY store`, "'a' | '2.00' | 2\n'b' | '3' | 1\n")
	check(t, path, `PRAGMA journal_mode`, "'wal'\n")
}

func TestSchemaMismatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "revenue", revenue)
	s.Close(ctx)

	other := changelog.Desc{
		Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindString}},
		Values: []changelog.Column{{Name: "revenue", Kind: row.KindInt}, {Name: "refunds", Kind: row.KindDecimal}},
	}
	_, err := New(ctx, path, "revenue", other)
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *SchemaError", err)
	}
	if fmt.Sprint(se.Missing, se.Extra, se.Types) != "[region refunds] [orders] [revenue: table has TEXT, sink needs INTEGER]" ||
		fmt.Sprint(se.PrimaryKey, se.WantKey) != "[window_start store] [window_start store region]" {
		t.Fatalf("got %+v", se)
	}
	for _, part := range []string{`table "revenue"`, "missing columns region, refunds", "extra columns orders"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q lacks %q", err, part)
		}
	}
	// Another table in the same file is fine.
	newSink(t, path, "revenue_v2", other)
}

func TestTimesDecimalsAndWatermark(t *testing.T) {
	d := changelog.Desc{
		Key:      []changelog.Column{{Name: "day", Kind: row.KindTime}, {Name: "vip", Kind: row.KindBool}},
		Values:   []changelog.Column{{Name: "amount", Kind: row.KindDecimal}, {Name: "last_seen", Kind: row.KindTime}},
		Timezone: "Asia/Seoul",
	}
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "t", d)
	r := changelog.Row{
		Op:          changelog.Insert,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:00:00.500Z"),
		Key:         []row.Value{row.Time(ms(t, "2026-08-31T15:00:00Z")), row.Bool(true)},
		Values:      []row.Value{dec(t, "20.00"), row.Time(ms(t, "2026-09-01T01:00:59.999Z"))},
		Version:     1,
		WatermarkAt: changelog.WatermarkInfinity,
		UpdatedAt:   ms(t, "2026-09-01T01:00:00Z"),
	}
	r2 := r
	r2.Key = []row.Value{row.Time(ms(t, "2026-08-31T15:00:00Z")), row.Bool(false)}
	r2.Values = []row.Value{row.Int(7), row.Null} // an int for a decimal column
	write(t, s, r, r2)
	check(t, path, `SELECT * FROM t ORDER BY vip`,
		"'2026-09-01T10:00:00+09:00' | '2026-09-01T10:00:00.500+09:00' | '2026-09-01T00:00:00+09:00' | 0 | '7' | NULL | 1 | 0 | 'infinity' | '2026-09-01T10:00:00+09:00'\n"+
			"'2026-09-01T10:00:00+09:00' | '2026-09-01T10:00:00.500+09:00' | '2026-09-01T00:00:00+09:00' | 1 | '20.00' | '2026-09-01T10:00:59.999+09:00' | 1 | 0 | 'infinity' | '2026-09-01T10:00:00+09:00'\n")
	check(t, path, `SELECT sql FROM sqlite_schema WHERE name = 't'`,
		`'CREATE TABLE "t" ("window_start" TEXT NOT NULL, "window_end" TEXT NOT NULL, "day" TEXT, "vip" INTEGER, "amount" TEXT, "last_seen" TEXT, `+
			`"version" INTEGER NOT NULL, "is_final" INTEGER NOT NULL, "watermark_at" TEXT, "updated_at" TEXT NOT NULL, PRIMARY KEY ("window_start", "day", "vip"))'`+"\n")
}

func TestWriteRejectsRowsThatDoNotFit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "revenue", revenue)
	good := res(t, changelog.Insert, row.Str("a"), 1, "1", 1)
	bad := res(t, changelog.Insert, row.Int(5), 1, "1", 1) // int for a string key
	if err := s.Write(ctx, []changelog.Row{good, bad}); err == nil || !strings.Contains(err.Error(), `column "store" is string, value is int`) {
		t.Fatalf("got %v", err)
	}
	short := good
	short.Values = short.Values[:1]
	if err := s.Write(ctx, []changelog.Row{short}); err == nil || !strings.Contains(err.Error(), "1 value columns") {
		t.Fatalf("got %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectRevenue, "") // the good row of the failed Write was not kept
}

func TestQuotedNamesAndOddPaths(t *testing.T) {
	d := changelog.Desc{
		Key:    []changelog.Column{{Name: `store "id"`, Kind: row.KindString}},
		Values: []changelog.Column{{Name: "select", Kind: row.KindInt}},
	}
	path := filepath.Join(t.TempDir(), "a dir?#%", "out put.db")
	s := newSink(t, path, `my "table"`, d)
	write(t, s, changelog.Row{Op: changelog.Insert, Key: []row.Value{row.Str("x")}, Values: []row.Value{row.Int(1)}, Version: 1})
	check(t, path, `SELECT "store ""id""", "select" FROM "my ""table"""`, "'x' | 1\n")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at its path: %v", err)
	}

	if _, err := New(context.Background(), path, "t", changelog.Desc{Values: []changelog.Column{{Name: "Version", Kind: row.KindInt}}}); err == nil ||
		!strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("column named like a bookkeeping column: %v", err)
	}
	if _, err := New(context.Background(), path, "t", changelog.Desc{Timezone: "Not/AZone"}); err == nil {
		t.Fatal("unknown zone: no error")
	}
}

// TestKeyLookupsUseThePrimaryKey: the IS comparisons of the NULL-key and
// delete statements still search the primary key index.
func TestKeyLookupsUseThePrimaryKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := newSink(t, path, "revenue", revenue)
	for _, q := range []string{deleteSQL("revenue", s.enc.cols, 1), nullUpdateSQL("revenue", s.enc.cols, 1)} {
		plan := dump(t, path, "EXPLAIN QUERY PLAN "+strings.ReplaceAll(q, "?", "NULL"))
		if !strings.Contains(plan, "USING INDEX sqlite_autoindex_revenue_1 (window_start=? AND store=?)") {
			t.Errorf("%s\nplan:\n%s", q, plan)
		}
	}
}

// TestReplaceOnFirstFlush: a sink opened with Fresh deletes the rows a
// previous run left (which its version guard would otherwise keep), in the
// transaction of its first flush — even when the new run emits no row.
func TestReplaceOnFirstFlush(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	d := changelog.Desc{Stage: "s", Key: []changelog.Column{{Name: "k", Kind: row.KindString}}, Values: []changelog.Column{{Name: "n", Kind: row.KindInt}}}
	write := func(o Options, n int64, version uint64) {
		t.Helper()
		r, err := NewWithOptions(ctx, path, "t", d, o)
		if err != nil {
			t.Fatal(err)
		}
		if n >= 0 {
			if err := r.Write(ctx, []changelog.Row{{Op: changelog.Insert, WindowStart: 0, WindowEnd: 60000, Key: []row.Value{row.Str("a")}, Values: []row.Value{row.Int(n)}, Version: version, IsFinal: true, UpdatedAt: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (int, string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var c int
		var n sql.NullString
		db.QueryRow(`SELECT count(*), max(n) FROM t`).Scan(&c, &n)
		return c, n.String
	}
	write(Options{}, 5, 3)
	write(Options{}, 7, 1) // a lower version: the guard keeps 5
	if c, n := count(); c != 1 || n != "5" {
		t.Fatalf("without replace: %d rows, n=%s; want 1, 5", c, n)
	}
	write(Options{Fresh: true}, 7, 1)
	if c, n := count(); c != 1 || n != "7" {
		t.Fatalf("with replace: %d rows, n=%s; want 1, 7", c, n)
	}
	write(Options{Fresh: true}, -1, 0)
	if c, _ := count(); c != 0 {
		t.Fatalf("replace with no rows left %d rows", c)
	}
}
