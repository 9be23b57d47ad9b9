// Package disk is the disk state backend (state.backend: disk;
// docs/state.md): a task's keyed state in an embedded LSM store on local
// disk, github.com/cockroachdb/pebble/v2 (pure Go, RocksDB-format SST
// files). It implements state.Store, the interface the core's operators
// use beneath their hot tier, and adds what the runner needs around it:
// opening a store under a memory budget, snapshots of its files for
// incremental checkpoints, and restores from them.
//
// One store per task: a task's state is checkpointed, restored and moved
// between instances as a whole (a group run's tasks move on a rebalance),
// so its files must hold nothing of another task's. The block cache is
// shared by the stores of a process (Budget).
//
// Pebble's write-ahead log is off: a store's durability is the
// checkpoint's. What a task wrote after the last checkpoint is discarded
// by the restore from that checkpoint anyway (the source replays it), so a
// log would only cost a write of every change and, on a restart, a replay
// of changes the restore throws away. For the same reason pebble syncs
// nothing in a store (nosync.go): the upload of a checkpoint syncs the
// tables it publishes (Store.SyncFile).
package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tidemark/tidemark/state"
)

// Error is a failure of a store operation: the store (its directory), the
// operation and the cause, e.g. "state store out/state/task-0: commit of
// 4096 writes: no space left on device".
type Error struct {
	Store string // the store's directory
	Op    string // what failed: "open", "commit of N writes", "lookup", …
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("state store %s: %s: %v", e.Store, e.Op, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// Options configure a store. Zero fields take the defaults in their docs.
type Options struct {
	// Dir is the store's directory, created if absent. Required.
	Dir string
	// FS is the file system (tests inject vfs.NewMem or errorfs). Default
	// vfs.Default, the operating system's.
	FS vfs.FS
	// Cache is the block cache, shared by the stores of a process (see
	// Budget); the store takes a reference and releases it on Close.
	// Default: a cache of its own of CacheSize bytes.
	Cache *pebble.Cache
	// CacheSize is the size of the store's own cache in bytes when Cache
	// is nil. Default 8 MiB.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes; a store holds at
	// most two (one being flushed). Default 4 MiB.
	MemTableSize uint64
	// Logf receives pebble's informational messages (default: dropped;
	// errors reach the caller as errors).
	Logf func(format string, args ...any)
	// FlushAhead is the bytes of commits (batch bytes) after which the
	// store starts a flush of its memtable in the background, without
	// waiting for it, if none is in progress: so that the flush at a
	// snapshot, on the task's path, finds little left to write. Default a
	// quarter of MemTableSize; negative: none (pebble flushes a memtable
	// only when it is full).
	FlushAhead int64
	// ReadOnly opens an existing store for reading (a snapshot's files).
	ReadOnly bool
	// Unverified opens a store whose files are not all present — a
	// restore that copied only the files overlapping its key groups
	// (docs/state.md, "Restore") — with pebble's consistency check, table
	// statistics and automatic compactions off, so that nothing reads a
	// missing file before the caller excises the spans it does not own.
	Unverified bool
}

// Store is a pebble database holding one task's keyed state. Not safe for
// concurrent use but for Stats, which the runner may call between rounds.
type Store struct {
	dir   string
	fs    vfs.FS
	db    *pebble.DB
	cache *pebble.Cache
	iterO pebble.IterOptions
	// broken holds the first error of pebble's background work (a flush
	// or compaction that failed: ENOSPC, EIO), which pebble retries
	// forever; once set, every operation fails with it.
	broken atomic.Pointer[error]
	bgErr  chan struct{} // closed when broken is set
	// Flushes ahead of the checkpoint (Options.FlushAhead): flushAhead is
	// the bytes of commits after which a flush starts in the background,
	// pending the bytes committed since the last one started, ahead the
	// background flush in progress (nil: none).
	flushAhead, pending int64
	ahead               <-chan struct{}
	// A snapshot in progress (StartSnapshot): snap (nil: none), the
	// overlay over holding the commits made meanwhile, overMax its bytes
	// past which a Commit waits for the snapshot, iters the iterators open
	// over it (no thaw meanwhile), waited the time commits waited for
	// snapshots since the last StartSnapshot, stuck the failure of a
	// snapshot (the store is unusable after it).
	snap    *Pending
	over    *pebble.Batch
	overMax int
	iters   int
	waited  time.Duration
	stuck   error
}

var _ state.Store = (*Store)(nil)

// Open opens (or creates) the store in o.Dir. Errors name the directory.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("state store: no directory")
	}
	s := &Store{dir: o.Dir, fs: o.FS, bgErr: make(chan struct{})}
	if s.fs == nil {
		s.fs = vfs.Default
	}
	cache := o.Cache
	if cache == nil {
		size := o.CacheSize
		if size <= 0 {
			size = 8 << 20
		}
		cache = pebble.NewCache(size)
	} else {
		cache.Ref()
	}
	s.cache = cache
	mt := o.MemTableSize
	if mt == 0 {
		mt = 4 << 20
	}
	switch {
	case o.FlushAhead == 0:
		s.flushAhead = int64(mt / 4)
	case o.FlushAhead > 0:
		s.flushAhead = o.FlushAhead
	}
	s.overMax = int(mt / 2)
	po := &pebble.Options{
		FS: noSyncFS{s.fs}, // nosync.go

		Cache:                       cache,
		MemTableSize:                mt,
		MemTableStopWritesThreshold: 2,
		DisableWAL:                  true,
		FormatMajorVersion:          pebble.FormatNewest,
		MaxManifestFileSize:         1 << 20,
		ReadOnly:                    o.ReadOnly,
		Logger:                      quiet{o.Logf},
		EventListener: &pebble.EventListener{BackgroundError: func(err error) {
			if s.broken.CompareAndSwap(nil, &err) {
				close(s.bgErr)
			}
		}},
	}
	if o.Unverified {
		po.DisableConsistencyCheck = true
		po.DisableTableStats = true
		po.DisableAutomaticCompactions = true
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].FilterType = pebble.TableFilter
	}
	po.EnsureDefaults()
	db, err := pebble.Open(o.Dir, po)
	if err != nil {
		cache.Unref()
		return nil, &Error{Store: o.Dir, Op: "open", Err: err}
	}
	s.db = db
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// fail wraps err as the store's Error for op (nil stays nil).
func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Store: s.dir, Op: op, Err: err}
}

