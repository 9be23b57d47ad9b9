package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pid is the server process of the sink's connection (0 without one).
func (x *txRunner) pid() uint32 {
	if x.conn == nil || x.conn.IsClosed() {
		return 0
	}
	return x.conn.PgConn().PID()
}

// fast makes retries wait 1 ms, recording each wait.
func (x *txRunner) fast(waits *[]time.Duration) {
	x.sleep = func(_ context.Context, d time.Duration) error {
		if waits != nil {
			*waits = append(*waits, d)
		}
		time.Sleep(time.Millisecond)
		return nil
	}
}

// onTx sets the hook run inside each attempt's transaction ("commit") and
// after it committed ("committed").
func (x *txRunner) onTx(f func(ctx context.Context, tx pgx.Tx, at string) error) { x.hook = f }

// The sinks a test opened, by table, for newSink, newRecords and
// newLedger: opening another sink on a table ends the previous one's
// session as the end of its process would (one writer per table: a new
// sink on a table is a new run, the earlier run is gone).
var (
	openMu sync.Mutex
	opened = map[string]func(){}
)

// succeed crashes the sink last opened on table (its connection closed
// without a word: no flush, no commit), and records crash for the next.
func succeed(table string, crash func()) {
	openMu.Lock()
	defer openMu.Unlock()
	if prev := opened[table]; prev != nil {
		prev()
	}
	opened[table] = crash
}

// crash ends the runner's session as a killed process would: nothing
// committed or flushed; the server releases the session's locks.
func (x *txRunner) crash() {
	if x.conn != nil && !x.conn.IsClosed() {
		release(context.Background(), x.conn)
		x.conn.Close(context.Background())
	}
}
