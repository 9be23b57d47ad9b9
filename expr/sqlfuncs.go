package expr

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark/row"
)

// The functions SQL scripts need (Flink SQL's built-ins of the same
// meaning; sql/planner translates calls into them). Times are in UTC.
func init() {
	funcs["char_length"] = funcSpec{1, charLengthFunc}
	funcs["substr"] = funcSpec{-3, substrFunc}
	funcs["regexp_extract"] = funcSpec{3, regexpExtractFunc}
	funcs["split_index"] = funcSpec{3, splitIndexFunc}
	funcs["date_format"] = funcSpec{2, dateFormatFunc}
	funcs["count_char"] = funcSpec{2, countCharFunc}
	funcs["second"] = funcSpec{1, timePart("second", 1000, 60)}
	funcs["year"] = funcSpec{1, calendarPart("year")}
	funcs["month"] = funcSpec{1, calendarPart("month")}
	funcs["day"] = funcSpec{1, calendarPart("day")}
	funcs["timestamp_add"] = funcSpec{2, timestampAddFunc}
	funcs["add_months"] = funcSpec{2, addMonthsFunc}
}

// charLengthFunc: char_length(s), the number of characters (runes).
func charLengthFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("char_length", args[0], row.KindString); err != nil {
		return nil, err
	}
	return &node{kind: row.KindInt, i: un(c, args[0].strs(), func(s string) (int64, error) {
		return int64(utf8.RuneCountInString(s)), nil
	})}, nil
}

// substrFunc: substr(s, pos[, n]), SQL's SUBSTRING: the characters from
// position pos (1-based) on, n of them (all without n); positions before
// 1 count toward n, as the SQL standard says (substr("abc", 0, 2) is "a").
func substrFunc(c *compiler, args []*node, at int) (*node, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, c.errAt(at, "substr() takes 2 or 3 arguments, got %d", len(args))
	}
	if err := c.argKind("substr", args[0], row.KindString); err != nil {
		return nil, err
	}
	for _, a := range args[1:] {
		if err := c.argKind("substr", a, row.KindInt); err != nil {
			return nil, err
		}
	}
	s, pos := args[0].strs(), args[1].ints()
	var n fn[int64]
	if len(args) == 3 {
		n = args[2].ints()
	}
	return &node{kind: row.KindString, s: func(r *row.Row) (string, bool, error) {
		v, ok, err := s(r)
		if err != nil || !ok {
			return "", false, err
		}
		p, ok, err := pos(r)
		if err != nil || !ok {
			return "", false, err
		}
		end := int64(1) << 62
		if n != nil {
			k, ok, err := n(r)
			if err != nil || !ok {
				return "", false, err
			}
			if k < 0 {
				return "", false, c.evalErr(fmt.Errorf("%w: substr length %d is negative", ErrConversion, k))
			}
			end = p + k
		}
		if p < 1 {
			p = 1
		}
		if end <= p {
			return "", true, nil
		}
		// Walk runes to byte offsets.
		from, to := len(v), len(v)
		i := int64(1)
		for off := range v {
			if i == p {
				from = off
			}
			if i == end {
				to = off
				break
			}
			i++
		}
		if from > to {
			return "", true, nil
		}
		return v[from:to], true, nil
	}}, nil
}

// constString returns a constant string argument's value.
func (c *compiler) constString(name string, a *node, what string) (string, error) {
	if !a.lit || a.val.Kind != row.KindString {
		return "", c.errAt(a.at, "%s() needs %s to be a constant string", name, what)
	}
	return a.val.S, nil
}

// regexpExtractFunc: regexp_extract(s, "re", i), the text of group i (0:
// the whole match) of the first match of the constant pattern (Go RE2
// syntax), null without a match or when group i took no part.
func regexpExtractFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("regexp_extract", args[0], row.KindString); err != nil {
		return nil, err
	}
	pat, err := c.constString("regexp_extract", args[1], "the pattern")
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, c.errAt(args[1].at, "regexp_extract(): bad pattern: %v", err)
	}
	g := args[2]
	if !g.lit || g.val.Kind != row.KindInt || g.val.I < 0 || int(g.val.I) > re.NumSubexp() {
		return nil, c.errAt(g.at, "regexp_extract() needs the group to be a constant int from 0 to %d (the pattern's groups)", re.NumSubexp())
	}
	grp := int(g.val.I)
	s := args[0].strs()
	return &node{kind: row.KindString, s: func(r *row.Row) (string, bool, error) {
		v, ok, err := s(r)
		if err != nil || !ok {
			return "", false, err
		}
		m := re.FindStringSubmatchIndex(v)
		if m == nil || m[2*grp] < 0 {
			return "", false, nil
		}
		return v[m[2*grp]:m[2*grp+1]], true, nil
	}}, nil
}

