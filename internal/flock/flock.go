// Package flock takes advisory, exclusive locks on files, so that two
// processes never write the same outputs at once (two overlapping runs of
// one pipeline, a cron job that starts before the last one ended).
//
// A lock is an operating-system file lock (flock(2) on Unix, LockFileEx on
// Windows) on a lock file that the holder also fills with who it is. The
// kernel releases the lock when its holder exits, however it exits: a run
// killed with SIGKILL never leaves a stale lock, and a lock file left on
// disk by an earlier run means nothing by itself. Lock files are never
// deleted: removing one while another process waits to open it would let
// two processes each lock a different file of the same name.
//
// Locks are advisory: they keep out processes that take the same lock,
// nothing else. A second Acquire of a held lock fails whether the holder
// is another process or the same one.
package flock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Holder describes the process holding a lock, as it wrote itself into
// the lock file.
type Holder struct {
	// PID is the holder's process id.
	PID int
	// Host is the holder's host name ("" when unknown).
	Host string
	// Since is when the holder took the lock (wall clock).
	Since time.Time
}

// String renders the holder as "pid 4242 on host build-1, since
// 2026-09-01T10:00:00+09:00".
func (h Holder) String() string {
	s := "pid " + strconv.Itoa(h.PID)
	if h.Host != "" {
		s += " on host " + h.Host
	}
	if !h.Since.IsZero() {
		s += ", since " + h.Since.Format(time.RFC3339)
	}
	return s
}

// HeldError is returned by Acquire when another holder has the lock.
type HeldError struct {
	// Path is the lock file.
	Path string
	// Holder is who holds it; valid when Known.
	Holder Holder
	// Known is false when the holder had not yet written itself into the
	// file (it took the lock an instant ago) or the file could not be read.
	Known bool
}

// Error implements error: "lock out/ck/LOCK is held by pid 4242 on host
// build-1, since 2026-09-01T10:00:00+09:00".
func (e *HeldError) Error() string {
	if !e.Known {
		return fmt.Sprintf("lock %s is held by another process (it did not say which)", e.Path)
	}
	return fmt.Sprintf("lock %s is held by %s", e.Path, e.Holder)
}

// errWouldBlock is what the platform's lock call returns, translated, when
// the lock is held.
var errWouldBlock = errors.New("lock held")

// Lock is a held lock. Release it with Release; it is also released when
// the process exits.
type Lock struct {
	path string
	f    *os.File
}

// Path returns the lock file's path, as given to Acquire.
func (l *Lock) Path() string { return l.path }

// Acquire takes the exclusive lock on the file at path, creating the file
// (mode 0644) if it does not exist; its directory must exist. It does not
// wait: when another holder has the lock it returns a *HeldError naming
// it. Other errors (the file cannot be created or opened, the file system
// does not support locks) name the path and wrap the cause.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, held(path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Since: time.Now()}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(format(h)), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{path: path, f: f}, nil
}

// Release releases the lock (the file stays). A second Release does
// nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the lock
	l.f = nil
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	return nil
}

// ErrLocked is returned by TryLock when another open file holds the lock.
var ErrLocked = errors.New("file is locked by another open file")

// TryLock takes the exclusive lock (as Acquire's) on the open file f
// without waiting and without writing into f: a writer marks a file it is
// still filling, and another process can tell a live writer's file (the
// lock is held) from one a crashed writer left (it is free: the kernel
// released it with the process). The lock is released when f is closed.
// Errors: ErrLocked (wrapped) when the lock is held; errors.ErrUnsupported
// on a platform without file locks; otherwise the system's error (ENOLCK
// on a file system that keeps no locks), naming f.
func TryLock(f *os.File) error {
	err := lockFile(f)
	if errors.Is(err, errWouldBlock) {
		return fmt.Errorf("lock %s: %w", f.Name(), ErrLocked)
	}
	return err
}

// held reads the holder of the lock at path.
func held(path string) *HeldError {
	e := &HeldError{Path: path}
	b, err := os.ReadFile(path)
	if err != nil {
		return e
	}
	e.Holder, e.Known = parse(string(b))
	return e
}

// format is the lock file's content: "pid=4242 host=build-1
// since=2026-09-01T01:00:00.123456789Z\n". The host name has no white
// space (it is a DNS label sequence); one that does is left out.
func format(h Holder) string {
	s := "pid=" + strconv.Itoa(h.PID)
	if h.Host != "" && !strings.ContainsAny(h.Host, " \t\r\n") {
		s += " host=" + h.Host
	}
	return s + " since=" + h.Since.UTC().Format(time.RFC3339Nano) + "\n"
}

// parse reads what format wrote; ok is false without a valid pid.
func parse(s string) (h Holder, ok bool) {
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "pid":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Holder{}, false
			}
			h.PID, ok = n, true
		case "host":
			h.Host = v
		case "since":
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				h.Since = t.Local()
			}
		}
	}
	return h, ok
}
