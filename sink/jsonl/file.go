package jsonl

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tidemark/tidemark/internal/durable"
)

// bufferSize is the write buffer of every file sink.
const bufferSize = 256 << 10

// file is a buffered, truncated-at-open output file with durable Flush.
type file struct {
	path   string
	f      *os.File // the output file, or in exactly-once mode the pending file
	w      *bufio.Writer
	closed bool
	// device is true for a character device or a named pipe (/dev/null, a
	// FIFO a reader drains): written as it comes, never fsynced or
	// truncated.
	device bool

	// Exactly-once mode (txn.go): main is the published file, committed
	// its size after the last publish.
	txn       bool
	main      *os.File
	committed int64

	// truncate: the file is to be started over (a run from the start),
	// done before its first byte is written or its first flush, not at
	// open, so that a run whose start is refused after the sink opened
	// (abort) leaves the previous run's file as it was.
	truncate bool
}

// create makes path's parent directories, truncates or creates the file
// and fsyncs its directory so the file's existence survives a crash. A
// device or a named pipe is opened for writing as it is (opening a named
// pipe waits for a reader).
//
// The truncation itself waits for the first write or flush (file.truncate):
// abort before then leaves the file's contents as they were.
func create(path string) (*file, error) {
	f, err := openWith(path, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	f.truncate = !f.device
	return f, nil
}

// startOver truncates the file when create deferred it.
func (f *file) startOver() error {
	if !f.truncate {
		return nil
	}
	if err := f.f.Truncate(0); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	f.truncate = false
	return nil
}

// openWith opens path with flag (which includes O_CREATE) as create does.
func openWith(path string, flag int) (*file, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if device(path) {
		flag &^= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	dev := !st.Mode().IsRegular()
	if !dev {
		if err := durable.SyncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &file{path: path, f: f, w: bufio.NewWriterSize(f, bufferSize), device: dev}, nil
}

// device reports whether path exists and is not a regular file or a
// directory: a character device, a named pipe, a socket.
func device(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.Mode().IsRegular() && !st.IsDir()
}

// check returns the error for a call after Close or with a done context.
func (f *file) check(ctx context.Context) error {
	if f.closed {
		return fmt.Errorf("jsonl %s: %w", f.path, fs.ErrClosed)
	}
	return ctx.Err()
}

func (f *file) write(b []byte) error {
	if f.truncate {
		if err := f.startOver(); err != nil {
			return err
		}
	}
	if _, err := f.w.Write(b); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	return nil
}

func (f *file) flush(ctx context.Context) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	if f.txn { // published at Commit
		return nil
	}
	return f.sync()
}

// sync writes the buffer and fsyncs the file.
func (f *file) sync() error {
	if err := f.startOver(); err != nil {
		return err
	}
	if err := f.w.Flush(); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	if f.device {
		return nil // nothing to make durable (fsync: invalid argument)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	return nil
}

// close flushes and closes the file, even when ctx is done (a local
// write is quick and the rows would be lost otherwise); a second close does
// nothing.
func (f *file) close() error {
	if f.closed {
		return nil
	}
	err := f.sync()
	f.closed = true
	if cerr := f.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("jsonl %s: %w", f.path, cerr)
	}
	if f.main != nil {
		if cerr := f.main.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("jsonl %s: %w", f.path, cerr)
		}
	}
	return err
}

// abort closes the file without writing, flushing or truncating anything
// (sink.Aborter): the buffered bytes are dropped, a deferred truncation is
// not done, staged output stays staged.
func (f *file) abort() error {
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.f.Close()
	if f.main != nil {
		if cerr := f.main.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	return nil
}
