package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/eventtime"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// writeFiles creates files (name → content) in a new temporary directory
// and returns the directory.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testFields builds Fields from "name:kind" pairs; "name:timestamp/london"
// reads a local Europe/London layout, "name:timestamp/epoch_ms" epoch ms.
func testFields(t testing.TB, specs ...string) format.Fields {
	t.Helper()
	s := row.NewSchema()
	f := format.Fields{Schema: s, Time: map[int]*eventtime.Parser{}}
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
		case "london":
			loc, err := time.LoadLocation("Europe/London")
			if err != nil {
				t.Fatal(err)
			}
			f.Time[fd.Index] = &eventtime.Parser{Format: eventtime.Layout, Layout: "2006-01-02 15:04:05", Loc: loc}
		default:
			t.Fatalf("unknown parser %q", parser)
		}
	}
	return f
}

// rec is one delivered record, rendered.
type rec struct {
	Row  string
	Meta string
}

// drain reads s to the end in batches of max and renders every record.
// Paths in positions are shown relative to dir.
func drain(t testing.TB, s *Source, max int, dir string) []rec {
	t.Helper()
	var out []rec
	var b source.Batch
	for i := 0; ; i++ {
		if i > 10_000_000 {
			t.Fatal("source does not end")
		}
		b.Reset()
		st, err := s.Next(context.Background(), &b, max)
		if b.Len() > max {
			t.Fatalf("batch of %d records, max %d", b.Len(), max)
		}
		for j := range b.Meta {
			out = append(out, rec{Row: render(s.schema, &b.Rows[j]), Meta: renderMeta(&b.Meta[j], dir)})
		}
		if st == source.End {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var b2 source.Batch
	if st, err := s.Next(context.Background(), &b2, max); err != nil || st != source.End || b2.Len() != 0 {
		t.Fatalf("Next after EOF: %v, %d records", err, b2.Len())
	}
	return out
}

// render shows every field of r as name=value: strings quoted, decimals
// with their scale, times in RFC 3339 UTC.
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

// renderMeta shows a Meta as "p=0 at=<arrival> file:line@offset raw=<raw>"
// with " redelivery" and " err=<rule> <field>: <reason>" when set.
func renderMeta(m *source.Meta, dir string) string {
	at := "none"
	if m.Arrival != source.NoArrival {
		at = row.FormatTime(m.Arrival, nil)
	}
	path, err := filepath.Rel(dir, m.Pos.Source)
	if err != nil {
		path = m.Pos.Source
	}
	s := fmt.Sprintf("p=%d/%s at=%s %s:%d@%d raw=%s", m.Partition, m.Pos.Partition, at, filepath.ToSlash(path), m.Pos.Line, m.Pos.Offset, strconv.Quote(string(m.Raw)))
	if m.Redelivery {
		s += " redelivery"
	}
	if m.Err != nil {
		s += " err=" + m.Err.Rule + " " + m.Err.Error()
	}
	return s
}

// rows returns the rendered rows of recs.
func rows(recs []rec) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Row
	}
	return out
}

// diff reports the first difference between got and want.
func diff(t *testing.T, got, want []rec) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w rec
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("record %d\n got: %s\n      %s\nwant: %s\n      %s", i, g.Row, g.Meta, w.Row, w.Meta)
		}
	}
}
