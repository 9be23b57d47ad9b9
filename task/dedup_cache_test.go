package task

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
		for p, live := range c.live {
			if live {
				sum += len(c.pay[p])
			}
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

// refCache is the payload cache as it was first written, on a Go map from
// ids to their payload and place: the reference the cache is checked
// against.
type refCache struct {
	capacity int
	ring     []uint64
	next     int
	m        map[uint64]refCached
}

type refCached struct {
	payload []byte
	place   int
}

func (c *refCache) put(id uint64, payload []byte) {
	if c.m == nil {
		c.m = map[uint64]refCached{}
	}
	place := len(c.ring)
	if place < c.capacity {
		c.ring = append(c.ring, id)
	} else {
		place = c.next
		if ev := c.ring[place]; ev != id {
			if x, ok := c.m[ev]; ok && x.place == place {
				delete(c.m, ev)
			}
		}
		c.ring[place] = id
		c.next = (c.next + 1) % c.capacity
	}
	c.m[id] = refCached{payload: append([]byte(nil), payload...), place: place}
}

// snapshot writes the ring oldest first in payloadCache.snapshot's format.
func (c *refCache) snapshot(e *state.Encoder) {
	e.Uint(uint64(len(c.ring)))
	start := 0
	if len(c.ring) == c.capacity {
		start = c.next
	}
	for k := range len(c.ring) {
		p := (start + k) % len(c.ring)
		x, ok := c.m[c.ring[p]]
		live := ok && x.place == p
		e.Fixed64(c.ring[p])
		e.Bool(live)
		if live {
			e.Bytes8(x.payload)
		}
	}
}

// TestPayloadCacheAgainstMap: random puts (ids drawn from a small set, so
// that re-puts of held ids, stale places and evictions of every kind
// occur; ids sharing their low or high bits, so that the index's probe
// runs collide and wrap) leave the cache holding what the map-based
// reference holds: every id's payload, the live byte count and the
// snapshot's bytes, after each put, with no bytes held by a stale place
// (as many buffers as live ids, as the map held); and a cache restored
// from a snapshot holds the same again.
func TestPayloadCacheAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, capacity := range []int{1, 2, 3, 5, 16, 79, 300} {
		for _, ids := range [][]uint64{
			spread(rng, capacity*2), spread(rng, capacity/2+1),
			sameLow(capacity * 3), sameHigh(capacity * 2),
		} {
			c := payloadCache{capacity: capacity}
			ref := refCache{capacity: capacity}
			for step := range 4 * capacity * 4 {
				id := ids[rng.IntN(len(ids))]
				payload := []byte(fmt.Sprintf("p%d-%d", id, step))
				if rng.IntN(20) == 0 {
					payload = nil
				}
				c.put(id, payload)
				ref.put(id, payload)
				var got, want state.Encoder
				c.snapshot(&got)
				ref.snapshot(&want)
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("capacity %d, step %d: snapshot differs from the map's", capacity, step)
				}
				live := 0
				for _, id := range ids {
					x, ok := ref.m[id]
					if ok && ref.ring[x.place] == id {
						live += len(x.payload)
					} else {
						x.payload = nil
					}
					if g := c.get(id); !bytes.Equal(g, x.payload) {
						t.Fatalf("capacity %d, step %d: id %#x holds %q, want %q", capacity, step, id, g, x.payload)
					}
				}
				for p, ok := range c.live {
					if !ok && c.pay[p] != nil {
						t.Fatalf("capacity %d, step %d: stale place %d keeps %d bytes", capacity, step, p, cap(c.pay[p]))
					}
				}
				if c.bytes != live {
					t.Fatalf("capacity %d, step %d: %d live bytes counted, want %d", capacity, step, c.bytes, live)
				}
			}
			var e state.Encoder
			c.snapshot(&e)
			r := payloadCache{capacity: capacity}
			r.restore(state.NewDecoder(e.Bytes()))
			var again state.Encoder
			r.snapshot(&again)
			if !bytes.Equal(again.Bytes(), e.Bytes()) {
				t.Fatalf("capacity %d: a restored cache snapshots differently", capacity)
			}
			for _, id := range ids {
				if !bytes.Equal(r.get(id), c.get(id)) {
					t.Fatalf("capacity %d: restored id %#x holds %q, want %q", capacity, id, r.get(id), c.get(id))
				}
			}
		}
	}
}

func spread(rng *rand.Rand, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = rng.Uint64() | 1
	}
	return ids
}

// sameLow returns ids equal in their low 32 bits; sameHigh, in their high
// 32 bits (the index hashes the product with 2⁶⁴/φ, whose high bits
// depend on all of the id's).
func sameLow(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i+1)<<32 | 0xabcd
	}
	return ids
}

func sameHigh(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = 0x1234<<32 | uint64(i+1)
	}
	return ids
}
