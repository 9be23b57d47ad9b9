package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/changelog"
)

// sideRecords are a late, a quarantine and a conflict record as the engine
// writes them (times in Asia/Seoul).
func sideRecords(t testing.TB) (late, quarantine, conflict []byte) {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	late = changelog.AppendLateJSON(nil, &changelog.LateRecord{
		Stage: "revenue", Event: []byte(`{"event_id":"e9","amount":3}`),
		EventTime: ms(t, "2026-09-01T01:00:30Z"), ObservedAt: ms(t, "2026-09-01T01:02:41Z"),
		CurrentWatermark: ms(t, "2026-09-01T01:02:10Z"), LatenessMs: 100000,
		Reason: "every window of the event had closed", Position: changelog.Position{Source: "events.jsonl", Line: 5},
	}, loc)
	quarantine = changelog.AppendQuarantineJSON(nil, &changelog.QuarantineRecord{
		Stage: "revenue", Raw: []byte(`{"ts":"2026-09-01T10:05:10"}`), Reason: "timestamp has no UTC offset", Field: "ts", Rule: "timestamp",
		Position: changelog.Position{Source: "orders", Partition: "3", Offset: 275},
	}, loc)
	conflict = changelog.NewEncoder(loc).Conflict(nil, &changelog.ConflictRecord{
		EventID: "e101", FirstPayloadHash: 0x9f0c1a2b, FirstPayload: []byte(`{"amount":-5000}`), NewPayloadHash: 0x01020304,
		NewPayload: []byte(`{"amount":-8000}`), EventTime: ms(t, "2026-09-01T01:00:20Z"), ObservedAt: ms(t, "2026-09-01T01:00:50Z"),
		Position: changelog.Position{Source: "events.jsonl", Line: 7},
	})
	return late, quarantine, conflict
}

