//go:build unix

package flock

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes flock(2)'s exclusive lock without waiting. The lock
// belongs to the open file description: it is released when f's last
// descriptor is closed, and a second open of the same file, in this
// process or another, cannot take it meanwhile.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errWouldBlock
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}
