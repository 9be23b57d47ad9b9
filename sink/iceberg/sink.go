package iceberg

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/internal/durable"
	"github.com/tidemark/tidemark/internal/flock"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/parquet"
	"github.com/tidemark/tidemark/state"
)

var (
	_ sink.Results   = (*Results)(nil)
	_ sink.Committer = (*Results)(nil)
	_ sink.Aborter   = (*Results)(nil)
	_ sink.Noter     = (*Results)(nil)
)

// Options are an Iceberg sink's.
type Options struct {
	// Warehouse is the directory holding the table, at
	// WAREHOUSE/<Namespace>/<Table>. Required.
	Warehouse string
	// Namespace and Table name the table (Namespace default "default").
	Namespace, Table string
	// Catalog is "hadoop" (default), "sql" or "rest"; CatalogURI a sql
	// catalog's database (a postgres:// URL or a SQLite file) or a REST
	// catalog's base URL; CatalogName a sql catalog's catalog_name
	// (default "tidemark"); CatalogToken a REST catalog's bearer token.
	Catalog, CatalogURI, CatalogName, CatalogToken string
	// PartitionBy, Compression, RowGroupRows, RollBytes and DecimalScale
	// are as parquet.Options's (partition terms: "day", "hour" — Iceberg's
	// transforms of window_start, in UTC — or a group-key column).
	PartitionBy  []string
	Compression  string
	RowGroupRows int64
	RollBytes    int64
	DecimalScale *int
	// ExactlyOnce commits one snapshot per checkpoint with the
	// checkpoint (sink.Committer). Otherwise a snapshot is committed at
	// Close, and at every Flush with PublishOnFlush.
	ExactlyOnce    bool
	PublishOnFlush bool
	// Restoring keeps what earlier runs committed; otherwise the first
	// commit of a run from the start replaces the rows of a table
	// tidemark created for this pipeline and sink (a snapshot of
	// operation overwrite: the earlier snapshots stay for time travel).
	Restoring bool
	// Pipeline and Sink name the writer in the table's properties and
	// snapshot summaries.
	Pipeline, Sink string
	// LockHeld says the caller holds LockFile(TableDir(…)) for as long as
	// the sink is open (the engine takes its outputs' locks before it
	// opens any sink, engine/paths.go): the sink then takes no lock of
	// its own. Otherwise it takes the lock when it opens.
	LockHeld bool
	// Fault, for crash tests, is called with the checkpoint id at
	// "iceberg-files" (data and delete files written, the checkpoint not
	// yet), "iceberg-manifest" (manifests and manifest list written),
	// "iceberg-metadata" (the new metadata file written, not yet swapped
	// into the catalog) and "iceberg-committed" (the catalog swapped).
	Fault func(point string, id int64)
	// Now is the wall clock of snapshot and metadata timestamps (default
	// time.Now).
	Now func() time.Time
}

// Table properties tidemark sets on the tables it creates.
const (
	PropPipeline = "tidemark.pipeline"
	PropSink     = "tidemark.sink"
)

// Results writes a stage's result rows into an Iceberg table (format v2):
// final rows are appended; in update and retract modes each new version
// of a (window_start, keys) row is written beside an equality delete on
// those columns, in the same snapshot, so a reader of the table sees each
// window's latest version (docs/connectors/iceberg.md).
type Results struct {
	o        Options
	name     string // namespace.table
	dir      string // the table's directory
	cat      catalog
	lock     *flock.Lock
	layout   *parquet.Layout
	codec    compress.Codec
	schema   *Schema
	spec     *PartitionSpec
	terms    []partTerm
	identity []int   // layout columns of a row's identity
	eqIDs    []int32 // their field ids
	upsert   bool    // update or retract: rows collapse by identity
	data     *pq.Schema
	deletes  *pq.Schema

	job   string
	fresh bool // the next commit replaces a table tidemark created
	owned bool // the table was created by tidemark for this pipeline and sink

	writers map[string]*fileOut // open data files by partition
	files   []DataFile          // closed since the last prepare
	fileNo  int
	ckNext  int64 // the checkpoint the files being written belong to (names)

	// update/retract: the rows since the last prepare, by identity.
	pend   map[string]int
	rows   []pendRow
	keyBuf state.Encoder

	vals  []pq.Value
	dec   []byte
	del   []pq.Value
	pbuf  []byte
	seq   int64 // without ExactlyOnce: the next commit's number
	notes []string

	closed bool
}

type fileOut struct {
	w         *parquet.FileWriter
	partition []any
	rel       string
	content   int
}

// pendRow is the latest row of an identity since the last checkpoint.
type pendRow struct {
	row    changelog.Row
	live   bool // a row to write (false: the identity was deleted)
	delete bool // an equality delete is written (the identity may have rows committed before)
}

