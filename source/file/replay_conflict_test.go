package file

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// conflictSource opens name in dir with every record conflicting on field.
func conflictSource(t *testing.T, dir, name, field string) *Source {
	t.Helper()
	s, err := New(Config{
		Spec: spec.Source{Path: dir + "/" + name, Ordinal: &spec.Ordinal{Field: "n"}, Replay: &spec.Replay{
			Seed: 1, Delay: spec.Duration(2 * time.Second), MaxDelay: spec.Duration(5 * time.Second),
			ConflictFraction: 1, ConflictField: field, Partitions: 2, PartitionBy: "id",
		}},
		Fields:         testFields(t, "id:string", "ts:timestamp", "amount:decimal", "qty:int", "note:string", "n:int"),
		EventTimeField: "ts",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eventJSONs drains s and returns EventJSON of every delivery.
func eventJSONs(t *testing.T, s *Source) []string {
	t.Helper()
	var out []string
	var b source.Batch
	for {
		b.Reset()
		st, err := s.Next(context.Background(), &b, 2)
		for i := range b.Meta {
			out = append(out, string(s.EventJSON(nil, &b.Meta[i])))
		}
		if st == source.End {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

const conflictCSV = "id,ts,amount,qty,note\n" +
	"a,2026-09-01T10:00:01Z,19.99,7,plain\n" +
	"b,2026-09-01T10:00:02Z,-0.5,9,\"with, comma\"\n" +
	"c,2026-09-01T10:00:03Z,,1,\"quoted\"\n" +
	"d,2026-09-01T10:00:04Z,100,-1,\n"

// TestReplayConflictsCSV: a conflicting copy (a redelivery) carries the
// changed field in its row, its raw bytes (the record encoded again by
// encoding/csv) and EventJSON; a null field is not chosen.
func TestReplayConflictsCSV(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.csv": conflictCSV})
	diff(t, drain(t, conflictSource(t, dir, "a.csv", "amount"), 2, dir), []rec{
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:02.867Z a.csv:2@22 raw=\"a,2026-09-01T10:00:01Z,19.99,7,plain\""},
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=20.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:03.071Z a.csv:2@22 raw=\"a,2026-09-01T10:00:01Z,20.99,7,plain\" redelivery"},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"with, comma\" n=2", "p=1/p1 at=2026-09-01T10:00:03.760Z a.csv:3@59 raw=\"b,2026-09-01T10:00:02Z,-0.5,9,\\\"with, comma\\\"\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"quoted\" n=3", "p=0/p0 at=2026-09-01T10:00:03.880Z a.csv:4@103 raw=\"c,2026-09-01T10:00:03Z,,1,\\\"quoted\\\"\""},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=0.5 qty=9 note=\"with, comma\" n=2", "p=1/p1 at=2026-09-01T10:00:04.840Z a.csv:3@59 raw=\"b,2026-09-01T10:00:02Z,0.5,9,\\\"with, comma\\\"\" redelivery"},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=100 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:04.959Z a.csv:5@138 raw=\"d,2026-09-01T10:00:04Z,100,-1,\""},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=101 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:08.528Z a.csv:5@138 raw=\"d,2026-09-01T10:00:04Z,101,-1,\" redelivery"},
	})
	// A string field gets "-x"; the record is encoded again by encoding/csv
	// (quotes only where needed); a null field is not chosen.
	diff(t, drain(t, conflictSource(t, dir, "a.csv", "note"), 2, dir), []rec{
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:02.867Z a.csv:2@22 raw=\"a,2026-09-01T10:00:01Z,19.99,7,plain\""},
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain-x\" n=1", "p=0/p0 at=2026-09-01T10:00:03.071Z a.csv:2@22 raw=\"a,2026-09-01T10:00:01Z,19.99,7,plain-x\" redelivery"},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"with, comma\" n=2", "p=1/p1 at=2026-09-01T10:00:03.760Z a.csv:3@59 raw=\"b,2026-09-01T10:00:02Z,-0.5,9,\\\"with, comma\\\"\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"quoted\" n=3", "p=0/p0 at=2026-09-01T10:00:03.880Z a.csv:4@103 raw=\"c,2026-09-01T10:00:03Z,,1,\\\"quoted\\\"\""},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"with, comma-x\" n=2", "p=1/p1 at=2026-09-01T10:00:04.840Z a.csv:3@59 raw=\"b,2026-09-01T10:00:02Z,-0.5,9,\\\"with, comma-x\\\"\" redelivery"},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=100 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:04.959Z a.csv:5@138 raw=\"d,2026-09-01T10:00:04Z,100,-1,\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"quoted-x\" n=3", "p=0/p0 at=2026-09-01T10:00:06.964Z a.csv:4@103 raw=\"c,2026-09-01T10:00:03Z,,1,quoted-x\" redelivery"},
	})
	recs := drain(t, conflictSource(t, dir, "a.csv", "qty"), 100, dir)
	if got := rows(recs); !slices.Contains(got, `id="c" ts=2026-09-01T10:00:03Z amount=null qty=2 note="quoted" n=3`) ||
		!slices.Contains(got, `id="d" ts=2026-09-01T10:00:04Z amount=100 qty=0 note=null n=4`) {
		t.Errorf("qty conflicts: %q", got)
	}
	// EventJSON agrees with the changed raw bytes.
	ej := eventJSONs(t, conflictSource(t, dir, "a.csv", "amount"))
	if want := `{"id":"a","ts":"2026-09-01T10:00:01Z","amount":"20.99","qty":"7","note":"plain"}`; ej[1] != want {
		t.Errorf("EventJSON of the conflicting copy: %s, want %s", ej[1], want)
	}
}

