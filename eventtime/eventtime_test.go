package eventtime

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/spec"
)

// sep1 is 2026-09-01T00:00:00Z in ms: 20697 days after 1970-01-01
// (56 years of 365 days, 14 leap days, 243 days from January to August).
const sep1 = 20697 * 86_400_000

const (
	second = int64(1000)
	minute = 60 * second
	hour   = 60 * minute
)

func load(t testing.TB, zone string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// utc returns the instant of a UTC civil time in ms, through time.Date.
func utc(y int, mo time.Month, d, h, mi, s, ms int) int64 {
	return time.Date(y, mo, d, h, mi, s, ms*1e6, time.UTC).UnixMilli()
}

type parseCase struct {
	in   string
	want int64
	err  error // sentinel, nil for success
}

func runCases(t *testing.T, p *Parser, cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		got, err := p.Parse([]byte(c.in))
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%q: %v, want %d", c.in, err, c.want)
		case c.err == nil && got != c.want:
			t.Errorf("%q: %d (%s), want %d (%s)", c.in, got, show(got), c.want, show(c.want))
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%q: (%d, %v), want %v", c.in, got, err, c.err)
		case c.err != nil && c.in != "" && !strings.Contains(err.Error(), strconv.Quote(c.in)):
			t.Errorf("%q: error %q does not quote the text", c.in, err)
		}
	}
}