// TableDir is the directory of table ns.table in warehouse (namespace
// "" is "default"): WAREHOUSE/<ns>/<table>, where the sink writes the
// table's data and (hadoop catalog) metadata.
func TableDir(warehouse, ns, table string) string {
	if ns == "" {
		ns = "default"
	}
	return filepath.Join(warehouse, ns, table)
}

// LockFile is the lock file held by the run writing the table in
// directory dir (TableDir's): dir/.tidemark.lock.
func LockFile(dir string) string { return filepath.Join(dir, ".tidemark.lock") }

// DataDir is the directory of the data and delete files of the table in
// dir, made when the sink opens: dir/data.
func DataDir(dir string) string { return filepath.Join(dir, "data") }

// NewResults opens a table for rows of d: it reads the table (if it
// exists) from its catalog, checks the schema under the data contract's
// rules and adds the new columns (SchemaError names a column it cannot
// take), and locks the table's directory. The table is created at the
// first commit. Errors also: a bad option, the catalog's.
func NewResults(ctx context.Context, d changelog.Desc, o Options) (*Results, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.CatalogName == "" {
		o.CatalogName = "tidemark"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RollBytes <= 0 {
		o.RollBytes = parquet.DefaultRollBytes
	}
	r := &Results{o: o, name: o.Namespace + "." + o.Table, writers: map[string]*fileOut{}, pend: map[string]int{}}
	abs, err := filepath.Abs(TableDir(o.Warehouse, o.Namespace, o.Table))
	if err != nil {
		return nil, err
	}
	r.dir = abs
	fail := func(err error) (*Results, error) {
		if r.cat != nil {
			r.cat.close()
		}
		if r.lock != nil {
			r.lock.Release()
		}
		return nil, fmt.Errorf("iceberg %s: %w", r.name, err)
	}
	scale := parquet.DefaultDecimalScale
	if o.DecimalScale != nil {
		scale = *o.DecimalScale
	}
	if r.layout, err = parquet.NewLayout(d, scale); err != nil {
		return fail(err)
	}
	if r.codec, err = parquet.Codec(o.Compression); err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(DataDir(r.dir), 0o755); err != nil {
		return fail(err)
	}
	if !o.LockHeld {
		if r.lock, err = flock.Acquire(LockFile(r.dir)); err != nil {
			return fail(err)
		}
	}
	switch o.Catalog {
	case "", "hadoop":
		r.cat = &hadoopCatalog{table: r.dir}
	case "sql":
		c, err := openSQLCatalog(ctx, o.CatalogURI, o.CatalogName, o.Namespace, o.Table, r.dir)
		if err != nil {
			return fail(err)
		}
		r.cat = c
	case "rest":
		c, err := openRESTCatalog(ctx, o.CatalogURI, o.CatalogToken, o.Namespace, o.Table, r.dir)
		if err != nil {
			return fail(err)
		}
		r.cat = c
	default:
		return fail(fmt.Errorf("catalog type %q: want hadoop, sql or rest", o.Catalog))
	}
	base, _, err := r.load(ctx)
	if err != nil {
		return fail(err)
	}
	if base != nil && strings.TrimPrefix(base.Location, "file:") != r.dir {
		return fail(fmt.Errorf("the table's location is %s, and the sink writes its files under %s (path): point path at the table's warehouse", base.Location, r.dir))
	}
	var cur *Schema
	last := 0
	if base != nil {
		cur, last = base.Schema(), base.LastColumnID
		r.owned = base.Properties[PropPipeline] == o.Pipeline && base.Properties[PropSink] == o.Sink
	}
	if r.schema, _, err = evolve(r.name, r.layout, cur, last); err != nil {
		return fail(err)
	}
	if r.spec, r.terms, err = partitionSpec(o.PartitionBy, r.layout); err != nil {
		return fail(err)
	}
	if base != nil && !sameSpec(base.Spec(), r.spec) {
		return fail(fmt.Errorf("the table is partitioned by %s, the pipeline by %s: tidemark does not evolve a partition spec", specText(base.Spec()), specText(r.spec)))
	}
	r.upsert = d.EmitMode == "update" || d.EmitMode == "retract"
	for i, s := range r.layout.Slots {
		if s == parquet.SlotWindowStart || s == parquet.SlotKey {
			r.identity = append(r.identity, i)
			r.eqIDs = append(r.eqIDs, int32(r.layout.Columns[i].ID))
		}
	}
	if d.Stateless {
		r.upsert = false
	}
	r.data = parquet.Schema("table", r.layout.Columns, r.layout.Scale, r.codec)
	var ic []parquet.Column
	for _, i := range r.identity {
		ic = append(ic, r.layout.Columns[i])
	}
	r.deletes = parquet.Schema("table", ic, r.layout.Scale, r.codec)
	if !o.ExactlyOnce {
		r.job = uuid.NewString()
		r.fresh = !o.Restoring
		r.seq = 1
	}
	return r, nil
}

func specText(s *PartitionSpec) string {
	if len(s.Fields) == 0 {
		return "nothing"
	}
	var parts []string
	for _, f := range s.Fields {
		parts = append(parts, fmt.Sprintf("%s(%d)", f.Transform, f.SourceID))
	}
	return strings.Join(parts, ", ")
}

// load reads the table's current metadata (nil when the table does not
// exist) and its location.
func (r *Results) load(ctx context.Context) (*Metadata, string, error) {
	loc, b, err := r.cat.current(ctx)
	if err != nil || loc == "" {
		return nil, "", err
	}
	if b == nil {
		if b, err = os.ReadFile(loc); err != nil {
			return nil, "", err
		}
	}
	m, err := ParseMetadata(loc, b)
	return m, loc, err
}

func (r *Results) check(ctx context.Context) error {
	if r.closed {
		return fmt.Errorf("iceberg %s: %w", r.name, fs.ErrClosed)
	}
	return ctx.Err()
}

// Write stages rows: appended to the open data files in final mode,
// collapsed by identity (window_start and keys) in update and retract
// modes. Errors: a decimal that does not fit its column, the file
// system's.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	if r.upsert {
		for i := range rows {
			r.stage(&rows[i])
		}
		return nil
	}
	for i := range rows {
		if err := r.writeRow(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// stage keeps the latest row of each identity.
func (r *Results) stage(rw *changelog.Row) {
	r.keyBuf.Reset()
	r.keyBuf.Int(rw.WindowStart)
	for _, v := range rw.Key {
		r.keyBuf.Value(v)
	}
	k := string(r.keyBuf.Bytes())
	i, ok := r.pend[k]
	if !ok {
		i = len(r.rows)
		r.pend[k] = i
		// An identity first seen as an insert has no row in the table:
		// its first version is this checkpoint's.
		r.rows = append(r.rows, pendRow{delete: rw.Op != changelog.Insert})
	}
	p := &r.rows[i]
	switch rw.Op {
	case changelog.UpdateBefore:
		return
	case changelog.Delete:
		p.live = false
	default:
		p.live = true
	}
	// The row also carries the identity an equality delete names.
	p.row = cloneRow(rw, p.row)
}

func cloneRow(src *changelog.Row, dst changelog.Row) changelog.Row {
	key, vals := dst.Key[:0], dst.Values[:0]
	dst = *src
	dst.Key = append(key, src.Key...)
	dst.Values = append(vals, src.Values...)
	for _, s := range [][]row.Value{dst.Key, dst.Values} {
		for j := range s {
			if s[j].Kind == row.KindString {
				s[j].S = strings.Clone(s[j].S)
			}
		}
	}
	return dst
}

// writeRow appends one row to its partition's data file.
func (r *Results) writeRow(rw *changelog.Row) error {
	n := len(r.layout.Columns)
	if len(r.vals) < n {
		r.vals, r.dec = make([]pq.Value, n), make([]byte, 16*n)
	}
	if err := r.layout.Values(r.vals, r.dec, rw); err != nil {
		return fmt.Errorf("iceberg %s: row of window %d, version %d: %w", r.name, rw.WindowStart, rw.Version, err)
	}
	f, err := r.out(rw, 0)
	if err != nil {
		return err
	}
	if err := f.w.WriteRows([]pq.Row{r.vals}); err != nil {
		return err
	}
	if f.w.Size() >= r.o.RollBytes {
		return r.closeOut(f)
	}
	return nil
}

// writeDelete appends an equality delete of rw's identity.
func (r *Results) writeDelete(rw *changelog.Row) error {
	n := len(r.layout.Columns)
	if len(r.vals) < n {
		r.vals, r.dec = make([]pq.Value, n), make([]byte, 16*n)
	}
	if err := r.layout.Values(r.vals, r.dec, rw); err != nil {
		return fmt.Errorf("iceberg %s: row of window %d: %w", r.name, rw.WindowStart, err)
	}
	r.del = r.del[:0]
	for j, i := range r.identity {
		v := r.vals[i]
		r.del = append(r.del, v.Level(v.RepetitionLevel(), v.DefinitionLevel(), j))
	}
	f, err := r.out(rw, 2)
	if err != nil {
		return err
	}
	return f.w.WriteRows([]pq.Row{r.del})
}

// out returns the open file of rw's partition for content (0 data, 2
// equality deletes).
func (r *Results) out(rw *changelog.Row, content int) (*fileOut, error) {
	part, dir := partitionOf(r.terms, rw, r.pbuf)
	key := strconv.Itoa(content) + "/" + dir
	if f := r.writers[key]; f != nil {
		return f, nil
	}
	kind, sch := "data", r.data
	if content == 2 {
		kind, sch = "deletes", r.deletes
	}
	rel := fmt.Sprintf("data/%s%s-%08d-%05d-%s.parquet", dirPrefix(dir), shortJob(r.job), r.ckNext, r.fileNo, kind)
	r.fileNo++
	full := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return nil, err
	}
	os.Remove(full) // a file of a checkpoint that never committed
	w, err := parquet.CreateFile(full, parquet.FileOptions{Schema: sch, RowGroupRows: r.o.RowGroupRows,
		Metadata: map[string]string{"tidemark.timezone": r.layout.Desc.Timezone}})
	if err != nil {
		return nil, fmt.Errorf("iceberg %s: %w", r.name, err)
	}
	f := &fileOut{w: w, partition: part, rel: rel, content: content}
	r.writers[key] = f
	return f, nil
}

func dirPrefix(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "/"
}

func shortJob(job string) string {
	if len(job) > 8 {
		return job[:8]
	}
	return job
}

func (r *Results) closeOut(f *fileOut) error {
	n, err := f.w.Close()
	if err != nil {
		return err
	}
	for k, g := range r.writers {
		if g == f {
			delete(r.writers, k)
		}
	}
	df := DataFile{Content: f.content, Path: filepath.Join(r.dir, filepath.FromSlash(f.rel)), Partition: f.partition, Records: f.w.Rows(), Bytes: n}
	if f.content == 2 {
		df.EqualityIDs = r.eqIDs
	}
	r.files = append(r.files, df)
	return nil
}

// stageFiles writes the collapsed rows, closes every open file and
// returns the files since the last call.
func (r *Results) stageFiles() ([]DataFile, error) {
	for i := range r.rows {
		p := &r.rows[i]
		if p.delete {
			if err := r.writeDelete(&p.row); err != nil {
				return nil, err
			}
		}
		if p.live {
			if err := r.writeRow(&p.row); err != nil {
				return nil, err
			}
		}
	}
	clear(r.pend)
	r.rows = r.rows[:0]
	keys := slices.Sorted(mapKeys(r.writers))
	for _, k := range keys {
		if err := r.closeOut(r.writers[k]); err != nil {
			return nil, err
		}
	}
	if err := syncTree(filepath.Join(r.dir, "data")); err != nil {
		return nil, err
	}
	files := r.files
	r.files = nil
	return files, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// syncTree fsyncs dir and the directories below it.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return durable.SyncDir(p)
		}
		return nil
	})
}

