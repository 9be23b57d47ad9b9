package parquet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tidemark/tidemark/internal/durable"
	"github.com/tidemark/tidemark/internal/flock"
	"github.com/tidemark/tidemark/state"
)

// The layout of an output directory (docs/connectors/parquet.md):
//
//	DIR/<partition>/part-<checkpoint>-<n>.parquet   published files
//	DIR/_tidemark/staging/<n>.parquet.inprogress   files not yet published
//	DIR/_tidemark/manifests/<checkpoint>.json       the files each checkpoint published
//	DIR/_tidemark/commit                            the last checkpoint published
//	DIR/_tidemark/LOCK                              held by the run writing DIR
//
// Readers that skip names starting with '_' or '.' (Spark, Hive, Trino,
// DuckDB's hive_partitioning) never see a staged file; a published file
// is complete (renamed into place after its footer was fsynced).
const (
	metaDir      = "_tidemark"
	stagingDir   = "_tidemark/staging"
	manifestDir  = "_tidemark/manifests"
	commitFile   = "_tidemark/commit"
	lockFile     = "_tidemark/LOCK"
	stagedSuffix = ".parquet.inprogress"
)

// LockFile is the lock file held by the run writing the output
// directory dir: dir/_tidemark/LOCK.
func LockFile(dir string) string { return filepath.Join(dir, filepath.FromSlash(lockFile)) }

// MetaDirs are the directories a sink makes in the output directory dir
// when it opens (besides LockFile's): the staging and the manifests
// directories under dir/_tidemark.
func MetaDirs(dir string) []string {
	return []string{filepath.Join(dir, filepath.FromSlash(stagingDir)), filepath.Join(dir, filepath.FromSlash(manifestDir))}
}

// DefaultRollBytes is the size at which a file is closed and the next
// one started (spec key roll_bytes): 128 MiB, Flink's FileSink default.
const DefaultRollBytes = 128 << 20

// Options are a Parquet sink's.
type Options struct {
	// Dir is the output directory, created if absent. Required.
	Dir string
	// PartitionBy lists the partition terms, outermost first (spec key
	// partition_by): results "day", "hour" or a group-key column; side
	// outputs "kind" or "day".
	PartitionBy []string
	// Compression is "zstd" (default), "snappy" or "none".
	Compression string
	// RowGroupRows is the rows per row group (0: DefaultRowGroupRows).
	RowGroupRows int64
	// RollBytes closes a file when it reaches this size (0:
	// DefaultRollBytes); files are also closed at every checkpoint.
	RollBytes int64
	// DecimalScale is the scale of decimal columns (nil:
	// DefaultDecimalScale).
	DecimalScale *int
	// ExactlyOnce stages files and publishes them when their checkpoint
	// completes (sink.Committer). Otherwise files are published when
	// rolled, at Flush when PublishOnFlush, and at Close.
	ExactlyOnce bool
	// PublishOnFlush publishes the open files at every Flush (an
	// at-least-once sink in a pipeline with checkpoints, flushed at each).
	PublishOnFlush bool
	// Restoring keeps what earlier runs published (a run resuming from a
	// checkpoint); otherwise the files earlier runs published are removed
	// at the run's first publication — a sink that is not ExactlyOnce at
	// its first publishing flush or at Close, an ExactlyOnce one (after
	// Recover(0)) at its first Prepare, before the checkpoint can complete
	// — so that a start refused before then (Abort) leaves them as they
	// were.
	Restoring bool
	// Pipeline and Sink name the output in its manifests.
	Pipeline, Sink string
	// LockHeld says the caller holds LockFile(Dir) for as long as the
	// sink is open (the engine takes its outputs' locks before it opens
	// any sink, engine/paths.go, so that a refused start can remove what
	// it created): the sink then takes no lock of its own. Otherwise the
	// sink takes it when it opens and releases it when it closes.
	LockHeld bool
	// Fault, for crash tests, is called at "parquet-renamed" (a
	// checkpoint's first file renamed into place, its manifest not yet
	// written) and "parquet-manifest" (its manifest written, the commit
	// marker not yet moved), with the checkpoint id. Optional.
	Fault func(point string, id int64)
}

