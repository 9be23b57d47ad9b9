package nexmark

import "math"

// Price: round(10^(U·6) × 100) for U = nextDouble(), as Beam's
// PriceGenerator computes it with Math.pow. math.Pow costs ~100 ns, more
// than the rest of a bid, so the price comes from two tables and a short
// series instead: with y = U·6 = (i + w)/4096,
//
//	10^y = 10^((i>>6)/64) · 10^((i&63)/4096) · e^(w·ln10/4096),
//
// the last factor to degree 3 (w·ln10/4096 < 5.7e-4, so the first
// omitted term is below 5e-15 relative; with rounding, 1e-14 at most,
// i.e. 1e-6 cents on the largest price). When the estimate lies within
// 1e-4 of a rounding boundary (2 prices in 10,000) the price is
// recomputed with math.Pow, so the result is always math.Pow's — equal
// to Java's Math.pow on every price tested against OpenJDK (see the
// tests).

const (
	priceFine   = 4096 // steps per power of ten
	priceCoarse = 64   // fine steps per coarse table entry
	priceMargin = 1e-4 // distance to a rounding boundary that needs math.Pow
)

var (
	// pow10Coarse[j] is 10^(j·64/4096), for 0 ≤ j ≤ 6·64.
	pow10Coarse = func() []float64 {
		t := make([]float64, 6*priceFine/priceCoarse+1)
		for j := range t {
			t[j] = math.Pow(10, float64(j*priceCoarse)/priceFine)
		}
		return t
	}()
	// pow10Fine[k] is 10^(k/4096), for 0 ≤ k < 64.
	pow10Fine = func() (t [priceCoarse]float64) {
		for k := range t {
			t[k] = math.Pow(10, float64(k)/priceFine)
		}
		return t
	}()
)

// priceOf returns round(10^(u·6) × 100) for u in [0, 1).
func priceOf(u float64) int64 {
	y := u * 6
	f := y * priceFine
	i := int(f)
	z := (f - float64(i)) * (math.Ln10 / priceFine)
	e := 1 + z + z*z*(1.0/2+z*(1.0/6))
	v := pow10Coarse[i/priceCoarse] * pow10Fine[i%priceCoarse] * (e * 100)
	n := int64(v + 0.5)
	if d := v - float64(n); d > 0.5-priceMargin || d < -0.5+priceMargin {
		return int64(math.Round(math.Pow(10, y) * 100))
	}
	return n
}