// Err returns the first error of the store's background work (a flush
// or a compaction), or nil.
func (s *Store) Err() error {
	if p := s.broken.Load(); p != nil {
		return s.fail("background flush or compaction", *p)
	}
	return nil
}

// closeWait is how long Close waits for a store whose background work
// failed: pebble's Close waits for the failing flush, which it retries
// until it succeeds (the disk has room again).
const closeWait = 5 * time.Second

// Close closes the database and releases its cache reference. A store
// whose background work failed (Err) gets closeWait to finish; after
// that it is abandoned (its goroutines end with the process, which is
// stopping with the error) and its directory is discarded by the restore
// from the last checkpoint.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	if s.snap != nil {
		<-s.snap.done // its goroutine uses the database
		s.over.Close()
		s.snap, s.over = nil, nil
	}
	if err := s.Err(); err != nil {
		db := s.db
		s.db = nil
		done := make(chan struct{})
		go func() { db.Close(); close(done) }()
		select {
		case <-done:
			s.cache.Unref()
		case <-time.After(closeWait):
		}
		return err
	}
	err := s.db.Close()
	s.db = nil
	s.cache.Unref()
	return s.fail("close", err)
}

// batch is a pebble batch behind state.Batch.
type batch struct{ b *pebble.Batch }

func (b *batch) Set(key, value []byte)         { _ = b.b.Set(key, value, nil) }
func (b *batch) Delete(key []byte)             { _ = b.b.Delete(key, nil) }
func (b *batch) DeleteRange(start, end []byte) { _ = b.b.DeleteRange(start, end, nil) }
func (b *batch) Len() int                      { return b.b.Len() }
func (b *batch) Count() int                    { return int(b.b.Count()) }

// NewBatch returns an empty batch.
func (s *Store) NewBatch() state.Batch { return &batch{b: s.db.NewBatch()} }

// Commit applies b (a batch of this store's NewBatch) without a sync and
// resets it.
func (s *Store) Commit(sb state.Batch) error {
	b, ok := sb.(*batch)
	if !ok {
		return s.fail("commit", fmt.Errorf("a batch of another store (%T)", sb))
	}
	if b.b.Empty() {
		return nil
	}
	if err := s.thaw(false); err != nil {
		b.b.Reset()
		return err
	}
	if err := s.Err(); err != nil {
		b.b.Reset()
		return err
	}
	if s.over != nil {
		// A snapshot in progress: into the overlay (StartSnapshot).
		err := s.over.Apply(b.b, nil)
		b.b.Reset()
		if err != nil {
			return s.fail("commit (during a snapshot)", err)
		}
		if s.over.Len() > s.overMax && s.iters == 0 {
			t0 := time.Now() // a measurement for the summary
			err := s.thaw(true)
			s.waited += time.Since(t0)
			return err
		}
		return nil
	}
	n, size := b.b.Count(), int64(b.b.Len())
	err := s.db.Apply(b.b, pebble.NoSync)
	b.b.Reset()
	if err != nil {
		return s.fail(fmt.Sprintf("commit of %d writes", n), err)
	}
	if s.pending += size; s.flushAhead > 0 && s.pending >= s.flushAhead {
		return s.flushInBackground()
	}
	return nil
}