// Manifest is a published checkpoint's record,
// DIR/_tidemark/manifests/<checkpoint>.json.
type Manifest struct {
	Pipeline   string         `json:"pipeline"`
	Sink       string         `json:"sink"`
	Checkpoint int64          `json:"checkpoint"`
	Files      []ManifestFile `json:"files"`
}

// ManifestFile is one published file: its path relative to DIR, rows and
// bytes.
type ManifestFile struct {
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// dir is the staging and publishing of one output directory.
type dir struct {
	o      Options
	schema *pq.Schema
	meta   map[string]string
	lock   *flock.Lock

	open   map[string]*staged // partition → its open file
	files  []*staged          // files since the last publication, in creation order
	next   int                // next staging file number
	seq    int64              // without ExactlyOnce: the next publication's number
	rows   []pq.Row
	notes  []string
	closed bool
	// fresh: the run starts over, and the files earlier runs published
	// are removed at its first publication (begin), not when it opens.
	fresh bool
}

// staged is one file written since the last publication.
type staged struct {
	part  string
	w     *FileWriter
	name  string // file name in the staging directory
	rows  int64
	bytes int64
}

func openDir(o Options, schema *pq.Schema, meta map[string]string) (*dir, error) {
	if o.Dir == "" {
		return nil, errors.New("parquet: no directory")
	}
	if o.RollBytes <= 0 {
		o.RollBytes = DefaultRollBytes
	}
	for _, sub := range MetaDirs(o.Dir) {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
		}
	}
	var lock *flock.Lock
	if !o.LockHeld {
		l, err := flock.Acquire(LockFile(o.Dir))
		if err != nil {
			return nil, fmt.Errorf("parquet %s: %w", o.Dir, err)
		}
		lock = l
	}
	d := &dir{o: o, schema: schema, meta: meta, lock: lock, open: map[string]*staged{}}
	if !o.ExactlyOnce {
		if err := d.clearStaging(); err != nil {
			d.lock.Release()
			return nil, err
		}
		if o.Restoring {
			m, err := d.marker()
			if err != nil {
				d.lock.Release()
				return nil, err
			}
			d.seq = m + 1
		} else {
			d.fresh = true
			d.seq = 1
		}
	}
	return d, nil
}

func (d *dir) path(rel string) string { return filepath.Join(d.o.Dir, filepath.FromSlash(rel)) }

// file returns the open file of partition part, starting one.
func (d *dir) file(part string) (*staged, error) {
	if s := d.open[part]; s != nil {
		return s, nil
	}
	name := strconv.Itoa(d.next) + stagedSuffix
	d.next++
	w, err := CreateFile(d.path(stagingDir+"/"+name), FileOptions{Schema: d.schema, RowGroupRows: d.o.RowGroupRows, Metadata: d.meta})
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	s := &staged{part: part, w: w, name: name}
	d.open[part] = s
	d.files = append(d.files, s)
	return s, nil
}

// write appends rows to partition part's file, rolling it by size.
func (d *dir) write(part string, rows []pq.Row) error {
	if d.closed {
		return fmt.Errorf("parquet %s: %w", d.o.Dir, fs.ErrClosed)
	}
	s, err := d.file(part)
	if err != nil {
		return err
	}
	if err := s.w.WriteRows(rows); err != nil {
		return err
	}
	if s.w.Size() >= d.o.RollBytes {
		if err := d.closeFile(s); err != nil {
			return err
		}
		if !d.o.ExactlyOnce {
			return d.publishNow()
		}
	}
	return nil
}

func (d *dir) closeFile(s *staged) error {
	if s.w == nil {
		return nil
	}
	n, err := s.w.Close()
	s.rows, s.bytes, s.w = s.w.Rows(), n, nil
	delete(d.open, s.part)
	return err
}

