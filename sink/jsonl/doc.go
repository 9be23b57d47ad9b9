// Package jsonl writes a stage's outputs to files of JSON lines: result
// rows (changelog.AppendRowJSON, every op including update_before, so the
// file is the stage's whole changelog) and side-output records (one object
// per line).
//
// By default a sink truncates its file when opened: one run writes one
// complete changelog. With Options.Append it resumes the file (an
// at-least-once sink after a restore); with Options.ExactlyOnce it takes
// part in checkpoints (sink.Committer, txn.go): lines are staged in
// PATH.pending and appended to PATH when their checkpoint completes, and
// PATH.commit records the last checkpoint published and PATH's size after
// it. A published file shorter than that record, or missing, is refused
// (*TruncatedError), never padded or started over.
//
// A character device or a named pipe (/dev/null, a FIFO a reader drains)
// is written as it comes, never truncated or fsynced; exactly-once
// delivery is refused there (ErrNotRegular). Opening a named pipe waits
// for its reader.
//
// Writes are buffered (256 KiB); Flush writes the buffer and fsyncs the
// file. Neither sink is safe for concurrent use, and neither locks its
// file: a runner that may share outputs with another process locks them
// first (the engine does).
package jsonl
