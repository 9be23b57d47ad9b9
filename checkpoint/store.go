package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Segments hold the key-group state of checkpoints (docs/checkpoints.md,
// "Incremental checkpoints"): a checkpoint writes the sections of the key
// groups that changed since the previous one into one new segment, and its
// manifest (the checkpoint file, written last) references, for every key
// group, the section holding its newest state — in this segment or an
// earlier one. A segment is deleted once no retained manifest references
// it.
//
// Segment layout: the 8 bytes "TMSEG\x00\x00\x01", then the sections back
// to back; the manifest holds each section's offset, length and xxHash64.
// Files are named seg-<checkpoint id, 20 digits>.tmseg.

// SegmentMagic starts every segment file.
const SegmentMagic = "TMSEG\x00\x00\x01"

const (
	segPrefix = "seg-"
	segSuffix = ".tmseg"
)

// SegmentName returns the name of checkpoint id's segment.
func SegmentName(id int64) string { return fmt.Sprintf("%s%020d%s", segPrefix, id, segSuffix) }

// SegmentID returns the checkpoint id of a segment name, and false for a
// name that is not a segment's.
func SegmentID(name string) (int64, bool) {
	if !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(name, segPrefix), segSuffix), 10, 64)
	return id, err == nil && id > 0
}

// Store keeps the segments of a pipeline's checkpoints. DirStore keeps
// them in the checkpoint directory; another implementation can keep them
// where several processes read them (a shared directory, a database).
type Store interface {
	// WriteSegment stores data under name, durably: once it returns, the
	// segment survives a crash. A crash during the call leaves no segment
	// of that name (or a complete one).
	WriteSegment(name string, data []byte) error
	// ReadSegment returns n bytes of segment name from offset off. Errors
	// wrap os.ErrNotExist for a missing segment and io.ErrUnexpectedEOF
	// for one shorter than off+n.
	ReadSegment(name string, off, n int64) ([]byte, error)
	// Segments lists the stored segments' names, sorted.
	Segments() ([]string, error)
	// RemoveSegment deletes a segment; a missing one is not an error.
	RemoveSegment(name string) error
}

// DirStore is a Store in a local directory (the checkpoint directory).
type DirStore struct{ Dir string }

var _ Store = DirStore{}

// WriteSegment writes the file atomically: a temporary file, fsync,
// rename, fsync of the directory.
func (s DirStore) WriteSegment(name string, data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, ".tmp-"+name+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("segment %s: %w", name, err)
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
	if err := os.Rename(tmp, filepath.Join(s.Dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("segment %s: %w", name, err)
	}
	return SyncDir(s.Dir)
}

// ReadSegment reads a section of a segment file.
func (s DirStore) ReadSegment(name string, off, n int64) ([]byte, error) {
	f, err := os.Open(filepath.Join(s.Dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if off < 0 || n < 0 || n > 1<<40 {
		return nil, fmt.Errorf("segment %s: section at %d of %d bytes", name, off, n)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("segment %s: %w", filepath.Join(s.Dir, name), err)
	}
	return b, nil
}

// Segments lists the segment files of the directory.
func (s DirStore) Segments() ([]string, error) {
	return s.names(func(n string) bool { _, ok := SegmentID(n); return ok })
}

// RemoveSegment deletes a segment file.
func (s DirStore) RemoveSegment(name string) error {
	err := os.Remove(filepath.Join(s.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// LatestUsable is Latest with a check of each candidate beyond its own
// file: usable (e.g. reading every segment the manifest references) may
// refuse it, and the next older checkpoint is tried, with the reason
// logged. It returns the checkpoint and what usable returned for it.
// Errors: as Latest's when no checkpoint is usable.
func LatestUsable[T any](dir string, logf func(format string, args ...any), usable func(*Checkpoint) (T, error)) (*Checkpoint, T, error) {
	var zero T
	ids, err := List(dir)
	if err != nil || len(ids) == 0 {
		return nil, zero, err
	}
	var reasons []string
	for _, id := range ids {
		path := filepath.Join(dir, Name(id))
		c, err := Read(path)
		if err == nil && c.ID != id {
			err = fmt.Errorf("%w: file name says id %d, contents %d", ErrCorrupt, id, c.ID)
		}
		var v T
		if err == nil {
			v, err = usable(c)
			if err == nil {
				return c, v, nil
			}
			if !errors.Is(err, ErrCorrupt) {
				// Not damage: a checkpoint of another pipeline or spec, or
				// of another key_groups — the run must stop, not fall back.
				return nil, zero, fmt.Errorf("checkpoint %d in %s: %w", id, dir, err)
			}
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", path, err))
		if logf != nil {
			logf("checkpoint %s is unusable (%v); trying the previous one", path, err)
		}
	}
	return nil, zero, fmt.Errorf("no usable checkpoint in %s (%s); remove the directory to start from scratch", dir, strings.Join(reasons, "; "))
}
