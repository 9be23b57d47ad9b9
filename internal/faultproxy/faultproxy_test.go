package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// TestModes: each mode does to an HTTP request what it says, and Counts
// counts the requests by mode.
func TestModes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	faults := []Fault{{Mode: Pass}, {Mode: Reset}, {Mode: Close}, {Mode: Status500}, {Mode: Delay, Delay: 300 * time.Millisecond}}
	p, err := Start(srv.URL, func(n int) Fault { return faults[n%len(faults)] })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func() (string, int, error, time.Duration) {
		// A connection per request: the client retries a GET whose reused
		// connection failed, which would take the next fault too.
		cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
		start := time.Now()
		resp, err := cl.Get(p.URL() + "/x")
		if err != nil {
			return "", 0, err, time.Since(start)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.StatusCode, nil, time.Since(start)
	}
	if body, code, err, _ := get(); err != nil || code != 200 || body != "ok" {
		t.Errorf("pass: %q %d %v", body, code, err)
	}
	if _, _, err, _ := get(); err == nil || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reset: %v, want a connection reset", err)
	}
	if _, _, err, _ := get(); err == nil || !errors.Is(err, io.EOF) {
		t.Errorf("close: %v, want an error wrapping io.EOF", err)
	}
	if body, code, err, _ := get(); err != nil || code != 500 || body != "injected server error" {
		t.Errorf("500: %q %d %v", body, code, err)
	}
	if body, code, err, took := get(); err != nil || code != 200 || body != "ok" || took < 300*time.Millisecond {
		t.Errorf("delay: %q %d %v after %s", body, code, err, took)
	}
	want := map[Mode]int{Pass: 1, Reset: 1, Close: 1, Status500: 1, Delay: 1}
	got := p.Counts()
	for m, n := range want {
		if got[m] != n {
			t.Errorf("Counts() = %v, want %v", got, want)
			break
		}
	}
}
