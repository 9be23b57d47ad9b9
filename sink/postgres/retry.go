package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/pgutil"
)

// Retry bounds the retries of a transaction that failed for a transient
// reason (see Transient). Attempt n+1 waits Backoff·2ⁿ, at most MaxBackoff
// (internal/pgutil, shared with the PostgreSQL checkpoint store).
type Retry = pgutil.Retry

// The default retry bounds: 250 ms, 500 ms, 1 s, 2 s, 4 s, 8 s — about 16 s
// in all, enough for a server restart or a failover to a standby.
const (
	DefaultRetries    = pgutil.DefaultRetries
	DefaultBackoff    = pgutil.DefaultBackoff
	DefaultMaxBackoff = pgutil.DefaultMaxBackoff
)

// RetryCount returns a Retry of n retries with the default waits (n = 0:
// none), as the spec key retries gives it.
func RetryCount(n int) Retry { return pgutil.RetryCount(n) }

// Transient reports whether err is worth retrying in a new transaction,
// after reconnecting (pgutil.Transient: a lost or refused connection,
// SQLSTATE class 08, 40001, 40P01, 57P01-57P03, 53300). Errors of the
// statements themselves (constraints, missing tables, values) are not
// transient.
func Transient(err error) bool { return pgutil.Transient(err) }

// RetriesError is returned (wrapped) when a transaction failed for a
// transient reason every time it was tried.
type RetriesError struct {
	Attempts int
	Waited   time.Duration
	Err      error // the last attempt's error
}

// Error implements error.
func (e *RetriesError) Error() string {
	return fmt.Sprintf("failed %d times in %s, for a transient reason each time (sink key retries bounds the retries): %v",
		e.Attempts, e.Waited.Round(time.Millisecond), e.Err)
}

// Unwrap returns the last attempt's error.
func (e *RetriesError) Unwrap() error { return e.Err }

// txRunner runs transactions on a connection it reconnects, retrying
// transient failures.
type txRunner struct {
	dsn   string
	conn  *pgx.Conn
	retry Retry
	// app is the connections' application_name (ApplicationName).
	app string
	// lock, when set, is taken on every new connection before anything
	// else (one writer per table).
	lock *writerLock
	// setup runs on every new connection (the staging table).
	setup func(ctx context.Context, conn *pgx.Conn) error
	// sleep waits d or until ctx is done (a test may replace it).
	sleep func(ctx context.Context, d time.Duration) error
	// hook, when set, runs inside each attempt's transaction after fn and
	// before COMMIT (at "commit"), and after COMMIT (at "committed"); an
	// error it returns fails the attempt (tests inject faults here).
	hook func(ctx context.Context, tx pgx.Tx, at string) error
	// attempts counts the transactions tried (tests).
	attempts int
}

// ensure (re)connects when there is no open connection.
func (x *txRunner) ensure(ctx context.Context) error {
	if x.conn != nil && !x.conn.IsClosed() {
		return nil
	}
	conn, err := connect(ctx, x.dsn, x.app)
	if err != nil {
		return err
	}
	if x.lock != nil {
		if err := x.lock.take(ctx, conn); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return err
		}
	}
	if x.setup != nil {
		if err := x.setup(ctx, conn); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return err
		}
	}
	x.conn = conn
	return nil
}

// drop closes the connection after a failure, so that the next attempt
// starts on a new one.
func (x *txRunner) drop(ctx context.Context) {
	if x.conn != nil {
		x.conn.Close(context.WithoutCancel(ctx))
		x.conn = nil
	}
}

// inTx runs fn in a transaction and commits it, retrying the whole
// transaction on a new connection when it fails for a transient reason,
// up to the Retry bound. fn must be safe to run again: everything it
// wrote is rolled back with its transaction, and a commit whose outcome is
// unknown (the connection broke during COMMIT) must be recognized by fn
// itself — the commit marker does that for the sinks. It returns fn's or
// the database's error; after the bound, a *RetriesError wrapping the last.
func (x *txRunner) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	r := x.retry.WithDefaults()
	var waited time.Duration
	for n := 0; ; n++ {
		err := x.attempt(ctx, fn)
		if err == nil {
			return nil
		}
		if !Transient(err) {
			return err
		}
		x.drop(ctx)
		if n >= r.Retries {
			if n == 0 {
				return err
			}
			return &RetriesError{Attempts: n + 1, Waited: waited, Err: err}
		}
		d := r.Wait(n)
		sleep := x.sleep
		if sleep == nil {
			sleep = pgutil.Sleep
		}
		if serr := sleep(ctx, d); serr != nil {
			return fmt.Errorf("%w (while waiting to retry after: %v)", serr, err)
		}
		waited += d
	}
}

func (x *txRunner) attempt(ctx context.Context, fn func(pgx.Tx) error) error {
	x.attempts++
	if err := x.ensure(ctx); err != nil {
		return err
	}
	tx, err := x.conn.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if x.hook != nil {
		if err := x.hook(ctx, tx, "commit"); err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if x.hook != nil {
		return x.hook(ctx, nil, "committed")
	}
	return nil
}

// close closes the connection.
func (x *txRunner) close(ctx context.Context) error {
	if x.conn == nil {
		return nil
	}
	release(ctx, x.conn)
	err := x.conn.Close(context.WithoutCancel(ctx))
	x.conn = nil
	return err
}
