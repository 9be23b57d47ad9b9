package disk

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tidemark/tidemark/state"
)

// key is node 1's key i in key group kg.
func key(kg, i int) []byte {
	return binary.BigEndian.AppendUint32(state.KeyPrefix(nil, kg, 1), uint32(i))
}

func openMem(t *testing.T, fs vfs.FS, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// contents returns every key of the store as "kg/i=value".
func contents(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	if err := s.Scan(nil, []byte{0xff, 0xff}, func(k, v []byte) bool {
		kg, _ := state.KeyGroupOf(k)
		out = append(out, fmt.Sprintf("%d/%d=%s", kg, binary.BigEndian.Uint32(k[state.PrefixLen:]), v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCommitLookupScan(t *testing.T) {
	s := openMem(t, vfs.NewMem(), "st")
	b := s.NewBatch()
	for kg := range 3 {
		for i := range 4 {
			b.Set(key(kg, i), fmt.Appendf(nil, "v%d.%d", kg, i))
		}
	}
	b.Delete(key(1, 2))
	if b.Count() != 13 {
		t.Fatalf("count %d, want 13", b.Count())
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if b.Count() != 0 {
		t.Fatalf("batch not reset: %d writes", b.Count())
	}
	// Key group 2's keys 1 and 2 go by one range delete.
	b.DeleteRange(key(2, 1), key(2, 3))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	want := []string{"0/0=v0.0", "0/1=v0.1", "0/2=v0.2", "0/3=v0.3", "1/0=v1.0", "1/1=v1.1", "1/3=v1.3", "2/0=v2.0", "2/3=v2.3"}
	if got := contents(t, s); !slices.Equal(got, want) {
		t.Fatalf("scan:\n got %v\nwant %v", got, want)
	}
	keys := [][]byte{key(0, 3), key(1, 2), key(1, 3), key(2, 2), key(5, 0)}
	var found []string
	if err := s.Lookup(keys, func(i int, v []byte) { found = append(found, fmt.Sprintf("%d:%s", i, v)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0:v0.3", "2:v1.3"}; !slices.Equal(found, want) {
		t.Fatalf("lookup %v, want %v", found, want)
	}
	// After a flush the same answers come from the files.
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	found = found[:0]
	if err := s.Lookup(keys, func(i int, v []byte) { found = append(found, fmt.Sprintf("%d:%s", i, v)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0:v0.3", "2:v1.3"}; !slices.Equal(found, want) {
		t.Fatalf("lookup after flush %v, want %v", found, want)
	}
}

// TestSnapshot: a snapshot holds the state when it was taken, opens as a
// store of its own, and lists its tables with their key groups.
func TestSnapshot(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs, "st")
	b := s.NewBatch()
	for kg := 4; kg < 7; kg++ {
		b.Set(key(kg, 1), []byte("a"))
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot("snap-1")
	if err != nil {
		t.Fatal(err)
	}
	b.Set(key(5, 2), []byte("after"))
	b.DeleteRange(key(4, 0), key(5, 0))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, f := range snap.Files {
		if f.Table {
			tables = append(tables, fmt.Sprintf("[%d,%d] %t", f.FirstGroup, f.LastGroup, f.Size > 0))
		}
	}
	if want := []string{"[4,6] true"}; !slices.Equal(tables, want) {
		t.Fatalf("tables %v, want %v (files %+v)", tables, want, snap.Files)
	}
	if got, want := contents(t, s), []string{"5/1=a", "5/2=after", "6/1=a"}; !slices.Equal(got, want) {
		t.Fatalf("live store %v, want %v", got, want)
	}
	r := openMem(t, fs, "snap-1")
	if got, want := contents(t, r), []string{"4/1=a", "5/1=a", "6/1=a"}; !slices.Equal(got, want) {
		t.Fatalf("snapshot %v, want %v", got, want)
	}
	// A restore into key groups [5, 6) excises the rest.
	if err := r.Excise(5, 6); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, r), []string{"5/1=a"}; !slices.Equal(got, want) {
		t.Fatalf("excised %v, want %v", got, want)
	}
}

// TestErrorsNameStore: a failing operation names the store and what
// failed.
func TestErrorsNameStore(t *testing.T) {
	_, err := Open(Options{Dir: "st", FS: vfs.NewMem(), ReadOnly: true})
	var se *Error
	if !errors.As(err, &se) || se.Store != "st" || se.Op != "open" || !strings.HasPrefix(err.Error(), "state store st: open: ") {
		t.Fatalf("open of a missing read-only store: %v", err)
	}
}

func TestSplit(t *testing.T) {
	b := Split(1<<30, 2)
	if b.Cache != 256<<20 || b.MemTable != 64<<20 || b.Hot != 256<<20 {
		t.Fatalf("1 GiB over 2 tasks: %+v", b)
	}
	if b.Cache+2*2*b.MemTable+2*b.Hot != b.Total {
		t.Fatalf("parts do not add up to the total: %+v", b)
	}
	small := Split(1, 3)
	if small.Total != MinBudget(3) || small.MemTable < minMemTable || small.Hot < minHot || small.MemTable*2*3+small.Hot*3+small.Cache > small.Total {
		t.Fatalf("a tiny budget: %+v", small)
	}
}

// TestDiskFaults: ENOSPC or EIO on the store's files stops the operation
// with an error naming the store and what failed; the store's state as of
// its last snapshot is intact.
func TestDiskFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   errorfs.OpKind
		op     func(s *Store) error
		want   string
		broken bool // the store's background flush failed: Close returns it
	}{
		{"ENOSPC writing a table", errorfs.OpFileWrite, func(s *Store) error { _, err := s.Snapshot("snap-2"); return err }, "snapshot: ", true},
		// The store's own syncs do nothing (nosync.go): a table's sync is
		// the upload's, of the snapshot's tables.
		{"EIO syncing a table", errorfs.OpFileSync, func(s *Store) error {
			snap, err := s.Snapshot("snap-2")
			if err != nil {
				return err
			}
			for _, f := range snap.Files {
				if f.Table {
					if err := s.SyncFile(snap.Dir + "/" + f.Name); err != nil {
						return err
					}
				}
			}
			return nil
		}, "sync of snap-2/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var on atomic.Bool
			inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
				if on.Load() && (op.Kind == tc.kind || tc.kind == errorfs.OpFileSync && (op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo)) && strings.HasSuffix(op.Path, ".sst") {
					if tc.kind == errorfs.OpFileWrite {
						return syscall.ENOSPC
					}
					return syscall.EIO
				}
				return nil
			})
			fs := errorfs.Wrap(mem, inj)
			s, err := Open(Options{Dir: "st", FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			b := s.NewBatch()
			b.Set(key(1, 1), []byte("kept"))
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Snapshot("snap-1"); err != nil {
				t.Fatal(err)
			}
			b.Set(key(1, 2), []byte("lost"))
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
			on.Store(true)
			err = tc.op(s)
			if err == nil || !strings.HasPrefix(err.Error(), "state store st: "+tc.want) {
				t.Fatalf("got %v, want an error naming the store and %q", err, tc.want)
			}
			on.Store(false)
			if err := s.Close(); (err != nil) != tc.broken {
				t.Fatalf("Close: %v; want an error: %v", err, tc.broken)
			}
			r := openMem(t, mem, "snap-1")
			if got, want := contents(t, r), []string{"1/1=kept"}; !slices.Equal(got, want) {
				t.Fatalf("snapshot after the fault %v, want %v", got, want)
			}
		})
	}
}

// TestNoSyncs: a store syncs none of its files — commits, flushes,
// compactions, snapshots and their directories (nosync.go) — and
// SyncFile syncs exactly the file it names.
func TestNoSyncs(t *testing.T) {
	mem := vfs.NewMem()
	var syncs atomic.Int64
	var last atomic.Pointer[string]
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			syncs.Add(1)
			p := op.Path
			last.Store(&p)
		}
		return nil
	})
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, inj), MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	for i := range 20_000 {
		b.Set(key(i%7, i), make([]byte, 100))
		if i%1000 == 999 {
			if err := s.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot("snap")
	if err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 0 {
		t.Fatalf("the store synced %d times (the last %s), want none", n, *last.Load())
	}
	var table string
	for _, f := range snap.Files {
		if f.Table {
			table = snap.Dir + "/" + f.Name
		}
	}
	if table == "" {
		t.Fatalf("a snapshot without tables: %+v", snap.Files)
	}
	if err := s.SyncFile(table); err != nil {
		t.Fatal(err)
	}
	if n, p := syncs.Load(), *last.Load(); n != 1 || p != table {
		t.Fatalf("SyncFile: %d syncs, the last of %s; want 1 of %s", n, p, table)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadFault: EIO reading a table makes a lookup fail with an error
// naming the store and the lookup.
func TestReadFault(t *testing.T) {
	mem := vfs.NewMem()
	s := openMem(t, mem, "st")
	b := s.NewBatch()
	for i := range 1000 {
		b.Set(key(3, i), []byte("v"))
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var on atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, ".sst") {
			return syscall.EIO
		}
		return nil
	}))
	r, err := Open(Options{Dir: "st", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	err = r.Lookup([][]byte{key(3, 5)}, func(int, []byte) {})
	if err == nil || !strings.HasPrefix(err.Error(), "state store st: lookup: ") || !errors.Is(err, syscall.EIO) {
		t.Fatalf("lookup with EIO on the table: %v", err)
	}
	on.Store(false)
	r.Close()
}

// TestFlushAhead: a store starts a memtable flush in the background once
// FlushAhead bytes were committed since the last one (and none is in
// progress), without waiting for it; below the threshold, or with
// FlushAhead negative, the memtable stays (its 1 MiB is not full). The
// keys are the same either way.
func TestFlushAhead(t *testing.T) {
	commit := func(s *Store, from, n int) {
		t.Helper()
		b := s.NewBatch()
		for i := from; i < from+n; i++ {
			b.Set(key(0, i), make([]byte, 100))
		}
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, ahead := range []int64{64 << 10, -1} {
		s, err := Open(Options{Dir: "st", FS: vfs.NewMem(), MemTableSize: 1 << 20, FlushAhead: ahead})
		if err != nil {
			t.Fatal(err)
		}
		commit(s, 0, 100) // about 12 KiB: below the threshold
		if s.ahead != nil || s.Stats().Flushes != 0 {
			t.Fatalf("FlushAhead %d: a flush after 12 KiB (%d flushes)", ahead, s.Stats().Flushes)
		}
		commit(s, 100, 1000) // about 120 KiB in all
		want := int64(0)
		if ahead > 0 {
			if s.ahead == nil {
				t.Fatalf("FlushAhead %d: no flush started after 120 KiB", ahead)
			}
			<-s.ahead
			want = 1
		} else if s.ahead != nil {
			t.Fatalf("FlushAhead %d: a flush started", ahead)
		}
		if got := s.Stats().Flushes; got != want {
			t.Errorf("FlushAhead %d: %d flushes, want %d", ahead, got, want)
		}
		if n := len(contents(t, s)); n != 1100 {
			t.Errorf("FlushAhead %d: %d keys, want 1100", ahead, n)
		}
		s.Close()
	}
}
