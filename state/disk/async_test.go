package disk

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// gate blocks the creation of every table file while closed: a snapshot's
// flush started in the background waits there until the test opens it.
type gate struct {
	mu     sync.Mutex
	closed bool
	open   chan struct{}
}

func (g *gate) shut() {
	g.mu.Lock()
	g.closed, g.open = true, make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) release() {
	g.mu.Lock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
	g.mu.Unlock()
}

func (g *gate) inject(op errorfs.Op) error {
	if op.Kind != errorfs.OpCreate || !strings.HasSuffix(op.Path, ".sst") {
		return nil
	}
	g.mu.Lock()
	closed, ch := g.closed, g.open
	g.mu.Unlock()
	if closed {
		<-ch
	}
	return nil
}

func done(p *Pending) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// TestSnapshotInBackground: StartSnapshot returns while its flush is held
// back; the commits made meanwhile — sets, a delete, a range delete — are
// read back by Lookup and Scan but are not in the snapshot, which holds
// the store exactly as it was at the start; once the snapshot ended, the
// next commit puts them in the store. Mutation caught: the commits of the
// snapshot's time written straight to the database (a flush ahead puts
// them in the snapshot).
func TestSnapshotInBackground(t *testing.T) {
	mem := vfs.NewMem()
	g := &gate{}
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, errorfs.InjectorFunc(g.inject)), FlushAhead: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	for i := range 4 {
		b.Set(key(1, i), []byte("old"))
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	g.shut()
	p, _, err := s.StartSnapshot("snap")
	if err != nil {
		t.Fatal(err)
	}
	b.Set(key(1, 0), []byte("new"))
	b.Delete(key(1, 1))
	b.Set(key(1, 9), []byte("new"))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	b.DeleteRange(key(1, 2), key(1, 4))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	var found []string
	if err := s.Lookup([][]byte{key(1, 0), key(1, 1), key(1, 2), key(1, 9)}, func(i int, v []byte) {
		found = append(found, string(rune('0'+i))+"="+string(v))
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"1/0=new", "1/9=new"}
	if got := contents(t, s); !slices.Equal(got, want) || !slices.Equal(found, []string{"0=new", "3=new"}) {
		t.Fatalf("during the snapshot: scan %v, lookup %v; want %v and [0=new 3=new]", got, found, want)
	}
	if done(p) {
		t.Fatal("the snapshot ended while its flush was held back")
	}
	g.release()
	snap, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r := openMem(t, mem, snap.Dir)
	if got, want := contents(t, r), []string{"1/0=old", "1/1=old", "1/2=old", "1/3=old"}; !slices.Equal(got, want) {
		t.Fatalf("the snapshot holds %v, want the store at its start %v", got, want)
	}
	b.Set(key(2, 0), []byte("after"))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if s.snap != nil {
		t.Fatal("the store is still frozen after the snapshot ended and a commit")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, s), []string{"1/0=new", "1/9=new", "2/0=after"}; !slices.Equal(got, want) {
		t.Fatalf("after the snapshot: %v, want %v", got, want)
	}
	// Only the database (no overlay) now: a second snapshot holds it all.
	snap2, err := s.Snapshot("snap2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, openMem(t, mem, snap2.Dir)), []string{"1/0=new", "1/9=new", "2/0=after"}; !slices.Equal(got, want) {
		t.Fatalf("the second snapshot holds %v, want %v", got, want)
	}
}

// TestSnapshotOverlayFull: a commit that takes the overlay past half a
// memtable waits for the snapshot in progress, and the next StartSnapshot
// returns that wait (mutation caught: the wait not counted).
func TestSnapshotOverlayFull(t *testing.T) {
	mem := vfs.NewMem()
	g := &gate{}
	s, err := Open(Options{Dir: "st", FS: errorfs.Wrap(mem, errorfs.InjectorFunc(g.inject)), MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	b.Set(key(1, 0), []byte("x"))
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	g.shut()
	p, _, err := s.StartSnapshot("snap")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		b.Set(key(1, i+1), make([]byte, 1000)) // 100 KB: below half a memtable
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		b.Set(key(2, i), make([]byte, 1000)) // 600 KB in all: past it
	}
	ret := make(chan error)
	go func() { ret <- s.Commit(b) }()
	select {
	case err := <-ret:
		t.Fatalf("the commit past half a memtable returned (%v) while the snapshot was held back", err)
	case <-time.After(300 * time.Millisecond):
	}
	g.release()
	if err := <-ret; err != nil {
		t.Fatal(err)
	}
	if !done(p) || s.snap != nil {
		t.Fatal("the commit returned before the snapshot ended and the store thawed")
	}
	_, waited, err := s.StartSnapshot("snap2")
	if err != nil {
		t.Fatal(err)
	}
	// The commit waited from its start (within the 300 ms, once its 500
	// KB are in the overlay) to the release: at least a good part of it.
	if waited < 50*time.Millisecond {
		t.Fatalf("StartSnapshot reports %v waited, want most of the 300 ms the commit waited", waited)
	}
	if n := len(contents(t, s)); n != 601 {
		t.Fatalf("%d keys, want 601", n)
	}
}
