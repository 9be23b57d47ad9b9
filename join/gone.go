package join

import (
	"math"

	"github.com/tidemark/tidemark/state/bloom"
)

// The keys gone from memory (docs/state.md, "The hot tier"): a key group
// of an interval join on disk that let keys go knows which of them left
// rows in the store by Bloom filters of their hashes (state/bloom), so
// that a row of a key absent from memory and from the filters needs no
// load. A filter answers "may hold" for about 1 % of the keys never
// added (a load that finds nothing: the memory backend's outcome, at a
// scan's cost) and never "absent" for a key added. At 10 bits a key a
// filter costs about 1.25 bytes a key, where a sorted list of hashes
// with each side's last bucket cost 24.
//
// A key group's filters are each for a range of buckets: a key joins
// the newest filter when its last bucket of each side is at most one
// past that filter's first, else it starts a new filter; a filter is
// forgotten once the range deletes have passed its last bucket of every
// side (no key of it has a row left in the store). The filters of a
// join share goneCap bytes (an eighth of the tier's budget, at least
// minGone); a key group whose filter outgrows the share forgets its
// filters and loads every absent key until the range deletes pass the
// buckets its filters covered (as after a restore: coldGroup.restored),
// so that the memory they take is bounded by the budget, not by the
// keys ever seen.

// goneFilter is one filter of a key group's keys gone from memory: the
// hashes of the keys, the first key's last bucket per side (base) and
// the latest last bucket of its keys per side (last; math.MinInt64:
// none of the side).
type goneFilter struct {
	f          *bloom.Filter
	base, last [2]int64
}

// minGone is the least room for a join's filters of keys gone, whatever
// its tier's budget.
const minGone = 64 << 10

// goneCap returns the room of a join's filters under a tier of hot
// bytes: an eighth of it, at least minGone.
func goneCap(hot int) int { return max(hot/8, minGone) }

// mayHold reports whether a key of hash h absent from memory may have
// rows in the store: false only for a key no filter holds.
func (cg *coldGroup) mayHold(h uint64) bool {
	for i := range cg.gone {
		if cg.gone[i].f.MayContain(h) {
			return true
		}
	}
	return false
}

// addGone records that the key of hash h left memory with rows in the
// store up to bucket last per side (math.MinInt64: none of the side).
func (c *coldState) addGone(cg *coldGroup, h uint64, last [2]int64) {
	if cg.restored && covered(cg, last) {
		return // every absent key is loaded until the deletes pass upTo
	}
	n := len(cg.gone)
	if n == 0 || !fits(&cg.gone[n-1], last) {
		f := bloom.New(max(cg.fsize, 256))
		c.fbytes += f.Bytes()
		cg.gone = append(cg.gone, goneFilter{f: f, base: last, last: last})
		n++
	}
	gf := &cg.gone[n-1]
	for s := range 2 {
		if gf.base[s] == math.MinInt64 {
			gf.base[s] = last[s]
		}
		gf.last[s] = max(gf.last[s], last[s])
	}
	before := gf.f.Bytes()
	gf.f.Add(h)
	cg.fsize = max(cg.fsize, gf.f.Len())
	c.fbytes += gf.f.Bytes() - before
	if c.fbytes > c.fcap {
		c.blind(cg)
	}
}

// fits reports whether a key whose last buckets are last joins gf: on
// each side, none, or at most one past gf's first.
func fits(gf *goneFilter, last [2]int64) bool {
	for s := range 2 {
		if last[s] != math.MinInt64 && gf.base[s] != math.MinInt64 && last[s] > gf.base[s]+1 {
			return false
		}
	}
	return true
}

// covered reports whether a key whose last buckets are last is within
// the buckets a restored (or blind) key group loads every absent key of.
func covered(cg *coldGroup, last [2]int64) bool {
	for s := range 2 {
		if last[s] != math.MinInt64 && last[s] > cg.upTo[s] {
			return false
		}
	}
	return true
}

// blind makes cg load every absent key until the range deletes pass
// every bucket its filters covered, and forgets the filters.
func (c *coldState) blind(cg *coldGroup) {
	up := cg.hi
	for i := range cg.gone {
		for s := range 2 {
			up[s] = max(up[s], cg.gone[i].last[s])
		}
		c.fbytes -= cg.gone[i].f.Bytes()
	}
	if cg.restored {
		up = [2]int64{max(up[L], cg.upTo[L]), max(up[R], cg.upTo[R])}
	}
	cg.restored, cg.upTo = true, up
	clear(cg.gone)
	cg.gone = cg.gone[:0]
	c.stats.Blind++
}

// expireGone forgets cg's filters whose keys' rows the range deletes
// have all passed.
func (c *coldState) expireGone(cg *coldGroup) {
	keep := cg.gone[:0]
	for _, gf := range cg.gone {
		if gf.last[L] >= cg.swept[L] && cg.has[L] || gf.last[R] >= cg.swept[R] && cg.has[R] {
			keep = append(keep, gf)
		} else {
			c.fbytes -= gf.f.Bytes()
		}
	}
	clear(cg.gone[len(keep):])
	cg.gone = keep
}

// GoneBytes returns the bytes of the join's filters of the keys gone
// from memory with rows in the store (zero on the memory backend).
func (o *Operator) GoneBytes() int {
	if o.cold == nil {
		return 0
	}
	return o.cold.fbytes
}
