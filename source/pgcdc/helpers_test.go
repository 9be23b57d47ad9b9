package pgcdc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// testSlotPrefix starts the name of every slot and publication a test of
// this package makes; TestMain drops (and reports) any left behind.
const testSlotPrefix = "tmtest_pgcdc_"

func TestMain(m *testing.M) {
	code := m.Run()
	dsn := os.Getenv("TIDEMARK_TEST_POSTGRES")
	if dsn == "" {
		dsn = pgtest.DefaultDSN
	}
	{
		if left := pgtest.DropLeftovers(dsn, testSlotPrefix, testSlotPrefix); left != "" {
			fmt.Fprintf(os.Stderr, "replication slots or publications left by the tests (dropped now): %s\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// fixture is a test's own schema, table, publication and slot, dropped
// when the test ends (the slot first: a leaked slot pins the server's
// WAL for everyone).
type fixture struct {
	t           *testing.T
	dsn, schema string
	table       string // schema.table
	pub, slot   string
	conn        *pgx.Conn
}

// newFixture creates the schema and runs ddl in it (its search_path),
// then a publication for table (in the schema).
func newFixture(t *testing.T, table string, ddl ...string) *fixture {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	f := &fixture{t: t, dsn: dsn, schema: schema, table: schema + "." + table,
		pub: testSlotPrefix + "pub_" + id, slot: testSlotPrefix + id}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	f.conn = conn
	t.Cleanup(func() {
		// Registered after pgtest.Schema's: runs before the schema drop.
		pgtest.DropSlot(t, dsn, f.slot)
		f.exec(`DROP PUBLICATION IF EXISTS ` + quoteIdent(f.pub))
		conn.Close(ctx)
	})
	f.exec(`SET search_path TO ` + quoteIdent(schema))
	for _, q := range ddl {
		f.exec(q)
	}
	f.exec(`CREATE PUBLICATION ` + quoteIdent(f.pub) + ` FOR TABLE ` + quoteTable(schema, table))
	return f
}

// query returns the first value of the first row of q, as text.
func (f *fixture) query(q string) string {
	f.t.Helper()
	var s string
	if err := f.conn.QueryRow(context.Background(), "SELECT ("+q+")::text").Scan(&s); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return s
}

func (f *fixture) exec(qs ...string) {
	f.t.Helper()
	for _, q := range qs {
		if _, err := f.conn.Exec(context.Background(), q); err != nil {
			f.t.Fatalf("%s: %v", q, err)
		}
	}
}

// tx runs statements in one transaction.
func (f *fixture) tx(qs ...string) {
	f.t.Helper()
	f.exec(append(append([]string{"BEGIN"}, qs...), "COMMIT")...)
}

// schemaOf builds a schema of "name:kind" fields.
func schemaOf(t testing.TB, fields ...string) *row.Schema {
	s := row.NewSchema()
	for _, fk := range fields {
		n, k, _ := strings.Cut(fk, ":")
		kind, err := row.ParseKind(k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(n, kind); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// config returns a source config for the fixture.
func (f *fixture) config(sc *row.Schema) Config {
	return Config{DSN: f.dsn, Table: f.table, Publication: f.pub, Slot: f.slot, Fields: format.Fields{Schema: sc},
		PollTimeoutMs: 200, StatusIntervalMs: 200, Logf: f.t.Logf}
}

// render writes a record as "op key field=value ... [err]" (change fields
// other than __op and __key left out).
func render(sc *row.Schema, r *row.Row, m *source.Meta) string {
	var b strings.Builder
	get := func(n string) string {
		f, ok := sc.Lookup(n)
		if !ok || r.IsNull(f.Index) {
			return "null"
		}
		return r.Get(f).String()
	}
	b.WriteString(get(record.FieldOp) + " " + get(record.FieldKey))
	for _, f := range sc.Fields {
		if record.IsChangeField(f.Name) {
			continue
		}
		b.WriteString(" " + f.Name + "=" + get(f.Name))
	}
	if f, ok := sc.Lookup(record.FieldUnchanged); ok && !r.IsNull(f.Index) && r.S[f.Slot] != "" {
		b.WriteString(" unchanged=")
		for _, g := range sc.Fields {
			if record.Unchanged(r.S[f.Slot], g.Index) {
				b.WriteString(g.Name + ",")
			}
		}
	}
	if m.Err != nil {
		b.WriteString(" [" + m.Err.Rule + ": " + m.Err.Error() + "]")
	}
	return b.String()
}

// read calls Next until n records came (or the deadline), and renders
// them.
func read(t *testing.T, s *Source, n int, sc *row.Schema) ([]string, []source.Meta) {
	t.Helper()
	var out []string
	var metas []source.Meta
	deadline := time.Now().Add(20 * time.Second)
	var b source.Batch
	for first := true; (first || len(out) < n) && time.Now().Before(deadline); first = false {
		b.Reset()
		if _, err := s.Next(context.Background(), &b, 100); err != nil {
			t.Fatalf("Next: %v", err)
		}
		for i := range b.Meta {
			out = append(out, render(sc, &b.Rows[i], &b.Meta[i]))
			m := b.Meta[i]
			m.Raw = append([]byte(nil), m.Raw...)
			metas = append(metas, m)
		}
	}
	if len(out) != n {
		t.Fatalf("read %d records, want %d:\n%s", len(out), n, strings.Join(out, "\n"))
	}
	return out, metas
}

func check(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
