package jsonl

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
)

// Results writes result rows to a file, one changelog.AppendRowJSON object
// per line, window and bookkeeping times in the Desc's timezone.
type Results struct {
	file *file
	desc changelog.Desc
	enc  *changelog.Encoder
	buf  []byte
}

var _ sink.Results = (*Results)(nil)

// NewResults creates (or truncates) the file at path, creating its parent
// directories, for rows described by d; a device or a named pipe is
// written as it is. It returns an error when d.Timezone is not a known
// IANA zone ("" is UTC) or the file cannot be created.
func NewResults(path string, d changelog.Desc) (*Results, error) {
	return NewResultsWithOptions(path, d, Options{})
}

// NewResultsWithOptions is NewResults with options (exactly-once or
// append mode). Exactly once on a device or a named pipe is an error
// wrapping ErrNotRegular.
func NewResultsWithOptions(path string, d changelog.Desc, o Options) (*Results, error) {
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: timezone: %w", path, err)
	}
	f, err := openFile(path, o)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: %w", path, err)
	}
	return &Results{file: f, desc: d, enc: changelog.NewEncoder(loc), buf: make([]byte, 0, 1024)}, nil
}

// Write buffers one line per row, every op included. It returns an error
// after Close (wrapping fs.ErrClosed), when ctx is done, or when the file
// cannot be written.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if err := r.file.check(ctx); err != nil {
		return err
	}
	for i := range rows {
		r.buf = r.enc.Row(r.buf[:0], &rows[i], &r.desc)
		r.buf = append(r.buf, '\n')
		if err := r.file.write(r.buf); err != nil {
			return err
		}
	}
	return nil
}

// Prepare, Commit and Recover implement sink.Committer for a sink opened
// with Options.ExactlyOnce: rows are staged in PATH.pending and appended
// to PATH when their checkpoint completes. Errors: a sink not opened for
// exactly-once delivery, file errors, a prepared state that does not
// parse, a pending file shorter than the checkpoint says; Commit and
// Recover also return a *TruncatedError when PATH holds fewer bytes than
// were published (or was deleted or replaced) since.
func (r *Results) Prepare(ctx context.Context, id int64) ([]byte, error) {
	return r.file.prepare(ctx, id)
}

// Commit publishes checkpoint id's rows (see Prepare).
func (r *Results) Commit(ctx context.Context, id int64, prepared []byte) error {
	return r.file.commit(ctx, id, prepared)
}

// Recover restores the file to checkpoint id (see Prepare).
func (r *Results) Recover(ctx context.Context, id int64, prepared []byte) error {
	return r.file.recover(ctx, id, prepared)
}

// Flush writes the buffer to the file and fsyncs it (in exactly-once
// mode it does nothing: rows are published by Commit).
func (r *Results) Flush(ctx context.Context) error { return r.file.flush(ctx) }

// Close flushes and closes the file, even when ctx is done. Closing twice
// is not an error.
func (r *Results) Close(ctx context.Context) error { return r.file.close() }

// Abort implements sink.Aborter: it closes the file without writing,
// flushing or truncating anything (a refused start). Abort after Close,
// or twice, does nothing.
func (r *Results) Abort(ctx context.Context) error { return r.file.abort() }