// stage closes every open file and returns the files since the last
// publication with their published names (publication number id), in a
// deterministic order: by partition, then creation.
func (d *dir) stage(id int64) ([]pendingFile, error) {
	for _, s := range d.files {
		if err := d.closeFile(s); err != nil {
			return nil, err
		}
	}
	if err := durable.SyncDir(d.path(stagingDir)); err != nil {
		return nil, fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	files := slices.Clone(d.files)
	slices.SortStableFunc(files, func(a, b *staged) int { return strings.Compare(a.part, b.part) })
	out := make([]pendingFile, 0, len(files))
	n := map[string]int{}
	for _, s := range files {
		if s.rows == 0 {
			os.Remove(d.path(stagingDir + "/" + s.name))
			continue
		}
		rel := fmt.Sprintf("part-%08d-%05d.parquet", id, n[s.part])
		n[s.part]++
		if s.part != "" {
			rel = s.part + "/" + rel
		}
		out = append(out, pendingFile{staged: s.name, path: rel, rows: s.rows, bytes: s.bytes})
	}
	d.files = d.files[:0]
	return out, nil
}

// pendingFile is a closed file waiting for its checkpoint.
type pendingFile struct {
	staged, path string
	rows, bytes  int64
}

func encodePending(files []pendingFile) []byte {
	var e state.Encoder
	e.Byte(1)
	e.Uint(uint64(len(files)))
	for _, f := range files {
		e.String(f.staged)
		e.String(f.path)
		e.Int(f.rows)
		e.Int(f.bytes)
	}
	return e.Bytes()
}

// decodePending reads what prepare returned. Errors name the sink's
// directory and what does not parse; a path that would leave DIR is
// refused.
func decodePending(dirName string, b []byte) ([]pendingFile, error) {
	d := state.NewDecoder(b)
	d.Section("parquet sink", 1)
	n := d.Len(1<<24, 4)
	var out []pendingFile
	for i := 0; i < n && d.Err() == nil; i++ {
		f := pendingFile{staged: d.String(), path: d.String(), rows: d.Int(), bytes: d.Int()}
		if d.Err() == nil && (!localPath(f.path) || !localPath(f.staged) || strings.Contains(f.staged, "/") || f.rows < 0 || f.bytes < 0) {
			d.Fail("file %d: %q ← %q, %d rows, %d bytes", i, f.path, f.staged, f.rows, f.bytes)
		}
		out = append(out, f)
	}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail("%d bytes after the last file", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("parquet %s: prepared state: %w", dirName, err)
	}
	return out, nil
}

// localPath reports whether p is a relative path that stays inside its
// directory.
func localPath(p string) bool { return p != "" && filepath.IsLocal(filepath.FromSlash(p)) }

// marker returns the last publication recorded in DIR/_tidemark/commit (0
// when none).
func (d *dir) marker() (int64, error) {
	b, err := os.ReadFile(d.path(commitFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("parquet %s: commit marker %s: %q is not a checkpoint id", d.o.Dir, d.path(commitFile), b)
	}
	return id, nil
}

func (d *dir) writeMarker(id int64) error {
	if err := WriteAtomic(d.path(commitFile), []byte(strconv.FormatInt(id, 10)+"\n")); err != nil {
		return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	return nil
}

func (d *dir) fault(point string, id int64) {
	if d.o.Fault != nil {
		d.o.Fault(point, id)
	}
}

// publish renames checkpoint id's files into place, writes its manifest,
// and moves the marker to id. Each step can be repeated after a crash: a
// file already renamed (its staged name gone, its published name there
// with its size) is left as it is.
func (d *dir) publish(id int64, files []pendingFile) error {
	fail := func(err error) error { return fmt.Errorf("parquet %s: publishing checkpoint %d: %w", d.o.Dir, id, err) }
	dirs := map[string]bool{}
	for i, f := range files {
		to := d.path(f.path)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return fail(err)
		}
		err := os.Rename(d.path(stagingDir+"/"+f.staged), to)
		if errors.Is(err, os.ErrNotExist) {
			st, serr := os.Stat(to)
			if serr != nil || st.Size() != f.bytes {
				return fail(fmt.Errorf("%s: the staged file %s is gone and the published file is %s: the output directory was changed behind tidemark's back; recompute from the start with an empty checkpoint directory", f.path, f.staged, describe(st, serr)))
			}
			err = nil
		}
		if err != nil {
			return fail(err)
		}
		dirs[filepath.Dir(to)] = true
		if i == 0 {
			d.fault("parquet-renamed", id)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(dirs)) {
		if err := durable.SyncDir(p); err != nil {
			return fail(err)
		}
	}
	if len(files) > 0 {
		m := Manifest{Pipeline: d.o.Pipeline, Sink: d.o.Sink, Checkpoint: id}
		for _, f := range files {
			m.Files = append(m.Files, ManifestFile{Path: f.path, Rows: f.rows, Bytes: f.bytes})
		}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return fail(err)
		}
		if err := WriteAtomic(d.path(fmt.Sprintf("%s/%d.json", manifestDir, id)), append(b, '\n')); err != nil {
			return fail(err)
		}
	}
	d.fault("parquet-manifest", id)
	return d.writeMarker(id)
}

func describe(st os.FileInfo, err error) string {
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d bytes", st.Size())
}

// manifests lists the checkpoint ids that have a manifest, ascending.
func (d *dir) manifests() ([]int64, error) {
	ents, err := os.ReadDir(d.path(manifestDir))
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	var ids []int64
	for _, e := range ents {
		s, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if id, err := strconv.ParseInt(s, 10, 64); err == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// ReadManifest reads a manifest file. Errors name the file; a file path
// that would leave the directory is refused.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(path, b)
}

// ParseManifest parses the manifest text b read from path.
func ParseManifest(path string, b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("parquet manifest %s: %w", path, err)
	}
	for i, f := range m.Files {
		if !localPath(f.Path) || f.Rows < 0 || f.Bytes < 0 {
			return nil, fmt.Errorf("parquet manifest %s: files[%d]: %q, %d rows, %d bytes: not a file of the directory", path, i, f.Path, f.Rows, f.Bytes)
		}
	}
	return &m, nil
}

// unpublishAfter removes the files and manifests of the publications
// after id (all of them for 0), and moves the marker to id. They are
// tidemark's own output: a fresh run recomputes them, a fallback to an
// older checkpoint produces them again.
func (d *dir) unpublishAfter(id int64) error {
	ids, err := d.manifests()
	if err != nil {
		return err
	}
	removed := 0
	for _, mid := range slices.Backward(ids) {
		if mid <= id {
			break
		}
		mp := d.path(fmt.Sprintf("%s/%d.json", manifestDir, mid))
		m, err := ReadManifest(mp)
		if err != nil {
			return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
		}
		for _, f := range m.Files {
			if err := os.Remove(d.path(f.Path)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
			}
			removed++
		}
		if err := os.Remove(mp); err != nil {
			return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
		}
	}
	if removed > 0 {
		what := "files an earlier run published"
		if id > 0 {
			what = fmt.Sprintf("files published after checkpoint %d (the run resumes from it and writes them again)", id)
		}
		d.notes = append(d.notes, fmt.Sprintf("removed %d %s from %s", removed, what, d.o.Dir))
	}
	if err := durable.SyncDir(d.path(manifestDir)); err != nil {
		return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	m, err := d.marker()
	if err != nil {
		return err
	}
	if m != id {
		if id == 0 {
			if err := os.Remove(d.path(commitFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
			}
			return nil
		}
		return d.writeMarker(id)
	}
	return nil
}

// clearStaging removes every staged file (the open ones are dropped).
func (d *dir) clearStaging() error {
	for _, s := range d.files {
		if s.w != nil {
			s.w.Abort()
			s.w = nil
		}
	}
	d.files, d.open = d.files[:0], map[string]*staged{}
	ents, err := os.ReadDir(d.path(stagingDir))
	if err != nil {
		return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
	}
	for _, e := range ents {
		if err := os.Remove(d.path(stagingDir + "/" + e.Name())); err != nil {
			return fmt.Errorf("parquet %s: %w", d.o.Dir, err)
		}
	}
	d.next = 0
	return nil
}

// begin removes, once, the files earlier runs published when the run
// starts over (fresh): at its first publication, so that a run refused
// before it (aborted) changes nothing it found.
func (d *dir) begin() error {
	if !d.fresh {
		return nil
	}
	if err := d.unpublishAfter(0); err != nil {
		return err
	}
	d.fresh = false
	return nil
}

// publishNow publishes the closed files at once (not ExactlyOnce).
func (d *dir) publishNow() error {
	if err := d.begin(); err != nil {
		return err
	}
	var closed []*staged
	for _, s := range d.files {
		if s.w == nil {
			closed = append(closed, s)
		}
	}
	if len(closed) == 0 {
		return nil
	}
	keep := d.files[:0]
	for _, s := range d.files {
		if s.w != nil {
			keep = append(keep, s)
		}
	}
	open := slices.Clone(keep)
	d.files = closed
	files, err := d.stage(d.seq)
	d.files = open
	if err != nil {
		return err
	}
	if err := d.publish(d.seq, files); err != nil {
		return err
	}
	d.seq++
	return nil
}

// The sink.Committer half, shared by Results and Records.

func (d *dir) prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := d.check(ctx); err != nil {
		return nil, err
	}
	if !d.o.ExactlyOnce {
		return nil, fmt.Errorf("parquet %s: not opened for exactly-once delivery", d.o.Dir)
	}
	// A run from the start removes the earlier publications before its
	// first checkpoint can complete: a restore from that checkpoint then
	// finds the marker at 0 and publishes the checkpoint's own files.
	if err := d.begin(); err != nil {
		return nil, err
	}
	files, err := d.stage(id)
	if err != nil {
		return nil, err
	}
	return encodePending(files), nil
}

func (d *dir) commit(ctx context.Context, id int64, prepared []byte) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	files, err := decodePending(d.o.Dir, prepared)
	if err != nil {
		return err
	}
	m, err := d.marker()
	if err != nil {
		return err
	}
	if m >= id {
		return nil
	}
	return d.publish(id, files)
}

func (d *dir) recover(ctx context.Context, id int64, prepared []byte) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	if id == 0 {
		if err := d.clearStaging(); err != nil {
			return err
		}
		d.fresh = true // the earlier publications go at the first Prepare
		return nil
	}
	files, err := decodePending(d.o.Dir, prepared)
	if err != nil {
		return err
	}
	m, err := d.marker()
	if err != nil {
		return err
	}
	if m < id {
		if err := d.publish(id, files); err != nil {
			return err
		}
	} else if err := d.unpublishAfter(id); err != nil {
		return err
	}
	return d.clearStaging()
}

func (d *dir) check(ctx context.Context) error {
	if d.closed {
		return fmt.Errorf("parquet %s: %w", d.o.Dir, fs.ErrClosed)
	}
	return ctx.Err()
}

func (d *dir) flush(ctx context.Context) error {
	if d.closed || d.o.ExactlyOnce || !d.o.PublishOnFlush {
		return nil
	}
	for _, s := range d.files {
		if err := d.closeFile(s); err != nil {
			return err
		}
	}
	return d.publishNow()
}

// close publishes what is open (not ExactlyOnce; exactly-once output
// stays staged until a checkpoint covers it) and releases the lock.
func (d *dir) close() error {
	if d.closed {
		return nil
	}
	var err error
	if !d.o.ExactlyOnce {
		for _, s := range d.files {
			if cerr := d.closeFile(s); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = d.publishNow()
		}
	} else {
		for _, s := range d.files {
			if s.w != nil {
				if _, cerr := s.w.Close(); err == nil {
					err = cerr
				}
				s.w = nil
			}
		}
	}
	d.closed = true
	if lerr := d.lock.Release(); err == nil {
		err = lerr
	}
	return err
}

// abort drops the open files without publishing anything.
func (d *dir) abort() error {
	if d.closed {
		return nil
	}
	for _, s := range d.files {
		if s.w != nil {
			s.w.Abort()
			s.w = nil
		}
	}
	d.closed = true
	return d.lock.Release()
}
