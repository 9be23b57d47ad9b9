package jsonl

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zones in tests do not depend on the machine

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

var desc = changelog.Desc{
	Stage:    "revenue",
	Key:      []changelog.Column{{Name: "store", Kind: row.KindString}},
	Values:   []changelog.Column{{Name: "revenue", Kind: row.KindDecimal}},
	Timezone: "Asia/Seoul",
	EmitMode: "retract",
}

func ms(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

func result(t *testing.T, op changelog.Op, version uint64, revenue string) changelog.Row {
	t.Helper()
	d, err := row.ParseDecimal([]byte(revenue))
	if err != nil {
		t.Fatal(err)
	}
	return changelog.Row{
		Op:          op,
		WindowStart: ms(t, "2026-09-01T01:00:00Z"),
		WindowEnd:   ms(t, "2026-09-01T01:01:00Z"),
		Key:         []row.Value{row.Str("s-1")},
		Values:      []row.Value{row.Dec(d)},
		Version:     version,
		IsFinal:     op == changelog.Delete,
		WatermarkAt: changelog.WatermarkInfinity,
		UpdatedAt:   ms(t, "2026-09-01T01:02:00Z"),
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResults(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out", "nested", "revenue.jsonl")
	s, err := NewResults(path, desc)
	if err != nil {
		t.Fatal(err)
	}
	rows := []changelog.Row{
		result(t, changelog.Insert, 1, "20.00"),
		result(t, changelog.UpdateBefore, 1, "20.00"),
		result(t, changelog.UpdateAfter, 2, "35.50"),
		result(t, changelog.Delete, 3, "35.50"),
	}
	if err := s.Write(ctx, rows[:2]); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("rows reached the file before Flush: %q", got)
	}
	if err := s.Write(ctx, rows[2:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const tail = `"window_start":"2026-09-01T10:00:00+09:00","window_end":"2026-09-01T10:01:00+09:00","store":"s-1",`
	want := `{"op":"insert",` + tail + `"revenue":20.00,"version":1,"is_final":false,"watermark_at":"infinity","updated_at":"2026-09-01T10:02:00+09:00"}
{"op":"update_before",` + tail + `"revenue":20.00,"version":1,"is_final":false,"watermark_at":"infinity","updated_at":"2026-09-01T10:02:00+09:00"}
{"op":"update_after",` + tail + `"revenue":35.50,"version":2,"is_final":false,"watermark_at":"infinity","updated_at":"2026-09-01T10:02:00+09:00"}
{"op":"delete",` + tail + `"revenue":35.50,"version":3,"is_final":true,"watermark_at":"infinity","updated_at":"2026-09-01T10:02:00+09:00"}
`
	if got := readFile(t, path); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	for i, line := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		got, err := changelog.DecodeRowJSON([]byte(line), &desc)
		if err != nil {
			t.Fatal(err)
		}
		if got.Op != rows[i].Op || got.Version != rows[i].Version || !got.Values[0].Equal(rows[i].Values[0]) {
			t.Fatalf("line %d decodes to %+v", i+1, got)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(ctx, rows); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Write after Close: %v, want fs.ErrClosed", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Flush after Close: %v, want fs.ErrClosed", err)
	}
}

func TestResultsTruncatesAndClosesWithDoneContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, []byte("old run\nold run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := NewResults(path, changelog.Desc{Values: desc.Values}) // UTC
	if err != nil {
		t.Fatal(err)
	}
	// The truncation waits for the first write (a refused start aborts
	// the sink before it: TestAbortKeepsTheFile).
	if got := readFile(t, path); got != "old run\nold run\n" {
		t.Fatalf("truncated at open: %q", got)
	}
	r := result(t, changelog.Insert, 1, "1.5")
	r.Key = nil
	if err := s.Write(context.Background(), []changelog.Row{r}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("not truncated at the first write: %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(ctx, []changelog.Row{r}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a done context: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"insert","window_start":"2026-09-01T01:00:00Z","window_end":"2026-09-01T01:01:00Z","revenue":1.5,"version":1,"is_final":false,"watermark_at":"infinity","updated_at":"2026-09-01T01:02:00Z"}` + "\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestNewResultsErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewResults(filepath.Join(dir, "a.jsonl"), changelog.Desc{Timezone: "Mars/Olympus"}); err == nil || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Fatalf("unknown zone: %v", err)
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewResults(filepath.Join(blocker, "a.jsonl"), desc); err == nil {
		t.Fatal("parent is a file: no error")
	}
}

func TestRecords(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "side", "late.jsonl")
	s, err := NewRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	late := changelog.LateRecord{
		Stage: "revenue", Event: []byte(`{"id":"e1"}`),
		EventTime: 0, ObservedAt: 1000, CurrentWatermark: 60000, LatenessMs: 60000,
		Reason: "window closed", Position: changelog.Position{Source: "in.jsonl", Line: 2},
	}
	obj := changelog.AppendLateJSON(nil, &late, nil)
	if err := s.WriteRecord(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(ctx, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(ctx, []byte("{\"a\":\n1}")); !errors.Is(err, ErrNewline) {
		t.Fatalf("newline: %v, want ErrNewline", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := `{"stage":"revenue","event":{"id":"e1"},"event_time":"1970-01-01T00:00:00Z","observed_at":"1970-01-01T00:00:01Z",` +
		`"current_watermark":"1970-01-01T00:01:00Z","lateness_ms":60000,"reason":"window closed","source":"in.jsonl:2"}` + "\n" +
		`{"a":1}` + "\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(ctx, obj); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("WriteRecord after Close: %v", err)
	}
}

// BenchmarkResults writes 100k rows and flushes: rows/s through the file
// sink, fsync included once.
func BenchmarkResults(b *testing.B) {
	rows := make([]changelog.Row, 1000)
	for i := range rows {
		d, _ := row.ParseDecimal([]byte("1234.56"))
		rows[i] = changelog.Row{Op: changelog.UpdateAfter, WindowStart: int64(i) * 60000, WindowEnd: int64(i+1) * 60000,
			Key: []row.Value{row.Str("store-17")}, Values: []row.Value{row.Dec(d)}, Version: 3, UpdatedAt: 1}
	}
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	s, err := NewResults(path, desc)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for j := 0; j < 100; j++ {
			if err := s.Write(ctx, rows); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*100*float64(len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// TestAbortKeepsTheFile: a sink opened for a run from the start and
// aborted (the run's start was refused after it opened) leaves the
// previous run's file as it was; one closed without a write empties it
// (the run's output is empty); Abort drops buffered lines.
func TestAbortKeepsTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := "old run\nold run\n"
	for _, tc := range []struct {
		name string
		open func(path string) (interface {
			Abort(context.Context) error
			Close(context.Context) error
		}, error)
	}{
		{"results", func(p string) (interface {
			Abort(context.Context) error
			Close(context.Context) error
		}, error) {
			return NewResults(p, changelog.Desc{Values: desc.Values})
		}},
		{"records", func(p string) (interface {
			Abort(context.Context) error
			Close(context.Context) error
		}, error) {
			return NewRecords(p)
		}},
	} {
		path := filepath.Join(dir, tc.name+".jsonl")
		os.WriteFile(path, []byte(old), 0o644)
		s, err := tc.open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Abort(ctx); err != nil {
			t.Fatalf("%s: second Abort: %v", tc.name, err)
		}
		if got := readFile(t, path); got != old {
			t.Fatalf("%s: aborted: %q, want %q", tc.name, got, old)
		}
		s, err = tc.open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != "" {
			t.Fatalf("%s: closed without a write: %q, want it empty", tc.name, got)
		}
	}
	path := filepath.Join(dir, "buffered.jsonl")
	os.WriteFile(path, []byte(old), 0o644)
	r, err := NewRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteRecord(ctx, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("aborted after a write: %q, want it empty (truncated at the write, the line dropped)", got)
	}
}
