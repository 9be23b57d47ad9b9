package format

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/row"
)

// testFields builds Fields from "name:kind" pairs; a timestamp written
// "name:timestamp/epoch_ms" or "name:timestamp/london" gets that parser.
func testFields(t testing.TB, specs ...string) Fields {
	t.Helper()
	s := row.NewSchema()
	f := Fields{Schema: s, Time: map[int]*eventtime.Parser{}}
	for _, sp := range specs {
		name, kind, _ := strings.Cut(sp, ":")
		kind, parser, _ := strings.Cut(kind, "/")
		k, err := row.ParseKind(kind)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := s.Add(name, k)
		if err != nil {
			t.Fatal(err)
		}
		switch parser {
		case "":
		case "epoch_ms":
			f.Time[fd.Index] = &eventtime.Parser{Format: eventtime.EpochMs}
		case "epoch_s":
			f.Time[fd.Index] = &eventtime.Parser{Format: eventtime.EpochS}
		case "london":
			loc, err := time.LoadLocation("Europe/London")
			if err != nil {
				t.Fatal(err)
			}
			f.Time[fd.Index] = &eventtime.Parser{Format: eventtime.Layout, Layout: "2006-01-02 15:04:05", Loc: loc}
		case "derived":
			f.Derived = append(f.Derived, fd.Index)
		default:
			t.Fatalf("unknown parser %q", parser)
		}
	}
	return f
}

// render shows every field of r as name=value: strings quoted, decimals
// with their scale, times in RFC 3339 UTC with milliseconds when present.
func render(s *row.Schema, r *row.Row) string {
	var b []byte
	for i, f := range s.Fields {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, f.Name...)
		b = append(b, '=')
		v := r.Get(f)
		if v.Kind == row.KindString {
			b = strconv.AppendQuote(b, v.S)
			continue
		}
		b = v.AppendText(b, nil)
	}
	return string(b)
}

// csvRecord builds the record of fields as if parsed from their text
// joined by commas (no quotes).
func csvRecord(fields ...string) *CSVRecord {
	rec := &CSVRecord{}
	for i, f := range fields {
		if i > 0 {
			rec.Raw = append(rec.Raw, ',')
		}
		rec.Starts = append(rec.Starts, len(rec.Raw))
		rec.Raw = append(rec.Raw, f...)
	}
	for i, f := range fields {
		rec.Fields = append(rec.Fields, rec.Raw[rec.Starts[i]:rec.Starts[i]+len(f)])
	}
	return rec
}
