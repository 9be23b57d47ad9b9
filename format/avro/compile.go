package avro

import (
	"fmt"
	"strings"

	"github.com/twmb/avro"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
)

// Reader is the reader's side of a schema resolution (format.Projection):
// the pipeline's fields, which writer field each reads, and constants for
// the fields a writer schema lacks.
type Reader = format.Projection

// opcode is what an op reads from the bytes.
type opcode uint8

const (
	opNull opcode = iota
	opBool
	opInt
	opLong
	opFloat
	opDouble
	opBytes
	opString
	opFixed
	opEnum
	opUnion
	opArray
	opMap
	opRecord // a record reached through a union, array or map: sub[0]
)

// op reads one value of the writer's schema.
type op struct {
	code  opcode
	cv    format.Conv
	tgt   int32 // index into Program.targets, -1 without one
	scale uint8 // format.ConvDecimal, format.ConvDecimalString
	size  int   // opFixed
	syms  []string
	sub   []*seq // opUnion: a seq per branch; opArray, opMap: the element; opRecord: the fields
	// what names the writer type in error messages ("Avro string").
	what string
}

// seq is a sequence of ops: a record's fields, a union branch, an
// array's element.
type seq struct {
	ops []op
	// zero reports that the seq reads no bytes at all (null, an empty
	// record, fixed of size 0): arrays of it are skipped without a loop.
	zero bool
}

// target is one pipeline field a Program fills.
type target = format.Target

// Program decodes records written with one writer schema into rows of a
// Reader's fields. Build one with Compile. It is not safe for concurrent
// use (it holds a scratch buffer, and the timestamp parsers it shares with
// the Reader's Fields cache a zone period): use one per goroutine.
type Program struct {
	// scratch holds number text while a value is converted: a Program
	// decodes one record at a time (use one per goroutine).
	scratch  []byte
	root     *seq
	targets  []target
	defaults []format.Default
	// Unmatched lists the pipeline fields the writer schema has no field
	// for (their values are Reader.Defaults or null).
	Unmatched []string
}

// maxSchemaDepth bounds nested types in a writer schema (records in
// records, unions, arrays).
const maxSchemaDepth = 64

// Compile builds the Program that reads records of the writer schema w
// (a record) into the fields of rd. A writer field matches the pipeline
// field of its name (or the one whose Rename names it); fields no
// pipeline field reads are skipped. A writer type that cannot give a
// field's kind (see the package documentation) compiles to a per-record
// type error, so that records of a union's other branches still decode.
// Errors: w is not a record, a Rename or Defaults entry names no pipeline
// field, or w nests deeper than 64 levels.
func Compile(w *avro.Schema, rd Reader) (*Program, error) {
	if rd.Fields.Schema == nil {
		return nil, fmt.Errorf("avro: Reader.Fields.Schema is nil")
	}
	root := w.Root().ExpandReferences()
	if root.Type != "record" && root.Type != "error" {
		return nil, fmt.Errorf("avro: the writer schema is %s, not a record", describeNode(root))
	}
	c := &compiler{paths: map[string]int32{}, named: map[string]*avro.SchemaNode{}, skips: map[*avro.SchemaNode]*seq{}}
	p := &Program{scratch: make([]byte, 0, 64)}
	targets, paths, err := rd.Targets()
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	p.targets, c.paths = targets, paths
	c.targets = p.targets
	collectNamed(root, c.named, 0)
	rootSeq := &seq{}
	if err := c.record(rootSeq, root, "", 0); err != nil {
		return nil, err
	}
	rootSeq.zero = zeroWidth(rootSeq)
	p.root = rootSeq
	found := map[int32]bool{}
	for _, i := range c.matched {
		found[i] = true
	}
	for _, i := range c.paths {
		if !found[i] {
			p.Unmatched = append(p.Unmatched, p.targets[i].F.Name)
		}
	}
	sortStrings(p.Unmatched)
	defaults, err := rd.DefaultsFor(c.paths, func(i int32) bool { return found[i] })
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	p.defaults = defaults
	return p, nil
}

// compiler holds the state of one Compile.
type compiler struct {
	paths   map[string]int32 // writer path → target
	targets []target
	matched []int32
	named   map[string]*avro.SchemaNode // full name → definition (for references left by cycles)
	skips   map[*avro.SchemaNode]*seq   // skip programs of named types, for recursion
}

