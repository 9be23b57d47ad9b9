// Package eventtime parses event timestamps into int64 milliseconds since
// the Unix epoch.
//
// In the data flow it is core, at the bottom: the decoders (package format
// and the sources through it), the contract's rules and the plan parse
// timestamps with it at the front of every record's path; it imports only
// spec, for a field's declared layout and zone.
//
// The contract (docs/semantics.md, "Event time"): a timestamp must say which
// instant it is. RFC 3339 / ISO-8601 text must carry a UTC offset ("Z" or
// "+09:00"); text without one is rejected, never guessed, unless the
// pipeline declares a layout and an IANA zone for a source that has no
// offsets (the Online Retail data: local Europe/London time). A local time
// that does not exist in that zone (the hour skipped when clocks go forward)
// is rejected; one that occurs twice (the hour repeated when clocks go back)
// resolves to the earlier instant, the first occurrence.
//
// Sub-millisecond digits are truncated toward the past.
//
// In the data flow it sits at the very bottom, beside row: the decoders
// (package format, its timestamp fields) and the contracts call it to
// turn a record's text into the event time every later stage works in.
package eventtime

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/tidemark/tidemark/spec"
)

// ErrNoOffset is returned (wrapped) for RFC 3339 text without a UTC offset.
var ErrNoOffset = errors.New("timestamp has no UTC offset")

// ErrSyntax is returned (wrapped) for text that is not a timestamp of the
// expected format.
var ErrSyntax = errors.New("unparsable timestamp")

// ErrNonexistent is returned (wrapped) for a local time skipped by a
// daylight-saving change in the declared zone.
var ErrNonexistent = errors.New("local time does not exist in zone")

// Format is how a timestamp field is written.
type Format uint8

// The formats.
const (
	RFC3339 Format = iota // "2026-09-01T10:05:00+09:00"; offset required
	EpochMs               // integer milliseconds since the epoch
	EpochS                // integer or decimal seconds since the epoch
	Layout                // a Go layout without offset, read in a zone
)

// maxEpochMs bounds epoch_ms values (about 285,000 years either side of
// 1970), as epoch_s bounds its seconds: event times stay far from the ends
// of int64, where watermark and window arithmetic would overflow (and
// math.MinInt64 / math.MaxInt64 mean "no watermark" / "end of input").
const maxEpochMs = 9_000_000_000_000_000

// Parser parses one timestamp field. The zero Parser parses RFC 3339.
type Parser struct {
	Format Format
	Layout string         // Go reference layout, for Format Layout
	Loc    *time.Location // zone for Format Layout

	// zone period cache for the layout fast path: local seconds − off is
	// UTC inside [zStart, zEnd) (UTC seconds). A Parser with a layout is
	// therefore not safe for concurrent use.
	zStart, zEnd, zOff int64
	zValid             bool
}

// New returns the parser for an event_time spec (format, layout, timezone).
// It returns an error for an unknown format or zone.
func New(et spec.EventTime) (*Parser, error) {
	p := &Parser{}
	switch et.Format {
	case "", "rfc3339":
		p.Format = RFC3339
	case "epoch_ms":
		p.Format = EpochMs
	case "epoch_s":
		p.Format = EpochS
	case "layout":
		p.Format = Layout
		p.Layout = et.Layout
		loc, err := time.LoadLocation(et.Timezone)
		if err != nil {
			return nil, fmt.Errorf("event_time.timezone: %w", err)
		}
		p.Loc = loc
	default:
		return nil, fmt.Errorf("event_time.format: unknown format %q", et.Format)
	}
	return p, nil
}

// The instants tidemark accepts: years 0000 to 9999, the range RFC 3339
// can write.
const (
	minMs = -62_167_219_200_000 // 0000-01-01T00:00:00Z
	maxMs = 253_402_300_800_000 // 10000-01-01T00:00:00Z (exclusive)
)

// ErrRange is returned (wrapped) for an instant outside the years 0000 to
// 9999.
var ErrRange = errors.New("timestamp outside the years 0000 to 9999")

// Parse converts text to ms since the epoch. Errors wrap ErrNoOffset,
// ErrSyntax, ErrNonexistent or ErrRange and quote the text.
func (p *Parser) Parse(b []byte) (int64, error) { return p.ParseWith(b, nil) }

