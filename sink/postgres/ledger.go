package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
)

// LedgerFunc is how an aggregate column of a ledger combines events.
type LedgerFunc uint8

// The ledger's additive aggregates.
const (
	// LedgerSum adds the event's delta (sum(x)). A NULL delta adds nothing.
	LedgerSum LedgerFunc = iota
	// LedgerCount adds 1 per event (count); the event's delta is ignored.
	LedgerCount
)

// String returns "sum" or "count".
func (f LedgerFunc) String() string {
	switch f {
	case LedgerSum:
		return "sum"
	case LedgerCount:
		return "count"
	}
	return fmt.Sprintf("ledgerfunc(%d)", uint8(f))
}

// LedgerAggregate is one additive column of a ledger's aggregate table,
// and the delta column of the same name in the ledger table.
type LedgerAggregate struct {
	Name string
	Func LedgerFunc
	// Kind is the column's kind for LedgerSum: row.KindInt (bigint) or
	// row.KindDecimal (numeric). A LedgerCount column is always bigint.
	Kind row.Kind
}

// LedgerConfig names a ledger's tables and columns.
type LedgerConfig struct {
	// Table is the event ledger, one row per accepted event id, optionally
	// schema-qualified ("analytics.revenue_event_ledger"). Required.
	Table string
	// AggregateTable holds one row per window and key with the aggregate
	// columns, optionally schema-qualified. Required, and not Table.
	AggregateTable string
	// Keys are the group key columns (kinds bool, int, decimal, string,
	// timestamp; values may be NULL). May be empty.
	Keys []changelog.Column
	// Aggregates are the additive columns, at least one.
	Aggregates []LedgerAggregate
	// Pipeline and Sink name the ledger's commit marker in
	// tidemark_commits (created in the schema of Table). Default Sink:
	// Table as given. Pipeline is required to use the ledger as a
	// sink.Committer.
	Pipeline string
	Sink     string
	// Group: as Options.Group (the writer lock's shared mode).
	Group string
}

// Validate checks the configuration: table names given and distinct,
// columns named once (and not like the fixed columns), kinds storable, at
// least one aggregate, sums of int or decimal.
func (c *LedgerConfig) Validate() error {
	_, _, _, err := c.layout()
	return err
}

// LedgerEvent is one delivery of an event to Apply.
type LedgerEvent struct {
	EventID string // the stable event id; not empty
	// PayloadHash is the hash of the event's canonical payload: the same
	// id with another hash is a conflict. dedup.Hasher's uint32 converts
	// losslessly; a 64-bit hash may be stored as int64(h).
	PayloadHash int64
	EventTime   int64 // ms since the Unix epoch
	WindowStart int64 // ms, inclusive: the window the event counts in
	WindowEnd   int64 // ms, exclusive
	// Key holds one value per LedgerConfig.Keys entry, in order.
	Key []row.Value
	// Deltas holds one value per LedgerConfig.Aggregates entry, in order:
	// the amount added by a LedgerSum (an int for an int column; a decimal
	// or an int for a decimal one; NULL adds nothing), ignored for a
	// LedgerCount (use row.Null).
	Deltas []row.Value
}

// LedgerConflict reports a delivery whose event id the ledger holds with a
// different payload hash. It was not applied.
type LedgerConflict struct {
	Index      int    // position of the delivery in Apply's events
	EventID    string // its event id
	StoredHash int64  // the payload hash in the ledger (the first delivery's)
	NewHash    int64  // the delivery's payload hash
}

// LedgerResult is what Apply did with a batch of deliveries. Applied +
// Duplicates + len(Conflicts) is the number of deliveries.
type LedgerResult struct {
	Applied    int              // new event ids, inserted and added to the aggregates
	Duplicates int              // redeliveries of a stored id with the same hash: nothing changed
	Conflicts  []LedgerConflict // redeliveries with another hash, by Index: nothing changed
}

