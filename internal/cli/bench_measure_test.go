package cli

import (
	"testing"
)

// TestParseFileRSS: the file-backed part of the resident set is RssFile
// plus RssShmem, in bytes, from /proc/PID/status (a kernel 6.18 text).
func TestParseFileRSS(t *testing.T) {
	status := "Name:\ttidemark\nVmHWM:\t   62464 kB\nVmRSS:\t   46292 kB\nRssAnon:\t    3800 kB\nRssFile:\t   42428 kB\nRssShmem:\t      64 kB\nVmData:\t  123 kB\n"
	if got, want := parseFileRSS(status), int64(42428+64)*1024; got != want {
		t.Errorf("parseFileRSS = %d, want %d", got, want)
	}
	if got := parseFileRSS("Name:\tx\nRssFile:\tgarbage\n"); got != 0 {
		t.Errorf("parseFileRSS of a bad line = %d, want 0", got)
	}
}
