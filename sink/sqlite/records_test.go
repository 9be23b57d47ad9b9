package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
)

func sideRecords(t testing.TB) (late, quarantine, conflict []byte) {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	late = changelog.AppendLateJSON(nil, &changelog.LateRecord{
		Stage: "revenue", Event: []byte(`{"event_id":"e9","amount":3}`),
		EventTime: ms(t, "2026-09-01T01:00:30Z"), ObservedAt: ms(t, "2026-09-01T01:02:41Z"),
		CurrentWatermark: changelog.WatermarkInfinity, LatenessMs: 100000,
		Reason: "every window of the event had closed", Position: changelog.Position{Source: "events.jsonl", Line: 5},
	}, loc)
	quarantine = changelog.AppendQuarantineJSON(nil, &changelog.QuarantineRecord{
		Stage: "revenue", Raw: []byte("a,b"), Reason: "2 fields, want 3", Rule: "decode",
		Position: changelog.Position{Source: "orders.csv", Line: 9, Offset: 120},
	}, loc)
	conflict = changelog.NewEncoder(loc).Conflict(nil, &changelog.ConflictRecord{
		EventID: "e101", FirstPayloadHash: 1, NewPayloadHash: 2, NewPayload: []byte(`{"amount":-8000}`),
		EventTime: ms(t, "2026-09-01T01:00:20Z"), ObservedAt: ms(t, "2026-09-01T01:00:50Z"),
		Position: changelog.Position{Source: "events.jsonl", Line: 7},
	})
	return late, quarantine, conflict
}

func commitRecords(t testing.TB, r *Records, id int64, recs ...[]byte) []byte {
	t.Helper()
	ctx := context.Background()
	for _, b := range recs {
		if err := r.WriteRecord(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	p, err := r.Prepare(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, id, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecordsTable: records land once each in typed columns and the
// record text; a repeated Commit adds nothing; a restore that falls back
// to checkpoint 1 deletes checkpoint 2's records before the replay writes
// them again; a fresh start empties the pipeline's records and says so.
func TestRecordsTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.db")
	late, quarantine, conflict := sideRecords(t)
	o := RecordsOptions{Pipeline: "revenue", ExactlyOnce: true, Fresh: true}
	r, err := NewRecords(ctx, path, "side", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	r.Recover(ctx, 0, nil)
	p1 := commitRecords(t, r, 1, late, quarantine)
	if err := r.Commit(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	commitRecords(t, r, 2, conflict)
	q := `SELECT pipeline, seq, checkpoint_id, kind, stage, event_id, event_time, observed_at, current_watermark, lateness_ms, reason, source FROM side ORDER BY seq`
	want := "'revenue' | 1 | 1 | 'late' | 'revenue' | NULL | '2026-09-01T10:00:30+09:00' | '2026-09-01T10:02:41+09:00' | 'infinity' | 100000 | 'every window of the event had closed' | 'events.jsonl:5'\n" +
		"'revenue' | 2 | 1 | 'quarantine' | 'revenue' | NULL | NULL | NULL | NULL | NULL | '2 fields, want 3' | 'orders.csv:9'\n" +
		"'revenue' | 3 | 2 | 'conflict' | NULL | 'e101' | '2026-09-01T10:00:20+09:00' | '2026-09-01T10:00:50+09:00' | NULL | NULL | NULL | 'events.jsonl:7'\n"
	check(t, path, q, want)
	check(t, path, `SELECT json_extract(record, '$.event.amount') FROM side WHERE kind = 'late'`, "3\n")

	o.Fresh = false
	r2, err := NewRecords(ctx, path, "side", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close(ctx)
	if err := r2.Recover(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	check(t, path, `SELECT count(*) FROM side`, "2\n")
	commitRecords(t, r2, 2, conflict)
	check(t, path, q, want)

	o.Fresh = true
	r3, err := NewRecords(ctx, path, "side", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close(ctx)
	r3.Recover(ctx, 0, nil)
	if want := "[emptied table side, which tidemark created, of pipeline revenue's records for this fresh start: 3 records of earlier runs removed]"; fmt.Sprint(r3.Notes()) != want {
		t.Fatalf("notes %q", r3.Notes())
	}

	// A table of the user's without the columns is refused, naming them.
	execSQL(t, path, `CREATE TABLE mine (pipeline TEXT, seq INTEGER, kind TEXT, record TEXT, lateness_ms REAL)`)
	_, err = NewRecords(ctx, path, "mine", o)
	var se *SchemaError
	if !errors.As(err, &se) || fmt.Sprint(se.Missing) != "[checkpoint_id (INTEGER) stage (TEXT) event_id (TEXT) event_time (TEXT) observed_at (TEXT) current_watermark (TEXT) reason (TEXT) source (TEXT)]" ||
		fmt.Sprint(se.Types) != "[column lateness_ms is REAL: the pipeline writes integers: declare it INTEGER]" {
		t.Fatalf("got %v", err)
	}
}
