//go:build !unix

package cli

// peakRSS is unavailable here: 0.
func peakRSS() int64 { return 0 }
