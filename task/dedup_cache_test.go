package task

import (
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/state"
)

// TestPayloadCacheReusesEvicted: once the ring is full, a put takes the
// bytes of the payload it evicts, so the dedup step allocates nothing per
// first delivery; what the cache holds is what was put last.
func TestPayloadCacheReusesEvicted(t *testing.T) {
	c := payloadCache{capacity: 79}
	payload := []byte(`{"event_id":"evt-20260624-0000001","event_type":"ORDER_PAID","amount":49000}`)
	id := uint64(0)
	put := func() {
		id++
		payload[len(payload)-2] = byte('0' + id%10)
		c.put(id, payload)
	}
	for range 200 {
		put()
	}
	if n := testing.AllocsPerRun(1000, put); n != 0 {
		t.Errorf("a put allocates %v times, want 0", n)
	}
	for k := id - 78; k <= id; k++ {
		want := fmt.Sprintf(`%s%d}`, payload[:len(payload)-2], k%10)
		if got := string(c.get(k)); got != want {
			t.Fatalf("id %d: %s, want %s", k, got, want)
		}
	}
	if c.get(id-79) != nil {
		t.Errorf("id %d was evicted, still held", id-79)
	}
}

// TestPayloadCacheSizes: the cache's count of live payload bytes follows
// puts, re-puts of a held id and evictions (checked against a sum over
// what it holds), and the sizes a section is grown by hold the entries
// snapshot and appendPuts write.
func TestPayloadCacheSizes(t *testing.T) {
	c := payloadCache{capacity: 5}
	for i, id := range []uint64{1, 2, 3, 2, 4, 5, 6, 1, 7, 7, 8} {
		c.put(id, make([]byte, 10+3*i))
		sum := 0
		for _, x := range c.m {
			sum += len(x.payload)
		}
		if c.bytes != sum {
			t.Fatalf("after put %d: %d live bytes counted, %d held", i, c.bytes, sum)
		}
		var e state.Encoder
		c.appendPuts(&e)
		if e.Len() > c.size() {
			t.Fatalf("after put %d: puts of %d bytes, size %d", i, e.Len(), c.size())
		}
		e.Reset()
		c.snapshot(&e)
		if e.Len() > c.size() {
			t.Fatalf("after put %d: snapshot of %d bytes, size %d", i, e.Len(), c.size())
		}
	}
	// The ring holds the last 5 puts, 6, 1, 7, 7, 8 (lengths 28, 31, 34,
	// 37, 40); the first put of 7 is stale, so 28+31+37+40 bytes are live.
	if c.bytes != 28+31+37+40 {
		t.Errorf("%d live bytes, want %d", c.bytes, 28+31+37+40)
	}
}
