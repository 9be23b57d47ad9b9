package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// One writer per table (docs/connectors/postgres.md, "One writer per
// table"). Every connection a sink writes through first takes a
// session-level advisory lock keyed by the identity of each table it
// writes — the result, records or ledger tables, and its commit marker
// (the row (pipeline, sink) of tidemark_commits) — and holds it for as
// long as the connection lives: PostgreSQL's own way to say "this session
// writes here", released by the server when the session ends, so a
// process killed with SIGKILL never leaves it behind. A second run that
// would write the same table is refused before it creates, empties or
// writes anything, with a *WriterLockError naming the table and the
// session holding the lock (pid, application_name, client address).
//
// The instances of a group run (a Kafka consumer group sharing the
// pipeline's tables on purpose) take the table locks in shared mode,
// together with a shared lock keyed by (table, group): an instance is
// admitted when every session holding the table's lock also holds its
// group's, and a run outside the group — a run with no group, which takes
// the lock exclusively, or an instance of another group — is refused. The
// admission check runs under a transaction-level lock of the table, so
// two instances of two groups starting at once cannot both get in.

// writerLock is what a sink's connections lock.
type writerLock struct {
	// idents name what is written: "table analytics.revenue" (an
	// unqualified table in the connection's current schema).
	tables  []tableName
	markers []marker
	// group is the group of instances the run belongs to, "" for none.
	group string
}

// WriterLockError is the refusal of a sink whose table another session
// writes.
type WriterLockError struct {
	// What is locked: "table public.revenue_minute", or "commit marker
	// (revenue, revenue_minute) in public.tidemark_commits".
	What string
	// Group is the refused run's group of instances, "" for none.
	Group string
	// Holders are the sessions holding the lock (or, for an instance of a
	// group, those outside it).
	Holders []Holder
}

// Holder is a session holding a writer lock.
type Holder struct {
	PID             int32
	ApplicationName string
	Client          string // client address or host name; "local" for a Unix socket
	Since           time.Time
	// Group is the group of instances whose lock the session also holds
	// ("" for a run outside any group).
	Group string
}

// String describes the holder: `pid 4711 (application_name "tidemark
// revenue pid 88 on host-a", client 127.0.0.1, connected since …)`.
func (h Holder) String() string {
	var parts []string
	if h.ApplicationName != "" {
		parts = append(parts, fmt.Sprintf("application_name %q", h.ApplicationName))
	}
	if h.Client != "" {
		parts = append(parts, "client "+h.Client)
	}
	if !h.Since.IsZero() {
		parts = append(parts, "connected since "+h.Since.UTC().Format(time.RFC3339))
	}
	s := fmt.Sprintf("pid %d", h.PID)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// Error implements error.
func (e *WriterLockError) Error() string {
	var hs []string
	for _, h := range e.Holders {
		hs = append(hs, "the session "+h.String())
	}
	who := strings.Join(hs, " and ")
	if who == "" {
		who = "a session that ended as it was looked up"
	}
	if e.Group != "" {
		return fmt.Sprintf("another run writes %s: refused before writing — it is written by %s, outside group %q, whose instances share it; two runs on one table empty and overwrite each other's rows: stop that run, or write another table",
			e.What, who, e.Group)
	}
	return fmt.Sprintf("another run writes %s: refused before writing — its writer lock is held by %s; two runs on one table empty and overwrite each other's rows: stop that run (its lock goes with its session, also after kill -9), or write another table",
		e.What, who)
}

// lockKey is the text whose hash keys an advisory lock.
func lockKey(what string) string { return "tidemark writer " + what }

// qualified returns t with its schema: the connection's current schema
// when t names none.
func qualified(ctx context.Context, conn *pgx.Conn, t tableName) (tableName, error) {
	if t.schema != "" {
		return t, nil
	}
	var s *string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&s); err != nil {
		return t, err
	}
	if s == nil {
		return t, errors.New("no schema of the connection's search_path exists: create one, or set search_path in the URL")
	}
	return tableName{schema: *s, name: t.name}, nil
}

