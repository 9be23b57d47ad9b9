package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// TestMatchesNaiveModel checks the table after every Flush against a naive
// model that applies the rows one by one: an upsert replaces a row of a
// lower version or inserts a missing one, a delete removes a row of a
// lower version, update_before does nothing. Keys are often NULL, batches
// are small so that multi-row statements split at every boundary, and the
// same key recurs within a flush.
func TestMatchesNaiveModel(t *testing.T) {
	dir := t.TempDir()
	d := changelog.Desc{
		Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindInt}},
		Values: []changelog.Column{{Name: "n", Kind: row.KindInt}},
	}
	genKey := rapid.Custom(func(t *rapid.T) []row.Value {
		store := rapid.SampledFrom([]row.Value{row.Null, row.Str("a"), row.Str("b")}).Draw(t, "store")
		region := rapid.SampledFrom([]row.Value{row.Null, row.Int(1)}).Draw(t, "region")
		return []row.Value{store, region}
	})
	iteration := 0
	rapid.Check(t, func(t *rapid.T) {
		iteration++
		ctx := context.Background()
		path := filepath.Join(dir, fmt.Sprintf("model-%d.db", iteration))
		s, err := New(ctx, path, "t", d)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		s.batch = rapid.IntRange(1, 4).Draw(t, "batch")
		model := map[string]string{}
		for f := rapid.IntRange(1, 4).Draw(t, "flushes"); f > 0; f-- {
			var rows []changelog.Row
			for n := rapid.IntRange(0, 12).Draw(t, "rows"); n > 0; n-- {
				r := changelog.Row{
					Op:          changelog.Op(rapid.IntRange(0, 3).Draw(t, "op")),
					WindowStart: rapid.Int64Range(0, 1).Draw(t, "window") * 60000,
					Key:         genKey.Draw(t, "key"),
					Values:      []row.Value{row.Int(rapid.Int64Range(0, 99).Draw(t, "n"))},
					Version:     rapid.Uint64Range(1, 6).Draw(t, "version"),
				}
				r.WindowEnd = r.WindowStart + 60000
				rows = append(rows, r)
				applyModel(model, &r)
			}
			if err := s.Write(ctx, rows); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got := readTable(t, s.db)
			if fmt.Sprint(got) != fmt.Sprint(model) {
				t.Fatalf("table\n%v\nmodel\n%v", got, model)
			}
		}
	})
}

func modelKey(r *changelog.Row) string {
	return fmt.Sprintf("%d/%v/%v", r.WindowStart, r.Key[0], r.Key[1])
}

func applyModel(m map[string]string, r *changelog.Row) {
	k := modelKey(r)
	old, ok := m[k]
	var oldVersion uint64
	if ok {
		fmt.Sscanf(old, "v%d", &oldVersion)
	}
	switch r.Op {
	case changelog.Insert, changelog.UpdateAfter:
		if !ok || r.Version > oldVersion {
			m[k] = fmt.Sprintf("v%d n=%v", r.Version, r.Values[0])
		}
	case changelog.Delete:
		if ok && oldVersion < r.Version {
			delete(m, k)
		}
	}
}

func readTable(t *rapid.T, db *sql.DB) map[string]string {
	rows, err := db.Query(`SELECT window_start, store, region, n, version FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var start string
		var store sql.NullString
		var region sql.NullInt64
		var n, version int64
		if err := rows.Scan(&start, &store, &region, &n, &version); err != nil {
			t.Fatal(err)
		}
		r := changelog.Row{Key: []row.Value{row.Null, row.Null}}
		if start != "1970-01-01T00:00:00Z" {
			r.WindowStart = 60000
		}
		if store.Valid {
			r.Key[0] = row.Str(store.String)
		}
		if region.Valid {
			r.Key[1] = row.Int(region.Int64)
		}
		k := modelKey(&r)
		if _, dup := got[k]; dup {
			t.Fatalf("two rows for key %s", k)
		}
		got[k] = fmt.Sprintf("v%d n=%d", version, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
