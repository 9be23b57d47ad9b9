package nexmark

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// renderBatch renders each event of b: id, arrival and every field, and
// the event's JSON.
func renderBatch(src *Source, s *row.Schema, b *source.Batch) []string {
	var out []string
	for i := range b.Meta {
		line := fmt.Sprintf("%d@%d", b.Meta[i].Pos.Offset, b.Meta[i].Arrival)
		for _, f := range s.Fields {
			line += " " + f.Name + "=" + b.Rows[i].Get(f).String()
		}
		out = append(out, line+" "+string(src.EventJSON(nil, &b.Meta[i])))
	}
	return out
}

// TestBatchesStayValid: the strings of a batch live in the batch's
// arena: three batches filled by successive calls to Next are intact
// after the third, while two other goroutines read the first and call
// EventJSON on it (run with -race), and together equal a one-pass read.
func TestBatchesStayValid(t *testing.T) {
	cfg := Config{Events: 3000, Seed: 4}
	names := []string{"event_type", "person.name", "person.email_address", "auction.item_name", "auction.description", "bid.channel", "bid.url", "bid.extra", "date_time"}
	one, s := newSource(t, cfg, names...)
	var whole source.Batch
	if _, err := one.Next(context.Background(), &whole, 600); err != nil {
		t.Fatal(err)
	}
	all := renderBatch(one, s, &whole)

	src, _ := newSource(t, cfg, names...)
	var b [3]source.Batch
	if _, err := src.Next(context.Background(), &b[0], 200); err != nil {
		t.Fatal(err)
	}
	first := renderBatch(src, s, &b[0])
	// Two goroutines read the first batch and build its events' JSON
	// while Next fills the next two.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if g := renderBatch(src, s, &b[0]); !slices.Equal(g, first) {
					t.Error("a reader saw the first batch change")
					return
				}
			}
		}()
	}
	for i := 1; i < 3; i++ {
		if _, err := src.Next(context.Background(), &b[i], 200); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if g := renderBatch(src, s, &b[0]); !slices.Equal(g, first) {
		t.Fatalf("the first batch changed after two more calls to Next:\n%s\nwas\n%s", g[0], first[0])
	}
	var got []string
	for i := range b {
		got = append(got, renderBatch(src, s, &b[i])...)
	}
	if !slices.Equal(got, all) {
		t.Fatalf("three batches differ from one batch of 600")
	}
}
