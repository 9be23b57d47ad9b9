package pgcdc

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
)

var ordersDDL = []string{
	`CREATE TABLE orders (id int PRIMARY KEY, store text NOT NULL, amount numeric(12,2), note text, created_at timestamptz NOT NULL)`,
}

func TestSnapshotThenStream(t *testing.T) {
	f := newFixture(t, "orders", ordersDDL...)
	f.exec(`INSERT INTO orders VALUES (1, 's1', 10.50, 'a', '2026-09-01 10:00:00+09'), (2, 's2', 20, NULL, '2026-09-01 10:01:00.5+09'), (3, 's1', 30.25, 'c', '2026-09-01 10:02:00+09')`)
	sc := schemaOf(t, "id:int", "store:string", "amount:decimal", "created_at:timestamp",
		source.FieldOp+":string", source.FieldKey+":string", source.FieldLSN+":int", source.FieldXid+":int", source.FieldUnchanged+":string")
	s, err := New(f.config(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, _ := read(t, s, 3, sc)
	check(t, sortedCopy(got),
		"r 1 id=1 store=s1 amount=10.50 created_at=2026-09-01T01:00:00Z",
		"r 2 id=2 store=s2 amount=20.00 created_at=2026-09-01T01:01:00.500Z",
		"r 3 id=3 store=s1 amount=30.25 created_at=2026-09-01T01:02:00Z")
	if s.AtBoundary() {
		// The snapshot's last batch may end before its end is seen.
		var b source.Batch
		if _, err := s.Next(context.Background(), &b, 100); err != nil {
			t.Fatal(err)
		}
	}
	f.tx(`INSERT INTO orders VALUES (4, 's3', 5, 'd', '2026-09-01 10:03:00+09')`,
		`UPDATE orders SET amount = 11 WHERE id = 1`,
		`DELETE FROM orders WHERE id = 2`,
		`UPDATE orders SET id = 30 WHERE id = 3`)
	got, metas := read(t, s, 5, sc)
	check(t, got,
		"c 4 id=4 store=s3 amount=5.00 created_at=2026-09-01T01:03:00Z",
		"u 1 id=1 store=s1 amount=11.00 created_at=2026-09-01T01:00:00Z",
		"d 2 id=2 store=null amount=null created_at=null",
		"d 3 id=3 store=null amount=null created_at=null",
		"c 30 id=30 store=s1 amount=30.25 created_at=2026-09-01T01:02:00Z")
	if !s.AtBoundary() {
		t.Fatal("AtBoundary false after a whole transaction")
	}
	for i := 1; i < len(metas); i++ {
		if metas[i].Pos.Offset < metas[i-1].Pos.Offset {
			t.Fatalf("record %d: LSN %d before the previous %d", i, metas[i].Pos.Offset, metas[i-1].Pos.Offset)
		}
	}
	if !strings.Contains(string(metas[0].Raw), `"__op":"c"`) || !strings.Contains(string(metas[0].Raw), `"amount":5.00`) {
		t.Fatalf("raw %s", metas[0].Raw)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
