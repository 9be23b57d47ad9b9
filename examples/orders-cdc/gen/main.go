// Command gen writes the orders of examples/orders-cdc into PostgreSQL:
//
//	go run ./examples/orders-cdc/gen --setup           # the table and the publication
//	go run ./examples/orders-cdc/gen --orders 3000     # 3000 orders, 20 a second
//	go run ./examples/orders-cdc/gen --drop            # slot, publication, tables
//
// The database is $PGURL, else the local one of the README.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5"

	orderscdc "github.com/tidemark/tidemark/examples/orders-cdc"
)

func main() {
	dsn := flag.String("dsn", envOr("PGURL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "the database")
	schema := flag.String("schema", "public", "the schema of the orders table")
	pub := flag.String("publication", "tidemark_orders", "the publication tidemark reads")
	setup := flag.Bool("setup", false, "create the orders table and the publication, then exit")
	drop := flag.Bool("drop", false, "drop the pipeline's slot (tidemark_orders_cdc), the publication and the tables, then exit")
	orders := flag.Int("orders", 1200, "orders to place")
	rate := flag.Float64("rate", 20, "transactions a second (0: as fast as the database takes them)")
	seed := flag.Uint64("seed", 1, "what happens to the orders")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		fail(err)
	}
	defer conn.Close(context.Background())
	switch {
	case *setup:
		fail(orderscdc.Setup(ctx, conn, *schema, *pub))
		return
	case *drop:
		fail(orderscdc.Drop(ctx, conn, *schema, *pub, "tidemark_orders_cdc"))
		return
	}
	if err := orderscdc.Setup(ctx, conn, *schema, *pub); err != nil {
		fail(err)
	}
	var first int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(order_id), 0) + 1 FROM `+pgx.Identifier{*schema, "orders"}.Sanitize()).Scan(&first); err != nil {
		fail(err)
	}
	var every time.Duration
	if *rate > 0 {
		every = time.Duration(float64(time.Second) / *rate)
	}
	st, err := orderscdc.Generate(ctx, conn, orderscdc.Options{Schema: *schema, Orders: *orders, Interval: every, Seed: *seed, FirstID: first})
	fmt.Printf("%d transactions: %d orders placed, %d shipped, %d cancelled, %d deleted\n", st.Transactions, st.Orders, st.StatusUpdates, st.Cancellations, st.Deletes)
	if err != nil && ctx.Err() == nil {
		fail(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
