// Package orderscdc is the change data capture example
// (examples/orders-cdc): an application's orders table in PostgreSQL,
// written by a generator (inserts, status updates, cancellations and
// deletes in transactions of one to three changes), and pipeline.yaml,
// which reads the table's changes through logical replication
// (source.type postgres_cdc) and keeps revenue per store per minute in a
// PostgreSQL result table. `go run ./examples/orders-cdc/gen` runs the
// generator; the test checks the result table against SELECT on the
// orders table.
package orderscdc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Setup creates the example's objects in schema, as the application (not
// tidemark) would: the orders table and the publication tidemark reads.
// It does nothing to objects that exist.
func Setup(ctx context.Context, conn *pgx.Conn, schema, publication string) error {
	t := pgx.Identifier{schema, "orders"}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (
		order_id   bigint PRIMARY KEY,
		store_id   text NOT NULL,
		amount     numeric(12,2) NOT NULL,
		status     text NOT NULL,
		created_at timestamptz NOT NULL,
		updated_at timestamptz NOT NULL)`); err != nil {
		return fmt.Errorf("creating %s: %w", t, err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_publication WHERE pubname = $1`, publication).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, `CREATE PUBLICATION `+pgx.Identifier{publication}.Sanitize()+` FOR TABLE `+t+
			` WITH (publish = 'insert, update, delete')`); err != nil {
			return fmt.Errorf("creating publication %s: %w", publication, err)
		}
	}
	return nil
}

// Drop removes what the example made: the slot of pipeline.yaml
// (tidemark_orders_cdc, when no run reads it), the publication, and the
// orders and revenue_minute tables with tidemark's bookkeeping tables in
// schema.
func Drop(ctx context.Context, conn *pgx.Conn, schema, publication, slot string) error {
	for _, q := range []string{
		`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '` + strings.ReplaceAll(slot, "'", "''") + `' AND NOT active`,
		`DROP PUBLICATION IF EXISTS ` + pgx.Identifier{publication}.Sanitize(),
		`DROP TABLE IF EXISTS ` + pgx.Identifier{schema, "orders"}.Sanitize() + `, ` + pgx.Identifier{schema, "revenue_minute"}.Sanitize(),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// Options configure Generate.
type Options struct {
	Schema string // the orders table's schema
	// Orders is the number of orders placed.
	Orders int
	// Interval is the wall-clock time between two transactions (0: none).
	Interval time.Duration
	// Seed chooses the stores, amounts and what happens to each order.
	Seed uint64
	// Now returns the orders' created_at and updated_at. Default
	// time.Now.
	Now func() time.Time
	// FirstID is the first order id (ids go up from it).
	FirstID int64
}

// Stats count what Generate wrote.
type Stats struct {
	Transactions, Orders, StatusUpdates, Cancellations, Deletes int
}

// Generate places opts.Orders orders in transactions: each places an
// order of one of 8 stores, and may also move an earlier open order on
// (paid → shipped, with its amount corrected now and then), cancel one
// (status cancelled) or delete one (a test order taken out). It returns
// what it wrote; ctx's cancellation stops it between transactions.
func Generate(ctx context.Context, conn *pgx.Conn, opts Options) (Stats, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 11))
	t := pgx.Identifier{opts.Schema, "orders"}.Sanitize()
	var st Stats
	var open []int64
	id := opts.FirstID
	for range opts.Orders {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		now := opts.Now().UTC()
		tx, err := conn.Begin(ctx)
		if err != nil {
			return st, err
		}
		run := func(q string, args ...any) {
			if err == nil {
				_, err = tx.Exec(ctx, q, args...)
			}
		}
		run(`INSERT INTO `+t+` VALUES ($1, $2, $3, 'paid', $4, $4)`, id, fmt.Sprintf("store-%d", rng.IntN(8)),
			fmt.Sprintf("%d.%02d", 5+rng.IntN(200), rng.IntN(100)), now)
		open = append(open, id)
		st.Orders++
		id++
		if len(open) > 4 {
			i := rng.IntN(len(open) - 1) // never the order just placed
			o := open[i]
			done := true // the order leaves the open ones
			switch k := rng.IntN(10); {
			case k < 5:
				if rng.IntN(4) == 0 {
					run(`UPDATE `+t+` SET status = 'shipped', amount = amount - 1, updated_at = $2 WHERE order_id = $1`, o, now)
				} else {
					run(`UPDATE `+t+` SET status = 'shipped', updated_at = $2 WHERE order_id = $1`, o, now)
				}
				st.StatusUpdates++
			case k < 7:
				run(`UPDATE `+t+` SET status = 'cancelled', updated_at = $2 WHERE order_id = $1`, o, now)
				st.Cancellations++
			case k < 8:
				run(`DELETE FROM `+t+` WHERE order_id = $1`, o)
				st.Deletes++
			default:
				done = false // left as it is this time
			}
			if done {
				open = append(open[:i], open[i+1:]...)
			}
		}
		if err != nil {
			tx.Rollback(ctx)
			return st, err
		}
		if err := tx.Commit(ctx); err != nil {
			return st, err
		}
		st.Transactions++
		if opts.Interval > 0 {
			select {
			case <-ctx.Done():
				return st, ctx.Err()
			case <-time.After(opts.Interval):
			}
		}
	}
	return st, nil
}
