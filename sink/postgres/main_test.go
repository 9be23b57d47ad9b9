package postgres

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// TestMain fails the package's tests if a goroutine outlives the sinks and
// connections the tests close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test database: see internal/pgtest.
func testDSN(t testing.TB) string                    { return pgtest.DSN(t) }
func testSchema(t testing.TB) (dsn, schema string)   { return pgtest.Schema(t) }
func exec(t testing.TB, dsn string, stmts ...string) { t.Helper(); pgtest.Exec(t, dsn, stmts...) }
func dump(t testing.TB, dsn, query string) string    { t.Helper(); return pgtest.Dump(t, dsn, query) }
func check(t testing.TB, dsn, query, want string)    { t.Helper(); pgtest.Check(t, dsn, query, want) }
