package row

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"unsafe"
)

// SlotBytes returns the bytes of r's slots: its int, decimal and string
// slots and its null words (strings by their headers).
func (r *Row) SlotBytes() int {
	return 8*(len(r.I)+len(r.null)) + int(unsafe.Sizeof(Decimal{}))*len(r.D) + int(unsafe.Sizeof(""))*len(r.S)
}

// Field is one named, typed column of a Schema.
type Field struct {
	Name  string
	Kind  Kind
	Index int // position in Schema.Fields; also the field's null bit
	Slot  int // index into Row.I, Row.D or Row.S, by Kind
}

// Schema is an ordered set of typed fields and the slot layout of the rows
// that carry them. Build one with Add; it is read-only once rows exist.
type Schema struct {
	Fields []Field
	byName map[string]int
	nI     int
	nD     int
	nS     int
}

// NewSchema returns an empty schema.
func NewSchema() *Schema { return &Schema{byName: map[string]int{}} }

// NewSchemaSize returns an empty schema with room for n fields: the
// fields' slice and the name index are allocated once for n fields
// instead of growing as Add adds them (a plan knows how many fields a
// stage's layout has). n below 0 is taken as 0; a schema grows past n
// as NewSchema's does.
func NewSchemaSize(n int) *Schema {
	n = max(n, 0)
	return &Schema{Fields: make([]Field, 0, n), byName: make(map[string]int, n)}
}

// Clone returns a copy of s that Add extends without changing s (a
// stage's layout starting as its input's), with room for extra more
// fields in its list of fields; the name index is copied as it is and
// grows when it must.
func (s *Schema) Clone(extra int) *Schema {
	c := &Schema{Fields: make([]Field, len(s.Fields), len(s.Fields)+max(extra, 0)), nI: s.nI, nD: s.nD, nS: s.nS}
	copy(c.Fields, s.Fields)
	c.byName = maps.Clone(s.byName)
	if c.byName == nil {
		c.byName = map[string]int{}
	}
	return c
}

// Add appends a field and returns it. It returns an error when the name is
// empty, already present, or the kind is KindNull.
func (s *Schema) Add(name string, k Kind) (Field, error) {
	if name == "" {
		return Field{}, fmt.Errorf("empty field name")
	}
	if _, dup := s.byName[name]; dup {
		return Field{}, fmt.Errorf("field %q defined twice", name)
	}
	f := Field{Name: name, Kind: k, Index: len(s.Fields)}
	switch {
	case k.InI():
		f.Slot = s.nI
		s.nI++
	case k == KindDecimal:
		f.Slot = s.nD
		s.nD++
	case k == KindString:
		f.Slot = s.nS
		s.nS++
	default:
		return Field{}, fmt.Errorf("field %q: cannot store kind %s", name, k)
	}
	s.Fields = append(s.Fields, f)
	s.byName[name] = f.Index
	return f, nil
}

// Lookup returns the field named name.
func (s *Schema) Lookup(name string) (Field, bool) {
	i, ok := s.byName[name]
	if !ok {
		return Field{}, false
	}
	return s.Fields[i], true
}

// Len returns the number of fields.
func (s *Schema) Len() int { return len(s.Fields) }

// NewRow returns a row with slots for every field of s, all null.
func (s *Schema) NewRow() *Row {
	r := &Row{}
	s.Shape(r)
	return r
}

// Shape sizes r's slices for s (reusing their capacity) and sets every field
// null.
func (s *Schema) Shape(r *Row) {
	r.I = grow(r.I, s.nI)
	r.D = grow(r.D, s.nD)
	r.S = grow(r.S, s.nS)
	n := (len(s.Fields) + 63) / 64
	r.null = grow(r.null, n)
	r.SetAllNull(len(s.Fields))
}

// Clear sets every field of r null, as Shape does, without storing r's
// slices again when they already have s's lengths (a row reused for one
// schema, shaped once).
func (s *Schema) Clear(r *Row) {
	if len(r.I) != s.nI || len(r.D) != s.nD || len(r.S) != s.nS || len(r.null) != (len(s.Fields)+63)/64 {
		s.Shape(r)
		return
	}
	r.SetAllNull(len(s.Fields))
}

