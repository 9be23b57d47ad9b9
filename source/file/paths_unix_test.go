//go:build unix

package file

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/spec"
)

// TestIrregularFilesAreReported: a dangling symbolic link, a named pipe, a
// device or a link loop in a source directory or among a glob's matches
// stops the source at the start with an error naming it and what it is,
// instead of being skipped (a missing day of data) or blocking the run (a
// FIFO). Hidden names and subdirectories are still skipped.
func TestIrregularFilesAreReported(t *testing.T) {
	mk := func(t *testing.T, setup func(dir string)) string {
		dir := writeFiles(t, map[string]string{"a.jsonl": "{}\n", "sub/z.jsonl": "{}\n"})
		setup(dir)
		return dir
	}
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(name string) {
		if err := syscall.Mkfifo(name, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		path  string // relative to the directory; "" is the directory
		want  string // DIR is the directory
	}{
		{"a dangling link in a directory", func(d string) { link(d+"/gone.jsonl", d+"/b.jsonl") }, "",
			"source.path: DIR/b.jsonl (in the directory DIR): a symbolic link to DIR/gone.jsonl, which does not exist (a dangling link)"},
		{"a named pipe in a directory", func(d string) { fifo(d + "/c.jsonl") }, "",
			"source.path: DIR/c.jsonl (in the directory DIR): a named pipe (FIFO), not a regular file"},
		{"a link to a device", func(d string) { link("/dev/null", d+"/d.jsonl") }, "",
			"source.path: DIR/d.jsonl (in the directory DIR): a character device, not a regular file"},
		{"a link loop", func(d string) { link(d+"/f.jsonl", d+"/e.jsonl"); link(d+"/e.jsonl", d+"/f.jsonl") }, "",
			"source.path: DIR/e.jsonl (in the directory DIR): a symbolic link to DIR/f.jsonl that cannot be followed: stat DIR/e.jsonl: too many levels of symbolic links"},
		{"a dangling link a glob matches", func(d string) { link(d+"/gone.jsonl", d+"/b.jsonl") }, "*.jsonl",
			"source.path: DIR/b.jsonl (matched by DIR/*.jsonl): a symbolic link to DIR/gone.jsonl, which does not exist (a dangling link)"},
		{"the path is a named pipe", func(d string) { fifo(d + "/p.jsonl") }, "p.jsonl",
			"source.path: DIR/p.jsonl is a named pipe (FIFO), not a regular file or directory"},
		{"the path is a dangling link", func(d string) { link(d+"/gone.jsonl", d+"/l.jsonl") }, "l.jsonl",
			"source.path: DIR/l.jsonl is a symbolic link to DIR/gone.jsonl, which does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t, tc.setup)
			_, err := New(Config{Spec: spec.Source{Path: filepath.Join(dir, tc.path), Format: "jsonl"}, Fields: testFields(t, "s:string")})
			if err == nil {
				t.Fatal("New accepted the input")
			}
			if got := strings.ReplaceAll(err.Error(), dir, "DIR"); got != tc.want {
				t.Fatalf("error\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("hidden names and subdirectories are skipped", func(t *testing.T) {
		dir := mk(t, func(d string) { link(d+"/gone", d+"/.hidden.jsonl"); link(d+"/sub", d+"/dirlink") })
		s, err := New(Config{Spec: spec.Source{Path: dir, Format: "jsonl"}, Fields: testFields(t, "s:string")})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if len(s.files) != 1 || s.files[0] != dir+"/a.jsonl" {
			t.Fatalf("files %q", s.files)
		}
	})
	t.Run("a missing path is still a NoFilesError", func(t *testing.T) {
		_, err := New(Config{Spec: spec.Source{Path: t.TempDir() + "/none.jsonl"}, Fields: testFields(t, "s:string")})
		var nf *NoFilesError
		if !errors.As(err, &nf) {
			t.Fatalf("%v", err)
		}
	})
}
