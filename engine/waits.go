package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/tidemark/tidemark/source"
)

// Waits on services (source.Waiter): records a source holds because a
// service it needs to decode them cannot be reached (a schema registry).
// The source bounds the wait and fails the run when it outlasts its key
// (source.schema_registry.max_wait); the runner says so meanwhile: on the
// log within a second of the wait's start, every waitRepeat after, and
// when the service answers again, and in the monitoring snapshots
// (Live.Waits).

// Reporting of waits.
const (
	waitPoll   = 250 * time.Millisecond // how often the watcher looks
	waitRepeat = 30 * time.Second       // a wait still under way is logged again
)

// waiters returns the run's sources that can wait on a service.
func (rt *runtime) waiters() []source.Waiter {
	var ws []source.Waiter
	if w, ok := rt.src.(source.Waiter); ok {
		ws = append(ws, w)
	}
	for _, in := range rt.ins {
		if w, ok := in.src.(source.Waiter); ok && in.idx > 0 {
			ws = append(ws, w)
		}
	}
	return ws
}

// waiting returns the waits under way of ws.
func waiting(ws []source.Waiter) []source.Wait {
	var out []source.Wait
	for _, w := range ws {
		out = append(out, w.Waiting()...)
	}
	return out
}

// watchWaits logs the waits of ws until stop is closed. It runs on a
// goroutine of its own, since a source may be blocked inside Next on the
// very service it waits for.
func (rt *runtime) watchWaits(ws []source.Waiter, stop <-chan struct{}) {
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	type seen struct {
		since, logged time.Time
	}
	open := map[string]seen{}
	for stopped := false; !stopped; {
		select {
		case <-stop:
			stopped = true // a last look: a wait that ended is said to have ended
		case <-t.C:
		}
		now := time.Now()
		cur := map[string]bool{}
		for _, w := range waiting(ws) {
			cur[w.Service] = true
			s, ok := open[w.Service]
			if ok && now.Sub(s.logged) < waitRepeat {
				continue
			}
			if !ok {
				s.since = w.Since
			}
			s.logged = now
			open[w.Service] = s
			rt.logf("%s", waitLine(w, now))
		}
		for svc, s := range open {
			if !cur[svc] {
				delete(open, svc)
				rt.logf("%s: reachable again after %s; the records that waited are read", svc, now.Sub(s.since).Round(time.Millisecond))
			}
		}
	}
}

// waitLine is the log line of a wait under way: "schema registry
// http://…: unreachable since …, retrying (…)".
func waitLine(w source.Wait, now time.Time) string {
	recs := "the records fetched wait"
	if w.Records != "" {
		recs = "records of " + w.Records + " wait"
	}
	last := w.Err
	if w.Attempts > 0 {
		last = fmt.Sprintf("%d attempts, the last: %s", w.Attempts, w.Err)
	}
	return fmt.Sprintf("%s: unreachable since %s, retrying (%s, not quarantined; %s; %s so far, the run fails after %s)",
		w.Service, w.Since.UTC().Format(time.RFC3339), recs, last, now.Sub(w.Since).Round(time.Second), w.Limit)
}

// logMu makes Options.Logf's calls one at a time across the runner's
// goroutines and the wait watcher.
var logMu sync.Mutex
