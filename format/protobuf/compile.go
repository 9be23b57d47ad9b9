package protobuf

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
)

// Reader is the reader's side of decoding (format.Projection): the
// pipeline's fields, which message field each reads, and constants for
// the fields a message type lacks.
type Reader = format.Projection

// num is how a varint or fixed field's bits are read.
type num uint8

const (
	nSigned   num = iota // int32, int64: two's complement varint
	nZigzag              // sint32, sint64
	nUnsigned            // uint32, uint64
	nFixed32             // fixed32 (unsigned)
	nSfixed32            // sfixed32
	nFixed64             // fixed64 (unsigned)
	nSfixed64            // sfixed64
	nBool
	nEnum
	nFloat
	nDouble
	nBytes // string, bytes, messages
)

// field is one field number of a message the Program reads.
type field struct {
	number protoreflect.FieldNumber
	num    num
	cv     format.Conv
	tgt    int32 // index into Program.targets, -1 for a message walked for nested targets
	is32   bool  // int32, sint32, uint32 kinds: the value is truncated to 32 bits
	wire   byte  // the wire type the field's type is written with (packed repeated aside)
	list   bool  // repeated: skipped (the pipeline cannot address elements)
	enum   protoreflect.EnumValueDescriptors
	sub    *msg // a message walked for nested targets (tgt -1), or a well-known value
	what   string
}

// msg is the compiled reading of one message type.
type msg struct {
	// byNum holds the fields the Program reads, by number; dense for
	// small numbers.
	dense  []*field
	sparse map[protoreflect.FieldNumber]*field
	// zero lists the targets of implicit-presence scalars (proto3 fields
	// without `optional`) and their values when absent: the type's zero
	// value (0, "", false, the enum's value 0) for a field of the same
	// family; not listed (null) for text read as another kind or a
	// number read as a timestamp.
	zero []zeroValue
}

// zeroValue is the value of an absent implicit-presence field.
type zeroValue struct {
	tgt int32
	v   row.Value
}

func (m *msg) lookup(n protoreflect.FieldNumber) *field {
	if int(n) < len(m.dense) {
		return m.dense[n]
	}
	return m.sparse[n]
}

func (m *msg) add(f *field) {
	const maxDense = 256
	if f.number < maxDense {
		for int(f.number) >= len(m.dense) {
			m.dense = append(m.dense, nil)
		}
		m.dense[f.number] = f
		return
	}
	if m.sparse == nil {
		m.sparse = map[protoreflect.FieldNumber]*field{}
	}
	m.sparse[f.number] = f
}

// target is one pipeline field a Program fills.
type target = format.Target

// Program decodes messages of one type into rows of a Reader's fields.
// Build one with Compile. Like format/avro's Program it is not safe for
// concurrent use (a scratch buffer, the Reader's timestamp parsers): use
// one per goroutine.
type Program struct {
	// scratch holds number text while a value is converted: a Program
	// decodes one record at a time (use one per goroutine).
	scratch  []byte
	root     *msg
	targets  []target
	defaults []format.Default
	// Unmatched lists the pipeline fields the message type has no field
	// for (their values are Reader.Defaults or null).
	Unmatched []string
	// Message is the message type's full name.
	Message string
}

// maxSchemaDepth bounds nested message types a Program walks.
const maxSchemaDepth = 64

// Compile builds the Program that reads messages of type md into the
// fields of rd. A message field matches the pipeline field of its name
// (as written in the .proto file; dotted paths reach into nested
// messages), or the one whose Rename names it. Errors: a Rename or
// Defaults entry names no pipeline field, or a default of another kind.
func Compile(md protoreflect.MessageDescriptor, rd Reader) (*Program, error) {
	if rd.Fields.Schema == nil {
		return nil, fmt.Errorf("protobuf: Reader.Fields.Schema is nil")
	}
	p := &Program{Message: string(md.FullName()), scratch: make([]byte, 0, 64)}
	targets, paths, err := rd.Targets()
	if err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	p.targets = targets
	c := &compiler{paths: paths, targets: p.targets, found: map[int32]bool{}}
	root, err := c.message(md, "", 0)
	if err != nil {
		return nil, err
	}
	p.root = root
	for _, i := range paths {
		if !c.found[i] {
			p.Unmatched = append(p.Unmatched, p.targets[i].F.Name)
		}
	}
	sort.Strings(p.Unmatched)
	defaults, err := rd.DefaultsFor(paths, func(i int32) bool { return c.found[i] })
	if err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	p.defaults = defaults
	return p, nil
}

type compiler struct {
	paths   map[string]int32
	targets []target
	found   map[int32]bool
}