// flushInBackground starts a flush of the memtable without waiting for
// it, unless the one it started before is still in progress (a second
// would wait for the first: pebble holds at most two memtables,
// MemTableStopWritesThreshold).
func (s *Store) flushInBackground() error {
	if s.ahead != nil {
		select {
		case <-s.ahead:
		default:
			return nil
		}
	}
	done, err := s.db.AsyncFlush()
	if err != nil {
		return s.fail("flush", err)
	}
	s.ahead, s.pending = done, 0
	return nil
}

// Lookup finds the sorted keys with one iterator, each by a prefix seek
// (the bloom filters of the files skip those that cannot hold it).
func (s *Store) Lookup(keys [][]byte, found func(i int, value []byte)) error {
	if len(keys) == 0 {
		return nil
	}
	if err := s.thaw(false); err != nil {
		return err
	}
	it, err := s.newIter(&s.iterO)
	if err != nil {
		return s.fail("lookup", err)
	}
	s.iters++
	defer func() { s.iters-- }()
	for i, k := range keys {
		if it.SeekPrefixGE(k) && bytes.Equal(it.Key(), k) {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return s.fail("lookup", err)
			}
			found(i, v)
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return s.fail("lookup", err)
}

// Scan iterates [lo, hi).
func (s *Store) Scan(lo, hi []byte, fn func(key, value []byte) bool) error {
	if err := s.thaw(false); err != nil {
		return err
	}
	it, err := s.newIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return s.fail("scan", err)
	}
	s.iters++
	defer func() { s.iters-- }()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return s.fail("scan", err)
		}
		if !fn(it.Key(), v) {
			break
		}
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return s.fail("scan", err)
}

// SyncFile syncs a file of the store or of one of its snapshots (a hard
// link to a table shares the table's data) to stable storage: the upload
// of a checkpoint syncs each new table before the manifest names it,
// since pebble's own syncs do nothing (nosync.go). Errors name the store
// and the file.
func (s *Store) SyncFile(path string) error {
	f, err := s.fs.Open(path)
	if err != nil {
		return s.fail("sync of "+path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return s.fail("sync of "+path, err)
}

// Flush writes the memtables to SST files. A flush that fails (pebble
// retries it in the background) returns the failure instead of waiting.
func (s *Store) Flush() error { return s.flush("flush") }

func (s *Store) flush(op string) error {
	if err := s.thaw(true); err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	done, err := s.db.AsyncFlush()
	if err != nil {
		return s.fail(op, err)
	}
	s.ahead, s.pending = done, 0
	select {
	case <-done:
		return s.Err()
	case <-s.bgErr:
		return s.fail(op, *s.broken.Load())
	}
}

// Stats are a store's sizes and activity, for the status page and the
// metrics (docs/metrics.md).
type Stats struct {
	// DiskBytes is the size of its live SST files; MemTableBytes of its
	// memtables; CacheBytes the shared block cache's use (the same for
	// every store of a process).
	DiskBytes, MemTableBytes, CacheBytes int64
	// CacheHits and CacheMisses count block cache lookups.
	CacheHits, CacheMisses int64
	// Flushes and Compactions count memtable flushes and compactions;
	Flushes, Compactions int64
	// FlushTime and CompactionTime are the time spent flushing and
	// compacting.
	FlushTime, CompactionTime time.Duration
	Files                     int64
}

// Stats returns the store's stats.
func (s *Store) Stats() Stats {
	m := s.db.Metrics()
	st := Stats{
		DiskBytes:      int64(m.DiskSpaceUsage()),
		MemTableBytes:  int64(m.MemTable.Size),
		CacheBytes:     m.BlockCache.Size,
		CacheHits:      m.BlockCache.Hits,
		CacheMisses:    m.BlockCache.Misses,
		Flushes:        m.Flush.Count,
		Compactions:    m.Compact.Count,
		FlushTime:      m.Flush.WriteThroughput.WorkDuration,
		CompactionTime: m.Compact.Duration,
	}
	for i := range m.Levels {
		st.Files += m.Levels[i].TablesCount
	}
	return st
}

// quiet is pebble's Logger: informational lines to Logf (or nowhere);
// Fatalf panics, as pebble's default does (an invariant broken inside
// pebble, not an IO error: those are returned).
type quiet struct{ logf func(string, ...any) }

func (q quiet) Infof(format string, args ...any) {
	if q.logf != nil {
		q.logf(format, args...)
	}
}

func (q quiet) Errorf(format string, args ...any) { q.Infof(format, args...) }

func (q quiet) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

var _ io.Closer = (*Store)(nil)

var ctxBackground = context.Background()