func newRecords(t testing.TB, dsn, table string, o RecordsOptions) *Records {
	t.Helper()
	var r *Records
	succeed(table, func() { r.x.crash() }) // a new run: the previous one is gone
	r, err := NewRecords(context.Background(), dsn, table, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	r.x.fast(nil)
	return r
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

const recordsQuery = `SELECT pipeline, seq, checkpoint_id, kind, stage, event_id, event_time, observed_at, current_watermark, lateness_ms, reason, source FROM %s ORDER BY pipeline, seq`

// TestRecordsExactlyOnce: side-output records land in typed columns and
// the record as JSON, once each: a repeated Commit, a commit whose
// acknowledgement was lost, and a restore that falls back to an older
// checkpoint write no record twice.
func TestRecordsExactlyOnce(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".revenue_side"
	late, quarantine, conflict := sideRecords(t)
	r := newRecords(t, dsn, table, RecordsOptions{Pipeline: "revenue", Fresh: true})
	if err := r.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	p1 := commitRecords(t, r, 1, late, quarantine)
	if err := r.Commit(ctx, 1, p1); err != nil { // a repeated commit
		t.Fatal(err)
	}
	lost := true
	r.x.onTx(func(_ context.Context, _ pgx.Tx, at string) error {
		if at == "committed" && lost {
			lost = false
			return fmt.Errorf("reading the commit's reply: %w", io.ErrUnexpectedEOF)
		}
		return nil
	})
	commitRecords(t, r, 2, conflict)
	r.x.onTx(nil)
	want := "revenue | 1 | 1 | late | revenue | NULL | 2026-09-01 10:00:30+09 | 2026-09-01 10:02:41+09 | 2026-09-01 10:02:10+09 | 100000 | every window of the event had closed | events.jsonl:5\n" +
		"revenue | 2 | 1 | quarantine | revenue | NULL | NULL | NULL | NULL | NULL | timestamp has no UTC offset | orders[3]@275\n" +
		"revenue | 3 | 2 | conflict | NULL | e101 | 2026-09-01 10:00:20+09 | 2026-09-01 10:00:50+09 | NULL | NULL | NULL | events.jsonl:7\n"
	check(t, dsn, fmt.Sprintf(recordsQuery, table), want)
	check(t, dsn, "SELECT record->'event'->>'amount', record->>'lateness_ms' FROM "+table+" WHERE kind = 'late'", "3 | 100000\n")
	check(t, dsn, "SELECT record::text = '"+string(conflict)+"' FROM "+table+" WHERE kind = 'conflict'", "t\n")

	// Checkpoint 2 proves unusable; the run falls back to 1 and replays:
	// checkpoint 2's records are deleted, then written again once.
	r2 := newRecords(t, dsn, table, RecordsOptions{Pipeline: "revenue"})
	if err := r2.Recover(ctx, 1, p1); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, "SELECT count(*), max(seq) FROM "+table, "2 | 2\n")
	check(t, dsn, "SELECT checkpoint_id FROM "+schema+".tidemark_commits", "1\n")
	commitRecords(t, r2, 2, conflict)
	check(t, dsn, fmt.Sprintf(recordsQuery, table), want)

	// A fresh start empties the pipeline's records of a table tidemark
	// created, and says so.
	r3 := newRecords(t, dsn, table, RecordsOptions{Pipeline: "revenue", Fresh: true})
	if err := r3.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if want := "[emptied table " + table + ", which tidemark created, of pipeline revenue's records for this fresh start: 3 records of earlier runs removed]"; fmt.Sprint(r3.Notes()) != want {
		t.Fatalf("notes %q", r3.Notes())
	}
	check(t, dsn, "SELECT count(*) FROM "+table, "0\n")
}

// TestRecordsIntoTheUsersTable: a table of the user's with the columns
// (record as jsonb, lateness_ms as integer) and one more with a default
// takes the records after its own rows; one without a needed column is
// refused naming it; a restore into a dropped table is an error.
func TestRecordsIntoTheUsersTable(t *testing.T) {
	ctx := context.Background()
	dsn, schema := testSchema(t)
	table := schema + ".late_events"
	late, _, _ := sideRecords(t)
	exec(t, dsn, "CREATE TABLE "+table+` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, pipeline text NOT NULL, seq bigint NOT NULL, checkpoint_id bigint,
  kind text NOT NULL, stage text, event_id text, event_time timestamptz, observed_at timestamptz, current_watermark timestamptz, lateness_ms integer,
  reason varchar(200), source text, record jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`,
		"INSERT INTO "+table+" (pipeline, seq, kind, record) VALUES ('revenue', 7, 'late', '{\"mine\": true}')")
	r := newRecords(t, dsn, table, RecordsOptions{Pipeline: "revenue", Fresh: true})
	if err := r.Recover(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	if want := "[kept the 1 records of pipeline revenue already in table " + table + ", which tidemark did not create: the new ones follow them]"; fmt.Sprint(r.Notes()) != want {
		t.Fatalf("notes %q", r.Notes())
	}
	commitRecords(t, r, 1, late)
	check(t, dsn, "SELECT id, seq, kind, lateness_ms, record->>'stage' FROM "+table+" ORDER BY id", "1 | 7 | late | NULL | NULL\n2 | 8 | late | 100000 | revenue\n")

	exec(t, dsn, "CREATE TABLE "+schema+".bad (pipeline text, seq bigint, kind text, record text)")
	_, err := NewRecords(ctx, dsn, schema+".bad", RecordsOptions{Pipeline: "revenue"})
	var se *SchemaError
	if !errors.As(err, &se) || fmt.Sprint(se.Missing) != "[checkpoint_id (bigint) stage (text) event_id (text) event_time (timestamptz) observed_at (timestamptz) current_watermark (timestamptz) lateness_ms (bigint) reason (text) source (text)]" {
		t.Fatalf("got %v", err)
	}

	gone := schema + ".gone"
	r2 := newRecords(t, dsn, gone, RecordsOptions{Pipeline: "revenue"})
	r2.Recover(ctx, 0, nil)
	p := commitRecords(t, r2, 1, late)
	r2.Close(ctx)
	exec(t, dsn, "DROP TABLE "+gone)
	var me *MissingTableError
	if _, err := NewRecords(ctx, dsn, gone, RecordsOptions{Pipeline: "revenue", Resume: true}); !errors.As(err, &me) || me.Marker != 1 {
		t.Fatalf("Resume: %v", err)
	}
	r3 := newRecords(t, dsn, gone, RecordsOptions{Pipeline: "revenue"})
	if err := r3.Recover(ctx, 1, p); !errors.As(err, &me) || me.Checkpoint != 1 {
		t.Fatalf("Recover: %v", err)
	}
}