func show(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

func TestSep1(t *testing.T) {
	if got := utc(2026, 9, 1, 0, 0, 0, 0); got != sep1 {
		t.Fatalf("sep1 = %d, time.Date says %d", int64(sep1), got)
	}
}

func TestRFC3339(t *testing.T) {
	runCases(t, &Parser{}, []parseCase{
		{"2026-09-01T10:05:00Z", sep1 + 10*hour + 5*minute, nil},
		{"2026-09-01T10:05:00+09:00", sep1 + 1*hour + 5*minute, nil},
		{"2026-09-01T10:05:00-05:00", sep1 + 15*hour + 5*minute, nil},
		{"2026-09-01T10:05:00+0900", sep1 + 1*hour + 5*minute, nil}, // ISO 8601 basic offset
		{"2026-09-01T10:05:00-0500", sep1 + 15*hour + 5*minute, nil},
		{"2026-09-01T10:05:00+05:30", sep1 + 4*hour + 35*minute, nil},
		{"2026-09-01T10:05:00+0545", sep1 + 4*hour + 20*minute, nil},
		{"2026-09-01T10:05:00+00:00", sep1 + 10*hour + 5*minute, nil},
		{"2026-09-01T10:05:00-00:00", sep1 + 10*hour + 5*minute, nil},
		{"2026-09-01T00:30:00+09:00", sep1 - 8*hour - 30*minute, nil}, // the previous UTC day
		{"2026-09-01 10:05:00+09:00", sep1 + 1*hour + 5*minute, nil},  // space for T
		{"2026-09-01 10:05:00Z", sep1 + 10*hour + 5*minute, nil},
		{"2026-09-01 10:05:00+0900", sep1 + 1*hour + 5*minute, nil},
		// Fractions: milliseconds kept, further digits truncated.
		{"2026-09-01T10:05:00.1Z", sep1 + 10*hour + 5*minute + 100, nil},
		{"2026-09-01T10:05:00.12Z", sep1 + 10*hour + 5*minute + 120, nil},
		{"2026-09-01T10:05:00.123Z", sep1 + 10*hour + 5*minute + 123, nil},
		{"2026-09-01T10:05:00.1239Z", sep1 + 10*hour + 5*minute + 123, nil},
		{"2026-09-01T10:05:00.999999999+09:00", sep1 + 1*hour + 5*minute + 999, nil},
		{"2026-09-01T10:05:00.99999999999999+09:00", sep1 + 1*hour + 5*minute + 999, nil},
		{"2026-09-01T10:05:00.000Z", sep1 + 10*hour + 5*minute, nil},
		{"2026-09-01 10:05:00.5+0900", sep1 + 1*hour + 5*minute + 500, nil},
		// Before 1970 truncation is toward the past (floor), not toward 0.
		{"1970-01-01T00:00:00Z", 0, nil},
		{"1969-12-31T23:59:59.999Z", -1, nil},
		{"1969-12-31T23:59:59.9999Z", -1, nil}, // −0.1 ms
		{"1969-12-31T23:59:59.9991Z", -1, nil}, // −0.9 ms
		{"1969-12-31T23:59:59.0005Z", -1000, nil},
		{"1969-12-31T23:59:59Z", -1000, nil},
		{"1970-01-01T00:00:00.0009Z", 0, nil},
		{"1970-01-01T09:00:00.0009+09:00", 0, nil},
		{"1969-07-20T20:17:40Z", -14182940000, nil},
		// The ends of the four-digit years.
		{"0000-01-01T00:00:00Z", -62167219200000, nil},
		{"9999-12-31T23:59:59.999Z", 253402300799999, nil},
		// Leap days.
		{"2024-02-29T12:00:00Z", utc(2024, 2, 29, 12, 0, 0, 0), nil},
		{"2000-02-29T12:00:00Z", utc(2000, 2, 29, 12, 0, 0, 0), nil},
		{"2023-02-29T12:00:00Z", 0, ErrSyntax},
		{"1900-02-29T12:00:00Z", 0, ErrSyntax},
		{"2026-04-31T12:00:00Z", 0, ErrSyntax},

		// No offset: never guessed.
		{"2026-09-01T10:05:00", 0, ErrNoOffset},
		{"2026-09-01 10:05:00", 0, ErrNoOffset},
		{"2026-09-01T10:05:00.123", 0, ErrNoOffset},
		{"2026-09-01T10:05", 0, ErrNoOffset},
		{"2026-09-01T25:05:00", 0, ErrNoOffset}, // looks local; no offset is the first thing wrong

		// Garbage.
		{"", 0, ErrSyntax},
		{"garbage", 0, ErrSyntax},
		{"2026-09-01", 0, ErrSyntax},
		{"10:05:00Z", 0, ErrSyntax},
		{"2026-13-01T10:05:00Z", 0, ErrSyntax},
		{"2026-09-00T10:05:00Z", 0, ErrSyntax},
		{"2026-09-01T24:00:00Z", 0, ErrSyntax},
		{"2026-09-01T10:60:00Z", 0, ErrSyntax},
		{"2026-09-01T23:59:60Z", 0, ErrSyntax}, // no leap seconds
		{"2026-09-01T10:05:00+9", 0, ErrSyntax},
		{"2026-09-01T10:05:00+09:0", 0, ErrSyntax},
		{"2026-09-01T10:05:00+09:61", 0, ErrSyntax},
		{"2026-09-01T10:05:00+25:00", 0, ErrSyntax},
		// time.Parse's general parser takes offsets up to 24:60 ("some
		// people do write offsets of 24 hours or 60 minutes"); kept.
		{"2026-09-01T10:05:00+09:60", sep1 + 5*minute, nil},
		{"2026-09-01T10:05:00-2400", sep1 + 34*hour + 5*minute, nil},
		{"2026-09-01T10:05:00.Z", 0, ErrSyntax},
		{"2026-09-01T10:05:00ZZ", 0, ErrSyntax},
		{"2026-09-01X10:05:00Z", 0, ErrSyntax},
		{"2026-09-01T10:05:00 +09:00", 0, ErrSyntax},
		{"+2026-09-01T10:05:00Z", 0, ErrSyntax},
		{"２０２６-09-01T10:05:00Z", 0, ErrSyntax},
		{"1788220800000", 0, ErrSyntax},
	})
}

func TestEpochMs(t *testing.T) {
	runCases(t, &Parser{Format: EpochMs}, []parseCase{
		{"1788220800000", sep1, nil},
		{"0", 0, nil},
		{"-1", -1, nil},
		{"+5", 5, nil},
		{"-0", 0, nil},
		{"007", 7, nil},
		// Years 0000 to 9999 only (what RFC 3339 can write).
		{"253402300799999", 253_402_300_799_999, nil}, // 9999-12-31T23:59:59.999Z
		{"253402300800000", 0, ErrRange},              // 10000-01-01
		{"-62167219200000", -62_167_219_200_000, nil}, // 0000-01-01T00:00:00Z
		{"-62167219200001", 0, ErrRange},
		{"9000000000000000", 0, ErrRange},
		// Beyond ±9e15 ms (and beyond int64) an integer is out of range
		// too, not "not integer": MinInt64 and MaxInt64 would read as "no
		// watermark" and "end of input".
		{"9000000000000001", 0, ErrRange},
		{"-9223372036854775808", 0, ErrRange},
		{"9223372036854775807", 0, ErrRange},
		{"9223372036854775808", 0, ErrRange},
		{"-99999999999999999999999", 0, ErrRange},
		{"", 0, ErrSyntax},
		{"1.5", 0, ErrSyntax},
		{"1e3", 0, ErrSyntax},
		{" 1", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
		{"1_000", 0, ErrSyntax},
		{"2026-09-01T10:05:00Z", 0, ErrSyntax},
	})
}

func TestEpochS(t *testing.T) {
	runCases(t, &Parser{Format: EpochS}, []parseCase{
		{"1788220800", sep1, nil},
		{"1788220800.5", sep1 + 500, nil},
		{"1788220800.123456", sep1 + 123, nil},
		{"1788220800.000999", sep1, nil},
		{"0", 0, nil},
		{"0.001", 1, nil},
		{"0.0001", 0, nil},
		{"+1.5", 1500, nil},
		{"5.", 5000, nil},
		{"-1", -1000, nil},
		{"-1.5", -1500, nil},
		{"-0.5", -500, nil},
		{"-1.000", -1000, nil},
		{"-0.0000", 0, nil},
		// Truncation toward the past: −1.2345 s is −1234.5 ms → −1235.
		{"-1.2345", -1235, nil},
		{"-0.0001", -1, nil},
		{"-0.0009", -1, nil},
		{"-1.0000001", -1001, nil},
		{"-1.0010", -1001, nil},
		{"-14182940.0001", -14182940001, nil},
		{"9000000000000", 0, ErrRange},
		{"253402300799.999", 253_402_300_799_999, nil},
		{"-9000000000000.999", 0, ErrRange},
		{"9000000000001", 0, ErrRange},
		{"99999999999999999999.5", 0, ErrRange},
		{"9000000000001.x", 0, ErrSyntax},
		{"", 0, ErrSyntax},
		{"-", 0, ErrSyntax},
		{".5", 0, ErrSyntax},
		{"1e3", 0, ErrSyntax},
		{"1.2.3", 0, ErrSyntax},
		{"1.-5", 0, ErrSyntax},
		{"1.5x", 0, ErrSyntax},
		{"1.23x", 0, ErrSyntax},
		{"1.2345x", 0, ErrSyntax},
		{"abc", 0, ErrSyntax},
	})
}

// TestLayoutLondon: local Europe/London text (the Online Retail data).
// 2011 transitions (EU rule, 01:00 UTC on the last Sunday of March and
// October): 2011-03-27 01:00 GMT → 02:00 BST, so 01:00–01:59:59 does not
// exist; 2011-10-30 02:00 BST → 01:00 GMT, so 01:00–01:59:59 occurs twice,
// first at 00:00–00:59:59 UTC.
func TestLayoutLondon(t *testing.T) {
	london := load(t, "Europe/London")
	p, err := New(spec.EventTime{Format: "layout", Layout: "2006-01-02 15:04:05", Timezone: "Europe/London"})
	if err != nil {
		t.Fatal(err)
	}
	checkTransition(t, london, utc(2011, 3, 27, 1, 0, 0, 0), 0, 3600)
	checkTransition(t, london, utc(2011, 10, 30, 1, 0, 0, 0), 3600, 0)
	runCases(t, p, []parseCase{
		{"2011-01-15 12:00:00", utc(2011, 1, 15, 12, 0, 0, 0), nil},
		{"2011-06-15 12:00:00", utc(2011, 6, 15, 11, 0, 0, 0), nil},
		{"2011-03-27 00:59:59", utc(2011, 3, 27, 0, 59, 59, 0), nil},
		{"2011-03-27 01:00:00", 0, ErrNonexistent},
		{"2011-03-27 01:30:00", 0, ErrNonexistent},
		{"2011-03-27 01:59:59", 0, ErrNonexistent},
		{"2011-03-27 02:00:00", utc(2011, 3, 27, 1, 0, 0, 0), nil},
		{"2011-10-30 00:59:59", utc(2011, 10, 29, 23, 59, 59, 0), nil},
		{"2011-10-30 01:00:00", utc(2011, 10, 30, 0, 0, 0, 0), nil}, // first occurrence (BST)
		{"2011-10-30 01:30:00", utc(2011, 10, 30, 0, 30, 0, 0), nil},
		{"2011-10-30 01:59:59", utc(2011, 10, 30, 0, 59, 59, 0), nil},
		{"2011-10-30 02:00:00", utc(2011, 10, 30, 2, 0, 0, 0), nil},
		{"1969-12-31 23:59:59", -1000 - hour, nil}, // BST all year 1968–1971 (+01:00)
		{"2011-10-30T01:30:00", 0, ErrSyntax},
		{"2011-10-30 01:30", 0, ErrSyntax},
		{"2011-02-30 01:30:00", 0, ErrSyntax},
		{"", 0, ErrSyntax},
	})
}

// checkTransition asserts that the offset of loc changes from before to
// after (seconds east of UTC) at instant ms, looking only at the offsets
// 1 ms before and at the instant.
func checkTransition(t *testing.T, loc *time.Location, ms int64, before, after int) {
	t.Helper()
	_, b := time.UnixMilli(ms - 1).In(loc).Zone()
	_, a := time.UnixMilli(ms).In(loc).Zone()
	if b != before || a != after {
		t.Fatalf("%s at %s: offsets %d → %d, want %d → %d", loc, show(ms), b, a, before, after)
	}
}

// TestLayoutRepeatedAndSkipped: the first occurrence of a repeated local
// time in zones whose change is not an hour, and whose standard offset is
// west and east of UTC (time.ParseInLocation returns the first occurrence
// in some and the second in others).
func TestLayoutRepeatedAndSkipped(t *testing.T) {
	const layout = "2006-01-02 15:04:05"
	for _, c := range []struct {
		zone       string
		transition int64 // instant of the change, from the zone's rules
		before     int   // offset before, seconds
		after      int
		cases      []parseCase
	}{
		// America/New_York 2011: 2011-11-06 02:00 EDT → 01:00 EST (06:00 UTC).
		{"America/New_York", utc(2011, 11, 6, 6, 0, 0, 0), -4 * 3600, -5 * 3600, []parseCase{
			{"2011-11-06 01:30:00", utc(2011, 11, 6, 5, 30, 0, 0), nil},
			{"2011-11-06 02:00:00", utc(2011, 11, 6, 7, 0, 0, 0), nil},
			{"2011-11-06 00:59:59", utc(2011, 11, 6, 4, 59, 59, 0), nil},
		}},
		// 2011-03-13 02:00 EST → 03:00 EDT (07:00 UTC).
		{"America/New_York", utc(2011, 3, 13, 7, 0, 0, 0), -5 * 3600, -4 * 3600, []parseCase{
			{"2011-03-13 02:30:00", 0, ErrNonexistent},
			{"2011-03-13 03:00:00", utc(2011, 3, 13, 7, 0, 0, 0), nil},
		}},
		// Australia/Lord_Howe changes by 30 minutes: 2011-04-03 02:00
		// +11:00 → 01:30 +10:30 (15:00 UTC on the 2nd).
		{"Australia/Lord_Howe", utc(2011, 4, 2, 15, 0, 0, 0), 11 * 3600, 10*3600 + 1800, []parseCase{
			{"2011-04-03 01:45:00", utc(2011, 4, 2, 14, 45, 0, 0), nil},
			{"2011-04-03 01:30:00", utc(2011, 4, 2, 14, 30, 0, 0), nil},
			{"2011-04-03 02:00:00", utc(2011, 4, 2, 15, 30, 0, 0), nil},
		}},
		// 2011-10-02 02:00 +10:30 → 02:30 +11:00 (15:30 UTC on the 1st).
		{"Australia/Lord_Howe", utc(2011, 10, 1, 15, 30, 0, 0), 10*3600 + 1800, 11 * 3600, []parseCase{
			{"2011-10-02 02:15:00", 0, ErrNonexistent},
			{"2011-10-02 02:30:00", utc(2011, 10, 1, 15, 30, 0, 0), nil},
		}},
		// Antarctica/Troll changes by 2 hours: 2015-10-25 01:00 UTC,
		// 03:00 +02 → 01:00 +00; 01:00–02:59:59 occurs twice.
		// time.ParseInLocation returns the second occurrence, and the old
		// one-hour search kept it.
		{"Antarctica/Troll", utc(2015, 10, 25, 1, 0, 0, 0), 2 * 3600, 0, []parseCase{
			{"2015-10-25 01:30:00", utc(2015, 10, 24, 23, 30, 0, 0), nil},
			{"2015-10-25 02:59:59", utc(2015, 10, 25, 0, 59, 59, 0), nil},
			{"2015-10-25 01:00:00", utc(2015, 10, 24, 23, 0, 0, 0), nil},
			{"2015-10-25 03:00:00", utc(2015, 10, 25, 3, 0, 0, 0), nil},
		}},
		// 2016-03-27 01:00 UTC, 01:00 +00 → 03:00 +02.
		{"Antarctica/Troll", utc(2016, 3, 27, 1, 0, 0, 0), 0, 2 * 3600, []parseCase{
			{"2016-03-27 01:00:00", 0, ErrNonexistent},
			{"2016-03-27 02:59:59", 0, ErrNonexistent},
			{"2016-03-27 03:00:00", utc(2016, 3, 27, 1, 0, 0, 0), nil},
		}},
		// America/Sao_Paulo changed at midnight: 2018-11-04 00:00 −03 →
		// 01:00 −02 (03:00 UTC), so that day has no 00:xx.
		{"America/Sao_Paulo", utc(2018, 11, 4, 3, 0, 0, 0), -3 * 3600, -2 * 3600, []parseCase{
			{"2018-11-04 00:00:00", 0, ErrNonexistent},
			{"2018-11-04 00:30:00", 0, ErrNonexistent},
			{"2018-11-04 01:00:00", utc(2018, 11, 4, 3, 0, 0, 0), nil},
			{"2018-11-03 23:59:59", utc(2018, 11, 4, 2, 59, 59, 0), nil},
		}},
		// Asia/Amman repeated midnight: 2014-10-31 01:00 +03 → 00:00 +02.
		{"Asia/Amman", utc(2014, 10, 30, 22, 0, 0, 0), 3 * 3600, 2 * 3600, []parseCase{
			{"2014-10-31 00:00:00", utc(2014, 10, 30, 21, 0, 0, 0), nil},
			{"2014-10-31 00:59:59", utc(2014, 10, 30, 21, 59, 59, 0), nil},
			{"2014-10-31 01:00:00", utc(2014, 10, 30, 23, 0, 0, 0), nil},
		}},
	} {
		loc := load(t, c.zone)
		checkTransition(t, loc, c.transition, c.before, c.after)
		runCases(t, &Parser{Format: Layout, Layout: layout, Loc: loc}, c.cases)
	}
}

func TestLayoutOther(t *testing.T) {
	seoul := load(t, "Asia/Seoul")
	runCases(t, &Parser{Format: Layout, Layout: "2006/01/02 15:04", Loc: seoul}, []parseCase{
		{"2026/09/01 10:05", sep1 + 1*hour + 5*minute, nil},
		{"2026/09/01 00:30", sep1 - 8*hour - 30*minute, nil},
		{"2026-09-01 10:05", 0, ErrSyntax},
	})
	// Fractions in the layout; truncation toward the past before 1970.
	runCases(t, &Parser{Format: Layout, Layout: "2006-01-02 15:04:05.999999", Loc: time.UTC}, []parseCase{
		{"2026-09-01 10:05:00.123456", sep1 + 10*hour + 5*minute + 123, nil},
		{"2026-09-01 10:05:00", sep1 + 10*hour + 5*minute, nil},
		{"1969-12-31 23:59:59.9999", -1, nil},
		{"1969-12-31 23:59:59.0001", -1000, nil},
	})
	london := load(t, "Europe/London")
	runCases(t, &Parser{Format: Layout, Layout: "02/01/2006 15:04:05.000", Loc: london}, []parseCase{
		{"01/09/2026 10:05:00.250", sep1 + 9*hour + 5*minute + 250, nil},
		{"27/03/2011 01:15:00.000", 0, ErrNonexistent},
		{"30/10/2011 01:15:00.500", utc(2011, 10, 30, 0, 15, 0, 500), nil},
	})
}

func TestNew(t *testing.T) {
	for _, c := range []struct {
		et   spec.EventTime
		want Format
	}{
		{spec.EventTime{}, RFC3339},
		{spec.EventTime{Format: "rfc3339"}, RFC3339},
		{spec.EventTime{Format: "epoch_ms"}, EpochMs},
		{spec.EventTime{Format: "epoch_s"}, EpochS},
		{spec.EventTime{Format: "layout", Layout: "2006-01-02", Timezone: "Asia/Seoul"}, Layout},
	} {
		p, err := New(c.et)
		if err != nil || p.Format != c.want {
			t.Errorf("%+v: %+v, %v", c.et, p, err)
		}
		if c.want == Layout && (p.Layout != c.et.Layout || p.Loc.String() != c.et.Timezone) {
			t.Errorf("%+v: %+v", c.et, p)
		}
	}
	for _, et := range []spec.EventTime{
		{Format: "unix"},
		{Format: "layout", Layout: "2006-01-02", Timezone: "Mars/Olympus_Mons"},
	} {
		if p, err := New(et); err == nil {
			t.Errorf("%+v: no error, %+v", et, p)
		}
	}
	var zero Parser // the zero Parser parses RFC 3339
	if got, err := zero.Parse([]byte("2026-09-01T00:00:00Z")); err != nil || got != sep1 {
		t.Errorf("zero Parser: %d, %v", got, err)
	}
}

func TestDaysFromCivil(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		y := rapid.Int64Range(-1000, 10000).Draw(t, "y")
		m := rapid.Int64Range(1, 12).Draw(t, "m")
		d := rapid.Int64Range(1, daysIn(m, y)).Draw(t, "d")
		tm := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
		if tm.Day() != int(d) {
			t.Fatalf("daysIn(%d, %d) = %d is wrong", m, y, daysIn(m, y))
		}
		if got, want := daysFromCivil(y, m, d), tm.Unix()/86400; got != want {
			t.Fatalf("daysFromCivil(%d, %d, %d) = %d, want %d", y, m, d, got, want)
		}
		if next := tm.AddDate(0, 0, 1); d == daysIn(m, y) && next.Day() != 1 {
			t.Fatalf("daysIn(%d, %d) = %d, but %s follows", m, y, d, next)
		}
	})
}

