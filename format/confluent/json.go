package confluent

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"sync"
	"time"

	tavro "github.com/twmb/avro"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format/protobuf"
)

// Renderer renders record values in the Confluent wire format as JSON
// objects, for side outputs (late, quarantine and conflict records) and
// deduplication payloads: the Avro value as its fields (times in RFC 3339,
// decimals as exact text, bytes in base64), the Protobuf message as
// protojson writes it, with "_schema_id" added. A value whose schema the
// Decoders have not loaded, or that does not decode, is {"_schema_id": N,
// "_raw_base64": "…"} (or without the id when the header is unusable).
// It is filled by the Decoders that share it and is safe for concurrent
// use: a schema id, once known, keeps its entry.
type Renderer struct {
	m sync.Map // uint32 → *rendering
}

type rendering struct {
	avro *tavro.Schema
	file protoreflect.FileDescriptor
}

func (r *Renderer) store(id uint32, e rendering) { r.m.LoadOrStore(id, &e) }

// AppendJSON appends value rendered as a JSON object.
func (r *Renderer) AppendJSON(dst []byte, value []byte) []byte {
	if HeaderError(value) != nil {
		return appendRaw(dst, -1, value)
	}
	id := binary.BigEndian.Uint32(value[1:5])
	v, ok := r.m.Load(id)
	if !ok {
		return appendRaw(dst, int64(id), value)
	}
	e := v.(*rendering)
	var obj any
	if e.avro != nil {
		var x any
		rest, err := e.avro.Decode(value[5:], &x)
		if err != nil || len(rest) != 0 {
			return appendRaw(dst, int64(id), value)
		}
		obj = x
	} else {
		idx, n, why := readIndexes(value[5:], nil)
		md, err := protobuf.MessageByIndexes(e.file, idx)
		if why != "" || err != nil {
			return appendRaw(dst, int64(id), value)
		}
		msg := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(value[5+n:], msg); err != nil {
			return appendRaw(dst, int64(id), value)
		}
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
		if err != nil {
			return appendRaw(dst, int64(id), value)
		}
		var x map[string]any
		if err := json.Unmarshal(b, &x); err != nil {
			return appendRaw(dst, int64(id), value)
		}
		obj = x
	}
	fields, ok := obj.(map[string]any)
	if !ok {
		return appendRaw(dst, int64(id), value)
	}
	fields["_schema_id"] = int64(id)
	return appendJSONValue(dst, fields)
}

func appendRaw(dst []byte, id int64, value []byte) []byte {
	dst = append(dst, '{')
	if id >= 0 {
		dst = append(dst, `"_schema_id":`...)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"_raw_base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, value)
	return append(dst, `"}`...)
}

// appendJSONValue renders a decoded Avro value (or a protojson object).
func appendJSONValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case float64:
		return appendFloat(dst, x, 64)
	case string:
		return changelog.AppendJSONString(dst, x)
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"')
	case time.Time:
		dst = append(dst, '"')
		dst = x.UTC().AppendFormat(dst, time.RFC3339Nano)
		return append(dst, '"')
	case time.Duration:
		return strconv.AppendInt(dst, x.Milliseconds(), 10)
	case *big.Rat:
		return append(dst, ratText(x)...)
	case big.Rat:
		return append(dst, ratText(&x)...)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = changelog.AppendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONValue(dst, x[k])
		}
		return append(dst, '}')
	}
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

func appendFloat(dst []byte, f float64, size int) []byte {
	if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
		dst = append(dst, '"')
		dst = strconv.AppendFloat(dst, f, 'g', -1, size)
		return append(dst, '"')
	}
	return strconv.AppendFloat(dst, f, 'g', -1, size)
}

// ratText renders an exact decimal (a decoded Avro decimal) as a JSON
// number without rounding: the fewest digits after the point that hold
// it exactly.
func ratText(r *big.Rat) string {
	for p := 0; p <= 40; p++ {
		s := r.FloatString(p)
		back, ok := new(big.Rat).SetString(s)
		if ok && back.Cmp(r) == 0 {
			return s
		}
	}
	return strconv.Quote(r.String())
}

// AppendAvroJSON appends data, one record in Avro's binary encoding of
// writer schema w (no wire-format header), as a JSON object of its fields
// rendered as Renderer renders them (times in RFC 3339, decimals as exact
// numbers, bytes in base64; keys sorted). ok is false, and dst returned
// unchanged, when data is not exactly one record of w.
func AppendAvroJSON(dst []byte, w *tavro.Schema, data []byte) (out []byte, ok bool) {
	var x any
	rest, err := w.Decode(data, &x)
	if err != nil || len(rest) != 0 {
		return dst, false
	}
	if _, isObj := x.(map[string]any); !isObj {
		return dst, false
	}
	return appendJSONValue(dst, x), true
}
