package disk

import (
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A store's own files are never synced by pebble: the store's directory
// is not what survives a crash. A restart discards it and makes the store
// again from the last complete checkpoint (docs/state.md, "Durability"),
// so a sync of a table, of the MANIFEST or of a directory in the store
// buys nothing but time — and pebble syncs them on the task's path: the
// flush at a checkpoint syncs its table and the MANIFEST, pebble's
// checkpoint the copies and the directories it makes. What must be
// durable is what a checkpoint publishes: its new tables are synced by
// the upload (Store.SyncFile, on the checkpoint writer's goroutine)
// before the manifest names them, the MANIFEST and OPTIONS go into the
// checkpoint's segment, written and synced as every segment is.
//
// A process killed (kill -9) loses nothing written to the page cache, so
// the store's files read back intact by a snapshot's upload whatever was
// synced; a machine that loses power loses the store's directory, which
// the restore does not read.

// noSyncFS is fs whose files' and directories' syncs do nothing.
type noSyncFS struct{ vfs.FS }

func (fs noSyncFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return wrapNoSync(fs.FS.Create(name, c))
}

func (fs noSyncFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapNoSync(fs.FS.Open(name, opts...))
}

func (fs noSyncFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return wrapNoSync(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs noSyncFS) OpenDir(name string) (vfs.File, error) { return wrapNoSync(fs.FS.OpenDir(name)) }

func (fs noSyncFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return wrapNoSync(fs.FS.ReuseForWrite(oldname, newname, c))
}

// Unwrap returns the file system beneath.
func (fs noSyncFS) Unwrap() vfs.FS { return fs.FS }

func wrapNoSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// noSyncFile is a file whose syncs do nothing.
type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error                { return nil }
func (noSyncFile) SyncData() error            { return nil }
func (noSyncFile) SyncTo(int64) (bool, error) { return false, nil }
