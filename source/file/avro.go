package file

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	tavro "github.com/twmb/avro"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/format/avro"
	"github.com/tidemark/tidemark/format/confluent"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// This file reads Avro object container files (Avro specification,
// "Object Container Files"): a header — the magic bytes "Obj" 1, a map of
// metadata holding the writer's schema (avro.schema) and the codec
// (avro.codec), a 16-byte sync marker — then blocks, each a count of
// records, the size of its data, the data (compressed by the codec) and
// the sync marker again. Records are decoded by format/avro's Program,
// the Kafka source's decoder, compiled against the pipeline's fields.

// Limits of an object container file the source reads. A file beyond
// them is refused, naming the file, block and offset.
const (
	// MaxAvroBlockBytes bounds a block's data, compressed and
	// decompressed (64 MiB; writers cut blocks at 16 KiB to a few MiB).
	MaxAvroBlockBytes = 64 << 20
	// maxAvroHeaderBytes bounds the header's metadata (the schema).
	maxAvroHeaderBytes = 16 << 20
)

// maxAvroBlock is MaxAvroBlockBytes; tests lower it.
var maxAvroBlock = int64(MaxAvroBlockBytes)

// ocfMagic starts every object container file.
var ocfMagic = []byte{'O', 'b', 'j', 1}

// ocfHeader is what a file's header says.
type ocfHeader struct {
	text   string        // avro.schema
	schema *tavro.Schema // parsed
	codec  string        // avro.codec: null, deflate, snappy, zstandard
	sync   [16]byte
	end    int64 // offset of the first block
}

// AvroFileError is a problem with the structure of an Avro object
// container file (a header, block or record that cannot be read): the
// file cannot be read on past it, so the source stops.
type AvroFileError struct {
	Path string
	// Block is the 1-based block number, 0 for the header.
	Block int64
	// Offset is the byte offset in the file of the block (or of the
	// problem, in the header).
	Offset int64
	// Reason says what is wrong.
	Reason string
}

func (e *AvroFileError) Error() string {
	if e.Block == 0 {
		return fmt.Sprintf("%s: Avro object container file header: %s (at byte %d)", e.Path, e.Reason, e.Offset)
	}
	return fmt.Sprintf("%s: Avro object container file, block %d at byte %d: %s", e.Path, e.Block, e.Offset, e.Reason)
}

// ocfBytes reads a file sequentially, counting its offset.
type ocfBytes struct {
	br  *bufio.Reader
	off int64
}

func (b *ocfBytes) byte() (byte, error) {
	c, err := b.br.ReadByte()
	if err == nil {
		b.off++
	}
	return c, err
}

// long reads a zig-zag varint of at most 10 bytes.
func (b *ocfBytes) long() (int64, error) {
	var u uint64
	for n := uint(0); n < 10; n++ {
		c, err := b.byte()
		if err != nil {
			return 0, err
		}
		u |= uint64(c&0x7f) << (7 * n)
		if c < 0x80 {
			if n == 9 && c > 1 {
				break
			}
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("a varint longer than 10 bytes")
}

// full reads exactly len(p) bytes.
func (b *ocfBytes) full(p []byte) error {
	n, err := io.ReadFull(b.br, p)
	b.off += int64(n)
	return err
}

// truncated turns an end of file inside a value into a clear reason.
func truncated(err error, what string) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated: the file ends inside " + what
	}
	return fmt.Sprintf("%s: %v", what, err)
}

