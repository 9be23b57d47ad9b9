package expr

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/row"
)

// TestSQLFunctions evaluates the functions SQL scripts compile into, on
// testRow (ts is 2026-09-01T10:30:00Z, ts_neg 1 ms before the epoch),
// against values worked out by hand from Flink's documented meaning.
func TestSQLFunctions(t *testing.T) {
	s := testSchema(t)
	r := testRow(t, s)
	for _, tc := range []struct {
		src  string
		kind row.Kind
		want string
	}{
		{`char_length("héllo")`, row.KindInt, "5"},
		{`char_length(name)`, row.KindInt, "7"},
		{`char_length(n_str)`, row.KindInt, "null"},
		{`substr("abcdef", 2, 3)`, row.KindString, "bcd"},
		{`substr("abcdef", 5)`, row.KindString, "ef"},
		{`substr("abc", 0, 2)`, row.KindString, "a"},
		{`substr("héllo", 2, 2)`, row.KindString, "él"},
		{`substr("abc", 4)`, row.KindString, ""},
		{`substr("abc", 2, 0)`, row.KindString, ""},
		{`substr("abc", 3, 10)`, row.KindString, "c"},
		{`regexp_extract("a=1&channel_id=42&b=2", "(&|^)channel_id=([^&]*)", 2)`, row.KindString, "42"},
		{`regexp_extract("a=1&channel_id=42&b=2", "(&|^)channel_id=([^&]*)", 0)`, row.KindString, "&channel_id=42"},
		{`regexp_extract("channel_id=7", "(&|^)channel_id=([^&]*)", 1)`, row.KindString, ""},
		{`regexp_extract("query=1", "(&|^)channel_id=([^&]*)", 2)`, row.KindString, "null"},
		{`regexp_extract("ab", "(x)?b", 1)`, row.KindString, "null"},
		{`split_index("https://www.nexmark.com/ab/cd/ef/item.htm", "/", 3)`, row.KindString, "ab"},
		{`split_index("https://www.nexmark.com/ab/cd/ef/item.htm", "/", 0)`, row.KindString, "https:"},
		{`split_index("https://www.nexmark.com/ab/cd/ef/item.htm", "/", 1)`, row.KindString, ""},
		{`split_index("https://www.nexmark.com/ab/cd/ef/item.htm", "/", 6)`, row.KindString, "item.htm"},
		{`split_index("https://www.nexmark.com/ab/cd/ef/item.htm", "/", 7)`, row.KindString, "null"},
		{`split_index("a::b::c", "::", 2)`, row.KindString, "c"},
		{`split_index("a,b", ",", -1)`, row.KindString, "null"},
		{`date_format(ts, "yyyy-MM-dd")`, row.KindString, "2026-09-01"},
		{`date_format(ts, "HH:mm")`, row.KindString, "10:30"},
		{`date_format(ts2, "yyyy-MM-dd HH:mm:ss.SSS")`, row.KindString, "2026-09-01 10:30:00.001"},
		{`date_format(ts_neg, "yyyy-MM-dd HH:mm:ss.SSS")`, row.KindString, "1969-12-31 23:59:59.999"},
		{`date_format(ts, "yyyy/MM/dd'T'HH")`, row.KindString, "2026/09/01T10"},
		{`date_format(n_ts, "yyyy")`, row.KindString, "null"},
		{`count_char("abcabc", "c")`, row.KindInt, "2"},
		{`count_char(event_type, "R")`, row.KindInt, "1"},
		{`count_char(n_str, "a")`, row.KindInt, "0"},
		{`second(ts2)`, row.KindInt, "0"},
		{`second(ts_neg)`, row.KindInt, "59"},
		{`year(ts)`, row.KindInt, "2026"},
		{`month(ts)`, row.KindInt, "9"},
		{`day(ts)`, row.KindInt, "1"},
		{`year(ts_neg)`, row.KindInt, "1969"},
		{`day(ts_neg)`, row.KindInt, "31"},
		{`timestamp_add(ts, 90000) == ts`, row.KindBool, "false"},
		{`int(timestamp_add(ts, 90000)) - int(ts)`, row.KindInt, "90000"},
		{`date_format(timestamp_add(ts, -3600000), "HH:mm")`, row.KindString, "09:30"},
		{`date_format(add_months(ts, 5), "yyyy-MM-dd HH:mm")`, row.KindString, "2027-02-01 10:30"},
		{`date_format(add_months(ts, -9), "yyyy-MM-dd")`, row.KindString, "2025-12-01"},
		{`date_format(add_months(ts, -21), "yyyy-MM-dd")`, row.KindString, "2024-12-01"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			e := compileT(t, s, tc.src)
			if e.Kind() != tc.kind {
				t.Fatalf("Kind() = %s, want %s", e.Kind(), tc.kind)
			}
			v, err := e.Eval(r)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got := v.String(); got != tc.want {
				t.Fatalf("Eval = %q, want %q", got, tc.want)
			}
			checkTyped(t, e, r, v)
		})
	}
}

