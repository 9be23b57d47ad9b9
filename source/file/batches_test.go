package file

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// renderBatch renders every record of b (row and meta).
func renderBatch(s *Source, b *source.Batch, dir string) []rec {
	out := make([]rec, 0, b.Len())
	for j := range b.Meta {
		out = append(out, rec{Row: render(s.schema, &b.Rows[j]), Meta: renderMeta(&b.Meta[j], dir)})
	}
	return out
}

// TestBatchesStayValid: a batch's rows, strings and raw bytes belong to
// the batch. Three batches filled by successive calls to Next are all
// intact after the third call — while another goroutine reads the first
// one (run with -race) — and together equal a one-pass read, for JSONL
// and CSV, directly and through the replay.
func TestBatchesStayValid(t *testing.T) {
	var jsonl, csv strings.Builder
	csv.WriteString("id,store,pad,ts\n")
	for i := range 400 {
		ts := fmt.Sprintf("2026-09-01T10:%02d:%02dZ", i/60, i%60)
		pad := strings.Repeat(string(rune('a'+i%26)), i%37)
		fmt.Fprintf(&jsonl, `{"id":"event-%d","store":"store-%d","pad":"%s","ts":"%s"}`+"\n", i, i%7, pad, ts)
		fmt.Fprintf(&csv, "event-%d,\"store-%d\",%s,%s\n", i, i%7, pad, ts)
	}
	dir := writeFiles(t, map[string]string{"a.jsonl": jsonl.String(), "a.csv": csv.String()})
	replay := &spec.Replay{Seed: 3, Delay: spec.Duration(20e9), StragglerFraction: 0.1, MaxDelay: spec.Duration(90e9),
		RedeliverFraction: 0.1, ConflictFraction: 0.1, ConflictField: "store", Partitions: 3, PartitionBy: "store"}
	for _, tc := range []struct {
		name string
		sp   spec.Source
	}{
		{"jsonl", spec.Source{Path: "a.jsonl"}},
		{"csv", spec.Source{Path: "a.csv"}},
		{"jsonl replay", spec.Source{Path: "a.jsonl", Replay: replay}},
		{"csv replay", spec.Source{Path: "a.csv", Replay: replay}},
		{"jsonl ordinal", spec.Source{Path: "a.jsonl", Ordinal: &spec.Ordinal{Field: "n", Per: "store"}, PartitionField: "store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open := func() *Source {
				sp := tc.sp
				sp.Path = dir + "/" + sp.Path
				fields := []string{"id:string", "store:string", "pad:string", "ts:timestamp"}
				if sp.Ordinal != nil {
					fields = append(fields, "n:int")
				}
				s, err := New(Config{Spec: sp, Fields: testFields(t, fields...), EventTimeField: "ts"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			all := drain(t, open(), 1000, dir)
			s := open()
			var b [3]source.Batch
			ctx := context.Background()
			if _, err := s.Next(ctx, &b[0], 60); err != nil {
				t.Fatal(err)
			}
			first := renderBatch(s, &b[0], dir)
			// Another goroutine reads the first batch while Next fills the
			// next two.
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for j := range b[0].Meta {
						_ = render(s.schema, &b[0].Rows[j]) + string(b[0].Meta[j].Raw)
						_ = s.EventJSON(nil, &b[0].Meta[j])
					}
				}
			}()
			for i := 1; i < 3; i++ {
				if _, err := s.Next(ctx, &b[i], 60); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			diff(t, renderBatch(s, &b[0], dir), first)
			var got []rec
			for i := range b {
				got = append(got, renderBatch(s, &b[i], dir)...)
			}
			if len(got) != 180 {
				t.Fatalf("%d records in three batches of 60", len(got))
			}
			diff(t, got, all[:len(got)])
		})
	}
}