// record appends the ops of record n's fields to s; prefix is the dotted
// path of n ("" at the top).
func (c *compiler) record(s *seq, n *avro.SchemaNode, prefix string, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("avro: the writer schema nests deeper than %d levels", maxSchemaDepth)
	}
	for i := range n.Fields {
		fd := &n.Fields[i]
		path := fd.Name
		if prefix != "" {
			path = prefix + "." + fd.Name
		}
		if err := c.value(s, &fd.Type, path, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// value appends the op reading one value of type n at path to s.
func (c *compiler) value(s *seq, n *avro.SchemaNode, path string, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("avro: the writer schema nests deeper than %d levels", maxSchemaDepth)
	}
	n = c.resolve(n)
	if !format.Wants(c.paths, path) {
		sk, err := c.skip(n, depth)
		if err != nil {
			return err
		}
		s.ops = append(s.ops, sk.ops...)
		return nil
	}
	switch n.Type {
	case "record", "error":
		if _, exact := c.paths[path]; exact {
			// A pipeline field names the record itself: a type error
			// per record, and the nested fields are still read.
			ti := c.match(path)
			o := op{code: opNull, cv: format.ConvBad, tgt: ti, what: "Avro record"}
			s.ops = append(s.ops, o)
		}
		return c.record(s, n, path, depth)
	case "union":
		o := op{code: opUnion, tgt: -1, what: "Avro union"}
		for i := range n.Branches {
			b := &seq{}
			if err := c.value(b, &n.Branches[i], path, depth+1); err != nil {
				return err
			}
			b.zero = zeroWidth(b)
			o.sub = append(o.sub, b)
		}
		s.ops = append(s.ops, o)
		return nil
	}
	ti, exact := c.paths[path]
	if !exact {
		// A path under a non-record (into an array, a map, a scalar):
		// nothing there for the pipeline.
		sk, err := c.skip(n, depth)
		if err != nil {
			return err
		}
		s.ops = append(s.ops, sk.ops...)
		return nil
	}
	c.matched = append(c.matched, ti)
	o, err := c.leaf(n, depth)
	if err != nil {
		return err
	}
	o.tgt = ti
	o.cv = convFor(n, o, c.targets[ti])
	s.ops = append(s.ops, o)
	return nil
}

// match records that target path is read and returns its index.
func (c *compiler) match(path string) int32 {
	ti := c.paths[path]
	c.matched = append(c.matched, ti)
	return ti
}

// resolve returns the definition a name reference (left by a cycle)
// points to, or n.
func (c *compiler) resolve(n *avro.SchemaNode) *avro.SchemaNode {
	if primitiveOrComplex(n.Type) {
		return n
	}
	if d, ok := c.named[n.Type]; ok {
		return d
	}
	if d, ok := c.named[qualify(n.Namespace, n.Type)]; ok {
		return d
	}
	return n
}

// leaf returns the op of a non-record, non-union value (its reading
// part; conversion and target are set by the caller).
func (c *compiler) leaf(n *avro.SchemaNode, depth int) (op, error) {
	o := op{tgt: -1, what: describeNode(n)}
	switch n.Type {
	case "null":
		o.code = opNull
	case "boolean":
		o.code = opBool
	case "int":
		o.code = opInt
	case "long":
		o.code = opLong
	case "float":
		o.code = opFloat
	case "double":
		o.code = opDouble
	case "bytes":
		o.code = opBytes
	case "string":
		o.code = opString
	case "fixed":
		o.code, o.size = opFixed, n.Size
	case "enum":
		o.code, o.syms = opEnum, n.Symbols
	case "array", "map":
		sk, err := c.skip(n, depth)
		if err != nil {
			return o, err
		}
		return sk.ops[0], nil
	default:
		return o, fmt.Errorf("avro: unknown type %q in the writer schema", n.Type)
	}
	if n.LogicalType == "decimal" && (n.Type == "bytes" || n.Type == "fixed") {
		if n.Scale < 0 || n.Scale > row.MaxDecimalScale {
			o.scale = 255 // refused per record: more digits than tidemark keeps
		} else {
			o.scale = uint8(n.Scale)
		}
	}
	return o, nil
}

// skip returns the seq that reads and drops a value of type n.
func (c *compiler) skip(n *avro.SchemaNode, depth int) (*seq, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("avro: the writer schema nests deeper than %d levels", maxSchemaDepth)
	}
	n = c.resolve(n)
	if s, ok := c.skips[n]; ok {
		if s == nil {
			return nil, fmt.Errorf("avro: internal: recursive skip of %s", n.Name)
		}
		return s, nil
	}
	s := &seq{}
	switch n.Type {
	case "record", "error":
		// Records are read as a sub-program so that a recursive record
		// (a linked list) compiles to a finite tree.
		inner := &seq{}
		c.skips[n] = &seq{ops: []op{{code: opRecord, tgt: -1, sub: []*seq{inner}, what: "Avro record"}}}
		for i := range n.Fields {
			fs, err := c.skip(&n.Fields[i].Type, depth+1)
			if err != nil {
				return nil, err
			}
			inner.ops = append(inner.ops, fs.ops...)
		}
		inner.zero = zeroWidth(inner)
		s = c.skips[n]
		s.zero = inner.zero
		return s, nil
	case "union":
		o := op{code: opUnion, tgt: -1, what: "Avro union"}
		for i := range n.Branches {
			b, err := c.skip(&n.Branches[i], depth+1)
			if err != nil {
				return nil, err
			}
			o.sub = append(o.sub, b)
		}
		s.ops = []op{o}
	case "array", "map":
		el := n.Items
		code := opArray
		if n.Type == "map" {
			el, code = n.Values, opMap
		}
		if el == nil {
			return nil, fmt.Errorf("avro: %s without an element type", n.Type)
		}
		es, err := c.skip(el, depth+1)
		if err != nil {
			return nil, err
		}
		s.ops = []op{{code: code, tgt: -1, sub: []*seq{es}, what: "Avro " + n.Type}}
	default:
		o, err := c.leaf(n, depth)
		if err != nil {
			return nil, err
		}
		s.ops = []op{o}
	}
	s.zero = zeroWidth(s)
	return s, nil
}