// TestAddMonthsClamps: the day of month is clamped to the target month's
// last day (Java's plusMonths): 2024-01-31 + 1 month is 2024-02-29, + 13
// months 2025-02-28; 2024-03-31 − 1 month 2024-02-29.
func TestAddMonthsClamps(t *testing.T) {
	s := row.NewSchema()
	f, _ := s.Add("t", row.KindTime)
	r := s.NewRow()
	for _, tc := range []struct {
		from   string
		months int
		want   string
	}{
		{"2024-01-31T08:00:00Z", 1, "2024-02-29T08:00:00Z"},
		{"2024-01-31T08:00:00Z", 13, "2025-02-28T08:00:00Z"},
		{"2024-03-31T00:00:00Z", -1, "2024-02-29T00:00:00Z"},
		{"2024-03-31T00:00:00Z", -12, "2023-03-31T00:00:00Z"},
		{"1970-01-15T00:00:00.250Z", -1, "1969-12-15T00:00:00.250Z"},
	} {
		from, _ := time.Parse(time.RFC3339Nano, tc.from)
		s.Shape(r)
		r.Set(f, row.Time(from.UnixMilli()))
		e := compileT(t, s, "add_months(t, "+itoa(tc.months)+")")
		v, err := e.Eval(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := time.UnixMilli(v.I).UTC().Format("2006-01-02T15:04:05.999Z"); got != strings.Replace(tc.want, ".250", ".25", 1) {
			t.Errorf("add_months(%s, %d) = %s, want %s", tc.from, tc.months, got, tc.want)
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	return string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}

// TestSQLFunctionErrors: constant arguments are checked when compiling.
func TestSQLFunctionErrors(t *testing.T) {
	s := testSchema(t)
	for _, tc := range []struct{ src, msg string }{
		{`regexp_extract(name, "(a)", 2)`, "regexp_extract() needs the group to be a constant int from 0 to 1 (the pattern's groups)"},
		{`regexp_extract(name, event_type, 1)`, "regexp_extract() needs the pattern to be a constant string"},
		{`regexp_extract(name, "(", 1)`, "regexp_extract(): bad pattern"},
		{`split_index(name, "", 1)`, "split_index() needs a non-empty separator"},
		{`count_char(name, "ab")`, `count_char() needs one character, got "ab"`},
		{`date_format(ts, "yyyy-Q")`, "the letter Q is not supported"},
		{`date_format(ts, "yyyy'1'")`, `cannot be written in a Go layout`},
		{`date_format(name, "yyyy")`, "date_format() needs timestamp, not string"},
		{`substr(name)`, "substr() takes 2 or 3 arguments, got 1"},
		{`timestamp_add(ts, amount)`, "timestamp_add() needs int, not decimal"},
	} {
		p, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.src, err)
		}
		_, err = Compile(p, s)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Compile(%q) = %v, want an error with %q", tc.src, err, tc.msg)
		}
	}
}

// TestJavaLayout checks the pattern conversion by hand.
func TestJavaLayout(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"yyyy-MM-dd", "2006-01-02"},
		{"yyyy-MM-dd HH:mm:ss", "2006-01-02 15:04:05"},
		{"yyyy-MM-dd HH:mm:ss.SSS", "2006-01-02 15:04:05.000"},
		{"yy/M/d h:m:s a", "06/1/2 3:4:5 PM"},
		{"yyyy-MM-dd'T'HH:mm:ssXXX", "2006-01-02T15:04:05Z07:00"},
		{"EEE, dd MMM yyyy", "Mon, 02 Jan 2006"},
		{"EEEE MMMM", "Monday January"},
	} {
		got, err := JavaLayout(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("JavaLayout(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"H:mm", "yyyy-MM-dd'T", "SSS", "yyyy1"} {
		if _, err := JavaLayout(bad); err == nil {
			t.Errorf("JavaLayout(%q): no error", bad)
		}
	}
}
