package nexmark

import (
	"math"
	"testing"
)

// TestJavaRandom checks the port against java.util.Random: the values
// below were printed by OpenJDK 17 for new Random(seed) and the calls
// nextInt(), nextInt(10), nextInt(13), nextInt(1<<20),
// nextInt(1500000001), nextDouble() (its bits) and nextLong().
func TestJavaRandom(t *testing.T) {
	want := []struct {
		seed             int64
		i, i10, i13, i20 int32
		iBig             int32
		dbits            uint64
		l                int64
	}{
		{0, -1155484576, 8, 10, 635799, 1368843515, 4599238980013037322, 2158390814503909950},
		{1, -1155869325, 8, 7, 427231, 446064254, 4585382889949395184, -6292788870224356907},
		{42, -1170105035, 3, 9, 50268, 662969970, 4606660663659951340, -5391787952107853122},
		{12345, 1553932502, 0, 5, 961664, 80902084, 4599552884294460422, 4344647195749500666},
		{999999999999, -2135574551, 5, 4, 266569, 976765390, 4603962628065163274, 1663656388828973331},
		{-7, 1155869324, 7, 12, 991790, 1119890478, 4594443567195395620, 5821187670213352603},
	}
	for _, w := range want {
		r := seedJ(w.seed)
		got := []int64{int64(r.nextInt32()), int64(r.nextInt(10)), int64(r.nextInt(13)), int64(r.nextInt(1 << 20)), int64(r.nextInt(1500000001))}
		exp := []int64{int64(w.i), int64(w.i10), int64(w.i13), int64(w.i20), int64(w.iBig)}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("seed %d: draw %d = %d, Java %d", w.seed, i, got[i], exp[i])
			}
		}
		if d := math.Float64bits(r.nextDouble()); d != w.dbits {
			t.Errorf("seed %d: nextDouble bits %d, Java %d", w.seed, d, w.dbits)
		}
		if l := r.nextLong(); l != w.l {
			t.Errorf("seed %d: nextLong %d, Java %d", w.seed, l, w.l)
		}
	}
}

// TestSkip: skipping k draws lands where k draws do.
func TestSkip(t *testing.T) {
	for k := range 40 {
		a, b := seedJ(77), seedJ(77)
		for range k {
			a.nextInt32()
		}
		b.skip(k)
		if a != b {
			t.Fatalf("skip(%d) = %x, want %x", k, b.s, a.s)
		}
	}
}

// TestPriceOf: the table price equals round(Math.pow(10, u·6) × 100) for
// every tested u, including the ones near a rounding boundary that take
// the math.Pow path.
func TestPriceOf(t *testing.T) {
	n := 2_000_000
	if testing.Short() {
		n = 200_000
	}
	r := seedJ(5)
	us := []float64{0, math.Nextafter(1, 0), 0.5, 1.0 / 3, 2.0 / 3}
	for range n {
		us = append(us, r.nextDouble())
	}
	// Exponents just around each table step, where the series restarts.
	for i := 0; i <= 6*priceFine; i++ {
		u := float64(i) / priceFine / 6
		us = append(us, math.Nextafter(u, 0), u, math.Nextafter(u, 1))
	}
	slow := 0
	for _, u := range us {
		if u < 0 || u >= 1 {
			continue
		}
		want := int64(math.Round(math.Pow(10, u*6) * 100))
		if got := priceOf(u); got != want {
			t.Fatalf("priceOf(%v) = %d, want %d", u, got, want)
		}
		v := math.Pow(10, u*6) * 100
		if d := v - math.Floor(v); d > 0.5-priceMargin && d < 0.5+priceMargin {
			slow++
		}
	}
	if slow == 0 {
		t.Error("no price near a rounding boundary was tested")
	}
	if p := priceOf(0); p != 100 {
		t.Errorf("lowest price %d, want 100 (1.00)", p)
	}
	if p := priceOf(math.Nextafter(1, 0)); p != 100_000_000 {
		t.Errorf("highest price %d, want 100000000 (1,000,000.00)", p)
	}
}
