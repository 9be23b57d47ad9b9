//go:build !unix

package cli

import "time"

// processCPU is unavailable here: 0 (events/s/core is then reported as 0).
func processCPU() time.Duration { return 0 }

// peakRSS is unavailable here: 0.
func peakRSS() int64 { return 0 }
