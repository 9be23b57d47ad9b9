package pgcdc

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/row"
)

func TestParseTimestamp(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	ms := func(s string) int64 {
		tt, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tt.UnixMilli()
	}
	for _, c := range []struct {
		in   string
		loc  *time.Location
		want int64
		err  string
	}{
		{"2026-09-01 10:05:00+00", nil, ms("2026-09-01T10:05:00Z"), ""},
		{"2026-09-01 10:05:00.123456+00", nil, ms("2026-09-01T10:05:00.123Z"), ""},
		{"2026-09-01 10:05:00.9+09", nil, ms("2026-09-01T01:05:00.9Z"), ""},
		{"2026-09-01 10:05:00-03:30", nil, ms("2026-09-01T13:35:00Z"), ""},
		{"1890-01-01 00:00:00+00:19:32", nil, ms("1889-12-31T23:40:28Z"), ""},
		{"1969-12-31 23:59:59.9995+00", nil, ms("1969-12-31T23:59:59.999Z"), ""},
		{"2026-09-01 10:05:00", seoul, ms("2026-09-01T01:05:00Z"), ""},
		{"2026-09-01", seoul, ms("2026-08-31T15:00:00Z"), ""},
		{"2026-03-29 02:30:00", berlin, ms("2026-03-29T01:30:00Z"), ""}, // in the gap: time.Date's reading
		{"2026-09-01 10:05:00", nil, 0, "no UTC offset (set source.timezone for timestamp and date columns)"},
		{"infinity", nil, 0, "infinity is not an instant"},
		{"0044-03-15 00:00:00+00 BC", nil, 0, "a BC date is out of range"},
		{"2026-13-01 00:00:00+00", nil, 0, "not a PostgreSQL timestamp"},
		{"2026-09-01T10:05:00+00", nil, 0, "not a PostgreSQL timestamp"},
		{"2026-09-01 10:05:00.+00", nil, 0, "not a PostgreSQL timestamp"},
		{"2026-09-01 10:05:00+0", nil, 0, "not a PostgreSQL timestamp"},
	} {
		got, why := parseTimestamp([]byte(c.in), c.loc)
		if why != c.err || (why == "" && got != c.want) {
			t.Errorf("%q: %d %q, want %d %q", c.in, got, why, c.want, c.err)
		}
	}
}

func TestConvFor(t *testing.T) {
	if _, err := convFor("at", oidTimestamp, row.KindTime, nil); err == nil || !strings.Contains(err.Error(), "set source.timezone") {
		t.Errorf("timestamp without a zone: %v", err)
	}
	if _, err := convFor("n", 25, row.KindInt, nil); err == nil || err.Error() != "column n is type 25, which cannot be read as int: declare the field n in source.schema as string" {
		t.Errorf("text as int: %v", err)
	}
	if _, err := convFor("flag", oidBool, row.KindDecimal, nil); err == nil || !strings.Contains(err.Error(), "as bool or string") {
		t.Errorf("bool as decimal: %v", err)
	}
	for _, c := range []struct {
		oid uint32
		k   row.Kind
	}{{oidInt8, row.KindInt}, {oidNumeric, row.KindDecimal}, {oidFloat8, row.KindDecimal}, {oidBool, row.KindBool}, {oidTimestampTZ, row.KindTime}, {2950, row.KindString}} {
		if _, err := convFor("c", c.oid, c.k, nil); err != nil {
			t.Errorf("%s as %s: %v", typeName(c.oid), c.k, err)
		}
	}
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2026-09-01 10:05:00+00", "2026-09-01 10:05:00.123456-03:30", "2026-09-01", "infinity", "1969-12-31 23:59:59.9995+00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, why := parseTimestamp([]byte(s), time.UTC)
		if why != "" {
			return
		}
		// An accepted text names the instant Go reads from it.
		tt := time.UnixMilli(ms).UTC()
		if tt.Year() < 0 || tt.Year() > 10000 {
			t.Fatalf("%q: year %d", s, tt.Year())
		}
	})
}
