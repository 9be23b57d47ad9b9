package perturb

import (
	"fmt"
	"strings"
	"testing"
)

func drainQueue(q *Queue[string]) string {
	var out []string
	for q.Due() {
		at, seq, kind, v := q.Pop()
		out = append(out, fmt.Sprintf("%d/%d/%s/%s", at, seq, kind, v))
	}
	return strings.Join(out, " ")
}

func TestQueue(t *testing.T) {
	var q Queue[string]
	q.PushAtHorizon(0, "early") // before any event time: pending
	if q.Due() || q.Len() != 1 {
		t.Fatalf("due before an event time: %v, len %d", q.Due(), q.Len())
	}
	q.Observe(100)
	q.Push(150, 1, First, "a")
	q.Push(120, 2, First, "b")
	q.Push(150, 1, Conflict, "a-conflict")
	q.Push(150, 1, Redelivery, "a-again")
	q.Push(150, 0, Redelivery, "early-again")
	if got := drainQueue(&q); got != "100/0/first/early" {
		t.Fatalf("due at horizon 100: %s", got)
	}
	q.Observe(90) // lower: no change
	if h, ok := q.Horizon(); h != 100 || !ok {
		t.Fatalf("horizon %d %v", h, ok)
	}
	q.Observe(150)
	q.PushAtHorizon(3, "bad")
	if got := drainQueue(&q); got != "120/2/first/b 150/0/redelivery/early-again 150/1/first/a 150/1/redelivery/a-again 150/1/conflict/a-conflict 150/3/first/bad" {
		t.Fatalf("due at horizon 150: %s", got)
	}
	q.Push(500, 4, First, "late")
	if q.Due() {
		t.Fatal("500 due at horizon 150")
	}
	q.Close()
	if got := drainQueue(&q); got != "500/4/first/late" {
		t.Fatalf("after Close: %s", got)
	}
}

func TestQueueDisorderAndEmptyInput(t *testing.T) {
	var q Queue[string]
	q.SetDisorder(50)
	q.Observe(100)
	q.Push(60, 0, First, "x")
	q.Push(40, 1, First, "y")
	if got := drainQueue(&q); got != "40/1/first/y" {
		t.Fatalf("disorder 50 at horizon 100: %s", got)
	}
	// Only records without event time: they arrive at the epoch.
	var e Queue[string]
	e.PushAtHorizon(0, "a")
	e.PushAtHorizon(1, "b")
	e.Close()
	e.PushAtHorizon(2, "c")
	if got := drainQueue(&e); got != "0/0/first/a 0/1/first/b 0/2/first/c" {
		t.Fatalf("no event times: %s", got)
	}
	// Extreme horizons do not overflow.
	var m Queue[string]
	m.SetDisorder(1000)
	m.Observe(NoTime + 1)
	m.Push(NoTime+1, 0, First, "min")
	if m.Due() {
		t.Fatal("due below the representable limit")
	}
}
