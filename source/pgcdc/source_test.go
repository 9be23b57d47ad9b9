package pgcdc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/source"
)

var ordersDDL = []string{
	`CREATE TABLE orders (id int PRIMARY KEY, store text NOT NULL, amount numeric(12,2), note text, created_at timestamptz NOT NULL)`,
}

func TestSnapshotThenStream(t *testing.T) {
	f := newFixture(t, "orders", ordersDDL...)
	f.exec(`INSERT INTO orders VALUES (1, 's1', 10.50, 'a', '2026-09-01 10:00:00+09'), (2, 's2', 20, NULL, '2026-09-01 10:01:00.5+09'), (3, 's1', 30.25, 'c', '2026-09-01 10:02:00+09')`)
	sc := schemaOf(t, "id:int", "store:string", "amount:decimal", "created_at:timestamp",
		record.FieldOp+":string", record.FieldKey+":string", record.FieldLSN+":int", record.FieldXid+":int", record.FieldUnchanged+":string")
	s, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, _ := read(t, s, 3, sc)
	check(t, sortedCopy(got),
		"r 1 id=1 store=s1 amount=10.50 created_at=2026-09-01T01:00:00Z",
		"r 2 id=2 store=s2 amount=20.00 created_at=2026-09-01T01:01:00.500Z",
		"r 3 id=3 store=s1 amount=30.25 created_at=2026-09-01T01:02:00Z")
	if s.AtBoundary() {
		// The snapshot's last batch may end before its end is seen.
		var b source.Batch
		if _, err := s.Next(context.Background(), &b, 100); err != nil {
			t.Fatal(err)
		}
	}
	f.tx(`INSERT INTO orders VALUES (4, 's3', 5, 'd', '2026-09-01 10:03:00+09')`,
		`UPDATE orders SET amount = 11 WHERE id = 1`,
		`DELETE FROM orders WHERE id = 2`,
		`UPDATE orders SET id = 30 WHERE id = 3`)
	got, metas := read(t, s, 5, sc)
	check(t, got,
		"c 4 id=4 store=s3 amount=5.00 created_at=2026-09-01T01:03:00Z",
		"u 1 id=1 store=s1 amount=11.00 created_at=2026-09-01T01:00:00Z",
		"d 2 id=2 store=null amount=null created_at=null",
		"d 3 id=3 store=null amount=null created_at=null",
		"c 30 id=30 store=s1 amount=30.25 created_at=2026-09-01T01:02:00Z")
	if !s.AtBoundary() {
		t.Fatal("AtBoundary false after a whole transaction")
	}
	for i := 1; i < len(metas); i++ {
		if metas[i].Pos.Offset < metas[i-1].Pos.Offset {
			t.Fatalf("record %d: LSN %d before the previous %d", i, metas[i].Pos.Offset, metas[i-1].Pos.Offset)
		}
	}
	if !strings.Contains(string(metas[0].Raw), `"__op":"c"`) || !strings.Contains(string(metas[0].Raw), `"amount":5.00`) {
		t.Fatalf("raw %s", metas[0].Raw)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// nextErr opens the source (its first Next) and returns the error.
func nextErr(t *testing.T, cfg Config) error {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	var b source.Batch
	_, err = s.Next(context.Background(), &b, 10)
	return err
}

// TestSetupErrors: what the database lacks is named with its fix, before
// any slot is made.
func TestSetupErrors(t *testing.T) {
	f := newFixture(t, "orders", ordersDDL...)
	f.exec(`CREATE TABLE nokey (id int, note text)`, `CREATE TABLE other (id int PRIMARY KEY)`, `CREATE TABLE nothing (id int PRIMARY KEY, v int)`,
		`ALTER TABLE nothing REPLICA IDENTITY NOTHING`, `CREATE PUBLICATION `+quoteIdent(f.pub+"_x")+` FOR TABLE other WITH (publish = 'insert')`)
	t.Cleanup(func() { f.exec(`DROP PUBLICATION IF EXISTS ` + quoteIdent(f.pub+"_x")) })
	sc := schemaOf(t, "id:int", "store:string")
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		wants []string
	}{
		{"no publication", func(c *Config) { c.Publication = "tmtest_pgcdc_nope" },
			[]string{`publication tmtest_pgcdc_nope does not exist (tidemark never creates one); fix: CREATE PUBLICATION "tmtest_pgcdc_nope" FOR TABLE "` + f.schema + `"."orders" WITH (publish = 'insert, update, delete')`}},
		{"not in the publication, no deletes", func(c *Config) { c.Publication = f.pub + "_x" },
			[]string{`does not publish update, delete: those changes would never arrive; fix: ALTER PUBLICATION`,
				`does not hold table ` + f.schema + `.orders: its changes would never arrive; fix: ALTER PUBLICATION "` + f.pub + `_x" ADD TABLE "` + f.schema + `"."orders"`}},
		{"no table", func(c *Config) { c.Table = f.schema + ".order" }, []string{`table ` + f.schema + `.order does not exist (did you mean orders?)`}},
		{"no key", func(c *Config) { c.Table = f.schema + ".nokey" }, []string{`has no primary key, so a change does not say which row it changes; fix: add a primary key`,
			`the pipeline reads store, which is not a column of ` + f.schema + `.nokey`}},
		{"replica identity nothing", func(c *Config) { c.Table = f.schema + ".nothing"; c.Fields.Schema = schemaOf(t, "id:int") },
			[]string{`has REPLICA IDENTITY NOTHING (or DEFAULT without a primary key): its updates and deletes carry no key; fix: ALTER TABLE "` + f.schema + `"."nothing" REPLICA IDENTITY FULL`}},
		{"a field of the wrong kind", func(c *Config) { c.Fields.Schema = schemaOf(t, "id:int", "store:int", "created_at:bool") },
			[]string{`column store is type 25, which cannot be read as int: declare the field store in source.schema as string`,
				`column created_at is timestamp with time zone, which cannot be read as bool: declare the field created_at in source.schema as timestamp or string`}},
		{"a key column that is not one", func(c *Config) { c.Key = []string{"idd"} }, []string{`source.key: idd is not a column of ` + f.schema + `.orders (did you mean id?)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.config(sc)
			c.edit(&cfg)
			err := nextErr(t, cfg)
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SetupError", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nlacks %q", err, w)
				}
			}
			if got := f.query(`SELECT count(*) FROM pg_replication_slots WHERE slot_name = '` + f.slot + `'`); got != "0" {
				t.Errorf("a slot was made")
			}
		})
	}
}

// TestSlotGone: a checkpoint's slot dropped meanwhile is an error naming
// the lost position, not an empty stream; a slot dropped while the source
// reads it too.
func TestSlotGone(t *testing.T) {
	f := newFixture(t, "orders", ordersDDL...)
	sc := schemaOf(t, "id:int", "store:string", record.FieldOp+":string", record.FieldKey+":string", record.FieldLSN+":int")
	s, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	read(t, s, 0, sc) // the (empty) snapshot
	var b source.Batch
	if _, err := s.Next(context.Background(), &b, 10); err != nil {
		t.Fatal(err)
	}
	pos := s.Position()
	s.Close()
	pgtest.DropSlot(t, f.dsn, f.slot)
	s2, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Seek(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	_, err = s2.Next(context.Background(), &b, 10)
	if err == nil || !strings.Contains(err.Error(), "replication slot "+f.slot+" does not exist (dropped?): the checkpoint resumes at ") {
		t.Fatalf("resume without the slot: %v", err)
	}
	// Dropped under a reader: the server ends the stream.
	s3, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	read(t, s3, 0, sc)
	for range 3 {
		if _, err := s3.Next(context.Background(), &b, 10); err != nil {
			t.Fatal(err)
		}
	}
	f.exec(`SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '` + f.slot + `'`)
	pgtest.DropSlot(t, f.dsn, f.slot)
	for range 20 {
		if _, err = s3.Next(context.Background(), &b, 10); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("no error after the slot was dropped")
	}
	t.Logf("after the drop: %v", err)
}

// TestUnchangedToast: an update that leaves a large (TOASTed) column
// unchanged marks it in __unchanged instead of sending it; with REPLICA
// IDENTITY FULL the old row supplies it.
func TestUnchangedToast(t *testing.T) {
	f := newFixture(t, "docs", `CREATE TABLE docs (id int PRIMARY KEY, n int NOT NULL, body text NOT NULL)`)
	// 8 kB of text that compression does not shrink below TOAST's
	// threshold: stored out of line.
	f.exec(`ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL`)
	sc := schemaOf(t, "id:int", "n:int", "body:string", record.FieldOp+":string", record.FieldKey+":string", record.FieldLSN+":int", record.FieldUnchanged+":string")
	s, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read(t, s, 0, sc)
	f.exec(`INSERT INTO docs SELECT 1, 1, string_agg(md5(i::text), '') FROM generate_series(1, 256) i`)
	f.exec(`UPDATE docs SET n = 2 WHERE id = 1`)
	f.exec(`ALTER TABLE docs REPLICA IDENTITY FULL`)
	f.exec(`UPDATE docs SET n = 3 WHERE id = 1`)
	got, _ := read(t, s, 3, sc)
	if len(got[0]) < 8000 || !strings.HasPrefix(got[0], "c 1 id=1 n=1 body=c4ca4238") {
		t.Fatalf("insert: %.80s", got[0])
	}
	check(t, got[1:2], "u 1 id=1 n=2 body=null unchanged=body,")
	if got[2] != strings.Replace(got[0], "c 1 id=1 n=1", "u 1 id=1 n=3", 1) {
		t.Fatalf("with REPLICA IDENTITY FULL: %.80s", got[2])
	}
}

// TestSchemaChange: an added column is ignored; a dropped column the
// pipeline reads makes every later change a "schema_change" decode error
// naming it (never a silent null), unless the field is optional; a type
// change the field can still read is accepted.
func TestSchemaChange(t *testing.T) {
	f := newFixture(t, "orders", ordersDDL...)
	sc := schemaOf(t, "id:int", "store:string", "amount:decimal", "note:string", record.FieldOp+":string", record.FieldKey+":string")
	cfg := f.config(sc)
	cfg.Optional = map[string]bool{"note": true}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read(t, s, 0, sc)
	f.exec(`INSERT INTO orders VALUES (1, 's1', 1.50, 'n1', now())`)
	f.exec(`ALTER TABLE orders ADD COLUMN extra int`)
	f.exec(`INSERT INTO orders VALUES (2, 's1', 2.50, 'n2', now(), 7)`)
	f.exec(`ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,3)`)
	f.exec(`INSERT INTO orders VALUES (3, 's1', 3.5, 'n3', now(), 7)`)
	f.exec(`ALTER TABLE orders DROP COLUMN note`)
	f.exec(`INSERT INTO orders VALUES (4, 's1', 4, now(), 7)`)
	f.exec(`ALTER TABLE orders DROP COLUMN store`)
	f.exec(`INSERT INTO orders VALUES (5, 5, now(), 7)`)
	f.exec(`ALTER TABLE orders ALTER COLUMN amount TYPE text`)
	got, _ := read(t, s, 5, sc)
	check(t, got,
		"c 1 id=1 store=s1 amount=1.50 note=n1",
		"c 2 id=2 store=s1 amount=2.50 note=n2",
		"c 3 id=3 store=s1 amount=3.500 note=n3",
		"c 4 id=4 store=s1 amount=4.000 note=null",
		got[4][:strings.Index(got[4], " [")]+" [schema_change: field store: column store is no longer in "+f.table+" (a schema change, at "+got[4][strings.Index(got[4], "at ")+3:strings.Index(got[4], ")")]+"); the pipeline reads it, and the contract does not make it optional]")
	if !strings.HasPrefix(got[4], "c 5 id=5 store=null amount=5.000 note=null [schema_change") {
		t.Fatalf("after the drop: %s", got[4])
	}
	f.exec(`INSERT INTO orders VALUES (6, 'x', now(), 7)`)
	got, _ = read(t, s, 1, sc)
	if !strings.Contains(got[0], "[schema_change: field") {
		t.Fatalf("after a type change: %s", got[0])
	}
}
