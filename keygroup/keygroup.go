// Package keygroup is the arithmetic of key groups, the unit of state
// partitioning (DESIGN.md, "Notes for parallelism"): every keyed state of a
// pipeline hashes into one of K key groups (K = the pipeline's key_groups,
// its maximum parallelism), and the key groups are split among N tasks in
// contiguous ranges. It follows Flink's KeyGroupRangeAssignment: task i of
// N owns [ceil(i·K/N), ceil((i+1)·K/N)), and key group g belongs to task
// g·N/K.
//
// The hash functions are part of the checkpoint format: a key's group must
// be the same in every process and every version of tidemark that reads
// the same checkpoints, so they are fixed here and never seeded.
package keygroup

// Max is the largest number of key groups (2^15, Flink's upper bound on
// maximum parallelism): a key group fits in a uint16.
const Max = 1 << 15

// Range is the half-open range [Lo, Hi) of key groups a task owns.
type Range struct{ Lo, Hi int }

// Len returns the number of key groups in r.
func (r Range) Len() int { return r.Hi - r.Lo }

// Contains reports whether key group g is in r.
func (r Range) Contains(g int) bool { return g >= r.Lo && g < r.Hi }

// For returns the key groups task i of n owns out of k: [ceil(i·k/n),
// ceil((i+1)·k/n)). Precondition: 0 ≤ i < n ≤ k.
func For(i, n, k int) Range {
	return Range{Lo: (i*k + n - 1) / n, Hi: ((i+1)*k + n - 1) / n}
}

// Owner returns the task (0 ≤ task < n) that owns key group g of k: g·n/k.
// It is the inverse of For: For(Owner(g, n, k), n, k).Contains(g).
func Owner(g, n, k int) int { return g * n / k }

// OfHash maps a 64-bit hash to one of k key groups by its high 32 bits
// (multiply-shift, Lemire's fast range reduction): uniform, and independent
// of the low bits that hash tables index by (dedup's open addressing uses
// the same hash's low bits, so a key group's ids still spread over its
// table's slots).
func OfHash(h uint64, k int) int { return int((h >> 32) * uint64(k) >> 32) }

// FNV1a64 is the 64-bit FNV-1a hash (Fowler–Noll–Vo) of b: stable across
// processes and versions. The window operator's key groups are
// FNV1a64(encoded key) mod k.
func FNV1a64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// OfKey returns the key group of an encoded group key (the window
// operator's encoding, operator.AppendKey): FNV1a64(enc) mod k.
func OfKey(enc []byte, k int) int { return int(FNV1a64(enc) % uint64(k)) }
