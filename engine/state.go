package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/dedup"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
)

// The disk backend's part of a run (docs/state.md): the directory of the
// tasks' stores, the block cache they share, each task's stores (one per
// span of key groups it took from a checkpoint), their snapshots at
// checkpoint rounds, the upload of new tables into the checkpoint
// directory and the restore from them.

// diskState is a run's disk backend.
type diskState struct {
	dir    string // state.dir
	temp   bool   // a temporary directory, removed at close
	budget disk.Budget
	cache  *pebble.Cache
	tasks  [][]*shard // per task, its shards by key group
	logf   func(string, ...any)
	// sent is the bytes of tables this run's checkpoints sent.
	sent int64
	// cks is each checkpoint's synchronous pause and tables sent.
	cks []DiskCheckpoint
	// restore counts what the restore took from the checkpoint.
	restore DiskRestore
	// rounds counts each task's snapshot rounds (fault point "flushed").
	rounds []int64
	fs     vfs.FS // Options.StateFS
	// ids and idText: prefetchIDs' scratch.
	ids    []uint64
	idText []byte
	// memLimit is the Go memory limit before the run set its own (restored
	// at close); -1: not changed.
	memLimit int64
}

// shard is one store of a task: its key groups, its id (a new one each
// time a store is opened, so that the names of its new tables never
// repeat an earlier store's) and the checkpoint objects of the tables it
// was restored with (their names in the store's directory → object).
type shard struct {
	st     *disk.Store
	lo, hi int
	id     string
	objs   map[string]string
}

// storeRef is a shard as a checkpoint's manifest records it: its key
// groups, its tables (objects in the checkpoint directory) and its other
// files (in the checkpoint's segment).
type storeRef struct {
	lo, hi int
	tables []tableRef
	metas  []metaRef
}

type tableRef struct {
	obj, name   string
	size        int64
	hash        uint64
	first, last int // key groups of the first and last key
}

type metaRef struct {
	name   string
	off, n int64
	hash   uint64
}

// stateSnap is one shard's snapshot at a checkpoint round, for the
// writer: started by task on its goroutine (disk.Store.StartSnapshot),
// waited for by the writer before the upload.
type stateSnap struct {
	sh   *shard
	task int
	pend *disk.Pending
	snap *disk.Snapshot // once waited for
}

// openDiskState prepares the disk backend of a run of tasks tasks: its
// directory (state.dir, DIR/state under checkpoint.dir, or a temporary
// one), emptied of the stores of earlier runs (a restore makes them again
// from the checkpoint), and the shared cache. The stores open at
// startStores, once the restore knows what they hold.
func (rt *runtime) openDiskState() error {
	sp := rt.plan.Spec.State
	ds := &diskState{budget: disk.Split(int64(sp.Memory), rt.par), logf: rt.logf, memLimit: -1, rounds: make([]int64, rt.par), fs: rt.opts.StateFS}
	switch {
	case sp.Dir != "":
		ds.dir = sp.Dir
	case rt.plan.Spec.Checkpoint != nil && rt.plan.Spec.Checkpoint.Dir != "":
		ds.dir = filepath.Join(rt.plan.Spec.Checkpoint.Dir, "state")
	default:
		d, err := os.MkdirTemp("", "tidemark-state-")
		if err != nil {
			return fmt.Errorf("state.dir: %w", err)
		}
		ds.dir, ds.temp = d, true
	}
	if err := os.MkdirAll(ds.dir, 0o755); err != nil {
		return fmt.Errorf("state.dir: %w", err)
	}
	ents, err := os.ReadDir(ds.dir)
	if err != nil {
		return fmt.Errorf("state.dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "s-") || strings.HasPrefix(e.Name(), "snap-") || strings.HasPrefix(e.Name(), "r-") {
			if err := os.RemoveAll(filepath.Join(ds.dir, e.Name())); err != nil {
				return fmt.Errorf("state.dir: removing a store of an earlier run: %w", err)
			}
		}
	}
	ds.cache = pebble.NewCache(ds.budget.Cache)
	if lim := ds.budget.MemoryLimit(); rt.opts.SetMemoryLimit && lim != debug.SetMemoryLimit(-1) {
		ds.memLimit = debug.SetMemoryLimit(lim)
	}
	rt.disk = ds
	return nil
}

