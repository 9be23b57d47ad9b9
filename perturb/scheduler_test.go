package perturb

import (
	"math"
	"testing"
	"time"
)

// TestSchedulerDraws pins the transport model's draws for a seed: the file
// source's replay uses the same scheduler, and a change here changes
// every replayed pipeline's arrival order.
func TestSchedulerDraws(t *testing.T) {
	s, err := NewScheduler(Options{Seed: 7, Delay: 10 * time.Second, MaxDelay: time.Minute,
		StragglerFraction: 0.2, RedeliverFraction: 0.3, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	var got []Schedule
	for i := range 6 {
		et := int64(i) * 1000
		if i == 3 {
			et = NoTime
		}
		key, has := []byte("k"), i%2 == 0
		got = append(got, s.Next(et, key, has))
	}
	want := []Schedule{
		{Seq: 0, Partition: 2, Arrival: 9169},
		{Seq: 1, Partition: 1, Arrival: 2594, Redeliver: true, RedeliverAt: 27846},
		{Seq: 2, Partition: 2, Arrival: 50111, Straggler: true},
		{Seq: 3, Partition: 3, Arrival: NoTime},
		{Seq: 4, Partition: 2, Arrival: 6735},
		{Seq: 5, Partition: 1, Arrival: 22307, Straggler: true},
	}
	if p := int(FNV1a([]byte("k")) % 4); p != 2 {
		t.Fatalf("FNV1a(k) mod 4 = %d", p)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestExponentialMean(t *testing.T) {
	s, err := NewScheduler(Options{Seed: 1, Distribution: Exponential, Delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	var sum, capped float64
	for range n {
		d := s.Next(0, nil, false).Arrival
		if d < 0 || d > 10_000 {
			t.Fatalf("delay %d outside [0, 10s]", d)
		}
		if d == 10_000 {
			capped++
		}
		sum += float64(d)
	}
	// Mean of min(X, 10) for X ~ Exp(1) is 1 − e^-10.
	if mean, want := sum/n, 1000*(1-math.Exp(-10)); math.Abs(mean-want) > 10 {
		t.Errorf("mean %.1f ms, want %.1f", mean, want)
	}
	if capped > 30 {
		t.Errorf("%v delays capped, want about 9", capped)
	}
}

func TestOfflineFraction(t *testing.T) {
	s, err := NewScheduler(Options{Seed: 3, OfflineFraction: 0.25, OfflineDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	offline := 0
	for i := range n {
		key := []byte{byte(i), byte(i >> 8), byte(i >> 16)}
		if s.Next(0, key, true).Offline {
			offline++
		}
	}
	if offline < n/4-400 || offline > n/4+400 || s.OfflineBursts() != offline {
		t.Errorf("%d of %d devices offline (%d bursts), want about a quarter", offline, n, s.OfflineBursts())
	}
}

// TestOfflineIndependentOfOrder: whether a device is offline depends on
// the seed and the key only.
func TestOfflineIndependentOfOrder(t *testing.T) {
	a, _ := NewScheduler(Options{Seed: 9, Delay: time.Second, OfflineFraction: 0.5})
	b, _ := NewScheduler(Options{Seed: 9, Delay: time.Second, OfflineFraction: 0.5, StragglerFraction: 0.5})
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, k := range keys {
		x := a.Next(int64(i), []byte(k), true)
		b.Next(int64(i), []byte(keys[len(keys)-1-i]), true) // another order, other draws
		z := b.Next(int64(i), []byte(k), true)
		if x.Offline != z.Offline {
			t.Errorf("key %s: offline %v and %v", k, x.Offline, z.Offline)
		}
	}
}