// genRFC3339 generates text near the RFC 3339 shapes: half of it in range
// (so that the fast path applies), the rest with a field or two out of
// range, odd separators, fractions and offsets of every length; a tenth
// damaged at a random byte.
func genRFC3339() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		wildText := rapid.Bool().Draw(t, "wild")
		wild := func(name string) bool {
			return wildText && rapid.IntRange(0, 4).Draw(t, name+" wild") == 0
		}
		pick := func(name string, strict, loose []string) string {
			if wild(name) {
				return rapid.SampledFrom(loose).Draw(t, name)
			}
			return rapid.SampledFrom(strict).Draw(t, name)
		}
		num := func(name string, lo, hi, wlo, whi, width int) string {
			if wild(name) {
				lo, hi = wlo, whi
			}
			return fmt.Sprintf("%0*d", width, rapid.IntRange(lo, hi).Draw(t, name))
		}
		var b strings.Builder
		b.WriteString(num("year", 0, 9999, 0, 9999, 4))
		b.WriteString(pick("sep", []string{"-"}, []string{"/", "."}))
		b.WriteString(num("month", 1, 12, 0, 13, 2))
		b.WriteString("-")
		b.WriteString(num("day", 1, 31, 0, 32, 2))
		b.WriteString(pick("T", []string{"T", " "}, []string{"t", "_"}))
		if wild("short hour") {
			b.WriteString(num("hour1", 0, 9, 0, 9, 1))
		} else {
			b.WriteString(num("hour", 0, 23, 0, 24, 2))
		}
		b.WriteString(":")
		b.WriteString(num("minute", 0, 59, 0, 60, 2))
		b.WriteString(":")
		b.WriteString(num("second", 0, 59, 0, 60, 2))
		b.WriteString(pick("frac", []string{"", ".5", ".12", ".123", ".1234", ".123456789", ".1234567891234", ".999", ".0009"}, []string{".", ",5", ".x"}))
		sign := pick("sign", []string{"+", "-"}, []string{"±"})
		hh := num("offset hour", 0, 23, 0, 25, 2)
		mm := num("offset minute", 0, 59, 0, 61, 2)
		b.WriteString(pick("zone", []string{"Z", sign + hh + ":" + mm, sign + hh + mm}, []string{"z", "", sign + hh, sign + hh + "." + mm, sign + hh + mm + "0", sign + hh + ":" + mm + ":00", "ZZ", " Z"}))
		s := b.String()
		if rapid.IntRange(0, 9).Draw(t, "damage?") == 0 {
			i := rapid.IntRange(0, len(s)-1).Draw(t, "at")
			c := rapid.ByteRange(0x20, 0x7e).Draw(t, "byte")
			switch rapid.IntRange(0, 2).Draw(t, "how") {
			case 0:
				s = s[:i] + string(c) + s[i+1:]
			case 1:
				s = s[:i] + s[i+1:]
			default:
				s = s[:i] + string(c) + s[i:]
			}
		}
		return s
	})
}

