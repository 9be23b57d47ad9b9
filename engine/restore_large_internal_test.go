package engine

import (
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/state"
	"github.com/tidemark/tidemark/state/disk"
)

var restoreGiB = flag.Float64("restore-gib", 0, "TestDiskRestoreLarge: build this many GiB of disk state and time its local restore (0: skip)")

// TestDiskRestoreLarge (with -restore-gib N): a task's store of N GiB
// (generated keys over 128 key groups, 4,000-byte incompressible
// values), snapshotted and uploaded into a checkpoint directory on the
// same file system as a checkpoint does (each new table synced, then
// linked; the MANIFEST and OPTIONS in a segment), the store closed; then
// the local restart's restore of it timed — each table's presence and
// size checked (tablesPresent), the store made again by hard links and
// opened (restoreShard) — and the restored store read: a key of each key
// group gives its value. Logs the restore's time, tables and bytes linked
// and copied (docs/state.md, "Figures").
func TestDiskRestoreLarge(t *testing.T) {
	if *restoreGiB <= 0 {
		t.Skip("-restore-gib N builds N GiB of disk state and times its local restore")
	}
	base := t.TempDir()
	ds := &diskState{dir: filepath.Join(base, "state"), budget: disk.Split(1<<30, 1)}
	if err := os.MkdirAll(ds.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ds.cache = pebble.NewCache(ds.budget.Cache)
	defer ds.cache.Unref()
	const groups, valueLen, perBatch = 128, 4000, 256
	n := int64(*restoreGiB * (1 << 30) / valueLen)
	sh, err := ds.openShard(0, groups)
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(i int64) []byte {
		kg := int(i * groups / n)
		return binary.BigEndian.AppendUint64(state.KeyPrefix(nil, kg, 1), uint64(i))
	}
	valueOf := func(i int64, v []byte) []byte {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for k := 0; k+8 <= len(v); k += 8 {
			binary.LittleEndian.PutUint64(v[k:], r.Uint64())
		}
		return v
	}
	t0 := time.Now()
	b := sh.st.NewBatch()
	v := make([]byte, valueLen)
	for i := range n {
		b.Set(keyOf(i), valueOf(i, v))
		if b.Count() == perBatch || i == n-1 {
			if err := sh.st.Commit(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap, err := sh.st.Snapshot(filepath.Join(ds.dir, "snap-1-"+sh.id))
	if err != nil {
		t.Fatal(err)
	}
	build := time.Since(t0)
	fs := checkpoint.DirStore{Dir: filepath.Join(base, "checkpoints")}
	ref := storeRef{lo: 0, hi: groups}
	var seg []byte
	var bytes int64
	for _, f := range snap.Files {
		path := filepath.Join(snap.Dir, f.Name)
		if !f.Table {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ref.metas = append(ref.metas, metaRef{name: f.Name, off: int64(len(seg)), n: int64(len(data)), hash: xxhash.Sum64(data)})
			seg = append(seg, data...)
			continue
		}
		if err := sh.st.SyncFile(path); err != nil {
			t.Fatal(err)
		}
		obj := checkpoint.TablePrefix + sh.id + "-" + f.Name
		size, hash, err := fs.PutFile(obj, path)
		if err != nil {
			t.Fatal(err)
		}
		bytes += size
		ref.tables = append(ref.tables, tableRef{obj: obj, name: f.Name, size: size, hash: hash, first: f.FirstGroup, last: f.LastGroup})
	}
	upload := time.Since(t0) - build
	if err := sh.st.Close(); err != nil { // the stop
		t.Fatal(err)
	}
	os.RemoveAll(sh.st.Dir())
	os.RemoveAll(snap.Dir)

	start := time.Now()
	for _, tr := range ref.tables { // tablesPresent
		size, err := fs.StatFile(tr.obj)
		if err != nil || size != tr.size {
			t.Fatalf("table %s: %d bytes, %v; recorded %d", tr.obj, size, err, tr.size)
		}
	}
	r, err := ds.restoreShard(fs, ref, 0, groups, func(off, n int64) ([]byte, error) { return seg[off : off+n], nil })
	if err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	defer r.st.Close()
	for kg := range groups {
		i := (int64(kg)*n + groups - 1) / groups // the first key of key group kg
		want := valueOf(i, make([]byte, valueLen))
		got := 0
		if err := r.st.Lookup([][]byte{keyOf(i)}, func(_ int, val []byte) {
			if string(val) == string(want) {
				got++
			}
		}); err != nil {
			t.Fatal(err)
		}
		if got != 1 {
			t.Fatalf("key group %d: key %d not restored with its value", kg, i)
		}
	}
	x := ds.restore
	t.Logf("%d keys, %.2f GiB of tables (%d), built in %.1f s, uploaded in %.1f s; restore ready in %.3f s: %d tables of %.2f GiB linked, %d bytes copied",
		n, float64(bytes)/(1<<30), len(ref.tables), build.Seconds(), upload.Seconds(), ready.Seconds(), x.Tables, float64(x.TableBytes)/(1<<30), x.CopiedBytes)
	if x.Tables != len(ref.tables) || x.CopiedBytes != 0 {
		t.Fatalf("restore took %d tables, copied %d bytes; want all %d linked", x.Tables, x.CopiedBytes, len(ref.tables))
	}
}
