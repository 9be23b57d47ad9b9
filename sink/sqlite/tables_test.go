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

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// articleDDL is the first source article's dashboard table, as written
// there.
const articleDDL = `CREATE TABLE revenue_minute (
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    store_id text NOT NULL,
    currency text NOT NULL,
    order_count bigint NOT NULL,
    revenue_amount numeric(18, 2) NOT NULL,
    source_event_count bigint NOT NULL,
    version bigint NOT NULL,
    is_final boolean NOT NULL,
    watermark_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (window_start, store_id, currency)
)`

var articleDesc = changelog.Desc{
	Stage: "revenue_minute",
	Key:   []changelog.Column{{Name: "store_id", Kind: row.KindString}, {Name: "currency", Kind: row.KindString}},
	Values: []changelog.Column{
		{Name: "order_count", Kind: row.KindInt},
		{Name: "revenue_amount", Kind: row.KindDecimal},
		{Name: "source_event_count", Kind: row.KindInt},
		{Name: "lineage", Kind: row.KindString},
	},
	Timezone: "Asia/Seoul",
}

func articleRow(t testing.TB, store string, version uint64, amount string, orders int64) changelog.Row {
	return changelog.Row{
		Op:          changelog.Insert,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{row.Str(store), row.Str("KRW")},
		Values:      []row.Value{row.Int(orders), dec(t, amount), row.Int(orders), row.Str("pipeline=revenue_minute")},
		Version:     version,
		IsFinal:     true,
		WatermarkAt: ms(t, "2026-09-01T01:03:00Z"),
		UpdatedAt:   ms(t, "2026-09-01T01:03:01Z"),
	}
}

