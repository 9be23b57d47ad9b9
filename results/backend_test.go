package results

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// backend is a database holding versions of revenue_minute for a test.
type backend struct {
	name  string
	db    *DB
	table string // the serving name, schema-qualified for PostgreSQL
	exec  func(t *testing.T, stmts ...string)
	dump  func(t *testing.T, query string) string
	qual  func(name string) string // a name as SQL, qualified
}

// backends runs fn against a fresh SQLite file and a fresh PostgreSQL
// schema.
func backends(t *testing.T, fn func(t *testing.T, b *backend)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "results.db")
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		if _, err := raw.Exec("PRAGMA journal_mode=WAL"); err != nil {
			t.Fatal(err)
		}
		db, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, &backend{
			name: "sqlite", db: db, table: "revenue_minute",
			exec: func(t *testing.T, stmts ...string) {
				t.Helper()
				for _, s := range stmts {
					if _, err := raw.Exec(s); err != nil {
						t.Fatalf("%s: %v", s, err)
					}
				}
			},
			dump: func(t *testing.T, query string) string {
				t.Helper()
				return dumpSQL(t, raw, query)
			},
			qual: func(name string) string { return quote(name) },
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		db, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, &backend{
			name: "postgres", db: db, table: schema + ".revenue_minute",
			exec: func(t *testing.T, stmts ...string) { t.Helper(); pgtest.Exec(t, dsn, stmts...) },
			dump: func(t *testing.T, query string) string { t.Helper(); return pgtest.Dump(t, dsn, query) },
			qual: func(name string) string { return quote(schema) + "." + quote(name) },
		})
	})
}

// dumpSQL returns a query's rows as pgtest.Dump does: values separated by
// " | ", NULL for null.
func dumpSQL(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	rs, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var b strings.Builder
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				fmt.Fprint(&b, v)
			}
		}
		b.WriteByte('\n')
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// createVersion creates version v of revenue_minute in the sinks' layout
// (docs/connectors/sqlite.md, postgres.md), with extra columns appended
// before the bookkeeping ones ("refunds TEXT" …), and inserts rows.
func (b *backend) createVersion(t *testing.T, v string, extra string, rows ...res) {
	t.Helper()
	name := b.qual("revenue_minute__" + v)
	var ddl string
	if b.name == "sqlite" {
		ddl = `CREATE TABLE ` + name + ` (window_start TEXT NOT NULL, window_end TEXT NOT NULL, store_id TEXT,
  net_revenue TEXT, orders INTEGER,` + extra + ` version INTEGER NOT NULL, is_final INTEGER NOT NULL,
  watermark_at TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (window_start, store_id))`
	} else {
		extra = strings.NewReplacer("TEXT", "numeric", "INTEGER", "bigint").Replace(extra)
		ddl = `CREATE TABLE ` + name + ` (window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, store_id text,
  net_revenue numeric, orders bigint,` + extra + ` version bigint NOT NULL, is_final boolean NOT NULL,
  watermark_at timestamptz, updated_at timestamptz NOT NULL, UNIQUE NULLS NOT DISTINCT (window_start, store_id))`
	}
	b.exec(t, ddl)
	b.insert(t, v, rows...)
}

// res is a result row of revenue_minute: a one-minute window.
type res struct {
	start, store, net string // "" store or net: NULL
	orders            int
}

func (b *backend) insert(t *testing.T, v string, rows ...res) {
	t.Helper()
	for _, r := range rows {
		start, err := time.Parse(time.RFC3339, r.start)
		if err != nil {
			t.Fatal(err)
		}
		end := start.Add(time.Minute).Format(time.RFC3339)
		lit := func(s string) string {
			if s == "" {
				return "NULL"
			}
			return literal(s)
		}
		b.exec(t, fmt.Sprintf(`INSERT INTO %s (window_start, window_end, store_id, net_revenue, orders, version, is_final, watermark_at, updated_at)
VALUES (%s, %s, %s, %s, %d, %d, TRUE, 'infinity', '2026-10-02T00:00:00+09:00')`,
			b.qual("revenue_minute__"+v), literal(r.start), literal(end), lit(r.store), lit(r.net), r.orders, len(v)))
	}
}

// rows returns the serving view's rows: window_start (Seoul time),
// store_id, net_revenue, orders, ordered.
func (b *backend) rows(t *testing.T) string {
	t.Helper()
	ws := `replace(substr(window_start, 1, 19), 'T', ' ')`
	if b.name == "postgres" {
		ws = `to_char(window_start AT TIME ZONE 'Asia/Seoul', 'YYYY-MM-DD HH24:MI:SS')`
	}
	return b.dump(t, "SELECT "+ws+", store_id, net_revenue, orders FROM "+b.qual("revenue_minute")+" ORDER BY 1, 2")
}
