package perturb

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSchedulerState: a scheduler restored from the state of another
// after k records schedules the records after it exactly as the first
// one does, with conflicts and offline bursts, for several k.
func TestSchedulerState(t *testing.T) {
	o := Options{Seed: 11, Delay: 5 * time.Second, MaxDelay: time.Minute, StragglerFraction: 0.2, RedeliverFraction: 0.3,
		ConflictFraction: 0.2, ConflictField: "amount", Partitions: 3, OfflineFraction: 0.5, OfflineDelay: time.Minute}
	key := func(i int) ([]byte, bool) { return []byte(fmt.Sprintf("dev-%d", i%7)), i%5 != 0 }
	et := func(i int) int64 {
		if i%11 == 3 {
			return NoTime
		}
		return int64(i) * 700
	}
	one, err := NewScheduler(o)
	if err != nil {
		t.Fatal(err)
	}
	var want []Schedule
	for i := range 300 {
		k, has := key(i)
		want = append(want, one.Next(et(i), k, has))
	}
	for _, k := range []int{0, 1, 57, 299} {
		a, _ := NewScheduler(o)
		for i := range k {
			kk, has := key(i)
			a.Next(et(i), kk, has)
		}
		st := a.AppendState(nil)
		b, _ := NewScheduler(o)
		if err := b.SetState(st); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		for i := k; i < 300; i++ {
			kk, has := key(i)
			if got := b.Next(et(i), kk, has); got != want[i] {
				t.Fatalf("k=%d: record %d scheduled %+v, want %+v", k, i, got, want[i])
			}
		}
	}
	// A state does not fit a scheduler without conflicts.
	o2 := o
	o2.ConflictFraction = 0
	c, _ := NewScheduler(o2)
	if err := c.SetState(one.AppendState(nil)); !errors.Is(err, ErrState) {
		t.Fatalf("SetState without conflicts: %v", err)
	}
	if err := c.SetState([]byte{9}); !errors.Is(err, ErrState) {
		t.Fatalf("SetState of another version: %v", err)
	}
}

// TestQueueSnapshot: a queue restored from a snapshot taken mid-stream
// releases the same deliveries in the same order as the original, pending
// ones included.
func TestQueueSnapshot(t *testing.T) {
	build := func(q *Queue[int], from, to int) {
		for i := from; i < to; i++ {
			switch {
			case i < 3:
				q.PushAtHorizon(int64(i), i) // before any event time
			case i%4 == 0:
				q.PushAtHorizon(int64(i), i)
			default:
				q.Observe(int64(i) * 10)
				q.Push(int64(i)*10+int64(i%7)*25, int64(i), Kind(i%3), i)
			}
		}
	}
	drain := func(q *Queue[int]) []int {
		var out []int
		for q.Due() {
			_, _, _, v := q.Pop()
			out = append(out, v)
		}
		return out
	}
	for _, k := range []int{0, 2, 3, 10, 40} {
		var a Queue[int]
		build(&a, 0, k)
		first := drain(&a)
		held, h, known, closed := a.Snapshot()
		var b Queue[int]
		b.Restore(held, h, known, closed)
		build(&a, k, 60)
		build(&b, k, 60)
		wantA, gotB := drain(&a), drain(&b)
		a.Close()
		b.Close()
		wantA, gotB = append(wantA, drain(&a)...), append(gotB, drain(&b)...)
		if fmt.Sprint(gotB) != fmt.Sprint(wantA) || len(first)+len(wantA) != 60 {
			t.Fatalf("k=%d: restored queue released %v, the original %v (%d before)", k, gotB, wantA, len(first))
		}
	}
}