func execSQL(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func openWith(t testing.TB, path, table string, d changelog.Desc, o Options) *Results {
	t.Helper()
	r, err := NewWithOptions(context.Background(), path, table, d, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// TestArticleTableUsedAsItIs: a fresh run into the first article's table,
// created by hand with a row inserted by hand, leaves the table's statement
// as it was, keeps the row, and puts the results in the user's columns
// (numeric(18, 2) has NUMERIC affinity: SQLite stores 20000 and 700.5 as
// numbers). Before, the run dropped the table and the row.
func TestArticleTableUsedAsItIs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	execSQL(t, path, articleDDL, `INSERT INTO revenue_minute VALUES ('2026-09-01T09:00:00+09:00', '2026-09-01T09:01:00+09:00', 'S0', 'KRW', 3, 1500.50, 3, 1, 1, '2026-09-01T09:03:00+09:00', '2026-09-01T09:03:01+09:00')`)
	for run := 1; run <= 2; run++ {
		s := openWith(t, path, "revenue_minute", articleDesc, Options{Fresh: true, ExactlyOnce: true, Pipeline: "revenue_minute", Sink: "revenue_minute", Lineage: "lineage"})
		if err := s.Recover(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []changelog.Row{articleRow(t, "S1", 1, "25000", 1), articleRow(t, "S1", 2, "20000", 2), articleRow(t, "S2", 1, "700.5", 1)}); err != nil {
			t.Fatal(err)
		}
		p, err := s.Prepare(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, 1, p); err != nil {
			t.Fatal(err)
		}
		n := "1"
		if run == 2 {
			n = "3"
		}
		if want := "[kept the " + n + " rows already in table revenue_minute, which tidemark did not create: a row there is replaced only by a higher version]"; fmt.Sprint(s.Notes()) != want {
			t.Errorf("run %d: notes %q, want %s", run, s.Notes(), want)
		}
		s.Close(ctx)
		check(t, path, `SELECT sql = '`+strings.ReplaceAll(articleDDL, "'", "''")+`' FROM sqlite_schema WHERE name = 'revenue_minute'`, "1\n")
		check(t, path, `SELECT window_start, store_id, order_count, revenue_amount, typeof(revenue_amount), version, is_final FROM revenue_minute ORDER BY window_start, store_id`,
			"'2026-09-01T09:00:00+09:00' | 'S0' | 3 | 1500.5 | 'real' | 1 | 1\n"+
				"'2026-09-01T10:00:00+09:00' | 'S1' | 2 | 20000 | 'integer' | 2 | 1\n"+
				"'2026-09-01T10:00:00+09:00' | 'S2' | 1 | 700.5 | 'real' | 1 | 1\n")
	}
	check(t, path, `SELECT count(*) FROM tidemark_tables`, "0\n")
}

// TestValueThatDoesNotFitIsAnError: in the article's table, a decimal the
// NUMERIC(18, 2) column would round, one with more significant digits than
// SQLite's binary numbers keep, and a NULL in a NOT NULL column are refused
// when written, naming the row and the column.
func TestValueThatDoesNotFitIsAnError(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	execSQL(t, path, articleDDL)
	s := openWith(t, path, "revenue_minute", articleDesc, Options{Lineage: "lineage"})
	where := "sqlite " + path + `: table "revenue_minute": row window_start=2026-09-01T10:00:00+09:00 store_id=S1 currency=KRW: column `
	nullSum := articleRow(t, "S1", 1, "1", 1)
	nullSum.Values[1] = row.Null
	noWatermark := articleRow(t, "S1", 1, "1", 1)
	noWatermark.WatermarkAt = changelog.WatermarkNone
	for _, c := range []struct {
		row  changelog.Row
		want string
	}{
		{articleRow(t, "S1", 1, "20000.005", 1), "revenue_amount (numeric(18, 2)): 20000.005 has 3 decimal places and the column is declared with 2"},
		{articleRow(t, "S1", 1, "12345678901234567", 1), "revenue_amount (numeric(18, 2)): 12345678901234567 has 17 digits before the decimal point and the column allows 16"},
		{articleRow(t, "S1", 1, "12345678901234.56", 1), "revenue_amount (numeric(18, 2)): 12345678901234.56 has 16 significant digits, and SQLite stores a NUMERIC or REAL column as binary floating point, exact to 15 (declare the column TEXT to keep any decimal exactly)"},
		{nullSum, "revenue_amount is NOT NULL in the table, and the value is NULL"},
		{noWatermark, "watermark_at is NOT NULL in the table, and the value is NULL"},
	} {
		if err := s.Write(ctx, []changelog.Row{articleRow(t, "S9", 1, "1", 1), c.row}); err == nil || err.Error() != where+c.want {
			t.Errorf("got  %v\nwant %s", err, where+c.want)
		}
	}
	write(t, s, articleRow(t, "S1", 1, "1234567890123.45", 1))
	check(t, path, `SELECT store_id, printf('%.2f', revenue_amount) FROM revenue_minute`, "'S1' | '1234567890123.45'\n")
}

// TestUserTableThatCannotTakeTheRows: missing columns, a decimal column of
// INTEGER affinity, a NOT NULL column without a default that the pipeline
// does not write, and no key: refused naming each, and left as it is.
func TestUserTableThatCannotTakeTheRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	execSQL(t, path, `CREATE TABLE revenue_minute (window_start TEXT NOT NULL, window_end TEXT NOT NULL, store_id TEXT, currency TEXT, order_count INTEGER,
  revenue_amount INTEGER, version INTEGER NOT NULL, is_final INTEGER NOT NULL, watermark_at TEXT, updated_at TEXT NOT NULL, note TEXT NOT NULL)`,
		`INSERT INTO revenue_minute VALUES ('x', 'x', 'S0', 'KRW', 1, 1, 1, 1, NULL, 'x', 'mine')`)
	_, err := NewWithOptions(ctx, path, "revenue_minute", articleDesc, Options{Fresh: true, ReplaceLayout: true, Lineage: "lineage"})
	var se *SchemaError
	if !errors.As(err, &se) || se.Owned {
		t.Fatalf("got %v", err)
	}
	want := "sqlite " + path + `: table "revenue_minute" cannot take the pipeline's rows (tidemark did not create it, so it uses it as it is and never drops or empties it): ` +
		`missing columns source_event_count (INTEGER); column revenue_amount is INTEGER: the pipeline writes decimals: declare it TEXT (or NUMERIC); ` +
		`column note is NOT NULL without a default, and the pipeline does not write it (give it a default, or drop NOT NULL); ` +
		`no primary key or unique index on (window_start, store_id, currency): the upsert needs one (CREATE UNIQUE INDEX ... ON "revenue_minute" ("window_start", "store_id", "currency")). ` +
		`Change the table, or write to another one (tidemark creates a table that does not exist)`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	check(t, path, `SELECT store_id, note FROM revenue_minute`, "'S0' | 'mine'\n")
}

// TestOwnedTableOfAnotherLayout: a table tidemark created and whose layout
// changed is refused unless replace (and a fresh start); replace refuses
// when a view reads it, naming the view; otherwise the table is replaced
// and the note says so.
func TestOwnedTableOfAnotherLayout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s := openWith(t, path, "revenue__live", revenue, Options{Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("a"), 1, "1", 1), res(t, changelog.Insert, row.Str("b"), 1, "2", 1))
	s.Close(ctx)
	other := changelog.Desc{Timezone: "Asia/Seoul", Key: revenue.Key,
		Values: []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}, {Name: "refunds", Kind: row.KindDecimal}}}
	diff := "missing columns refunds; extra columns orders"
	_, err := NewWithOptions(ctx, path, "revenue__live", other, Options{Fresh: true})
	if want := "sqlite " + path + `: table "revenue__live", which tidemark created, has another layout than the pipeline writes: ` + diff +
		" (set replace: true on the sink to drop it and create it anew at a fresh start, or write to another table)"; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if _, err := NewWithOptions(ctx, path, "revenue__live", other, Options{ReplaceLayout: true, Resume: true}); err == nil || !strings.Contains(err.Error(), "replaces a table only at a fresh start") {
		t.Fatalf("resumed: %v", err)
	}
	execSQL(t, path, `CREATE VIEW "revenue" AS SELECT "window_start", "store" FROM "revenue__live"`)
	_, err = NewWithOptions(ctx, path, "revenue__live", other, Options{Fresh: true, ReplaceLayout: true})
	var ve *ViewDependsError
	if !errors.As(err, &ve) || fmt.Sprint(ve.Views) != "[revenue]" || !strings.Contains(err.Error(), `table "revenue__live" cannot be replaced: the view revenue reads it`) {
		t.Fatalf("with a view: %v", err)
	}
	execSQL(t, path, `DROP VIEW revenue`)
	s = openWith(t, path, "revenue__live", other, Options{Fresh: true, ReplaceLayout: true})
	if want := "[replaced table revenue__live, which tidemark created, of another layout (" + diff + "): 2 rows dropped]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q", s.Notes())
	}
	check(t, path, `SELECT group_concat(name, ',') FROM pragma_table_info('revenue__live')`, "'window_start,window_end,store,revenue,refunds,version,is_final,watermark_at,updated_at'\n")
}

