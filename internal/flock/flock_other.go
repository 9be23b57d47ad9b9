//go:build !unix && !windows

package flock

import (
	"errors"
	"os"
)

// lockFile fails: this platform has no file locks tidemark knows how to
// take, and running without one could let two writers corrupt outputs.
func lockFile(f *os.File) error {
	return &os.PathError{Op: "lock", Path: f.Name(), Err: errors.ErrUnsupported}
}
