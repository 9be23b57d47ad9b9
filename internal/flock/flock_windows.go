//go:build windows

package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte range starts: far past the holder
// line, which other processes must still be able to read (a Windows lock
// is mandatory for the bytes it covers).
const lockOffset = 1 << 40

// lockFile takes LockFileEx's exclusive lock on one byte without waiting;
// it is released when f is closed or the process exits.
func lockFile(f *os.File) error {
	ol := &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		return errWouldBlock
	default:
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
}
