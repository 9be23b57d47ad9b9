package cli

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "tidemark ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: code %d, %q", code, out)
	}
}
