// Package pgcdc is the PostgreSQL change data capture source (spec
// source.type postgres_cdc, docs/connectors/postgres-cdc.md): it reads one
// table's rows and then its changes through a logical replication slot
// (the pgoutput plugin, github.com/jackc/pglogrepl), decodes each row
// image into a typed row (package format's field conversions) with the
// change's metadata fields (record.ChangeFields: __op, __lsn,
// __commit_lsn, __commit_time, __xid, …), and hands them to the engine in
// batches; checkpoints are taken only at upstream transaction boundaries
// (source.Transactional).
//
// It sits at the entry of the data flow beside source/file and
// source/kafka: PostgreSQL → pgcdc → engine (task, operator) → sinks. The
// slot's confirmed position moves only when a checkpoint that covers it
// is durable (Source.Acknowledge), so a restore resumes from the
// checkpoint's position and no change is lost or read twice into state.
package pgcdc