// Ledger is the event-ledger mode: every accepted event id is inserted into
// a ledger table, and its deltas are added to an aggregate table, in the
// same transaction. A redelivered event id finds its ledger row and
// changes nothing, even when the stream's own dedup state was lost (a
// restore from an older checkpoint, a TTL that expired, a backfill), so an
// aggregate counts every event exactly once.
//
// Ledger implements sink.Committer in the commit-before-checkpoint style:
// see Prepare. A Ledger holds one connection and is not safe for
// concurrent use.
type Ledger struct {
	dsn      string
	table    tableName
	agg      tableName
	cols     []column // ledger table
	aggCols  []column // aggregate table
	nKey     int
	funcs    []LedgerAggregate
	mark     marker
	st       ledgerStatements
	conn     *pgx.Conn
	args     []any
	closed   bool
	stageBuf []int // indices of the first delivery of each id
	group    string
}

var _ sink.Committer = (*Ledger)(nil)

// NewLedger connects to the PostgreSQL database at dsn, creates the ledger
// table, the aggregate table and tidemark_commits if they are absent, and
// returns the ledger:
//
//	<Table>(event_id text PRIMARY KEY, payload_hash bigint NOT NULL,
//	        event_time timestamptz NOT NULL, window_start timestamptz NOT NULL,
//	        window_end timestamptz NOT NULL, <keys>, <deltas>,
//	        inserted_at timestamptz NOT NULL DEFAULT now())
//	<AggregateTable>(window_start timestamptz NOT NULL, window_end timestamptz NOT NULL,
//	        <keys>, <aggregates> NOT NULL,
//	        UNIQUE NULLS NOT DISTINCT (window_start, window_end, <keys>))
//
// It returns the error of cfg.Validate, a *SchemaError when a table exists
// with other columns, an error when the server is older than PostgreSQL
// 15, and the database's error. Errors name the tables, never the DSN.
func NewLedger(ctx context.Context, dsn string, cfg LedgerConfig) (*Ledger, error) {
	l, err := openLedger(ctx, dsn, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres ledger %s: %w", cfg.Table, err)
	}
	return l, nil
}

