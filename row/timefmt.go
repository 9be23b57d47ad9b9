package row

import "time"

// TimeFormatter appends instants as RFC 3339 text in one zone, exactly as
// AppendTime does, but without time.Time formatting on the common path: it
// caches the zone's offset for the current transition period and converts
// days to a civil date arithmetically. Output sinks format several
// timestamps per row; this keeps that cheap. Not safe for concurrent use.
type TimeFormatter struct {
	loc          *time.Location
	start, end   int64 // ms: the cached zone period [start, end)
	offsetSecs   int64
	cached, slow bool
	// recent texts: the rows of one firing share their window, watermark
	// and processing times, so most instants repeat.
	recent [4]recentTime
	next   uint8
}

type recentTime struct {
	ms  int64
	n   uint8
	txt [32]byte
}

// NewTimeFormatter returns a formatter for loc (UTC when nil). Use it by
// address: f := NewTimeFormatter(loc); f.Append(dst, ms).
func NewTimeFormatter(loc *time.Location) TimeFormatter {
	if loc == nil {
		loc = time.UTC
	}
	return TimeFormatter{loc: loc}
}

// Location returns the formatter's zone.
func (f *TimeFormatter) Location() *time.Location { return f.loc }

const msPerDay = 86_400_000

// Append appends ms (since the Unix epoch) like AppendTime(dst, ms, loc).
func (f *TimeFormatter) Append(dst []byte, ms int64) []byte {
	for i := range f.recent {
		if r := &f.recent[i]; r.n > 0 && r.ms == ms {
			return append(dst, r.txt[:r.n]...)
		}
	}
	start := len(dst)
	dst = f.format(dst, ms)
	if n := len(dst) - start; n <= len(f.recent[0].txt) {
		r := &f.recent[f.next%uint8(len(f.recent))]
		r.ms, r.n = ms, uint8(n)
		copy(r.txt[:], dst[start:])
		f.next++
	}
	return dst
}

func (f *TimeFormatter) format(dst []byte, ms int64) []byte {
	if !f.cached || ms < f.start || ms >= f.end {
		f.load(ms)
	}
	if f.slow {
		return AppendTime(dst, ms, f.loc)
	}
	local := ms + f.offsetSecs*1000
	days := local / msPerDay
	rem := local % msPerDay
	if rem < 0 {
		rem += msPerDay
		days--
	}
	y, m, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return AppendTime(dst, ms, f.loc)
	}
	dst = append4(dst, int(y))
	dst = append(dst, '-')
	dst = append2(dst, int(m))
	dst = append(dst, '-')
	dst = append2(dst, int(d))
	dst = append(dst, 'T')
	secs := rem / 1000
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	if frac := rem % 1000; frac != 0 {
		dst = append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	}
	off := f.offsetSecs
	if off == 0 {
		return append(dst, 'Z')
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = append(dst, sign)
	dst = append2(dst, int(off/3600))
	dst = append(dst, ':')
	return append2(dst, int(off/60%60))
}

// load caches the zone period containing ms.
func (f *TimeFormatter) load(ms int64) {
	t := time.UnixMilli(ms).In(f.loc)
	_, off := t.Zone()
	f.offsetSecs = int64(off)
	f.slow = off%60 != 0 // RFC 3339 cannot show offset seconds; AppendTime decides
	start, end := t.ZoneBounds()
	f.start, f.end = -1<<63, 1<<63-1
	if !start.IsZero() {
		f.start = start.UnixMilli()
	}
	if !end.IsZero() {
		f.end = end.UnixMilli()
	}
	f.cached = true
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms",
// civil_from_days).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

func append4(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}
