package disk

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tidemark/tidemark/state"
)

// File is one file of a store's snapshot.
type File struct {
	// Name is the file's name in the snapshot's directory: "000012.sst"
	// (a table), "MANIFEST-000009", "OPTIONS-000007", "marker.…".
	Name string
	// Size in bytes.
	Size int64
	// Table marks an immutable data file (an SST, or a blob file of
	// separated values): pebble never changes one once written, so a
	// checkpoint references it from earlier checkpoints instead of
	// writing it again. The other files (the MANIFEST, OPTIONS, markers)
	// describe one snapshot and are written with every checkpoint.
	Table bool
	// FirstGroup and LastGroup are the key groups of a table's smallest
	// and largest keys (inclusive): a restore of other key groups skips
	// the table. −1 for files that are not tables.
	FirstGroup, LastGroup int
}

// Snapshot is a store's state at one instant, as files in a directory of
// its own (hard links to the store's tables, copies of the rest).
type Snapshot struct {
	Dir   string
	Files []File
	// Times are how long Snapshot took, by part: a measurement for the
	// run's summary, never an input of the run.
	Times SnapshotTimes
}

// SnapshotTimes split the time of a snapshot into its parts: Flush, the
// memtables written to tables and the wait for it (pebble's flush);
// Checkpoint, pebble's checkpoint (a hard link per table, a copy of the
// MANIFEST and OPTIONS); List, the snapshot's files listed with the key
// groups of each table (the snapshot opened read only). All three run in
// the background of StartSnapshot, off the caller's path.
type SnapshotTimes struct {
	Flush, Checkpoint, List time.Duration
}

// Pending is a snapshot in progress (StartSnapshot).
type Pending struct {
	dir  string
	done chan struct{}
	snap *Snapshot
	err  error
}

// Dir returns the snapshot's directory.
func (p *Pending) Dir() string { return p.dir }

// Wait waits for the snapshot to end and returns it, or the error that
// ended it (naming the store). Safe to call from any goroutine, any
// number of times.
func (p *Pending) Wait() (*Snapshot, error) {
	<-p.done
	return p.snap, p.err
}

// StartSnapshot takes a snapshot of the store as it is now into dir
// (which must not exist) and returns at once: the flush of the memtables,
// pebble's checkpoint (hard links to the tables, a copy of the MANIFEST
// and OPTIONS) and the listing of its files run on a goroutine of their
// own, and Pending.Wait gives the result.
//
// Until they end the store's database is frozen — nothing is written to
// it, so that what the flush and the checkpoint see is the store at this
// instant (with pebble's write-ahead log off a checkpoint holds only
// flushed tables, so a flush of later writes before the checkpoint would
// put them in the snapshot). The caller's commits meanwhile go into an
// indexed batch, the overlay, which its lookups and scans read over the
// frozen database; the overlay is applied to the database at the first
// Commit, Lookup or Scan after the snapshot ended. An overlay of more than
// half a memtable's bytes makes the next Commit wait for the snapshot (so
// that the overlay, beside the memtable being flushed, keeps the store
// within its two memtables of memory); the time waited — and the wait of a
// StartSnapshot for a snapshot still in progress — is returned by the next
// StartSnapshot, the store's part of the pause of the checkpoint it is
// for.
//
// The store is still used from one goroutine only; Pending.Wait may be
// called from another.
func (s *Store) StartSnapshot(dir string) (*Pending, time.Duration, error) {
	t0 := time.Now() // measurements for the summary, not inputs of the run
	if err := s.thaw(true); err != nil {
		return nil, 0, err
	}
	waited := s.waited + time.Since(t0)
	s.waited = 0
	if err := s.Err(); err != nil {
		return nil, waited, err
	}
	p := &Pending{dir: dir, done: make(chan struct{})}
	s.over, s.snap = s.db.NewIndexedBatch(), p
	go func() {
		defer close(p.done)
		p.snap, p.err = s.snapshot(dir)
	}()
	return p, waited, nil
}

// Snapshot takes a snapshot of the store into dir and waits for it
// (StartSnapshot, then Pending.Wait).
func (s *Store) Snapshot(dir string) (*Snapshot, error) {
	p, _, err := s.StartSnapshot(dir)
	if err != nil {
		return nil, err
	}
	snap, err := p.Wait()
	if err != nil {
		s.thaw(true)
		return nil, err
	}
	return snap, s.thaw(true)
}

