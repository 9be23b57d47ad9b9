package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func recordsTxn(t *testing.T, path string) *Records {
	t.Helper()
	r, err := NewRecordsWithOptions(path, Options{ExactlyOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExactlyOnce walks the protocol: staged records are invisible until
// Commit; a crash after Prepare (the checkpoint written) and before Commit
// is published by Recover exactly once; a crash after Commit changes
// nothing; Recover to an older checkpoint cuts off later output; Recover
// with id 0 starts fresh.
func TestExactlyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "late.jsonl")
	r := recordsTxn(t, path)
	if err := r.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	r.WriteRecord(ctx, []byte(`{"n":1}`))
	r.WriteRecord(ctx, []byte(`{"n":2}`))
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("visible before the checkpoint: %q", got)
	}
	p1, err := r.Prepare(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("after commit 1: %q", got)
	}
	r.WriteRecord(ctx, []byte(`{"n":3}`))
	p2, err := r.Prepare(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.WriteRecord(ctx, []byte(`{"n":4}`)) // staged after checkpoint 2: lost in the crash
	r.file.w.Flush()
	// Crash: no Commit(2), no Close.
	r2 := recordsTxn(t, path)
	if err := r2.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	want := "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("after recover 2: %q, want %q", got, want)
	}
	// Recover again (a second crash right after): nothing changes.
	r3 := recordsTxn(t, path)
	if err := r3.Recover(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != want {
		t.Fatalf("after a second recover: %q", got)
	}
	// Commit(2) again is a no-op.
	if err := r3.Commit(ctx, 2, p2); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != want {
		t.Fatalf("after commit 2 again: %q", got)
	}
	// Falling back to checkpoint 1 (2 turned out corrupt) cuts n=3 off: it
	// will be produced again.
	if err := r3.Recover(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("after recover 1: %q", got)
	}
	r3.WriteRecord(ctx, []byte(`{"n":3}`))
	p, _ := r3.Prepare(ctx, 3)
	if err := r3.Commit(ctx, 3, p); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != want {
		t.Fatalf("after commit 3: %q", got)
	}
	if err := r3.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("after a fresh start: %q", got)
	}
	if _, err := os.Stat(path + ".commit"); !os.IsNotExist(err) {
		t.Fatalf("marker left after a fresh start: %v", err)
	}
	r3.Close(ctx)
}

func TestExactlyOnceLostPending(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.jsonl")
	r := recordsTxn(t, path)
	r.Recover(ctx, 0, nil)
	r.WriteRecord(ctx, []byte(`{"n":1}`))
	p, _ := r.Prepare(ctx, 1)
	r.Close(ctx)
	os.Truncate(path+".pending", 0)
	r2 := recordsTxn(t, path)
	if err := r2.Recover(ctx, 1, p); err == nil {
		t.Fatal("recovered from a lost pending file without an error")
	}
}
