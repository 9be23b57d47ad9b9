// Package icebergread reads an Apache Iceberg table (format version 2) the
// way a query engine scans it, for tests of the Iceberg sink: the
// metadata JSON decoded generically (not with the sink's structs), the
// manifest list and manifests with github.com/hamba/avro (the sink writes
// them with github.com/twmb/avro), data and delete files with
// parquet-go's reader through their field ids, equality deletes applied
// by data sequence number and partition as the spec says ("Scan
// Planning"). It shares no code with sink/iceberg. It is imported by
// tests only, and so is linked into no binary.
package icebergread

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2/ocf"
	pq "github.com/parquet-go/parquet-go"
)

// Snapshot is one snapshot as the metadata lists it.
type Snapshot struct {
	ID, Parent, Sequence int64
	Summary              map[string]string
	ManifestList         string
}

// Table is a table's metadata as read.
type Table struct {
	Location  string
	Metadata  string // the metadata file read
	Current   int64  // -1 when none
	Snapshots []Snapshot
	Fields    map[int]field // the current schema by field id
	raw       map[string]any
}

type field struct {
	name, typ string
	required  bool
}

// CurrentMetadata finds a file-system ("hadoop") table's current
// metadata file: the highest vN.metadata.json in TABLE/metadata (the
// version hint may lag).
func CurrentMetadata(table string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(table, "metadata"))
	if err != nil {
		return "", err
	}
	best := -1
	re := regexp.MustCompile(`^v(\d+)\.metadata\.json$`)
	for _, e := range ents {
		if g := re.FindStringSubmatch(e.Name()); g != nil {
			n, _ := strconv.Atoi(g[1])
			best = max(best, n)
		}
	}
	if best < 0 {
		return "", fmt.Errorf("%s: no metadata file", table)
	}
	return filepath.Join(table, "metadata", fmt.Sprintf("v%d.metadata.json", best)), nil
}

// Open reads a metadata file.
func Open(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if num(raw["format-version"]) != 2 {
		return nil, fmt.Errorf("%s: format-version %v", path, raw["format-version"])
	}
	t := &Table{Location: str(raw["location"]), Metadata: path, Current: -1, Fields: map[int]field{}, raw: raw}
	if c, ok := raw["current-snapshot-id"]; ok && c != nil {
		t.Current = num(c)
	}
	sid := num(raw["current-schema-id"])
	for _, s := range list(raw["schemas"]) {
		sm := s.(map[string]any)
		if num(sm["schema-id"]) != sid {
			continue
		}
		for _, f := range list(sm["fields"]) {
			fm := f.(map[string]any)
			typ, _ := fm["type"].(string)
			t.Fields[int(num(fm["id"]))] = field{name: str(fm["name"]), typ: typ, required: fm["required"] == true}
		}
	}
	if len(t.Fields) == 0 {
		return nil, fmt.Errorf("%s: no current schema %d", path, sid)
	}
	for _, s := range list(raw["snapshots"]) {
		sm := s.(map[string]any)
		sn := Snapshot{ID: num(sm["snapshot-id"]), Parent: -1, Sequence: num(sm["sequence-number"]), ManifestList: str(sm["manifest-list"]), Summary: map[string]string{}}
		if p, ok := sm["parent-snapshot-id"]; ok && p != nil {
			sn.Parent = num(p)
		}
		for k, v := range sm["summary"].(map[string]any) {
			sn.Summary[k] = str(v)
		}
		t.Snapshots = append(t.Snapshots, sn)
	}
	return t, nil
}

// Ancestry returns the current snapshot and its ancestors, newest first.
func (t *Table) Ancestry() []Snapshot {
	by := map[int64]Snapshot{}
	for _, s := range t.Snapshots {
		by[s.ID] = s
	}
	var out []Snapshot
	for id := t.Current; id != -1; {
		s, ok := by[id]
		if !ok {
			break
		}
		out = append(out, s)
		id = s.Parent
	}
	return out
}

// Row is one row of a scan: each column's value as text ("NULL" for
// null; decimals at their scale; timestamps in RFC 3339, UTC).
type Row map[string]string

type dataFile struct {
	content   int
	path      string
	seq       int64
	partition string
	eqIDs     []int
}

