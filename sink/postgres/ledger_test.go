package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/row"
)

// revenueLedger is the article's ledger: net revenue and accepted events
// per store and ten-minute window.
func revenueLedger(schema string) LedgerConfig {
	return LedgerConfig{
		Table:          schema + ".revenue_event_ledger",
		AggregateTable: schema + ".revenue_10m",
		Keys:           []changelog.Column{{Name: "store_id", Kind: row.KindString}},
		Aggregates: []LedgerAggregate{
			{Name: "net_amount", Func: LedgerSum, Kind: row.KindDecimal},
			{Name: "accepted_events", Func: LedgerCount},
		},
		Pipeline: "revenue",
	}
}

func newLedger(t testing.TB, dsn string, cfg LedgerConfig) *Ledger {
	t.Helper()
	var l *Ledger
	succeed(cfg.Table, func() { // a new run: the previous one is gone
		if l.conn != nil && !l.conn.IsClosed() {
			release(context.Background(), l.conn)
			l.conn.Close(context.Background())
		}
	})
	l, err := NewLedger(context.Background(), dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// payment builds the delivery of a payment or refund event of store S1 in
// the window [10:00, 10:10) Seoul time, its payload hash computed by the
// pipeline's dedup hasher from the JSON payload.
func payment(t testing.TB, id, typ, at, amount string) LedgerEvent {
	t.Helper()
	payload := fmt.Sprintf(`{"event_id":%q,"order_id":"O1","store_id":"S1","type":%q,"occurred_at":%q,"amount":%s}`, id, typ, at, amount)
	h, ok := dedup.NewHasher(nil).Sum([]byte(payload))
	if !ok {
		t.Fatalf("payload %s does not parse", payload)
	}
	return LedgerEvent{
		EventID:     id,
		PayloadHash: int64(h),
		EventTime:   ms(t, at),
		WindowStart: ms(t, "2026-09-01T10:00:00+09:00"),
		WindowEnd:   ms(t, "2026-09-01T10:10:00+09:00"),
		Key:         []row.Value{row.Str("S1")},
		Deltas:      []row.Value{dec(t, amount), row.Null},
	}
}

func apply(t testing.TB, l *Ledger, events ...LedgerEvent) LedgerResult {
	t.Helper()
	res, err := l.Apply(context.Background(), events)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLedgerArticleScenario is the second source article's scenario: a
// payment e100 of +25,000 and a refund e101 of −5,000 for store S1 in the
// window 10:00–10:10 make 20,000. The refund delivered again (same
// payload) in a later transaction is a duplicate and changes nothing; a
// delivery of e101 with −8,000 (another payload hash) is a conflict and
// changes nothing.
func TestLedgerArticleScenario(t *testing.T) {
	dsn, schema := testSchema(t)
	cfg := revenueLedger(schema)
	l := newLedger(t, dsn, cfg)
	aggregate := "SELECT window_start, window_end, store_id, net_amount, accepted_events FROM " + cfg.AggregateTable + " ORDER BY window_start, store_id"
	want := "2026-09-01 10:00:00+09 | 2026-09-01 10:10:00+09 | S1 | 20000 | 2\n"

	e100 := payment(t, "e100", "PAYMENT", "2026-09-01T10:02:00+09:00", "25000")
	e101 := payment(t, "e101", "REFUND", "2026-09-01T10:05:00+09:00", "-5000")
	if res := apply(t, l, e100, e101); fmt.Sprint(res) != "{2 0 []}" {
		t.Fatalf("first delivery: %+v", res)
	}
	check(t, dsn, aggregate, want)

	// 10:21: the same refund again.
	if res := apply(t, l, e101); fmt.Sprint(res) != "{0 1 []}" {
		t.Fatalf("redelivery: %+v, want one duplicate", res)
	}
	check(t, dsn, aggregate, want)

	// The same id with another amount: a conflict, not applied.
	bad := payment(t, "e101", "REFUND", "2026-09-01T10:05:00+09:00", "-8000")
	res := apply(t, l, bad)
	wantConflict := LedgerConflict{Index: 0, EventID: "e101", StoredHash: e101.PayloadHash, NewHash: bad.PayloadHash}
	if res.Applied != 0 || res.Duplicates != 0 || len(res.Conflicts) != 1 || res.Conflicts[0] != wantConflict || e101.PayloadHash == bad.PayloadHash {
		t.Fatalf("conflicting delivery: %+v, want %+v", res, wantConflict)
	}
	check(t, dsn, aggregate, want)

	check(t, dsn, "SELECT event_id, payload_hash = "+fmt.Sprint(e101.PayloadHash)+", event_time, window_start, window_end, store_id, net_amount, accepted_events, inserted_at IS NOT NULL FROM "+cfg.Table+" ORDER BY event_id",
		"e100 | f | 2026-09-01 10:02:00+09 | 2026-09-01 10:00:00+09 | 2026-09-01 10:10:00+09 | S1 | 25000 | 1 | t\n"+
			"e101 | t | 2026-09-01 10:05:00+09 | 2026-09-01 10:00:00+09 | 2026-09-01 10:10:00+09 | S1 | -5000 | 1 | t\n")
	// The article's query over the ledger gives the same net amount.
	check(t, dsn, "SELECT count(*), sum(net_amount) FROM "+cfg.Table+" WHERE store_id = 'S1'", "2 | 20000\n")
}

// TestLedgerCrashBetweenInsertAndCheckpoint: a batch is applied (ledger
// rows and aggregates committed), then the process dies before the
// checkpoint that covers it. The restore replays the batch, and the
// stream's dedup state (restored from the older checkpoint) no longer
// knows its ids; the ledger does: the second Apply changes nothing and
// reports every delivery as a duplicate.
func TestLedgerCrashBetweenInsertAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	cfg := revenueLedger(schema)
	aggregate := "SELECT store_id, net_amount, accepted_events FROM " + cfg.AggregateTable + " ORDER BY store_id"

	l := newLedger(t, dsn, cfg)
	if err := l.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	apply(t, l, payment(t, "e100", "PAYMENT", "2026-09-01T10:02:00+09:00", "25000"))
	if p, err := l.Prepare(ctx, 1); err != nil || p != nil {
		t.Fatalf("Prepare: %v, %v", p, err)
	}
	if err := l.Commit(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	batch := []LedgerEvent{
		payment(t, "e101", "REFUND", "2026-09-01T10:05:00+09:00", "-5000"),
		payment(t, "e102", "PAYMENT", "2026-09-01T10:07:30+09:00", "1250.50"),
	}
	apply(t, l, batch...)
	want := "S1 | 21250.50 | 3\n"
	check(t, dsn, aggregate, want)
	l.Close(ctx) // the crash: checkpoint 2 never happens

	l2 := newLedger(t, dsn, cfg)
	if err := l2.Recover(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if res := apply(t, l2, batch...); fmt.Sprint(res) != "{0 2 []}" {
		t.Fatalf("replayed batch: %+v, want two duplicates", res)
	}
	check(t, dsn, aggregate, want)
	if err := l2.Commit(ctx, 2, nil); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT pipeline, sink, checkpoint_id FROM "+schema+".tidemark_commits", "revenue | "+cfg.Table+" | 2\n")
	if err := l2.Commit(ctx, 1, nil); err != nil { // an older id does not move it back
		t.Fatal(err)
	}
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "2\n")
	if err := l2.Recover(ctx, 1, nil); err != nil { // checkpoint 2 proved unusable
		t.Fatal(err)
	}
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "1\n")
	check(t, dsn, aggregate, want)
	if err := l2.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT count(*) FROM "+schema+".tidemark_commits", "0\n")
	check(t, dsn, aggregate, want) // a fresh start keeps the ledger
}

// TestLedgerBatchEdgeCases: repeated ids within one batch, NULL keys and
// deltas, int and decimal sums, several windows and keys, and the
// aggregate table equal to a GROUP BY over the ledger.
func TestLedgerBatchEdgeCases(t *testing.T) {
	dsn, schema := testSchema(t)
	cfg := LedgerConfig{
		Table:          schema + ".ledger",
		AggregateTable: schema + ".agg",
		Keys:           []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "vip", Kind: row.KindBool}},
		Aggregates: []LedgerAggregate{
			{Name: "n", Func: LedgerCount},
			{Name: "qty", Func: LedgerSum, Kind: row.KindInt},
			{Name: "amount", Func: LedgerSum, Kind: row.KindDecimal},
		},
	}
	l := newLedger(t, dsn, cfg)
	ev := func(id string, hash int64, window int64, store row.Value, qty, amount row.Value) LedgerEvent {
		return LedgerEvent{EventID: id, PayloadHash: hash, EventTime: window*60000 + 1, WindowStart: window * 60000, WindowEnd: (window + 1) * 60000,
			Key: []row.Value{store, row.Null}, Deltas: []row.Value{row.Null, qty, amount}}
	}
	a := row.Str("a")
	res := apply(t, l,
		ev("x1", 1, 0, a, row.Int(2), dec(t, "1.50")),
		ev("x2", 2, 0, row.Null, row.Int(3), row.Int(4)),
		ev("x1", 1, 0, a, row.Int(2), dec(t, "1.50")), // duplicate within the batch
		ev("x3", 3, 1, a, row.Null, row.Null),
		ev("x1", 9, 0, a, row.Int(7), dec(t, "7")), // conflict within the batch
		ev("x4", 4, 0, row.Null, row.Int(-1), dec(t, "0.25")),
		ev("x5", 5, 0, a, row.Int(-2), dec(t, "-1.5")),
	)
	if fmt.Sprint(res) != "{5 1 [{4 x1 1 9}]}" {
		t.Fatalf("got %+v", res)
	}
	const aggQuery = "SELECT window_start, store, vip, n, qty, amount FROM %s ORDER BY window_start, store NULLS FIRST"
	want := "1970-01-01 09:00:00+09 | NULL | NULL | 2 | 2 | 4.25\n" +
		"1970-01-01 09:00:00+09 | a | NULL | 2 | 0 | 0.00\n" +
		"1970-01-01 09:01:00+09 | a | NULL | 1 | 0 | 0\n"
	check(t, dsn, fmt.Sprintf(aggQuery, cfg.AggregateTable), want)
	check(t, dsn, fmt.Sprintf(aggQuery, "(SELECT window_start, store, vip, sum(n) AS n, coalesce(sum(qty), 0) AS qty, coalesce(sum(amount), 0) AS amount FROM "+
		cfg.Table+" GROUP BY window_start, window_end, store, vip) g"), want)

	// Redeliveries in a later batch: two duplicates, a conflict with the
	// stored hash, and one new event.
	res = apply(t, l,
		ev("x2", 2, 0, row.Null, row.Int(3), row.Int(4)),
		ev("x4", 40, 0, row.Null, row.Int(-1), dec(t, "0.25")),
		ev("x6", 6, 1, a, row.Int(1), dec(t, "1")),
		ev("x6", 6, 1, a, row.Int(1), dec(t, "1")),
	)
	if fmt.Sprint(res) != "{1 2 [{1 x4 4 40}]}" {
		t.Fatalf("got %+v", res)
	}
	check(t, dsn, fmt.Sprintf(aggQuery, cfg.AggregateTable),
		"1970-01-01 09:00:00+09 | NULL | NULL | 2 | 2 | 4.25\n"+
			"1970-01-01 09:00:00+09 | a | NULL | 2 | 0 | 0.00\n"+
			"1970-01-01 09:01:00+09 | a | NULL | 2 | 1 | 1\n")

	if res, err := l.Apply(context.Background(), nil); err != nil || fmt.Sprint(res) != "{0 0 []}" {
		t.Fatalf("empty batch: %+v, %v", res, err)
	}
}

