package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/spec"
)

// reference is the loaded lookup file of spec.Reference: per key text,
// the values of the reference fields the pipeline uses.
//
// With spec.Reference.ValidFrom the file is versioned: versions holds each
// key's versions in valid_from order, and a record takes the one valid at
// its event time. froms are the distinct valid_from instants of the whole
// file in order; asOfLin[i] is the lineage value of the rows whose as-of
// instant falls in [froms[i-1], froms[i]) (index 0: before every version),
// built once so that no row allocates its lineage.
type reference struct {
	key      row.Field
	fields   []row.Field // the reference fields in the source schema
	rows     map[string][]row.Value
	version  string // "sha256:" + the first 12 hex digits of the file's content
	misses   int64  // records whose key the file lacks (at their event time, when versioned)
	versions map[string][]refVersion
	froms    []int64
	asOfLin  []row.Value
}

// refVersion is one version of a key of a versioned reference: its fields'
// values from valid_from (ms since the epoch) on.
type refVersion struct {
	from int64
	vals []row.Value
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
	if r.ValidFrom != "" {
		ref.versions = map[string][]refVersion{}
	}
	var data []byte
	if r.Topic == "" {
		var err error
		if data, err = os.ReadFile(r.Path); err != nil {
			return nil, fmt.Errorf("reference.path: %w", err)
		}
		sum := sha256.Sum256(data)
		ref.version = "sha256:" + hex.EncodeToString(sum[:6])
	}
	add := func(where string, get func(name string) (string, bool)) error {
		k, ok := get(r.Key)
		if !ok {
			return fmt.Errorf("%s: no key column %q", where, r.Key)
		}
		if err := referenceText(where, r.Key, k); err != nil {
			return err
		}
		var from int64
		if r.ValidFrom != "" {
			text, ok := get(r.ValidFrom)
			if !ok || text == "" {
				return fmt.Errorf("%s: column %s (reference.valid_from): null or missing: every version needs its version time", where, r.ValidFrom)
			}
			ms, err := eventtime.ParseRFC3339(text)
			if err != nil {
				return fmt.Errorf("%s: column %s (reference.valid_from): %q: %v", where, r.ValidFrom, text, err)
			}
			from = ms
		}
		vals := make([]row.Value, len(ref.fields))
		for i, f := range ref.fields {
			text, ok := get(f.Name)
			if !ok || text == "" {
				continue // null
			}
			if err := referenceText(where, f.Name, text); err != nil {
				return err
			}
			v, err := parseValue(text, f.Kind)
			if err != nil {
				return fmt.Errorf("%s: column %s: %v", where, f.Name, err)
			}
			vals[i] = v
		}
		if ref.versions != nil {
			for _, v := range ref.versions[k] {
				if v.from == from {
					return fmt.Errorf("%s: key %q listed twice with valid_from %s", where, k, text3339(from))
				}
			}
			ref.versions[k] = append(ref.versions[k], refVersion{from: from, vals: vals})
			ref.rows[k] = nil
			return nil
		}
		if _, dup := ref.rows[k]; dup {
			return fmt.Errorf("%s: key %q listed twice", where, k)
		}
		ref.rows[k] = vals
		return nil
	}
	if r.Topic != "" {
		if err := rt.readReferenceTopic(ref, r, add); err != nil {
			return nil, err
		}
		ref.index()
		return ref, nil
	}
	if strings.HasSuffix(strings.ToLower(r.Path), ".csv") {
		cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
		head, err := cr.Read()
		if err == io.EOF { // encoding/csv's own end of the (in-memory) file
			return nil, fmt.Errorf("%s: empty file: a CSV reference needs a header line", r.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: header: %w", r.Path, err)
		}
		col := map[string]int{}
		for i, h := range head {
			col[h] = i
		}
		need := append([]string{r.Key}, fieldNames(r.Fields)...)
		if r.ValidFrom != "" {
			need = append(need, r.ValidFrom)
		}
		for _, name := range need {
			if _, ok := col[name]; !ok {
				return nil, fmt.Errorf("%s: the header has no column %q (columns: %s)", r.Path, name, strings.Join(head, ", "))
			}
		}
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err != nil {
				if err == io.EOF { // the file's end, never a wrapped one
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
			if err := add(fmt.Sprintf("%s:%d", r.Path, line), get); err != nil {
				return nil, err
			}
		}
		ref.index()
		return ref, nil
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		get, err := jsonGetter(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", r.Path, i+1, err)
		}
		if err := add(fmt.Sprintf("%s:%d", r.Path, i+1), get); err != nil {
			return nil, err
		}
	}
	ref.index()
	return ref, nil
}

// index sorts a versioned reference's versions per key and collects the
// distinct version times of the file.
func (ref *reference) index() {
	if ref.versions == nil {
		return
	}
	for _, vs := range ref.versions {
		sort.Slice(vs, func(i, j int) bool { return vs[i].from < vs[j].from })
		for _, v := range vs {
			ref.froms = append(ref.froms, v.from)
		}
	}
	slices.Sort(ref.froms)
	ref.froms = slices.Compact(ref.froms)
}

// setLineage builds the lineage values of a versioned reference's rows from
// the run's lineage l: the reference's version is the file's hash and the
// newest valid_from at or before the row's as-of instant
// ("sha256:…@2026-09-15T00:00:00Z", "@-" before every version).
func (ref *reference) setLineage(l Lineage) {
	ref.asOfLin = make([]row.Value, len(ref.froms)+1)
	for i := range ref.asOfLin {
		at := "-"
		if i > 0 {
			at = text3339(ref.froms[i-1])
		}
		l.Reference = ref.version + "@" + at
		ref.asOfLin[i] = row.Str(l.String())
	}
}

// lineageOf returns the lineage value of a result row of a run with a
// versioned reference: the reference as of the row's last instant (a
// window's end − 1 ms; an event row's event time), which holds every
// version the row's records were given (each took the version valid at its
// event time, at or before that instant).
func (ref *reference) lineageOf(r *changelog.Row) row.Value {
	t := r.WindowStart
	if r.WindowEnd > r.WindowStart {
		t = r.WindowEnd - 1
	}
	i, found := slices.BinarySearch(ref.froms, t)
	if found {
		i++
	}
	return ref.asOfLin[i]
}

// text3339 renders ms since the epoch in RFC 3339, UTC.
func text3339(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
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
//
// A versioned reference gives the version valid at ts, the record's event
// time (ok false: the event time is null, and so are the fields).
func (ref *reference) fill(r *row.Row, ts int64, ok bool) {
	var vals []row.Value
	if !r.IsNull(ref.key.Index) {
		var buf [64]byte
		k := r.Get(ref.key).AppendText(buf[:0], nil)
		if ref.versions == nil {
			vals = ref.rows[string(k)]
		} else if vs := ref.versions[string(k)]; ok && len(vs) > 0 {
			// The newest version with valid_from ≤ ts.
			i := sort.Search(len(vs), func(i int) bool { return vs[i].from > ts })
			if i > 0 {
				vals = vs[i-1].vals
			}
		}
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
	r := rt.plan.Spec.Reference
	where := r.Path
	if r.Topic != "" {
		where = "kafka topic " + r.Topic
	}
	return &ReferenceSummary{Path: where, Version: rt.ref.version, Keys: len(rt.ref.rows), Misses: rt.ref.misses}
}

func fieldNames(fs spec.FieldTypes) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// jsonGetter decodes a JSON object and returns its fields' text: a string
// as it is, another value as JSON, a null as "" (present).
func jsonGetter(b []byte) (func(name string) (string, bool), error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	return func(name string) (string, bool) {
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			return "", ok
		}
		if !utf8.Valid(raw) {
			// encoding/json would replace the invalid bytes with U+FFFD,
			// merging values that differ: the text as written, which
			// referenceText refuses.
			if len(raw) >= 2 && raw[0] == '"' {
				raw = raw[1 : len(raw)-1]
			}
			return string(raw), true
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
		return string(raw), true
	}, nil
}

// referenceText returns an error naming where (file:line, or the record)
// and the column when a reference value is not valid UTF-8 or holds a NUL
// character (the encoding rule of the sources, format.Text): a NUL makes
// every PostgreSQL commit of a row holding it fail, and invalid bytes
// would be stored differently by each sink. The reference data is
// configuration: the run refuses it before reading any record.
func referenceText(where, column, text string) error {
	if format.Text([]byte(text)) {
		return nil
	}
	b := []byte(text)
	at, what := bytes.IndexByte(b, 0), "a NUL character"
	if at < 0 || !utf8.Valid(b[:at]) {
		at, what = invalidUTF8At(b), "invalid UTF-8"
	}
	return fmt.Errorf("%s: column %s: %s at byte %d of the value: reference values must be valid UTF-8 without NUL characters (PostgreSQL text cannot store a NUL, and invalid bytes would merge or split keys)", where, column, what, at)
}

// invalidUTF8At is the offset of the first invalid UTF-8 sequence in b
// (len(b) when there is none).
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
