package engine

import (
	"runtime/debug"
	"slices"
	"testing"
)

// TestBuildVersion: the revision appears once — a pseudo-version the go
// command stamps from the repository already ends in it — and "+dirty"
// last, once.
func TestBuildVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "cb6856b1a2b3c4d5e6f708192a3b4c5d6e7f8091"}}
	dirty := append(slices.Clone(rev), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, c := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"", nil, "devel"},
		{"(devel)", rev, "devel+cb6856b1a2b3"},
		{"(devel)", dirty, "devel+cb6856b1a2b3+dirty"},
		{"v0.3.0", rev, "v0.3.0+cb6856b1a2b3"},
		{"v0.3.0+dirty", dirty, "v0.3.0+cb6856b1a2b3+dirty"},
		{"v0.0.0-20261204020231-cb6856b1a2b3", rev, "v0.0.0-20261204020231-cb6856b1a2b3"},
		{"v0.0.0-20261204020231-cb6856b1a2b3+dirty", dirty, "v0.0.0-20261204020231-cb6856b1a2b3+dirty"},
		{"v0.3.1-0.20261204020231-cb6856b1a2b3", rev, "v0.3.1-0.20261204020231-cb6856b1a2b3"},
		// A pseudo-version of another revision keeps the build's.
		{"v0.0.0-20261204020231-0123456789ab", rev, "v0.0.0-20261204020231-0123456789ab+cb6856b1a2b3"},
	} {
		if got := buildVersion(c.version, c.settings); got != c.want {
			t.Errorf("buildVersion(%q, %v) = %q, want %q", c.version, c.settings, got, c.want)
		}
	}
}
