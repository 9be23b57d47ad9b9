package postgres

import (
	"context"
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
