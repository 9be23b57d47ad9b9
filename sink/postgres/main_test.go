package postgres

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
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives the sinks and
// connections the tests close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultTestDSN is the PostgreSQL of the development and CI machines.
const defaultTestDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var probe struct {
	once sync.Once
	err  error
}

// testDSN returns the DSN of the test database (env TIDEMARK_TEST_POSTGRES,
// default defaultTestDSN). When the database cannot be reached the test
// fails under CI (env CI or TIDEMARK_REQUIRE_POSTGRES set) and is skipped
// elsewhere.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TIDEMARK_TEST_POSTGRES")
	if dsn == "" {
		dsn = defaultTestDSN
	}
	probe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := connect(ctx, dsn)
		if err != nil {
			probe.err = err
			return
		}
		conn.Close(ctx)
	})
	if probe.err != nil {
		where := "the DSN in TIDEMARK_TEST_POSTGRES"
		if os.Getenv("TIDEMARK_TEST_POSTGRES") == "" {
			where = defaultTestDSN
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

// testSchema creates a schema of its own for the test (dropped with its
// tables when the test ends) and returns the DSN and the schema name.
func testSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = testDSN(t)
	var rnd [4]byte
	rand.Read(rnd[:])
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	schema = "tm_" + name + "_" + hex.EncodeToString(rnd[:])
	exec(t, dsn, "CREATE SCHEMA "+quote(schema))
	t.Cleanup(func() { exec(t, dsn, "DROP SCHEMA "+quote(schema)+" CASCADE") })
	return dsn, schema
}

// exec runs statements on a connection of their own.
func exec(t testing.TB, dsn string, stmts ...string) {
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

// dump returns the rows of query as text, one line per row, values
// separated by " | ": each value as PostgreSQL prints it (::text), NULL
// for null. The session's time zone is Asia/Seoul.
func dump(t testing.TB, dsn, query string) string {
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

// check fails the test unless dump(query) is want.
func check(t testing.TB, dsn, query, want string) {
	t.Helper()
	if got := dump(t, dsn, query); got != want {
		t.Fatalf("%s\ngot\n%s\nwant\n%s", query, got, want)
	}
}
