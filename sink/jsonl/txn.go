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

	"github.com/tidemark/tidemark/state"
)

// Options selects how a JSONL sink opens its file.
type Options struct {
	// Exactly once: output is staged in PATH.pending and appended to PATH
	// only when its checkpoint completes (sink.Committer); PATH.commit
	// records the last checkpoint published and PATH's size after it.
	// The file is not truncated at open: Recover decides what it keeps.
	ExactlyOnce bool
	// Append opens PATH without truncating it (an at-least-once sink
	// resuming from a checkpoint). Ignored with ExactlyOnce.
	Append bool
}

// openFile opens path as o says.
func openFile(path string, o Options) (*file, error) {
	if !o.ExactlyOnce {
		if o.Append {
			return openAppend(path)
		}
		return create(path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	main, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	pend, err := os.OpenFile(path+".pending", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		main.Close()
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		main.Close()
		pend.Close()
		return nil, err
	}
	// Writes go to the end of the pending file; Recover truncates it.
	if _, err := pend.Seek(0, io.SeekEnd); err != nil {
		main.Close()
		pend.Close()
		return nil, err
	}
	return &file{path: path, f: pend, w: bufio.NewWriterSize(pend, bufferSize), main: main, txn: true}, nil
}

// openAppend opens path for appending, creating it if absent.
func openAppend(path string) (*file, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &file{path: path, f: f, w: bufio.NewWriterSize(f, bufferSize)}, nil
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
	return syncDir(filepath.Dir(f.path))
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
func (f *file) publish(id, base, plen int64) error {
	fail := func(err error) error { return fmt.Errorf("jsonl %s: publishing checkpoint %d: %w", f.path, id, err) }
	st, err := f.f.Stat()
	if err != nil {
		return fail(err)
	}
	if st.Size() < plen {
		return fail(fmt.Errorf("the pending file holds %d bytes, the checkpoint prepared %d", st.Size(), plen))
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
	return f.publish(id, base, plen)
}

// recover brings PATH to the state of checkpoint id (see sink.Committer).
func (f *file) recover(ctx context.Context, id int64, prepared []byte) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	if id == 0 {
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
		return f.publish(id, base, plen)
	}
	// Published already; output of later checkpoints (a newer checkpoint
	// that turned out corrupt) is cut off: it will be produced again.
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
