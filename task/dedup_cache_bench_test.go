package task

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPayloadCachePut: first deliveries of the article's shape into
// the payload caches of 128 key groups holding 79 payloads each (the
// default keep_payloads over the default key groups), ~240-byte payloads.
func BenchmarkPayloadCachePut(b *testing.B) {
	caches := make([]payloadCache, 128)
	for i := range caches {
		caches[i].capacity = 79
	}
	payload := make([]byte, 240)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]uint64, 1<<16)
	for i := range ids {
		ids[i] = rng.Uint64()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := ids[i&(len(ids)-1)] + uint64(i>>16)
		caches[id>>57].put(id, payload)
	}
}