// newID returns a new store id (16 hex digits from crypto/rand).
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// openShard opens a new empty store for key groups [lo, hi).
func (ds *diskState) openShard(lo, hi int) (*shard, error) {
	id := newID()
	st, err := disk.Open(disk.Options{Dir: filepath.Join(ds.dir, "s-"+id), FS: ds.fs, Cache: ds.cache, MemTableSize: uint64(ds.budget.MemTable)})
	if err != nil {
		return nil, err
	}
	return &shard{st: st, lo: lo, hi: hi, id: id, objs: map[string]string{}}, nil
}

// useStores hands every task its shards (one store, or a disk.Set).
func (rt *runtime) useStores() error {
	ds := rt.disk
	for i, t := range rt.tasks {
		shards := ds.tasks[i]
		var st state.Store = shards[0].st
		if len(shards) > 1 {
			var ss []disk.Shard
			for _, sh := range shards {
				ss = append(ss, disk.Shard{Store: sh.st, Lo: sh.lo, Hi: sh.hi})
			}
			st = disk.NewSet(ss)
		}
		hot := int(ds.budget.Hot)
		if rt.opts.HotTier > 0 {
			hot = rt.opts.HotTier
		}
		if err := t.UseStore(st, hot); err != nil {
			return err
		}
	}
	return nil
}

// freshStores opens an empty store per task (a run without a checkpoint
// to restore).
func (rt *runtime) freshStores() error {
	ds := rt.disk
	ds.tasks = make([][]*shard, rt.par)
	for i := range rt.par {
		r := rt.g.Range(i)
		sh, err := ds.openShard(r.Lo, r.Hi)
		if err != nil {
			return err
		}
		ds.tasks[i] = []*shard{sh}
	}
	return rt.useStores()
}

// snapshotStores starts the snapshots of task i's stores at a checkpoint
// round (after Task.Flush), on the task's goroutine, and returns them with
// the time the task waited (for the snapshots of the checkpoint before,
// still in progress): the flush and pebble's checkpoint of each run in the
// background while the task goes on (disk.Store.StartSnapshot), and the
// writer waits for them before the upload (uploadSnaps).
func (rt *runtime) snapshotStores(i int, round uint64) ([]stateSnap, time.Duration, error) {
	ds := rt.disk
	var out []stateSnap
	var waited time.Duration
	for _, sh := range ds.tasks[i] {
		p, w, err := sh.st.StartSnapshot(filepath.Join(ds.dir, fmt.Sprintf("snap-%d-%s", round, sh.id)))
		waited += w
		if err != nil {
			return out, waited, err
		}
		out = append(out, stateSnap{sh: sh, task: i, pend: p})
	}
	return out, waited, nil
}

// waitSnaps waits for the snapshots started at a checkpoint round and
// returns the longest store's time by part (disk.SnapshotTimes).
func waitSnaps(snaps []stateSnap) (disk.SnapshotTimes, error) {
	var t disk.SnapshotTimes
	for i := range snaps {
		s := &snaps[i]
		snap, err := s.pend.Wait()
		if err != nil {
			return t, fmt.Errorf("task %d: %w", s.task, err)
		}
		s.snap = snap
		t.Flush = max(t.Flush, snap.Times.Flush)
		t.Checkpoint = max(t.Checkpoint, snap.Times.Checkpoint)
		t.List = max(t.List, snap.Times.List)
	}
	return t, nil
}

