package flock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as a second process that holds a
// lock: with FLOCK_TEST_HOLD=PATH it takes the lock, prints "locked" and
// waits to be killed.
func TestMain(m *testing.M) {
	if path := os.Getenv("FLOCK_TEST_HOLD"); path != "" {
		if _, err := Acquire(path); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAcquireInProcess: a held lock refuses a second Acquire, even from
// the same process, naming the holder (this process, this host, since
// about now); after Release it can be taken again.
func TestAcquireInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	before := time.Now().Truncate(time.Second)
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	var he *HeldError
	if !errors.As(err, &he) {
		t.Fatalf("second Acquire: %v, want a *HeldError", err)
	}
	host, _ := os.Hostname()
	if !he.Known || he.Path != path || he.Holder.PID != os.Getpid() || he.Holder.Host != host {
		t.Fatalf("holder %+v, want pid %d on %q", he, os.Getpid(), host)
	}
	if he.Holder.Since.Before(before) || he.Holder.Since.After(time.Now()) {
		t.Errorf("since %v, want between %v and now", he.Holder.Since, before)
	}
	want := fmt.Sprintf("lock %s is held by pid %d on host %s, since %s", path, os.Getpid(), host, he.Holder.Since.Format(time.RFC3339))
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	l2, err := Acquire(path)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l2.Release()
}

// TestAcquireAcrossProcesses: a lock held by another process is refused
// with that process's pid; once the holder is killed with SIGKILL (no
// chance to clean up) the lock is free.
func TestAcquireAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLOCK_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("holder printed %q", line)
	}
	_, err = Acquire(path)
	var he *HeldError
	if !errors.As(err, &he) || !he.Known || he.Holder.PID != cmd.Process.Pid {
		t.Fatalf("Acquire while held: %v (%+v), want held by pid %d", err, he, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Release()
}

// TestHolderFormat: what a holder writes reads back; a file without a
// valid pid names no holder.
func TestHolderFormat(t *testing.T) {
	h := Holder{PID: 4242, Host: "build-1", Since: time.Date(2026, 9, 1, 1, 0, 0, 123, time.UTC)}
	if got := format(h); got != "pid=4242 host=build-1 since=2026-09-01T01:00:00.000000123Z\n" {
		t.Fatalf("format %q", got)
	}
	got, ok := parse(format(h))
	if !ok || got.PID != 4242 || got.Host != "build-1" || !got.Since.Equal(h.Since) {
		t.Fatalf("parse: %+v %v", got, ok)
	}
	for _, s := range []string{"", "pid=x", "pid=-1 host=a", "host=a since=2026-09-01T01:00:00Z"} {
		if _, ok := parse(s); ok {
			t.Errorf("parse(%q) found a holder", s)
		}
	}
	if got := (Holder{PID: 7}).String(); got != "pid 7" {
		t.Errorf("String %q", got)
	}
	if got := (&HeldError{Path: "x/LOCK"}).Error(); got != "lock x/LOCK is held by another process (it did not say which)" {
		t.Errorf("unknown holder: %q", got)
	}
}

// TestTryLock: TryLock marks an open file without writing into it; a
// second open file of it cannot take the lock (ErrLocked) until the first
// is closed.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".tmp-1")
	if err := os.WriteFile(path, []byte("partial data"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLock(b); !errors.Is(err, ErrLocked) || err.Error() != "lock "+path+": file is locked by another open file" {
		t.Fatalf("TryLock of a locked file: %v, want ErrLocked naming it", err)
	}
	a.Close()
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock after the holder closed: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "partial data" {
		t.Errorf("TryLock wrote into the file: %q", got)
	}
}