// readOCFHeader reads the header of the file at path from b (at its
// start).
func readOCFHeader(path string, b *ocfBytes) (*ocfHeader, error) {
	bad := func(reason string) (*ocfHeader, error) {
		return nil, &AvroFileError{Path: path, Offset: b.off, Reason: reason}
	}
	var magic [4]byte
	if err := b.full(magic[:]); err != nil {
		return bad(truncated(err, "the magic bytes"))
	}
	if !bytes.Equal(magic[:], ocfMagic) {
		return bad(fmt.Sprintf("magic bytes % x, want %q 0x01: not an Avro object container file", magic, "Obj"))
	}
	h := &ocfHeader{codec: "null"}
	var total int64
	meta := map[string][]byte{}
	for {
		n, err := b.long()
		if err != nil {
			return bad(truncated(err, "the metadata map's block count"))
		}
		if n == 0 {
			break
		}
		if n < 0 {
			n = -n
			if _, err := b.long(); err != nil { // the block's size in bytes
				return bad(truncated(err, "the metadata map's block size"))
			}
		}
		if n > 1<<16 {
			return bad(fmt.Sprintf("a metadata map block of %d entries", n))
		}
		for range n {
			var kv [2][]byte
			for i, what := range []string{"a metadata key", "a metadata value"} {
				l, err := b.long()
				if err != nil {
					return bad(truncated(err, what+"'s length"))
				}
				if l < 0 || total+l > maxAvroHeaderBytes {
					return bad(fmt.Sprintf("%s of %d bytes: the metadata may hold %d in all", what, l, maxAvroHeaderBytes))
				}
				total += l
				kv[i] = make([]byte, l)
				if err := b.full(kv[i]); err != nil {
					return bad(truncated(err, what))
				}
			}
			meta[string(kv[0])] = kv[1]
		}
	}
	if err := b.full(h.sync[:]); err != nil {
		return bad(truncated(err, "the sync marker"))
	}
	h.end = b.off
	if c, ok := meta["avro.codec"]; ok && len(c) > 0 {
		h.codec = string(c)
	}
	switch h.codec {
	case "null", "deflate", "snappy", "zstandard":
	default:
		return &ocfHeader{}, &AvroFileError{Path: path, Offset: h.end, Reason: fmt.Sprintf("codec %q is not supported (null, deflate, snappy, zstandard)", h.codec)}
	}
	text, ok := meta["avro.schema"]
	if !ok {
		return nil, &AvroFileError{Path: path, Offset: h.end, Reason: "no avro.schema in the metadata"}
	}
	h.text = string(text)
	s, err := tavro.Parse(h.text)
	if err != nil {
		return nil, &AvroFileError{Path: path, Offset: h.end, Reason: fmt.Sprintf("the writer schema does not parse: %v", err)}
	}
	h.schema = s
	return h, nil
}

// AvroProjection returns how the records of an Avro file are read: the
// projection of the pipeline's fields onto the file's writer schema
// (text, as its header holds it; schema parsed). A non-nil reject
// quarantines every record of the file with it (a schema version the
// contract does not accept); an error stops the source.
type AvroProjection func(path, text string, schema *tavro.Schema) (p format.Projection, reject *source.DecodeError, err error)

// avroFiles is the Avro state of a Source: the headers New read, by
// path (read-only afterwards: EventJSON reads them concurrently).
type avroFiles struct {
	project AvroProjection
	heads   map[string]*ocfHeader
}

// initAvro reads every file's header and checks its schema against the
// fields, before a record is read.
func (s *Source) initAvro(cfg *Config) error {
	s.avro = &avroFiles{project: cfg.AvroProjection, heads: map[string]*ocfHeader{}}
	for _, p := range s.files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		h, err := readOCFHeader(p, &ocfBytes{br: bufio.NewReader(f)})
		f.Close()
		if err != nil {
			return err
		}
		s.avro.heads[p] = h
	}
	return nil
}

// ocfReader streams the records of one object container file.
type ocfReader struct {
	path  string
	f     *os.File
	n     int64 // the file's size when opened
	b     ocfBytes
	h     *ocfHeader
	prog  *avro.Program
	rej   *source.DecodeError
	codec *ocfCodec

	block    int64  // 1-based number of the current block
	blockOff int64  // its offset
	nextOff  int64  // the offset after it
	count    int64  // its records
	done     int64  // of them, read
	raw      []byte // its data as read
	data     []byte // decompressed
	pos      int    // in data, of the next record
	records  int64  // records read from the file
	scratchR *row.Row
}

// ocfCodec decompresses blocks.
type ocfCodec struct {
	name string
	zstd *zstd.Decoder
	out  []byte
}

