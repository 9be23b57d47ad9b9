// Package stdout writes result rows as JSON lines to a writer, usually
// standard output: for demos and for piping into other tools.
//
// In the data flow it is a connector at the end: the runner's writer
// (package engine) hands it a stage's rows in order; it imports only sink
// and changelog.
package stdout

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/sink"
)

// bufferSize is the write buffer; Flush empties it.
const bufferSize = 64 << 10

// Results writes one changelog.AppendRowJSON object per line (every op,
// update_before included) to a writer, window and bookkeeping times in the
// Desc's timezone. It is not safe for concurrent use.
type Results struct {
	w    *bufio.Writer
	desc changelog.Desc
	loc  *time.Location
	enc  *changelog.Encoder
	err  error // an unknown timezone, returned by every call
	buf  []byte
}

var _ sink.Results = (*Results)(nil)

// New returns a sink writing rows described by d to w. w is never closed.
// When d.Timezone is not a known IANA zone ("" is UTC), every method
// returns that error.
func New(w io.Writer, d changelog.Desc) *Results {
	r := &Results{w: bufio.NewWriterSize(w, bufferSize), desc: d, buf: make([]byte, 0, 1024)}
	r.loc, r.err = time.LoadLocation(d.Timezone)
	if r.err != nil {
		r.err = fmt.Errorf("stdout sink: timezone: %w", r.err)
	}
	return r
}

// Write buffers one line per row. It returns an error when ctx is done or
// the writer fails.
func (r *Results) Write(ctx context.Context, rows []changelog.Row) error {
	if r.err != nil {
		return r.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range rows {
		if r.enc == nil {
			r.enc = changelog.NewEncoder(r.loc)
		}
		r.buf = r.enc.Row(r.buf[:0], &rows[i], &r.desc)
		r.buf = append(r.buf, '\n')
		if _, err := r.w.Write(r.buf); err != nil {
			return fmt.Errorf("stdout sink: %w", err)
		}
	}
	return nil
}

// Flush writes buffered lines to the writer (no fsync: the writer is
// usually a pipe or a terminal).
func (r *Results) Flush(ctx context.Context) error {
	if r.err != nil {
		return r.err
	}
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("stdout sink: %w", err)
	}
	return nil
}

// Close flushes; the writer stays open.
func (r *Results) Close(ctx context.Context) error { return r.Flush(ctx) }
