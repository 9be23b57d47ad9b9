// Package pgutil holds the PostgreSQL helpers that the PostgreSQL sink
// (sink/postgres) and the PostgreSQL checkpoint store
// (checkpoint.PGTaskStore) share: the bounds of their retries (Retry), the
// test of an error worth retrying on a new connection (Transient), and the
// table that records which tables tidemark created (TablesTable,
// CreateTablesSQL).
//
// In the data flow it sits below both, beside the core: it imports only
// pgx, so that a store depends on no sink.
package pgutil

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Retry bounds the retries of a transaction that failed for a transient
// reason (see Transient). Attempt n+1 waits Backoff·2ⁿ, at most MaxBackoff.
type Retry struct {
	// Retries is how many times a failed transaction is tried again.
	// Default (a zero Retry) DefaultRetries; set Off to try once.
	Retries int
	// Off disables retrying (spec key retries: 0).
	Off bool
	// Backoff is the first wait. Default 250 ms.
	Backoff time.Duration
	// MaxBackoff caps a wait. Default 8 s.
	MaxBackoff time.Duration
}

// The default retry bounds: 250 ms, 500 ms, 1 s, 2 s, 4 s, 8 s — about 16 s
// in all, enough for a server restart or a failover to a standby.
const (
	DefaultRetries    = 6
	DefaultBackoff    = 250 * time.Millisecond
	DefaultMaxBackoff = 8 * time.Second
)

// RetryCount returns a Retry of n retries with the default waits (n = 0:
// none), as the spec key retries gives it.
func RetryCount(n int) Retry {
	if n == 0 {
		return Retry{Off: true}
	}
	return Retry{Retries: n}
}

// WithDefaults returns r with its zero fields set to the defaults, and
// Retries 0 when Off.
func (r Retry) WithDefaults() Retry {
	if r.Off {
		r.Retries = 0
	} else if r.Retries == 0 {
		r.Retries = DefaultRetries
	}
	if r.Backoff <= 0 {
		r.Backoff = DefaultBackoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultMaxBackoff
	}
	return r
}

// Wait returns the wait before retry n (0-based) of r (with its
// defaults): Backoff·2ⁿ, at most MaxBackoff.
func (r Retry) Wait(n int) time.Duration {
	d := r.Backoff
	for i := 0; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Sleep waits d, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transient reports whether err is worth retrying in a new transaction,
// after reconnecting: the connection was lost or could not be made (a
// network error, the server ending the session — pg_terminate_backend,
// a restart —, SQLSTATE class 08), a serialization failure (40001), a
// deadlock (40P01), the server shutting down or starting (57P01, 57P02,
// 57P03), too many connections (53300). Errors of the statements
// themselves (constraints, missing tables, values) are not transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "57P01", "57P02", "57P03", "53300":
			return true
		}
		return len(pe.Code) == 5 && pe.Code[:2] == "08"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	// pgx reports a call on a connection it closed after an error so.
	return pgconn.SafeToRetry(err) || err.Error() == "conn closed"
}

// TablesTable is the name of the table recording which tables tidemark
// created, one row per table, in the schema of those tables:
//
//	tidemark_tables(table_name text PRIMARY KEY, table_oid bigint NOT NULL,
//	                pipeline text NOT NULL, created_at timestamptz NOT NULL)
//
// A table is tidemark's when its row names it and the table's oid is the
// one recorded: a table dropped and created again by someone else (another
// oid) is not. tidemark drops, replaces or empties only such a table.
const TablesTable = "tidemark_tables"

// CreateTablesSQL returns the statement that creates TablesTable, named
// qualified (a quoted, schema-qualified name), when it is absent.
func CreateTablesSQL(qualified string) string {
	return "CREATE TABLE IF NOT EXISTS " + qualified + ` (
  table_name text NOT NULL PRIMARY KEY,
  table_oid bigint NOT NULL,
  pipeline text NOT NULL,
  created_at timestamptz NOT NULL)`
}
