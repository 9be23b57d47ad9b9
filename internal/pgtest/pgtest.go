// Package pgtest gives tests a PostgreSQL database: the DSN (env
// TIDEMARK_TEST_POSTGRES, default the local server of the development and
// CI machines), a schema of their own, and the rows of a query as text.
// A database that cannot be reached fails the test under CI (env CI or
// TIDEMARK_REQUIRE_POSTGRES set) and skips it elsewhere.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the PostgreSQL of the development and CI machines.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var probe struct {
	once sync.Once
	err  error
}

// DSN returns the DSN of the test database, after checking once per
// process that it answers; it fails or skips the test otherwise (see the
// package documentation).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TIDEMARK_TEST_POSTGRES")
	if dsn == "" {
		dsn = DefaultDSN
	}
	probe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			probe.err = err
			return
		}
		conn.Close(ctx)
	})
	if probe.err != nil {
		where := "the DSN in TIDEMARK_TEST_POSTGRES"
		if os.Getenv("TIDEMARK_TEST_POSTGRES") == "" {
			where = DefaultDSN
		}
		msg := fmt.Sprintf("PostgreSQL is not reachable at %s: %v (start it, or set TIDEMARK_TEST_POSTGRES)", where, probe.err)
		if os.Getenv("CI") != "" || os.Getenv("TIDEMARK_REQUIRE_POSTGRES") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// Schema creates a schema named after the test (dropped with its tables
// when the test ends) and returns the DSN and the schema's name.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	schema = "tm_" + name + "_" + hex.EncodeToString(rnd[:])
	Exec(t, dsn, `CREATE SCHEMA "`+schema+`"`)
	t.Cleanup(func() { Exec(t, dsn, `DROP SCHEMA "`+schema+`" CASCADE`) })
	return dsn, schema
}

// Exec runs statements on a connection of their own, failing the test on
// an error.
func Exec(t testing.TB, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Dump returns the rows of query as text, one line per row, values
// separated by " | ": each value as PostgreSQL prints it, NULL for null.
// The session's time zone is Asia/Seoul.
func Dump(t testing.TB, dsn, query string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'Asia/Seoul'"); err != nil {
		t.Fatal(err)
	}
	// The simple protocol returns every value as text.
	rows, err := conn.Query(ctx, query, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		for i, raw := range rows.RawValues() {
			if i > 0 {
				b.WriteString(" | ")
			}
			if raw == nil {
				b.WriteString("NULL")
			} else {
				b.Write(raw)
			}
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return b.String()
}

// Check fails the test unless Dump(query) is want.
func Check(t testing.TB, dsn, query, want string) {
	t.Helper()
	if got := Dump(t, dsn, query); got != want {
		t.Fatalf("%s\ngot\n%s\nwant\n%s", query, got, want)
	}
}