// prepared is what Prepare stores in the checkpoint.
type prepared struct {
	job     string
	replace bool
	files   []DataFile
}

func encodePrepared(p prepared) []byte {
	var e state.Encoder
	e.Byte(1)
	e.String(p.job)
	e.Bool(p.replace)
	e.Uint(uint64(len(p.files)))
	for _, f := range p.files {
		e.Byte(byte(f.Content))
		e.String(f.Path)
		e.Int(f.Records)
		e.Int(f.Bytes)
		e.Uint(uint64(len(f.Partition)))
		for _, v := range f.Partition {
			switch v := v.(type) {
			case nil:
				e.Byte(0)
			case int32:
				e.Byte(1)
				e.Int(int64(v))
			case int64:
				e.Byte(2)
				e.Int(v)
			case string:
				e.Byte(3)
				e.String(v)
			case bool:
				e.Byte(4)
				e.Bool(v)
			}
		}
		e.Uint(uint64(len(f.EqualityIDs)))
		for _, id := range f.EqualityIDs {
			e.Int(int64(id))
		}
	}
	return e.Bytes()
}

// decodePrepared reads Prepare's state back from a checkpoint. Errors:
// anything that does not parse, a file outside the table's data
// directory, a content other than data or equality deletes.
func decodePrepared(table, dataDir string, b []byte) (prepared, error) {
	d := state.NewDecoder(b)
	d.Section("iceberg sink", 1)
	p := prepared{job: d.String(), replace: d.Bool()}
	n := d.Len(1<<24, 6)
	for i := 0; i < n && d.Err() == nil; i++ {
		f := DataFile{Content: int(d.Byte()), Path: d.String(), Records: d.Int(), Bytes: d.Int()}
		np := d.Len(1<<10, 1)
		for j := 0; j < np && d.Err() == nil; j++ {
			switch t := d.Byte(); t {
			case 0:
				f.Partition = append(f.Partition, nil)
			case 1:
				f.Partition = append(f.Partition, int32(d.Int()))
			case 2:
				f.Partition = append(f.Partition, d.Int())
			case 3:
				f.Partition = append(f.Partition, d.String())
			case 4:
				f.Partition = append(f.Partition, d.Bool())
			default:
				d.Fail("file %d: partition value tag %d", i, t)
			}
		}
		ne := d.Len(1<<16, 1)
		for j := 0; j < ne && d.Err() == nil; j++ {
			f.EqualityIDs = append(f.EqualityIDs, int32(d.Int()))
		}
		if d.Err() == nil {
			rel, err := filepath.Rel(dataDir, f.Path)
			if err != nil || !filepath.IsLocal(rel) || (f.Content != 0 && f.Content != 2) || f.Records < 0 || f.Bytes < 0 {
				d.Fail("file %d: %q (content %d, %d rows, %d bytes) is not a file of %s", i, f.Path, f.Content, f.Records, f.Bytes, dataDir)
			}
		}
		p.files = append(p.files, f)
	}
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail("%d bytes after the last file", d.Remaining())
	}
	if err := d.Err(); err != nil {
		return prepared{}, fmt.Errorf("iceberg %s: prepared state: %w", table, err)
	}
	return p, nil
}

