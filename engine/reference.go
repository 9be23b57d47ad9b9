package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// reference is the loaded lookup file of spec.Reference: per key text,
// the values of the reference fields the pipeline uses.
type reference struct {
	key     row.Field
	fields  []row.Field // the reference fields in the source schema
	rows    map[string][]row.Value
	version string // "sha256:" + the first 12 hex digits of the file's content
	misses  int64  // records whose key the file lacks
}

// loadReference reads r for the source schema's fields. Errors name the
// file, the line and the column.
func (rt *runtime) loadReference(r *spec.Reference) (*reference, error) {
	s := rt.plan.SourceSchema
	key, ok := s.Lookup(r.Key)
	if !ok {
		return nil, fmt.Errorf("reference.key: %q is not a source field", r.Key)
	}
	ref := &reference{key: key, rows: map[string][]row.Value{}}
	for _, f := range r.Fields {
		if fd, ok := s.Lookup(f.Name); ok {
			ref.fields = append(ref.fields, fd)
		}
	}
	data, err := os.ReadFile(r.Path)
	if err != nil {
		return nil, fmt.Errorf("reference.path: %w", err)
	}
	sum := sha256.Sum256(data)
	ref.version = "sha256:" + hex.EncodeToString(sum[:6])
	add := func(line int, get func(name string) (string, bool)) error {
		k, ok := get(r.Key)
		if !ok {
			return fmt.Errorf("%s:%d: no key column %q", r.Path, line, r.Key)
		}
		vals := make([]row.Value, len(ref.fields))
		for i, f := range ref.fields {
			text, ok := get(f.Name)
			if !ok || text == "" {
				continue // null
			}
			v, err := parseValue(text, f.Kind)
			if err != nil {
				return fmt.Errorf("%s:%d: column %s: %v", r.Path, line, f.Name, err)
			}
			vals[i] = v
		}
		if _, dup := ref.rows[k]; dup {
			return fmt.Errorf("%s:%d: key %q listed twice", r.Path, line, k)
		}
		ref.rows[k] = vals
		return nil
	}
	if strings.HasSuffix(strings.ToLower(r.Path), ".csv") {
		cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
		head, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file: a CSV reference needs a header line", r.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: header: %w", r.Path, err)
		}
		col := map[string]int{}
		for i, h := range head {
			col[h] = i
		}
		for _, name := range append([]string{r.Key}, fieldNames(r.Fields)...) {
			if _, ok := col[name]; !ok {
				return nil, fmt.Errorf("%s: the header has no column %q (columns: %s)", r.Path, name, strings.Join(head, ", "))
			}
		}
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s:%d: %w", r.Path, line, err)
			}
			get := func(name string) (string, bool) {
				i, ok := col[name]
				if !ok || i >= len(rec) {
					return "", false
				}
				return rec[i], true
			}
			if err := add(line, get); err != nil {
				return nil, err
			}
		}
		return ref, nil
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(l, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", r.Path, i+1, err)
		}
		get := func(name string) (string, bool) {
			raw, ok := obj[name]
			if !ok || string(raw) == "null" {
				return "", ok
			}
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s, true
			}
			return string(raw), true
		}
		if err := add(i+1, get); err != nil {
			return nil, err
		}
	}
	return ref, nil
}

// parseValue reads a reference value's text as kind k.
func parseValue(text string, k row.Kind) (row.Value, error) {
	switch k {
	case row.KindInt:
		n, err := strconv.ParseInt(text, 10, 64)
		return row.Int(n), err
	case row.KindDecimal:
		d, err := row.ParseDecimal([]byte(text))
		return row.Dec(d), err
	case row.KindBool:
		b, err := strconv.ParseBool(text)
		return row.Bool(b), err
	case row.KindTime:
		ms, err := eventtime.ParseRFC3339(text)
		return row.Time(ms), err
	}
	return row.Str(text), nil
}

// fill sets the reference fields of r from its key (nulls for a key the
// file lacks, or a null key).
func (ref *reference) fill(r *row.Row) {
	var vals []row.Value
	if !r.IsNull(ref.key.Index) {
		var buf [64]byte
		vals = ref.rows[string(r.Get(ref.key).AppendText(buf[:0], nil))]
	}
	if vals == nil {
		ref.misses++
	}
	for i, f := range ref.fields {
		if vals == nil || vals[i].IsNull() {
			r.SetNull(f.Index)
			continue
		}
		_ = r.Set(f, vals[i])
	}
}

func (rt *runtime) refSummary() *ReferenceSummary {
	if rt.ref == nil {
		return nil
	}
	return &ReferenceSummary{Path: rt.plan.Spec.Reference.Path, Version: rt.ref.version, Keys: len(rt.ref.rows), Misses: rt.ref.misses}
}

func fieldNames(fs spec.FieldTypes) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