// TestParseRFC3339FastMatchesSlow: the allocation-free path and the
// time.Parse path (the implementation before the fast path existed) give
// the same result and the same error for every input.
func TestParseRFC3339FastMatchesSlow(t *testing.T) {
	fast := 0
	rapid.Check(t, func(t *rapid.T) {
		s := genRFC3339().Draw(t, "s")
		compareFastSlow(t, s)
		if _, ok := parseRFC3339Fast(s, nil); ok {
			fast++
		}
	})
	if fast == 0 {
		t.Fatal("the fast path never applied")
	}
}

// TestParseRFC3339FastMatchesSlowTricky: the same, for shapes at the edge
// of the fast path.
func TestParseRFC3339FastMatchesSlowTricky(t *testing.T) {
	const base = "2026-09-01T10:05:00"
	for _, zone := range []string{
		"Z", "z", "ZZ", " Z", "+09:00", "-09:00", "±09:00", "*09:00", "_09:00", " 09:00", "+09.00", "+09_00",
		"+0900", "-0900", "±0900", "*0900", " 0900", "+0900 ", "+09:00 ", "+09:00:00", "+09", "+090", "+090000",
		"+24:00", "+23:60", "+2400", "+2360", "+25:00", "+09:61", "-0000", "-00:00", "+0a:00", "+09:0a", "+0a00", "+090a",
		"", " ", ".Z", ".+09:00", ".5Z", ",5Z", ".5+0900", ".123456789123+0900", ".5 Z", "..5Z", ".5.5Z",
	} {
		compareFastSlow(t, base+zone)
		compareFastSlow(t, "2026-09-01 10:05:00"+zone)
	}
	for _, s := range []string{
		"2026-09-01t10:05:00Z", "2026-09-01T1:05:00Z", "2026-9-01T10:05:00Z", "2026-09-01T10:05:0Z",
		"2026-09-01T10:5:00Z", "2026-09-1T10:05:00Z", "226-09-01T10:05:00Z", "2026-0a-01T10:05:00Z",
		"2026-09-0aT10:05:00Z", "2026-09-01T1a:05:00Z", "2026-09-01T10:0a:00Z", "2026-09-01T10:05:0aZ",
		"2026/09/01T10:05:00Z", "2026-09-01T10.05.00Z", "2026-09-01T10:05:00", "-026-09-01T10:05:00Z",
		"2026-02-29T10:05:00Z", "2024-02-29T10:05:00Z", "2026-09-31T10:05:00Z", "2026-00-01T10:05:00Z",
		"0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999+23:59", "9999-12-31T23:59:59.999-23:59",
	} {
		compareFastSlow(t, s)
	}
}

