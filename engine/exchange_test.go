package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/task"
)

// TestExchangePeakBytes: Summary.ExchangePeakBytes is 0 at one task (no
// packets) and, at two and three tasks, at least the bytes of the rows a
// firing sends to the next stage in one round: keys distinct keys in one
// hour-long window that closes at the end of the input, so the first
// stage's every row (RowsEmitted) crosses to the second stage in the last
// round, each an item and a 29-byte firing tail at least. The packets of
// a round are all sent before the first is taken and released (a node
// takes its inputs once every sender has sent them), so the peak holds
// them all: the exchange's memory grows with a firing's size.
func TestExchangePeakBytes(t *testing.T) {
	const keys = 3000
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	base := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range keys {
		fmt.Fprintf(&b, `{"ts":%q,"k":"k%d","amount":%d}`+"\n", base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i, i%7)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := func(out string) *spec.Pipeline {
		return &spec.Pipeline{
			Name: "exchange", KeyGroups: 16,
			Source: spec.Source{Type: "file", Path: in, Format: "jsonl",
				Schema: spec.FieldTypes{{Name: "amount", Type: "int"}}},
			EventTime: spec.EventTime{Field: "ts", OutOfOrderness: spec.Duration(time.Second)},
			Stages: []spec.Stage{{
				Name: "per_key", Key: []string{"k"}, Window: spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
				Aggregates: spec.NamedExprs{{Name: "total", Expr: "sum(amount)"}},
				Emit:       spec.Emit{Mode: "final"},
			}, {
				Name: "per_total", Input: "per_key", Key: []string{"total"},
				Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Hour)},
				Aggregates: spec.NamedExprs{{Name: "n", Expr: "count()"}},
				Emit:       spec.Emit{Mode: "final"},
				Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "b.jsonl")}},
			}},
		}
	}
	for _, par := range []int{1, 2, 3} {
		sum := runPart(t, pipeline(filepath.Join(dir, fmt.Sprint(par))), par, 0)
		if got := sum.Stages[0].RowsEmitted; got != keys {
			t.Fatalf("parallelism %d: per_key emitted %d rows, want %d", par, got, keys)
		}
		if got := sum.Stages[1].RowsEmitted; got != 7 {
			t.Fatalf("parallelism %d: per_total emitted %d rows, want 7 (totals 0..6)", par, got)
		}
		if par == 1 {
			if sum.ExchangePeakBytes != 0 {
				t.Fatalf("parallelism 1: exchange peak %d bytes, want 0", sum.ExchangePeakBytes)
			}
			continue
		}
		least := int64(keys) * int64(unsafe.Sizeof(task.Item{})+29)
		if sum.ExchangePeakBytes < least {
			t.Fatalf("parallelism %d: exchange peak %d bytes, want at least %d (%d rows of one firing)", par, sum.ExchangePeakBytes, least, keys)
		}
		t.Logf("parallelism %d: exchange peak %d bytes (%d per row of the firing)", par, sum.ExchangePeakBytes, sum.ExchangePeakBytes/keys)
	}
}
