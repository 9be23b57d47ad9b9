package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// The Avro files of a table (Iceberg spec, "Manifests" and "Manifest
// Lists", format version 2), written and read with github.com/twmb/avro:
// the schemas carry Iceberg's field ids ("field-id", "element-id"), by
// which other engines resolve the columns.

// manifestFileSchema is a manifest list's record, manifest_file.
const manifestFileSchema = `{"type":"record","name":"manifest_file","fields":[
{"name":"manifest_path","type":"string","field-id":500},
{"name":"manifest_length","type":"long","field-id":501},
{"name":"partition_spec_id","type":"int","field-id":502},
{"name":"content","type":"int","field-id":517},
{"name":"sequence_number","type":"long","field-id":515},
{"name":"min_sequence_number","type":"long","field-id":516},
{"name":"added_snapshot_id","type":"long","field-id":503},
{"name":"added_files_count","type":"int","field-id":504},
{"name":"existing_files_count","type":"int","field-id":505},
{"name":"deleted_files_count","type":"int","field-id":506},
{"name":"added_rows_count","type":"long","field-id":512},
{"name":"existing_rows_count","type":"long","field-id":513},
{"name":"deleted_rows_count","type":"long","field-id":514},
{"name":"partitions","type":["null",{"type":"array","items":{"type":"record","name":"r508","fields":[
  {"name":"contains_null","type":"boolean","field-id":509},
  {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
  {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
  {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]},"element-id":508}],"default":null,"field-id":507}
]}`

var manifestFileAvro = avro.MustParse(manifestFileSchema)

// ManifestFile is one entry of a manifest list.
type ManifestFile struct {
	Path               string         `avro:"manifest_path"`
	Length             int64          `avro:"manifest_length"`
	SpecID             int32          `avro:"partition_spec_id"`
	Content            int32          `avro:"content"` // 0 data, 1 deletes
	SequenceNumber     int64          `avro:"sequence_number"`
	MinSequenceNumber  int64          `avro:"min_sequence_number"`
	AddedSnapshotID    int64          `avro:"added_snapshot_id"`
	AddedFilesCount    int32          `avro:"added_files_count"`
	ExistingFilesCount int32          `avro:"existing_files_count"`
	DeletedFilesCount  int32          `avro:"deleted_files_count"`
	AddedRowsCount     int64          `avro:"added_rows_count"`
	ExistingRowsCount  int64          `avro:"existing_rows_count"`
	DeletedRowsCount   int64          `avro:"deleted_rows_count"`
	Partitions         []FieldSummary `avro:"partitions"`
}

// FieldSummary is a manifest's summary of one partition field.
type FieldSummary struct {
	ContainsNull bool   `avro:"contains_null"`
	ContainsNaN  *bool  `avro:"contains_nan"`
	LowerBound   []byte `avro:"lower_bound"`
	UpperBound   []byte `avro:"upper_bound"`
}

// maxAvroBlock bounds the blocks the sink reads back (a manifest list
// of a million manifests is far below it).
const maxAvroBlock = 256 << 20

