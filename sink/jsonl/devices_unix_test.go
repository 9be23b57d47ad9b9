//go:build unix

package jsonl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
)

// TestDevices: the sinks write to a character device (/dev/null) and to a
// named pipe a reader drains, without fsync or truncation (which fail
// there: "sync /dev/null: invalid argument"), in every mode but exactly
// once, which is refused with ErrNotRegular.
func TestDevices(t *testing.T) {
	ctx := context.Background()
	for _, o := range []Options{{}, {Append: true}} {
		r, err := NewResultsWithOptions(os.DevNull, desc, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if err := r.Write(ctx, []changelog.Row{result(t, changelog.Insert, 1, "1.00")}); err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(ctx); err != nil {
			t.Fatalf("%+v: flush: %v", o, err)
		}
		if err := r.Close(ctx); err != nil {
			t.Fatalf("%+v: close: %v", o, err)
		}
	}
	if _, err := NewRecordsWithOptions(os.DevNull, Options{ExactlyOnce: true}); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "jsonl "+os.DevNull+": ") || !strings.Contains(err.Error(), "delivery: at_least_once") {
		t.Fatalf("exactly once on %s: %v, want ErrNotRegular naming the file", os.DevNull, err)
	}
	if _, err := os.Stat(os.DevNull + ".pending"); err == nil {
		t.Fatalf("%s.pending was created", os.DevNull)
	}

	fifo := filepath.Join(t.TempDir(), "rows.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opens for reading, reads to EOF
		got <- string(b)
	}()
	r, err := NewRecords(fifo)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{`{"n":1}`, `{"n":2}`} {
		if err := r.WriteRecord(ctx, []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("flush to a named pipe: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case s := <-got:
		if s != "{\"n\":1}\n{\"n\":2}\n" {
			t.Fatalf("the reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader got nothing in 5s")
	}
	if _, err := NewResultsWithOptions(fifo, desc, Options{ExactlyOnce: true}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("exactly once on a named pipe: %v", err)
	}
}