func compareFastSlow(t interface{ Fatalf(string, ...any) }, s string) {
	got, err := ParseRFC3339(s)
	want, werr := parseRFC3339Slow(s)
	if got != want || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%q: ParseRFC3339 = %d, %v; time.Parse path = %d, %v", s, got, err, want, werr)
	}
	if ms, ok := parseRFC3339Fast(s, nil); ok && (werr != nil || ms != want) {
		t.Fatalf("%q: fast path accepts %d, time.Parse path %d, %v", s, ms, want, werr)
	}
}

// TestParseDoesNotAllocate: the success path of every format allocates
// nothing (the "+0900" and "+05:30" shapes used to allocate 3 times).
func TestParseDoesNotAllocate(t *testing.T) {
	london := load(t, "Europe/London")
	for _, c := range []struct {
		p  *Parser
		in string
	}{
		{&Parser{}, "2026-09-01T10:05:00Z"},
		{&Parser{}, "2026-09-01T10:05:00.123+09:00"},
		{&Parser{}, "2026-09-01T10:05:00+0900"},
		{&Parser{}, "2026-09-01T10:05:00+05:30"},
		{&Parser{}, "2026-09-01 10:05:00-0330"},
		{&Parser{Format: EpochMs}, "1788220800000"},
		{&Parser{Format: EpochS}, "1788220800.123"},
		{&Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: london}, "2011-10-30 01:30:00"},
		{&Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: london}, "2026-09-01 10:05:00"},
	} {
		b := []byte(c.in)
		if _, err := c.p.Parse(b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = c.p.Parse(b) }); n != 0 {
			t.Errorf("%q: %v allocations", c.in, n)
		}
	}
}

