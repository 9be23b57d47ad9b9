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
// symbolic links; names starting with "." are skipped as hidden) sorted
// by name; any other path containing a glob metacharacter (*?[) is a glob
// whose matching regular files are sorted by path.
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
			if regular(p) {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil, &NoFilesError{Path: path, Why: "directory has no files"}
		}
		return out, nil
	case err == nil:
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file or directory", path)
		}
		return []string{path}, nil
	case !strings.ContainsAny(path, "*?[") || !errors.Is(err, fs.ErrNotExist):
		if errors.Is(err, fs.ErrNotExist) {
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
		if regular(m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, &NoFilesError{Path: path, Why: "no file matches the pattern", Err: fs.ErrNotExist}
	}
	return out, nil
}

// regular reports whether p is (or links to) a regular file.
func regular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
