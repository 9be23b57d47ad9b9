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
// directories, for rows described by d. It returns an error when
// d.Timezone is not a known IANA zone ("" is UTC) or the file cannot be
// created.
func NewResults(path string, d changelog.Desc) (*Results, error) {
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: timezone: %w", path, err)
	}
	f, err := create(path)
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

// Flush writes the buffer to the file and fsyncs it.
func (r *Results) Flush(ctx context.Context) error { return r.file.flush(ctx) }

// Close flushes and closes the file, even when ctx is done. Closing twice
// is not an error.
func (r *Results) Close(ctx context.Context) error { return r.file.close() }
