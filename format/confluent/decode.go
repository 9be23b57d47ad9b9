package confluent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	tavro "github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/format/protobuf"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// The formats a Decoder reads.
const (
	FormatAvro     = "avro"
	FormatProtobuf = "protobuf"
)

// Version is how records of one schema version reach the pipeline's
// fields (a data contract's schema_versions entry).
type Version struct {
	// Rename maps a pipeline field to the writer's field of this version
	// (format.Projection.Rename).
	Rename map[string]string
	// Defaults are constants for the pipeline fields this version lacks.
	Defaults map[string]row.Value
}

// DecoderConfig configures a Decoder.
type DecoderConfig struct {
	// Registry holds the writers' schemas. Required.
	Registry *Registry
	// Format is FormatAvro or FormatProtobuf. Required.
	Format string
	// Fields are the pipeline's fields.
	Fields format.Fields
	// Topic is the topic the records come from (for messages and the
	// default Subject).
	Topic string
	// Subject is the registry subject whose versions Versions lists.
	// Default "<Topic>-value" (TopicNameStrategy).
	Subject string
	// Message, for Protobuf, is the message type every record must be (a
	// full name such as "shop.v1.Order"); a record whose message indexes
	// name another type is quarantined. Default: any type, read by the
	// field names.
	Message string
	// Versions, when not nil, lists the subject versions accepted and
	// how each maps onto the pipeline's fields: a record whose schema is
	// not one of them is quarantined (Rule "schema_version"). Nil accepts
	// every schema, each field read by its own name.
	Versions map[int]Version
	// Contract names the data contract that lists Versions, in reasons.
	Contract string
	// Renderer, when set, learns every schema the Decoder loads, so that
	// it can render the records as JSON (source.Source.EventJSON).
	Renderer *Renderer
}

// Decoder decodes record values in the Confluent wire format (a zero
// magic byte, a 4-byte big-endian schema id, for Protobuf the message
// indexes, then the Avro or Protobuf binary encoding) into rows. It
// compiles one program per schema id, when the id is first seen, from
// the writer's schema the registry holds. It is not safe for concurrent
// use, except Counts.
type Decoder struct {
	cfg     DecoderConfig
	byID    map[uint32]*entry
	lastID  uint32
	last    *entry
	mu      sync.Mutex
	counts  map[uint32]*Count
	indexes []int // scratch: Protobuf message indexes
}

// entry is what the Decoder knows of one schema id.
type entry struct {
	id      uint32
	version int // in Subject; 0 when not looked up or not registered there
	avro    *avro.Program
	proto   map[string]*protobuf.Program // by message full name
	file    protoreflect.FileDescriptor
	err     *source.DecodeError // every record of the id is quarantined with it
}

// NewDecoder checks c and returns a decoder; it does no IO.
func NewDecoder(c DecoderConfig) (*Decoder, error) {
	if c.Registry == nil {
		return nil, errors.New("schema_registry: required for format " + c.Format)
	}
	switch c.Format {
	case FormatAvro, FormatProtobuf:
	default:
		return nil, fmt.Errorf("format %q: want avro or protobuf", c.Format)
	}
	if c.Fields.Schema == nil {
		return nil, errors.New("confluent decoder: Fields.Schema is nil")
	}
	if c.Subject == "" {
		c.Subject = c.Topic + "-value"
	}
	return &Decoder{cfg: c, byID: map[uint32]*entry{}, counts: map[uint32]*Count{}}, nil
}

// HeaderError returns the decode error of a value too short for the
// Confluent header or with another magic byte, or nil.
func HeaderError(value []byte) *source.DecodeError {
	if len(value) > 0 && value[0] != 0 {
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("magic byte 0x%02x, want 0x00: not the Confluent wire format (a %s?)", value[0], guess(value[0]))}
	}
	if len(value) < 5 {
		return &source.DecodeError{Rule: "decode", Reason: fmt.Sprintf("truncated Confluent header: %d bytes, want a magic byte 0 and a 4-byte schema id", len(value))}
	}
	return nil
}

// guess names what a value starting with c may be, for messages.
func guess(c byte) string {
	switch c {
	case '{', '[':
		return "JSON value"
	case 'O':
		return "Avro object container file"
	}
	return "value of another serializer"
}

