//go:build unix

package cli

import (
	"runtime"
	"syscall"
)

// peakRSS returns the process's peak resident set size in bytes
// (getrusage ru_maxrss: KiB on Linux and the BSDs, bytes on macOS).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