// message compiles the fields of md under prefix.
func (c *compiler) message(md protoreflect.MessageDescriptor, prefix string, depth int) (*msg, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("protobuf: message %s nests deeper than %d levels", md.FullName(), maxSchemaDepth)
	}
	m := &msg{}
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		path := string(fd.Name())
		if prefix != "" {
			path = prefix + "." + path
		}
		if !format.Wants(c.paths, path) {
			continue // unknown to the Program: skipped by wire type
		}
		f := &field{number: fd.Number(), tgt: -1, what: describe(fd), wire: wireOf(fd)}
		ti, exact := c.paths[path]
		if fd.IsList() || fd.IsMap() {
			f.list = true
			if exact {
				c.found[ti] = true
				f.tgt, f.cv = ti, format.ConvBad
			}
			m.add(f)
			continue
		}
		setNum(f, fd)
		if exact {
			c.found[ti] = true
			f.tgt = ti
			f.cv = convFor(fd, c.targets[ti])
			if f.cv == format.ConvTimestamp || f.cv == format.ConvDecimal || f.cv == format.ConvDecimalString {
				f.sub = &msg{}
			} else if w := wrapped(fd); w != nil && f.cv != format.ConvBad {
				// A wrapper (google.protobuf.Int64Value …): its field 1
				// is the value, an absent wrapper is null, a present one
				// without field 1 holds the zero value.
				inner := &field{number: 1, tgt: ti, what: describe(w), wire: wireOf(w), cv: f.cv}
				setNum(inner, w)
				inner.is32 = is32(w)
				inner.enum = enumValues(w)
				f.sub = &msg{}
				if z, ok := zeroOf(w, inner.cv); ok {
					f.sub.zero = append(f.sub.zero, zeroValue{ti, z})
				}
				f.sub.add(inner)
				f.tgt, f.cv, f.num = -1, format.ConvSkip, nBytes
				m.add(f)
				continue
			}
			f.is32 = is32(fd)
			f.enum = enumValues(fd)
			if !fd.HasPresence() {
				if z, ok := zeroOf(fd, f.cv); ok {
					m.zero = append(m.zero, zeroValue{ti, z})
				}
			}
			m.add(f)
			continue
		}
		// A message on the way to nested targets.
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			continue // a path under a scalar: nothing for the pipeline
		}
		sub, err := c.message(fd.Message(), path, depth+1)
		if err != nil {
			return nil, err
		}
		f.sub = sub
		f.num = nBytes
		m.add(f)
	}
	return m, nil
}

// wrapped returns the value field of a google.protobuf wrapper message
// type, or nil.
func wrapped(fd protoreflect.FieldDescriptor) protoreflect.FieldDescriptor {
	if fd.Kind() != protoreflect.MessageKind {
		return nil
	}
	md := fd.Message()
	switch md.FullName() {
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return md.Fields().ByNumber(1)
	}
	return nil
}

func enumValues(fd protoreflect.FieldDescriptor) protoreflect.EnumValueDescriptors {
	if fd.Kind() == protoreflect.EnumKind {
		return fd.Enum().Values()
	}
	return nil
}

func is32(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind:
		return true
	}
	return false
}

// setNum sets how f's bits are read.
func setNum(f *field, fd protoreflect.FieldDescriptor) {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		f.num = nSigned
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		f.num = nZigzag
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		f.num = nUnsigned
	case protoreflect.Fixed32Kind:
		f.num = nFixed32
	case protoreflect.Sfixed32Kind:
		f.num = nSfixed32
	case protoreflect.Fixed64Kind:
		f.num = nFixed64
	case protoreflect.Sfixed64Kind:
		f.num = nSfixed64
	case protoreflect.BoolKind:
		f.num = nBool
	case protoreflect.EnumKind:
		f.num = nEnum
	case protoreflect.FloatKind:
		f.num = nFloat
	case protoreflect.DoubleKind:
		f.num = nDouble
	default:
		f.num = nBytes
	}
}

// Wire types (the protobuf encoding).
const (
	wVarint  = 0
	wFixed64 = 1
	wBytes   = 2
	wStart   = 3
	wEnd     = 4
	wFixed32 = 5
)

func wireOf(fd protoreflect.FieldDescriptor) byte {
	switch fd.Kind() {
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return wFixed64
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return wFixed32
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return wBytes
	case protoreflect.GroupKind:
		return wStart
	}
	return wVarint
}

// convFor is how a field of descriptor fd reaches target t: the
// Timestamp and Confluent Decimal messages and the wrapper types here,
// the rest by format.ConvFor.
func convFor(fd protoreflect.FieldDescriptor, t target) format.Conv {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return format.ConvFor(format.WriterInt, &t)
	case protoreflect.BoolKind:
		return format.ConvFor(format.WriterBool, &t)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return format.ConvFor(format.WriterFloat, &t)
	case protoreflect.StringKind:
		return format.ConvFor(format.WriterString, &t)
	case protoreflect.BytesKind:
		return format.ConvFor(format.WriterBytes, &t)
	case protoreflect.EnumKind:
		return format.ConvFor(format.WriterEnum, &t)
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			if t.F.Kind == row.KindTime {
				return format.ConvTimestamp
			}
		case "confluent.type.Decimal":
			if cv := format.ConvFor(format.WriterDecimal, &t); cv != format.ConvBad {
				return cv
			}
		}
		if w := wrapped(fd); w != nil {
			if cv := convFor(w, t); cv != format.ConvBad {
				return cv
			}
		}
	}
	return format.ConvBad
}

// describe names a field's type in messages: "Protobuf int64",
// "Protobuf message shop.Address".
func describe(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "Protobuf map"
	case fd.IsList():
		return "Protobuf repeated " + fd.Kind().String()
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		return "Protobuf message " + string(fd.Message().FullName())
	case fd.Kind() == protoreflect.EnumKind:
		return "Protobuf enum " + string(fd.Enum().FullName())
	}
	return "Protobuf " + fd.Kind().String()
}

// zeroOf is the value an absent implicit-presence field of fd holds
// through conversion cv, and whether it has one.
func zeroOf(fd protoreflect.FieldDescriptor, cv format.Conv) (row.Value, bool) {
	switch cv {
	case format.ConvInt:
		return row.Int(0), true
	case format.ConvIntDecimal, format.ConvFloatDecimal:
		return row.Dec(row.DecimalFromInt(0)), true
	case format.ConvFloatInt:
		return row.Int(0), true
	case format.ConvIntString, format.ConvFloatString:
		return row.Str("0"), true
	case format.ConvBool:
		return row.Bool(false), true
	case format.ConvBoolString:
		return row.Str("false"), true
	case format.ConvString:
		return row.Str(""), true
	case format.ConvEnumString:
		if v := fd.Enum().Values().ByNumber(0); v != nil {
			return row.Str(string(v.Name())), true
		}
		return row.Str("0"), true
	}
	return row.Null, false
}