// TestFreshStartEmptiesOnlyItsOwnTable: a fresh run empties the table it
// created (saying how many rows); an altered table (ALTER TABLE) is no
// longer taken for tidemark's, and keeps its rows.
func TestFreshStartEmptiesOnlyItsOwnTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s := openWith(t, path, "revenue", revenue, Options{Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("a"), 1, "1", 1), res(t, changelog.Insert, row.Str("b"), 1, "2", 1))
	if len(s.Notes()) != 0 {
		t.Errorf("a new table: notes %q", s.Notes())
	}
	s.Close(ctx)
	s = openWith(t, path, "revenue", revenue, Options{Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("c"), 1, "3", 1))
	if want := "[emptied table revenue, which tidemark created, for this fresh start: 2 rows of earlier runs removed]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q", s.Notes())
	}
	s.Close(ctx)
	check(t, path, `SELECT store FROM revenue`, "'c'\n")
	execSQL(t, path, `ALTER TABLE revenue ADD COLUMN comment TEXT`)
	s = openWith(t, path, "revenue", revenue, Options{Fresh: true})
	write(t, s, res(t, changelog.Insert, row.Str("d"), 1, "4", 1))
	if want := "[kept the 1 rows already in table revenue, which tidemark did not create: a row there is replaced only by a higher version]"; fmt.Sprint(s.Notes()) != want {
		t.Fatalf("notes %q", s.Notes())
	}
	check(t, path, `SELECT store FROM revenue ORDER BY store`, "'c'\n'd'\n")
}

