package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/internal/flock"
)

// DirTaskStore is a TaskStore in a directory: object name of task is the
// file DIR/<task>/<name>, both names escaped by EscapeName (any string is
// one safe path element, reversibly; "orders/3" is the directory
// "orders%2F3"; a name too long to escape whole is shortened with a hash,
// and its object's file starts with the whole name, which List reads). The directory may be local, for one instance, or on a
// file system every instance of a group mounts (NFS, CephFS, an SMB share
// with hard links): nothing relies on locks inside one process, and
// several processes on several machines may Put, Get, List and Delete at
// once.
//
// Put writes a temporary file ".tmp-<random>" in the task's directory,
// holding a file lock on it (internal/flock.TryLock) while it fills it,
// fsyncs it, publishes it with link(2) under the object's name — which
// fails when the name exists, so two writers can never replace each
// other's object (a rename would) — fsyncs the directory and removes the
// temporary name. A crash at any instant leaves either no object or the
// whole one, and maybe a temporary file: List never lists it and Get never
// reads it (escaped names never start with '.'), and a later Put in that
// task's directory, or Clean, removes it once its writer is gone (its lock
// is free). The file system must support hard links; Put says so when it
// does not.
//
// Methods are safe for concurrent use. Close does nothing: the store holds
// no open files between calls.
type DirTaskStore struct {
	dir string
	// hook, when set, runs after the temporary file is written and synced
	// and before it is linked (tests stop or kill a Put there).
	hook func(tmp string)
}

var _ TaskStore = (*DirTaskStore)(nil)

// tempPrefix starts the temporary files of Put (never an escaped name).
const tempPrefix = ".tmp-"

// errTempGone reports that a Put's temporary file was removed under it by
// a cleaner that took its lock first; Put starts again with a new one.
var errTempGone = errors.New("temporary file removed by a cleaner")

// OpenDirTaskStore returns the store in directory dir, creating it (and
// its parents) if absent. Errors: dir is empty, is not a directory, or
// cannot be created; they name dir.
func OpenDirTaskStore(dir string) (*DirTaskStore, error) {
	if dir == "" {
		return nil, errors.New("checkpoint store: empty directory name")
	}
	if err := mkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	return &DirTaskStore{dir: dir}, nil
}

// Dir returns the store's directory, as given.
func (s *DirTaskStore) Dir() string { return s.dir }

// mkdirSynced creates dir and its missing parents, fsyncing the parent of
// each directory it creates so that the new entries survive a crash. A
// path that exists and is not a directory is an error.
func mkdirSynced(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) { // made meanwhile by another process
			return mkdirSynced(dir)
		}
		return err
	}
	return SyncDir(parent)
}

// paths returns the task's directory and the object's file.
func (s *DirTaskStore) paths(task, name string) (taskDir, file string, err error) {
	te, err := EscapeName(task)
	if err != nil {
		return "", "", fmt.Errorf("checkpoint store %s: task: %w", s.dir, err)
	}
	ne, err := EscapeName(name)
	if err != nil {
		return "", "", fmt.Errorf("checkpoint store %s: object of task %q: %w", s.dir, task, err)
	}
	taskDir = filepath.Join(s.dir, te)
	return taskDir, filepath.Join(taskDir, ne), nil
}

// Put stores data as object name of task (see DirTaskStore for how).
// Errors: os.ErrExist (wrapped) when the object exists; an empty or too
// long name; the file system's errors, naming the file.
func (s *DirTaskStore) Put(ctx context.Context, task, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	taskDir, file, err := s.paths(task, name)
	if err != nil {
		return err
	}
	if err := mkdirSynced(taskDir); err != nil {
		return fmt.Errorf("checkpoint object %q of task %q: %w", name, task, err)
	}
	s.clean(taskDir) // what crashed writers left; best effort
	var head []byte
	if shortened(filepath.Base(file)) {
		head = shortHeader(name)
	}
	for range 8 {
		err = s.put(taskDir, file, head, data)
		if !errors.Is(err, errTempGone) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint object %q of task %q: %w", name, task, err)
	}
	return nil
}