// snapshot is StartSnapshot's background part: the database is frozen
// meanwhile. The snapshot's files, with the key groups of each table, are
// listed from the snapshot itself (opened read only), not from the live
// store, which compactions change meanwhile.
func (s *Store) snapshot(dir string) (*Snapshot, error) {
	t0 := time.Now()
	done, err := s.db.AsyncFlush()
	if err != nil {
		return nil, s.fail("snapshot: flush", err)
	}
	select {
	case <-done:
		if p := s.broken.Load(); p != nil {
			return nil, s.fail("snapshot: flush", *p)
		}
	case <-s.bgErr:
		return nil, s.fail("snapshot: flush", *s.broken.Load())
	}
	t1 := time.Now()
	if err := s.db.Checkpoint(dir); err != nil {
		return nil, s.fail("snapshot: checkpoint into "+dir, err)
	}
	t2 := time.Now()
	snap, err := s.list(dir)
	if err != nil {
		return nil, err
	}
	snap.Times = SnapshotTimes{Flush: t1.Sub(t0), Checkpoint: t2.Sub(t1), List: time.Since(t2)}
	return snap, nil
}

// thaw ends the freeze of a snapshot that ended — waiting for it if wait
// — by applying the overlay to the database. Not while an iterator over
// the overlay is open (a Scan's callback committing): the next operation
// does it. A snapshot that failed leaves the store failed: the overlay's
// writes are lost, so every later operation returns the failure.
func (s *Store) thaw(wait bool) error {
	if s.snap == nil {
		return s.stuck
	}
	if s.iters > 0 {
		return nil
	}
	if wait {
		<-s.snap.done
	} else {
		select {
		case <-s.snap.done:
		default:
			return nil
		}
	}
	p, over := s.snap, s.over
	s.snap, s.over = nil, nil
	defer over.Close()
	if p.err != nil {
		s.stuck = p.err
		return p.err
	}
	if over.Empty() {
		return nil
	}
	n, size := over.Count(), int64(over.Len())
	if err := s.db.Apply(over, pebble.NoSync); err != nil {
		s.stuck = s.fail(fmt.Sprintf("commit of %d writes (made during a snapshot)", n), err)
		return s.stuck
	}
	if s.pending += size; s.flushAhead > 0 && s.pending >= s.flushAhead {
		return s.flushInBackground()
	}
	return nil
}

// newIter returns an iterator over the store: over the overlay and the
// frozen database during a snapshot.
func (s *Store) newIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	if s.over != nil {
		return s.over.NewIter(o)
	}
	return s.db.NewIter(o)
}

// list lists a snapshot directory's files, the tables with their key
// groups (from the snapshot's own manifest).
func (s *Store) list(dir string) (*Snapshot, error) {
	names, err := s.fs.List(dir)
	if err != nil {
		return nil, s.fail("snapshot: list "+dir, err)
	}
	slices.Sort(names)
	bounds := map[string][2]int{}
	ro, err := Open(Options{Dir: dir, FS: s.fs, Cache: s.cache, ReadOnly: true})
	if err != nil {
		return nil, s.fail("snapshot: read "+dir, err)
	}
	levels, err := ro.db.SSTables()
	if err != nil {
		ro.Close()
		return nil, s.fail("snapshot: tables of "+dir, err)
	}
	for _, lv := range levels {
		for _, t := range lv {
			name := fmt.Sprintf("%06d.sst", t.BackingSSTNum)
			lo, _ := state.KeyGroupOf(t.Smallest.UserKey)
			hi, _ := state.KeyGroupOf(t.Largest.UserKey)
			if b, ok := bounds[name]; ok {
				lo, hi = min(lo, b[0]), max(hi, b[1])
			}
			bounds[name] = [2]int{lo, hi}
		}
	}
	if err := ro.Close(); err != nil {
		return nil, err
	}
	snap := &Snapshot{Dir: dir}
	for _, n := range names {
		st, err := s.fs.Stat(s.fs.PathJoin(dir, n))
		if err != nil {
			return nil, s.fail("snapshot: stat", err)
		}
		if st.IsDir() {
			continue
		}
		f := File{Name: n, Size: st.Size(), FirstGroup: -1, LastGroup: -1}
		if IsTable(n) {
			f.Table = true
			if b, ok := bounds[n]; ok {
				f.FirstGroup, f.LastGroup = b[0], b[1]
			}
		}
		snap.Files = append(snap.Files, f)
	}
	return snap, nil
}

// IsTable reports whether a store's file name is an immutable data file
// (an SST or a blob file).
func IsTable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// Excise removes every key of the key groups outside [lo, hi) from the
// store without rewriting its files (pebble's excise: a table straddling
// the range's ends becomes a virtual table over the part kept): after a
// restore that took a snapshot of more key groups than the task owns.
func (s *Store) Excise(lo, hi int) error {
	if lo > 0 {
		a, b := state.GroupSpan(0, lo)
		if err := s.db.Excise(ctxBackground, pebble.KeyRange{Start: a, End: b}); err != nil {
			return s.fail(fmt.Sprintf("excise of key groups [0, %d)", lo), err)
		}
	}
	a, _ := state.GroupSpan(hi, hi)
	end := []byte{0xff, 0xff, 0xff}
	if err := s.db.Excise(ctxBackground, pebble.KeyRange{Start: a, End: end}); err != nil {
		return s.fail(fmt.Sprintf("excise of key groups from %d", hi), err)
	}
	return nil
}
