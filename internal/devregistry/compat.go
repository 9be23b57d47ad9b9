package devregistry

import (
	"context"
	"fmt"
	"strings"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/format/protobuf"
)

// parsed is a schema ready for compatibility checks.
type parsed struct {
	avro  *tavro.Schema
	proto protoreflect.FileDescriptor
}

// parse parses a schema of type typ, with its references read from the
// registry.
func (r *Registry) parse(typ, text string, refs []sr.SchemaReference) (parsed, error) {
	var named []confluent.NamedSchema
	for _, ref := range refs {
		var s sr.SubjectSchema
		code, err := r.get(fmt.Sprintf("/subjects/%s/versions/%d", ref.Subject, ref.Version), &s)
		if err != nil || code != 200 {
			return parsed{}, fmt.Errorf("reference %s: subject %s version %d not found", ref.Name, ref.Subject, ref.Version)
		}
		named = append(named, confluent.NamedSchema{Name: ref.Name, Schema: s.Schema})
	}
	switch typ {
	case "AVRO":
		s, err := confluent.ParseAvro(text, named)
		return parsed{avro: s}, err
	case "PROTOBUF":
		imports := map[string]string{}
		for _, n := range named {
			imports[n.Name] = n.Schema.Schema
		}
		fd, err := protobuf.Parse(context.Background(), "schema.proto", text, imports)
		return parsed{proto: fd}, err
	}
	return parsed{}, fmt.Errorf("schema type %s: the development registry checks AVRO and PROTOBUF", typ)
}

// compatible reports why data written with writer cannot be read with
// reader, or nil.
func compatible(writer, reader parsed) error {
	if writer.avro != nil {
		// The Avro specification's schema resolution.
		return tavro.CheckCompatibility(writer.avro, reader.avro)
	}
	return protoCompatible(writer.proto, reader.proto)
}

// protoCompatible applies Confluent's documented Protobuf compatibility
// rules (the Schema Registry's "Protobuf" schema evolution section) to a
// reader reading a writer's messages: the package must not change; a
// message type of the writer must still exist in the reader; a field
// number in both must keep its label (repeated or not), stay in or out
// of a oneof as before, and keep a type of the same wire group — int32,
// uint32, int64, uint64 and bool are interchangeable, as are sint32 and
// sint64, fixed32 and sfixed32, fixed64 and sfixed64, string and bytes,
// and an enum with int32 — and a message or enum field keeps its type's
// name. Adding and removing fields is compatible (absent fields read as
// their defaults); removing a proto2 required field is not.
func protoCompatible(w, rd protoreflect.FileDescriptor) error {
	if w.Package() != rd.Package() {
		return fmt.Errorf("package changed from %q to %q", w.Package(), rd.Package())
	}
	var errs []string
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			wm := ms.Get(i)
			if wm.IsMapEntry() {
				continue
			}
			rm := findMessage(rd, wm.FullName())
			if rm == nil {
				errs = append(errs, fmt.Sprintf("message %s removed", wm.FullName()))
				continue
			}
			errs = append(errs, fieldsCompatible(wm, rm)...)
			walk(wm.Messages())
		}
	}
	walk(w.Messages())
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func findMessage(fd protoreflect.FileDescriptor, name protoreflect.FullName) protoreflect.MessageDescriptor {
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len() && found == nil; i++ {
			if ms.Get(i).FullName() == name {
				found = ms.Get(i)
				return
			}
			walk(ms.Get(i).Messages())
		}
	}
	walk(fd.Messages())
	return found
}

// wireGroup is the compatibility group of a scalar kind.
func wireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind, protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "bytes"
	case protoreflect.FloatKind:
		return "float"
	case protoreflect.DoubleKind:
		return "double"
	case protoreflect.MessageKind:
		return "message"
	case protoreflect.GroupKind:
		return "group"
	}
	return k.String()
}

func fieldsCompatible(w, rd protoreflect.MessageDescriptor) []string {
	var errs []string
	wf := w.Fields()
	for i := 0; i < wf.Len(); i++ {
		f := wf.Get(i)
		g := rd.Fields().ByNumber(f.Number())
		where := fmt.Sprintf("%s field %d (%s)", w.FullName(), f.Number(), f.Name())
		if g == nil {
			if f.Cardinality() == protoreflect.Required {
				errs = append(errs, where+": a required field removed")
			}
			continue
		}
		if f.IsList() != g.IsList() || f.IsMap() != g.IsMap() {
			errs = append(errs, where+": label changed (repeated or map to singular, or back)")
			continue
		}
		if (f.ContainingOneof() == nil) != (g.ContainingOneof() == nil) {
			errs = append(errs, where+": moved into or out of a oneof")
		}
		if g.Cardinality() == protoreflect.Required && f.Cardinality() != protoreflect.Required {
			errs = append(errs, where+": became required")
		}
		fk, gk := f.Kind(), g.Kind()
		if f.IsMap() {
			fk, gk = f.MapValue().Kind(), g.MapValue().Kind()
		}
		if wireGroup(fk) != wireGroup(gk) {
			errs = append(errs, fmt.Sprintf("%s: type changed from %s to %s", where, fk, gk))
			continue
		}
		switch {
		case fk == protoreflect.MessageKind || fk == protoreflect.GroupKind:
			fm, gm := f.Message(), g.Message()
			if f.IsMap() {
				fm, gm = f.MapValue().Message(), g.MapValue().Message()
			}
			if fm.FullName() != gm.FullName() {
				errs = append(errs, fmt.Sprintf("%s: message type changed from %s to %s", where, fm.FullName(), gm.FullName()))
			}
		case fk == protoreflect.EnumKind && gk == protoreflect.EnumKind:
			if f.Enum().FullName() != g.Enum().FullName() {
				errs = append(errs, fmt.Sprintf("%s: enum type changed from %s to %s", where, f.Enum().FullName(), g.Enum().FullName()))
			}
		}
	}
	return errs
}