// ParseWith is Parse reading dates through c (nil: none), which remembers
// the last date it read: the timestamps of one field mostly share their
// date, which is then compared, not parsed again. The result is Parse's
// whatever c holds. A DateCache must not be used by two goroutines at once;
// give each decoder its own.
func (p *Parser) ParseWith(b []byte, c *DateCache) (int64, error) {
	ms, err := p.parse(b, c)
	if err == nil && (ms < minMs || ms >= maxMs) {
		return 0, fmt.Errorf("%w: %q", ErrRange, b)
	}
	return ms, err
}

// DateCache remembers the last "YYYY-MM-DD" a Parser read through
// ParseWith and the seconds from the epoch to that day's midnight (as
// UTC). The zero value is empty.
type DateCache struct {
	text [10]byte
	secs int64
	ok   bool
}

// dateSeconds returns the seconds since the epoch of midnight (as UTC) of
// the valid date "YYYY-MM-DD" at the start of s; false when a digit,
// separator or range is wrong. c may be nil.
func (c *DateCache) dateSeconds(s string) (int64, bool) {
	if c != nil && c.ok && s[:10] == unsafe.String(&c.text[0], 10) {
		return c.secs, true
	}
	if s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	year, ok1 := atoiFixed(s[0:4])
	month, ok2 := atoiFixed(s[5:7])
	day, ok3 := atoiFixed(s[8:10])
	if !(ok1 && ok2 && ok3) || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return 0, false
	}
	secs := daysFromCivil(year, month, day) * 86400
	if c != nil {
		copy(c.text[:], s[:10])
		c.secs, c.ok = secs, true
	}
	return secs, true
}

func (p *Parser) parse(b []byte, c *DateCache) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty", ErrSyntax)
	}
	s := unsafe.String(&b[0], len(b))
	switch p.Format {
	case EpochMs:
		v, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) || err == nil && (v > maxEpochMs || v < -maxEpochMs) {
			// An integer, but far outside the years RFC 3339 can write.
			return 0, fmt.Errorf("%w: %q", ErrRange, s)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not integer epoch milliseconds", ErrSyntax, s)
		}
		return v, nil
	case EpochS:
		return parseEpochSeconds(s)
	case Layout:
		if ms, ok := p.layoutFast(s, c); ok {
			return ms, nil
		}
		t, err := time.ParseInLocation(p.Layout, s, p.Loc)
		if err != nil {
			return 0, fmt.Errorf("%w: %q does not match layout %q", ErrSyntax, s, p.Layout)
		}
		// time.ParseInLocation moves a skipped local time (spring forward)
		// to another wall clock; detect it by comparing clocks.
		if !sameClock(t, s, p.Layout) {
			return 0, fmt.Errorf("%w: %q in %s", ErrNonexistent, s, p.Loc)
		}
		first := earlierOccurrence(t)
		p.cacheZone(first)
		return first.UnixMilli(), nil
	default:
		if ms, ok := parseRFC3339Fast(s, c); ok {
			return ms, nil
		}
		return parseRFC3339Slow(s)
	}
}

// zoneMargin keeps the layout fast path away from offset changes: within
// this distance of one, the local time may be skipped or repeated (or, as
// when Samoa skipped a day, further off), and the slow path decides.
const zoneMargin = 27 * 3600

// layoutFast reads "2006-01-02 15:04:05" (or with a T) arithmetically when
// the instant lies well inside the cached zone period, where local time
// maps to UTC by one fixed offset. The slow path (time.ParseInLocation,
// with its checks for skipped and repeated hours) handles the rest and
// refreshes the cache.
func (p *Parser) layoutFast(s string, c *DateCache) (int64, bool) {
	if !p.zValid || len(s) != 19 || (p.Layout != "2006-01-02 15:04:05" && p.Layout != "2006-01-02T15:04:05") {
		return 0, false
	}
	if s[10] != p.Layout[10] {
		return 0, false
	}
	local, ok := dateTimeSeconds(s, c)
	if !ok {
		return 0, false
	}
	utc := local - p.zOff
	if utc < p.zStart+zoneMargin || utc >= p.zEnd-zoneMargin {
		return 0, false
	}
	return utc * 1000, true
}

