package file

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// TestSeekResumes: a source that seeks to the position another reached
// after k records delivers exactly the rest, for every k, with replay
// (stragglers, redeliveries, conflicts, partitions) and ordinals.
func TestSeekResumes(t *testing.T) {
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf(`{"id":"e%d","inv":"i%d","ts":"2026-09-01T10:%02d:%02dZ","amount":%d}`, i, i/7, i/60, i%60, i))
	}
	lines[17] = `{"id":` // a broken line
	dir := writeFiles(t, map[string]string{"a.jsonl": strings.Join(lines[:150], "\n"), "b.jsonl": strings.Join(lines[150:], "\n")})
	cfg := func() Config {
		return Config{
			Spec: spec.Source{Type: "file", Path: dir, Format: "jsonl", Ordinal: &spec.Ordinal{Field: "n", Per: "inv"},
				Replay: &spec.Replay{Seed: 5, Delay: spec.Duration(2e9), StragglerFraction: 0.2, MaxDelay: spec.Duration(60e9),
					RedeliverFraction: 0.1, ConflictFraction: 0.05, ConflictField: "amount", Partitions: 3, PartitionBy: "inv"}},
			Fields:         testFields(t, "id:string", "inv:string", "ts:timestamp", "amount:int", "n:int"),
			EventTimeField: "ts",
		}
	}
	open := func() *Source {
		s, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	all := drain(t, open(), 7, dir)
	if len(all) < 300 {
		t.Fatalf("%d records", len(all))
	}
	for _, k := range []int{0, 1, 6, 7, 100, 151, len(all) - 1, len(all)} {
		b := open()
		head := drainN(t, b, k, dir)
		pos := b.Position()
		c := open()
		if err := c.Seek(context.Background(), pos); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		rest := drain(t, c, 13, dir)
		if !slices.Equal(append(head, rest...), all) {
			t.Fatalf("k=%d: head+rest differs from one pass", k)
		}
	}
	// A position beyond the input: the input changed.
	b := open()
	drainN(t, b, len(all), dir)
	short := writeFiles(t, map[string]string{"a.jsonl": strings.Join(lines[:10], "\n")})
	c2 := cfg()
	c2.Spec.Path = short
	s, err := New(c2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Seek(context.Background(), b.Position()); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("seek past the end: %v", err)
	}
}

// drainN reads exactly n records (in batches of at most 5).
func drainN(t *testing.T, s *Source, n int, dir string) []rec {
	t.Helper()
	var out []rec
	for len(out) < n {
		var b sourceBatch
		err := s.Next(context.Background(), &b.Batch, min(5, n-len(out)))
		for j := range b.Meta {
			out = append(out, rec{Row: render(s.schema, &b.Rows[j]), Meta: renderMeta(&b.Meta[j], dir)})
		}
		if err != nil {
			break
		}
	}
	return out
}

type sourceBatch struct{ source.Batch }