func openLedger(ctx context.Context, dsn string, cfg LedgerConfig) (*Ledger, error) {
	lt, at, cols, err := cfg.layout()
	if err != nil {
		return nil, err
	}
	if cfg.Sink == "" {
		cfg.Sink = lt.String()
	}
	nKey := len(cfg.Keys)
	aggCols := []column{cols[3], cols[4]}
	aggCols = append(aggCols, cols[5:5+nKey]...)
	for _, c := range cols[5+nKey : len(cols)-1] {
		c.null = false
		aggCols = append(aggCols, c)
	}
	l := &Ledger{
		dsn: dsn, table: lt, agg: at, cols: cols, aggCols: aggCols, nKey: nKey,
		funcs: cfg.Aggregates,
		mark:  marker{table: lt.sibling(CommitsTable), pipeline: cfg.Pipeline, sink: cfg.Sink},
		group: cfg.Group,
	}
	l.st = newLedgerStatements(l)
	if err := l.ensureConn(ctx); err != nil {
		return nil, err
	}
	if err := l.init(ctx); err != nil {
		l.conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// aggKey is the aggregate table's unique key: window_start, window_end and
// the key columns.
func (l *Ledger) aggKey() []string {
	names := make([]string, 2+l.nKey)
	for i := range names {
		names[i] = l.aggCols[i].name
	}
	return names
}

func (l *Ledger) init(ctx context.Context) error {
	pk := []string{colEventID}
	for _, step := range []struct {
		t    tableName
		cols []column
		key  string
		keys []string
	}{
		{l.table, l.cols, "PRIMARY KEY (" + quote(colEventID) + ")", pk},
		{l.agg, l.aggCols, uniqueKey(l.aggKey()), l.aggKey()},
	} {
		if _, err := l.conn.Exec(ctx, createTableSQL(step.t, step.cols, step.key)); err != nil {
			return fmt.Errorf("create table %s: %w", step.t, err)
		}
		if err := checkTable(ctx, l.conn, step.t, step.cols, step.keys); err != nil {
			return err
		}
	}
	if err := l.checkHashScheme(ctx); err != nil {
		return err
	}
	if _, err := l.conn.Exec(ctx, createCommitsSQL(l.mark.table)); err != nil {
		return fmt.Errorf("create table %s: %w", l.mark.table, err)
	}
	return nil
}

// hashSchemeComment is the comment of a ledger's payload_hash column: the
// scheme of the hashes it holds (dedup.PayloadHashVersion).
func hashSchemeComment(v int) string {
	return fmt.Sprintf("tidemark event payload hashes, scheme %d", v)
}

// checkHashScheme makes sure the ledger's stored payload hashes are of this
// build's scheme: the payload_hash column's comment names it. An empty
// ledger without the comment gets it; a ledger holding events whose
// column names no scheme (written before schemes were recorded, scheme 1)
// or another one is refused, since comparing its hashes with this build's
// would take every redelivery of its events for a conflict.
func (l *Ledger) checkHashScheme(ctx context.Context) error {
	want := hashSchemeComment(dedup.PayloadHashVersion)
	var comment *string
	err := l.conn.QueryRow(ctx, `SELECT col_description(a.attrelid, a.attnum) FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attname = $2`, l.table.sql(), colPayloadHash).Scan(&comment)
	if err != nil {
		return fmt.Errorf("ledger table %s: read the payload hash scheme: %w", l.table, err)
	}
	if comment != nil && *comment == want {
		return nil
	}
	if comment == nil {
		var empty bool
		if err := l.conn.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM "+l.table.sql()+")").Scan(&empty); err != nil {
			return fmt.Errorf("ledger table %s: %w", l.table, err)
		}
		if empty {
			if _, err := l.conn.Exec(ctx, "COMMENT ON COLUMN "+l.table.sql()+"."+quote(colPayloadHash)+" IS '"+want+"'"); err != nil {
				return fmt.Errorf("ledger table %s: record the payload hash scheme: %w", l.table, err)
			}
			return nil
		}
		scheme := "scheme 1"
		comment = &scheme
	}
	return fmt.Errorf("ledger table %s holds event payload hashes of another scheme (%q; this build computes scheme %d): a redelivery of its events would be taken for a conflict; write to a new ledger table", l.table, *comment, dedup.PayloadHashVersion)
}

// ensureConn (re)connects when the ledger has no open connection, and
// creates the connection's staging table.
func (l *Ledger) ensureConn(ctx context.Context) error {
	if l.conn != nil && !l.conn.IsClosed() {
		return nil
	}
	conn, err := connect(ctx, l.dsn, ApplicationName(l.mark.pipeline))
	if err != nil {
		return err
	}
	lock := writerLock{tables: []tableName{l.table, l.agg}, markers: []marker{l.mark}, group: l.group}
	if err := lock.take(ctx, conn); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return err
	}
	if _, err := conn.Exec(ctx, l.st.createStage); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("create staging table: %w", err)
	}
	l.conn = conn
	return nil
}

// check returns an error when ev does not fit the ledger.
func (l *Ledger) check(ev *LedgerEvent) error {
	if ev.EventID == "" {
		return errors.New("empty event id")
	}
	if len(ev.Key) != l.nKey || len(ev.Deltas) != len(l.funcs) {
		return fmt.Errorf("event %q has %d key values and %d deltas, ledger has %d and %d",
			ev.EventID, len(ev.Key), len(ev.Deltas), l.nKey, len(l.funcs))
	}
	for i, v := range ev.Key {
		c := &l.cols[5+i]
		if err := checkKind(c.name, c.kind, v); err != nil {
			return fmt.Errorf("event %q: %w", ev.EventID, err)
		}
	}
	for i, v := range ev.Deltas {
		c := &l.cols[5+l.nKey+i]
		if l.funcs[i].Func == LedgerCount {
			continue
		}
		if err := checkKind(c.name, c.kind, v); err != nil {
			return fmt.Errorf("event %q: %w", ev.EventID, err)
		}
	}
	return nil
}

