package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/format/protobuf"
)

// valueEncoder turns a JSON line into a record value of produce --format.
type valueEncoder interface {
	encode(dst, line []byte) ([]byte, error)
}

// newValueEncoder registers the --schema file under <topic>-value in the
// --registry and returns the encoder of its records (nil for json).
func newValueEncoder(ctx context.Context, f *produceFlags) (valueEncoder, string, error) {
	if f.format == "" || f.format == "json" {
		// $SCHEMA_REGISTRY_URL is only a default, for the formats that use
		// a registry: JSON ignores it; a --registry given is a mistake.
		if f.schemaFile != "" || f.registrySet {
			return nil, "", usageErr("--schema and --registry: only with --format avro or protobuf")
		}
		return nil, "", nil
	}
	if f.format != "avro" && f.format != "protobuf" {
		return nil, "", usageErr("--format %q: want json, avro or protobuf", f.format)
	}
	if f.schemaFile == "" || f.registry == "" {
		return nil, "", usageErr("--format %s needs --schema FILE and --registry URL", f.format)
	}
	text, err := os.ReadFile(f.schemaFile)
	if err != nil {
		return nil, "", err
	}
	cl, err := sr.NewClient(sr.URLs(strings.Split(f.registry, ",")...))
	if err != nil {
		return nil, "", usageErr("--registry: %v", err)
	}
	subject := f.topic + "-value"
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	switch f.format {
	case "avro":
		s, err := tavro.Parse(string(text))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.schemaFile, err)
		}
		ss, err := cl.CreateSchema(rctx, subject, sr.Schema{Schema: string(text), Type: sr.TypeAvro})
		if err != nil {
			return nil, "", fmt.Errorf("registering %s under %s at %s: %w", f.schemaFile, subject, f.registry, err)
		}
		return &avroEncoder{s: s, root: s.Root(), id: ss.ID}, fmt.Sprintf("schema id %d (subject %s version %d)", ss.ID, subject, ss.Version), nil
	default:
		fd, err := protobuf.Parse(ctx, f.schemaFile, string(text), nil)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.schemaFile, err)
		}
		var md protoreflect.MessageDescriptor
		if f.message != "" {
			md, err = protobuf.MessageByName(fd, f.message)
		} else if fd.Messages().Len() > 0 {
			md = fd.Messages().Get(0)
		} else {
			err = fmt.Errorf("%s declares no message", f.schemaFile)
		}
		if err != nil {
			return nil, "", err
		}
		ss, err := cl.CreateSchema(rctx, subject, sr.Schema{Schema: string(text), Type: sr.TypeProtobuf})
		if err != nil {
			return nil, "", fmt.Errorf("registering %s under %s at %s: %w", f.schemaFile, subject, f.registry, err)
		}
		return &protoEncoder{md: md, id: ss.ID, idx: protobuf.Indexes(md)}, fmt.Sprintf("schema id %d (subject %s version %d)", ss.ID, subject, ss.Version), nil
	}
}

// avroEncoder writes a JSON line as the Avro record of its schema: JSON
// values are converted by the field's Avro type (numbers and numeric
// text to int, long, float, double and decimal, exactly; RFC 3339 text or
// epoch ms to timestamps; YYYY-MM-DD to dates; null or a missing member
// to a union's null or the field's default).
type avroEncoder struct {
	s    *tavro.Schema
	root *tavro.SchemaNode
	id   int
}

func (e *avroEncoder) encode(dst, line []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	cv, err := coerce(e.root, v, "")
	if err != nil {
		return nil, err
	}
	dst = append(dst, 0, byte(e.id>>24), byte(e.id>>16), byte(e.id>>8), byte(e.id))
	return e.s.AppendEncode(dst, cv)
}

// coerce converts a JSON value to what twmb/avro encodes as type n.
func coerce(n *tavro.SchemaNode, v any, path string) (any, error) {
	bad := func() (any, error) {
		return nil, fmt.Errorf("field %s: %v does not fit Avro %s %s", strings.TrimPrefix(path, "."), v, n.Type, n.LogicalType)
	}
	text := func() (string, bool) {
		switch x := v.(type) {
		case string:
			return x, true
		case json.Number:
			return x.String(), true
		case bool:
			return strconv.FormatBool(x), true
		}
		return "", false
	}
	switch n.Type {
	case "union":
		if v == nil {
			for _, b := range n.Branches {
				if b.Type == "null" {
					return nil, nil
				}
			}
			return bad()
		}
		for i := range n.Branches {
			if n.Branches[i].Type == "null" {
				continue
			}
			if c, err := coerce(&n.Branches[i], v, path); err == nil {
				return c, nil
			}
		}
		return bad()
	case "null":
		if v != nil {
			return bad()
		}
		return nil, nil
	case "record", "error":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := map[string]any{}
		for i := range n.Fields {
			fd := &n.Fields[i]
			fv, present := m[fd.Name]
			if !present || fv == nil {
				if fd.HasDefault {
					continue // the schema's default
				}
			}
			c, err := coerce(&fd.Type, fv, path+"."+fd.Name)
			if err != nil {
				return nil, err
			}
			out[fd.Name] = c
		}
		return out, nil
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(a))
		for i, x := range a {
			c, err := coerce(n.Items, x, path+"."+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := map[string]any{}
		for k, x := range m {
			c, err := coerce(n.Values, x, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	t, ok := text()
	if !ok {
		return bad()
	}
	switch {
	case n.LogicalType == "decimal":
		r, ok := new(big.Rat).SetString(t)
		if !ok {
			return bad()
		}
		return r, nil
	case strings.HasPrefix(n.LogicalType, "timestamp-"):
		if ms, err := strconv.ParseInt(t, 10, 64); err == nil {
			return time.UnixMilli(ms).UTC(), nil
		}
		tm, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return bad()
		}
		return tm, nil
	case n.LogicalType == "date":
		tm, err := time.Parse(time.DateOnly, t)
		if err != nil {
			return bad()
		}
		return tm, nil
	}
	switch n.Type {
	case "string", "enum":
		return t, nil
	case "bytes", "fixed":
		return []byte(t), nil
	case "boolean":
		b, err := strconv.ParseBool(t)
		if err != nil {
			return bad()
		}
		return b, nil
	case "int", "long":
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			if n.Type == "int" {
				return int32(i), nil
			}
			return i, nil
		}
		// "17850.0": a whole number written with a fraction.
		r, ok := new(big.Rat).SetString(t)
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return bad()
		}
		if n.Type == "int" {
			return int32(r.Num().Int64()), nil
		}
		return r.Num().Int64(), nil
	case "float", "double":
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return bad()
		}
		if n.Type == "float" {
			return float32(f), nil
		}
		return f, nil
	}
	return bad()
}

// protoEncoder writes a JSON line as the Protobuf message of its type,
// read with protojson (field names or their JSON names; unknown members
// are ignored).
type protoEncoder struct {
	md  protoreflect.MessageDescriptor
	id  int
	idx []int
}

func (e *protoEncoder) encode(dst, line []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(e.md)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(line, m); err != nil {
		return nil, err
	}
	dst, err := (&sr.ConfluentHeader{}).AppendEncode(dst, e.id, e.idx)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, m)
}
