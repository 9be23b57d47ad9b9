package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/sink"
)

// ErrNewline is returned (wrapped) by Records.WriteRecord for an object
// holding a raw newline, which would split it over two lines.
var ErrNewline = errors.New("record contains a newline")

// Records writes side-output records to a file, one JSON object per line.
type Records struct {
	file *file
}

var _ sink.Records = (*Records)(nil)

// NewRecords creates (or truncates) the file at path, creating its parent
// directories.
func NewRecords(path string) (*Records, error) {
	return NewRecordsWithOptions(path, Options{})
}

// NewRecordsWithOptions is NewRecords with options (exactly-once or
// append mode). Exactly once on a device or a named pipe is an error
// wrapping ErrNotRegular.
func NewRecordsWithOptions(path string, o Options) (*Records, error) {
	f, err := openFile(path, o)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: %w", path, err)
	}
	return &Records{file: f}, nil
}

// WriteRecord buffers obj and a newline. obj is written as given (it is not
// validated); it must not contain '\n' or '\r', else WriteRecord writes
// nothing and returns an error wrapping ErrNewline (the record Append
// functions of package changelog never produce one). It also returns an
// error after Close, when ctx is done, or when the file cannot be written.
func (r *Records) WriteRecord(ctx context.Context, obj []byte) error {
	if err := r.file.check(ctx); err != nil {
		return err
	}
	if bytes.IndexByte(obj, '\n') >= 0 || bytes.IndexByte(obj, '\r') >= 0 {
		return fmt.Errorf("jsonl %s: %w", r.file.path, ErrNewline)
	}
	if err := r.file.write(obj); err != nil {
		return err
	}
	return r.file.write(newline)
}

var newline = []byte{'\n'}

// Prepare, Commit and Recover implement sink.Committer as for Results.
func (r *Records) Prepare(ctx context.Context, id int64) ([]byte, error) {
	return r.file.prepare(ctx, id)
}

// Commit publishes checkpoint id's records.
func (r *Records) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.file.commit(ctx, id, prepared)
}

// Recover restores the file to checkpoint id.
func (r *Records) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.file.recover(ctx, id, prepared)
}

// Flush writes the buffer to the file and fsyncs it (nothing in
// exactly-once mode).
func (r *Records) Flush(ctx context.Context) error { return r.file.flush(ctx) }

// Close flushes and closes the file, even when ctx is done. Closing twice
// is not an error.
func (r *Records) Close(ctx context.Context) error { return r.file.close() }

// Abort implements sink.Aborter: it closes the file without writing,
// flushing or truncating anything (a refused start). Abort after Close,
// or twice, does nothing.
func (r *Records) Abort(ctx context.Context) error { return r.file.abort() }
