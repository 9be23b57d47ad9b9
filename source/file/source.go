package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// Config configures a file source.
type Config struct {
	// Spec is the source section of the pipeline: type file (or empty),
	// path (a file, a directory or a glob), format jsonl or csv (default:
	// from the path's extension), csv options, partition_field,
	// arrival_time_field, ordinal and replay.
	Spec spec.Source
	// Fields says what to decode. It must include the event-time field,
	// partition_field, arrival_time_field, ordinal.per and
	// replay.partition_by when those are set. ordinal.field, when present,
	// must be KindInt (the source fills it); when absent, nothing reads
	// the ordinal and it is not computed.
	Fields format.Fields
	// EventTimeField names the event-time field (KindTime). Required with
	// replay; otherwise optional (when set, a record whose event time is
	// null never creates a partition).
	EventTimeField string
	// AvroProjection, for format avro, says how each file's records are
	// read from its writer schema (a data contract's schema version: its
	// renames and defaults, or a version the contract does not accept).
	// Nil reads every file by the field names, format.Projection{Fields:
	// Fields}.
	AvroProjection AvroProjection
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("file source is closed")

// Source reads records from files. It implements source.Source; see the
// package documentation for its behavior. It is not safe for concurrent
// use.
type Source struct {
	files     []string
	jsonl     bool
	avro      *avroFiles // format avro; nil otherwise
	schema    *row.Schema
	fields    format.Fields // with the ordinal field marked Derived
	csv       csvOptions
	heads     map[string][]string // CSV columns of each file, by path: read by New, never written afterwards (EventJSON reads it concurrently)
	delivered int64               // records returned by Next

	json  *format.JSON // shared by all JSONL files
	buf   []byte       // the read buffer, handed from file to file
	cur   recordReader // the open file, nil between files
	next  int          // index in files of the next file to open
	eof   bool         // every file has been read (direct mode)
	sizes []int64      // file sizes for Progress, read at its first call
	shut  bool         // Close was called

	d  derive
	rp *replayer // nil without replay
	// starts holds, in order, where Claim opened a file, for Finish to
	// restart the ordinal there: Claim runs ahead of Finish. claims
	// counts the calls to Claim, finished the records Finish completed
	// and finishes its calls.
	starts           []fileStart
	feed             feed // a replay read by Claim (feed.go)
	claims, finishes int64
	finished         int64

	// decs are Decode's JSON decoders, one per goroutine at a time;
	// csvDecs its CSV splitters and decoders.
	decs    sync.Pool // *format.JSON
	csvDecs sync.Pool // *csvDecoder
	// modes holds, by path, the line mode of each CSV file with a
	// record whose bytes hold a line break (Claim stores it before the
	// record is handed to Decode, which reads it).
	modes sync.Map // string → lineMode
}

// recordReader yields the records of one file.
type recordReader interface {
	// next decodes the next record into r (shaped, all null), its
	// strings into a, and sets m.Pos, m.Raw (valid until a is reset) and
	// m.Err. It returns io.EOF after the last record; any other error is
	// fatal.
	next(r *row.Row, m *source.Meta, a *source.Arena) error
	close() error
	// at returns where the reader is in its file: after the last record
	// it returned.
	at() readerAt
	// buffer returns the reader's read buffer, for the next file's reader.
	buffer() []byte
	// file returns the open file.
	file() *os.File
	// size returns the file's size when it was opened.
	size() int64
}

// readerAt is a position in a file, between two records: what a reader
// needs to continue there.
type readerAt struct {
	off    int64    // file offset of the next byte to read
	line   int64    // lines consumed
	mode   lineMode // the file's line breaks, once known
	single int64    // CSV: records starting before this offset are read one line each
}

// Progress reports how much of the input has been read, in bytes: done
// of total (the files' sizes when the source opened). With replay, reading
// runs ahead of delivery by the replay's buffer.
func (s *Source) Progress() (done, total int64) {
	if s.sizes == nil {
		s.sizes = make([]int64, len(s.files))
		for i, p := range s.files {
			if fi, err := os.Stat(p); err == nil {
				s.sizes[i] = fi.Size()
			}
		}
	}
	for i, n := range s.sizes {
		total += n
		if i < s.next-1 || (i == s.next-1 && s.cur == nil) {
			done += n
		}
	}
	if s.cur != nil {
		done += s.cur.at().off
	}
	if s.eof {
		done = total
	}
	return min(done, total), total
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Splitter  = (*Source)(nil)
	_ source.Finisher  = (*Source)(nil)
	_ source.Reorderer = (*Source)(nil)
)

// New checks the configuration and the files and returns the source. It
// returns a *NoFilesError when the path names no file, an error naming
// the file when one cannot be opened or (CSV) its header lacks a schema
// field (wrapping a *format.MissingColumnsError), and an error naming the
// key for an invalid setting or a field missing from Fields.
func New(cfg Config) (*Source, error) {
	sp := &cfg.Spec
	if sp.Type != "" && sp.Type != "file" {
		return nil, fmt.Errorf("source.type: %q is not a file source", sp.Type)
	}
	if cfg.Fields.Schema == nil {
		return nil, errors.New("file source: Fields.Schema is nil")
	}
	if sp.Path == "" {
		return nil, errors.New("source.path: required for a file source")
	}
	s := &Source{schema: cfg.Fields.Schema, fields: cfg.Fields}
	switch f := sourceFormat(sp); f {
	case "jsonl":
		s.jsonl = true
	case "csv", "avro":
	default:
		return nil, fmt.Errorf("source.format: %q is not jsonl, csv or avro", f)
	}
	if err := s.d.init(&cfg, &s.fields); err != nil {
		return nil, err
	}
	if sp.Replay != nil {
		rp, err := newReplayer(sp.Replay, &s.d, s.schema)
		if err != nil {
			return nil, err
		}
		s.rp = rp
	}
	files, err := listFiles(sp.Path)
	if err != nil {
		return nil, err
	}
	s.files = files
	if sourceFormat(sp) == "avro" {
		if err := s.initAvro(&cfg); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s.jsonl {
		s.json = format.NewJSON(s.fields)
		for _, p := range files {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			f.Close()
		}
		return s, nil
	}
	if err := s.initCSV(sp); err != nil {
		return nil, err
	}
	return s, nil
}

// sourceFormat returns the configured format, or the one the path's
// extension implies.
func sourceFormat(sp *spec.Source) string {
	if sp.Format != "" {
		return sp.Format
	}
	p := strings.ToLower(sp.Path)
	switch {
	case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".json"), strings.HasSuffix(p, ".ndjson"):
		return "jsonl"
	case strings.HasSuffix(p, ".csv"):
		return "csv"
	case strings.HasSuffix(p, ".avro"):
		return "avro"
	}
	return ""
}

// Partitions returns the partition names: "0" for an unpartitioned
// source, the values of partition_field seen so far in first-seen order,
// or "p0" … "pN-1" with replay (all known from the start).
func (s *Source) Partitions() []string {
	if s.rp != nil {
		return s.rp.names
	}
	return s.d.partNames()
}

// Next appends up to max records (at least one) to b. It returns
// source.End, possibly with records, once every file has been read to
// its end (and, with replay, every held record delivered), and ErrClosed
// after Close. Other errors (a file that cannot be read) are fatal. Rows,
// their strings and Meta.Raw live in b and stay valid until b is Reset.
func (s *Source) Next(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	n := len(b.Meta)
	st, err := s.nextBatch(ctx, b, max)
	s.delivered += int64(len(b.Meta) - n)
	return st, err
}

func (s *Source) nextBatch(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	if s.shut {
		return source.More, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	if max < 1 {
		max = 1
	}
	if s.rp != nil {
		return s.rp.next(s, b, max)
	}
	if s.eof {
		return source.End, nil
	}
	var bytes int
	a := b.Arena()
	for range max {
		r, m := b.Next(s.schema)
		end, err := s.read(r, m, a, true)
		if end || err != nil {
			b.Rows = b.Rows[:len(b.Rows)-1]
			b.Meta = b.Meta[:len(b.Meta)-1]
			if err != nil {
				return source.More, err
			}
			s.eof = true
			return source.End, nil
		}
		s.d.assign(r, m)
		// A batch holds its records' raw bytes: cut it short after
		// MaxBatchBytes so that huge lines do not pile up.
		if bytes += len(m.Raw); bytes >= MaxBatchBytes {
			break
		}
	}
	return source.More, nil
}

// Splits implements source.Splitter: JSONL and CSV files. Their
// records are read in order (Claim: a JSONL line, a CSV record's lines
// up to the close of its quoted fields) and decoded on any goroutine
// (Decode); what depends on the decoded fields of the records before —
// the partition_field's partitions, the arrival_time_field's arrival
// times, the ordinal — is Finish's, in claim order (source.Finisher),
// and a replay delivers from the decoded input fed to it in claim order
// (source.Reorderer: Feed, Deliver), numbering each record as it takes
// it.
func (s *Source) Splits() bool {
	return s.avro == nil
}

// Claim implements source.Splitter: the next up to max records of the
// files, in order, with their positions and raw bytes (in b's arena),
// undecoded (a CSV record that is not valid CSV, or is cut, has its
// Meta.Err), their partitions, arrival times and ordinals left to
// Finish; the same records, batch cuts and errors as Next, and after
// Finish the same metas and positions. Only for a source that Splits.
func (s *Source) Claim(ctx context.Context, b *source.Batch, max int) (source.Status, error) {
	s.claims++ // each claim is finished once, in order (Finish)
	if s.rp != nil {
		// Fed to the replay in this order (Feed): where this claim
		// begins.
		e := s.readState(positionV3)
		s.feed.starts = append(s.feed.starts, e.Bytes())
	}
	if !s.Splits() {
		return source.More, errors.New("file source: Claim on a source that does not split its reads")
	}
	if s.shut {
		return source.More, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return source.More, err
	}
	if s.eof {
		return source.End, nil
	}
	if max < 1 {
		max = 1
	}
	var bytes int
	a := b.Arena()
	for range max {
		_, m := b.Append()
		end, err := s.nextRecord(nil, m, a, true)
		if end || err != nil {
			b.Rows = b.Rows[:len(b.Rows)-1]
			b.Meta = b.Meta[:len(b.Meta)-1]
			if err != nil {
				return source.More, err
			}
			s.eof = true
			return source.End, nil
		}
		s.delivered++
		if bytes += len(m.Raw); bytes >= MaxBatchBytes {
			break
		}
	}
	return source.More, nil
}

// fileStart is a file Claim opened: before the record numbered rec
// (counted as delivered), during the claim numbered claim.
type fileStart struct{ rec, claim int64 }

// Finish implements source.Finisher: it numbers the records of b
// (ordinal; restarting at each file's first record) and sets their
// partitions and arrival times (partition_field, arrival_time_field)
// from their decoded rows, as Next does, in claim order.
func (s *Source) Finish(b *source.Batch) {
	d := &s.d
	s.finishes++
	if s.rp != nil {
		return // the replay numbers each record as it takes it (Deliver)
	}
	if !d.hasOrd && !d.hasPart && !d.hasArr {
		s.finished += int64(b.Len())
		return
	}
	for i := range b.Meta {
		for len(s.starts) > 0 && s.starts[0].rec <= s.finished {
			s.starts = s.starts[1:]
			d.newFile()
		}
		r, m := &b.Rows[i], &b.Meta[i]
		d.number(r, m)
		d.assign(r, m)
		s.finished++
	}
	// Files this batch's claim opened after its last record (empty
	// ones, or on the way to the end): Next opened them too.
	for len(s.starts) > 0 && s.starts[0].claim == s.finishes {
		s.starts = s.starts[1:]
		d.newFile()
	}
}

// FinishesRows implements source.RowFinisher: Finish writes the ordinal
// field into the rows (source.ordinal); partitions and arrival times go
// into the metas only.
func (s *Source) FinishesRows() bool { return s.d.hasOrd }

// Decode implements source.Splitter: it decodes the records Claim put
// in b into their rows, their strings into b's arena, setting Meta.Err
// of a record that does not decode. Safe for concurrent use (each call
// takes its own decoder).
func (s *Source) Decode(b *source.Batch) {
	if !s.jsonl {
		s.decodeCSV(b)
		return
	}
	dec, _ := s.decs.Get().(*format.JSON)
	if dec == nil {
		dec = format.NewJSON(s.fields)
	}
	a := b.Arena()
	for i := range b.Meta {
		r, m := &b.Rows[i], &b.Meta[i]
		s.schema.Shape(r)
		if m.Err == nil {
			m.Err = dec.Decode(m.Raw, r, a)
		}
	}
	s.decs.Put(dec)
}

// MaxBatchBytes bounds the raw bytes of one batch (16 MiB): Next returns
// fewer records than asked once its records hold this much.
const MaxBatchBytes = 16 << 20

// read decodes the next record of the files, in order, into r (shaped,
// all null) and m, its strings into a, and numbers it (ordinal). With
// keepRaw, m.Raw is copied into a too; otherwise it points into the
// reader's buffer until the next call (the replay copies it itself). It
// returns end after the last record of the last file: a file's reader
// says its file ended by returning io.EOF itself (io.Reader's
// convention, compared by identity: a read error that wraps io.EOF is a
// failure, never an end).
func (s *Source) read(r *row.Row, m *source.Meta, a *source.Arena, keepRaw bool) (end bool, err error) {
	if end, err := s.nextRecord(r, m, a, false); end || err != nil {
		return end, err
	}
	if keepRaw {
		m.Raw = a.Bytes(m.Raw)
	}
	s.d.number(r, m)
	return false, nil
}

// nextRecord reads the next record of the files, in order, opening each
// file and moving past its end: decoded into r (read), or with claim
// (Claim) only its line, its raw bytes copied into a. It returns end
// after the last record of the last file.
func (s *Source) nextRecord(r *row.Row, m *source.Meta, a *source.Arena, claim bool) (end bool, err error) {
	for {
		if s.cur == nil {
			if s.next == len(s.files) {
				return true, nil
			}
			if err := s.open(s.files[s.next], readerAt{}); err != nil {
				return false, err
			}
			s.next++
			if claim {
				// Finish restarts the ordinal at this record (Claim runs
				// ahead of it).
				if s.d.hasOrd {
					s.starts = append(s.starts, fileStart{rec: s.delivered, claim: s.claims})
				}
			} else {
				s.d.newFile()
			}
		}
		var err error
		if claim {
			switch c := s.cur.(type) {
			case *jsonlReader:
				err = c.claim(m)
			case *csvReader:
				err = c.claim(m)
				if err == nil && bytes.ContainsAny(m.Raw, "\r\n") {
					s.modes.Store(c.path, c.lines.mode)
				}
			}
		} else {
			err = s.cur.next(r, m, a)
		}
		if err == io.EOF {
			s.buf = s.cur.buffer()
			cerr := s.cur.close()
			s.cur = nil
			if cerr != nil {
				return false, cerr
			}
			continue
		}
		if err != nil {
			return false, err
		}
		if claim {
			m.Raw = a.Bytes(m.Raw)
		}
		return false, nil
	}
}

// open starts reading the file at path, at p (the zero readerAt: its
// start).
func (s *Source) open(path string, p readerAt) error {
	if s.avro != nil {
		o, err := openOCF(path, s.avro, s.fields, s.buf, p)
		if err != nil {
			return err
		}
		s.cur = o
		return nil
	}
	if s.jsonl {
		j, err := openJSONL(path, s.json, s.buf, p.off, p.line, p.mode)
		if err != nil {
			return err
		}
		s.cur = j
		return nil
	}
	c, err := openCSV(path, &s.csv, s.fields, s.buf, p.off, p.line, p.mode, p.single)
	if err != nil {
		return err
	}
	if h := s.heads[path]; !slices.Equal(h, c.header) {
		return fmt.Errorf("%s: the CSV header changed since the source opened: %q, now %q", path, h, c.header)
	}
	s.cur = c
	return nil
}

// Close closes the open file. Next returns ErrClosed afterwards; closing
// twice is not an error.
func (s *Source) Close() error {
	s.shut = true
	if s.cur != nil {
		err := s.cur.close()
		s.cur = nil
		return err
	}
	return nil
}