func (r *Results) fault(point string, id int64) {
	if r.o.Fault != nil {
		r.o.Fault(point, id)
	}
}

// Prepare writes the rows staged since the last checkpoint as data files
// (and equality delete files), durable in the table's data directory but
// named by no snapshot, and returns them with the run's job id.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if !r.o.ExactlyOnce {
		return nil, fmt.Errorf("iceberg %s: not opened for exactly-once delivery", r.name)
	}
	if r.job == "" {
		return nil, fmt.Errorf("iceberg %s: Prepare before Recover", r.name)
	}
	r.ckNext = id
	files, err := r.stageFiles()
	if err != nil {
		return nil, err
	}
	r.ckNext = id + 1
	p := prepared{job: r.job, replace: r.fresh, files: files}
	r.fresh = false
	r.fault("iceberg-files", id)
	return encodePrepared(p), nil
}

// Commit commits checkpoint id's files as one snapshot whose summary
// holds the job and the checkpoint id, unless the table's current
// snapshot or one of its ancestors already holds them (a commit
// repeated after a crash).
func (r *Results) Commit(ctx context.Context, id int64, b []byte) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	p, err := decodePrepared(r.name, filepath.Join(r.dir, "data"), b)
	if err != nil {
		return err
	}
	return r.commit(ctx, id, p)
}

