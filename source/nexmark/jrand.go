package nexmark

// jrand is java.util.Random: the 48-bit linear congruential generator
// that Beam's Nexmark generator seeds with each event's id. Porting it
// exactly (rather than using math/rand/v2) makes every event reproduce
// Beam's draws one for one; it is also about as cheap as a generator can
// be (one multiply per draw) and needs no allocation to reseed.
type jrand struct{ s uint64 }

const (
	jMul  = 0x5DEECE66D
	jAdd  = 0xB
	jMask = 1<<48 - 1
)

// seedJ returns the generator new Random(seed) would be.
func seedJ(seed int64) jrand { return jrand{(uint64(seed) ^ jMul) & jMask} }

// next is Random.next(bits): the top bits of the advanced state.
func (r *jrand) next(bits uint) int32 {
	r.s = (r.s*jMul + jAdd) & jMask
	return int32(r.s >> (48 - bits))
}

// nextInt32 is Random.nextInt().
func (r *jrand) nextInt32() int32 { return r.next(32) }

// nextInt is Random.nextInt(bound) for bound > 0, with Java's rejection
// of the last partial range (so the draw count varies, as in Java).
func (r *jrand) nextInt(bound int32) int32 {
	u := r.next(31)
	if bound&(bound-1) == 0 {
		return int32((int64(bound) * int64(u)) >> 31)
	}
	v := u % bound
	if u-v+bound-1 < 0 { // int32 overflow: u is in the partial range
		v = r.nextIntRetry(bound)
	}
	return v
}

// nextIntRetry draws again until a value falls outside the partial range.
func (r *jrand) nextIntRetry(bound int32) int32 {
	for {
		u := r.next(31)
		if v := u % bound; u-v+(bound-1) >= 0 {
			return v
		}
	}
}

// nextLong is Random.nextLong().
func (r *jrand) nextLong() int64 {
	hi := int64(r.next(32))
	return hi<<32 + int64(r.next(32))
}

// nextDouble is Random.nextDouble(): 53 random bits scaled to [0, 1).
func (r *jrand) nextDouble() float64 {
	v := int64(r.next(26))<<27 + int64(r.next(27))
	return float64(v) * (1.0 / (1 << 53))
}

// boundedLong is Beam's LongGenerator.nextLong(random, n): a value in
// [0, n) for n > 0.
func (r *jrand) boundedLong(n int64) int64 {
	if n < 1<<31-1 {
		return int64(r.nextInt(int32(n)))
	}
	v := r.nextLong() % n // skewed, as in Beam
	if v < 0 {
		v = -v
	}
	return v
}

// jumps[k] advances the generator by k draws in one step: state·A + C.
var jumps = func() (j [16]struct{ a, c uint64 }) {
	j[0].a = 1
	for k := 1; k < len(j); k++ {
		j[k].a = (j[k-1].a * jMul) & jMask
		j[k].c = (j[k-1].c*jMul + jAdd) & jMask
	}
	return j
}()

// skip advances the generator by k draws without producing them.
func (r *jrand) skip(k int) {
	for k > 0 {
		n := min(k, len(jumps)-1)
		r.s = (r.s*jumps[n].a + jumps[n].c) & jMask
		k -= n
	}
}