// splitIndexFunc: split_index(s, "sep", i), the i-th (0-based) piece of s
// split at the constant separator, null when there is no such piece.
func splitIndexFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("split_index", args[0], row.KindString); err != nil {
		return nil, err
	}
	sep, err := c.constString("split_index", args[1], "the separator")
	if err != nil {
		return nil, err
	}
	if sep == "" {
		return nil, c.errAt(args[1].at, "split_index() needs a non-empty separator")
	}
	if err := c.argKind("split_index", args[2], row.KindInt); err != nil {
		return nil, err
	}
	s, idx := args[0].strs(), args[2].ints()
	return &node{kind: row.KindString, s: func(r *row.Row) (string, bool, error) {
		v, ok, err := s(r)
		if err != nil || !ok {
			return "", false, err
		}
		i, ok, err := idx(r)
		if err != nil || !ok || i < 0 {
			return "", false, err
		}
		for ; i > 0; i-- {
			k := strings.Index(v, sep)
			if k < 0 {
				return "", false, nil
			}
			v = v[k+len(sep):]
		}
		if k := strings.Index(v, sep); k >= 0 {
			v = v[:k]
		}
		return v, true, nil
	}}, nil
}

// dateFormatFunc: date_format(t, "pattern") renders a timestamp in UTC
// with a Java SimpleDateFormat pattern (Flink's DATE_FORMAT): yyyy-MM-dd
// HH:mm:ss.SSS and the like (JavaLayout).
func dateFormatFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("date_format", args[0], row.KindTime); err != nil {
		return nil, err
	}
	pat, err := c.constString("date_format", args[1], "the pattern")
	if err != nil {
		return nil, err
	}
	layout, err := JavaLayout(pat)
	if err != nil {
		return nil, c.errAt(args[1].at, "date_format(): %v", err)
	}
	t := args[0].ints()
	// Consecutive records often share their time: the last rendering is
	// kept (a string is immutable, so it can be returned again; an
	// atomic pointer, as tasks share a compiled expression).
	var last atomic.Pointer[formatted]
	return &node{kind: row.KindString, s: func(r *row.Row) (string, bool, error) {
		ms, ok, err := t(r)
		if err != nil || !ok {
			return "", false, err
		}
		if f := last.Load(); f != nil && f.ms == ms {
			return f.s, true, nil
		}
		f := &formatted{ms: ms, s: time.UnixMilli(ms).UTC().Format(layout)}
		last.Store(f)
		return f.s, true, nil
	}}, nil
}

// formatted is date_format's last rendering.
type formatted struct {
	ms int64
	s  string
}

