package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// TestMatchesNaiveModel checks the table after every transaction against a
// naive model that applies the rows one by one: an upsert replaces a row
// of a lower or equal version or inserts a missing one, a delete removes a
// row of a lower version, update_before does nothing. Keys are often NULL,
// versions arrive in any order (so batches need several rounds), the same
// key recurs within a transaction, and multi-row statements are small so
// that they split at every boundary. Half the transactions go through
// Prepare and Commit, the others through an AtLeastOnce Flush.
func TestMatchesNaiveModel(t *testing.T) {
	bothMethods(t, func(t *testing.T, method int) {
		dsn, schema := testSchema(t)
		d := changelog.Desc{
			Stage:  "model",
			Key:    []changelog.Column{{Name: "store", Kind: row.KindString}, {Name: "region", Kind: row.KindDecimal}},
			Values: []changelog.Column{{Name: "n", Kind: row.KindInt}},
		}
		genKey := rapid.Custom(func(t *rapid.T) []row.Value {
			store := rapid.SampledFrom([]row.Value{row.Null, row.Str("a"), row.Str("b")}).Draw(t, "store")
			region := rapid.SampledFrom([]string{"null", "1", "1.0", "2"}).Draw(t, "region")
			if region == "null" {
				return []row.Value{store, row.Null}
			}
			r, _ := row.ParseDecimal([]byte(region))
			return []row.Value{store, row.Dec(r)}
		})
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		table := schema + ".model"
		// Two sinks on one table at once, as the instances of a group write
		// it (one writer per table otherwise).
		s := newSink(t, dsn, table, d, Options{Group: "model"})
		flush := newSink(t, dsn, table, d, Options{AtLeastOnce: true, Group: "model"})
		s.method, flush.method = method, method
		var id int64 // checkpoint ids increase across iterations
		rapid.Check(t, func(rt *rapid.T) {
			if _, err := conn.Exec(ctx, "DELETE FROM "+table); err != nil {
				rt.Fatal(err)
			}
			s.perStmt = rapid.IntRange(1, 3).Draw(rt, "perStmt")
			flush.perStmt = s.perStmt
			model := map[string]string{}
			for f, nTx := 1, rapid.IntRange(1, 4).Draw(rt, "transactions"); f <= nTx; f++ {
				var rows []changelog.Row
				for n := rapid.IntRange(0, 12).Draw(rt, "rows"); n > 0; n-- {
					r := changelog.Row{
						Op:          changelog.Op(rapid.IntRange(0, 3).Draw(rt, "op")),
						WindowStart: rapid.Int64Range(0, 1).Draw(rt, "window") * 60000,
						Key:         genKey.Draw(rt, "key"),
						Values:      []row.Value{row.Int(rapid.Int64Range(0, 99).Draw(rt, "n"))},
						Version:     rapid.Uint64Range(1, 6).Draw(rt, "version"),
					}
					r.WindowEnd = r.WindowStart + 60000
					rows = append(rows, r)
					applyModel(model, &r)
				}
				if rapid.Bool().Draw(rt, "checkpoint") {
					if err := s.Write(ctx, rows); err != nil {
						rt.Fatal(err)
					}
					id++
					p, err := s.Prepare(ctx, id)
					if err != nil {
						rt.Fatal(err)
					}
					if err := s.Commit(ctx, id, p); err != nil {
						rt.Fatal(err)
					}
				} else {
					if err := flush.Write(ctx, rows); err != nil {
						rt.Fatal(err)
					}
					if err := flush.Flush(ctx); err != nil {
						rt.Fatal(err)
					}
				}
				if got, want := readModelTable(rt, conn, table), modelText(model); got != want {
					rt.Fatalf("table\n%s\nmodel\n%s", got, want)
				}
			}
		})
	})
}

// modelKey identifies a window and key as the table's unique key does
// (decimals by value).
func modelKey(ws int64, key []row.Value) string {
	region := "NULL"
	if !key[1].IsNull() {
		region = key[1].D.String()
	}
	store := "NULL"
	if !key[0].IsNull() {
		store = key[0].S
	}
	return fmt.Sprintf("%d/%s/%s", ws, store, region)
}

// applyModel applies one row to the model: key → "v<version> n=<n>".
func applyModel(m map[string]string, r *changelog.Row) {
	k := modelKey(r.WindowStart, r.Key)
	old, ok := m[k]
	var oldVersion uint64
	if ok {
		fmt.Sscanf(old, "v%d", &oldVersion)
	}
	switch r.Op {
	case changelog.Insert, changelog.UpdateAfter:
		if !ok || r.Version >= oldVersion {
			m[k] = fmt.Sprintf("v%d n=%v", r.Version, r.Values[0])
		}
	case changelog.Delete:
		if ok && oldVersion < r.Version {
			delete(m, k)
		}
	}
}

func modelText(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for k, v := range m {
		lines = append(lines, k+" "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func readModelTable(t *rapid.T, conn *pgx.Conn, table string) string {
	rows, err := conn.Query(context.Background(),
		`SELECT (extract(epoch FROM window_start) * 1000)::bigint, coalesce(store, 'NULL'), coalesce(trim_scale(region)::text, 'NULL'), n, version FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var ws, n, version int64
		var store, region string
		if err := rows.Scan(&ws, &store, &region, &n, &version); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%d/%s/%s", ws, store, region)
		if _, dup := m[k]; dup {
			t.Fatalf("two rows for key %s", k)
		}
		m[k] = fmt.Sprintf("v%d n=%d", version, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return modelText(m)
}
