package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Metadata is an Iceberg table's metadata file, format version 2 (the
// Apache Iceberg table spec, "Table Metadata"), as far as the sink reads
// and writes it. Fields the sink does not know are kept (Extra) and
// written back unchanged, so that a table another engine also maintains
// keeps its properties.
type Metadata struct {
	FormatVersion      int               `json:"format-version"`
	TableUUID          string            `json:"table-uuid"`
	Location           string            `json:"location"`
	LastSequenceNumber int64             `json:"last-sequence-number"`
	LastUpdatedMs      int64             `json:"last-updated-ms"`
	LastColumnID       int               `json:"last-column-id"`
	CurrentSchemaID    int               `json:"current-schema-id"`
	Schemas            []Schema          `json:"schemas"`
	DefaultSpecID      int               `json:"default-spec-id"`
	PartitionSpecs     []PartitionSpec   `json:"partition-specs"`
	LastPartitionID    int               `json:"last-partition-id"`
	DefaultSortOrderID int               `json:"default-sort-order-id"`
	SortOrders         []json.RawMessage `json:"sort-orders"`
	Properties         map[string]string `json:"properties,omitempty"`
	CurrentSnapshotID  int64             `json:"current-snapshot-id"`
	Snapshots          []Snapshot        `json:"snapshots"`
	SnapshotLog        []SnapshotLog     `json:"snapshot-log"`
	MetadataLog        []MetadataLog     `json:"metadata-log"`
	Refs               map[string]Ref    `json:"refs,omitempty"`
	// Extra holds the keys of the file this struct has no field for.
	Extra map[string]json.RawMessage `json:"-"`
}

// Schema is a table schema: a struct of fields with ids.
type Schema struct {
	Type     string  `json:"type"`
	SchemaID int     `json:"schema-id"`
	Fields   []Field `json:"fields"`
}

// Field is a top-level column: tidemark writes primitive types only
// ("long", "boolean", "string", "timestamptz", "decimal(38, s)").
type Field struct {
	ID       int             `json:"id"`
	Name     string          `json:"name"`
	Required bool            `json:"required"`
	Type     json.RawMessage `json:"type"`
	Doc      string          `json:"doc,omitempty"`
}

// TypeName returns the field's type as text: a primitive's name, or the
// JSON of a nested type.
func (f Field) TypeName() string {
	var s string
	if json.Unmarshal(f.Type, &s) == nil {
		return s
	}
	return string(f.Type)
}

// PartitionSpec is a partition spec.
type PartitionSpec struct {
	SpecID int              `json:"spec-id"`
	Fields []PartitionField `json:"fields"`
}