// put is one attempt of Put: errTempGone when a cleaner removed the
// temporary file before it was linked.
func (s *DirTaskStore) put(taskDir, file string, head, data []byte) (err error) {
	f, err := os.CreateTemp(taskDir, tempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil && !errors.Is(err, errTempGone) {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Lock before writing: a cleaner that finds the file unlocked takes it
	// for a crashed writer's. Between the create and the lock a cleaner may
	// have taken the lock and removed the file: then the name no longer
	// leads to f, and Put starts again.
	if lerr := flock.TryLock(f); errors.Is(lerr, flock.ErrLocked) {
		f.Close()
		return errTempGone
	}
	// Without locks on this file system the temporary file is never
	// cleaned (a cleaner cannot tell it from a live writer's), only
	// ignored.
	mine, err := f.Stat()
	if err != nil {
		return err
	}
	if fi, serr := os.Stat(tmp); serr != nil || !os.SameFile(fi, mine) {
		f.Close()
		return errTempGone
	}
	if len(head) > 0 {
		if _, err := f.Write(head); err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if s.hook != nil {
		s.hook(tmp)
	}
	if err := os.Link(tmp, file); err != nil {
		switch {
		case errors.Is(err, os.ErrExist):
			// An NFS client that retransmits a LINK whose reply was lost
			// reports EEXIST for its own success: the name then leads to
			// this very file.
			if fi, serr := os.Stat(file); serr != nil || !os.SameFile(fi, mine) {
				return fmt.Errorf("%s exists: objects are never replaced: %w", file, os.ErrExist)
			}
		case errors.Is(err, os.ErrNotExist):
			return errTempGone
		case errors.Is(err, errors.ErrUnsupported), errors.Is(err, os.ErrPermission):
			return fmt.Errorf("%w (a checkpoint store directory needs a file system with hard links, "+
				"so that two writers never replace each other's objects; use one that has them, or checkpoint.store)", err)
		default:
			return err
		}
	}
	if err := SyncDir(taskDir); err != nil {
		return fmt.Errorf("sync %s: %w", taskDir, err)
	}
	// The object is published; what fails from here leaves at most a
	// second name of it, which a later Put or Clean removes.
	os.Remove(tmp)
	f.Close()
	return nil
}

// Get returns n bytes of object name of task from byte offset off (n < 0:
// to the end). Errors: os.ErrNotExist (wrapped) for a missing object,
// io.ErrUnexpectedEOF for one shorter than off+n, a negative off; they
// name the file.
func (s *DirTaskStore) Get(ctx context.Context, task, name string, off, n int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, file, err := s.paths(task, name)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("checkpoint object %s: negative offset %d", file, off)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("checkpoint object %q of task %q: %w", name, task, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint object %q of task %q: %w", name, task, err)
	}
	size := fi.Size()
	if shortened(filepath.Base(file)) {
		// The whole name first (shortHeader): it must be this name's.
		h := int64(len(shortMagic) + 4 + len(name))
		head := make([]byte, h)
		if _, err := f.ReadAt(head, 0); err != nil || string(head) != string(shortHeader(name)) {
			return nil, fmt.Errorf("checkpoint object %s does not hold object %q of task %q (its header differs): %w", file, name, task, os.ErrNotExist)
		}
		return readRange(io.NewSectionReader(f, h, size-h), file, size-h, off, n)
	}
	return readRange(f, file, size, off, n)
}

// readRange returns n bytes of r (size bytes, of file) from off (n < 0: to
// the end).
func readRange(f io.ReaderAt, file string, size, off, n int64) ([]byte, error) {
	if off > size {
		return nil, fmt.Errorf("checkpoint object %s is %d bytes, shorter than offset %d: %w", file, size, off, io.ErrUnexpectedEOF)
	}
	if n < 0 {
		n = size - off
	}
	if n > size-off {
		return nil, fmt.Errorf("checkpoint object %s is %d bytes, shorter than %d bytes from offset %d: %w",
			file, size, n, off, io.ErrUnexpectedEOF)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("checkpoint object %s: %w", file, err)
	}
	return b, nil
}

// List returns the names of task's objects, sorted (by bytes), none for a
// task never written. Temporary files and files whose names EscapeName
// does not produce are not objects.
func (s *DirTaskStore) List(ctx context.Context, task string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	te, err := EscapeName(task)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store %s: task: %w", s.dir, err)
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, te))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint store %s: task %q: %w", s.dir, task, err)
	}
	var names []string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if n, ok := UnescapeName(e.Name()); ok {
			names = append(names, n)
			continue
		}
		if e.Name()[0] != '.' && shortened(e.Name()) {
			if n, ok := s.shortName(filepath.Join(s.dir, te, e.Name())); ok {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// Delete removes objects of task; a missing one is not an error. The
// task's directory is fsynced after the removals.
func (s *DirTaskStore) Delete(ctx context.Context, task string, names ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	var taskDir string
	for _, name := range names {
		td, file, err := s.paths(task, name)
		if err != nil {
			return err
		}
		taskDir = td
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint object %q of task %q: %w", name, task, err)
		}
	}
	if err := SyncDir(taskDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint store %s: task %q: %w", s.dir, task, err)
	}
	return nil
}

// Clean removes the temporary files that writers of task which crashed
// left (Put does this too, in the task it writes), and returns how many it
// removed. A temporary file whose writer is alive — in this process or
// another, on this machine or another — is locked and stays.
func (s *DirTaskStore) Clean(ctx context.Context, task string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	te, err := EscapeName(task)
	if err != nil {
		return 0, fmt.Errorf("checkpoint store %s: task: %w", s.dir, err)
	}
	n, err := s.clean(filepath.Join(s.dir, te))
	if err != nil {
		return n, fmt.Errorf("checkpoint store %s: task %q: %w", s.dir, task, err)
	}
	return n, nil
}

// clean removes the unlocked temporary files of taskDir. A file is
// removed only while this call holds its lock and its name still leads to
// the file locked, so a live writer's file is never touched.
func (s *DirTaskStore) clean(taskDir string) (int, error) {
	ents, err := os.ReadDir(taskDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	var first error
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		path := filepath.Join(taskDir, e.Name())
		ok, err := removeStale(path)
		if err != nil && first == nil {
			first = err
		}
		if ok {
			removed++
		}
	}
	return removed, first
}

// removeStale removes the temporary file at path if no writer holds its
// lock.
func removeStale(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // its writer finished
		}
		return false, err
	}
	defer f.Close()
	if flock.TryLock(f) != nil {
		return false, nil // a live writer, or no locks here: leave it
	}
	locked, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, locked) {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// Close does nothing (the store holds no resources between calls).
func (s *DirTaskStore) Close() error { return nil }

// shortName returns the object name a file under a shortened name holds
// in its header, false when it holds none or one that does not shorten
// to the file's name (not the store's file).
func (s *DirTaskStore) shortName(file string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var b [len(shortMagic) + 4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return "", false
	}
	n, err := parseShortLen(b[:])
	if err != nil {
		return "", false
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(f, name); err != nil {
		return "", false
	}
	if e, err := EscapeName(string(name)); err != nil || e != filepath.Base(file) {
		return "", false
	}
	return string(name), true
}
