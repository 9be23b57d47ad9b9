// Package cdctest tests change data capture end to end against the local
// PostgreSQL (internal/pgtest): a postgres_cdc pipeline's snapshot and
// stream into result tables, checked against a batch recomputation by
// SELECT on the source table (EXCEPT ALL both ways); `tidemark run`
// killed with SIGKILL at random instants, also during the snapshot; whole
// upstream transactions at every sink commit; an idle table's slot kept
// moving; unchanged TOAST values; schema changes; Debezium envelopes of
// the same changes giving the same rows. Every test makes its own schema,
// tables, publication and slot and drops them (TestMain reports any slot
// left: a leaked slot pins the server's WAL).
package cdctest
