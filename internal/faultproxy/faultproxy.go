// Package faultproxy is a loopback HTTP proxy for tests that disturbs
// the requests to a service (a schema registry) as a network or a
// failing server would: each request is passed through, reset (a TCP
// RST), closed before any answer (Go's HTTP client reports an error
// wrapping io.EOF), delayed before it is passed through, or answered with
// an HTTP 500, as a function of the request's number chooses.
package faultproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Mode is what the proxy does with one request.
type Mode int

// The modes.
const (
	// Pass forwards the request to the target and its answer back.
	Pass Mode = iota
	// Reset closes the request's connection with SO_LINGER 0: the client
	// sees "connection reset by peer".
	Reset
	// Close closes the request's connection without an answer: Go's HTTP
	// client reports an error wrapping io.EOF.
	Close
	// Delay waits the Fault's Delay, then passes the request.
	Delay
	// Status500 answers "500 Internal Server Error".
	Status500
	modes
)

// String names the mode.
func (m Mode) String() string {
	return [...]string{"pass", "reset", "close", "delay", "500"}[m]
}

// Fault is what happens to one request.
type Fault struct {
	Mode  Mode
	Delay time.Duration // with Delay
}

// Proxy serves on a loopback port and forwards to its target.
type Proxy struct {
	srv  *httptest.Server
	rp   *httputil.ReverseProxy
	done chan struct{}

	mu     sync.Mutex
	decide func(req int) Fault
	n      int
	counts [modes]int
	closed bool
}

// Start serves on 127.0.0.1 (a free port) in front of target
// ("http://127.0.0.1:8081"); decide chooses each request's fault from its
// number (0, 1, …), nil passes everything.
func Start(target string, decide func(req int) Fault) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{decide: decide, done: make(chan struct{})}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.ErrorLog = nil
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.srv.Config.ErrorLog = nil
	return p, nil
}

// URL returns the proxy's URL, "http://127.0.0.1:port".
func (p *Proxy) URL() string { return p.srv.URL }

// Set replaces the function choosing the faults of later requests (nil:
// pass everything); the requests are numbered on from where they are.
func (p *Proxy) Set(decide func(req int) Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.decide = decide
}

// Counts returns how many requests each mode got so far.
func (p *Proxy) Counts() map[Mode]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Mode]int{}
	for m, n := range p.counts {
		if n > 0 {
			out[Mode(m)] = n
		}
	}
	return out
}

// Close ends delayed requests, closes every connection and stops the
// server.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// serve does the request's fault.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	f := Fault{}
	if p.decide != nil {
		f = p.decide(p.n)
	}
	p.n++
	p.counts[f.Mode]++
	p.mu.Unlock()
	switch f.Mode {
	case Reset, Close:
		io.Copy(io.Discard, r.Body)
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("faultproxy: the server cannot hijack")
		}
		c, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok && f.Mode == Reset {
			tc.SetLinger(0)
		}
		c.Close()
		return
	case Status500:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "injected server error")
		return
	case Delay:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done(): // the client gave up
			return
		case <-p.done:
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}
