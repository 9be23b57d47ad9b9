package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/spec"
)

// badInput is the expected fate of the records of each file of the bad
// input corpus (source/file/testdata/bad, see its README), worked out by
// hand, through the pipeline of TestAccountingOverBadInput.
var badInput = map[string]struct {
	read, quarantined, duplicates, conflicts, filtered, onTime, tooLate int64
}{
	"unterminated_quote.csv":  {read: 8, quarantined: 1, onTime: 7},
	"quote_closes_later.csv":  {read: 4, quarantined: 1, onTime: 3},
	"cr_only.csv":             {read: 5, quarantined: 1, onTime: 4},
	"crlf_bom_duplicates.csv": {read: 5, duplicates: 1, conflicts: 1, onTime: 3},
	"encoding.csv":            {read: 4, quarantined: 3, onTime: 1},
	"field_counts.csv":        {read: 6, quarantined: 5, onTime: 1},
	"late_and_filtered.csv":   {read: 6, quarantined: 1, filtered: 2, onTime: 2, tooLate: 1},
	"header_only.csv":         {},
	"empty.csv":               {},
	"broken_lines.jsonl":      {read: 7, quarantined: 5, onTime: 2},
	"cr_only.jsonl":           {read: 4, duplicates: 1, onTime: 3},
	"encoding.jsonl":          {read: 5, quarantined: 4, onTime: 1},
	"crlf_bom_conflict.jsonl": {read: 3, conflicts: 1, onTime: 2},
	"empty.jsonl":             {},
}

// TestAccountingOverBadInput runs every file of the bad input corpus
// through a pipeline with dedup, a filter, one-minute windows per store
// and no allowed lateness, and checks that every input record is
// accounted for: records in = quarantined + duplicates + conflicts +
// stale versions + filtered + on time + late accepted + too late, each
// count as worked out by hand (no broken record swallows the records
// after it).
func TestAccountingOverBadInput(t *testing.T) {
	dir := filepath.Join("..", "source", "file", "testdata", "bad")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if name == "README.md" {
			continue
		}
		want, ok := badInput[name]
		if !ok {
			t.Errorf("%s: no expectation", name)
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			p := &spec.Pipeline{
				Name: "accounting",
				Source: spec.Source{Type: "file", Path: filepath.Join(dir, name),
					Schema: spec.FieldTypes{{Name: "event_id", Type: "string"}, {Name: "store_id", Type: "string"}, {Name: "amount", Type: "decimal"}, {Name: "ts", Type: "timestamp"}}},
				EventTime:  spec.EventTime{Field: "ts"},
				Dedup:      &spec.Dedup{Key: "event_id", TTL: spec.Duration(time.Hour)},
				Filter:     `amount >= 0`,
				Key:        []string{"store_id"},
				Window:     spec.Window{Type: "tumbling", Size: spec.Duration(time.Minute)},
				Aggregates: spec.NamedExprs{{Name: "orders", Expr: "count()"}, {Name: "revenue", Expr: "sum(amount)"}},
				Late:       spec.Late{Policy: "drop"},
				Sinks:      []spec.Sink{{Type: "jsonl", Path: filepath.Join(out, "out.jsonl")}},
			}
			p.Defaults()
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			pl, err := plan.Compile(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The clock on the corpus's day: no record is more than
			// event_time.max_future ahead of it.
			noon := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
			sum, err := Run(context.Background(), pl, Options{Clock: func() int64 { return noon }})
			if err != nil {
				t.Fatal(err)
			}
			st := sum.Stages[0]
			quarantined := sum.Quarantined + st.Quarantined
			tooLate := st.TooLateDropped + st.TooLateSideOutput
			accounted := quarantined + sum.Duplicates + sum.Conflicts + sum.StaleVersions + sum.OutsideRange +
				st.Filtered + st.OnTime + st.LateAccepted + tooLate
			if accounted != sum.EventsRead {
				t.Errorf("records in %d, accounted for %d: quarantined %d, duplicates %d, conflicts %d, stale %d, outside range %d, filtered %d, on time %d, late accepted %d, too late %d",
					sum.EventsRead, accounted, quarantined, sum.Duplicates, sum.Conflicts, sum.StaleVersions, sum.OutsideRange, st.Filtered, st.OnTime, st.LateAccepted, tooLate)
			}
			got := struct{ read, quarantined, duplicates, conflicts, filtered, onTime, tooLate int64 }{
				sum.EventsRead, quarantined, sum.Duplicates, sum.Conflicts, st.Filtered, st.OnTime + st.LateAccepted, tooLate}
			if got != want {
				var w strings.Builder
				sum.WriteText(&w, time.UTC)
				t.Errorf("read %d, quarantined %d, duplicates %d, conflicts %d, filtered %d, on time %d, too late %d\nwant %+v\n%s",
					got.read, got.quarantined, got.duplicates, got.conflicts, got.filtered, got.onTime, got.tooLate, want, w.String())
			}
		})
	}
	if n != len(badInput) {
		t.Fatalf("%d corpus files, %d expected", n, len(badInput))
	}
}
