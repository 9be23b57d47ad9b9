// Package durable holds the one helper that makes a directory's entries
// durable, shared by the checkpoint files and the file sinks (jsonl,
// parquet, iceberg).
package durable

import "os"

// SyncDir fsyncs the directory dir, so that the names created, renamed or
// removed in it survive a crash (a file's own fsync does not make its
// name durable). Errors: opening dir (it must exist), the fsync, the
// close.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
