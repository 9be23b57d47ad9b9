// Package kafka is the Kafka source: it reads the records of one or more
// topics with github.com/twmb/franz-go, decodes each record's value as a
// JSON object (package format) into a typed row, and hands the rows to the
// engine in batches with their partition, position and raw bytes. It
// implements source.Source and source.Resumable.
//
// # Partitions
//
// Every Kafka partition is one tidemark partition, with its own watermark,
// named "TOPIC/N" ("orders/3"). Partitions are numbered when the source
// opens — topics in the order of Config.Topics, partitions ascending — and
// partitions created later (kafka-topics --alter --partitions, or a
// CreatePartitions call) are found by a metadata refresh every
// Config.DiscoveryIntervalMs and appended, in the same order, read from
// their first offset. Partitions() only grows; an index never changes
// meaning, also across a restore (Seek numbers the partitions in the order
// the checkpoint lists them).
//
// The source reads every partition of its topics itself (franz-go's
// direct consumer): it does not join a consumer group, so two processes
// with the same configuration both read everything. Config.Group, when
// set, only receives the offsets of each completed checkpoint (an
// OffsetCommit without membership, as kafka-consumer-groups
// --reset-offsets writes), so that lag tools (kafka-consumer-groups
// --describe, Burrow, exporters) can watch the pipeline. The group's
// offsets are never read: the checkpoint owns the position.
//
// # Positions
//
// Position() lists, for every partition in index order, its topic, its
// partition number and the offset of the next record to deliver: one more
// than the last record Next returned, or, for a partition that has
// delivered nothing, the offset where reading starts (resolved to a
// number when the partition is first seen, from Config.Start: the log
// start offset for "earliest", the high watermark for "latest", the first
// offset at or after Config.StartTimestamp for "timestamp"; a partition
// discovered later starts at its log start offset). The bytes are a
// function of those offsets alone. Seek reads them back: each listed
// partition resumes at its offset, and partitions that exist now but are
// not listed (created after the checkpoint) are appended and read from
// their log start. A listed partition or topic that no longer exists is an
// error.
//
// PositionAt(b, n) (source.PartialResumable) is the position inside the
// last batch b, after its first n records: every partition at its first
// record among the others. The engine checkpoints an input of a join so,
// because a read after Seek does not return the same batches — a fetch
// holds up to 1 MiB of each partition, in an order of its own — and
// "the position before b, then skip n records" would skip records of
// other partitions.
//
// If retention deleted records past a checkpoint's offset, franz-go
// resets the partition to its log start offset and the skipped records
// are lost; Stats().DataLoss counts such resets.
//
// # Records
//
// Meta.Pos is {Source: the topic, Partition: the partition number as text
// ("3"), Offset: the record's offset}, rendered "orders[3]@42" in late and
// conflict records and as {"topic":"orders","partition":"3","offset":42}
// in quarantine records. Meta.Raw is the record's value, Meta.Partition
// the partition's index. Meta.Arrival is source.NoArrival: the engine
// reads its injected processing-time clock. The record timestamp is not
// used as processing time because it is the producer's clock (CreateTime)
// or the broker's (LogAppendTime), neither of which says when tidemark
// read the record: a replay from the earliest offset would otherwise see
// processing time jump back months and idleness would never be detected
// during a backfill.
//
// Under read_committed (the default) records of aborted transactions are
// skipped and records of open transactions are not read until they
// commit; transaction markers (control records) are never delivered but
// do advance the position, so that a partition written transactionally
// shows a lag of 0 once everything committed has been read.
//
// # Event time
//
// With Config.EventTimeFrom "payload" (the default) the event time is a
// field of the value, decoded like every other field (its format from
// Fields.Time). With "kafka_timestamp" the source sets the
// EventTimeField slot to the record's timestamp in ms — the producer's
// CreateTime, or the broker's LogAppendTime when the topic is configured
// so — and the decoder leaves that field alone (a field of the same name
// in the value is ignored). A negative timestamp (none recorded) leaves the
// field null, and the engine quarantines the record.
//
// # Decode errors
//
// A value that is not a JSON object, a null value (a tombstone), or a
// field of the wrong type is delivered with Meta.Err set (a
// *source.DecodeError) and goes to quarantine; Next does not fail and
// never panics on a record's bytes.
//
// # Lag
//
// Lag() returns, per partition index, the end offset minus the next
// offset to deliver: the records the pipeline has yet to read. The end
// offset is the last stable offset under read_committed (the end a
// read_committed consumer can reach) and the high watermark under
// read_uncommitted, taken from every fetch response and refreshed with a
// ListOffsets request at each discovery interval.
//
// # Blocking
//
// Next waits at most Config.PollTimeoutMs for records; when none come it
// returns an empty batch and no error, so that the engine can advance
// processing time, detect idle partitions and take checkpoints. Metadata
// and offset requests made by Next (discovery, lag, group commits) are
// bounded by Config.RequestTimeoutMs, and their failures are not errors of
// Next: they are retried at the next interval and reported by Stats. A
// request to the schema registry holds Next up to the registry's own
// timeout (below).
//
// # A schema registry that cannot be reached
//
// With Avro or Protobuf, a record whose schema id the source has not met
// is judged through Config.Registry. When the registry cannot be asked
// (confluent.Unreachable: a connection refused, reset or closed before the
// answer, a timeout, an HTTP 5xx, 408 or 429), that record and every
// record fetched after it are held in fetch order: not delivered, and no
// partition's position passes them. Next returns the records before them,
// then empty batches while it asks again (after 100 ms, doubling up to
// 2 s), and delivers the held records once the registry answers. Waiting
// (source.Waiter) describes the wait meanwhile, also while a request hangs
// unanswered inside Next; once the records have waited
// Config.RegistryMaxWaitMs (default 5 minutes, as Kafka Streams'
// task.timeout.ms), Next fails with a *RegistryWaitError naming the
// registry and the records. A registry that answers with a refusal (401,
// 403, 400) fails Next at once; an unknown id (404) quarantines its
// records (Meta.Err, rule "schema").
package kafka
