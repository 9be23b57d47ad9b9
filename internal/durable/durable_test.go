package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncDir: an existing directory syncs; a missing one is an error
// naming it.
func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir(%s): %v", dir, err)
	}
	missing := filepath.Join(dir, "missing")
	err := SyncDir(missing)
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