// ExtendFrom makes r hold every field of s while keeping the values of the
// first `from` fields (decoded by a reader that knew only those): slices
// grow as needed and fields from index `from` on are set null. Use it when
// s extends the schema r was shaped for (derived fields).
func (s *Schema) ExtendFrom(r *Row, from int) {
	// A slice already long enough is not stored again (a row reused for
	// one schema: no write barrier per row).
	if len(r.I) < s.nI {
		r.I = growKeep(r.I, s.nI)
	}
	if len(r.D) < s.nD {
		r.D = growKeep(r.D, s.nD)
	}
	if len(r.S) < s.nS {
		r.S = growKeep(r.S, s.nS)
	}
	words := len(r.null)
	if n := (len(s.Fields) + 63) / 64; words < n {
		r.null = growKeep(r.null, n)
	}
	// Words taken back from spare capacity still hold the bits of an
	// earlier, wider shape: clear them before marking the new fields null.
	clear(r.null[min(words, len(r.null)):])
	for f := from; f < len(s.Fields); f++ {
		r.SetNull(f)
	}
}

func growKeep[T any](b []T, n int) []T {
	if len(b) >= n {
		return b
	}
	if cap(b) >= n {
		return b[:n]
	}
	out := make([]T, n)
	copy(out, b)
	return out
}

func grow[T any](b []T, n int) []T {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]T, n)
}

// Row holds one record's field values in typed slots laid out by a Schema.
// A field is null when its null bit is set. The zero Row has no fields.
//
// Strings in S may point into a decoder's buffer; a Row is valid only until
// its producer reuses that buffer (the end of the batch). Copy what you keep.
type Row struct {
	I    []int64
	D    []Decimal
	S    []string
	null []uint64
}

// IsNull reports whether field f is null.
func (r *Row) IsNull(f int) bool { return r.null[f>>6]&(1<<(uint(f)&63)) != 0 }

// SetNull marks field f null.
func (r *Row) SetNull(f int) { r.null[f>>6] |= 1 << (uint(f) & 63) }

// SetValid marks field f not null.
func (r *Row) SetValid(f int) { r.null[f>>6] &^= 1 << (uint(f) & 63) }

// SetValidWord marks not null the fields 64w … 64w+63 whose bits are set
// in mask (bit i: field 64w+i), as SetValid does for each of them: a
// caller that stores several fields sets their bits with one write.
func (r *Row) SetValidWord(w int, mask uint64) { r.null[w] &^= mask }

// SetAllNull marks the first n fields null.
func (r *Row) SetAllNull(n int) {
	if len(r.null) == 1 && n <= 64 {
		// One word (64 fields or fewer): the loops' result in one store
		// (a shift by 64 is 0, so n = 64 gives every bit).
		r.null[0] = 1<<uint(n) - 1
		return
	}
	for i := range r.null {
		r.null[i] = 0
	}
	for i := 0; i < n; i += 64 {
		k := n - i
		if k >= 64 {
			r.null[i>>6] = ^uint64(0)
		} else {
			r.null[i>>6] = (1 << uint(k)) - 1
		}
	}
}

// NullCount returns the number of null fields.
func (r *Row) NullCount() int {
	c := 0
	for _, w := range r.null {
		c += bits.OnesCount64(w)
	}
	return c
}

// Get returns field f as a boxed Value.
func (r *Row) Get(f Field) Value {
	if r.IsNull(f.Index) {
		return Null
	}
	switch f.Kind {
	case KindDecimal:
		return Value{Kind: KindDecimal, D: r.D[f.Slot]}
	case KindString:
		return Value{Kind: KindString, S: r.S[f.Slot]}
	default:
		return Value{Kind: f.Kind, I: r.I[f.Slot]}
	}
}

