package iceberg

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink/parquet"
)

// icebergType is the Iceberg type of a column of kind k.
func icebergType(k row.Kind, scale uint8) string {
	switch k {
	case row.KindBool:
		return "boolean"
	case row.KindInt:
		return "long"
	case row.KindDecimal:
		return fmt.Sprintf("decimal(38, %d)", scale)
	case row.KindString:
		return "string"
	case row.KindTime:
		return "timestamptz"
	}
	return ""
}

// SchemaError is returned when a table's schema cannot take the
// pipeline's rows: a column of another type, or a required column the
// pipeline does not write. It names the column.
type SchemaError struct {
	Table, Column string
	Reason        string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("iceberg table %s: column %q: %s; write to another table, or change the table's schema (the data contract does not allow this change)", e.Table, e.Column, e.Reason)
}

// evolve matches the layout's columns with the table's current schema (nil
// for a table to create): a column the table has keeps its field id and
// must have the same type (a column the table requires must also be one
// the pipeline always fills); a column it lacks is added as an optional
// field with the next id. It sets each column's ID and returns the schema
// the sink writes with, and whether it differs from the table's (a new
// schema the next commit adds).
func evolve(table string, l *parquet.Layout, cur *Schema, lastID int) (*Schema, bool, error) {
	if cur == nil {
		s := &Schema{Type: "struct", SchemaID: 0}
		for i := range l.Columns {
			c := &l.Columns[i]
			c.ID = i + 1
			s.Fields = append(s.Fields, Field{ID: c.ID, Name: c.Name, Required: c.Required, Type: typeJSON(icebergType(c.Kind, l.Scale))})
		}
		return s, true, nil
	}
	s := &Schema{Type: "struct", SchemaID: cur.SchemaID, Fields: append([]Field(nil), cur.Fields...)}
	changed := false
	used := map[string]bool{}
	for i := range l.Columns {
		c := &l.Columns[i]
		want := icebergType(c.Kind, l.Scale)
		idx := -1
		for j, f := range s.Fields {
			if strings.EqualFold(f.Name, c.Name) {
				idx = j
			}
		}
		if idx < 0 {
			lastID++
			c.ID = lastID
			s.Fields = append(s.Fields, Field{ID: c.ID, Name: c.Name, Type: typeJSON(want)})
			changed = true
			used[c.Name] = true
			continue
		}
		f := s.Fields[idx]
		used[f.Name] = true
		if got := f.TypeName(); got != want {
			return nil, false, &SchemaError{Table: table, Column: c.Name, Reason: fmt.Sprintf("the table has type %s, the pipeline writes %s", got, want)}
		}
		if f.Required && !c.Required {
			return nil, false, &SchemaError{Table: table, Column: c.Name, Reason: "the table requires a value, the pipeline may write null"}
		}
		c.ID = f.ID
	}
	for _, f := range s.Fields {
		if !used[f.Name] && f.Required {
			return nil, false, &SchemaError{Table: table, Column: f.Name, Reason: "the table requires it and the pipeline has no such column"}
		}
	}
	if changed {
		s.SchemaID = cur.SchemaID + 1
	}
	return s, changed, nil
}

func typeJSON(t string) json.RawMessage {
	b, _ := json.Marshal(t)
	return b
}

// partTerm is one field of the table's partition spec.
type partTerm struct {
	field  PartitionField
	col    int    // layout column it reads
	avro   string // Avro type of its value in manifests
	dir    string // directory name
	hours  bool
	time   bool // a transform of window_start (day or hour)
	kind   row.Kind
	keyIdx int
}

// partitionSpec compiles partition_by into the table's spec: "day" and
// "hour" are Iceberg's day and hour transforms of window_start (event_time
// of a select stage), in UTC (the spec's); a group-key column of type
// string, int, bool or timestamp is an identity partition.
func partitionSpec(by []string, l *parquet.Layout) (*PartitionSpec, []partTerm, error) {
	spec := &PartitionSpec{SpecID: 0, Fields: []PartitionField{}}
	var terms []partTerm
	for i, b := range by {
		t := partTerm{}
		switch b {
		case "day", "hour":
			t.col, t.time, t.hours = 1, true, b == "hour"
			src := l.Columns[1].Name
			t.field = PartitionField{SourceID: l.Columns[1].ID, FieldID: 1000 + i, Name: src + "_" + b, Transform: b}
			t.avro = `{"type":"int","logicalType":"date"}`
			if t.hours {
				t.avro = `"int"`
			}
		default:
			col := -1
			for j, s := range l.Slots {
				if s == parquet.SlotKey && l.Columns[j].Name == b {
					col = j
				}
			}
			if col < 0 {
				var keys []string
				for j, s := range l.Slots {
					if s == parquet.SlotKey {
						keys = append(keys, l.Columns[j].Name)
					}
				}
				return nil, nil, fmt.Errorf("partition_by %q: want day, hour or a group-key column (%s)", b, strings.Join(keys, ", "))
			}
			c := l.Columns[col]
			t.col, t.kind, t.keyIdx = col, c.Kind, l.Index[col]
			switch c.Kind {
			case row.KindString:
				t.avro = `"string"`
			case row.KindInt:
				t.avro = `"long"`
			case row.KindBool:
				t.avro = `"boolean"`
			case row.KindTime:
				t.avro = `{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":true}`
			default:
				return nil, nil, fmt.Errorf("partition_by %q: a %s column is not an identity partition tidemark writes (use a string, int, bool or timestamp key)", b, c.Kind)
			}
			t.field = PartitionField{SourceID: c.ID, FieldID: 1000 + i, Name: c.Name, Transform: "identity"}
		}
		t.dir = t.field.Name
		spec.Fields = append(spec.Fields, t.field)
		terms = append(terms, t)
	}
	return spec, terms, nil
}

// sameSpec reports whether a table's partition spec partitions as ours.
func sameSpec(a, b *PartitionSpec) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		x, y := a.Fields[i], b.Fields[i]
		if x.SourceID != y.SourceID || x.Transform != y.Transform {
			return false
		}
	}
	return true
}

// partitionOf returns a row's partition values and its directory.
func partitionOf(terms []partTerm, r *changelog.Row, buf []byte) ([]any, string) {
	if len(terms) == 0 {
		return nil, ""
	}
	vals := make([]any, len(terms))
	b := buf[:0]
	for i, t := range terms {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, t.dir...)
		b = append(b, '=')
		if t.time {
			if t.hours {
				h := floorDiv(r.WindowStart, 3_600_000)
				vals[i] = int32(h)
				b = fmt.Appendf(b, "%d", h)
			} else {
				d := floorDiv(r.WindowStart, 86_400_000)
				vals[i] = int32(d)
				b = append(b, dayText(d)...)
			}
			continue
		}
		v := r.Key[t.keyIdx]
		if v.IsNull() {
			vals[i] = nil
			b = append(b, "null"...)
			continue
		}
		switch t.kind {
		case row.KindString:
			vals[i] = v.S
			b = parquet.EscapePartValue(b, v.S)
		case row.KindInt:
			vals[i] = v.I
			b = fmt.Appendf(b, "%d", v.I)
		case row.KindBool:
			vals[i] = v.I != 0
			b = fmt.Appendf(b, "%t", v.I != 0)
		case row.KindTime:
			vals[i] = v.I * 1000
			b = fmt.Appendf(b, "%d", v.I*1000)
		}
	}
	return vals, string(b)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// dayText renders days since 1970-01-01 as a date.
func dayText(d int64) string {
	return row.FormatTime(d*86_400_000, nil)[:10]
}
