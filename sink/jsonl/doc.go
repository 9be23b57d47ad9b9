// Package jsonl writes a stage's outputs to files of JSON lines: result
// rows (changelog.AppendRowJSON, every op including update_before, so the
// file is the stage's whole changelog) and side-output records (one object
// per line).
//
// A sink truncates its file when opened: one run writes one complete
// changelog. Resuming a file after a restart, and exactly-once output
// across crashes, belong to the checkpoint's sink commit marker and are not
// handled here yet.
//
// Writes are buffered (256 KiB); Flush writes the buffer and fsyncs the
// file. Neither sink is safe for concurrent use.
package jsonl