// Apply records a batch of deliveries in one transaction. For each event
// id not in the ledger it inserts the ledger row and adds the event's
// deltas to its window and key in the aggregate table (LedgerCount +1,
// LedgerSum +delta). A delivery of an id the ledger holds changes
// nothing: with the stored payload hash it is a duplicate (counted), with
// another hash a conflict (returned, for the conflict output). Within one
// batch, the first delivery of an id is the one that may apply; later
// ones are duplicates or conflicts of it.
//
// The statements are set-based: the deliveries are copied into a
// temporary staging table, then one statement inserts into the ledger
// (ON CONFLICT (event_id) DO NOTHING) and adds the inserted rows, grouped
// per window and key, to the aggregates (INSERT … ON CONFLICT DO UPDATE SET
// col = col + excluded.col); a last query finds the conflicts.
//
// It applies nothing and returns an error when an event does not fit the
// ledger (empty id, wrong number of values, a value of the wrong kind),
// after Close (wrapping ErrClosed), and the database's error (the
// transaction rolled back: the batch may be applied again).
func (l *Ledger) Apply(ctx context.Context, events []LedgerEvent) (LedgerResult, error) {
	if l.closed {
		return LedgerResult{}, fmt.Errorf("postgres ledger %s: %w", l.table, ErrClosed)
	}
	for i := range events {
		if err := l.check(&events[i]); err != nil {
			return LedgerResult{}, fmt.Errorf("postgres ledger %s: %w", l.table, err)
		}
	}
	if len(events) == 0 {
		return LedgerResult{}, nil
	}
	// The first delivery of each id goes to the database.
	first := l.stageBuf[:0]
	seen := make(map[string]bool, len(events))
	for i := range events {
		if !seen[events[i].EventID] {
			seen[events[i].EventID] = true
			first = append(first, i)
		}
	}
	l.stageBuf = first
	stored := make(map[string]int64) // id → hash in the ledger before this batch
	var res LedgerResult
	err := l.inTx(ctx, func(tx pgx.Tx) error {
		res = LedgerResult{}
		src := &ledgerSource{l: l, events: events, order: first, k: -1}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", ledgerStage}, l.st.stageCols, src); err != nil {
			return err
		}
		// Insert and aggregate; the ids inserted come back.
		rows, err := tx.Query(ctx, l.st.apply)
		if err != nil {
			return err
		}
		inserted := make(map[string]bool, len(first))
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			inserted[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		res.Applied = len(inserted)
		if len(inserted) == len(first) {
			return nil
		}
		// The stored hashes of the ids the ledger already held, by index.
		var old []string
		for _, i := range first {
			if !inserted[events[i].EventID] {
				old = append(old, events[i].EventID)
			}
		}
		rows, err = tx.Query(ctx, l.st.hashes, old)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var h int64
			if err := rows.Scan(&id, &h); err != nil {
				return err
			}
			stored[id] = h
		}
		return rows.Err()
	})
	if err != nil {
		return LedgerResult{}, fmt.Errorf("postgres ledger %s: %w", l.table, err)
	}
	// Every delivery not inserted compares with the hash now stored: the
	// earlier one's, or the first delivery's in this batch.
	for i := range events {
		ev := &events[i]
		h, ok := stored[ev.EventID]
		if !ok {
			stored[ev.EventID] = ev.PayloadHash // inserted: later deliveries compare with it
			continue
		}
		if h != ev.PayloadHash {
			res.Conflicts = append(res.Conflicts, LedgerConflict{Index: i, EventID: ev.EventID, StoredHash: h, NewHash: ev.PayloadHash})
		}
	}
	res.Duplicates = len(events) - res.Applied - len(res.Conflicts)
	return res, nil
}

// ledgerSource feeds the first deliveries to COPY, in the staging table's
// column order.
type ledgerSource struct {
	l      *Ledger
	events []LedgerEvent
	order  []int
	k      int
}

func (s *ledgerSource) Next() bool {
	s.k++
	return s.k < len(s.order)
}

