package article_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/checkpoint"
	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/examples/article"
	"github.com/tidemark/tidemark/internal/articlegen"
	"github.com/tidemark/tidemark/spec"
)

// TestRestoreRefusesCountDistinctValues: count_distinct keeps hashes of
// its values since manifest version 6; a checkpoint of an earlier version
// held the values themselves, and the article's pipeline refuses it by
// name. The same manifest under a pipeline without count_distinct
// restores.
func TestRestoreRefusesCountDistinctValues(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "orders.jsonl")
	if _, err := articlegen.WriteFile(events, articlegen.Config{Events: 5000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	run := func(ck string, distinct bool) error {
		p, err := article.Load(dir, events)
		if err != nil {
			t.Fatal(err)
		}
		if !distinct {
			p.Aggregates = spec.NamedExprs{{Name: "source_event_count", Expr: "count()"}}
		}
		out := filepath.Join(dir, filepath.Base(ck))
		p.Sinks = []spec.Sink{{Type: "jsonl", Path: out + "-rows.jsonl"}}
		p.Late.Sink = &spec.Sink{Type: "jsonl", Path: out + "-late.jsonl"}
		p.Quarantine.Sink = &spec.Sink{Type: "jsonl", Path: out + "-quarantine.jsonl"}
		p.Conflicts.Sink = &spec.Sink{Type: "jsonl", Path: out + "-conflicts.jsonl"}
		p.Checkpoint = &spec.Checkpoint{Dir: ck, Interval: spec.Duration(time.Hour)}
		pl, err := tidemark.Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.Run(context.Background(), pl, engine.Options{Parallelism: 1})
		return err
	}
	for _, distinct := range []bool{true, false} {
		ck := filepath.Join(dir, "ck-"+map[bool]string{true: "distinct", false: "count"}[distinct])
		if err := run(ck, distinct); err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.Latest(ck, t.Logf)
		if err != nil || c == nil {
			t.Fatalf("latest checkpoint: %v", err)
		}
		if c.Payload[0] != 9 {
			t.Fatalf("manifest version %d, want 9", c.Payload[0])
		}
		// The same state as an earlier build would have written it: labelled
		// version 5 and without version 7's inputs section (for one input,
		// its count alone: one zero byte), version 8's state stores (on
		// the memory backend, an empty segment name and no store: two zero
		// bytes) and version 9's count of deletes (0: one zero byte) at the
		// manifest's end.
		if tail := c.Payload[len(c.Payload)-4:]; string(tail) != "\x00\x00\x00\x00" {
			t.Fatalf("manifest ends with %v, want the empty inputs and stores sections and no deletes", tail)
		}
		c.Payload = c.Payload[:len(c.Payload)-4]
		c.Payload[0] = 5
		if _, _, err := checkpoint.Write(ck, c); err != nil {
			t.Fatal(err)
		}
		err = run(ck, distinct)
		if distinct {
			if err == nil || !strings.Contains(err.Error(), "it holds the values of revenue_minute's count_distinct (order_count) where this build keeps their hashes (manifest version 5, this build writes 9)") {
				t.Errorf("restore of a version 5 manifest with count_distinct: %v", err)
			}
		} else if err != nil {
			t.Errorf("restore of a version 5 manifest without count_distinct: %v", err)
		}
	}
}
