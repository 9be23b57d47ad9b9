// Package bloom is a split-block Bloom filter of 64-bit hashes, growing
// as keys come: the disk backend's filter of the keys a key group wrote
// to its store (docs/state.md, "The hot tier"), so that a lookup of a key
// the store never received costs no store read.
//
// The algorithm is the split-block Bloom filter of Apache Parquet's
// specification (parquet-format, BloomFilter.md; Putze, Sanders and
// Singler, "Cache-, Hash- and Space-Efficient Bloom Filters", 2007): a key
// picks one block of 256 bits (eight 32-bit words) and sets one bit in
// each word, so an Add or a MayContain touches one block, half a cache
// line, where a classic Bloom filter touches k lines. At 10 bits per key
// its false-positive rate is about 1 %; it never answers "absent" for a
// key added (no false negatives).
//
// Why not a library (bits-and-blooms/bloom/v3 is well kept): it hashes a
// byte slice (murmur3, 128 bits) per operation and touches k words spread
// over the whole filter, where the keys here are already 64-bit hashes;
// and it has no growth. The filter is about 60 lines of core state code.
//
// A Filter grows as a scalable Bloom filter does (Almeida et al.,
// "Scalable Bloom Filters", 2007): when its newest part holds its
// capacity of keys, a part twice as large is added; MayContain asks
// every part. A Filter is not safe for concurrent use.
package bloom

// BitsPerKey is the bits a part spends per key of its capacity: a
// split-block filter's false-positive rate at 10 bits per key is about
// 1 % (Parquet's table: 1.2 % at 10).
const BitsPerKey = 10

// blockBits is the bits of a block: eight 32-bit words.
const blockBits = 256

// salt is Parquet's split-block salt: word i of a block gets the bit
// (x·salt[i]) >> 27 of the key's low 32 bits x.
var salt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

// part is one split-block filter of a fixed size.
type part struct {
	blocks [][8]uint32
	n, cap int
}

// Filter is a growing split-block Bloom filter of 64-bit hashes. The zero
// value is not usable: New.
type Filter struct {
	parts []part
	n     int
}

// New returns an empty filter whose first part holds capacity keys at
// BitsPerKey (at least 256 keys: capacity is clamped to [256, 1<<30]).
func New(capacity int) *Filter {
	f := &Filter{}
	f.grow(min(max(capacity, 256), 1<<30))
	return f
}

func (f *Filter) grow(capacity int) {
	nb := (capacity*BitsPerKey + blockBits - 1) / blockBits
	f.parts = append(f.parts, part{blocks: make([][8]uint32, nb), cap: capacity})
}

// mix spreads h's bits (MurmurHash3's 64-bit finalizer): the callers'
// hashes may share their high bits (a key group is a range of them).
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// block returns the index of h's block among nb: the high 32 bits of the
// mixed hash scaled to nb (Lemire's multiply-shift), and the low 32 bits
// that pick the bits.
func block(h uint64, nb int) (int, uint32) {
	m := mix(h)
	return int((m >> 32) * uint64(nb) >> 32), uint32(m)
}

// Add puts h into the filter, adding a part twice the newest's capacity
// first when that part is full.
func (f *Filter) Add(h uint64) {
	p := &f.parts[len(f.parts)-1]
	if p.n >= p.cap {
		f.grow(min(p.cap*2, 1<<30))
		p = &f.parts[len(f.parts)-1]
	}
	i, x := block(h, len(p.blocks))
	b := &p.blocks[i]
	for w := range b {
		b[w] |= 1 << ((x * salt[w]) >> 27)
	}
	p.n++
	f.n++
}

// MayContain reports whether h may have been added: false only for a
// hash never added; true for every hash added and for about 1 % of the
// others per part.
func (f *Filter) MayContain(h uint64) bool {
	for k := range f.parts {
		p := &f.parts[k]
		i, x := block(h, len(p.blocks))
		b := &p.blocks[i]
		all := true
		for w := range b {
			if b[w]&(1<<((x*salt[w])>>27)) == 0 {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// Len returns the number of Adds (a hash added twice counts twice).
func (f *Filter) Len() int { return f.n }

// Bytes returns the filter's size in bytes: its blocks, 32 bytes each.
func (f *Filter) Bytes() int {
	n := 0
	for k := range f.parts {
		n += len(f.parts[k].blocks) * 32
	}
	return n
}