// AppendValues appends fields fs of r to dst as boxed Values (what Get
// returns for each) and returns the extended slice: one pass over the
// fields, each value written in place (a loop calling Get, which copies
// the Field and the Value, took 48-60 ns against 20-24 ns for five fields;
// go test -bench).
func (r *Row) AppendValues(dst []Value, fs []Field) []Value {
	n := len(dst)
	dst = slices.Grow(dst, len(fs))[:n+len(fs)]
	out := dst[n:]
	for i := range fs {
		f := &fs[i]
		v := &out[i]
		switch {
		case r.IsNull(f.Index):
			*v = Null
		case f.Kind == KindDecimal:
			*v = Value{Kind: KindDecimal, D: r.D[f.Slot]}
		case f.Kind == KindString:
			*v = Value{Kind: KindString, S: r.S[f.Slot]}
		default:
			*v = Value{Kind: f.Kind, I: r.I[f.Slot]}
		}
	}
	return dst
}

// Set stores v into field f. v must be null or of f's kind; an int value is
// accepted for a decimal field and converted exactly. It returns an error
// for any other kind.
func (r *Row) Set(f Field, v Value) error {
	if v.Kind == KindNull {
		r.SetNull(f.Index)
		return nil
	}
	switch {
	case v.Kind == f.Kind:
	case v.Kind == KindInt && f.Kind == KindDecimal:
		v = Dec(DecimalFromInt(v.I))
	default:
		return fmt.Errorf("field %q is %s, value is %s", f.Name, f.Kind, v.Kind)
	}
	switch f.Kind {
	case KindDecimal:
		r.D[f.Slot] = v.D
	case KindString:
		r.S[f.Slot] = v.S
	default:
		r.I[f.Slot] = v.I
	}
	r.SetValid(f.Index)
	return nil
}

// CopyFrom makes r a deep copy of src (strings are copied out of any
// decoder buffer).
func (r *Row) CopyFrom(src *Row) {
	r.I = append(r.I[:0], src.I...)
	r.D = append(r.D[:0], src.D...)
	r.S = r.S[:0]
	for _, s := range src.S {
		r.S = append(r.S, cloneString(s))
	}
	r.null = append(r.null[:0], src.null...)
}

func cloneString(s string) string { return strings.Clone(s) }

// CopyShallow makes r a copy of src that shares src's strings (their bytes
// are not copied): for a copy that lives no longer than the memory src's
// strings point into. It allocates only when r's slices are too small.
func (r *Row) CopyShallow(src *Row) {
	r.I = append(r.I[:0], src.I...)
	r.D = append(r.D[:0], src.D...)
	r.S = append(r.S[:0], src.S...)
	r.null = append(r.null[:0], src.null...)
}

// Arena holds the slots of row copies (Copy): rows copied into an arena
// share its backing arrays instead of allocating slices of their own. A
// full array is replaced, not grown, so earlier copies stay valid; Reset
// makes the memory reusable (invalidating every copy).
type Arena struct {
	i []int64
	d []Decimal
	s []string
	n []uint64
}

// Copy makes dst a copy of src whose slots live in the arena and whose
// strings are src's (not copied: see CopyShallow).
func (a *Arena) Copy(dst, src *Row) {
	dst.I = arenaCopy(&a.i, src.I)
	dst.D = arenaCopy(&a.d, src.D)
	dst.S = arenaCopy(&a.s, src.S)
	dst.null = arenaCopy(&a.n, src.null)
}

// Reset empties the arena for reuse.
func (a *Arena) Reset() {
	a.i = a.i[:0]
	a.d = a.d[:0]
	clear(a.s)
	a.s = a.s[:0]
	a.n = a.n[:0]
}

func arenaCopy[T any](buf *[]T, src []T) []T {
	b := *buf
	if len(b)+len(src) > cap(b) {
		b = make([]T, 0, max(2*cap(b), 1024, len(src)))
	}
	start := len(b)
	b = append(b, src...)
	*buf = b
	return b[start:len(b):len(b)]
}
