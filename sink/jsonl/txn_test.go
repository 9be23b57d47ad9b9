package jsonl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// publishTwo runs checkpoint 1 (two records) and returns its prepared
// state, the sink closed as at the end of a run.
func publishTwo(t *testing.T, path string) []byte {
	t.Helper()
	ctx := context.Background()
	r := recordsTxn(t, path)
	if err := r.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	r.WriteRecord(ctx, []byte(`{"n":1}`))
	r.WriteRecord(ctx, []byte(`{"n":2}`))
	p1, err := r.Prepare(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return p1
}

// truncated asserts that err is a *TruncatedError with these fields and
// that its message names the file and both sizes.
func truncated(t *testing.T, err error, want TruncatedError) {
	t.Helper()
	var te *TruncatedError
	if !errors.As(err, &te) {
		t.Fatalf("error %v, want a *TruncatedError", err)
	}
	if *te != want {
		t.Fatalf("error %+v, want %+v", *te, want)
	}
	msg := err.Error()
	for _, s := range []string{want.Path, fmt.Sprintf("records %d bytes", want.Want), "will not fill the gap"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	if !want.Deleted && !strings.Contains(msg, fmt.Sprintf("holds %d bytes", want.Size)) {
		t.Errorf("message %q lacks the file's size", msg)
	}
}

// TestRecoverTruncatedFile: a published file that is shorter than its
// commit marker says (logrotate, an operator) is an error naming the file
// and both sizes, whether the restored checkpoint was published already
// or is published by the recovery; the file is left as it was, never
// padded with NULs.
func TestRecoverTruncatedFile(t *testing.T) {
	ctx := context.Background()
	const full = "{\"n\":1}\n{\"n\":2}\n" // 16 bytes
	for _, crashBeforeCommit := range []bool{false, true} {
		t.Run(fmt.Sprint("crashBeforeCommit=", crashBeforeCommit), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "late.jsonl")
			p := publishTwo(t, path)
			id := int64(1)
			if crashBeforeCommit {
				// Checkpoint 2 is written, the crash comes before its commit.
				r := recordsTxn(t, path)
				if err := r.Recover(ctx, 1, p); err != nil {
					t.Fatal(err)
				}
				r.WriteRecord(ctx, []byte(`{"n":3}`))
				var err error
				if p, err = r.Prepare(ctx, 2); err != nil {
					t.Fatal(err)
				}
				r.file.close()
				id = 2
			}
			if err := os.Truncate(path, 5); err != nil {
				t.Fatal(err)
			}
			r := recordsTxn(t, path)
			defer r.Close(ctx)
			truncated(t, r.Recover(ctx, id, p), TruncatedError{Path: path, Size: 5, Want: int64(len(full)), Checkpoint: 1, Marker: true})
			if got := readFile(t, path); got != full[:5] {
				t.Fatalf("file after the refused recovery: %q, want %q", got, full[:5])
			}
		})
	}
}

// TestRecoverDeletedFile: a published file deleted while the pipeline was
// down is an error, and the recovery does not create an empty file in its
// place; with its marker deleted too, the checkpoint's own record of what
// was published before it still refuses.
func TestRecoverDeletedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "late.jsonl")
	p1 := publishTwo(t, path)
	os.Remove(path)
	r := recordsTxn(t, path)
	truncated(t, r.Recover(ctx, 1, p1), TruncatedError{Path: path, Want: 16, Checkpoint: 1, Marker: true, Deleted: true})
	r.Close(ctx)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the recovery created %s: %v", path, err)
	}

	// Checkpoint 2 prepared on top of 16 published bytes; then the file
	// and its marker are deleted.
	path = filepath.Join(t.TempDir(), "late.jsonl")
	p1 = publishTwo(t, path)
	r = recordsTxn(t, path)
	r.Recover(ctx, 1, p1)
	r.WriteRecord(ctx, []byte(`{"n":3}`))
	p2, _ := r.Prepare(ctx, 2)
	r.file.close()
	os.Remove(path)
	os.Remove(path + ".commit")
	r = recordsTxn(t, path)
	defer r.Close(ctx)
	truncated(t, r.Recover(ctx, 2, p2), TruncatedError{Path: path, Want: 16, Checkpoint: 2, Deleted: true})

	// Both deleted after checkpoint 1 was published: its lines are no
	// longer staged anywhere, so the recovery refuses rather than publish
	// an empty file.
	path = filepath.Join(t.TempDir(), "late.jsonl")
	p1 = publishTwo(t, path)
	os.Remove(path)
	os.Remove(path + ".commit")
	r = recordsTxn(t, path)
	defer r.Close(ctx)
	if err := r.Recover(ctx, 1, p1); err == nil || !strings.Contains(err.Error(), "the pending file holds 0 bytes, the checkpoint prepared 16") {
		t.Fatalf("recovered without the file, its marker and its staged lines: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the recovery created %s: %v", path, err)
	}
}

// TestCommitAfterTruncation: a file truncated while the run writes it is
// refused at the next commit, not extended.
func TestCommitAfterTruncation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "late.jsonl")
	r := recordsTxn(t, path)
	defer r.Close(ctx)
	r.Recover(ctx, 0, nil)
	r.WriteRecord(ctx, []byte(`{"n":1}`))
	p1, _ := r.Prepare(ctx, 1)
	if err := r.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	os.Truncate(path, 0)
	r.WriteRecord(ctx, []byte(`{"n":2}`))
	p2, _ := r.Prepare(ctx, 2)
	truncated(t, r.Commit(ctx, 2, p2), TruncatedError{Path: path, Size: 0, Want: 8, Checkpoint: 1, Marker: true})
	if got := readFile(t, path); got != "" {
		t.Fatalf("file after the refused commit: %q", got)
	}
	// Rotated away (renamed, a new file in its place): refused too.
	path = filepath.Join(t.TempDir(), "late.jsonl")
	r2 := recordsTxn(t, path)
	defer r2.Close(ctx)
	r2.Recover(ctx, 0, nil)
	r2.WriteRecord(ctx, []byte(`{"n":1}`))
	p1, _ = r2.Prepare(ctx, 1)
	r2.Commit(ctx, 1, p1)
	os.Rename(path, path+".1")
	os.WriteFile(path, nil, 0o644)
	r2.WriteRecord(ctx, []byte(`{"n":2}`))
	p2, _ = r2.Prepare(ctx, 2)
	truncated(t, r2.Commit(ctx, 2, p2), TruncatedError{Path: path, Want: 8, Checkpoint: 1, Marker: true, Deleted: true})
}