// Scan returns the rows of the current snapshot, equality deletes
// applied, and the number of data and delete files read.
func (t *Table) Scan() ([]Row, int, int, error) {
	if t.Current == -1 {
		return nil, 0, 0, nil
	}
	var snap *Snapshot
	for i := range t.Snapshots {
		if t.Snapshots[i].ID == t.Current {
			snap = &t.Snapshots[i]
		}
	}
	if snap == nil {
		return nil, 0, 0, fmt.Errorf("current snapshot %d not listed", t.Current)
	}
	manifests, _, err := readAvro(snap.ManifestList)
	if err != nil {
		return nil, 0, 0, err
	}
	var files []dataFile
	for _, m := range manifests {
		mseq := num(m["sequence_number"])
		entries, meta, err := readAvro(str(m["manifest_path"]))
		if err != nil {
			return nil, 0, 0, err
		}
		if string(meta["format-version"]) != "2" {
			return nil, 0, 0, fmt.Errorf("manifest %s: format-version %q", m["manifest_path"], meta["format-version"])
		}
		for _, e := range entries {
			status := num(e["status"])
			if status == 2 {
				continue // deleted
			}
			seq := mseq
			if v := unwrap(e["sequence_number"]); v != nil {
				seq = num(v)
			} else if status != 1 {
				return nil, 0, 0, fmt.Errorf("manifest %s: an existing entry without a sequence number", m["manifest_path"])
			}
			df := e["data_file"].(map[string]any)
			f := dataFile{content: int(num(df["content"])), path: str(df["file_path"]), seq: seq}
			pb, _ := json.Marshal(df["partition"])
			f.partition = string(pb)
			for _, id := range list(unwrap(df["equality_ids"])) {
				f.eqIDs = append(f.eqIDs, int(num(id)))
			}
			if str(df["file_format"]) != "PARQUET" {
				return nil, 0, 0, fmt.Errorf("%s: format %v", f.path, df["file_format"])
			}
			files = append(files, f)
		}
	}
	type rowAt struct {
		r    Row
		ids  map[int]string
		seq  int64
		part string
	}
	var rows []rowAt
	type del struct {
		keys map[string]bool
		ids  []int
		seq  int64
		part string
	}
	var dels []del
	nData, nDel := 0, 0
	for _, f := range files {
		recs, err := t.readParquet(f.path)
		if err != nil {
			return nil, 0, 0, err
		}
		switch f.content {
		case 0:
			nData++
			for _, rec := range recs {
				rows = append(rows, rowAt{r: t.byName(rec), ids: rec, seq: f.seq, part: f.partition})
			}
		case 2:
			nDel++
			if len(f.eqIDs) == 0 {
				return nil, 0, 0, fmt.Errorf("%s: an equality delete file without equality_ids", f.path)
			}
			d := del{keys: map[string]bool{}, ids: f.eqIDs, seq: f.seq, part: f.partition}
			for _, rec := range recs {
				d.keys[eqKey(rec, f.eqIDs)] = true
			}
			dels = append(dels, d)
		default:
			return nil, 0, 0, fmt.Errorf("%s: content %d (position deletes) not expected", f.path, f.content)
		}
	}
	var out []Row
	for _, r := range rows {
		deleted := false
		for _, d := range dels {
			// An equality delete applies to data files of the same
			// partition with a lower data sequence number.
			if r.seq < d.seq && r.part == d.part && d.keys[eqKey(r.ids, d.ids)] {
				deleted = true
				break
			}
		}
		if !deleted {
			out = append(out, r.r)
		}
	}
	return out, nData, nDel, nil
}

func eqKey(rec map[int]string, ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(rec[id])
		b.WriteByte(0)
	}
	return b.String()
}

func (t *Table) byName(rec map[int]string) Row {
	r := Row{}
	for id, f := range t.Fields {
		v, ok := rec[id]
		if !ok {
			v = "NULL" // a column added after the file was written
		}
		r[f.name] = v
	}
	return r
}

// readParquet reads a Parquet file's rows as text by field id, using the
// table schema's types.
func (t *Table) readParquet(path string) ([]map[int]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := pq.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cols := f.Schema().Fields()
	ids := make([]int, len(cols))
	for i, c := range cols {
		ids[i] = c.ID()
		if _, ok := t.Fields[ids[i]]; !ok {
			return nil, fmt.Errorf("%s: column %s has field id %d, not in the table's schema", path, c.Name(), ids[i])
		}
	}
	r := pq.NewReader(bytes.NewReader(b))
	defer r.Close()
	var out []map[int]string
	buf := make([]pq.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			rec := map[int]string{}
			for _, v := range row {
				id := ids[v.Column()]
				rec[id] = render(t.Fields[id].typ, v)
			}
			out = append(out, rec)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

var decRE = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)

// render prints a Parquet value by its Iceberg type.
func render(typ string, v pq.Value) string {
	if v.IsNull() {
		return "NULL"
	}
	switch {
	case typ == "string":
		return string(v.ByteArray())
	case typ == "long":
		return strconv.FormatInt(v.Int64(), 10)
	case typ == "boolean":
		return strconv.FormatBool(v.Boolean())
	case typ == "timestamptz":
		us := v.Int64()
		if us == 1<<63-1 {
			return "infinity"
		}
		return time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
	case decRE.MatchString(typ):
		scale, _ := strconv.Atoi(decRE.FindStringSubmatch(typ)[2])
		b := v.ByteArray()
		x := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return new(big.Rat).SetFrac(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
	}
	return v.String()
}

// readAvro reads an Avro object container file's records generically.
func readAvro(path string) ([]map[string]any, map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	d, err := ocf.NewDecoder(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []map[string]any
	for d.HasNext() {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, m)
	}
	if err := d.Error(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, d.Metadata(), nil
}

// unwrap returns a union's value: hamba/avro decodes a union into any as
// the value or as {"type": value}.
func unwrap(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, x := range m {
			return x
		}
	}
	return v
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch v := v.(type) {
	case json.Number:
		n, _ := v.Int64()
		return n
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	case float64:
		return int64(v)
	case map[string]any:
		return num(unwrap(v))
	}
	return 0
}

// Sorted returns rows as lines "col=value ..." over cols, sorted.
func Sorted(rows []Row, cols []string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(r[c])
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}
