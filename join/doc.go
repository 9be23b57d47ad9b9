// Package join is the event-time join operator (docs/semantics.md,
// "Joins"): the keyed state of one join stage over a task's key groups and
// the step function over it, pure like package operator — rows and
// watermarks in, joined rows out, no goroutines, IO or clock.
//
// Three types, after Flink SQL's (the "Joins" pages of the Flink
// documentation: window join, interval join, temporal join FOR SYSTEM_TIME
// AS OF) and Kafka Streams' (KStream-KStream joins with a grace period,
// versioned key-value stores):
//
//   - Window: rows of the same window (tumbling or sliding, by their own
//     event time) and key pair up. A window fires when the join's
//     watermark W = min(W_left, W_right) reaches its end and is forgotten
//     once W reaches end + allowed lateness.
//   - Interval: a left row l and a right row r of the same key pair up when
//     Lower ≤ r.ts − l.ts ≤ Upper (or r.ts ≤ an absolute upper bound taken
//     from a column of l, at most Upper after l.ts). A row is kept until
//     the other side's watermark minus the allowed lateness passes the
//     last event time it can match. A regular join with a TTL is the
//     interval join with bounds [−TTL, TTL].
//   - Temporal: each left row (a probe) takes the right side's latest
//     version (by version time = the right row's event time, then arrival)
//     at or before its own event time, once the right side's watermark has
//     passed it. A tombstone version means no match. Per key, only the
//     newest version at or below min(W_left, W_right) − allowed lateness
//     (the anchor) and the later ones are kept.
//
// A row is too late when its own side's watermark is past its event time
// plus the allowed lateness (the rows it could pair with may be gone): the
// operator reports it (Process returns TooLate) and changes nothing. A
// late row within the allowed lateness joins; in modes Update and Retract
// it revises what was emitted (an outer row padded with nulls is retracted
// and replaced by the matched row; a temporal result computed before an
// older version arrived is corrected), in mode Final nothing is emitted
// that could still change.
//
// Buffered rows are kept per key in event-time order (rows of one time in
// arrival order), so a probe costs O(log n + matches) (Flink's
// TimeIntervalJoin scans the key's buffer); only the columns the join
// outputs (and its upper-bound and tombstone columns) are kept, in typed
// column arrays per key group. A row's entry in its key's list is 16
// bytes (event time, slot, match count); its arrival step, where an
// Advance orders rows by it, and its null bits, once a null has come, live
// in the column store; a key costs its state (104 bytes), its bytes and
// an 8-byte slot of the group's key table (keys.go) — about 30 bytes a
// row beyond the columns at ~15 rows a key (BenchmarkStateBytes).
//
// Output rows are changelog rows whose WindowStart and WindowEnd hold the
// row's event time (max(l.ts, r.ts), a padded row's own side's time);
// their order is deterministic: the rows made while processing one input
// come in the order of the buffered rows they pair with, the rows of an
// Advance in the order of their Order keys (the task sorts nothing).
package join
