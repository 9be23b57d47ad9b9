// Package eventtime parses event timestamps into int64 milliseconds since
// the Unix epoch.
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

// Parser parses one timestamp field. The zero Parser parses RFC 3339.
type Parser struct {
	Format Format
	Layout string         // Go reference layout, for Format Layout
	Loc    *time.Location // zone for Format Layout
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

// Parse converts text to ms since the epoch. Errors wrap ErrNoOffset,
// ErrSyntax or ErrNonexistent and quote the text.
func (p *Parser) Parse(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty", ErrSyntax)
	}
	s := unsafe.String(&b[0], len(b))
	switch p.Format {
	case EpochMs:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not integer epoch milliseconds", ErrSyntax, s)
		}
		return v, nil
	case EpochS:
		return parseEpochSeconds(s)
	case Layout:
		t, err := time.ParseInLocation(p.Layout, s, p.Loc)
		if err != nil {
			return 0, fmt.Errorf("%w: %q does not match layout %q", ErrSyntax, s, p.Layout)
		}
		// time.ParseInLocation moves a skipped local time (spring forward)
		// to another wall clock; detect it by comparing clocks.
		if !sameClock(t, s, p.Layout) {
			return 0, fmt.Errorf("%w: %q in %s", ErrNonexistent, s, p.Loc)
		}
		return earlierOccurrence(t, p.Loc).UnixMilli(), nil
	default:
		return ParseRFC3339(s)
	}
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
// loc: when clocks go back an hour, a local time occurs twice.
func earlierOccurrence(t time.Time, loc *time.Location) time.Time {
	for _, shift := range []time.Duration{-time.Hour, -30 * time.Minute} {
		e := t.Add(shift)
		if e.Hour() == t.Hour() && e.Minute() == t.Minute() && e.Second() == t.Second() && e.Day() == t.Day() {
			return e
		}
	}
	return t
}

// ParseRFC3339 parses RFC 3339 text with a mandatory UTC offset ("Z",
// "+09:00", "-0500") to ms since the epoch. A space may stand for the "T".
func ParseRFC3339(s string) (int64, error) {
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
	for i := 3; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, fmt.Errorf("%w: %q is not epoch seconds", ErrSyntax, s)
		}
	}
	if s[0] == '-' {
		return ms - f, nil
	}
	return ms + f, nil
}
