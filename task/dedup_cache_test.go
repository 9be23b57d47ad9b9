package task

import (
	"fmt"
	"testing"
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