const conflictJSONL = `{"id":"a","ts":"2026-09-01T10:00:01Z","amount":19.99,"qty":7,"note":"plain"}
{"id":"b","ts":"2026-09-01T10:00:02Z","amount":"-0.5","qty":"9","note":12}
{"id":"c","ts":"2026-09-01T10:00:03Z","amount":null,"qty":1,"note":"esc\"aped"}
{"id":"d", "ts":"2026-09-01T10:00:04Z" , "amount" : 1e2 ,"qty":-1}
`

// TestReplayConflictsJSONL: the JSON value is rewritten in the raw line
// (by the field's declared type: a decimal in a string stays a string), the
// line decoded again; a null or missing field is not chosen.
func TestReplayConflictsJSONL(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": conflictJSONL})
	diff(t, drain(t, conflictSource(t, dir, "a.jsonl", "amount"), 2, dir), []rec{
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:02.867Z a.jsonl:1@0 raw=\"{\\\"id\\\":\\\"a\\\",\\\"ts\\\":\\\"2026-09-01T10:00:01Z\\\",\\\"amount\\\":19.99,\\\"qty\\\":7,\\\"note\\\":\\\"plain\\\"}\""},
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=20.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:03.071Z a.jsonl:1@0 raw=\"{\\\"id\\\":\\\"a\\\",\\\"ts\\\":\\\"2026-09-01T10:00:01Z\\\",\\\"amount\\\":20.99,\\\"qty\\\":7,\\\"note\\\":\\\"plain\\\"}\" redelivery"},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"12\" n=2", "p=1/p1 at=2026-09-01T10:00:03.760Z a.jsonl:2@77 raw=\"{\\\"id\\\":\\\"b\\\",\\\"ts\\\":\\\"2026-09-01T10:00:02Z\\\",\\\"amount\\\":\\\"-0.5\\\",\\\"qty\\\":\\\"9\\\",\\\"note\\\":12}\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"esc\\\"aped\" n=3", "p=0/p0 at=2026-09-01T10:00:03.880Z a.jsonl:3@152 raw=\"{\\\"id\\\":\\\"c\\\",\\\"ts\\\":\\\"2026-09-01T10:00:03Z\\\",\\\"amount\\\":null,\\\"qty\\\":1,\\\"note\\\":\\\"esc\\\\\\\"aped\\\"}\""},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=0.5 qty=9 note=\"12\" n=2", "p=1/p1 at=2026-09-01T10:00:04.840Z a.jsonl:2@77 raw=\"{\\\"id\\\":\\\"b\\\",\\\"ts\\\":\\\"2026-09-01T10:00:02Z\\\",\\\"amount\\\":\\\"0.5\\\",\\\"qty\\\":\\\"9\\\",\\\"note\\\":12}\" redelivery"},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=100 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:04.959Z a.jsonl:4@232 raw=\"{\\\"id\\\":\\\"d\\\", \\\"ts\\\":\\\"2026-09-01T10:00:04Z\\\" , \\\"amount\\\" : 1e2 ,\\\"qty\\\":-1}\""},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=101 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:08.528Z a.jsonl:4@232 raw=\"{\\\"id\\\":\\\"d\\\", \\\"ts\\\":\\\"2026-09-01T10:00:04Z\\\" , \\\"amount\\\" : 1.01e2 ,\\\"qty\\\":-1}\" redelivery"},
	})
	// A string field: a JSON string gets "-x", a number becomes the string
	// of its text plus "-x"; a missing field is not chosen.
	diff(t, drain(t, conflictSource(t, dir, "a.jsonl", "note"), 2, dir), []rec{
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain\" n=1", "p=0/p0 at=2026-09-01T10:00:02.867Z a.jsonl:1@0 raw=\"{\\\"id\\\":\\\"a\\\",\\\"ts\\\":\\\"2026-09-01T10:00:01Z\\\",\\\"amount\\\":19.99,\\\"qty\\\":7,\\\"note\\\":\\\"plain\\\"}\""},
		{"id=\"a\" ts=2026-09-01T10:00:01Z amount=19.99 qty=7 note=\"plain-x\" n=1", "p=0/p0 at=2026-09-01T10:00:03.071Z a.jsonl:1@0 raw=\"{\\\"id\\\":\\\"a\\\",\\\"ts\\\":\\\"2026-09-01T10:00:01Z\\\",\\\"amount\\\":19.99,\\\"qty\\\":7,\\\"note\\\":\\\"plain-x\\\"}\" redelivery"},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"12\" n=2", "p=1/p1 at=2026-09-01T10:00:03.760Z a.jsonl:2@77 raw=\"{\\\"id\\\":\\\"b\\\",\\\"ts\\\":\\\"2026-09-01T10:00:02Z\\\",\\\"amount\\\":\\\"-0.5\\\",\\\"qty\\\":\\\"9\\\",\\\"note\\\":12}\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"esc\\\"aped\" n=3", "p=0/p0 at=2026-09-01T10:00:03.880Z a.jsonl:3@152 raw=\"{\\\"id\\\":\\\"c\\\",\\\"ts\\\":\\\"2026-09-01T10:00:03Z\\\",\\\"amount\\\":null,\\\"qty\\\":1,\\\"note\\\":\\\"esc\\\\\\\"aped\\\"}\""},
		{"id=\"b\" ts=2026-09-01T10:00:02Z amount=-0.5 qty=9 note=\"12-x\" n=2", "p=1/p1 at=2026-09-01T10:00:04.840Z a.jsonl:2@77 raw=\"{\\\"id\\\":\\\"b\\\",\\\"ts\\\":\\\"2026-09-01T10:00:02Z\\\",\\\"amount\\\":\\\"-0.5\\\",\\\"qty\\\":\\\"9\\\",\\\"note\\\":\\\"12-x\\\"}\" redelivery"},
		{"id=\"d\" ts=2026-09-01T10:00:04Z amount=100 qty=-1 note=null n=4", "p=1/p1 at=2026-09-01T10:00:04.959Z a.jsonl:4@232 raw=\"{\\\"id\\\":\\\"d\\\", \\\"ts\\\":\\\"2026-09-01T10:00:04Z\\\" , \\\"amount\\\" : 1e2 ,\\\"qty\\\":-1}\""},
		{"id=\"c\" ts=2026-09-01T10:00:03Z amount=null qty=1 note=\"esc\\\"aped-x\" n=3", "p=0/p0 at=2026-09-01T10:00:06.964Z a.jsonl:3@152 raw=\"{\\\"id\\\":\\\"c\\\",\\\"ts\\\":\\\"2026-09-01T10:00:03Z\\\",\\\"amount\\\":null,\\\"qty\\\":1,\\\"note\\\":\\\"esc\\\\\\\"aped-x\\\"}\" redelivery"},
	})
	ej := eventJSONs(t, conflictSource(t, dir, "a.jsonl", "amount"))
	if want := `{"id":"d", "ts":"2026-09-01T10:00:04Z" , "amount" : 1.01e2 ,"qty":-1}`; ej[6] != want {
		t.Errorf("EventJSON of the conflicting copy: %s, want %s", ej[6], want)
	}
}

func TestReplayConflictErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": conflictJSONL})
	for _, tc := range []struct {
		replay spec.Replay
		want   string
	}{
		{spec.Replay{ConflictFraction: 0.1}, "source.replay.conflict_field: required with conflict_fraction"},
		{spec.Replay{ConflictFraction: 0.1, ConflictField: "x"}, `source.replay.conflict_field: field "x" is not in the source schema`},
		{spec.Replay{ConflictFraction: 0.1, ConflictField: "ts"}, `source.replay.conflict_field: field "ts" is timestamp, want a number or a string`},
		{spec.Replay{ConflictFraction: 0.1, ConflictField: "n"}, `source.replay.conflict_field: "n" is the ordinal field, which the source fills`},
		{spec.Replay{ConflictFraction: 1.5, ConflictField: "note"}, "source.replay.conflict_fraction: must be between 0 and 1"},
	} {
		r := tc.replay
		_, err := New(Config{
			Spec:           spec.Source{Path: dir + "/a.jsonl", Ordinal: &spec.Ordinal{Field: "n"}, Replay: &r},
			Fields:         testFields(t, "id:string", "ts:timestamp", "note:string", "n:int"),
			EventTimeField: "ts",
		})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.replay, err, tc.want)
		}
	}
	// Without conflict_fraction the field is not looked at.
	r := spec.Replay{ConflictField: "x"}
	if _, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl", Replay: &r},
		Fields: testFields(t, "ts:timestamp"), EventTimeField: "ts"}); err != nil {
		t.Errorf("conflict_field without conflict_fraction: %v", err)
	}
}

