//go:build !unix

package postgres

// processAlive cannot tell on this platform: a holder is waited for the
// grace before a refusal.
func processAlive(int) bool { return false }