// JavaLayout turns a Java SimpleDateFormat pattern (yyyy-MM-dd HH:mm:ss,
// as Flink's DATE_FORMAT and TO_TIMESTAMP take) into a Go time layout.
// Letters: y, M (MM, MMM, MMMM), d, H, h, m, s, S (after ss.), a, E, z,
// Z, X; 'quoted' text; punctuation and spaces as they are. Other letters,
// and digits, are errors (a Go layout cannot quote them).
func JavaLayout(p string) (string, error) {
	var b strings.Builder
	rs := []rune(p)
	for i := 0; i < len(rs); {
		c := rs[i]
		j := i
		for j < len(rs) && rs[j] == c {
			j++
		}
		n := j - i
		switch {
		case c == '\'':
			k := i + 1
			for k < len(rs) && rs[k] != '\'' {
				k++
			}
			if k >= len(rs) {
				return "", fmt.Errorf("pattern %q: unterminated quote", p)
			}
			lit := string(rs[i+1 : k])
			if strings.ContainsAny(lit, "0123456789") || strings.ContainsAny(lit, "JFMASONDjfmasond") && len(lit) > 2 {
				return "", fmt.Errorf("pattern %q: the quoted text %q cannot be written in a Go layout", p, lit)
			}
			b.WriteString(lit)
			i = k + 1
			continue
		case c == 'y':
			if n == 2 {
				b.WriteString("06")
			} else {
				b.WriteString("2006")
			}
		case c == 'M':
			switch n {
			case 1:
				b.WriteString("1")
			case 2:
				b.WriteString("01")
			case 3:
				b.WriteString("Jan")
			default:
				b.WriteString("January")
			}
		case c == 'd':
			b.WriteString(map[bool]string{true: "2", false: "02"}[n == 1])
		case c == 'H':
			if n == 1 {
				return "", fmt.Errorf("pattern %q: H (an hour without padding) has no Go layout; write HH", p)
			}
			b.WriteString("15")
		case c == 'h':
			b.WriteString(map[bool]string{true: "3", false: "03"}[n == 1])
		case c == 'm':
			b.WriteString(map[bool]string{true: "4", false: "04"}[n == 1])
		case c == 's':
			b.WriteString(map[bool]string{true: "5", false: "05"}[n == 1])
		case c == 'S':
			if i == 0 || rs[i-1] != '.' || i < 2 || rs[i-2] != 's' {
				return "", fmt.Errorf("pattern %q: S (fractions of a second) only right after ss.", p)
			}
			b.WriteString(strings.Repeat("0", n))
		case c == 'a':
			b.WriteString("PM")
		case c == 'E':
			if n >= 4 {
				b.WriteString("Monday")
			} else {
				b.WriteString("Mon")
			}
		case c == 'z':
			b.WriteString("MST")
		case c == 'Z':
			b.WriteString("-0700")
		case c == 'X':
			switch n {
			case 1:
				b.WriteString("Z07")
			case 2:
				b.WriteString("Z0700")
			default:
				b.WriteString("Z07:00")
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			return "", fmt.Errorf("pattern %q: the letter %c is not supported (y M d H h m s S a E z Z X are)", p, c)
		case c >= '0' && c <= '9':
			return "", fmt.Errorf("pattern %q: a digit cannot be written in a Go layout", p)
		default:
			b.WriteString(string(rs[i:j]))
		}
		i = j
	}
	return b.String(), nil
}

// countCharFunc: count_char(s, "c"), how many times the one-character
// string c occurs in s; 0 for a null s (Nexmark q14's CountChar).
func countCharFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("count_char", args[0], row.KindString); err != nil {
		return nil, err
	}
	ch, err := c.constString("count_char", args[1], "the character")
	if err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(ch) != 1 {
		return nil, c.errAt(args[1].at, "count_char() needs one character, got %q", ch)
	}
	s := args[0].strs()
	return &node{kind: row.KindInt, i: func(r *row.Row) (int64, bool, error) {
		v, ok, err := s(r)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			return 0, true, nil
		}
		return int64(strings.Count(v, ch)), true, nil
	}}, nil
}

// calendarPart: year(t), month(t) (1..12), day(t) (1..31), in UTC.
func calendarPart(name string) func(*compiler, []*node, int) (*node, error) {
	return func(c *compiler, args []*node, _ int) (*node, error) {
		if err := c.argKind(name, args[0], row.KindTime); err != nil {
			return nil, err
		}
		return &node{kind: row.KindInt, i: un(c, args[0].ints(), func(ms int64) (int64, error) {
			y, m, d := time.UnixMilli(ms).UTC().Date()
			switch name {
			case "year":
				return int64(y), nil
			case "month":
				return int64(m), nil
			}
			return int64(d), nil
		})}, nil
	}
}

// timestampAddFunc: timestamp_add(t, ms), the timestamp ms later (an
// overflow is an error).
func timestampAddFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("timestamp_add", args[0], row.KindTime); err != nil {
		return nil, err
	}
	if err := c.argKind("timestamp_add", args[1], row.KindInt); err != nil {
		return nil, err
	}
	return &node{kind: row.KindTime, i: bin(c, args[0].ints(), args[1].ints(), addInt)}, nil
}

// addMonthsFunc: add_months(t, n), t n calendar months later in UTC, the
// day of month clamped to the month's last (Java's plusMonths).
func addMonthsFunc(c *compiler, args []*node, _ int) (*node, error) {
	if err := c.argKind("add_months", args[0], row.KindTime); err != nil {
		return nil, err
	}
	if err := c.argKind("add_months", args[1], row.KindInt); err != nil {
		return nil, err
	}
	return &node{kind: row.KindTime, i: bin(c, args[0].ints(), args[1].ints(), func(ms, n int64) (int64, error) {
		if n > 1<<20 || n < -(1<<20) {
			return 0, fmt.Errorf("%w: add_months by %d", ErrOverflow, n)
		}
		t := time.UnixMilli(ms).UTC()
		y, m, d := t.Date()
		total := int64(y)*12 + int64(m-1) + n
		ny, nm := total/12, time.Month(total%12+1)
		if total%12 < 0 {
			ny, nm = ny-1, time.Month(total%12+13)
		}
		last := time.Date(int(ny), nm+1, 0, 0, 0, 0, 0, time.UTC).Day()
		if d > last {
			d = last
		}
		out := time.Date(int(ny), nm, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		return out.UnixMilli(), nil
	})}, nil
}
