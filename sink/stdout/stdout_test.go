package stdout

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	_ "time/tzdata" // zones in tests do not depend on the machine

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

func TestResults(t *testing.T) {
	ctx := context.Background()
	d := changelog.Desc{
		Key:      []changelog.Column{{Name: "store", Kind: row.KindString}},
		Values:   []changelog.Column{{Name: "orders", Kind: row.KindInt}},
		Timezone: "Asia/Seoul",
	}
	var out bytes.Buffer
	s := New(&out, d)
	rows := []changelog.Row{
		{Op: changelog.Insert, WindowStart: 0, WindowEnd: 60000, Key: []row.Value{row.Str("a")}, Values: []row.Value{row.Int(1)}, Version: 1, WatermarkAt: changelog.WatermarkNone},
		{Op: changelog.UpdateBefore, WindowStart: 0, WindowEnd: 60000, Key: []row.Value{row.Str("a")}, Values: []row.Value{row.Int(1)}, Version: 1, WatermarkAt: 60000},
	}
	if err := s.Write(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("written before Flush: %q", out.String())
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"insert","window_start":"1970-01-01T09:00:00+09:00","window_end":"1970-01-01T09:01:00+09:00","store":"a","orders":1,"version":1,"is_final":false,"watermark_at":null,"updated_at":"1970-01-01T09:00:00+09:00"}
{"op":"update_before","window_start":"1970-01-01T09:00:00+09:00","window_end":"1970-01-01T09:01:00+09:00","store":"a","orders":1,"version":1,"is_final":false,"watermark_at":"1970-01-01T09:01:00+09:00","updated_at":"1970-01-01T09:00:00+09:00"}
`
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

type failWriter struct{}

var errBroken = errors.New("broken pipe")

func (failWriter) Write([]byte) (int, error) { return 0, errBroken }

func TestResultsErrors(t *testing.T) {
	ctx := context.Background()
	s := New(&bytes.Buffer{}, changelog.Desc{Timezone: "Nowhere/Land"})
	if err := s.Write(ctx, nil); err == nil || !strings.Contains(err.Error(), "Nowhere/Land") {
		t.Fatalf("unknown zone: %v", err)
	}
	s = New(failWriter{}, changelog.Desc{})
	if err := s.Write(ctx, []changelog.Row{{}}); err != nil {
		t.Fatal(err) // buffered
	}
	if err := s.Flush(ctx); !errors.Is(err, errBroken) {
		t.Fatalf("Flush: %v, want the writer's error", err)
	}
}