// occurrences returns every instant (ms), in order, at which loc shows the wall clock
// wall (a UTC time whose fields are the local ones), found by trying every
// offset from −16 h to +16 h in steps of 15 minutes (all offsets since 1973
// are multiples of 15 minutes). It knows nothing of transitions.
func occurrences(loc *time.Location, wall time.Time) []int64 {
	const layout = "2006-01-02 15:04:05.000"
	w := wall.Format(layout)
	var out []int64
	for off := int64(-16 * 3600); off <= 16*3600; off += 900 {
		u := wall.UnixMilli() - off*1000
		if time.UnixMilli(u).In(loc).Format(layout) == w {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

var layoutZones = []string{
	"Europe/London", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll",
	"America/Sao_Paulo", "Asia/Amman", "Pacific/Chatham", "America/St_Johns",
	"Asia/Tehran", "Pacific/Apia", "Asia/Seoul", "Asia/Kathmandu",
}

// TestLayoutMatchesOccurrences: Parse returns ErrNonexistent exactly when
// no instant shows the wall clock, and otherwise the earliest instant that
// does. Every wall clock on a 10-minute grid from 3 hours before to 3
// hours after each transition of 2005–2020 in each zone.
func TestLayoutMatchesOccurrences(t *testing.T) {
	if testing.Short() {
		t.Skip("checks every transition of 16 years in 12 zones")
	}
	const layout = "2006-01-02 15:04:05"
	lo, hi := time.Date(2005, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	skipped, repeated := 0, 0
	for _, zone := range layoutZones {
		loc := load(t, zone)
		p := &Parser{Format: Layout, Layout: layout, Loc: loc}
		for tr := lo.In(loc); tr.Before(hi); {
			_, end := tr.ZoneBounds() // only to find where to look
			if end.IsZero() {
				break
			}
			tr = end
			_, off := tr.Zone()
			local := tr.Add(time.Duration(off) * time.Second).UTC() // wall clock at the transition, as UTC fields
			for d := -180; d <= 180; d += 10 {
				wall := local.Add(time.Duration(d) * time.Minute)
				text := wall.Format(layout)
				got, err := p.Parse([]byte(text))
				occ := occurrences(loc, wall)
				switch {
				case len(occ) == 0:
					skipped++
					if !errors.Is(err, ErrNonexistent) {
						t.Fatalf("%s in %s does not exist, Parse = %s, %v", text, loc, show(got), err)
					}
				case err != nil || got != occ[0]:
					t.Fatalf("%s in %s: Parse = %s, %v; occurs at %v", text, loc, show(got), err, occ)
				case len(occ) > 1:
					repeated++
				}
			}
		}
	}
	if skipped == 0 || repeated == 0 {
		t.Fatalf("%d skipped and %d repeated clocks: the sweep misses transitions", skipped, repeated)
	}
}

// TestLayoutMatchesOccurrencesRandom: the same for random wall clocks of
// 1975–2035, most near a transition.
func TestLayoutMatchesOccurrencesRandom(t *testing.T) {
	var locs []*time.Location
	for _, z := range layoutZones {
		locs = append(locs, load(t, z))
	}
	const layout = "2006-01-02 15:04:05"
	lo, hi := time.Date(1975, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	rapid.Check(t, func(t *rapid.T) {
		loc := rapid.SampledFrom(locs).Draw(t, "zone")
		u := rapid.Int64Range(lo, hi).Draw(t, "instant")
		tm := time.UnixMilli(u).In(loc)
		if _, end := tm.ZoneBounds(); !end.IsZero() && rapid.IntRange(0, 4).Draw(t, "near transition") > 0 {
			u = end.UnixMilli()
		}
		u += rapid.Int64Range(-2*60, 2*60).Draw(t, "minutes") * minute
		_, off := time.UnixMilli(u).In(loc).Zone()
		wall := time.UnixMilli(u + int64(off)*1000).UTC().Truncate(time.Second)
		if rapid.Bool().Draw(t, "shift") {
			wall = wall.Add(time.Duration(rapid.Int64Range(-150, 150).Draw(t, "shift minutes")) * time.Minute)
		}
		text := wall.Format(layout)
		got, err := (&Parser{Format: Layout, Layout: layout, Loc: loc}).Parse([]byte(text))
		occ := occurrences(loc, wall)
		switch {
		case len(occ) == 0:
			if !errors.Is(err, ErrNonexistent) {
				t.Fatalf("%s in %s does not exist, Parse = %s, %v", text, loc, show(got), err)
			}
		case err != nil || got != occ[0]:
			t.Fatalf("%s in %s: Parse = %s, %v; occurs at %v", text, loc, show(got), err, occ)
		}
	})
}

// Fuzz targets, one per format. Run each with -fuzztime 30000x.

func checkSentinel(t *testing.T, in string, err error) {
	if err != nil && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrNoOffset) && !errors.Is(err, ErrNonexistent) && !errors.Is(err, ErrRange) {
		t.Fatalf("%q: error %v wraps no sentinel", in, err)
	}
}

func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{
		"2026-09-01T10:05:00Z", "2026-09-01T10:05:00+09:00", "2026-09-01 10:05:00.123-0500",
		"2026-09-01T10:05:00", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999+23:59",
		"2026-09-01T10:05:00+24:00", "2026-09-01T1:05:00Z", "2026-09-01T10:05:00,5Z", "", "Z",
		"2026-09-01T10:05:00.Z", "2026-02-29T10:05:00Z",
	} {
		f.Add([]byte(s))
	}
	p := &Parser{}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := p.Parse(b)
		checkSentinel(t, string(b), err)
		if len(b) > 0 {
			compareFastSlow(t, string(b))
		}
		if err == nil && (ms < -62167219200000-26*hour || ms > 253402300799999+26*hour) {
			t.Fatalf("%q: %d is outside years 0000–9999", b, ms)
		}
	})
}

var (
	intText     = regexp.MustCompile(`^[+-]?[0-9]+$`)
	secondsText = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]*)?$`)
)

func FuzzParseEpochMs(f *testing.F) {
	for _, s := range []string{"1788220800000", "-1", "+5", "9000000000000000", "9000000000000001", "-9223372036854775808", "1.5", "", "-", "0x10"} {
		f.Add([]byte(s))
	}
	p := &Parser{Format: EpochMs}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := p.Parse(b)
		checkSentinel(t, string(b), err)
		// Accepted exactly when the text is a decimal integer within ±9e15.
		v, ok := new(big.Int).SetString(string(b), 10)
		ok = ok && intText.Match(b) && v.Cmp(big.NewInt(-62_167_219_200_000)) >= 0 && v.Cmp(big.NewInt(253_402_300_800_000)) < 0
		if ok != (err == nil) || (ok && got != v.Int64()) {
			t.Fatalf("%q: Parse = %d, %v; want %v, %v", b, got, err, v, ok)
		}
	})
}

func FuzzParseEpochS(f *testing.F) {
	for _, s := range []string{"1788220800", "1788220800.123456", "-1.2345", "-0.0001", "5.", ".5", "-", "9000000000000.999", "9000000000001", "1e3", "1.2.3"} {
		f.Add([]byte(s))
	}
	p := &Parser{Format: EpochS}
	thousand := big.NewRat(1000, 1)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := p.Parse(b)
		checkSentinel(t, string(b), err)
		// Accepted exactly when the text is a decimal number with at most
		// 9e12 whole seconds; the value is floor(seconds × 1000).
		ok := secondsText.Match(b)
		var want int64
		if ok {
			s := strings.TrimSuffix(string(b), ".")
			whole, _, _ := strings.Cut(strings.TrimLeft(s, "+-"), ".")
			w, _ := new(big.Int).SetString(whole, 10)
			r, _ := new(big.Rat).SetString(s)
			r.Mul(r, thousand)
			fl := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive divisor
			ok = w.Cmp(big.NewInt(9_000_000_000_000)) <= 0 && fl.Cmp(big.NewInt(-62_167_219_200_000)) >= 0 && fl.Cmp(big.NewInt(253_402_300_800_000)) < 0
			want = fl.Int64()
		}
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("%q: Parse = %d, %v; want %d, %v", b, got, err, want, ok)
		}
	})
}

func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{"2011-10-30 01:30:00", "2011-03-27 01:30:00", "2026-09-01 10:05:00", "2011-10-30 1:30:00", "2011-10-30 01:30:00.5", "", "2011-13-01 00:00:00"} {
		f.Add([]byte(s))
	}
	const layout = "2006-01-02 15:04:05"
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		f.Fatal(err)
	}
	p := &Parser{Format: Layout, Layout: layout, Loc: london}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := p.Parse(b)
		checkSentinel(t, string(b), err)
		wall, werr := time.Parse(layout, string(b))
		switch {
		case werr != nil:
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("%q does not match the layout, Parse = %d, %v", b, got, err)
			}
		case wall.Year() < 1973: // occurrences assumes offsets in 15-minute steps
		default:
			occ := occurrences(london, wall)
			if len(occ) == 0 {
				if !errors.Is(err, ErrNonexistent) {
					t.Fatalf("%q does not exist in London, Parse = %d, %v", b, got, err)
				}
			} else if err != nil || got != occ[0] {
				t.Fatalf("%q: Parse = %d, %v; occurs at %v", b, got, err, occ)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	london, _ := time.LoadLocation("Europe/London")
	for _, c := range []struct {
		name string
		p    *Parser
		in   string
	}{
		{"rfc3339-Z", &Parser{}, "2026-09-01T10:05:00Z"},
		{"rfc3339-offset-ms", &Parser{}, "2026-09-01T10:05:00.123+09:00"},
		{"rfc3339-basic", &Parser{}, "2026-09-01T10:05:00+0900"},
		{"rfc3339-half-hour", &Parser{}, "2026-09-01T10:05:00+05:30"},
		{"rfc3339-space", &Parser{}, "2026-09-01 10:05:00+09:00"},
		{"layout-London", &Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: london}, "2011-06-01 12:00:00"},
		{"layout-London-repeated", &Parser{Format: Layout, Layout: "2006-01-02 15:04:05", Loc: london}, "2011-10-30 01:30:00"},
		{"epoch_ms", &Parser{Format: EpochMs}, "1788220800000"},
		{"epoch_s", &Parser{Format: EpochS}, "1788220800.123"},
	} {
		in := []byte(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.p.Parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		if c.p.Format == RFC3339 {
			b.Run(c.name+"/time.Parse-path", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := parseRFC3339Slow(c.in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestEpochOutOfRangeMessage: an epoch integer outside the years 0000 to
// 9999 is called out of range, not "not integer" (the quarantine reason a
// user reads); text that is no integer keeps its syntax message.
func TestEpochOutOfRangeMessage(t *testing.T) {
	for _, tc := range []struct {
		p    *Parser
		in   string
		want string
	}{
		{&Parser{Format: EpochMs}, "99999999999999999999", `timestamp outside the years 0000 to 9999: "99999999999999999999"`},
		{&Parser{Format: EpochMs}, "9000000000000001", `timestamp outside the years 0000 to 9999: "9000000000000001"`},
		{&Parser{Format: EpochMs}, "1.5", `unparsable timestamp: "1.5" is not integer epoch milliseconds`},
		{&Parser{Format: EpochS}, "9000000000001", `timestamp outside the years 0000 to 9999: "9000000000001"`},
		{&Parser{Format: EpochS}, "1e3", `unparsable timestamp: "1e3" is not epoch seconds`},
	} {
		_, err := tc.p.Parse([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %s", tc.in, err, tc.want)
		}
	}
}
