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

// DropSlot drops the replication slot if it exists, waiting up to 10 s
// for its reader to let it go (a test's run that just stopped); it
// reports an error to t when the slot stays. A slot a test leaves pins
// the server's WAL for everyone.
func DropSlot(t testing.TB, dsn, slot string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("dropping slot %s: %v", slot, err)
		return
	}
	defer conn.Close(ctx)
	for range 200 {
		var active bool
		err := conn.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active)
		if err == pgx.ErrNoRows {
			return
		}
		if err == nil && !active {
			if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err == nil {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("slot %s could not be dropped", slot)
}

// DropLeftovers drops the replication slots whose names start with
// slotPrefix and the publications whose names start with pubPrefix, and
// names them ("" when there were none): a package's TestMain reports
// what its tests left behind.
func DropLeftovers(dsn, slotPrefix, pubPrefix string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return ""
	}
	defer conn.Close(ctx)
	var left []string
	if rows, err := conn.Query(ctx, `SELECT slot_name FROM pg_replication_slots WHERE starts_with(slot_name, $1)`, slotPrefix); err == nil {
		names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, n := range names {
			conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, n)
			left = append(left, "slot "+n)
		}
	}
	if rows, err := conn.Query(ctx, `SELECT pubname FROM pg_publication WHERE starts_with(pubname, $1)`, pubPrefix); err == nil {
		names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, n := range names {
			conn.Exec(ctx, `DROP PUBLICATION `+pgx.Identifier{n}.Sanitize())
			left = append(left, "publication "+n)
		}
	}
	return strings.Join(left, ", ")
}