// commit retries the optimistic commit a few times when another writer
// got in between (ErrConflict).
func (r *Results) commit(ctx context.Context, id int64, p prepared) error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		err = r.commitOnce(ctx, id, p)
		if !errors.Is(err, ErrConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("iceberg %s: checkpoint %d: %w", r.name, id, err)
	}
	return nil
}

func (r *Results) commitOnce(ctx context.Context, id int64, p prepared) error {
	base, loc, err := r.load(ctx)
	if err != nil {
		return err
	}
	if base != nil {
		if done, _ := base.committed(r.o.Sink, p.job); done >= id {
			return nil
		}
		if p.replace && !(base.Properties[PropPipeline] == r.o.Pipeline && base.Properties[PropSink] == r.o.Sink) {
			p.replace = false // never a table tidemark did not create
		}
	}
	if len(p.files) == 0 && (!p.replace || base == nil || base.CurrentSnapshotID == -1) {
		return nil // nothing to commit: no snapshot for this checkpoint
	}
	now := r.o.Now().UnixMilli()
	m := r.next(base, loc, now)
	seq := m.LastSequenceNumber + 1
	snapID := snapshotID(p.job, id, m)
	var parent *int64
	var carried []ManifestFile
	if base != nil && base.CurrentSnapshotID != -1 {
		cur := base.CurrentSnapshotID
		parent = &cur
		if !p.replace {
			s := base.Snapshot(cur)
			f, err := os.Open(s.ManifestList)
			if err != nil {
				return err
			}
			carried, err = decodeManifestList(s.ManifestList, f)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	var dataFiles, delFiles []DataFile
	var addedRows, addedDeletes int64
	for _, f := range p.files {
		if f.Content == 0 {
			dataFiles = append(dataFiles, f)
			addedRows += f.Records
		} else {
			delFiles = append(delFiles, f)
			addedDeletes += f.Records
		}
	}
	mdir := filepath.Join(r.dir, "metadata")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return err
	}
	types := make([]string, len(r.terms))
	for i, t := range r.terms {
		types[i] = t.avro
	}
	var added []ManifestFile
	for i, group := range [][]DataFile{dataFiles, delFiles} {
		if len(group) == 0 {
			continue
		}
		content := []string{"data", "deletes"}[i]
		b, err := encodeManifest(r.schema, r.spec, types, content, group, snapID, seq)
		if err != nil {
			return err
		}
		path := filepath.Join(mdir, fmt.Sprintf("%d-m%d.avro", snapID, i))
		if err := parquet.WriteAtomic(path, b); err != nil {
			return err
		}
		mf := ManifestFile{Path: path, Length: int64(len(b)), SpecID: int32(r.spec.SpecID), Content: int32(i), SequenceNumber: seq,
			MinSequenceNumber: seq, AddedSnapshotID: snapID, AddedFilesCount: int32(len(group))}
		for _, f := range group {
			mf.AddedRowsCount += f.Records
		}
		mf.Partitions = summaries(r.terms, group)
		added = append(added, mf)
	}
	if len(carried)+len(added) > manifestMergeCount {
		if carried, err = r.mergeManifests(carried, snapID, seq, mdir, types); err != nil {
			return err
		}
	}
	list, err := encodeManifestList(append(added, carried...), snapID, parent, seq)
	if err != nil {
		return err
	}
	listPath := filepath.Join(mdir, fmt.Sprintf("snap-%d.avro", snapID))
	if err := parquet.WriteAtomic(listPath, list); err != nil {
		return err
	}
	r.fault("iceberg-manifest", id)
	op := "append"
	if len(delFiles) > 0 {
		op = "overwrite"
	}
	if p.replace {
		op = "overwrite"
	}
	summary := map[string]string{
		"operation": op, "added-data-files": strconv.Itoa(len(dataFiles)), "added-records": strconv.FormatInt(addedRows, 10),
		"added-delete-files": strconv.Itoa(len(delFiles)), "added-equality-delete-files": strconv.Itoa(len(delFiles)),
		"added-equality-deletes": strconv.FormatInt(addedDeletes, 10),
		SummaryPipeline:          r.o.Pipeline, SummarySink: r.o.Sink, SummaryJob: p.job, SummaryCheckpoint: strconv.FormatInt(id, 10),
	}
	if p.replace {
		summary["tidemark.replaced"] = "true"
	}
	sid := m.CurrentSchemaID
	m.Snapshots = append(m.Snapshots, Snapshot{SnapshotID: snapID, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: now,
		ManifestList: listPath, Summary: summary, SchemaID: &sid})
	m.LastSequenceNumber = seq
	m.CurrentSnapshotID = snapID
	m.Refs = map[string]Ref{"main": {SnapshotID: snapID, Type: "branch"}}
	m.SnapshotLog = append(m.SnapshotLog, SnapshotLog{TimestampMs: now, SnapshotID: snapID})
	return r.swap(ctx, id, base, loc, m)
}

// metadataLogMax bounds the metadata log a commit keeps: Iceberg's
// write.metadata.previous-versions-max (100). Older metadata files stay
// on disk (Iceberg deletes them only with
// write.metadata.delete-after-commit.enabled, off by default).
const metadataLogMax = 100

// manifestMergeCount is the number of manifests in a snapshot's list
// above which a commit merges the carried ones into one per content (data,
// deletes): Iceberg's commit.manifest.min-count-to-merge (100). Without
// it a checkpoint a second adds 86,400 manifests a day, each of which a
// reader's scan planning opens.
const manifestMergeCount = 100

// mergeManifests rewrites the carried manifests as one manifest per
// content, their live entries kept as EXISTING with the snapshot that
// added them and their sequence numbers.
func (r *Results) mergeManifests(carried []ManifestFile, snapID, seq int64, mdir string, types []string) ([]ManifestFile, error) {
	var out []ManifestFile
	for content := range int32(2) {
		var files []DataFile
		minSeq := seq
		n := 0
		for _, mf := range carried {
			if mf.Content != content {
				continue
			}
			if mf.SpecID != int32(r.spec.SpecID) {
				out = append(out, mf) // another spec's: kept as it is
				continue
			}
			n++
			f, err := os.Open(mf.Path)
			if err != nil {
				return nil, err
			}
			got, err := decodeManifest(mf, r.terms, f)
			f.Close()
			if err != nil {
				return nil, err
			}
			for _, d := range got {
				minSeq = min(minSeq, d.seq)
			}
			files = append(files, got...)
		}
		if n == 0 {
			continue
		}
		if len(files) == 0 {
			continue // every file deleted: the manifests drop out
		}
		name := []string{"data", "deletes"}[content]
		b, err := encodeManifest(r.schema, r.spec, types, name, files, snapID, seq)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(mdir, fmt.Sprintf("%d-merged-m%d.avro", snapID, content))
		if err := parquet.WriteAtomic(path, b); err != nil {
			return nil, err
		}
		mf := ManifestFile{Path: path, Length: int64(len(b)), SpecID: int32(r.spec.SpecID), Content: content, SequenceNumber: seq,
			MinSequenceNumber: minSeq, AddedSnapshotID: snapID, ExistingFilesCount: int32(len(files)), Partitions: summaries(r.terms, files)}
		for _, f := range files {
			mf.ExistingRowsCount += f.Records
		}
		out = append(out, mf)
	}
	return out, nil
}

// next returns the metadata a commit starts from: the base with the
// sink's schema made current, or a new table.
func (r *Results) next(base *Metadata, loc string, now int64) *Metadata {
	var m *Metadata
	if base == nil {
		m = &Metadata{FormatVersion: 2, TableUUID: uuid.NewString(), Location: r.dir, LastSequenceNumber: 0,
			LastColumnID: 0, CurrentSchemaID: r.schema.SchemaID, Schemas: []Schema{*r.schema},
			DefaultSpecID: r.spec.SpecID, PartitionSpecs: []PartitionSpec{*r.spec}, LastPartitionID: 999,
			DefaultSortOrderID: 0, SortOrders: []json.RawMessage{json.RawMessage(`{"order-id":0,"fields":[]}`)},
			Properties:        map[string]string{PropPipeline: r.o.Pipeline, PropSink: r.o.Sink, "write.format.default": "parquet"},
			CurrentSnapshotID: -1, Snapshots: []Snapshot{}, SnapshotLog: []SnapshotLog{}, MetadataLog: []MetadataLog{}}
		for _, f := range r.schema.Fields {
			m.LastColumnID = max(m.LastColumnID, f.ID)
		}
		for _, f := range r.spec.Fields {
			m.LastPartitionID = max(m.LastPartitionID, f.FieldID)
		}
	} else {
		c := *base
		c.Schemas = slices.Clone(base.Schemas)
		c.Snapshots = slices.Clone(base.Snapshots)
		c.SnapshotLog = slices.Clone(base.SnapshotLog)
		c.MetadataLog = append(slices.Clone(base.MetadataLog), MetadataLog{TimestampMs: base.LastUpdatedMs, MetadataFile: loc})
		if n := len(c.MetadataLog); n > metadataLogMax {
			c.MetadataLog = c.MetadataLog[n-metadataLogMax:]
		}
		m = &c
		if base.Schema().SchemaID != r.schema.SchemaID || !slices.EqualFunc(base.Schema().Fields, r.schema.Fields, sameField) {
			s := *r.schema
			for _, x := range m.Schemas {
				s.SchemaID = max(s.SchemaID, x.SchemaID+1)
			}
			m.Schemas = append(m.Schemas, s)
			m.CurrentSchemaID = s.SchemaID
			r.schema.SchemaID = s.SchemaID
			for _, f := range s.Fields {
				m.LastColumnID = max(m.LastColumnID, f.ID)
			}
		}
	}
	m.LastUpdatedMs = now
	return m
}

func sameField(a, b Field) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Required == b.Required && bytes.Equal(a.Type, b.Type)
}

