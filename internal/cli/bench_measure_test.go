package cli

import (
	"os"
	"path/filepath"
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

// TestPeakHeapProfile: a profile is taken at the first sample and then
// only at a live heap at least 10 % above the kept one's, so the kept
// profile is the one nearest the largest live heap; it is written as a
// gzipped pprof file.
func TestPeakHeapProfile(t *testing.T) {
	var p peakHeapProfile
	for _, c := range []struct{ live, at int64 }{
		{100, 100}, // the first sample
		{109, 100}, // below 110: kept
		{50, 100},  // lower: kept
		{110, 110}, // 10 % above
		{120, 110},
		{121, 121},
	} {
		p.offer(c.live)
		if p.at != c.at {
			t.Fatalf("after offer(%d): at = %d, want %d", c.live, p.at, c.at)
		}
	}
	path := filepath.Join(t.TempDir(), "heap.prof")
	if err := p.write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("the profile is not gzipped pprof data: % x", b[:min(len(b), 8)])
	}
}
