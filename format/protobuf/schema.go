package protobuf

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Confluent's own imports, which its serializers never register as
// references (they are "well known" to Confluent's tools as
// google/protobuf/*.proto are to protoc): the decimal type and the
// metadata options. Their text is that of Confluent's schema-registry
// repository (protobuf-provider/src/main/resources), reduced to the
// declarations that matter for decoding.
var confluentImports = map[string]string{
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
}

// Parse compiles the .proto source text (a registry schema), named name,
// with github.com/bufbuild/protocompile. imports maps the import paths
// the text names to their source (a registry schema's references, by
// reference name); google/protobuf/*.proto and Confluent's
// confluent/meta.proto and confluent/type/decimal.proto are known
// without it. Errors quote protocompile's, with line and column.
func Parse(ctx context.Context, name, text string, imports map[string]string) (protoreflect.FileDescriptor, error) {
	srcs := map[string]string{name: text}
	for k, v := range confluentImports {
		srcs[k] = v
	}
	for k, v := range imports {
		srcs[k] = v
	}
	var errs []string
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs),
		}),
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			errs = append(errs, err.Error())
			return nil // keep going: report every error
		}, nil),
	}
	files, err := c.Compile(ctx, name)
	if err != nil {
		if len(errs) > 0 {
			return nil, fmt.Errorf("protobuf schema: %s", strings.Join(errs, "; "))
		}
		return nil, fmt.Errorf("protobuf schema: %w", err)
	}
	return files[0], nil
}

// MessageByIndexes returns the message type that Confluent's message
// indexes name in fd: the first index picks a top-level message, each
// further one a message nested in the previous ([] and [0] are the
// first message of the file).
func MessageByIndexes(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	if len(idx) == 0 {
		idx = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range idx {
		if i < 0 || i >= msgs.Len() {
			where := "the file"
			if md != nil {
				where = "message " + string(md.FullName())
			}
			return nil, fmt.Errorf("message index %d (at depth %d of %v): %s has %d message types", i, depth, idx, where, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// MessageByName returns the message type of fd named name: a full name
// ("shop.v1.Order") or, when unique, a name without its package.
func MessageByName(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	var found []protoreflect.MessageDescriptor
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			full := string(m.FullName())
			rel := strings.TrimPrefix(full, string(fd.Package())+".")
			if full == name || rel == name {
				found = append(found, m)
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no message type %q in %s", name, fd.Path())
	}
	return nil, errors.New("message type name " + name + " is ambiguous")
}

// Indexes returns Confluent's message indexes of md within its file.
func Indexes(md protoreflect.MessageDescriptor) []int {
	var out []int
	for d := protoreflect.Descriptor(md); ; {
		m, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			break
		}
		out = append([]int{m.Index()}, out...)
		d = m.Parent()
	}
	return out
}