// TestLedgerErrors: bad configurations, events and markers are refused;
// an existing table of another shape is a *SchemaError.
func TestLedgerErrors(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	base := revenueLedger(schema)
	for _, c := range []struct {
		edit func(*LedgerConfig)
		want string
	}{
		{func(c *LedgerConfig) { c.Table = "" }, "ledger table: empty table name"},
		{func(c *LedgerConfig) { c.AggregateTable = c.Table }, "are both"},
		{func(c *LedgerConfig) { c.Aggregates = nil }, "no aggregate columns"},
		{func(c *LedgerConfig) { c.Aggregates = []LedgerAggregate{{Name: "s", Kind: row.KindString}} }, "sum of string"},
		{func(c *LedgerConfig) { c.Keys = []changelog.Column{{Name: "event_id", Kind: row.KindString}} }, `column "event_id" appears twice`},
		{func(c *LedgerConfig) { c.Aggregates = []LedgerAggregate{{Name: "n", Func: 7}} }, "unknown aggregate"},
	} {
		cfg := base
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want %q", err, c.want)
		}
		if _, err := NewLedger(ctx, dsn, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLedger: %v, want %q", err, c.want)
		}
	}

	l := newLedger(t, dsn, base)
	good := payment(t, "e1", "PAYMENT", "2026-09-01T10:02:00+09:00", "1")
	for _, c := range []struct {
		edit func(*LedgerEvent)
		want string
	}{
		{func(e *LedgerEvent) { e.EventID = "" }, "empty event id"},
		{func(e *LedgerEvent) { e.Key = nil }, "0 key values and 2 deltas, ledger has 1 and 2"},
		{func(e *LedgerEvent) { e.Deltas[0] = row.Str("1") }, `column "net_amount" is decimal, value is string`},
		{func(e *LedgerEvent) { e.Key = []row.Value{row.Int(1)} }, `column "store_id" is string, value is int`},
	} {
		ev := good
		ev.Deltas = append([]row.Value{}, good.Deltas...)
		c.edit(&ev)
		if _, err := l.Apply(ctx, []LedgerEvent{good, ev}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Apply: %v, want %q", err, c.want)
		}
	}
	check(t, dsn, "SELECT count(*) FROM "+base.Table, "0\n") // nothing of a refused batch
	noPipeline := base
	noPipeline.Pipeline = ""
	l2 := newLedger(t, dsn, noPipeline)
	if err := l2.Commit(ctx, 1, nil); err == nil || !strings.Contains(err.Error(), "Pipeline is empty") {
		t.Errorf("Commit without a pipeline: %v", err)
	}

	other := base
	other.Aggregates = other.Aggregates[:1]
	var se *SchemaError
	succeed(base.Table, func() {}) // l2's run is over
	if _, err := NewLedger(ctx, dsn, other); !errors.As(err, &se) || fmt.Sprint(se.Extra) != "[accepted_events]" {
		t.Fatalf("got %v", err)
	}
	l.Close(ctx)
	if _, err := l.Apply(ctx, []LedgerEvent{good}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
}