// Decode fills r (shaped, all null) from value, strings into a. It
// returns the record's problem as a *source.DecodeError (the record goes
// to quarantine), or an error when the registry cannot be asked (the
// record is not judged: the caller should stop and retry later, never
// quarantine good records because a registry is down). Record problems:
// Rule "decode" (header, or bytes that are not a record of the schema),
// "schema" (an id the registry does not have, a schema that does not
// parse, a schema of another format, a Protobuf message type other than
// DecoderConfig.Message), "schema_version" (a version the contract does
// not accept), and the decoders' "type", "encoding", "timestamp".
func (d *Decoder) Decode(ctx context.Context, value []byte, r *row.Row, a *source.Arena) (*source.DecodeError, error) {
	if e := HeaderError(value); e != nil {
		return e, nil
	}
	id := binary.BigEndian.Uint32(value[1:5])
	e := d.last
	if e == nil || d.lastID != id {
		var ok bool
		if e, ok = d.byID[id]; !ok {
			var err error
			if e, err = d.load(ctx, id); err != nil {
				return nil, err
			}
			d.byID[id] = e
		}
		d.lastID, d.last = id, e
	}
	d.mu.Lock()
	c := d.counts[id]
	if c == nil {
		c = &Count{ID: int(id), Version: e.version}
		d.counts[id] = c
	}
	c.Records++
	d.mu.Unlock()
	if e.err != nil {
		return e.err, nil
	}
	if e.avro != nil {
		return e.avro.Decode(value[5:], 5, r, a), nil
	}
	return d.decodeProto(e, value, r, a)
}

// decodeProto reads the message indexes and the message.
func (d *Decoder) decodeProto(e *entry, value []byte, r *row.Row, a *source.Arena) (*source.DecodeError, error) {
	idx, n, why := readIndexes(value[5:], d.indexes[:0])
	d.indexes = idx
	if why != "" {
		return &source.DecodeError{Rule: "decode", Reason: "Confluent Protobuf message indexes: " + why}, nil
	}
	var p *protobuf.Program
	if len(idx) == 0 || (len(idx) == 1 && idx[0] == 0) {
		p = e.proto[""]
	}
	if p == nil {
		key := fmt.Sprint(idx)
		p = e.proto[key]
		if p == nil {
			md, err := protobuf.MessageByIndexes(e.file, idx)
			if err != nil {
				return &source.DecodeError{Rule: "schema", Reason: fmt.Sprintf("schema id %d: %v", e.id, err)}, nil
			}
			if de := d.checkMessage(e, md); de != nil {
				return de, nil
			}
			if p, err = protobuf.Compile(md, d.projection(e.version)); err != nil {
				return &source.DecodeError{Rule: "schema", Reason: fmt.Sprintf("schema id %d: %v", e.id, err)}, nil
			}
			e.proto[key] = p
		}
	}
	return p.Decode(value[5+n:], 5+n, r, a), nil
}

// checkMessage refuses a message type other than DecoderConfig.Message.
func (d *Decoder) checkMessage(e *entry, md protoreflect.MessageDescriptor) *source.DecodeError {
	if d.cfg.Message == "" || string(md.FullName()) == d.cfg.Message {
		return nil
	}
	return &source.DecodeError{Rule: "schema", Reason: fmt.Sprintf("schema id %d: message type %s, want %s (source.message)", e.id, md.FullName(), d.cfg.Message)}
}

// maxIndexes bounds the message indexes of a record (nesting depth).
const maxIndexes = 64

// readIndexes reads Confluent's message indexes: a zigzag varint count
// (0 standing for [0]) and as many zigzag varint indexes. It returns
// them, the bytes read and why they are unusable ("" when fine).
func readIndexes(b []byte, dst []int) ([]int, int, string) {
	count, n := binary.Varint(b)
	if n <= 0 {
		return dst, 0, "truncated or overlong count at byte 5"
	}
	if count < 0 || count > maxIndexes {
		return dst, 0, fmt.Sprintf("count %d at byte 5: want 0 to %d", count, maxIndexes)
	}
	at := n
	for k := int64(0); k < count; k++ {
		v, m := binary.Varint(b[at:])
		if m <= 0 {
			return dst, 0, fmt.Sprintf("truncated or overlong index at byte %d", 5+at)
		}
		if v < 0 || v > 1<<20 {
			return dst, 0, fmt.Sprintf("index %d at byte %d is negative or too large", v, 5+at)
		}
		dst = append(dst, int(v))
		at += m
	}
	return dst, at, ""
}

// projection is the Reader of a version.
func (d *Decoder) projection(version int) format.Projection {
	p := format.Projection{Fields: d.cfg.Fields}
	if v, ok := d.cfg.Versions[version]; ok {
		p.Rename, p.Defaults = v.Rename, v.Defaults
	}
	return p
}

