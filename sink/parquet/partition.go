package parquet

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// HiveNull is the directory value of a null partition column (Hive's
// __HIVE_DEFAULT_PARTITION__, which Spark, Trino and DuckDB read as null).
const HiveNull = "__HIVE_DEFAULT_PARTITION__"

// partitioner maps a result row to its partition directory ("" for none).
type partitioner struct {
	terms []term
	loc   *time.Location
	buf   []byte
}

// term is one level of the partition path.
type term struct {
	name  string // directory name: window_day, window_hour or the column
	hours bool   // hour rather than day
	time  bool   // a term of the window's start (event_time for a select stage)
	key   int    // index of the key column otherwise
	// value is the index of a select stage's column (key −1), SQL's
	// PARTITIONED BY (dt, hm) of a query without a group key.
	value int
}

// newPartitioner compiles partition_by for rows of d: "day" and "hour"
// are the window's start (a select stage: the event time) in the stage's
// zone, directories window_day=2011-12-09 and window_hour=2011-12-09T10; a
// name of a group-key column is that column, name=value. Errors: another
// name, naming the accepted ones. A select stage (no key) takes its own
// columns instead, by name.
func newPartitioner(by []string, d changelog.Desc) (*partitioner, error) {
	p := &partitioner{loc: time.UTC}
	if d.Timezone != "" {
		loc, err := time.LoadLocation(d.Timezone)
		if err != nil {
			return nil, err
		}
		p.loc = loc
	}
	for _, b := range by {
		switch b {
		case "day":
			p.terms = append(p.terms, term{name: "window_day", time: true})
		case "hour":
			p.terms = append(p.terms, term{name: "window_hour", time: true, hours: true})
		default:
			k := -1
			for i, c := range d.Key {
				if c.Name == b {
					k = i
				}
			}
			if d.Stateless {
				v := -1
				for i, c := range d.Values {
					if c.Name == b {
						v = i
					}
				}
				if v < 0 {
					cols := make([]string, 0, len(d.Values))
					for _, c := range d.Values {
						cols = append(cols, c.Name)
					}
					return nil, fmt.Errorf("partition_by %q: want day, hour or a column of the select stage (%s)", b, strings.Join(cols, ", "))
				}
				p.terms = append(p.terms, term{name: b, key: -1, value: v})
				continue
			}
			if k < 0 {
				keys := make([]string, 0, len(d.Key))
				for _, c := range d.Key {
					keys = append(keys, c.Name)
				}
				return nil, fmt.Errorf("partition_by %q: want day, hour or a group-key column (%s)", b, strings.Join(keys, ", "))
			}
			p.terms = append(p.terms, term{name: b, key: k})
		}
	}
	return p, nil
}

// dir returns r's partition directory, valid until the next call.
func (p *partitioner) dir(r *changelog.Row) string {
	if len(p.terms) == 0 {
		return ""
	}
	b := p.buf[:0]
	for i, t := range p.terms {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, t.name...)
		b = append(b, '=')
		if t.time {
			tm := time.UnixMilli(r.WindowStart).In(p.loc)
			if t.hours {
				b = tm.AppendFormat(b, "2006-01-02T15")
			} else {
				b = tm.AppendFormat(b, "2006-01-02")
			}
			continue
		}
		if t.key < 0 {
			b = appendPartValue(b, r.Values[t.value])
			continue
		}
		b = appendPartValue(b, r.Key[t.key])
	}
	p.buf = b
	return string(b)
}

// appendPartValue appends a value as a directory name, escaped as Hive
// does (FileUtils.escapePathName: %XX for control characters and
// "#%'*/:=?\{[]^).
func appendPartValue(b []byte, v row.Value) []byte {
	if v.IsNull() {
		return append(b, HiveNull...)
	}
	var s string
	switch v.Kind {
	case row.KindString:
		s = v.S
	case row.KindTime:
		s = row.FormatTime(v.I, time.UTC)
	default:
		s = v.String()
	}
	if s == "" {
		return append(b, HiveNull...)
	}
	return EscapePartValue(b, s)
}

// EscapePartValue appends s escaped as a Hive partition directory value.
func EscapePartValue(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			b = append(b, '%', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// recordPartitioner maps a side-output record to its directory: "kind"
// (kind=late) and "day" (day=2011-12-09 of observed_at, else event_time,
// in UTC; HiveNull when the record has neither).
type recordPartitioner struct{ by []string }

func newRecordPartitioner(by []string) (*recordPartitioner, error) {
	for _, b := range by {
		if b != "kind" && b != "day" {
			return nil, fmt.Errorf("partition_by %q: a side output is partitioned by kind or day", b)
		}
	}
	return &recordPartitioner{by: by}, nil
}

func (p *recordPartitioner) dir(kind, observedAt, eventTime string) string {
	var b []byte
	for i, t := range p.by {
		if i > 0 {
			b = append(b, '/')
		}
		if t == "kind" {
			b = append(b, "kind="...)
			b = EscapePartValue(b, kind)
			continue
		}
		b = append(b, "day="...)
		ts := observedAt
		if ts == "" {
			ts = eventTime
		}
		tm, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			b = append(b, HiveNull...)
			continue
		}
		b = tm.UTC().AppendFormat(b, "2006-01-02")
	}
	return string(b)
}
