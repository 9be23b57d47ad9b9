// Package file is the file source: it reads JSON lines or CSV records from
// a file, the files of a directory or the files a glob matches, decodes
// them with package format into typed rows, and hands them to the engine
// in batches with their partition, arrival time and position.
//
// # Files
//
// The path is a file; a directory (its regular files sorted by name,
// symbolic links followed, names starting with "." skipped as hidden,
// subdirectories not read); or a glob such as "data/*.csv" (matching
// regular files sorted by path). An entry or match that is neither a
// regular file nor a directory (a dangling link, a named pipe, a device,
// a socket) is an error of New naming it, not skipped.
// Files are read one after the other in that order. New opens every file
// once (and reads every CSV header) so that a missing or unreadable file,
// or a missing CSV column, is reported before the first record.
//
// Both formats are streamed line by line (lines and records up to
// MaxLineBytes). A file's line breaks are decided from the bytes buffered
// when its first line is read: with a "\n" there, lines end with "\n" or
// "\r\n" and a lone "\r" is part of its line; without one but with "\r",
// lines end with "\r", "\r\n" or "\n" (classic Mac OS). JSONL skips blank
// lines. CSV is parsed with strict quoting, as encoding/csv does (quoted
// fields may hold delimiters, doubled quotes and line breaks, read as
// "\n"); Meta.Raw is the record's exact bytes. A multi-line CSV record that
// is not valid, or has the wrong number of fields, is cut to its first
// line (quarantined) and the lines it took are read again one record each,
// so that an unterminated quote does not swallow the records after it.
// With csv.header (the default) the first record of each file is that
// file's header; otherwise csv.columns names the columns of every file. A
// UTF-8 byte order mark at the start of a file is skipped.
//
// A record that cannot be decoded is not an error of Next: it is delivered
// with Meta.Err set (and its row unusable), so the engine can quarantine
// it. This includes a CSV record with the wrong number of fields or broken
// quoting, and an over-long JSON line. Next fails only when a file cannot
// be read.
//
// # Positions
//
// Meta.Pos is {Source: the file's path as listed, Line: the 1-based line
// where the record starts, Offset: the byte offset in the file where the
// record starts (after a byte order mark)}; with partition_field or
// replay, Pos.Partition is the partition's name. Meta.Raw
// is the record's bytes without the line terminator (for CSV, exactly as
// in the file, quotes included).
//
// # Resuming
//
// The source is source.Resumable: Position holds where reading stopped
// (the file, the byte offset after the last record read, the line) and
// what was derived from the records before it (ordinal counters,
// partitions, the last arrival time; with replay, the scheduler's state
// and every record the replay still holds), so Seek opens that file at
// that offset and reads nothing before it. Seek refuses an input that
// changed: a file that is no longer at its place in the list, is shorter
// than the offset, or holds other bytes before it (a CRC-32C of the last
// 4 KiB read).
//
// # Partitions and arrival times (without replay)
//
// Without partition_field the source has one partition, "0". With it, the
// text of the field's value names the record's partition (a string as is,
// numbers in plain notation, times in RFC 3339 UTC); partitions are
// numbered in first-seen order and a null value names the partition "".
// A record the engine will quarantine (decode failed, or event time null)
// never creates a partition: one without valid records would hold the
// watermark back forever. It goes to its field's partition when that
// exists, else to the previous record's.
//
// With arrival_time_field, Meta.Arrival is that timestamp field (ms), so a
// recorded capture replays with its original processing times; a null
// value repeats the previous record's arrival. Without it Meta.Arrival is
// source.NoArrival (the engine reads its clock).
//
// # Ordinal
//
// ordinal.field is an int field the source fills: 1, 2, 3 … among the
// records of a file with equal ordinal.per values, adjacent or not, in
// file order, restarting with each file (without per it counts the file's records).
// It is set when the record is read, before any replay shuffle, so it is a
// stable record id: for the Online Retail data, InvoiceNo plus the ordinal
// per InvoiceNo is the line's position within its invoice. Records that
// failed to decode are counted too.
//
// # Replay
//
// With replay the source simulates a transport between producers and the
// pipeline, deterministically: the same seed and the same files give the
// same sequence of records, partitions and arrival times. The transport
// model is package perturb's Scheduler and the order its Queue, which the
// perturb command uses too; the replayer holds typed rows in the queue.
//
// A PCG generator (math/rand/v2) seeded with replay.seed draws four values
// for every record read: whether it straggles (probability
// straggler_fraction), its delay d (uniform integer ms in [0, delay], or
// [0, max_delay] for a straggler), whether it is redelivered (probability
// redeliver_fraction) and the redelivery's extra delay (uniform in [0,
// max_delay]). With conflict_fraction, a second PCG stream draws two more:
// whether the record conflicts and the conflicting copy's extra delay, so
// turning conflicts on moves no other delivery. Its arrival is event time
// + d; a redelivered copy (with Meta.Redelivery set) arrives at arrival +
// the extra delay. A record the engine will quarantine (decode failed, or
// event time null) arrives at the current horizon (below) and has no
// copies; one read before any event time is known arrives at the first
// event time read (or 0 if the input holds none).
//
// A conflicting copy is a redelivery (Meta.Redelivery set, same position
// and ordinal) whose conflict_field is changed in its raw bytes, by the
// field's declared type: an int or decimal plus one, exactly and in its
// written form (perturb.AddOne), a string plus "-x". A JSONL line has the
// JSON value rewritten (perturb.AppendChanged); a CSV record is parsed
// and encoded again with encoding/csv. The copy's row is decoded from the
// new bytes, so the row, Meta.Raw and EventJSON agree. A record whose
// field is null, or whose changed value does not decode, gets no
// conflicting copy.
//
// Deliveries are emitted in (arrival, read order, kind) order from a
// min-heap, first deliveries before redeliveries before conflicting
// copies. The horizon is the largest event time read so far: a delivery
// is emitted once its arrival is at most the horizon, and at the end of
// the input everything held is drained. Because the input files are in
// event-time order, every record still to be read arrives at or after the
// horizon, so the emitted order is exactly the arrival order, and the heap
// holds only records whose arrival lies ahead of the horizon: about the
// records of the last max_delay of event time. This bound is what makes
// the shuffle streaming; input that is not in event-time order is still
// delivered, in an order that is only approximately by arrival. Held rows
// own their memory (strings and Raw are copied).
//
// Records go to replay.partitions partitions named "p0" … "pN-1", all
// known from the start: the 32-bit FNV-1a hash of the partition_by field's
// text modulo N, or, without partition_by or when the field is null, the
// record's read sequence number (0-based) modulo N. A copy stays on its
// original's partition. Meta.Arrival is the arrival time.
//
// # Memory
//
// Rows, their strings and Meta.Raw belong to the batch Next filled: they
// are copied into the batch's arena (source.Batch.Arena) and stay valid
// until that batch is Reset, whatever later calls to Next do with other
// batches. A batch's arena is reused after its Reset, so reading
// allocates nothing per record once each batch has been filled once. With
// replay, a delivery is copied from the replayer's held entry into the
// batch and the entry is reused at once.
package file