func (c *ocfCodec) decompress(src []byte) ([]byte, string) {
	switch c.name {
	case "null":
		return src, ""
	case "deflate":
		r := flate.NewReader(bytes.NewReader(src))
		defer r.Close()
		buf := bytes.NewBuffer(c.out[:0])
		n, err := io.Copy(buf, io.LimitReader(r, maxAvroBlock+1))
		c.out = buf.Bytes()
		if err != nil {
			return nil, fmt.Sprintf("deflate data does not decompress: %v", err)
		}
		if n > maxAvroBlock {
			return nil, fmt.Sprintf("its data decompresses to more than %d bytes", maxAvroBlock)
		}
		return c.out, ""
	case "snappy":
		// The compressed data, then the CRC-32 (IEEE, big endian) of
		// the uncompressed data.
		if len(src) < 4 {
			return nil, "snappy data shorter than its 4-byte checksum"
		}
		body, sum := src[:len(src)-4], binary.BigEndian.Uint32(src[len(src)-4:])
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return nil, fmt.Sprintf("snappy data does not decompress: %v", err)
		}
		if int64(n) > maxAvroBlock {
			return nil, fmt.Sprintf("its data decompresses to %d bytes, more than %d", n, maxAvroBlock)
		}
		out, err := snappy.Decode(c.out[:cap(c.out)], body)
		if err != nil {
			return nil, fmt.Sprintf("snappy data does not decompress: %v", err)
		}
		c.out = out
		if crc32.ChecksumIEEE(out) != sum {
			return nil, "the snappy data's checksum does not match: corrupt"
		}
		return out, ""
	}
	if c.zstd == nil {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(maxAvroBlock)), zstd.WithDecoderMaxWindow(uint64(maxAvroBlock)))
		if err != nil {
			return nil, fmt.Sprintf("zstandard: %v", err)
		}
		c.zstd = d
	}
	out, err := c.zstd.DecodeAll(src, c.out[:0])
	if err != nil {
		return nil, fmt.Sprintf("zstandard data does not decompress: %v", err)
	}
	if int64(len(out)) > maxAvroBlock {
		return nil, fmt.Sprintf("its data decompresses to %d bytes, more than %d", len(out), maxAvroBlock)
	}
	c.out = out
	return out, ""
}

func (c *ocfCodec) close() {
	if c.zstd != nil {
		c.zstd.Close()
		c.zstd = nil
	}
}

