// Package sqlite keeps a stage's results as an upsert table in an embedded
// SQLite database file (modernc.org/sqlite: pure Go, no cgo).
//
// In the data flow it is a connector at the end: the runner's writer
// (package engine) hands it a stage's result rows in order, and its state
// goes into the run's checkpoints; it imports the core types (row,
// changelog, results, state) and package sink, never the runner.
//
// # Table
//
// One row per window and key:
//
//	window_start TEXT NOT NULL, window_end TEXT NOT NULL,
//	<key columns>, <value columns>,
//	version INTEGER NOT NULL, is_final INTEGER NOT NULL,
//	watermark_at TEXT, updated_at TEXT NOT NULL,
//	PRIMARY KEY (window_start, <key columns>)
//
// Column types by kind: int and bool are INTEGER (bools 0/1); string is
// TEXT; timestamp is TEXT in RFC 3339 with the UTC offset of the Desc's
// timezone ('2026-09-01T10:00:00+09:00'), so text order is time order
// within one offset; decimal is TEXT holding the exact literal with its
// scale ('20.00'). Decimals are not NUMERIC or REAL because SQLite stores
// those as 64-bit binary floating point (or integers), which would turn
// 0.1 + 0.2 into 0.30000000000000004 and 20.00 into 20; read them with
// CAST(x AS REAL) only where approximate is good enough. watermark_at is
// 'infinity' at the end of a bounded input and NULL before any watermark.
//
// The primary key includes window_start as text, so the Desc's timezone
// must not change for an existing table.
//
// # Whose table
//
// The tables the sink creates are recorded in tidemark_tables
// (TablesTable) with their CREATE statement. Only such a table is emptied
// at a fresh start (Options.Fresh) or replaced when its layout changed
// (Options.ReplaceLayout). Any other existing table is used as it is when
// it has the columns with declared types whose affinity keeps the values
// (decimals in TEXT exactly, or in NUMERIC/REAL when they hold them
// exactly, which Write checks) and a primary key or unique index on
// window_start and the key columns; it is never dropped or emptied. A run
// resuming a checkpoint whose table is gone fails with a
// *MissingTableError. Records writes side-output records into a table
// (see NewRecords).
//
// # Writes
//
// Write buffers rows; Flush applies them in one transaction, in order:
//
//   - insert and update_after upsert, guarded by version: an existing row
//     is replaced only by a higher version, so replaying a changelog (after
//     a restart from an older checkpoint) never moves a row backwards;
//   - update_before is skipped: an upsert table needs only after images;
//   - delete removes the row when its version is lower than the delete's.
//
// SQLite treats NULLs in a PRIMARY KEY as distinct, so ON CONFLICT never
// fires for a row with a NULL key value. Such rows take a second path that
// compares keys with IS: update the row when its version is lower, else
// insert it when absent.
//
// Runs of plain upserts go in multi-row INSERT statements of up to 100 rows
// (prepared once per size); see BenchmarkFlush for the measured choice.
//
// The database uses WAL journal mode (readers do not block the sink, nor
// it them), synchronous FULL (a committed Flush survives power loss) and a
// busy timeout, and transactions begin IMMEDIATE. A Results uses one
// connection and is not safe for concurrent use.
package sqlite