// encodeManifestList writes a manifest list.
func encodeManifestList(files []ManifestFile, snapshotID int64, parent *int64, seq int64) ([]byte, error) {
	meta := map[string][]byte{
		"snapshot-id":        []byte(strconv.FormatInt(snapshotID, 10)),
		"sequence-number":    []byte(strconv.FormatInt(seq, 10)),
		"format-version":     []byte("2"),
		"parent-snapshot-id": []byte("null"),
	}
	if parent != nil {
		meta["parent-snapshot-id"] = []byte(strconv.FormatInt(*parent, 10))
	}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, manifestFileAvro, ocf.WithMetadata(meta))
	if err != nil {
		return nil, err
	}
	for i := range files {
		f := files[i]
		if f.Partitions == nil {
			f.Partitions = nil
		}
		if err := w.Encode(&f); err != nil {
			return nil, fmt.Errorf("manifest list: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeManifestList reads a manifest list (written by tidemark or any
// Iceberg writer of format version 2). Errors name path.
func decodeManifestList(path string, r io.Reader) ([]ManifestFile, error) {
	rd, err := ocf.NewReader(r, ocf.WithMaxBlockBytes(maxAvroBlock), ocf.WithMaxDecompressedBlockBytes(maxAvroBlock))
	if err != nil {
		return nil, fmt.Errorf("manifest list %s: %w", path, err)
	}
	var out []ManifestFile
	for {
		var f ManifestFile
		err := rd.Decode(&f)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifest list %s: entry %d: %w", path, len(out), err)
		}
		out = append(out, f)
	}
}

// entrySchema returns the manifest_entry schema of a partition spec whose
// fields have the given Avro types (with their field ids).
func entrySchema(spec []PartitionField, types []string) string {
	var parts bytes.Buffer
	for i, f := range spec {
		if i > 0 {
			parts.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		fmt.Fprintf(&parts, `{"name":%s,"type":["null",%s],"default":null,"field-id":%d}`, name, types[i], f.FieldID)
	}
	return `{"type":"record","name":"manifest_entry","fields":[
{"name":"status","type":"int","field-id":0},
{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},
{"name":"data_file","type":{"type":"record","name":"r2","fields":[
  {"name":"content","type":"int","field-id":134},
  {"name":"file_path","type":"string","field-id":100},
  {"name":"file_format","type":"string","field-id":101},
  {"name":"partition","type":{"type":"record","name":"r102","fields":[` + parts.String() + `]},"field-id":102},
  {"name":"record_count","type":"long","field-id":103},
  {"name":"file_size_in_bytes","type":"long","field-id":104},
  {"name":"equality_ids","type":["null",{"type":"array","items":"int","element-id":136}],"default":null,"field-id":135}
]},"field-id":2}]}`
}

// DataFile is a data or delete file as a manifest entry names it.
type DataFile struct {
	Content     int // 0 data, 2 equality deletes
	Path        string
	Partition   []any // per partition field: int32, int64, string, … or nil
	Records     int64
	Bytes       int64
	EqualityIDs []int32
	// existing marks an entry carried into a merged manifest (status 0,
	// EXISTING) with the snapshot that added it and its data and file
	// sequence numbers; otherwise the entry is added (status 1) by the
	// manifest's snapshot at its sequence number.
	existing               bool
	snapshot, seq, fileSeq int64
}

// encodeManifest writes a manifest of files added (status 1) by snapshot
// id at sequence number seq, or carried from earlier manifests (status 0,
// DataFile.existing); content is "data" or "deletes".
func encodeManifest(schema *Schema, spec *PartitionSpec, types []string, content string, files []DataFile, snapshotID, seq int64) ([]byte, error) {
	sch, err := avro.Parse(entrySchema(spec.Fields, types))
	if err != nil {
		return nil, fmt.Errorf("manifest schema: %w", err)
	}
	schemaJSON, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	specJSON, err := json.Marshal(spec.Fields)
	if err != nil {
		return nil, err
	}
	meta := map[string][]byte{
		"schema":            schemaJSON,
		"schema-id":         []byte(strconv.Itoa(schema.SchemaID)),
		"partition-spec":    specJSON,
		"partition-spec-id": []byte(strconv.Itoa(spec.SpecID)),
		"format-version":    []byte("2"),
		"content":           []byte(content),
	}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, sch, ocf.WithMetadata(meta))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		part := map[string]any{}
		for i, pf := range spec.Fields {
			part[pf.Name] = f.Partition[i]
		}
		var eq any
		if len(f.EqualityIDs) > 0 {
			eq = f.EqualityIDs
		}
		status, snap, dseq, fseq := int32(1), snapshotID, seq, seq
		if f.existing {
			status, snap, dseq, fseq = 0, f.snapshot, f.seq, f.fileSeq
		}
		e := map[string]any{
			"status": status, "snapshot_id": snap, "sequence_number": dseq, "file_sequence_number": fseq,
			"data_file": map[string]any{
				"content": int32(f.Content), "file_path": f.Path, "file_format": "PARQUET", "partition": part,
				"record_count": f.Records, "file_size_in_bytes": f.Bytes, "equality_ids": eq,
			},
		}
		if err := w.Encode(e); err != nil {
			return nil, fmt.Errorf("manifest entry %s: %w", f.Path, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// manifestEntry is a manifest entry as the sink reads one back (the
// fields it writes; other writers' column statistics are not kept).
type manifestEntry struct {
	Status         int32  `avro:"status"`
	SnapshotID     *int64 `avro:"snapshot_id"`
	SequenceNumber *int64 `avro:"sequence_number"`
	FileSequence   *int64 `avro:"file_sequence_number"`
	File           struct {
		Content     int32          `avro:"content"`
		Path        string         `avro:"file_path"`
		Format      string         `avro:"file_format"`
		Partition   map[string]any `avro:"partition"`
		Records     int64          `avro:"record_count"`
		Bytes       int64          `avro:"file_size_in_bytes"`
		EqualityIDs []int32        `avro:"equality_ids"`
	} `avro:"data_file"`
}

// decodeManifest reads the live entries (status added or existing) of
// manifest mf: their data sequence numbers resolved (inherited from the
// manifest list's entry when null, as the spec says), partition values
// in the sink's types (days, hours, µs) by its partition terms.
func decodeManifest(mf ManifestFile, terms []partTerm, r io.Reader) ([]DataFile, error) {
	rd, err := ocf.NewReader(r, ocf.WithMaxBlockBytes(maxAvroBlock), ocf.WithMaxDecompressedBlockBytes(maxAvroBlock))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", mf.Path, err)
	}
	var out []DataFile
	for n := 0; ; n++ {
		var e manifestEntry
		err := rd.Decode(&e)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifest %s: entry %d: %w", mf.Path, n, err)
		}
		if e.Status == 2 {
			continue // deleted
		}
		f := DataFile{Content: int(e.File.Content), Path: e.File.Path, Records: e.File.Records, Bytes: e.File.Bytes,
			EqualityIDs: e.File.EqualityIDs, existing: true, snapshot: mf.AddedSnapshotID, seq: mf.SequenceNumber, fileSeq: mf.SequenceNumber}
		if e.SnapshotID != nil {
			f.snapshot = *e.SnapshotID
		}
		if e.SequenceNumber != nil {
			f.seq = *e.SequenceNumber
		} else if e.Status != 1 {
			return nil, fmt.Errorf("manifest %s: entry %d: an existing file without a sequence number", mf.Path, n)
		}
		if e.FileSequence != nil {
			f.fileSeq = *e.FileSequence
		}
		if e.File.Format != "PARQUET" && e.File.Format != "parquet" {
			return nil, fmt.Errorf("manifest %s: %s has format %q; the sink merges Parquet files only", mf.Path, f.Path, e.File.Format)
		}
		for _, t := range terms {
			v, err := partitionValue(t, e.File.Partition[t.field.Name])
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %s: partition %s: %w", mf.Path, f.Path, t.field.Name, err)
			}
			f.Partition = append(f.Partition, v)
		}
		out = append(out, f)
	}
}

// partitionValue converts a decoded partition value to the type
// partitionOf gives it.
func partitionValue(t partTerm, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case time.Time:
		if t.time && !t.hours {
			return int32(floorDiv(x.UnixMilli(), 86_400_000)), nil
		}
		return x.UnixMicro(), nil
	case int32, int64, string, bool:
		return x, nil
	}
	return nil, fmt.Errorf("value %v of type %T", v, v)
}