// load fetches and compiles schema id. Registry failures other than an
// unknown id are returned as errors.
func (d *Decoder) load(ctx context.Context, id uint32) (*entry, error) {
	e := &entry{id: id, proto: map[string]*protobuf.Program{}}
	reject := func(rule, format string, args ...any) (*entry, error) {
		e.err = &source.DecodeError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
		return e, nil
	}
	s, err := d.cfg.Registry.SchemaByID(ctx, int(id))
	if errors.Is(err, ErrNotFound) {
		return reject("schema", "schema id %d is not in the schema registry at %s", id, d.cfg.Registry.URL())
	}
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", d.cfg.Topic, err)
	}
	typ := s.Type
	if typ == 0 {
		typ = sr.TypeAvro
	}
	want := sr.TypeAvro
	if d.cfg.Format == FormatProtobuf {
		want = sr.TypeProtobuf
	}
	if typ != want {
		return reject("schema", "schema id %d is a %s schema; the source reads %s (source.format)", id, typ, d.cfg.Format)
	}
	refs, err := d.cfg.Registry.References(ctx, s)
	if errors.Is(err, ErrNotFound) {
		return reject("schema", "schema id %d: %v", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", d.cfg.Topic, err)
	}
	var w *tavro.Schema
	switch d.cfg.Format {
	case FormatAvro:
		if w, err = ParseAvro(s.Schema, refs); err != nil {
			return reject("schema", "schema id %d does not parse: %v", id, err)
		}
		if d.cfg.Renderer != nil {
			d.cfg.Renderer.store(id, rendering{avro: w})
		}
	case FormatProtobuf:
		imports := map[string]string{}
		for _, r := range refs {
			imports[r.Name] = r.Schema.Schema
		}
		fd, err := protobuf.Parse(ctx, "schema-"+strconv.Itoa(int(id))+".proto", s.Schema, imports)
		if err != nil {
			return reject("schema", "schema id %d does not parse: %v", id, err)
		}
		e.file = fd
		if d.cfg.Renderer != nil {
			d.cfg.Renderer.store(id, rendering{file: fd})
		}
		if fd.Messages().Len() == 0 {
			return reject("schema", "schema id %d declares no message type", id)
		}
	}
	vs, err := d.cfg.Registry.VersionsOf(ctx, int(id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("topic %s: %w", d.cfg.Topic, err)
	}
	for _, v := range vs {
		if v.Subject == d.cfg.Subject {
			e.version = v.Version
		}
	}
	if d.cfg.Versions != nil {
		if e.version == 0 {
			return reject("schema_version", "schema id %d is not a version of subject %s; the contract %s accepts versions %s of it", id, d.cfg.Subject, d.cfg.Contract, d.accepted())
		}
		if _, ok := d.cfg.Versions[e.version]; !ok {
			return reject("schema_version", "schema id %d is version %d of subject %s, which the contract %s does not accept (it accepts versions %s)", id, e.version, d.cfg.Subject, d.cfg.Contract, d.accepted())
		}
	}
	if w != nil {
		if e.avro, err = avro.Compile(w, d.projection(e.version)); err != nil {
			return reject("schema", "schema id %d: %v", id, err)
		}
		return e, nil
	}
	md := e.file.Messages().Get(0)
	if de := d.checkMessage(e, md); de == nil {
		p, err := protobuf.Compile(md, d.projection(e.version))
		if err != nil {
			return reject("schema", "schema id %d: %v", id, err)
		}
		e.proto[""] = p
	}
	return e, nil
}

// accepted lists the accepted versions, "1, 2".
func (d *Decoder) accepted() string {
	vs := make([]int, 0, len(d.cfg.Versions))
	for v := range d.cfg.Versions {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// ParseAvro parses an Avro schema whose named types may come from the
// schemas it references (parsed first, in the order given, with
// twmb/avro's SchemaCache).
func ParseAvro(text string, refs []NamedSchema) (*tavro.Schema, error) {
	if len(refs) == 0 {
		return tavro.Parse(text)
	}
	var c tavro.SchemaCache
	for _, r := range refs {
		if _, err := c.Parse(r.Schema.Schema); err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.Name, err)
		}
	}
	return c.Parse(text)
}

// Count is the number of records seen with one schema id.
type Count struct {
	ID      int
	Version int // its version in DecoderConfig.Subject; 0 when it is not one
	Records int64
}

// Counts returns the records decoded so far per schema id, by id. Safe
// for concurrent use.
func (d *Decoder) Counts() []Count {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Count, 0, len(d.counts))
	for _, c := range d.counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// VersionOf returns the subject version of a schema id seen by the
// decoder (0 when unknown). Not safe for concurrent use with Decode.
func (d *Decoder) VersionOf(id int) int {
	if e, ok := d.byID[uint32(id)]; ok {
		return e.version
	}
	return 0
}