// swap writes m as the next metadata version and makes it current.
func (r *Results) swap(ctx context.Context, id int64, base *Metadata, loc string, m *Metadata) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	version := 1
	if base != nil {
		version = metadataVersion(loc, base) + 1
	}
	if _, err := r.cat.commit(ctx, loc, base, m, version, data, func(p string) { r.fault(p, id) }); err != nil {
		return err
	}
	r.fault("iceberg-committed", id)
	return nil
}

var versionRE = regexp.MustCompile(`(?:^v|^)(\d+)[-.]`)

// metadataVersion is a metadata file's version: N of vN.metadata.json
// or N-<uuid>.metadata.json, else the length of its metadata log.
func metadataVersion(loc string, m *Metadata) int {
	if g := versionRE.FindStringSubmatch(filepath.Base(loc)); g != nil {
		if n, err := strconv.Atoi(g[1]); err == nil {
			return n
		}
	}
	return len(m.MetadataLog) + 1
}

// snapshotID derives a snapshot id from the job and checkpoint (so that a
// repeated commit writes the same files), positive and not yet used.
func snapshotID(job string, id int64, m *Metadata) int64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(id))
	h := xxhash.New()
	h.WriteString(job)
	h.Write(b[:])
	s := int64(h.Sum64() & (1<<62 - 1))
	for s == 0 || m.Snapshot(s) != nil {
		s++
	}
	return s
}

