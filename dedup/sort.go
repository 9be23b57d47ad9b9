package dedup

import (
	"cmp"
	"math/bits"
	"slices"
)

// Scratch is the working memory of a table's sections (AppendEntries and
// AppendDelta sort the ids they write): tables that are never written at
// once — the tables of one task's key groups — share one (UseScratch), so
// that writing a section allocates nothing per id. Its size follows the
// largest section written; past maxScratch slots it is given back after
// each use.
type Scratch struct {
	a, b   []slot
	counts []uint32
}

// maxScratch is the largest scratch kept between sections (slots, 16
// bytes each: 16 MiB).
const maxScratch = 1 << 20

// UseScratch makes the table sort its sections in s (shared with other
// tables used on the same goroutine; nil: a scratch of its own per
// section).
func (t *Table) UseScratch(s *Scratch) { t.scratch = s }

// release drops buffers grown past maxScratch.
func (s *Scratch) release() {
	if cap(s.a) > maxScratch {
		s.a = nil
	}
	if cap(s.b) > maxScratch {
		s.b = nil
	}
	if cap(s.counts) > maxScratch {
		s.counts = nil
	}
}

// sortSlots sorts s by id, stably (slots of one id keep their order),
// and returns the sorted slots: s itself, or sc's memory (valid until sc
// sorts again). s's memory may be overwritten either way.
//
// The ids are hashes, uniform over the range of their key group, so one
// stable counting pass into about n/2 buckets by the ids' leading bits
// above the smallest id (a bucket index monotone in the id), then an
// insertion sort, which moves slots only within their bucket, sort them
// in linear time. Ids bunched into few buckets (no hash does that, but
// ids come from input) fall back to a comparison sort.
func sortSlots(s []slot, sc *Scratch) []slot {
	n := len(s)
	if n < 32 {
		insertionSortSlots(s)
		return s
	}
	lo, hi := s[0].id, s[0].id
	for i := range s {
		lo = min(lo, s[i].id)
		hi = max(hi, s[i].id)
	}
	lg := bits.Len(uint(n)) - 1 // about n/2 buckets
	shift := max(bits.Len64(hi-lo)-lg, 0)
	nb := int((hi-lo)>>shift) + 1
	if cap(sc.counts) < nb+1 {
		sc.counts = make([]uint32, nb+1)
	}
	counts := sc.counts[:nb+1]
	clear(counts)
	for i := range s {
		counts[((s[i].id-lo)>>shift)+1]++
	}
	most := uint32(0)
	for b := 1; b <= nb; b++ {
		most = max(most, counts[b])
		counts[b] += counts[b-1]
	}
	if most > 64 {
		slices.SortStableFunc(s, func(a, b slot) int { return cmp.Compare(a.id, b.id) })
		return s
	}
	if cap(sc.b) < n {
		sc.b = make([]slot, n)
	}
	dst := sc.b[:n]
	for i := range s {
		b := (s[i].id - lo) >> shift
		dst[counts[b]] = s[i]
		counts[b]++
	}
	insertionSortSlots(dst)
	return dst
}

// insertionSortSlots sorts s by id, stably.
func insertionSortSlots(s []slot) {
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for j > 0 && s[j-1].id > x.id {
			s[j] = s[j-1]
			j--
		}
		s[j] = x
	}
}