// zeroWidth reports whether a seq reads no bytes whatever the data.
func zeroWidth(s *seq) bool {
	for i := range s.ops {
		o := &s.ops[i]
		switch {
		case o.code == opNull:
		case o.code == opFixed && o.size == 0:
		case o.code == opRecord && o.sub[0].zero:
		default:
			return false
		}
	}
	return true
}

// convFor is how a value of writer type n (read by o) reaches target t:
// Avro's logical timestamps and dates, and an enum's symbol read as text,
// here; the rest by format.ConvFor.
func convFor(n *avro.SchemaNode, o op, t target) format.Conv {
	k := t.F.Kind
	dec := n.LogicalType == "decimal" && (n.Type == "bytes" || n.Type == "fixed")
	switch o.code {
	case opNull:
		return format.ConvSkip // null: the field stays null
	case opBool:
		return format.ConvFor(format.WriterBool, &t)
	case opInt, opLong:
		switch lt := n.LogicalType; {
		case k == row.KindTime && lt == "timestamp-millis" && o.code == opLong:
			return format.ConvTsMillis
		case k == row.KindTime && lt == "timestamp-micros" && o.code == opLong:
			return format.ConvTsMicros
		case k == row.KindTime && lt == "timestamp-nanos" && o.code == opLong:
			return format.ConvTsNanos
		case k == row.KindTime && lt == "date" && o.code == opInt:
			return format.ConvDate
		case k == row.KindTime && lt != "":
			return format.ConvBad // another logical type is no epoch number
		}
		return format.ConvFor(format.WriterInt, &t)
	case opFloat, opDouble:
		return format.ConvFor(format.WriterFloat, &t)
	case opBytes, opFixed:
		switch {
		case dec:
			return format.ConvFor(format.WriterDecimal, &t)
		case o.code == opBytes:
			return format.ConvFor(format.WriterBytes, &t)
		}
	case opString:
		return format.ConvFor(format.WriterString, &t)
	case opEnum:
		if k == row.KindBool || k == row.KindInt || k == row.KindDecimal {
			return format.ConvEnumText
		}
		return format.ConvFor(format.WriterEnum, &t)
	}
	return format.ConvBad
}

// describeNode names an Avro type for messages: "Avro long
// (timestamp-millis)", "Avro record Order".
func describeNode(n *avro.SchemaNode) string {
	s := "Avro " + n.Type
	switch {
	case n.LogicalType == "decimal":
		s += fmt.Sprintf(" (decimal(%d,%d))", n.Precision, n.Scale)
	case n.LogicalType != "":
		s += " (" + n.LogicalType + ")"
	case n.Name != "" && (n.Type == "record" || n.Type == "enum" || n.Type == "fixed"):
		s += " " + n.Name
	}
	return s
}

// primitiveOrComplex reports whether t is a type keyword rather than a
// name reference.
func primitiveOrComplex(t string) bool {
	switch t {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "error", "enum", "array", "map", "fixed", "union":
		return true
	}
	return false
}

// collectNamed indexes the named types of a tree by full name.
func collectNamed(n *avro.SchemaNode, out map[string]*avro.SchemaNode, depth int) {
	if n == nil || depth > 4*maxSchemaDepth {
		return
	}
	switch n.Type {
	case "record", "error", "enum", "fixed":
		if n.Name != "" {
			full := qualify(n.Namespace, n.Name)
			if _, ok := out[full]; !ok {
				out[full] = n
			}
			if _, ok := out[n.Name]; !ok {
				out[n.Name] = n
			}
		}
	}
	for i := range n.Fields {
		collectNamed(&n.Fields[i].Type, out, depth+1)
	}
	for i := range n.Branches {
		collectNamed(&n.Branches[i], out, depth+1)
	}
	collectNamed(n.Items, out, depth+1)
	collectNamed(n.Values, out, depth+1)
}

func qualify(ns, name string) string {
	if ns == "" || strings.Contains(name, ".") {
		return name
	}
	return ns + "." + name
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
