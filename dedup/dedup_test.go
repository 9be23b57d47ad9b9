package dedup

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

func id(s string) uint64 { return IDHash([]byte(s)) }

func TestObserve(t *testing.T) {
	tb := New(24 * 3600_000)
	const ts = 1_788_220_800_000
	if o, _ := tb.Observe(id("e100"), 7, ts); o != First {
		t.Fatalf("first delivery: %v", o)
	}
	if o, p := tb.Observe(id("e100"), 7, ts); o != Duplicate || p != 7 {
		t.Fatalf("redelivery: %v %d", o, p)
	}
	if o, p := tb.Observe(id("e100"), 8, ts); o != Conflict || p != 7 {
		t.Fatalf("same id, other payload: %v %d", o, p)
	}
	if o, _ := tb.Observe(id("e101"), 7, ts); o != First {
		t.Fatalf("another id: %v", o)
	}
	if tb.Len() != 2 {
		t.Fatalf("len %d", tb.Len())
	}
}

// TestExpiry: an id is forgotten once the watermark passes its event time
// + TTL (rounded up to the second, swept at most every TTL/4 of watermark
// progress), and a later delivery is then a first one.
func TestExpiry(t *testing.T) {
	ttl := int64(3600_000)
	tb := New(ttl)
	tb.Observe(id("a"), 1, 1_000_000)
	tb.Observe(id("b"), 1, 2_000_000)
	tb.Expire(1_000_000 + ttl - 1) // before a's expiry
	if !tb.Contains(id("a")) || !tb.Contains(id("b")) {
		t.Fatal("forgot an id before its TTL")
	}
	tb.Expire(1_000_000 + ttl + ttl/4) // a expired, b not; a sweep is due
	if tb.Contains(id("a")) || !tb.Contains(id("b")) {
		t.Fatalf("after a's TTL: a %v b %v", tb.Contains(id("a")), tb.Contains(id("b")))
	}
	if o, _ := tb.Observe(id("a"), 1, 1_000_000); o != First {
		t.Fatalf("a after its TTL: %v", o)
	}
}

// TestMatchesMap checks the table against a plain map under random
// observations and expiries.
func TestMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ttl := rapid.Int64Range(1000, 100_000).Draw(t, "ttl")
		tb := New(ttl)
		type e struct {
			payload uint32
			ts      int64
		}
		model := map[string]e{}
		wm := int64(0)
		swept := int64(-1 << 62)
		for i, n := 0, rapid.IntRange(1, 3000).Draw(t, "n"); i < n; i++ {
			if rapid.IntRange(0, 20).Draw(t, "op") == 0 {
				wm += rapid.Int64Range(0, ttl).Draw(t, "adv")
				if wm >= swept {
					// The table sweeps now: drop what the model says expired.
					for k, v := range model {
						if (v.ts+ttl+999)/1000 <= wm/1000 {
							delete(model, k)
						}
					}
					swept = wm + max(ttl/4, 1)
				}
				tb.Expire(wm)
				continue
			}
			k := fmt.Sprint(rapid.IntRange(0, 500).Draw(t, "id"))
			p := uint32(rapid.IntRange(0, 2).Draw(t, "payload"))
			ts := wm + rapid.Int64Range(0, ttl).Draw(t, "ts")
			o, first := tb.Observe(id(k), p, ts)
			m, seen := model[k]
			switch {
			case !seen:
				if o != First {
					t.Fatalf("%s new: %v", k, o)
				}
				model[k] = e{p, ts}
			case m.payload == p:
				if o != Duplicate || first != p {
					t.Fatalf("%s duplicate: %v", k, o)
				}
			default:
				if o != Conflict || first != m.payload {
					t.Fatalf("%s conflict: %v %d", k, o, first)
				}
			}
			if tb.Len() != len(model) {
				t.Fatalf("len %d, model %d", tb.Len(), len(model))
			}
		}
	})
}

// BenchmarkBytesPerID reports the table's bytes per remembered id at 1M
// ids (the bound is 48).
func BenchmarkBytesPerID(b *testing.B) {
	for it := 0; it < b.N; it++ {
		tb := New(24 * 3600_000)
		for i := 0; i < 1_000_000; i++ {
			tb.Observe(IDHash([]byte(fmt.Sprintf("evt-%d", i))), uint32(i), 1_788_220_800_000)
		}
		b.ReportMetric(float64(tb.Bytes())/float64(tb.Len()), "bytes/id")
	}
}

func BenchmarkObserve(b *testing.B) {
	tb := New(24 * 3600_000)
	ids := make([]uint64, 1<<20)
	for i := range ids {
		ids[i] = IDHash([]byte(fmt.Sprintf("evt-%d", i)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb.Observe(ids[i&(1<<20-1)], 1, 1_788_220_800_000)
	}
}

func TestCanonicalPayload(t *testing.T) {
	h := NewHasher([]string{"ingested_at"})
	same := []string{
		`{"event_id":"e101","amount":-5000,"ingested_at":"2026-09-01T10:20:00+09:00"}`,
		`{ "amount" : -5000, "event_id" : "e101", "ingested_at": "2026-09-01T10:21:00+09:00" }`,
		`{"event_id":"\u0065101","amount":-5000}`,
	}
	want, ok := h.Sum([]byte(same[0]))
	if !ok {
		t.Fatal("does not parse")
	}
	for _, s := range same[1:] {
		if got, _ := h.Sum([]byte(s)); got != want {
			t.Errorf("%s: hash differs", s)
		}
	}
	for _, s := range []string{
		`{"event_id":"e101","amount":-8000}`,
		`{"event_id":"e101","amount":-5000.0}`,
		`{"event_id":"e101","amount":"-5000"}`,
		`{"event_id":"e101","amount":-5000,"note":null}`,
		`{"event_id":"e101","nested":{"ingested_at":1},"amount":-5000}`,
	} {
		if got, _ := h.Sum([]byte(s)); got == want {
			t.Errorf("%s: hash equals the first payload's", s)
		}
	}
	// Nested key order does not matter either.
	a, _ := h.Sum([]byte(`{"x":{"b":1,"a":[2,{"d":3,"c":4}]}}`))
	b, _ := h.Sum([]byte(`{"x":{"a":[2,{"c":4,"d":3}],"b":1}}`))
	if a != b {
		t.Error("nested key order changed the hash")
	}
}
