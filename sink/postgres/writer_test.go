package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// TestOneWriterPerTable: a sink holds its table, and its commit marker,
// for as long as its connection lives. A second sink on the table — a
// fresh start that would empty it — is refused before it writes, naming
// the table and the session holding it (pid, application_name), and the
// first sink's rows stay; a sink of another table is free. The lock goes
// with the session: after Close at once, and after the server terminates
// the holder's session (what kill -9 of the process comes to).
func TestOneWriterPerTable(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	// The holders below are sessions of this process, which take waits
	// for (they may be dying): wait less for the refusals.
	defer func(g time.Duration) { lockGrace = g }(lockGrace)
	lockGrace = 200 * time.Millisecond
	a, err := New(ctx, dsn, table, revenue, Options{Pipeline: "a", AtLeastOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	write(t, a, res(t, changelog.Insert, row.Str("s1"), 1, "10", 1))
	pid := a.x.pid()

	_, err = New(ctx, dsn, table, revenue, Options{Pipeline: "b", AtLeastOnce: true, Fresh: true})
	var we *WriterLockError
	if !errors.As(err, &we) || we.What != "table "+table || len(we.Holders) != 1 || we.Holders[0].PID != int32(pid) ||
		we.Holders[0].ApplicationName != ApplicationName("a") || we.Holders[0].Client == "" || we.Holders[0].Since.IsZero() {
		t.Fatalf("a second sink on the table: %v (%+v)", err, we)
	}
	if want := fmt.Sprintf("postgres %s: another run writes table %s: refused before writing — its writer lock is held by the session pid %d (application_name %q, client ", table, table, pid, ApplicationName("a")); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message\n%s\nwant it to start with\n%s", err, want)
	}
	if _, err := NewRecords(ctx, dsn, table, RecordsOptions{Pipeline: "c", AtLeastOnce: true}); !errors.As(err, &we) {
		t.Errorf("a records sink on the table: %v", err)
	}
	check(t, dsn, "SELECT store, revenue FROM "+table, "s1 | 10\n")
	other, err := New(ctx, dsn, schema+".other", revenue, Options{Pipeline: "b", AtLeastOnce: true})
	if err != nil {
		t.Fatalf("another table while the first is held: %v", err)
	}
	other.Close(ctx)

	// The commit marker: two sinks of one pipeline writing two tables of
	// one name in one schema cannot be; but two sinks naming one marker
	// (pipeline, sink) on two tables would move each other's marker.
	m1, err := New(ctx, dsn, schema+".m1", revenue, Options{Pipeline: "p", Sink: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close(ctx)
	if _, err := New(ctx, dsn, schema+".m2", revenue, Options{Pipeline: "p", Sink: "shared"}); !errors.As(err, &we) ||
		we.What != "commit marker (p, shared) in "+schema+".tidemark_commits" {
		t.Errorf("a second sink on one commit marker: %v", err)
	}

	// Close releases at once: the next run need not wait.
	a.Close(ctx)
	start := time.Now()
	b, err := New(ctx, dsn, table, revenue, Options{Pipeline: "b", AtLeastOnce: true})
	if err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the sink after a Close waited %s for the lock", took)
	}
	// The server ends the holder's session (its process killed): the
	// lock goes with it, within the grace a new sink waits.
	lockGrace = 3 * time.Second
	terminate(t, dsn, b.x.pid())
	c, err := New(ctx, dsn, table, revenue, Options{Pipeline: "c", AtLeastOnce: true})
	if err != nil {
		t.Fatalf("after the holder's session ended: %v", err)
	}
	c.Close(ctx)
}

// TestGroupSharesTheTable: the instances of one group share a table (a
// shared lock, and their group's), a run outside any group is refused
// naming every instance, and an instance of another group is refused
// naming the sessions outside it; a group instance is refused as well
// while a run outside the group holds the table.
func TestGroupSharesTheTable(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue"
	defer func(g time.Duration) { lockGrace = g }(lockGrace)
	lockGrace = 200 * time.Millisecond // the holders are this process's own sessions
	open := func(o Options) (*Results, error) {
		r, err := New(ctx, dsn, table, revenue, o)
		if err == nil {
			t.Cleanup(func() { r.Close(ctx) })
		}
		return r, err
	}
	x, err := open(Options{Pipeline: "p", Sink: "revenue@t0", Group: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	y, err := open(Options{Pipeline: "p", Sink: "revenue@t1", Group: "g1"})
	if err != nil {
		t.Fatalf("a second instance of the group: %v", err)
	}
	var we *WriterLockError
	_, err = open(Options{Pipeline: "p"})
	if !errors.As(err, &we) || we.Group != "" || len(we.Holders) != 2 ||
		we.Holders[0].PID != int32(min(x.x.pid(), y.x.pid())) || we.Holders[1].PID != int32(max(x.x.pid(), y.x.pid())) {
		t.Fatalf("a run outside the group: %v", err)
	}
	_, err = open(Options{Pipeline: "p", Sink: "revenue@t0", Group: "g2"})
	if !errors.As(err, &we) || we.Group != "g2" || len(we.Holders) != 2 || !strings.Contains(err.Error(), `outside group "g2", whose instances share it`) {
		t.Fatalf("an instance of another group: %v", err)
	}
	x.Close(ctx)
	y.Close(ctx)
	alone, err := open(Options{Pipeline: "p"})
	if err != nil {
		t.Fatalf("a run alone once the group is gone: %v", err)
	}
	_, err = open(Options{Pipeline: "p", Sink: "revenue@t0", Group: "g1"})
	if !errors.As(err, &we) || len(we.Holders) != 1 || we.Holders[0].PID != int32(alone.x.pid()) {
		t.Fatalf("a group instance while a run outside it writes: %v", err)
	}
}

// TestAppPID: the pid and host of tidemark's application names, and
// nothing from others or from a name cut at 63 bytes.
func TestAppPID(t *testing.T) {
	for _, c := range []struct {
		app  string
		pid  int
		host string
		ok   bool
	}{
		{"tidemark revenue pid 4711 on build-1", 4711, "build-1", true},
		{"tidemark a pid b pid 12 on h", 12, "h", true},
		{"tidemark pid 7 on h", 7, "h", true},
		{"psql", 0, "", false},
		{"tidemark revenue pid x on h", 0, "", false},
		{"tidemark " + strings.Repeat("x", 40) + " pid 4711 on host-with-a-long-name", 0, "", false},
	} {
		pid, host, ok := appPID(c.app)
		if pid != c.pid || host != c.host || ok != c.ok {
			t.Errorf("appPID(%q) = %d, %q, %v; want %d, %q, %v", c.app, pid, host, ok, c.pid, c.host, c.ok)
		}
	}
	if got := ApplicationName(strings.Repeat("é", 40)); len(got) > 63 || !strings.HasPrefix(got, "tidemark é") {
		t.Errorf("ApplicationName of a long name: %q (%d bytes)", got, len(got))
	}
}