// openOCF opens the file at path whose header New read (h) at p: a
// block's offset and the records of it already read (the zero readerAt:
// the start), buf being a read buffer to reuse.
func openOCF(path string, af *avroFiles, fields format.Fields, buf []byte, p readerAt) (*ocfReader, error) {
	h := af.heads[path]
	if h == nil {
		return nil, fmt.Errorf("%s: not among the files the source opened", path)
	}
	proj := format.Projection{Fields: fields}
	var rej *source.DecodeError
	if af.project != nil {
		var err error
		if proj, rej, err = af.project(path, h.text, h.schema); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	prog, err := avro.Compile(h.schema, proj)
	if err != nil {
		return nil, &AvroFileError{Path: path, Offset: h.end, Reason: err.Error()}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	off := p.off
	if off < h.end {
		off = h.end
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cap(buf) < 64<<10 {
		buf = make([]byte, 64<<10)
	}
	o := &ocfReader{path: path, f: f, n: st.Size(), h: h, prog: prog, rej: rej, codec: &ocfCodec{name: h.codec},
		b: ocfBytes{br: bufio.NewReaderSize(f, cap(buf)), off: off}, nextOff: off, records: p.line,
		scratchR: fields.Schema.NewRow()}
	if off > h.end {
		if o.block, err = countBlocks(path, h, off); err != nil {
			f.Close()
			return nil, err
		}
	}
	if p.single > 0 {
		// Continue inside the block at off: read it and pass the
		// records already read.
		o.records -= p.single
		if err := o.readBlock(); err != nil {
			f.Close()
			return nil, err
		}
		var a source.Arena
		for range p.single {
			var m source.Meta
			fields.Schema.Shape(o.scratchR)
			if err := o.next(o.scratchR, &m, &a); err != nil {
				f.Close()
				if err == io.EOF {
					return nil, fmt.Errorf("%s: the checkpoint is at record %d of the block at byte %d, which holds fewer: the file changed since", path, p.single, off)
				}
				return nil, err
			}
			a.Reset()
		}
	}
	return o, nil
}

// countBlocks returns how many blocks of the file at path come before
// offset off, reading only their counts and sizes; off must be the start
// of a block (or the end of the file).
func countBlocks(path string, h *ocfHeader, off int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	at := h.end
	var n int64
	for at < off {
		if _, err := f.Seek(at, io.SeekStart); err != nil {
			return 0, err
		}
		b := ocfBytes{br: bufio.NewReaderSize(f, 64), off: at}
		_, err1 := b.long()
		size, err2 := b.long()
		if err1 != nil || err2 != nil || size < 0 {
			return 0, fmt.Errorf("%s: the checkpoint is at byte %d, but the block at byte %d cannot be read: the file changed since", path, off, at)
		}
		at = b.off + size + 16
		n++
	}
	if at != off {
		return 0, fmt.Errorf("%s: the checkpoint is at byte %d, which is not the start of a block: the file changed since", path, off)
	}
	return n, nil
}

// readBlock reads the next block at o.nextOff. It returns io.EOF at the
// end of the file.
func (o *ocfReader) readBlock() error {
	o.blockOff = o.b.off
	o.block++
	bad := func(reason string) error {
		return &AvroFileError{Path: o.path, Block: o.block, Offset: o.blockOff, Reason: reason}
	}
	if _, err := o.b.br.Peek(1); err == io.EOF {
		o.block--
		return io.EOF
	} else if err != nil {
		return err
	}
	count, err := o.b.long()
	if err != nil {
		return bad(truncated(err, "its record count"))
	}
	size, err := o.b.long()
	if err != nil {
		return bad(truncated(err, "its size"))
	}
	if count < 0 || size < 0 {
		return bad(fmt.Sprintf("a negative record count (%d) or size (%d): corrupt", count, size))
	}
	if size > maxAvroBlock {
		return bad(fmt.Sprintf("its size says %d bytes, more than the %d a block may hold", size, maxAvroBlock))
	}
	if left := o.n - o.b.off; size > left {
		return bad(fmt.Sprintf("truncated: its size says %d bytes, the file holds %d more", size, left))
	}
	if count > size+1<<24 {
		// A record takes at least a byte unless every field is empty
		// (null, an empty record): a count beyond the bytes by millions
		// is corruption, not a file.
		return bad(fmt.Sprintf("%d records in %d bytes: corrupt", count, size))
	}
	if int64(cap(o.raw)) < size {
		o.raw = make([]byte, size)
	}
	o.raw = o.raw[:size]
	if err := o.b.full(o.raw); err != nil {
		return bad(truncated(err, "its data"))
	}
	var sync [16]byte
	if err := o.b.full(sync[:]); err != nil {
		return bad(truncated(err, "its sync marker"))
	}
	if sync != o.h.sync {
		return bad("the sync marker after its data differs from the header's: corrupt, or its size is wrong")
	}
	data, why := o.codec.decompress(o.raw)
	if why != "" {
		return bad(why)
	}
	o.data, o.pos, o.count, o.done, o.nextOff = data, 0, count, 0, o.b.off
	return nil
}

// next decodes the next record. m.Raw points into the reader's block
// until the next call. A record whose bytes are not a record of the
// writer schema is an *AvroFileError (the block cannot be read on).
func (o *ocfReader) next(r *row.Row, m *source.Meta, a *source.Arena) error {
	for o.done == o.count {
		if o.pos != len(o.data) {
			return &AvroFileError{Path: o.path, Block: o.block, Offset: o.blockOff,
				Reason: fmt.Sprintf("%d bytes after its %d records: corrupt", len(o.data)-o.pos, o.count)}
		}
		if err := o.readBlock(); err != nil {
			return err
		}
	}
	start := o.pos
	n, de := o.prog.DecodePrefix(o.data[start:], 0, r, a)
	if de != nil && de.Rule == "decode" {
		return &AvroFileError{Path: o.path, Block: o.block, Offset: o.blockOff,
			Reason: fmt.Sprintf("record %d of %d (byte %d of the block's data): %s", o.done+1, o.count, start, de.Reason)}
	}
	o.pos += n
	o.done++
	o.records++
	m.Pos = changelog.Position{Source: o.path, Line: o.records, Offset: o.blockOff}
	m.Raw = o.data[start:o.pos]
	m.Err = de
	if o.rej != nil {
		e := *o.rej
		m.Err = &e
	}
	return nil
}

func (o *ocfReader) close() error {
	o.codec.close()
	return o.f.Close()
}

// at returns where the reader is: the block being read and how many of
// its records are read (single), or the next block once every record of
// this one is read; line counts the file's records read.
func (o *ocfReader) at() readerAt {
	if o.done == o.count {
		return readerAt{off: o.nextOff, line: o.records}
	}
	return readerAt{off: o.blockOff, line: o.records, single: o.done}
}

func (o *ocfReader) buffer() []byte { return nil }
func (o *ocfReader) file() *os.File { return o.f }
func (o *ocfReader) size() int64    { return o.n }

// avroEventJSON renders an Avro record's bytes as a JSON object of its
// fields (format/confluent's rendering), or {"_raw_base64": …} when they
// are not a record of the file's schema.
func (s *Source) avroEventJSON(dst []byte, m *source.Meta) []byte {
	if h := s.avro.heads[m.Pos.Source]; h != nil {
		if out, ok := confluent.AppendAvroJSON(dst, h.schema, m.Raw); ok {
			return out
		}
	}
	dst = append(dst, `{"_raw_base64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, m.Raw)
	return append(dst, `"}`...)
}
