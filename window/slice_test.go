package window

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// bruteSlice is the slice containing ts by the definition: from the latest
// window boundary (a start or an end of some window of size and slide,
// starting at offset modulo slide) at or before ts to the next one, found
// by trying every instant around ts.
func bruteSlice(ts, size, slide, offset int64) Window {
	boundary := func(x int64) bool {
		return ((x-offset)%slide+slide)%slide == 0 || ((x-offset-size)%slide+slide)%slide == 0
	}
	s := ts
	for !boundary(s) {
		s--
	}
	e := ts + 1
	for !boundary(e) {
		e++
	}
	return Window{Start: s, End: e}
}

// checkSlicing checks a slicer's slices around ts against its windows:
// the slice contains ts; every window of ts contains the whole slice; the
// first and last instants of the slice have the same windows as ts; the
// next slice starts where this one ends; and the windows of ts are made of
// at most MaxSlices slices that tile them.
func checkSlicing(t *rapid.T, sl Slicer, ts int64) {
	s := sl.SliceOf(ts)
	if !s.Contains(ts) {
		t.Fatalf("SliceOf(%d) = %v does not contain it", ts, s)
	}
	ws := sl.Assign(ts, nil)
	for _, x := range []int64{s.Start, s.End - 1} {
		if got := sl.Assign(x, nil); !slices.Equal(got, ws) {
			t.Fatalf("slice %v: windows of %d are %v, of %d %v", s, x, got, ts, ws)
		}
		if got := sl.SliceOf(x); got != s {
			t.Fatalf("SliceOf(%d) = %v, SliceOf(%d) = %v", x, got, ts, s)
		}
	}
	if next := sl.SliceOf(s.End); next.Start != s.End {
		t.Fatalf("slice after %v is %v", s, next)
	}
	for _, w := range ws {
		if w.Start > s.Start || w.End < s.End {
			t.Fatalf("window %v of %d does not contain its slice %v", w, ts, s)
		}
		n := 0
		for x := w.Start; x < w.End; {
			c := sl.SliceOf(x)
			if c.Start != x || c.End > w.End {
				t.Fatalf("window %v: slice at %d is %v", w, x, c)
			}
			x = c.End
			n++
		}
		if n > sl.MaxSlices() {
			t.Fatalf("window %v has %d slices, MaxSlices %d", w, n, sl.MaxSlices())
		}
	}
}

// TestFixedSlices: for any size, slide and offset, SliceOf is the interval
// between consecutive window boundaries (brute force), and the slices fit
// the windows (checkSlicing). MaxSlices is reached: size/slide slices when
// the size is a multiple of the slide, else 2⌊size/slide⌋ + 1.
func TestFixedSlices(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		slide := rapid.Int64Range(1, 40).Draw(t, "slide")
		size := rapid.Int64Range(slide, 200).Draw(t, "size")
		offset := rapid.Int64Range(0, slide-1).Draw(t, "offset")
		ts := rapid.Int64Range(-1000, 1000).Draw(t, "ts")
		f := &Fixed{Size: size, Slide: slide, Offset: offset}
		if got, want := f.SliceOf(ts), bruteSlice(ts, size, slide, offset); got != want {
			t.Fatalf("size %d slide %d offset %d: SliceOf(%d) = %v, want %v", size, slide, offset, ts, got, want)
		}
		checkSlicing(t, f, ts)
		w := f.Assign(ts, nil)[0]
		n := 0
		for x := w.Start; x < w.End; x = f.SliceOf(x).End {
			n++
		}
		if n != f.MaxSlices() {
			t.Fatalf("window %v of %d/%d has %d slices, MaxSlices %d", w, size, slide, n, f.MaxSlices())
		}
	})
}

// TestSlicesExamples: the examples of the package comment.
func TestSlicesExamples(t *testing.T) {
	f := &Fixed{Size: 7000, Slide: 3000}
	var got []Window
	for x := int64(0); x < 7000; x = f.SliceOf(x).End {
		got = append(got, f.SliceOf(x))
	}
	want := []Window{{0, 1000}, {1000, 3000}, {3000, 4000}, {4000, 6000}, {6000, 7000}}
	if !slices.Equal(got, want) {
		t.Fatalf("7s/3s slices of [0, 7s): %v, want %v", got, want)
	}
	h := &Fixed{Size: hour, Slide: hour / 2}
	if s := h.SliceOf(40 * 60_000); s != (Window{30 * 60_000, hour}) || h.MaxSlices() != 2 {
		t.Fatalf("1h/30m: slice of 0:40 %v, MaxSlices %d", s, h.MaxSlices())
	}
	if n := (&Fixed{Size: 1_000_000, Slide: 999_000}).MaxSlices(); n != 3 {
		t.Fatalf("1000s/999s: %d slices per window, want 3", n)
	}
}

// TestCalendarSlices: day windows sliced at local midnights, in zones with
// 23- and 25-hour days and skipped or repeated midnights.
func TestCalendarSlices(t *testing.T) {
	zones := []*time.Location{time.UTC}
	for _, z := range zonesForTiling {
		zones = append(zones, load(t, z))
	}
	tsGen := rapid.OneOf(
		rapid.Int64Range(-2_000_000_000_000, 4_000_000_000_000),
		rapid.Int64Range(1_300_000_000_000, 1_302_000_000_000), // spring 2011
		rapid.Int64Range(1_325_000_000_000, 1_325_500_000_000), // Apia, end of 2011
		rapid.Int64Range(1_541_000_000_000, 1_542_000_000_000), // Sao Paulo, 2018
	)
	rapid.Check(t, func(t *rapid.T) {
		loc := rapid.SampledFrom(zones).Draw(t, "zone")
		slide := rapid.Int64Range(1, 4).Draw(t, "slide days")
		size := rapid.Int64Range(slide, 9).Draw(t, "size days")
		c := &Calendar{SizeDays: size, SlideDays: slide, Loc: loc}
		ts := tsGen.Draw(t, "ts")
		checkSlicing(t, c, ts)
		s := c.SliceOf(ts)
		for _, x := range []int64{s.Start, s.End} {
			if tm := time.UnixMilli(x).In(loc); x != c.midnight(c.dayOf(x)) {
				t.Fatalf("%s: slice %v bound %s is not the start of a day", loc, s, tm)
			}
		}
	})
}