// summaries are a manifest's partition field summaries (contains_null;
// bounds are left out, which readers take as unknown).
func summaries(terms []partTerm, files []DataFile) []FieldSummary {
	if len(terms) == 0 {
		return nil
	}
	out := make([]FieldSummary, len(terms))
	for _, f := range files {
		for i := range terms {
			if f.Partition[i] == nil {
				out[i].ContainsNull = true
			}
		}
	}
	return out
}

// Recover brings the table to checkpoint id: it commits id's files
// unless a snapshot of the job already holds checkpoint id; a table
// whose current snapshot holds a later checkpoint of the job (the newer
// checkpoint turned out unusable) is rolled back to the snapshot of id.
// id 0 starts a new job, whose first commit replaces the rows of a table
// tidemark created for this pipeline and sink.
func (r *Results) Recover(ctx context.Context, id int64, b []byte) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	r.dropStaged()
	if id == 0 {
		r.job = uuid.NewString()
		r.fresh, r.ckNext = true, 1
		return nil
	}
	p, err := decodePrepared(r.name, filepath.Join(r.dir, "data"), b)
	if err != nil {
		return err
	}
	r.job, r.ckNext = p.job, id+1
	base, loc, err := r.load(ctx)
	if err != nil {
		return fmt.Errorf("iceberg %s: %w", r.name, err)
	}
	if base != nil {
		if done, _ := base.committed(r.o.Sink, p.job); done > id {
			return r.rollback(ctx, id, p.job, base, loc)
		}
	}
	if err := r.commit(ctx, id, p); err != nil {
		return err
	}
	return r.removeOrphans(id)
}

