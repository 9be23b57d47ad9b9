// Package kafka writes a stage's outputs to Kafka topics with
// github.com/twmb/franz-go: result rows as keyed records (Results) and
// side-output records — late, quarantine, conflicts — as unkeyed records
// (Records), exactly once with a transactional producer or at least once
// with an idempotent one.
//
// # Records
//
// A result row becomes one record:
//
//   - key: a JSON array of window_start (RFC 3339 in UTC) followed by the
//     group-key values in the order of Desc.Key, e.g.
//     ["2026-03-01T10:00:00Z","FR",7]. It depends only on those values,
//     never on the time zone, the version or the run, so every row of a
//     window and key has the same key and lands in the same partition
//     (franz-go's default partitioner hashes keys like the Java client:
//     murmur2). On a topic with cleanup.policy=compact the newest record
//     of each key — the window's current value — is what remains.
//   - value: the row as changelog.AppendRowJSON writes it ("op",
//     "window_start", "window_end", the key and aggregate columns,
//     "version", "is_final", "watermark_at", "updated_at"), times in
//     Desc.Timezone: the same object as a line of the jsonl sink.
//
// Every op is written, so the topic is the stage's whole changelog. With
// Options.Upsert the topic is an upsert stream instead, as Flink's
// upsert-kafka writes it: update_before rows are left out and a delete
// is a tombstone (the key with a null value), which compaction eventually
// removes.
//
// A side-output record is the JSON object the engine hands to
// WriteRecord, as the value of a record without a key.
//
// # Avro and Protobuf
//
// With Options.Encoding's Format FormatAvro or FormatProtobuf, keys and
// values are in the Confluent wire format (a zero magic byte, the 4-byte
// big-endian schema id, for Protobuf the message index 0, then the
// binary encoding), as Confluent's serializers write them. The schemas
// are derived from the stage's columns (RowEncoder): a key record of
// window_start and the group-key columns, and a value record of the JSON
// value's fields in its order — op (string); window_start, window_end
// and updated_at (Avro long timestamp-millis, Protobuf
// google.protobuf.Timestamp); the key and aggregate columns, nullable
// (Avro unions with null, default null; Protobuf optional scalars or
// absent messages): string, long/int64, boolean/bool, decimal (Avro
// bytes with logical type decimal, precision 38 and scale
// Encoding.DecimalScale; Protobuf confluent.type.Decimal), timestamp;
// version (long); is_final (boolean); watermark_at (nullable; Long.MAX_VALUE,
// Flink's final watermark, at the end of the input — in Protobuf the
// largest Timestamp, 9999-12-31T23:59:59.999Z). They are registered under
// "<topic>-key" and "<topic>-value" (TopicNameStrategy) when the sink
// opens, under the registry's compatibility check; the registry's refusal
// stops the run, naming the subject and the registry's answer. A
// decimal with more digits after the point than the scale is an error
// naming the row and column, never a rounding (format/avro.DecimalBytes).
//
// Side outputs are records of a fixed schema per kind (RecordEncoder):
// tidemark.LateRecord, tidemark.QuarantineRecord and
// tidemark.ConflictRecord, with the fields of their JSON objects
// (embedded events and payloads as JSON text), registered under
// "<topic>-value" with the first record.
//
// # Exactly once
//
// With Options.AtLeastOnce false (the engine sets it when the pipeline
// takes checkpoints and the sink's delivery is exactly_once) the sink is a
// sink.Committer whose transactions follow the engine's checkpoints
// (docs/checkpoints.md), like Flink's KafkaSink with
// DeliveryGuarantee.EXACTLY_ONCE:
//
//  1. Write produces records inside a Kafka transaction, begun at the
//     first record after a checkpoint. The records reach the brokers as
//     they are written but a read_committed consumer does not see them.
//  2. Prepare(id) produces a commit-marker record into the same
//     transaction — {"pipeline":…,"sink":…,"checkpoint_id":id} keyed by
//     "pipeline/sink" on the marker topic — flushes, and returns the
//     checkpoint's share: the marker's partition and offset and a copy of
//     every record of the transaction. A checkpoint without records
//     returns nil and begins no transaction.
//  3. The engine writes the checkpoint, then calls Commit(id), which
//     commits the transaction (EndTxn): records and marker become visible
//     together, or not at all.
//
// The transactional ID is Options.TransactionalID, by default
// "tidemark-<pipeline>-<sink>": the same in every run of the pipeline, so
// that a restarted process fences its predecessor. Recover(id, prepared)
// runs before any write of a restarted run:
//
//  1. It initializes the producer ID for the transactional ID. The broker
//     bumps the epoch, so a zombie of the previous run can neither write
//     nor commit any more, and it aborts the transaction the previous run
//     left open, if any: those records are marked aborted and a
//     read_committed consumer skips them forever.
//  2. With id 0 (no checkpoint) or nil prepared, that is all. Otherwise it
//     reads the marker partition with read_committed from the offset
//     Prepare recorded up to its end, looking for a committed marker of
//     this sink with checkpoint id ≥ id.
//  3. If there is one, checkpoint id's transaction committed (the crash
//     came after Commit): nothing is published again. If there is none,
//     it did not (the crash came after the checkpoint was written and
//     before EndTxn finished; step 1 has just aborted it): the records
//     stored in the checkpoint are produced again in a new transaction
//     together with a new marker for id, and committed.
//
// Why a reader never sees a row twice or a row of a failed attempt:
// every record is produced inside a transaction, and the only
// transactions that commit are one Commit per checkpoint, or, for a
// checkpoint whose Commit was lost, one republication by Recover, which
// happens only when the marker check shows that the original never
// committed — and since the original was aborted by the fencing in step 1
// before the check, it can never commit afterwards. A crash during the
// republication repeats the same reasoning on the next start: the
// republication either committed (its marker is found, at an offset after
// the recorded one) or was aborted. Rows produced after the last
// checkpoint belong to a transaction that the next start aborts; the
// replay from the checkpoint's source position produces them again.
//
// The original transaction is aborted and its records produced again,
// rather than resumed, because franz-go cannot take over another
// producer's ID and epoch (Flink resumes its transactions with reflection
// on the Java client's internals, which only works while the broker has
// not timed the transaction out). The cost is that the checkpoint holds a
// copy of the records since the previous checkpoint, as the SQLite sink's
// does; the gain is that a transaction timed out by the broker loses
// nothing either: its Commit fails, the run stops, and Recover publishes
// the checkpoint's copy.
//
// The marker check needs a partition where only this sink's transactions
// write, so that after the fencing nothing on it is undecided and its
// end can be read with read_committed: the default marker topic is
// "tidemark-commits.<transactional ID>" (characters other than letters,
// digits, '.', '_' and '-' become '_'), created when missing with one
// partition and cleanup.policy=compact (compaction keeps the newest
// marker of the key, which is the one the check needs).
//
// One case remains where a reader sees rows again, as with Flink: when
// the newest checkpoint file is unusable and the engine falls back to an
// older one whose transaction had committed as well as the newer one's,
// the replay produces the newer checkpoint's rows a second time (a Kafka
// commit cannot be taken back). Result rows come back with the same keys,
// versions and values, so a compacted topic or an upsert by version ends
// in the same state; side-output records appear twice.
//
// The transaction timeout (Options.TransactionTimeoutMs, default 60 s)
// must exceed the checkpoint interval plus the time a checkpoint takes:
// the broker aborts a transaction open for longer, and the run then
// fails at the next Commit (and recovers as above). While a transaction
// is open, read_committed consumers of the topic do not read past its
// first record: an open transaction of a crashed run holds them back
// until the restart aborts it or the timeout does.
//
// # At least once
//
// With Options.AtLeastOnce the producer is idempotent but not
// transactional: records are visible as soon as the brokers have them,
// Flush waits for every record to be acknowledged, and the Committer
// methods return ErrAtLeastOnce. After a restart the rows after the last
// checkpoint are produced again.
//
// Neither sink is safe for concurrent use.
package kafka
