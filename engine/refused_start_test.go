package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/spec"
)

// TestMisspeltKeyLeavesNothing (issue 25 item 5): a run refused at its
// first batch (key [stor_id, currency], a field no record has) leaves
// nothing it created: no PostgreSQL table — whose stor_id column would
// then refuse the corrected pipeline ("another layout … set replace:
// true") —, no record of it in tidemark_tables, no SQLite database, no
// JSONL file of rows or late records, no checkpoint directory. The
// corrected pipeline then runs.
func TestMisspeltKeyLeavesNothing(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 200 {
		b.WriteString(`{"paid_at":"2026-09-01T10:0` + string(rune('0'+i/20)) + `:00Z","store_id":"s` + string(rune('0'+i%3)) + `","currency":"KRW","amount":1}` + "\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	run := func(key string) error {
		p := &spec.Pipeline{
			Name:       "revenue",
			Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime:  spec.EventTime{Field: "paid_at", OutOfOrderness: spec.Duration(time.Second)},
			Key:        []string{key, "currency"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
			Late:       spec.Late{Policy: "side_output", Sink: &spec.Sink{Type: "jsonl", Path: filepath.Join(out, "late.jsonl")}},
			Sinks: []spec.Sink{
				{Type: "postgres", DSN: dsn, Table: schema + ".revenue_minute"},
				{Type: "sqlite", Path: filepath.Join(out, "db", "revenue.db"), Table: "revenue_minute"},
				{Type: "jsonl", Path: filepath.Join(out, "rows", "revenue.jsonl")},
			},
			Checkpoint: &spec.Checkpoint{Dir: filepath.Join(out, "ck")},
		}
		_, err := engine.Run(context.Background(), compiled(t, p), engine.Options{BatchSize: 100})
		return err
	}
	if err := run("stor_id"); err == nil || !strings.Contains(err.Error(), `key field "stor_id" is null or missing in all 100 records of the first batch read`) {
		t.Fatalf("the misspelt run: %v", err)
	}
	pgtest.Check(t, dsn, `SELECT to_regclass('"`+schema+`".revenue_minute') IS NULL, (SELECT count(*) FROM "`+schema+`".tidemark_tables)`, "t | 0\n")
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(out)
		t.Fatalf("the refused run left %s: %v %v", out, err, entries)
	}
	if err := run("store_id"); err != nil {
		t.Fatalf("the corrected pipeline: %v", err)
	}
	pgtest.Check(t, dsn, `SELECT store_id, sum(n) FROM "`+schema+`".revenue_minute GROUP BY store_id ORDER BY store_id`, "s0 | 67\ns1 | 67\ns2 | 66\n")
	for _, f := range []string{"db/revenue.db", "rows/revenue.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the corrected pipeline wrote no %s: %v", f, err)
		}
	}
}
