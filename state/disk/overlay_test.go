package disk

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/tidemark/tidemark/state"
)

// spanContents returns the keys of key groups [from, to) as "kg/i=value",
// read by a Scan over their span (the way an operator reads a key group).
func spanContents(t *testing.T, s *Store, from, to int) []string {
	t.Helper()
	lo, hi := state.GroupSpan(from, to)
	var out []string
	if err := s.Scan(lo, hi, func(k, v []byte) bool {
		kg, _ := state.KeyGroupOf(k)
		out = append(out, fmt.Sprintf("%d/%d=%s", kg, binary.BigEndian.Uint32(k[state.PrefixLen:]), v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// lookupAll looks up keys (sorted) and returns "i=value" for those found.
func lookupAll(t *testing.T, s *Store, keys ...[]byte) []string {
	t.Helper()
	var out []string
	if err := s.Lookup(keys, func(i int, v []byte) { out = append(out, fmt.Sprintf("%d=%s", i, v)) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSnapshotOverlayShadows: during a snapshot held back, the overlay's
// range deletes and deletes hide the frozen store's keys from scans of key
// group spans and from lookups, a set after a range delete over it shows
// again, and a whole key group dropped by a range delete (a TTL's expiry)
// reads empty; a commit made in a Scan's callback while the snapshot ends
// is kept (the overlay is applied after the scan, once). The snapshot
// holds the store at its start; after it, the store and a second
// snapshot hold what the overlay said, on top of a flush. Every expected
// list is worked out by hand from the writes.
func TestSnapshotOverlayShadows(t *testing.T) {
	mem := vfs.NewMem()
	g := &gate{}
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, errorfs.InjectorFunc(g.inject))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	for i := range 6 {
		b.Set(key(1, i), []byte("old"))
	}
	b.Set(key(2, 0), []byte("old"))
	b.Set(key(2, 1), []byte("old"))
	b.Set(key(3, 0), []byte("old"))
	b.Set(key(3, 5), []byte("old"))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil { // the frozen keys on disk, not in a memtable
		t.Fatal(err)
	}
	b.Set(key(5, 0), []byte("mem")) // one in the memtable: the snapshot's flush writes a table (held back)
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	g.shut()
	p, _, err := s.StartSnapshot("snap")
	if err != nil {
		t.Fatal(err)
	}
	b.DeleteRange(key(1, 1), key(1, 5)) // 1/1..1/4
	b.Set(key(1, 3), []byte("back"))    // after the range delete: shown
	b.Delete(key(2, 0))
	lo, hi := state.GroupSpan(3, 4)
	b.DeleteRange(lo, hi) // key group 3 expired whole
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	b.Set(key(3, 7), []byte("new")) // a later commit into the dropped group
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if got, want := spanContents(t, s, 1, 2), []string{"1/0=old", "1/3=back", "1/5=old"}; !slices.Equal(got, want) {
			t.Fatalf("%s: key group 1 %v, want %v", when, got, want)
		}
		if got, want := spanContents(t, s, 2, 3), []string{"2/1=old"}; !slices.Equal(got, want) {
			t.Fatalf("%s: key group 2 %v, want %v", when, got, want)
		}
		if got, want := spanContents(t, s, 3, 4), []string{"3/7=new"}; !slices.Equal(got, want) {
			t.Fatalf("%s: key group 3 %v, want %v", when, got, want)
		}
		got := lookupAll(t, s, key(1, 1), key(1, 3), key(1, 4), key(1, 5), key(2, 0), key(2, 1), key(3, 0), key(3, 5), key(3, 7))
		if want := []string{"1=back", "3=old", "5=old", "8=new"}; !slices.Equal(got, want) {
			t.Fatalf("%s: lookup %v, want %v", when, got, want)
		}
	}
	check("during the snapshot")
	if done(p) {
		t.Fatal("the snapshot ended while its flush was held back")
	}
	// A scan whose callback lets the snapshot end and commits meanwhile:
	// the overlay stays under the open iterator; the commit is kept.
	n := 0
	if err := s.Scan(lo, hi, func(k, v []byte) bool {
		n++
		g.release()
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		b.Set(key(4, 1), []byte("in-scan"))
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 || s.snap == nil {
		t.Fatalf("%d keys scanned, frozen %t: want 1 and the overlay kept while the scan was open", n, s.snap != nil)
	}
	if got, want := spanContents(t, s, 4, 5), []string{"4/1=in-scan"}; !slices.Equal(got, want) {
		t.Fatalf("after the scan: key group 4 %v, want %v", got, want)
	}
	if s.snap != nil {
		t.Fatal("still frozen after a scan once the snapshot ended")
	}
	check("after the overlay was applied")
	snap, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, openMem(t, mem, snap.Dir)), []string{"1/0=old", "1/1=old", "1/2=old", "1/3=old", "1/4=old", "1/5=old", "2/0=old", "2/1=old", "3/0=old", "3/5=old", "5/0=mem"}; !slices.Equal(got, want) {
		t.Fatalf("the snapshot holds %v, want the store at its start %v", got, want)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	check("after a flush")
	snap2, err := s.Snapshot("snap2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, openMem(t, mem, snap2.Dir)), []string{"1/0=old", "1/3=back", "1/5=old", "2/1=old", "3/7=new", "4/1=in-scan", "5/0=mem"}; !slices.Equal(got, want) {
		t.Fatalf("the second snapshot holds %v, want %v", got, want)
	}
}

// TestSnapshotBehindSnapshot: a StartSnapshot while the one before is
// still held back waits for it, applies its overlay, and snapshots the
// store with it: the first snapshot holds the state at its start, the
// second the overlay's writes too (none lost, none applied twice: a
// counter's increments read back exactly).
func TestSnapshotBehindSnapshot(t *testing.T) {
	mem := vfs.NewMem()
	g := &gate{}
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, errorfs.InjectorFunc(g.inject))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	// incr reads key(1, 0)'s count and writes it plus one: applied twice,
	// or lost, the count is off.
	incr := func() {
		t.Helper()
		var c byte
		if err := s.Lookup([][]byte{key(1, 0)}, func(_ int, v []byte) { c = v[0] }); err != nil {
			t.Fatal(err)
		}
		b.Set(key(1, 0), []byte{c + 1})
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	incr()
	g.shut()
	p1, _, err := s.StartSnapshot("snap1")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		incr()
	}
	ret := make(chan error, 1)
	var p2 *Pending
	go func() {
		var err error
		p2, _, err = s.StartSnapshot("snap2")
		ret <- err
	}()
	select {
	case err := <-ret:
		t.Fatalf("the second StartSnapshot returned (%v) while the first was held back", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release()
	if err := <-ret; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		incr()
	}
	count := func(s *Store) int {
		var c int
		if err := s.Lookup([][]byte{key(1, 0)}, func(_ int, v []byte) { c = int(v[0]) }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	snap1, err := p1.Wait()
	if err != nil {
		t.Fatal(err)
	}
	snap2, err := p2.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := count(openMem(t, mem, snap1.Dir)), count(openMem(t, mem, snap2.Dir)), count(s); a != 1 || b != 6 || c != 9 {
		t.Fatalf("counts %d (first snapshot), %d (second), %d (store); want 1, 6, 9", a, b, c)
	}
}

// TestSnapshotFailsInBackground: a fault in a snapshot's background part
// (ENOSPC creating the MANIFEST's copy in the snapshot's directory)
// comes back from Pending.Wait naming the store and the snapshot's
// directory, and from every later operation of the store — the overlay's
// writes are lost, so nothing may read the store as if they were there.
func TestSnapshotFailsInBackground(t *testing.T) {
	mem := vfs.NewMem()
	var on atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && op.Kind == errorfs.OpCreate && strings.HasPrefix(op.Path, "snap/MANIFEST") {
			return syscall.ENOSPC
		}
		return nil
	})
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, inj)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	b.Set(key(1, 0), []byte("old"))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	p, _, err := s.StartSnapshot("snap")
	if err != nil {
		t.Fatal(err)
	}
	b.Set(key(1, 1), []byte("overlay"))
	if err := s.Commit(b); err != nil && !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("commit during the snapshot: %v", err)
	}
	_, werr := p.Wait()
	if werr == nil || !strings.HasPrefix(werr.Error(), "state store st: snapshot: checkpoint into snap: ") || !strings.Contains(werr.Error(), "no space left on device") {
		t.Fatalf("Wait: %v; want the store, the snapshot's directory and ENOSPC", werr)
	}
	on.Store(false)
	b.Set(key(1, 2), []byte("after"))
	for name, op := range map[string]func() error{
		"commit": func() error { return s.Commit(b) },
		"lookup": func() error { return s.Lookup([][]byte{key(1, 0)}, func(int, []byte) {}) },
		"scan":   func() error { return s.Scan(nil, []byte{0xff}, func(_, _ []byte) bool { return true }) },
		"flush":  s.Flush,
		"snapshot": func() error {
			_, _, err := s.StartSnapshot("snap-again")
			return err
		},
	} {
		if err := op(); err == nil || err.Error() != werr.Error() {
			t.Errorf("%s after the failed snapshot: %v; want %v", name, err, werr)
		}
	}
}
