package perturb

import "math"

// Kind is what a delivery is: the record's first delivery or a copy.
type Kind uint8

// The kinds, in the order deliveries with equal arrival and sequence
// leave a Queue.
const (
	First      Kind = iota // the record's first delivery
	Redelivery             // a byte-identical copy (at-least-once redelivery)
	Conflict               // a copy with the conflict field changed
)

// String returns "first", "redelivery" or "conflict".
func (k Kind) String() string {
	switch k {
	case First:
		return "first"
	case Redelivery:
		return "redelivery"
	case Conflict:
		return "conflict"
	}
	return "Kind(?)"
}

// Queue holds scheduled deliveries, with a value of type T each, and
// releases them in (arrival, sequence, kind) order as far as the input
// allows: a streaming min-heap with a horizon.
//
// The horizon is the largest event time observed. A delivery is due once
// its arrival is at most the horizon minus the disorder bound: every
// delivery of a record still to come arrives at or after its event time,
// which, when the input keeps the bound, is at least the horizon minus
// the bound. So for such input the released order is exactly the arrival
// order, and the queue holds only deliveries whose arrival lies beyond
// that point: about the records of the last MaxDelay (plus OfflineDelay
// with offline bursts, plus the bound) of event time. After Close
// everything is due.
//
// A delivery without an arrival of its own (a record without an event
// time) is placed at the horizon; one pushed before any event time is
// observed waits, and arrives at the first event time observed (or at 0,
// the epoch, when the input holds none).
//
// The zero Queue is ready to use, with a disorder bound of 0.
type Queue[T any] struct {
	h        []item[T]
	pending  []item[T]
	horizon  int64
	known    bool
	closed   bool
	disorder int64
}

type item[T any] struct {
	arrival int64
	seq     int64
	kind    Kind
	v       T
}

// SetDisorder sets the disorder bound in ms (≥ 0).
func (q *Queue[T]) SetDisorder(ms int64) { q.disorder = max(ms, 0) }

// Observe raises the horizon to et (an event time read) if it is larger.
func (q *Queue[T]) Observe(et int64) {
	if q.known && et <= q.horizon {
		return
	}
	q.horizon, q.known = et, true
	q.release(et)
}

// Horizon returns the largest event time observed, and whether there was
// one.
func (q *Queue[T]) Horizon() (int64, bool) { return q.horizon, q.known }

// Push holds a delivery arriving at arrival.
func (q *Queue[T]) Push(arrival, seq int64, kind Kind, v T) {
	q.push(item[T]{arrival: arrival, seq: seq, kind: kind, v: v})
}

// PushAtHorizon holds a first delivery that arrives at the horizon (see
// Queue).
func (q *Queue[T]) PushAtHorizon(seq int64, v T) {
	it := item[T]{arrival: q.horizon, seq: seq, v: v}
	if !q.known && !q.closed {
		q.pending = append(q.pending, it)
		return
	}
	q.push(it)
}

// Close marks the end of the input: every held delivery becomes due.
func (q *Queue[T]) Close() {
	q.closed = true
	q.release(0)
}

// release schedules the pending deliveries at arrival.
func (q *Queue[T]) release(arrival int64) {
	for i := range q.pending {
		it := q.pending[i]
		it.arrival = arrival
		q.push(it)
	}
	clear(q.pending)
	q.pending = q.pending[:0]
}

// Len returns the number of held deliveries.
func (q *Queue[T]) Len() int { return len(q.h) + len(q.pending) }

// Due reports whether the earliest held delivery may leave.
func (q *Queue[T]) Due() bool {
	if len(q.h) == 0 {
		return false
	}
	if q.closed {
		return true
	}
	if !q.known {
		return false
	}
	limit := q.horizon - q.disorder
	if q.horizon < math.MinInt64+q.disorder {
		limit = math.MinInt64
	}
	return q.h[0].arrival <= limit
}

// Pop removes the earliest held delivery (call it only when Len() > 0;
// Due says whether it may leave yet).
func (q *Queue[T]) Pop() (arrival, seq int64, kind Kind, v T) {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = item[T]{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.h = h
	return top.arrival, top.seq, top.kind, top.v
}

func (q *Queue[T]) push(it item[T]) {
	h := append(q.h, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	q.h = h
}

// less orders deliveries by arrival, then input order, then kind.
func less[T any](a, b *item[T]) bool {
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.kind < b.kind
}

// Held is one delivery a Queue holds, as Snapshot reports it and Restore
// takes it back.
type Held[T any] struct {
	Arrival int64 // unused when Pending
	Seq     int64
	Kind    Kind
	// Pending: pushed at the horizon before any event time was observed;
	// it arrives at the first one.
	Pending bool
	V       T
}

// Snapshot returns what q holds (in no particular order) and its state:
// what Restore needs to rebuild a queue that releases the same deliveries
// in the same order.
func (q *Queue[T]) Snapshot() (held []Held[T], horizon int64, known, closed bool) {
	held = make([]Held[T], 0, q.Len())
	for _, it := range q.h {
		held = append(held, Held[T]{Arrival: it.arrival, Seq: it.seq, Kind: it.kind, V: it.v})
	}
	for _, it := range q.pending {
		held = append(held, Held[T]{Seq: it.seq, Kind: it.kind, Pending: true, V: it.v})
	}
	return held, q.horizon, q.known, q.closed
}

// Restore makes q, which must be empty (its disorder bound set as when
// Snapshot was taken), hold what Snapshot returned. The release order is
// the same, as deliveries are ordered by (arrival, sequence, kind).
func (q *Queue[T]) Restore(held []Held[T], horizon int64, known, closed bool) {
	q.horizon, q.known, q.closed = horizon, known, closed
	for _, h := range held {
		it := item[T]{arrival: h.Arrival, seq: h.Seq, kind: h.Kind, v: h.V}
		if h.Pending {
			q.pending = append(q.pending, it)
			continue
		}
		q.push(it)
	}
}
