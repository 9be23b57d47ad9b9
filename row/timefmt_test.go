package row

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestTimeFormatterMatchesAppendTime checks the fast formatter against
// AppendTime (time.Time formatting) for random instants in several zones,
// including DST transitions and zones with odd offsets, in random order so
// the zone-period cache is exercised.
func TestTimeFormatterMatchesAppendTime(t *testing.T) {
	zones := []string{"UTC", "Asia/Seoul", "Europe/London", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/St_Johns", "Pacific/Chatham", "Africa/Monrovia", "America/Sao_Paulo"}
	var locs []*time.Location
	for _, z := range zones {
		l, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, l)
	}
	rapid.Check(t, func(t *rapid.T) {
		loc := locs[rapid.IntRange(0, len(locs)-1).Draw(t, "zone")]
		f := NewTimeFormatter(loc)
		for _, ms := range rapid.SliceOfN(rapid.OneOf(
			rapid.Int64Range(-5_000_000_000_000, 5_000_000_000_000),
			rapid.Int64Range(1_300_000_000_000, 1_320_000_000_000), // 2011, both DST changes
			rapid.Int64Range(-1000, 1000),
		), 1, 20).Draw(t, "ms") {
			want := string(AppendTime(nil, ms, loc))
			if got := string(f.Append(nil, ms)); got != want {
				t.Fatalf("%d in %s: got %s, want %s", ms, loc, got, want)
			}
		}
	})
}

func TestTimeFormatterExamples(t *testing.T) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	london, _ := time.LoadLocation("Europe/London")
	for _, c := range []struct {
		loc  *time.Location
		ms   int64
		want string
	}{
		{seoul, time.Date(2026, 9, 1, 10, 0, 0, 0, seoul).UnixMilli(), "2026-09-01T10:00:00+09:00"},
		{seoul, time.Date(2026, 9, 1, 10, 0, 0, 250e6, seoul).UnixMilli(), "2026-09-01T10:00:00.250+09:00"},
		{london, time.Date(2011, 3, 27, 0, 59, 59, 0, time.UTC).UnixMilli(), "2011-03-27T00:59:59Z"},
		{london, time.Date(2011, 3, 27, 1, 0, 0, 0, time.UTC).UnixMilli(), "2011-03-27T02:00:00+01:00"},
		{time.UTC, -1, "1969-12-31T23:59:59.999Z"},
	} {
		f := NewTimeFormatter(c.loc)
		if got := string(f.Append(nil, c.ms)); got != c.want {
			t.Errorf("%d: got %s, want %s", c.ms, got, c.want)
		}
	}
}

func BenchmarkTimeFormatter(b *testing.B) {
	seoul, _ := time.LoadLocation("Asia/Seoul")
	f := NewTimeFormatter(seoul)
	buf := make([]byte, 0, 64)
	ms := time.Date(2026, 9, 1, 10, 0, 0, 0, seoul).UnixMilli()
	b.Run("formatter", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf = f.Append(buf[:0], ms+int64(i))
		}
	})
	b.Run("AppendTime", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			buf = AppendTime(buf[:0], ms+int64(i), seoul)
		}
	})
}

// TestLocalMeanTimeOffsets: an offset with seconds cannot be written in
// RFC 3339, so such instants are written in UTC (Amsterdam used +00:19:32
// until 1937).
func TestLocalMeanTimeOffsets(t *testing.T) {
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Date(1930, 6, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	f := NewTimeFormatter(ams)
	for _, got := range []string{string(AppendTime(nil, ms, ams)), string(f.Append(nil, ms))} {
		if got != "1930-06-01T10:00:00Z" {
			t.Fatalf("got %s, want 1930-06-01T10:00:00Z", got)
		}
	}
}
