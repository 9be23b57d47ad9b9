// Package postgres writes a stage's results to PostgreSQL (15 or later)
// with github.com/jackc/pgx/v5, in two modes.
//
// In the data flow it is a connector at the end: the runner's writer
// (package engine) hands it a stage's rows in order, and its state goes
// into the run's checkpoints; it imports the core types, dedup (for the
// ledger's payload hash) and internal/pgutil, never the runner.
//
// # Results: an upsert table
//
// Results keeps one row per window and key, the layout of the SQLite sink
// in PostgreSQL types:
//
//	window_start timestamptz NOT NULL, window_end timestamptz NOT NULL,
//	<key columns>, <value columns>,
//	version bigint NOT NULL, is_final boolean NOT NULL,
//	watermark_at timestamptz, updated_at timestamptz NOT NULL,
//	UNIQUE NULLS NOT DISTINCT (window_start, <key columns>)
//
// Column types by kind: bool is boolean, int bigint, decimal numeric
// (unconstrained: it keeps each value's scale, 20.00 stays 20.00), string
// text, timestamp timestamptz (an instant; readers choose the zone to
// display it in). watermark_at is 'infinity' at the end of a bounded input
// and NULL before any watermark. Key columns are nullable, and the unique
// constraint treats NULLs as equal (PostgreSQL 15's NULLS NOT DISTINCT),
// so a NULL key is one key and ON CONFLICT finds it; a primary key cannot
// hold NULLs.
//
// # Whose table
//
// The tables the sink creates are recorded, with their oid, in
// tidemark_tables beside tidemark_commits (TablesTable). Only such a table
// is emptied at a fresh start (Options.Fresh) or replaced when its layout
// no longer matches (Options.ReplaceLayout, the sink key replace). Any
// other existing table is used as it is — never dropped, recreated or
// emptied — when it has the columns the sink writes with compatible types
// (numeric(p,s), integer, varchar(n), NOT NULL …) and a primary key or
// unique constraint on window_start and the key columns; Write then refuses
// a value the table cannot hold exactly, naming the row and the column.
// The lineage column (Options.Lineage) is written only where the table has
// one. A run resuming a checkpoint whose table is gone fails with a
// *MissingTableError.
//
// Rows apply in emission order: insert and update_after upsert, replacing
// a stored row only when their version is >= the stored one (an equal
// version rewrites the row identically, so a replay after a restore never
// moves a row backwards); update_before is skipped; delete removes the row
// when the stored version is lower than the delete's.
//
// A transaction applies a batch with COPY into a temporary staging table
// and one INSERT … SELECT … ON CONFLICT DO UPDATE … WHERE (and one DELETE …
// USING for deletes): measured faster than multi-row INSERT … VALUES (see
// BenchmarkResults and docs/connectors/postgres.md). Since one statement
// cannot update a row twice, the rows staged for one window and key
// collapse to the last when it dominates the others, and otherwise (an
// older version after a newer) go in a later round of statements.
//
// # Checkpoints
//
// Results implements sink.Committer, a two-phase commit per checkpoint:
// Write stages rows in memory, Prepare(id) returns them encoded (the state
// codec; stored in the checkpoint), and Commit(id) applies them in one
// transaction that also moves the sink's commit marker, the row (pipeline,
// sink) of tidemark_commits, to id; it does nothing when the marker already
// records id or later, so a repeated Commit or a Recover after a crash
// publishes a checkpoint's rows exactly once. Without Options.AtLeastOnce,
// Flush does nothing: rows wait for Commit. With it, Flush applies the
// staged rows in a transaction, as the SQLite sink does, and the
// Committer methods return ErrAtLeastOnce.
//
// # Ledger: exactly-once aggregates across lost dedup state
//
// Ledger inserts each accepted event id into a ledger table (ON CONFLICT
// (event_id) DO NOTHING) and adds the deltas of the events inserted to an
// aggregate table, in one transaction: a redelivered event finds its id
// and changes nothing even when the stream's dedup state was lost, and a
// redelivery with another payload hash is reported as a conflict. It
// commits before the checkpoint (see Ledger.Prepare).
//
// # Side-output tables
//
// Records writes late, quarantine and conflict records into a table, one
// row per record with the common fields in typed columns and the record as
// json, exactly once with checkpoints through the same commit marker.
//
// # Transient faults
//
// A Results or Records holds one connection (pgx.Conn). A transaction that
// fails for a transient reason (Transient: connection lost, serialization
// failure, deadlock, server shutting down) is retried on a new connection
// with exponential backoff, up to Options.Retry; the commit marker in the
// same transaction makes a retried commit that had reached the database a
// no-op. A Ledger reconnects at its next call. None is safe for concurrent
// use.
package postgres