// whats returns the locked things' names, resolved on conn.
func (w *writerLock) whats(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	var out []string
	for _, t := range w.tables {
		q, err := qualified(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		out = append(out, "table "+q.String())
	}
	if w.group != "" {
		// A group's instances keep their markers per task, and a task
		// moves between instances: the group's own protocol (fencing,
		// transactions) orders their markers.
		return out, nil
	}
	for _, m := range w.markers {
		q, err := qualified(ctx, conn, m.table)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("commit marker (%s, %s) in %s", m.pipeline, m.sink, q))
	}
	return out, nil
}

// lockGrace is how long take waits for a lock held by another session
// before it refuses, unless the holder is known to live (WriterLockError.
// live): a session whose process ended (kill -9, a connection the server
// terminated) holds its locks until its backend notices, a matter of
// milliseconds, and a restart right after must not be refused for it.
var lockGrace = 3 * time.Second

// take locks w's tables on conn, a new connection, for as long as it
// lives. It returns a *WriterLockError when another session writes one
// (still after lockGrace).
func (w *writerLock) take(ctx context.Context, conn *pgx.Conn) error {
	whats, err := w.whats(ctx, conn)
	if err != nil {
		return err
	}
	for _, what := range whats {
		deadline := time.Now().Add(lockGrace)
		for {
			err := w.try(ctx, conn, what)
			var we *WriterLockError
			if !errors.As(err, &we) || time.Now().After(deadline) || we.live() {
				if err != nil {
					return err
				}
				break
			}
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
	return nil
}

// try takes the lock of what once, without waiting.
func (w *writerLock) try(ctx context.Context, conn *pgx.Conn, what string) error {
	if w.group != "" {
		return w.admit(ctx, conn, what)
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", lockKey(what)).Scan(&ok); err != nil {
		return fmt.Errorf("lock %s: %w", what, err)
	}
	if ok {
		return nil
	}
	hs, err := holders(ctx, conn, what, "")
	if err != nil {
		return fmt.Errorf("look up the session writing %s: %w", what, err)
	}
	return &WriterLockError{What: what, Holders: hs}
}

// release drops every advisory lock of conn's session before it closes:
// the server would release them only once it notices the end of the
// session, an instant later, which a run starting right after this one
// would otherwise wait for.
func release(ctx context.Context, conn *pgx.Conn) {
	if conn.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
}

// admit takes, for an instance of w.group, the shared locks of what and
// of (what, group), when every session writing what is of the group.
func (w *writerLock) admit(ctx context.Context, conn *pgx.Conn, what string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", lockKey("admission "+what)); err != nil {
		return fmt.Errorf("lock %s: %w", what, err)
	}
	hs, err := holders(ctx, tx.Conn(), what, w.group)
	if err != nil {
		return fmt.Errorf("look up the sessions writing %s: %w", what, err)
	}
	var outside []Holder
	for _, h := range hs {
		if h.Group != w.group {
			outside = append(outside, h)
		}
	}
	if len(outside) > 0 {
		return &WriterLockError{What: what, Group: w.group, Holders: outside}
	}
	// The group's lock first, then the table's: session-level locks stay
	// when the transaction rolls back (a run stopped between the two), and
	// a session left holding the table's lock without its group's would
	// read as a run outside the group to every instance admitted after it
	// (TestBrokerPauses -long, seed 20: an instance stopped while it was
	// admitted refused the next one), while a session left with only the
	// group's lock writes nothing.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_lock_shared(hashtextextended($1, 0))", lockKey(groupWhat(what, w.group))); err != nil {
		return fmt.Errorf("lock %s: %w", what, err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_lock_shared(hashtextextended($1, 0))", lockKey(what)).Scan(&ok); err != nil {
		return fmt.Errorf("lock %s: %w", what, err)
	}
	if !ok { // an exclusive holder came between: cannot, under the admission lock, but say so
		hs, _ := holders(ctx, tx.Conn(), what, "")
		return &WriterLockError{What: what, Group: w.group, Holders: hs}
	}
	return tx.Commit(ctx) // the session-level locks stay; the admission lock goes
}

// groupWhat is the lock of a group's instances on what.
func groupWhat(what, group string) string { return what + " group " + group }

// holdersSQL lists the other sessions holding the advisory lock keyed
// $1 — a bigint key shows in pg_locks as classid (its high 32 bits) and
// objid (its low ones) with objsubid 1 — and whether each also holds the
// lock keyed $2 (a group's).
const holdersSQL = `WITH k AS (SELECT hashtextextended($1, 0) AS k, hashtextextended($2, 0) AS g),
held AS (
  SELECT l.pid, (l.classid::bigint << 32) | l.objid::bigint AS key
  FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
SELECT h.pid, coalesce(a.application_name, ''), coalesce(a.client_hostname, host(a.client_addr), 'local'), a.backend_start,
  EXISTS (SELECT 1 FROM held g WHERE g.pid = h.pid AND g.key = k.g)
FROM held h JOIN k ON h.key = k.k
LEFT JOIN pg_stat_activity a ON a.pid = h.pid
WHERE h.pid <> pg_backend_pid()
ORDER BY h.pid`

// holders returns the other sessions holding what's writer lock, each
// with Group set to group when it also holds (what, group)'s lock.
func holders(ctx context.Context, conn *pgx.Conn, what, group string) ([]Holder, error) {
	rows, err := conn.Query(ctx, holdersSQL, lockKey(what), lockKey(groupWhat(what, group)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Holder
	for rows.Next() {
		var h Holder
		var since *time.Time
		var inGroup bool
		if err := rows.Scan(&h.PID, &h.ApplicationName, &h.Client, &since, &inGroup); err != nil {
			return nil, err
		}
		if since != nil {
			h.Since = *since
		}
		if inGroup && group != "" {
			h.Group = group
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ApplicationName returns the application_name tidemark's connections
// give (when the URL sets none): "tidemark <pipeline> pid <pid> on
// <host>", cut to PostgreSQL's 63 bytes, so that pg_stat_activity — and a
// refused run's message — names the process that writes.
func ApplicationName(pipeline string) string {
	host, _ := os.Hostname()
	s := fmt.Sprintf("tidemark %s pid %d on %s", pipeline, os.Getpid(), host)
	if pipeline == "" {
		s = fmt.Sprintf("tidemark pid %d on %s", os.Getpid(), host)
	}
	for len(s) > 63 {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	return s
}

// live reports whether every holder is a tidemark process known to be
// running: one on this host (its application_name says "pid N on
// <this host>") whose process exists and is not this one. A holder that
// may be a session whose process has just died is waited for instead.
func (e *WriterLockError) live() bool {
	if len(e.Holders) == 0 {
		return false
	}
	host, _ := os.Hostname()
	for _, h := range e.Holders {
		pid, on, ok := appPID(h.ApplicationName)
		if !ok || on != host || pid == os.Getpid() || !processAlive(pid) {
			return false
		}
	}
	return true
}

// appPID reads the pid and host of an application_name ApplicationName
// made, whole (not cut at 63 bytes).
func appPID(app string) (pid int, host string, ok bool) {
	if !strings.HasPrefix(app, "tidemark ") {
		return 0, "", false
	}
	i := strings.LastIndex(app, " pid ")
	if i < 0 {
		return 0, "", false
	}
	rest := app[i+len(" pid "):]
	num, host, ok := strings.Cut(rest, " on ")
	if !ok {
		return 0, "", false
	}
	pid, err := strconv.Atoi(num)
	if err != nil || pid <= 0 || len(app) >= 63 {
		return 0, "", false
	}
	return pid, host, true
}
