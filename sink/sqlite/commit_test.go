package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

func exactlyOnce(t *testing.T, path string, replace bool) *Results {
	t.Helper()
	s, err := NewWithOptions(context.Background(), path, "revenue", revenue, Options{ExactlyOnce: true, Fresh: replace, Pipeline: "p", Sink: "revenue/sinks[0]"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

const selectShort = `SELECT store, revenue, orders, version FROM revenue ORDER BY store`
const selectMarker = `SELECT pipeline, sink, checkpoint_id FROM tidemark_commits`

// TestExactlyOnce: rows are invisible until Commit, written with the
// marker in one transaction; a repeated or older Commit is a no-op;
// Recover after a crash between Prepare (checkpoint written) and Commit
// publishes exactly once; Recover(0) with Fresh starts fresh.
func TestExactlyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	s := exactlyOnce(t, path, true)
	if err := s.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	a, b := row.Str("s-1"), row.Str("s-2")
	write(t, s, res(t, changelog.Insert, a, 1, "20.00", 1)) // Write + Flush
	check(t, path, selectShort, "")
	p1, err := s.Prepare(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	check(t, path, selectShort, "")
	if err := s.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectShort, "'s-1' | '20.00' | 1 | 1\n")
	check(t, path, selectMarker, "'p' | 'revenue/sinks[0]' | 1\n")

	write(t, s, res(t, changelog.UpdateAfter, a, 2, "15.00", 2), res(t, changelog.Insert, b, 1, "7.00", 1))
	p2, err := s.Prepare(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Crash before Commit(2): a new process recovers checkpoint 2.
	s2 := exactlyOnce(t, path, true)
	if err := s2.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	want := "'s-1' | '15.00' | 2 | 2\n's-2' | '7.00' | 1 | 1\n"
	check(t, path, selectShort, want)
	check(t, path, selectMarker, "'p' | 'revenue/sinks[0]' | 2\n")
	// Crash after Commit(2), before the next checkpoint: Recover(2) again,
	// and the in-memory Commit of the first process, change nothing.
	if err := s2.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectShort, want)
	check(t, path, selectMarker, "'p' | 'revenue/sinks[0]' | 2\n")

	// Falling back to checkpoint 1 (2 unusable) rewinds the marker, so
	// that the replayed checkpoint 2 commits again (its rows are newer
	// versions of the same rows, or equal ones).
	if err := s2.Recover(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectMarker, "'p' | 'revenue/sinks[0]' | 1\n")
	check(t, path, selectShort, want)
	write(t, s2, res(t, changelog.UpdateAfter, a, 2, "15.00", 2), res(t, changelog.Insert, b, 1, "7.00", 1), res(t, changelog.Insert, row.Str("s-3"), 1, "1.00", 1))
	p2b, _ := s2.Prepare(ctx, 2)
	if err := s2.Commit(ctx, 2, p2b); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectShort, want+"'s-3' | '1.00' | 1 | 1\n")

	// A fresh start with Fresh clears the rows and the marker.
	s3 := exactlyOnce(t, path, true)
	if err := s3.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	check(t, path, selectShort, "")
	check(t, path, selectMarker, "")
}

func TestPreparedRowsRoundTrip(t *testing.T) {
	p := &preparedRows{id: 3,
		ops:  []pendingRow{{op: changelog.Insert}, {op: changelog.Delete, nullKey: true}},
		args: []any{"a", int64(-5), nil, "b", int64(1 << 40), "x"}}
	b, err := encodeRows(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	q, err := decodeRows(b, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.args {
		if q.args[i] != p.args[i] {
			t.Fatalf("arg %d: %v, want %v", i, q.args[i], p.args[i])
		}
	}
	if q.ops[0] != p.ops[0] || q.ops[1] != p.ops[1] {
		t.Fatalf("ops %v", q.ops)
	}
	for cut := range len(b) {
		if _, err := decodeRows(b[:cut], 3, 3); err == nil {
			t.Fatalf("a %d-byte prefix decoded", cut)
		}
	}
}
