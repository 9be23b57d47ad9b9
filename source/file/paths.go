package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// NoFilesError is returned by New when the configured path names no file:
// it does not exist, is an empty directory, or is a glob that matches no
// regular file.
type NoFilesError struct {
	Path string // the configured path
	Why  string // "does not exist", "directory has no files", "no file matches the pattern"
	Err  error  // the underlying error (fs.ErrNotExist for a missing path), or nil
}

// Error implements error: `no files match "data/*.csv": no file matches the pattern`.
func (e *NoFilesError) Error() string {
	return fmt.Sprintf("no files match %q: %s", e.Path, e.Why)
}

// Unwrap returns the underlying error.
func (e *NoFilesError) Unwrap() error { return e.Err }

// listFiles expands path into the files to read, in reading order: a
// regular file is itself; a directory gives its regular files (following
// symbolic links; names starting with "." are skipped as hidden;
// subdirectories, and links to directories, are not read) sorted by name;
// any other path containing a glob metacharacter (*?[) is a glob whose
// matching regular files are sorted by path. A directory entry or a glob
// match that is not a regular file or a directory — a dangling symbolic
// link, a named pipe, a device, a socket — is an error naming it and
// what it is: it would otherwise be skipped silently, or block the run.
func listFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range entries { // sorted by name
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(path, e.Name())
			ok, err := regular(p)
			if err != nil {
				return nil, fmt.Errorf("source.path: %s (in the directory %s): %w", p, path, err)
			}
			if ok {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil, &NoFilesError{Path: path, Why: "directory has no files"}
		}
		return out, nil
	case err == nil:
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("source.path: %s is %s, not a regular file or directory", path, describeMode(st.Mode()))
		}
		return []string{path}, nil
	case !strings.ContainsAny(path, "*?[") || !errors.Is(err, fs.ErrNotExist):
		if errors.Is(err, fs.ErrNotExist) {
			if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(path)
				return nil, fmt.Errorf("source.path: %s is a symbolic link to %s, which does not exist", path, target)
			}
			return nil, &NoFilesError{Path: path, Why: "does not exist", Err: err}
		}
		return nil, err
	}
	matches, err := filepath.Glob(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sort.Strings(matches)
	var out []string
	for _, m := range matches {
		ok, err := regular(m)
		if err != nil {
			return nil, fmt.Errorf("source.path: %s (matched by %s): %w", m, path, err)
		}
		if ok {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, &NoFilesError{Path: path, Why: "no file matches the pattern", Err: fs.ErrNotExist}
	}
	return out, nil
}

// regular reports whether p is (or links to) a regular file; false for a
// directory (or a link to one). Anything else is an error saying what p
// is: a dangling or looping symbolic link, a named pipe, a device, a
// socket, or a file that cannot be examined.
func regular(p string) (bool, error) {
	st, err := os.Stat(p)
	if err != nil {
		lst, lerr := os.Lstat(p)
		if lerr == nil && lst.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			if errors.Is(err, fs.ErrNotExist) {
				return false, fmt.Errorf("a symbolic link to %s, which does not exist (a dangling link)", target)
			}
			return false, fmt.Errorf("a symbolic link to %s that cannot be followed: %w", target, err)
		}
		return false, err
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return true, nil
	case m.IsDir():
		return false, nil
	default:
		return false, fmt.Errorf("%s, not a regular file", describeMode(m))
	}
}

// describeMode names a file type: "a named pipe (FIFO)", "a character
// device", "a block device", "a socket" ….
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "a file of an unknown type"
	case m.IsDir():
		return "a directory"
	}
	return "a " + m.Type().String() + " file"
}
