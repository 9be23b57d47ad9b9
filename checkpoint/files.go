package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cespare/xxhash/v2"
)

// Table files: the disk state backend's checkpoints (docs/state.md) keep
// the immutable SST files of the tasks' stores as objects beside the
// segments, one file each, named TablePrefix + the store's id + "-" + the
// file's name in the store ("tbl-3f9a…-000012.sst"). A table is written
// once and referenced by every checkpoint that holds it; it is deleted,
// as a segment is, once no retained checkpoint references it.

// TablePrefix starts every table object's name.
const TablePrefix = "tbl-"

// FileStore is a Store that also keeps table files. DirStore implements
// it.
type FileStore interface {
	Store
	// PutFile stores the file at path as object name, durably, and returns
	// its size and xxHash64: a hard link when the store and the file are
	// on one file system (the file must never change), else a copy
	// (temporary file, fsync, rename, fsync of the directory). An existing
	// object of that name is an error wrapping os.ErrExist.
	PutFile(name, path string) (size int64, hash uint64, err error)
	// GetFile makes object name the file at path (which must not exist):
	// a hard link, or a copy, and returns the bytes it copied (0 for a
	// link). Errors wrap os.ErrNotExist for a missing object.
	GetFile(name, path string) (copied int64, err error)
	// StatFile returns an object's size; errors wrap os.ErrNotExist.
	StatFile(name string) (int64, error)
	// Files lists the table objects' names, sorted.
	Files() ([]string, error)
	// RemoveFile deletes an object; a missing one is not an error.
	RemoveFile(name string) error
}

var _ FileStore = DirStore{}

// PutFile links (or copies) path into the directory as name.
func (s DirStore) PutFile(name, path string) (int64, uint64, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return 0, 0, err
	}
	dst := filepath.Join(s.Dir, name)
	size, hash, err := hashFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("table %s: %w", name, err)
	}
	err = os.Link(path, dst)
	if err == nil {
		return size, hash, SyncDir(s.Dir)
	}
	if errors.Is(err, os.ErrExist) || !crossDevice(err) {
		return 0, 0, fmt.Errorf("table %s: %w", name, err)
	}
	if err := copyFile(path, dst, s.Dir); err != nil {
		return 0, 0, fmt.Errorf("table %s: %w", name, err)
	}
	return size, hash, nil
}

// crossDevice reports whether a link failed because the two names are on
// different file systems (or the file system has no hard links).
func crossDevice(err error) bool {
	return errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EMLINK)
}

// copyFile copies src to dst atomically (a temporary file in dir, fsync,
// rename, fsync of dir); dst must not exist.
func copyFile(src, dst, dir string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s: %w", dst, os.ErrExist)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+TablePrefix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}

// hashFile returns a file's size and xxHash64.
func hashFile(path string) (int64, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := xxhash.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, 0, err
	}
	return n, h.Sum64(), nil
}

// HashFile returns the size and xxHash64 of the file at path (a restore
// checks a copied table against its checkpoint's record).
func HashFile(path string) (int64, uint64, error) { return hashFile(path) }

// GetFile links (or copies) object name to path.
func (s DirStore) GetFile(name, path string) (int64, error) {
	src := filepath.Join(s.Dir, name)
	err := os.Link(src, path)
	if err == nil || errors.Is(err, os.ErrNotExist) || !crossDevice(err) {
		if err != nil {
			return 0, fmt.Errorf("table %s: %w", src, err)
		}
		return 0, nil
	}
	if err := copyFile(src, path, filepath.Dir(path)); err != nil {
		return 0, fmt.Errorf("table %s: %w", src, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", path, err)
	}
	return st.Size(), nil
}

// StatFile returns the size of object name.
func (s DirStore) StatFile(name string) (int64, error) {
	st, err := os.Stat(filepath.Join(s.Dir, name))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Files lists the table objects of the directory.
func (s DirStore) Files() ([]string, error) {
	return s.names(func(n string) bool { return strings.HasPrefix(n, TablePrefix) })
}

// RemoveFile deletes a table object.
func (s DirStore) RemoveFile(name string) error { return s.RemoveSegment(name) }

// names lists the directory's entries that keep accepts, sorted (none for
// a missing directory).
func (s DirStore) names(keep func(name string) bool) ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if keep(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