// PartitionField is one field of a partition spec.
type PartitionField struct {
	SourceID  int    `json:"source-id"`
	FieldID   int    `json:"field-id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// Snapshot is one snapshot of the table.
type Snapshot struct {
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber   int64             `json:"sequence-number"`
	TimestampMs      int64             `json:"timestamp-ms"`
	ManifestList     string            `json:"manifest-list"`
	Summary          map[string]string `json:"summary"`
	SchemaID         *int              `json:"schema-id,omitempty"`
}

// SnapshotLog is an entry of the snapshot log.
type SnapshotLog struct {
	TimestampMs int64 `json:"timestamp-ms"`
	SnapshotID  int64 `json:"snapshot-id"`
}

// MetadataLog is an entry of the metadata log.
type MetadataLog struct {
	TimestampMs  int64  `json:"timestamp-ms"`
	MetadataFile string `json:"metadata-file"`
}

// Ref is a named snapshot reference (the branch main).
type Ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

// knownKeys are the keys Metadata has fields for.
var knownKeys = []string{"format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms", "last-column-id",
	"current-schema-id", "schemas", "default-spec-id", "partition-specs", "last-partition-id", "default-sort-order-id",
	"sort-orders", "properties", "current-snapshot-id", "snapshots", "snapshot-log", "metadata-log", "refs"}

// ParseMetadata reads a metadata file's JSON, read from path (named in
// errors). Errors: JSON that does not parse, a format version other than
// 2, and structural faults a commit would carry forward (no current
// schema, a current snapshot that is not listed, duplicate snapshot ids,
// a parent that is not listed, field ids above last-column-id).
func ParseMetadata(path string, b []byte) (*Metadata, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("iceberg metadata %s: %s", path, fmt.Sprintf(format, args...))
	}
	var m Metadata
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fail("%v", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fail("%v", err)
	}
	for k, v := range all {
		if !slices.Contains(knownKeys, k) {
			if m.Extra == nil {
				m.Extra = map[string]json.RawMessage{}
			}
			m.Extra[k] = v
		}
	}
	if m.FormatVersion != 2 {
		return nil, fail("format-version %d: tidemark writes format version 2 tables", m.FormatVersion)
	}
	if _, ok := all["current-snapshot-id"]; !ok {
		m.CurrentSnapshotID = -1
	}
	if m.Schema() == nil {
		return nil, fail("current-schema-id %d is not among the schemas", m.CurrentSchemaID)
	}
	for _, s := range m.Schemas {
		for _, f := range s.Fields {
			if f.ID <= 0 || f.ID > m.LastColumnID {
				return nil, fail("schema %d: field %q has id %d, last-column-id is %d", s.SchemaID, f.Name, f.ID, m.LastColumnID)
			}
		}
	}
	if m.Spec() == nil {
		return nil, fail("default-spec-id %d is not among the partition-specs", m.DefaultSpecID)
	}
	ids := map[int64]bool{}
	for _, s := range m.Snapshots {
		if ids[s.SnapshotID] {
			return nil, fail("snapshot %d listed twice", s.SnapshotID)
		}
		ids[s.SnapshotID] = true
		if s.SequenceNumber > m.LastSequenceNumber {
			return nil, fail("snapshot %d has sequence number %d, last-sequence-number is %d", s.SnapshotID, s.SequenceNumber, m.LastSequenceNumber)
		}
	}
	for _, s := range m.Snapshots {
		if s.ParentSnapshotID != nil && !ids[*s.ParentSnapshotID] && *s.ParentSnapshotID != -1 {
			// Expired parents are allowed by the spec: the ancestry
			// simply ends there.
			continue
		}
	}
	if m.CurrentSnapshotID != -1 && !ids[m.CurrentSnapshotID] {
		return nil, fail("current-snapshot-id %d is not among the snapshots", m.CurrentSnapshotID)
	}
	if r, ok := m.Refs["main"]; ok && r.SnapshotID != m.CurrentSnapshotID {
		return nil, fail("refs.main is snapshot %d, current-snapshot-id %d", r.SnapshotID, m.CurrentSnapshotID)
	}
	return &m, nil
}

// MarshalJSON writes the known fields, then Extra.
func (m *Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	b, err := json.Marshal((*plain)(m))
	if err != nil || len(m.Extra) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range m.Extra {
		all[k] = v
	}
	return json.Marshal(all)
}

// Schema returns the current schema, nil when it is not listed.
func (m *Metadata) Schema() *Schema {
	for i := range m.Schemas {
		if m.Schemas[i].SchemaID == m.CurrentSchemaID {
			return &m.Schemas[i]
		}
	}
	return nil
}

// Spec returns the default partition spec, nil when it is not listed.
func (m *Metadata) Spec() *PartitionSpec {
	for i := range m.PartitionSpecs {
		if m.PartitionSpecs[i].SpecID == m.DefaultSpecID {
			return &m.PartitionSpecs[i]
		}
	}
	return nil
}

// Snapshot returns snapshot id, nil when it is not listed.
func (m *Metadata) Snapshot(id int64) *Snapshot {
	for i := range m.Snapshots {
		if m.Snapshots[i].SnapshotID == id {
			return &m.Snapshots[i]
		}
	}
	return nil
}

// Ancestry returns the current snapshot and its ancestors, newest first,
// as far as they are listed.
func (m *Metadata) Ancestry() []*Snapshot {
	var out []*Snapshot
	seen := map[int64]bool{}
	for s := m.Snapshot(m.CurrentSnapshotID); s != nil && !seen[s.SnapshotID]; {
		seen[s.SnapshotID] = true
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = m.Snapshot(*s.ParentSnapshotID)
	}
	return out
}

// Summary keys of the snapshots tidemark commits: the run (job) and the
// checkpoint whose output the snapshot holds, so that a restore knows
// whether its commit happened.
const (
	SummaryPipeline   = "tidemark.pipeline"
	SummarySink       = "tidemark.sink"
	SummaryJob        = "tidemark.job-id"
	SummaryCheckpoint = "tidemark.checkpoint-id"
)

// committed returns the newest checkpoint of job whose snapshot is in the
// current snapshot's ancestry, and that snapshot (0, nil when none).
func (m *Metadata) committed(sinkName, job string) (int64, *Snapshot) {
	for _, s := range m.Ancestry() {
		if s.Summary[SummarySink] != sinkName || s.Summary[SummaryJob] != job {
			continue
		}
		id, err := strconv.ParseInt(s.Summary[SummaryCheckpoint], 10, 64)
		if err == nil {
			return id, s
		}
	}
	return 0, nil
}
