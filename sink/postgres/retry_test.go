package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// terminate ends the server process pid from another connection, as an
// administrator or a failover would.
func terminate(t testing.TB, dsn string, pid uint32) {
	t.Helper()
	if pid == 0 {
		t.Fatal("no connection to terminate")
	}
	check(t, dsn, fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid), "t\n")
}

// TestRetryAfterTerminateBetweenWrites: the connection is ended between two
// Writes; the Commit reconnects and publishes both rows once.
func TestRetryAfterTerminateBetweenWrites(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	s.x.fast(nil)
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)}); err != nil {
		t.Fatal(err)
	}
	terminate(t, dsn, s.x.pid())
	if err := s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("b"), 1, "2", 1)}); err != nil {
		t.Fatal(err)
	}
	s.x.attempts = 0
	commit(t, s, 1)
	check(t, dsn, "SELECT store, revenue, version FROM "+table+" ORDER BY store", "a | 1 | 1\nb | 2 | 1\n")
	if s.x.attempts != 2 {
		t.Errorf("%d attempts, want 2", s.x.attempts)
	}
}

// TestRetryWhenTheConnectionDiesInTheCommit: the connection is ended inside
// the commit's transaction, after the rows were applied and before COMMIT;
// the transaction is rolled back by the server and redone from the
// prepared rows on a new connection.
func TestRetryWhenTheConnectionDiesInTheCommit(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	s.x.fast(nil)
	n := 0
	s.x.onTx(func(_ context.Context, _ pgx.Tx, at string) error {
		if at == "commit" && n == 0 {
			n++
			terminate(t, dsn, s.x.pid())
		}
		return nil
	})
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1.50", 1)})
	s.x.attempts = 0
	commit(t, s, 1)
	if s.x.attempts != 2 {
		t.Errorf("%d attempts, want 2", s.x.attempts)
	}
	check(t, dsn, "SELECT store, revenue FROM "+table, "a | 1.50\n")
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "1\n")
}

// TestRetryAfterAnUnknownCommitOutcome: COMMIT reached the database but its
// acknowledgement was lost (the connection broke); the retry finds the
// commit marker at the checkpoint and writes nothing again.
func TestRetryAfterAnUnknownCommitOutcome(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	s.x.fast(nil)
	lost := true
	s.x.onTx(func(_ context.Context, _ pgx.Tx, at string) error {
		if at == "committed" && lost {
			lost = false
			return fmt.Errorf("reading the commit's reply: %w", io.ErrUnexpectedEOF)
		}
		return nil
	})
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)})
	p, _ := s.Prepare(ctx, 1)
	if err := s.Commit(ctx, 1, p); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT store, version FROM "+table, "a | 1\n")
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "1\n")
	if s.x.attempts < 2 {
		t.Errorf("%d attempts: the lost acknowledgement was not retried", s.x.attempts)
	}
}

// TestRetriesAreBounded: a connection that breaks at every attempt fails
// the Commit after the bound, with the cause and the waits of the
// exponential backoff; the prepared rows are kept and commit later.
func TestRetriesAreBounded(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p", Retry: Retry{Retries: 3}})
	var waits []time.Duration
	s.x.fast(&waits)
	s.x.onTx(func(_ context.Context, _ pgx.Tx, at string) error {
		if at == "commit" {
			terminate(t, dsn, s.x.pid())
		}
		return nil
	})
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)})
	p, _ := s.Prepare(ctx, 1)
	s.x.attempts = 0
	err := s.Commit(ctx, 1, p)
	var re *RetriesError
	if !errors.As(err, &re) || re.Attempts != 4 || s.x.attempts != 4 || !Transient(re.Err) {
		t.Fatalf("got %v (%d attempts)", err, s.x.attempts)
	}
	if fmt.Sprint(waits) != "[250ms 500ms 1s]" {
		t.Errorf("waits %v, want [250ms 500ms 1s]", waits)
	}
	if !strings.Contains(err.Error(), "commit 1: failed 4 times in 1.75s, for a transient reason each time (sink key retries bounds the retries): ") {
		t.Errorf("error %q", err)
	}
	check(t, dsn, "SELECT count(*) FROM "+table, "0\n")
	s.x.onTx(nil)
	if err := s.Commit(ctx, 1, p); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT store FROM "+table, "a\n")

	// With retries off, the first failure is the error.
	s2 := newSink(t, dsn, table, revenue, Options{Pipeline: "q", Retry: RetryCount(0)})
	s2.x.fast(nil)
	s2.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("b"), 1, "1", 1)})
	p2, _ := s2.Prepare(ctx, 1)
	terminate(t, dsn, s2.x.pid())
	s2.x.attempts = 0
	if err := s2.Commit(ctx, 1, p2); err == nil || errors.As(err, &re) || s2.x.attempts != 1 {
		t.Fatalf("retries off: %v, %d attempts", err, s2.x.attempts)
	}
}

// TestPermanentErrorIsNotRetried: a commit into a table that was dropped
// fails at once, naming the cause.
func TestPermanentErrorIsNotRetried(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	s := newSink(t, dsn, table, revenue, Options{Pipeline: "p"})
	s.x.fast(nil)
	s.Write(ctx, []changelog.Row{res(t, changelog.Insert, row.Str("a"), 1, "1", 1)})
	p, _ := s.Prepare(ctx, 1)
	exec(t, dsn, "DROP TABLE "+table)
	s.x.attempts = 0
	err := s.Commit(ctx, 1, p)
	if err == nil || s.x.attempts != 1 || !strings.Contains(err.Error(), "(SQLSTATE 42P01)") {
		t.Fatalf("got %v after %d attempts", err, s.x.attempts)
	}
}