// uploadSnaps puts the snapshots' new tables into the checkpoint
// directory (a hard link each on the same file system), their other
// files into the segment seg, and returns the manifest's store records.
// known maps the tables the checkpoint directory already holds to their
// records.
func (rt *runtime) uploadSnaps(snaps []stateSnap, seg []byte, known map[string]tableRef, id int64) ([]storeRef, []byte, int64, error) {
	fs, ok := rt.ck.store.(checkpoint.FileStore)
	if !ok {
		return nil, nil, 0, fmt.Errorf("the checkpoint store (%T) cannot hold the disk backend's tables", rt.ck.store)
	}
	var refs []storeRef
	var sent int64
	for _, s := range snaps {
		ref := storeRef{lo: s.sh.lo, hi: s.sh.hi}
		for _, f := range s.snap.Files {
			path := filepath.Join(s.snap.Dir, f.Name)
			if !f.Table {
				b, err := os.ReadFile(path)
				if err != nil {
					return nil, nil, 0, fmt.Errorf("state store %s: snapshot file %s: %w", s.sh.st.Dir(), f.Name, err)
				}
				ref.metas = append(ref.metas, metaRef{name: f.Name, off: int64(len(seg)), n: int64(len(b)), hash: xxhash.Sum64(b)})
				seg = append(seg, b...)
				continue
			}
			obj, ok := s.sh.objs[f.Name]
			if !ok {
				obj = checkpoint.TablePrefix + s.sh.id + "-" + f.Name
			}
			tr, ok := known[obj]
			if !ok {
				// The store's syncs do nothing (state/disk/nosync.go): the
				// table reaches stable storage here, before the manifest
				// names it, off the tasks' path.
				if err := s.sh.st.SyncFile(path); err != nil {
					return nil, nil, 0, fmt.Errorf("upload of %s: %w", f.Name, err)
				}
				size, hash, err := fs.PutFile(obj, path)
				if err != nil && !errors.Is(err, os.ErrExist) {
					return nil, nil, 0, fmt.Errorf("state store %s: upload of %s: %w", s.sh.st.Dir(), f.Name, err)
				}
				if err != nil { // left by an attempt that crashed before its manifest: the same file
					if size, hash, err = checkpoint.HashFile(path); err != nil {
						return nil, nil, 0, err
					}
					fs.RemoveFile(obj)
					if _, _, err := fs.PutFile(obj, path); err != nil {
						return nil, nil, 0, fmt.Errorf("state store %s: upload of %s: %w", s.sh.st.Dir(), f.Name, err)
					}
				}
				tr = tableRef{obj: obj, size: size, hash: hash}
				if sent == 0 {
					rt.fault("uploading", id)
				}
				sent += size
				s.sh.objs[f.Name] = obj
			}
			tr.name, tr.first, tr.last = f.Name, f.FirstGroup, f.LastGroup
			known[obj] = tr
			ref.tables = append(ref.tables, tr)
		}
		refs = append(refs, ref)
	}
	return refs, seg, sent, nil
}

// removeSnaps deletes the snapshot directories once their checkpoint is
// written (their tables are in the checkpoint directory), or failed —
// each once its snapshot ended, since a snapshot in progress writes there.
func (rt *runtime) removeSnaps(snaps []stateSnap) {
	for _, s := range snaps {
		s.pend.Wait()
		if err := os.RemoveAll(s.pend.Dir()); err != nil {
			rt.logf("state.dir: removing snapshot %s: %v", s.pend.Dir(), err)
		}
	}
}

// restoreStores opens each task's stores from a checkpoint's store
// records: for task i, every recorded store whose key groups overlap the
// task's makes one shard of it, from the tables overlapping the task's
// key groups (hard links from the checkpoint directory where it can),
// with the key groups it does not own excised.
func (rt *runtime) restoreStores(refs []storeRef, segRead func(off, n int64) ([]byte, error)) error {
	ds := rt.disk
	start := time.Now()
	defer func() { ds.restore.Duration += time.Since(start) }()
	fs := rt.ck.store.(checkpoint.FileStore)
	ds.tasks = make([][]*shard, rt.par)
	for i := range rt.par {
		r := rt.g.Range(i)
		for _, ref := range refs {
			lo, hi := max(ref.lo, r.Lo), min(ref.hi, r.Hi)
			if lo >= hi {
				continue
			}
			sh, err := ds.restoreShard(fs, ref, lo, hi, segRead)
			if err != nil {
				return err
			}
			ds.tasks[i] = append(ds.tasks[i], sh)
		}
		// Key groups no recorded store held (there are none when the
		// checkpoint's stores covered every key group) get an empty store.
		covered := 0
		for _, sh := range ds.tasks[i] {
			covered += sh.hi - sh.lo
		}
		if covered != r.Len() {
			return fmt.Errorf("%w: the checkpoint's state stores cover %d of task %d's %d key groups", checkpoint.ErrCorrupt, covered, i, r.Len())
		}
		slices.SortFunc(ds.tasks[i], func(a, b *shard) int { return a.lo - b.lo })
	}
	return rt.useStores()
}

