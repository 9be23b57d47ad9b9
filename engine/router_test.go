package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/internal/partest"
	"github.com/tidemark/tidemark/spec"
)

// TestWatermarkIndependentOfBatches: with partition_field, the same
// records give the same outputs whether the file is read one record at a
// time or a thousand at a time (docs/semantics.md, "Watermarks": a
// partition found in the data counts from its first valid record). A
// partition first seen in the first read batch used to hold the watermark
// back from the start, one first seen in a later batch not: with batches
// of 1024, p1's 10:00:30 event below was on time; with batches of 1, too
// late.
func TestWatermarkIndependentOfBatches(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := []string{
		`{"p":"p0","at":"2026-09-01T10:00:00Z","ts":"2026-09-01T10:00:00Z","k":"a"}`,
		`{"p":"p0","at":"2026-09-01T10:00:10Z","ts":"2026-09-01T10:01:10Z","k":"a"}`,
		`{"p":"p1","at":"2026-09-01T10:00:20Z","ts":"2026-09-01T10:00:30Z","k":"a"}`,
		`{"p":"p2","at":"2026-09-01T10:00:25Z","ts":"2026-09-01T10:01:15Z","k":"b"}`,
		`{"p":"p1","at":"2026-09-01T10:00:30Z","ts":"2026-09-01T10:01:20Z","k":"b"}`,
		`{"p":"p0","at":"2026-09-01T10:00:40Z","ts":"2026-09-01T10:02:00Z","k":"a"}`,
		`{"p":"p2","at":"2026-09-01T10:00:45Z","ts":"2026-09-01T10:01:05Z","k":"b"}`,
	}
	// Many more partitions, each first seen at a different place.
	for i := range 40 {
		at := time.Date(2026, 9, 1, 10, 1, i, 0, time.UTC)
		lines = append(lines, fmt.Sprintf(`{"p":"q%d","at":"%s","ts":"%s","k":"c"}`, i%9, at.Format(time.RFC3339), at.Add(-time.Duration(i%7)*10*time.Second).Format(time.RFC3339)))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func() *spec.Pipeline {
		p := &spec.Pipeline{
			Name:       "batches",
			Source:     spec.Source{Type: "file", Path: in, Format: "jsonl", ArrivalTimeField: "at", PartitionField: "p"},
			EventTime:  spec.EventTime{Field: "ts", IdleTimeout: spec.Duration(20 * time.Second)},
			Key:        []string{"k"},
			Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
			Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
			Late:       spec.Late{Policy: "side_output"},
		}
		partest.Prepare(p)
		p.Defaults()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ref := partest.Run(t, build(), nil, 1, engine.Options{BatchSize: 1})
	for _, n := range []int{2, 3, 5, 1024} {
		partest.Equal(t, fmt.Sprintf("batch size 1 vs %d", n), ref, partest.Run(t, build(), nil, 1, engine.Options{BatchSize: n}))
	}
	// p1's first event (10:00:30, line 3) comes after p0 alone moved the
	// watermark to 10:01:10 and closed [10:00, 10:01): too late, and the
	// only record of the first partitions that is.
	late := ref.Sets["late batches"]
	if len(late) == 0 || !strings.Contains(late[0], `"ts":"2026-09-01T10:00:30Z"`) {
		t.Fatalf("late records: %v", late)
	}
	for _, l := range late[1:] {
		if strings.Contains(l, `"p":"p`) {
			t.Fatalf("another late record of p0–p2: %s", l)
		}
	}
}