// cacheZone remembers the zone period containing t (for layouts the fast
// path reads).
func (p *Parser) cacheZone(t time.Time) {
	_, off := t.Zone()
	start, end := t.ZoneBounds()
	p.zOff, p.zStart, p.zEnd = int64(off), -1<<62, 1<<62
	if !start.IsZero() {
		p.zStart = start.Unix()
	}
	if !end.IsZero() {
		p.zEnd = end.Unix()
	}
	p.zValid = true
}

// sameClock reports whether t shows the same wall clock as the text s in
// layout (true unless s named a skipped local time).
func sameClock(t time.Time, s, layout string) bool {
	u, err := time.Parse(layout, s) // as UTC wall clock
	if err != nil {
		return false
	}
	y1, m1, d1 := t.Date()
	y2, m2, d2 := u.Date()
	return y1 == y2 && m1 == m2 && d1 == d2 && t.Hour() == u.Hour() && t.Minute() == u.Minute() && t.Second() == u.Second()
}

// earlierOccurrence returns the first instant that shows t's wall clock in
// loc: when clocks go back, a local time occurs twice, and
// time.ParseInLocation may return either occurrence. The earlier one lies
// in the zone period before t's, shifted by the difference of the offsets
// (1 h in most zones, 30 min on Lord Howe Island, 2 h at Troll).
func earlierOccurrence(t time.Time) time.Time {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, off := t.Zone()
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	if prevOff <= off {
		return t
	}
	e := t.Add(-time.Duration(prevOff-off) * time.Second)
	if !e.Before(start) {
		return t
	}
	y1, m1, d1 := t.Date()
	y2, m2, d2 := e.Date()
	if y1 == y2 && m1 == m2 && d1 == d2 && t.Hour() == e.Hour() && t.Minute() == e.Minute() && t.Second() == e.Second() {
		return e
	}
	return t
}

// ParseRFC3339 parses RFC 3339 text with a mandatory UTC offset ("Z",
// "+09:00", "-0500") to ms since the epoch. A space may stand for the "T".
func ParseRFC3339(s string) (int64, error) {
	if ms, ok := parseRFC3339Fast(s, nil); ok {
		return ms, nil
	}
	return parseRFC3339Slow(s)
}

// parseRFC3339Fast parses the common shapes without allocating:
// "2006-01-02T15:04:05", an optional fraction ".999…", and "Z", "±hh:mm"
// or "±hhmm", with "T" or a space. It checks the fields as time.Parse does
// (year 0000–9999, the month's days, hour < 24, minute and second < 60,
// offset hour < 24 and minute < 60) and computes the same instant. For
// anything else it reports false and parseRFC3339Slow decides, so the two
// together accept and return exactly what parseRFC3339Slow alone does
// (checked by TestParseRFC3339FastMatchesSlow and FuzzParseRFC3339).
// The slow path allocates: "+0900" is tried as RFC 3339 first (an error
// value), and an offset that is not a whole hour gets a time.FixedZone.
//
// c (nil: none) remembers the last date read.
func parseRFC3339Fast(s string, c *DateCache) (int64, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || (s[10] != 'T' && s[10] != ' ') {
		return 0, false
	}
	local, ok := dateTimeSeconds(s, c)
	if !ok {
		return 0, false
	}
	rest := s[19:]
	var frac int64 // milliseconds; further digits are truncated
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			if n <= 3 {
				frac = frac*10 + int64(rest[n]-'0')
			}
			n++
		}
		if n == 1 {
			return 0, false
		}
		for i := n; i <= 3; i++ {
			frac *= 10
		}
		rest = rest[n:]
	}
	var off int64 // seconds east of UTC
	switch {
	case rest == "Z":
	case len(rest) == 6 && rest[3] == ':', len(rest) == 5:
		if rest[0] != '+' && rest[0] != '-' {
			return 0, false
		}
		hh, ok1 := atoiFixed(rest[1:3])
		mm, ok2 := atoiFixed(rest[len(rest)-2:])
		if !ok1 || !ok2 || hh > 23 || mm > 59 {
			return 0, false
		}
		off = (hh*60 + mm) * 60
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, false
	}
	return (local-off)*1000 + frac, true
}