// restoreShard makes a store for key groups [lo, hi) of ref.
func (ds *diskState) restoreShard(fs checkpoint.FileStore, ref storeRef, lo, hi int, segRead func(off, n int64) ([]byte, error)) (*shard, error) {
	id := newID()
	dir := filepath.Join(ds.dir, "s-"+id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	sh := &shard{lo: lo, hi: hi, id: id, objs: map[string]string{}}
	partial := lo != ref.lo || hi != ref.hi
	for _, t := range ref.tables {
		if t.last < lo || t.first >= hi {
			partial = true
			continue // none of its keys is the task's
		}
		copied, err := fs.GetFile(t.obj, filepath.Join(dir, t.name))
		if err != nil {
			return nil, fmt.Errorf("%w: state table %s: %v", checkpoint.ErrCorrupt, t.obj, err)
		}
		ds.restore.Tables++
		ds.restore.TableBytes += t.size
		ds.restore.CopiedBytes += copied
		sh.objs[t.name] = t.obj
	}
	for _, m := range ref.metas {
		b, err := segRead(m.off, m.n)
		if err != nil {
			return nil, err
		}
		if xxhash.Sum64(b) != m.hash {
			return nil, fmt.Errorf("%w: state store file %s fails its checksum", checkpoint.ErrCorrupt, m.name)
		}
		if err := os.WriteFile(filepath.Join(dir, m.name), b, 0o644); err != nil {
			return nil, fmt.Errorf("state.dir: %w", err)
		}
	}
	opts := disk.Options{Dir: dir, FS: ds.fs, Cache: ds.cache, MemTableSize: uint64(ds.budget.MemTable)}
	ds.restore.Stores++
	if partial {
		ds.restore.Excised++
		// Open without the tables it did not take, excise what it does not
		// own, and open again as usual.
		o := opts
		o.Unverified = true
		st, err := disk.Open(o)
		if err != nil {
			return nil, err
		}
		if err := st.Excise(lo, hi); err != nil {
			st.Close()
			return nil, err
		}
		if err := st.Close(); err != nil {
			return nil, err
		}
	}
	st, err := disk.Open(opts)
	if err != nil {
		return nil, err
	}
	sh.st = st
	return sh, nil
}

// closeDiskState closes the stores, removes them (a restore makes them
// again from the checkpoint) and a temporary state directory, and gives
// back the memory limit.
func (rt *runtime) closeDiskState() error {
	ds := rt.disk
	if ds == nil {
		return nil
	}
	var errs []error
	for _, shards := range ds.tasks {
		for _, sh := range shards {
			errs = append(errs, sh.st.Close())
			os.RemoveAll(sh.st.Dir())
		}
	}
	ds.tasks = nil
	if ds.cache != nil {
		ds.cache.Unref()
		ds.cache = nil
	}
	if ds.temp {
		os.RemoveAll(ds.dir)
	}
	if ds.memLimit >= 0 {
		debug.SetMemoryLimit(ds.memLimit)
	}
	return errors.Join(errs...)
}

// The manifest's stores (version 8):
//
//	String(segment) Uint(#stores) per store: Uint(first key group)
//	Uint(end key group) Uint(#tables) (String(object) String(name)
//	Uint(size) Fixed64(xxHash64) Uint(first key group) Uint(last key
//	group))… Uint(#files) (String(name) Uint(offset) Uint(length)
//	Fixed64(xxHash64))…
//
// A table's key groups are those of its first and last keys (−1: unknown,
// encoded +1); the files other than tables are in the segment.

func encodeStores(e *state.Encoder, stores []storeRef, seg string) {
	if len(stores) == 0 {
		seg = "" // the memory backend: no store, no segment of their files
	}
	e.String(seg)
	e.Uint(uint64(len(stores)))
	for _, st := range stores {
		e.Uint(uint64(st.lo))
		e.Uint(uint64(st.hi))
		e.Uint(uint64(len(st.tables)))
		for _, t := range st.tables {
			e.String(t.obj)
			e.String(t.name)
			e.Uint(uint64(t.size))
			e.Fixed64(t.hash)
			e.Uint(uint64(t.first + 1))
			e.Uint(uint64(t.last + 1))
		}
		e.Uint(uint64(len(st.metas)))
		for _, m := range st.metas {
			e.String(m.name)
			e.Uint(uint64(m.off))
			e.Uint(uint64(m.n))
			e.Fixed64(m.hash)
		}
	}
}

func decodeStores(d *state.Decoder) ([]storeRef, string) {
	seg := d.String()
	n := d.Len(1<<16, 3)
	var out []storeRef
	for i := 0; i < n && d.Err() == nil; i++ {
		st := storeRef{lo: int(d.Uint()), hi: int(d.Uint())}
		nt := d.Len(1<<24, 12)
		for k := 0; k < nt && d.Err() == nil; k++ {
			st.tables = append(st.tables, tableRef{obj: d.String(), name: d.String(), size: int64(d.Uint()), hash: d.Fixed64(),
				first: int(d.Uint()) - 1, last: int(d.Uint()) - 1})
		}
		nm := d.Len(1<<16, 11)
		for k := 0; k < nm && d.Err() == nil; k++ {
			st.metas = append(st.metas, metaRef{name: d.String(), off: int64(d.Uint()), n: int64(d.Uint()), hash: d.Fixed64()})
		}
		if d.Err() == nil && (st.lo < 0 || st.lo >= st.hi || st.hi > 1<<16) {
			d.Fail("state store of key groups [%d, %d)", st.lo, st.hi)
		}
		out = append(out, st)
	}
	return out, seg
}

// tablesPresent checks that every table a checkpoint's stores name is in
// the checkpoint directory with its size: a missing or truncated one
// makes the checkpoint unusable (ErrCorrupt, naming the file), and the
// previous one is tried.
func (rt *runtime) tablesPresent(m *manifest) error {
	if len(m.stores) == 0 {
		return nil
	}
	fs, ok := rt.ck.store.(checkpoint.FileStore)
	if !ok {
		return fmt.Errorf("the checkpoint store (%T) cannot hold the disk backend's tables", rt.ck.store)
	}
	for _, st := range m.stores {
		for _, t := range st.tables {
			size, err := fs.StatFile(t.obj)
			if err != nil {
				return fmt.Errorf("%w: state table %s: %v", checkpoint.ErrCorrupt, filepath.Join(rt.ck.dir, t.obj), err)
			}
			if size != t.size {
				return fmt.Errorf("%w: state table %s holds %d bytes, its checkpoint recorded %d", checkpoint.ErrCorrupt, filepath.Join(rt.ck.dir, t.obj), size, t.size)
			}
		}
	}
	return nil
}

// prefetchIDs hands the task of a one-task run the event ids of a batch
// before the router pushes its records one by one (disk backend: the
// dedup node looks its misses up in one pass).
func (rt *runtime) prefetchIDs(b *source.Batch) error {
	d := rt.plan.Dedup
	if d == nil {
		return nil
	}
	ds := rt.disk
	ds.ids = ds.ids[:0]
	for i := range b.Meta {
		if b.Meta[i].Err != nil {
			continue
		}
		v, err := d.Key.Eval(&b.Rows[i])
		if err != nil || v.IsNull() {
			continue
		}
		ds.idText = v.AppendText(ds.idText[:0], nil)
		ds.ids = append(ds.ids, dedup.IDHash(ds.idText))
	}
	return rt.tasks[0].PrefetchIDs(ds.ids)
}

// liveDisk sums the stores' stats for a snapshot (pebble's metrics are
// safe to read beside the tasks that write the stores).
func (rt *runtime) liveDisk() *LiveDiskState {
	ds := rt.disk
	if ds == nil {
		return nil
	}
	l := &LiveDiskState{HotBudget: ds.budget.Hot * int64(rt.par)}
	if rt.opts.HotTier > 0 {
		l.HotBudget = int64(rt.opts.HotTier) * int64(rt.par)
	}
	for _, shards := range ds.tasks {
		for _, sh := range shards {
			s := sh.st.Stats()
			l.DiskBytes += s.DiskBytes
			l.MemTableBytes += s.MemTableBytes
			l.CacheBytes = s.CacheBytes
			l.CacheHits += s.CacheHits
			l.CacheMisses += s.CacheMisses
			l.Flushes += s.Flushes
			l.Compactions += s.Compactions
			l.FlushTime += s.FlushTime
			l.CompactionTime += s.CompactionTime
			l.Files += s.Files
		}
	}
	return l
}