// TestReplayConflictsMoveNothingElse: conflicts draw from a generator of
// their own, so turning them on adds copies and changes nothing else; each
// copy arrives at most max_delay after its record and differs from it in
// the conflict field only.
func TestReplayConflictsMoveNothingElse(t *testing.T) {
	var b strings.Builder
	t0 := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	for i := range 2000 {
		b.WriteString(`{"id":"e` + itoa(i) + `","store":"s` + itoa(i%10) + `","qty":` + itoa(i%7) + `,"ts":"` + t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339) + `"}` + "\n")
	}
	dir := writeFiles(t, map[string]string{"orders.jsonl": b.String()})
	open := func(conflict float64) []rec {
		s, err := New(Config{
			Spec: spec.Source{Path: dir + "/orders.jsonl", Replay: &spec.Replay{
				Seed: 5, Delay: spec.Duration(10 * time.Second), MaxDelay: spec.Duration(time.Minute),
				StragglerFraction: 0.1, RedeliverFraction: 0.05, ConflictFraction: conflict, ConflictField: "qty",
				Partitions: 3, PartitionBy: "store",
			}},
			Fields:         testFields(t, "id:string", "store:string", "qty:int", "ts:timestamp"),
			EventTimeField: "ts",
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return drain(t, s, 100, dir)
	}
	without, with := open(0), open(0.1)
	var rest []rec
	conflicts := 0
	for _, r := range with {
		if strings.Contains(r.Meta, "redelivery") && !slices.Contains(without, r) {
			conflicts++
			continue
		}
		rest = append(rest, r)
	}
	if !slices.Equal(rest, without) {
		t.Fatal("turning conflicts on changed the other deliveries")
	}
	if conflicts < 150 || conflicts > 250 {
		t.Errorf("%d conflicts, want about 200", conflicts)
	}
}

func itoa(i int) string { return string(appendInt(nil, i)) }
