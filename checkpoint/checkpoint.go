// Package checkpoint stores and finds checkpoint files: one file per
// checkpoint in a directory, written atomically (temporary file, fsync,
// rename, fsync of the directory), with a format version and a checksum,
// so that a crash at any instant leaves either the previous complete
// checkpoints or a new complete one — never a file that reads as complete
// but is not. What a checkpoint holds (source position, operator state,
// sinks' prepared output) is the engine's payload; docs/checkpoints.md
// describes the protocol.
//
// File layout (all integers little-endian):
//
//	magic        8 bytes  "TIDEMARK"
//	version      2 bytes  FormatVersion
//	header len   4 bytes
//	header       id (8), created ms (8), pipeline name (4-byte length +
//	             bytes), spec (4-byte length + bytes)
//	payload len  8 bytes
//	payload
//	checksum     8 bytes  xxHash64 of every byte before it
//
// Files are named chk-<id, 20 digits>.tmck so that names sort by id.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/internal/durable"
)

// FormatVersion is the version of the file layout and of the engine
// payload this build writes and reads. Version 2: the payload is a
// manifest referencing key-group sections in segment files (store.go).
const FormatVersion = 2

const (
	magic  = "TIDEMARK"
	prefix = "chk-"
	suffix = ".tmck"
)

// Checkpoint is one checkpoint.
type Checkpoint struct {
	ID       int64  // increasing within a checkpoint directory, from 1
	Created  int64  // wall-clock ms when it was taken (informational)
	Pipeline string // the pipeline's name
	// Spec is the pipeline spec the checkpoint was taken under (canonical
	// JSON), compared at restore to refuse an incompatible change.
	Spec    []byte
	Payload []byte // the engine's state
}

// Name returns the file name of checkpoint id.
func Name(id int64) string { return fmt.Sprintf("%s%020d%s", prefix, id, suffix) }

// Encode returns the file contents of c.
func Encode(c *Checkpoint) []byte { return AppendEncode(nil, c) }

// AppendEncode appends the file contents of c (as Encode) to b and returns
// the extended buffer; a caller taking checkpoints often reuses b.
func AppendEncode(b []byte, c *Checkpoint) []byte {
	b = slices.Grow(b, 64+len(c.Pipeline)+len(c.Spec)+len(c.Payload))
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, FormatVersion)
	hdr := 8 + 8 + 4 + len(c.Pipeline) + 4 + len(c.Spec)
	b = binary.LittleEndian.AppendUint32(b, uint32(hdr))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.ID))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.Created))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Pipeline)))
	b = append(b, c.Pipeline...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Spec)))
	b = append(b, c.Spec...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(c.Payload)))
	b = append(b, c.Payload...)
	return binary.LittleEndian.AppendUint64(b, xxhash.Sum64(b[start:]))
}

// ErrCorrupt is wrapped by Decode's errors for a file that is truncated,
// damaged or not a checkpoint; ErrVersion by those for a file of another
// format version.
var (
	ErrCorrupt = errors.New("corrupt checkpoint")
	ErrVersion = errors.New("unsupported checkpoint format version")
)

