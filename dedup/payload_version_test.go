package dedup

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestSectionsOfAnotherHashScheme: every section of dedup state says which
// payload hashes it holds, and a section of the earlier scheme (version 1,
// same layout) is refused by name, not compared with this build's hashes.
func TestSectionsOfAnotherHashScheme(t *testing.T) {
	tb := New(3_600_000)
	tb.Track()
	tb.Observe(id("e100"), 7, 1_000_000)
	var full, entries, delta state.Encoder
	tb.Snapshot(&full)
	tb.AppendEntries(&entries)
	tb.Observe(id("e101"), 8, 1_000_000)
	tb.AppendDelta(&delta)
	for _, c := range []struct {
		name    string
		b       []byte
		restore func(d *state.Decoder) error
	}{
		{"dedup table", full.Bytes(), func(d *state.Decoder) error { return New(3_600_000).Restore(d) }},
		{"dedup key group", entries.Bytes(), func(d *state.Decoder) error { return New(3_600_000).RestoreEntries(d, NewSweepState()) }},
		{"dedup key group delta", delta.Bytes(), func(d *state.Decoder) error { return New(3_600_000).ApplyDelta(d) }},
	} {
		if c.b[0] != sectionVersion {
			t.Errorf("%s: version byte %d, want %d", c.name, c.b[0], sectionVersion)
		}
		if err := c.restore(state.NewDecoder(c.b)); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		old := append([]byte{1}, c.b[1:]...)
		err := c.restore(state.NewDecoder(old))
		if err == nil || !strings.Contains(err.Error(), c.name+": written by an earlier build whose event payload hashes (scheme 1) differ from this build's (scheme 2)") {
			t.Errorf("%s of scheme 1: %v", c.name, err)
		}
		other := append([]byte{9}, c.b[1:]...)
		if err := c.restore(state.NewDecoder(other)); err == nil || !strings.Contains(err.Error(), "section version 9 is not supported") {
			t.Errorf("%s version 9: %v", c.name, err)
		}
	}
}