// TestTableDroppedWhileDown: a resumed run whose table is gone is an error
// naming the table and the checkpoint, not a new empty table.
func TestTableDroppedWhileDown(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	o := Options{ExactlyOnce: true, Pipeline: "p", Sink: "revenue", Fresh: true}
	s := openWith(t, path, "revenue", revenue, o)
	s.Recover(ctx, 0, nil)
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)})
	p, _ := s.Prepare(ctx, 1)
	if err := s.Commit(ctx, 1, p); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	execSQL(t, path, `DROP TABLE revenue`)
	o.Fresh, o.Resume = false, true
	_, err := NewWithOptions(ctx, path, "revenue", revenue, o)
	var me *MissingTableError
	if !errors.As(err, &me) || me.Marker != 1 || !strings.Contains(err.Error(), `table "revenue" does not exist in `+path+`, but the run resumes from a checkpoint whose rows were committed to it (its commit marker in tidemark_commits records checkpoint 1)`) {
		t.Fatalf("Resume: %v", err)
	}
	o.Resume = false
	s = openWith(t, path, "revenue", revenue, o)
	if err := s.Recover(ctx, 1, p); !errors.As(err, &me) || me.Checkpoint != 1 {
		t.Fatalf("Recover: %v", err)
	}
	check(t, path, `SELECT count(*) FROM sqlite_schema WHERE name = 'revenue'`, "0\n")
}

// TestLineageColumnSQLite: a created table has the lineage column, a table
// of the user's without one does not get it, NoLineage leaves it out.
func TestLineageColumnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	d := revenue
	d.Values = append(append([]changelog.Column(nil), revenue.Values...), changelog.Column{Name: "lineage", Kind: row.KindString})
	lin := res(t, changelog.Insert, row.Str("a"), 1, "1", 1)
	lin.Values = append(lin.Values, row.Str("pipeline=p"))
	cols := func(table string) string {
		return dump(t, path, `SELECT group_concat(name, ',') FROM pragma_table_info('`+table+`')`)
	}
	write(t, openWith(t, path, "made", d, Options{Lineage: "lineage"}), lin)
	check(t, path, `SELECT store, lineage FROM made`, "'a' | 'pipeline=p'\n")
	write(t, openWith(t, path, "off", d, Options{Lineage: "lineage", NoLineage: true}), lin)
	if got := cols("off"); got != "'window_start,window_end,store,revenue,orders,version,is_final,watermark_at,updated_at'\n" {
		t.Errorf("NoLineage: %s", got)
	}
	execSQL(t, path, `CREATE TABLE mine (window_start TEXT NOT NULL, window_end TEXT NOT NULL, store TEXT, revenue TEXT, orders INTEGER, version INTEGER NOT NULL,
  is_final INTEGER NOT NULL, watermark_at TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (window_start, store))`)
	write(t, openWith(t, path, "mine", d, Options{Lineage: "lineage"}), lin)
	check(t, path, `SELECT store, revenue FROM mine`, "'a' | '1'\n")
}

// TestDatabaseDeletedWhileDown: a resumed run whose database file is gone
// is refused before SQLite opens it, so that no new empty database (nor
// its directory, nor a WAL file) is left at the path; the same for a
// records table.
func TestDatabaseDeletedWhileDown(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	path := filepath.Join(dir, "out.db")
	_, err := NewWithOptions(ctx, path, "revenue", revenue, Options{Resume: true, ExactlyOnce: true, Pipeline: "p", Sink: "revenue"})
	var me *MissingTableError
	if !errors.As(err, &me) || !me.NoFile || me.Table != "revenue" || err.Error() != "sqlite "+path+": the database "+path+
		` does not exist, but the run resumes from a checkpoint whose rows were committed to its table "revenue": it was deleted or moved while the pipeline was down. `+
		"Restore the file, or recompute from the start of the input with an empty checkpoint directory; tidemark does not create it anew empty (nothing was created)" {
		t.Fatalf("Resume: %v", err)
	}
	_, err = NewRecords(ctx, path, "late", RecordsOptions{Resume: true, Pipeline: "p"})
	if !errors.As(err, &me) || !me.NoFile || me.Table != "late" {
		t.Fatalf("Records, Resume: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refusals left %s behind (stat: %v)", dir, err)
	}
}