// Decode parses a checkpoint file's contents. Errors wrap ErrCorrupt (bad
// magic, length or checksum: a partial or damaged file) or ErrVersion.
func Decode(b []byte) (*Checkpoint, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if len(b) < len(magic)+2+4+24+8+8 || string(b[:len(magic)]) != magic {
		return nil, corrupt("not a tidemark checkpoint (%d bytes)", len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	v := binary.LittleEndian.Uint16(b[len(magic):])
	if xxhash.Sum64(body) != sum {
		return nil, corrupt("checksum mismatch (a partial or damaged file)")
	}
	if v != FormatVersion {
		why := ""
		if v == 1 {
			why = " (version 1 held the whole state in one file, before state was kept per key group: finish the pipeline with the build that wrote it, or recompute from the start with a new checkpoint.dir)"
		}
		return nil, fmt.Errorf("%w: format version %d, this build reads %d%s", ErrVersion, v, FormatVersion, why)
	}
	p := body[len(magic)+2:]
	hdr := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if hdr < 24 || hdr > len(p) {
		return nil, corrupt("header length %d", hdr)
	}
	h, p := p[:hdr], p[hdr:]
	c := &Checkpoint{
		ID:      int64(binary.LittleEndian.Uint64(h)),
		Created: int64(binary.LittleEndian.Uint64(h[8:])),
	}
	h = h[16:]
	n := int(binary.LittleEndian.Uint32(h))
	if n < 0 || 4+n+4 > len(h) {
		return nil, corrupt("pipeline name length %d", n)
	}
	c.Pipeline = string(h[4 : 4+n])
	h = h[4+n:]
	n = int(binary.LittleEndian.Uint32(h))
	if 4+n != len(h) {
		return nil, corrupt("spec length %d", n)
	}
	c.Spec = h[4:]
	if len(p) < 8 {
		return nil, corrupt("no payload length")
	}
	pl := binary.LittleEndian.Uint64(p)
	if pl != uint64(len(p)-8) {
		return nil, corrupt("payload length %d, %d bytes present", pl, len(p)-8)
	}
	c.Payload = p[8:]
	return c, nil
}

// Write writes c into dir atomically and returns the file's path and size
// in bytes. A crash during Write leaves at most a temporary file (removed
// by List's caller through Clean), never a partial checkpoint under its
// final name.
func Write(dir string, c *Checkpoint) (string, int, error) {
	return WriteEncoded(dir, c.ID, Encode(c))
}

// WriteEncoded is Write for a checkpoint already encoded (AppendEncode)
// with id id.
func WriteEncoded(dir string, id int64, data []byte) (string, int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	final := filepath.Join(dir, Name(id))
	f, err := os.CreateTemp(dir, ".tmp-"+Name(id)+"-")
	if err != nil {
		return "", 0, err
	}
	tmp := f.Name()
	fail := func(err error) (string, int, error) {
		f.Close()
		os.Remove(tmp)
		return "", 0, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", 0, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	if err := SyncDir(dir); err != nil {
		return "", 0, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	return final, len(data), nil
}

// SyncDir fsyncs a directory, making renames and creations in it durable
// (internal/durable.SyncDir; errors: opening, syncing, closing dir).
func SyncDir(dir string) error { return durable.SyncDir(dir) }

// List returns the ids of the checkpoint files in dir, newest first. A
// missing directory has none.
func List(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix), 10, 64)
		if err != nil || id <= 0 {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// Clean removes temporary files a crashed Write left in dir.
func Clean(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-"+prefix) || strings.HasPrefix(e.Name(), ".tmp-"+segPrefix) || strings.HasPrefix(e.Name(), ".tmp-"+TablePrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Latest returns the newest checkpoint in dir that reads back complete,
// calling logf (if not nil) for each newer one it skips, with the reason.
// It returns nil and no error when dir holds no checkpoint file, and an
// error naming every file when it holds some but none is usable (the run
// must not silently start from scratch over published output).
func Latest(dir string, logf func(format string, args ...any)) (*Checkpoint, error) {
	ids, err := List(dir)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var reasons []string
	for _, id := range ids {
		path := filepath.Join(dir, Name(id))
		c, err := Read(path)
		if err == nil && c.ID != id {
			err = fmt.Errorf("%w: file name says id %d, contents %d", ErrCorrupt, id, c.ID)
		}
		if err == nil {
			return c, nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", path, err))
		if logf != nil {
			logf("checkpoint %s is unusable (%v); trying the previous one", path, err)
		}
	}
	return nil, fmt.Errorf("no usable checkpoint in %s (%s); remove the directory to start from scratch", dir, strings.Join(reasons, "; "))
}

// Read reads and decodes one checkpoint file; errors name the path.
func Read(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Prune deletes all but the newest retain checkpoint files of dir.
func Prune(dir string, retain int) error {
	ids, err := List(dir)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if i < retain {
			continue
		}
		if err := os.Remove(filepath.Join(dir, Name(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