// rollback makes the newest snapshot of job at or before checkpoint id
// current again (or the snapshot before the job's first).
func (r *Results) rollback(ctx context.Context, id int64, job string, base *Metadata, loc string) error {
	target := int64(-1)
	for _, s := range base.Ancestry() {
		if s.Summary[SummarySink] == r.o.Sink && s.Summary[SummaryJob] == job {
			ck, _ := strconv.ParseInt(s.Summary[SummaryCheckpoint], 10, 64)
			if ck <= id {
				target = s.SnapshotID
				break
			}
			target = -1
			if s.ParentSnapshotID != nil {
				target = *s.ParentSnapshotID
			}
			continue
		}
		break
	}
	m := r.next(base, loc, r.o.Now().UnixMilli())
	m.CurrentSnapshotID = target
	if target == -1 {
		m.Refs = nil
	} else {
		m.Refs = map[string]Ref{"main": {SnapshotID: target, Type: "branch"}}
		m.SnapshotLog = append(m.SnapshotLog, SnapshotLog{TimestampMs: m.LastUpdatedMs, SnapshotID: target})
	}
	if err := r.swap(ctx, id, base, loc, m); err != nil {
		return fmt.Errorf("iceberg %s: rolling back to checkpoint %d: %w", r.name, id, err)
	}
	r.notes = append(r.notes, fmt.Sprintf("rolled table %s back to the snapshot of checkpoint %d (a later checkpoint was unusable; its snapshots stay in the history)", r.name, id))
	return nil
}

// removeOrphans deletes the job's data files of checkpoints after id:
// written by Prepare, never committed (they belong to a checkpoint the
// crash left incomplete, and are written again).
func (r *Results) removeOrphans(id int64) error {
	prefix := shortJob(r.job) + "-"
	return filepath.WalkDir(filepath.Join(r.dir, "data"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rest, ok := strings.CutPrefix(d.Name(), prefix)
		if !ok || len(rest) < 8 {
			return nil
		}
		if ck, err := strconv.ParseInt(rest[:8], 10, 64); err == nil && ck > id {
			return os.Remove(p)
		}
		return nil
	})
}

// dropStaged discards what was written since the last Prepare.
func (r *Results) dropStaged() {
	for k, f := range r.writers {
		f.w.Abort()
		delete(r.writers, k)
	}
	r.files = nil
	clear(r.pend)
	r.rows = r.rows[:0]
}

// Flush commits a snapshot of what was written when the sink is at least
// once in a pipeline with checkpoints (PublishOnFlush); else nothing.
func (r *Results) Flush(ctx context.Context) error {
	if r.closed || r.o.ExactlyOnce || !r.o.PublishOnFlush {
		return nil
	}
	return r.commitNow(ctx)
}

func (r *Results) commitNow(ctx context.Context) error {
	r.ckNext = r.seq
	files, err := r.stageFiles()
	if err != nil {
		return err
	}
	p := prepared{job: r.job, replace: r.fresh, files: files}
	r.fresh = false
	if err := r.commit(ctx, r.seq, p); err != nil {
		return err
	}
	r.seq++
	return nil
}

// Close commits what was written (not exactly once; exactly-once output
// waits for its checkpoint) and releases the table.
func (r *Results) Close(ctx context.Context) error {
	if r.closed {
		return nil
	}
	var err error
	if !r.o.ExactlyOnce {
		err = r.commitNow(ctx)
	} else {
		r.dropStaged()
	}
	r.closed = true
	if cerr := r.cat.close(); err == nil {
		err = cerr
	}
	if lerr := r.lock.Release(); err == nil {
		err = lerr
	}
	return err
}

// Abort implements sink.Aborter: nothing is committed.
func (r *Results) Abort(ctx context.Context) error {
	if r.closed {
		return nil
	}
	r.dropStaged()
	r.closed = true
	r.cat.close()
	return r.lock.Release()
}

// Notes implements sink.Noter.
func (r *Results) Notes() []string { return r.notes }
