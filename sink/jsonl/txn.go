package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/internal/durable"
	"github.com/tidemark/tidemark/state"
)

// Options selects how a JSONL sink opens its file.
type Options struct {
	// Exactly once: output is staged in PATH.pending and appended to PATH
	// only when its checkpoint completes (sink.Committer); PATH.commit
	// records the last checkpoint published and PATH's size after it.
	// The file is neither truncated nor created at open: Recover decides
	// what it keeps. Not for a device or a named pipe (ErrNotRegular).
	ExactlyOnce bool
	// Append opens PATH without truncating it (an at-least-once sink
	// resuming from a checkpoint). Ignored with ExactlyOnce.
	Append bool
}

// ErrNotRegular is returned (wrapped) when a sink opened for exactly-once
// delivery names a device or a named pipe: staging and publishing output
// at checkpoints needs a regular file to truncate and fsync, and a line
// written to a device cannot be taken back. Such a sink needs delivery
// at_least_once.
var ErrNotRegular = errors.New("not a regular file: exactly-once delivery publishes output at each checkpoint by truncating and fsyncing the file, which a device or a named pipe cannot do; set delivery: at_least_once to write lines as they come")

// openFile opens path as o says.
func openFile(path string, o Options) (*file, error) {
	if !o.ExactlyOnce {
		if o.Append {
			return openAppend(path)
		}
		return create(path)
	}
	if device(path) {
		return nil, ErrNotRegular
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The published file is not created here: Recover must tell a file
	// deleted since the last checkpoint from an empty one.
	main, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	pend, err := os.OpenFile(path+".pending", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if main != nil {
			main.Close()
		}
		return nil, err
	}
	if err := durable.SyncDir(dir); err != nil {
		if main != nil {
			main.Close()
		}
		pend.Close()
		return nil, err
	}
	// Writes go to the end of the pending file; Recover truncates it.
	if _, err := pend.Seek(0, io.SeekEnd); err != nil {
		if main != nil {
			main.Close()
		}
		pend.Close()
		return nil, err
	}
	return &file{path: path, f: pend, w: bufio.NewWriterSize(pend, bufferSize), main: main, txn: true}, nil
}

// openAppend opens path for appending, creating it if absent.
func openAppend(path string) (*file, error) {
	return openWith(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
}

// TruncatedError is returned (wrapped) by Recover and Commit when the
// published file holds fewer bytes than its commit marker or the
// checkpoint says were published: it was truncated, replaced or deleted
// behind tidemark's back (logrotate, an operator). The sink never fills
// the gap, which would publish bytes nobody wrote (NULs), and never
// silently starts the file over.
type TruncatedError struct {
	// Path is the published file.
	Path string
	// Size is the bytes it holds (0 when Deleted).
	Size int64
	// Want is the bytes published before, per the commit marker
	// (PATH.commit, when Marker) or the checkpoint's prepared state.
	Want int64
	// Checkpoint is the checkpoint id Want was published through (the
	// marker's), or the checkpoint being restored or committed, whose
	// state records Want.
	Checkpoint int64
	// Marker is true when Want comes from the commit marker.
	Marker bool
	// Deleted is true when the file does not exist, or was removed or
	// replaced while the sink had it open.
	Deleted bool
}

// Error implements error, e.g. "jsonl out/x.jsonl holds 120 bytes, but its
// commit marker out/x.jsonl.commit records 4096 published through
// checkpoint 7: …".
func (e *TruncatedError) Error() string {
	what := fmt.Sprintf("holds %d bytes", e.Size)
	cause := "truncated"
	if e.Deleted {
		what, cause = "does not exist", "deleted or replaced"
	}
	source := fmt.Sprintf("checkpoint %d records %d bytes published before it", e.Checkpoint, e.Want)
	if e.Marker {
		source = fmt.Sprintf("its commit marker %s.commit records %d bytes published through checkpoint %d", e.Path, e.Want, e.Checkpoint)
	}
	return fmt.Sprintf("jsonl %s %s, but %s: the file was %s behind tidemark's back (logrotate, an operator); tidemark will not fill the gap or start the file over: put the file back, or recompute it from the start of the input with an empty checkpoint directory", e.Path, what, source, cause)
}

// ensureMain opens the published file, creating it, when openFile found
// none.
func (f *file) ensureMain() error {
	if f.main != nil {
		return nil
	}
	m, err := os.OpenFile(f.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := durable.SyncDir(filepath.Dir(f.path)); err != nil {
		m.Close()
		return err
	}
	f.main = m
	return nil
}

// checkPublished returns a *TruncatedError unless the published file is
// still the file the sink opened and holds at least what the marker m
// records and want, the size checkpoint id's state requires. A missing
// file is created when nothing was published.
func (f *file) checkPublished(m marker, want, id int64) error {
	e := &TruncatedError{Path: f.path, Want: want, Checkpoint: id}
	if m.id > 0 && m.size >= want {
		e.Want, e.Checkpoint, e.Marker = m.size, m.id, true
	}
	if f.main == nil {
		if e.Want > 0 {
			e.Deleted = true
			return e
		}
		if err := f.ensureMain(); err != nil {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
		return nil
	}
	st, err := f.main.Stat()
	if err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	now, err := os.Stat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && !os.SameFile(st, now):
		// Deleted or rotated away since the sink opened it: readers see
		// another file, or none.
		if e.Want > 0 {
			e.Deleted = true
			return e
		}
		return fmt.Errorf("jsonl %s: the file was deleted or replaced while the sink had it open", f.path)
	case err != nil:
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	case st.Size() < e.Want:
		e.Size = st.Size()
		return e
	}
	return nil
}

// marker is the content of PATH.commit: the last checkpoint whose output
// was published, and PATH's size after it.
type marker struct {
	id   int64
	size int64
}

func (f *file) markerPath() string { return f.path + ".commit" }

// readMarker returns the marker, or id 0 when there is none.
func (f *file) readMarker() (marker, error) {
	b, err := os.ReadFile(f.markerPath())
	if errors.Is(err, os.ErrNotExist) {
		return marker{}, nil
	}
	if err != nil {
		return marker{}, err
	}
	var m marker
	fields := strings.Fields(string(b))
	if len(fields) == 2 {
		m.id, err = strconv.ParseInt(fields[0], 10, 64)
		if err == nil {
			m.size, err = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	if len(fields) != 2 || err != nil || m.id < 0 || m.size < 0 {
		return marker{}, fmt.Errorf("commit marker %s: %q is not \"<checkpoint id> <size>\"", f.markerPath(), b)
	}
	return m, nil
}

// writeMarker replaces the marker atomically.
func (f *file) writeMarker(m marker) error {
	tmp := f.markerPath() + ".tmp"
	data := []byte(strconv.FormatInt(m.id, 10) + " " + strconv.FormatInt(m.size, 10) + "\n")
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.markerPath()); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(f.path))
}

func writeSynced(path string, data []byte) error {
	g, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := g.Write(data); err != nil {
		g.Close()
		return err
	}
	if err := g.Sync(); err != nil {
		g.Close()
		return err
	}
	return g.Close()
}

// prepare makes the pending file durable and returns (PATH's committed
// size, pending length) encoded.
func (f *file) prepare(ctx context.Context, id int64) ([]byte, error) {
	if err := f.check(ctx); err != nil {
		return nil, err
	}
	if !f.txn {
		return nil, fmt.Errorf("jsonl %s: not opened for exactly-once delivery", f.path)
	}
	if err := f.sync(); err != nil {
		return nil, err
	}
	plen, err := f.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	var e state.Encoder
	e.Byte(1)
	e.Int(f.committed)
	e.Int(plen)
	return e.Bytes(), nil
}

func decodePrepared(path string, b []byte) (base, plen int64, err error) {
	d := state.NewDecoder(b)
	d.Section("jsonl sink", 1)
	base, plen = d.Int(), d.Int()
	if d.Err() == nil && (base < 0 || plen < 0) {
		d.Fail("negative size")
	}
	if err := d.Err(); err != nil {
		return 0, 0, fmt.Errorf("jsonl %s: prepared state: %w", path, err)
	}
	return base, plen, nil
}

// publish appends the first plen bytes of the pending file to PATH at
// offset base, fsyncs it, records the marker and empties the pending file.
// m is the marker as read before: PATH must still hold what it and base
// say was published (checkPublished).
func (f *file) publish(id, base, plen int64, m marker) error {
	fail := func(err error) error { return fmt.Errorf("jsonl %s: publishing checkpoint %d: %w", f.path, id, err) }
	st, err := f.f.Stat()
	if err != nil {
		return fail(err)
	}
	if st.Size() < plen {
		return fail(fmt.Errorf("the pending file holds %d bytes, the checkpoint prepared %d", st.Size(), plen))
	}
	if err := f.checkPublished(m, base, id); err != nil {
		return err
	}
	if err := f.main.Truncate(base); err != nil {
		return fail(err)
	}
	if _, err := f.main.Seek(base, io.SeekStart); err != nil {
		return fail(err)
	}
	if _, err := io.Copy(f.main, io.NewSectionReader(f.f, 0, plen)); err != nil {
		return fail(err)
	}
	if err := f.main.Sync(); err != nil {
		return fail(err)
	}
	if err := f.writeMarker(marker{id: id, size: base + plen}); err != nil {
		return fail(err)
	}
	f.committed = base + plen
	return f.resetPending()
}

// resetPending empties the pending file.
func (f *file) resetPending() error {
	f.w.Reset(f.f)
	if err := f.f.Truncate(0); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	if _, err := f.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	return nil
}

// commit publishes checkpoint id's prepared output unless the marker
// already records it.
func (f *file) commit(ctx context.Context, id int64, prepared []byte) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	base, plen, err := decodePrepared(f.path, prepared)
	if err != nil {
		return err
	}
	m, err := f.readMarker()
	if err != nil {
		return err
	}
	if m.id >= id {
		f.committed = m.size
		return f.resetPending()
	}
	return f.publish(id, base, plen, m)
}

// recover brings PATH to the state of checkpoint id (see sink.Committer).
func (f *file) recover(ctx context.Context, id int64, prepared []byte) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	if id == 0 {
		if err := f.ensureMain(); err != nil {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
		if err := f.main.Truncate(0); err != nil {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
		if err := f.main.Sync(); err != nil {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
		if err := os.Remove(f.markerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
		f.committed = 0
		return f.resetPending()
	}
	base, plen, err := decodePrepared(f.path, prepared)
	if err != nil {
		return err
	}
	m, err := f.readMarker()
	if err != nil {
		return err
	}
	if m.id < id {
		return f.publish(id, base, plen, m)
	}
	// Published already; output of later checkpoints (a newer checkpoint
	// that turned out corrupt) is cut off: it will be produced again.
	if err := f.checkPublished(m, base+plen, id); err != nil {
		return err
	}
	if err := f.main.Truncate(base + plen); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	if err := f.main.Sync(); err != nil {
		return fmt.Errorf("jsonl %s: %w", f.path, err)
	}
	if m.id != id || m.size != base+plen {
		if err := f.writeMarker(marker{id: id, size: base + plen}); err != nil {
			return fmt.Errorf("jsonl %s: %w", f.path, err)
		}
	}
	f.committed = base + plen
	return f.resetPending()
}