// dateTimeSeconds reads "YYYY-MM-DD?hh:mm:ss" at the start of s (any
// separator at index 10) as seconds since the epoch of that wall clock
// taken as UTC; false when a digit, separator or range is wrong. The date
// goes through c (nil: none).
func dateTimeSeconds(s string, c *DateCache) (int64, bool) {
	if len(s) < 19 || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	hour, ok4 := atoiFixed(s[11:13])
	min, ok5 := atoiFixed(s[14:16])
	sec, ok6 := atoiFixed(s[17:19])
	if !(ok4 && ok5 && ok6) || hour > 23 || min > 59 || sec > 59 {
		return 0, false
	}
	day, ok := c.dateSeconds(s)
	if !ok {
		return 0, false
	}
	return day + hour*3600 + min*60 + sec, true
}

// atoiFixed parses s, ASCII digits only.
func atoiFixed(s string) (int64, bool) {
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// daysIn returns the number of days of month m in year y (proleptic
// Gregorian).
func daysIn(m, y int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms",
// days_from_civil).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := m + 9
	if m > 2 {
		mp = m - 3
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseRFC3339Slow is ParseRFC3339 through time.Parse, for every shape.
func parseRFC3339Slow(s string) (int64, error) {
	if !hasOffset(s) {
		if _, err := time.Parse("2006-01-02T15:04:05", normalizeT(s)); err == nil || looksLikeLocal(s) {
			return 0, fmt.Errorf("%w: %q", ErrNoOffset, s)
		}
		return 0, fmt.Errorf("%w: %q is not RFC 3339", ErrSyntax, s)
	}
	t, err := time.Parse(time.RFC3339Nano, normalizeT(s))
	if err != nil {
		// ISO-8601 basic offsets without a colon ("+0900").
		t, err = time.Parse("2006-01-02T15:04:05.999999999Z0700", normalizeT(s))
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not RFC 3339", ErrSyntax, s)
		}
	}
	return t.UnixMilli(), nil
}

func normalizeT(s string) string {
	if len(s) > 10 && s[10] == ' ' {
		b := []byte(s)
		b[10] = 'T'
		return string(b)
	}
	return s
}

// hasOffset reports whether an ISO-8601 date-time ends with Z or ±hh[:mm].
func hasOffset(s string) bool {
	n := len(s)
	if n < 11 {
		return false
	}
	if s[n-1] == 'Z' || s[n-1] == 'z' {
		return true
	}
	// Look for '+' or '-' after the time part begins (index > 10).
	for i := n - 1; i > 10; i-- {
		switch s[i] {
		case '+', '-':
			return true
		case ':', '.':
			continue
		default:
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
	}
	return false
}

func looksLikeLocal(s string) bool {
	return len(s) >= 16 && s[4] == '-' && s[7] == '-' && (s[10] == 'T' || s[10] == ' ')
}

func parseEpochSeconds(s string) (int64, error) {
	sec, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			sec, frac = s[:i], s[i+1:]
			break
		}
	}
	v, err := strconv.ParseInt(sec, 10, 64)
	if errors.Is(err, strconv.ErrRange) || err == nil && (v > 9_000_000_000_000 || v < -9_000_000_000_000) {
		if allDigits(frac) {
			// A number, but far outside the years RFC 3339 can write.
			return 0, fmt.Errorf("%w: %q", ErrRange, s)
		}
	}
	if err != nil || v > 9_000_000_000_000 || v < -9_000_000_000_000 {
		return 0, fmt.Errorf("%w: %q is not epoch seconds", ErrSyntax, s)
	}
	ms := v * 1000
	var f int64
	for i := 0; i < 3; i++ {
		f *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%w: %q is not epoch seconds", ErrSyntax, s)
			}
			f += int64(c - '0')
		}
	}
	sub := false // non-zero digits below the millisecond
	for i := 3; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not epoch seconds", ErrSyntax, s)
		}
		sub = sub || frac[i] != '0'
	}
	if s[0] == '-' {
		if sub {
			f++ // truncate toward the past: -1.2345 s is -1234.5 ms, read as -1235
		}
		return ms - f, nil
	}
	return ms + f, nil
}

// allDigits reports whether s holds only the digits 0 to 9 (true for "").
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