func (s *ledgerSource) Values() ([]any, error) {
	i := s.order[s.k]
	ev := &s.events[i]
	a := append(s.l.args[:0], ev.EventID, ev.PayloadHash, utc(ev.EventTime), utc(ev.WindowStart), utc(ev.WindowEnd))
	for j, v := range ev.Key {
		a = append(a, valueArg(v, s.l.cols[5+j].kind))
	}
	for j, v := range ev.Deltas {
		if s.l.funcs[j].Func == LedgerCount {
			a = append(a, int64(1))
			continue
		}
		a = append(a, valueArg(v, s.l.cols[5+s.l.nKey+j].kind))
	}
	s.l.args = a
	return a, nil
}

func (s *ledgerSource) Err() error { return nil }

// inTx runs fn in a transaction, reconnecting first when needed.
func (l *Ledger) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := l.ensureConn(ctx); err != nil {
		return err
	}
	return runTx(ctx, l.conn, fn)
}

// Prepare implements sink.Committer and returns nil: the ledger commits
// before the checkpoint. Each Apply is its own committed transaction, and
// the ledger makes applying an event twice harmless (the second time it
// is a duplicate), so there is nothing to stage or publish: after a
// restore the source replays the events since the checkpoint and the
// ledger turns every one already applied into a duplicate. This is also
// why Apply can report conflicts at once, while the engine can still
// write them to the conflict output of the current checkpoint. It returns
// an error wrapping ErrClosed after Close.
func (l *Ledger) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if l.closed {
		return nil, fmt.Errorf("postgres ledger %s: %w", l.table, ErrClosed)
	}
	return nil, nil
}

// Commit implements sink.Committer: it sets the ledger's commit marker to
// id unless it records id or a later checkpoint, recording that every
// event before checkpoint id is in the ledger. prepared is ignored. It
// returns an error when LedgerConfig.Pipeline is empty, after Close
// (wrapping ErrClosed), and the database's error.
func (l *Ledger) Commit(ctx context.Context, id int64, prepared []byte) error {
	if err := l.markerUsable(); err != nil {
		return err
	}
	err := l.inTx(ctx, func(tx pgx.Tx) error { return l.mark.write(ctx, tx, id, false) })
	if err != nil {
		return fmt.Errorf("postgres ledger %s: commit %d: %w", l.table, id, err)
	}
	return nil
}

// Recover implements sink.Committer. Events applied after checkpoint id
// stay in the ledger and the aggregates (they were committed, and the
// replay after the restore finds them as duplicates). With id 0 it deletes
// the commit marker, keeping the ledger and aggregate rows: the ledger is
// what makes a new run over old events harmless. Otherwise it sets the
// marker to id, also back from a later checkpoint (one that proved
// unusable). prepared is ignored. Errors as Commit's.
func (l *Ledger) Recover(ctx context.Context, id int64, prepared []byte) error {
	if err := l.markerUsable(); err != nil {
		return err
	}
	err := l.inTx(ctx, func(tx pgx.Tx) error {
		if id == 0 {
			return l.mark.forget(ctx, tx)
		}
		return l.mark.write(ctx, tx, id, true)
	})
	if err != nil {
		return fmt.Errorf("postgres ledger %s: recover %d: %w", l.table, id, err)
	}
	return nil
}

func (l *Ledger) markerUsable() error {
	if l.closed {
		return fmt.Errorf("postgres ledger %s: %w", l.table, ErrClosed)
	}
	if l.mark.pipeline == "" {
		return fmt.Errorf("postgres ledger %s: LedgerConfig.Pipeline is empty: the commit marker needs a pipeline name", l.table)
	}
	return nil
}

// Close releases the connection. Closing twice is not an error.
func (l *Ledger) Close(ctx context.Context) error {
	if l.closed {
		return nil
	}
	l.closed = true
	if l.conn != nil {
		release(ctx, l.conn)
		if err := l.conn.Close(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("postgres ledger %s: %w", l.table, err)
		}
	}
	return nil
}
