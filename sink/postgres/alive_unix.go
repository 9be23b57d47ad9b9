//go:build unix

package postgres

import (
	"errors"
	"syscall"
)

// processAlive reports whether process pid exists on this host (signal 0:
// no signal sent, only the check).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
