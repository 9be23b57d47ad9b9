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

// SnapshotTimes split the time of Store.Snapshot into its parts: Flush,
// the memtables written to tables and the wait for it (pebble's flush);
// Checkpoint, pebble's checkpoint (a hard link per table, a copy of the
// MANIFEST and OPTIONS, the directory synced); List, the snapshot's files
// listed with the key groups of each table (the snapshot opened read
// only).
type SnapshotTimes struct {
	Flush, Checkpoint, List time.Duration
}

// Snapshot flushes the memtables and takes a pebble checkpoint of the
// store into dir (which must not exist): hard links to its tables and a
// copy of its MANIFEST and OPTIONS, so it costs a flush and a link per
// file whatever the state's size. The snapshot's files, with the key
// groups of each table, are listed from the snapshot itself (opened read
// only), not from the live store, which compactions change meanwhile.
func (s *Store) Snapshot(dir string) (*Snapshot, error) {
	t0 := time.Now() // measurements for the summary, not inputs of the run
	if err := s.flush("snapshot: flush"); err != nil {
		return nil, err
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
