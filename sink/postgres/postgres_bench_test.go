package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// benchRows returns 100k upserts: 1000 stores × 100 one-minute windows, a
// text key, a numeric and a bigint, at the given version.
func benchRows(version uint64) []changelog.Row {
	const stores, windows = 1000, 100
	rows := make([]changelog.Row, 0, stores*windows)
	amount, _ := row.ParseDecimal([]byte("1234.56"))
	for w := 0; w < windows; w++ {
		for s := 0; s < stores; s++ {
			rows = append(rows, changelog.Row{
				Op:          changelog.Insert,
				WindowStart: int64(w) * 60000,
				WindowEnd:   int64(w+1) * 60000,
				Key:         []row.Value{row.Str(fmt.Sprintf("store-%04d", s))},
				Values:      []row.Value{row.Dec(amount), row.Int(int64(s))},
				Version:     version,
				WatermarkAt: int64(w) * 60000,
				UpdatedAt:   int64(w) * 60000,
			})
		}
	}
	return rows
}

// BenchmarkResults writes 100k result rows through Write, Prepare and
// Commit (one transaction) into local PostgreSQL and reports rows/s, for
// each way of applying rows: copy (COPY into a temporary staging table,
// then INSERT … SELECT … ON CONFLICT), and values/N (multi-row INSERT …
// VALUES … ON CONFLICT of N rows, pipelined). "insert" starts from an
// empty table; "update" overwrites the 100k rows of a lower version (the
// steady state of update mode).
//
//	go test -run '^$' -bench BenchmarkResults -benchtime 5x ./sink/postgres
func BenchmarkResults(b *testing.B) {
	ctx := context.Background()
	dsn, schema := testSchema(b)
	first, second := benchRows(1), benchRows(2)
	for _, m := range []struct {
		name    string
		method  int
		perStmt int
	}{
		{"copy", applyCopy, 0},
		{"values/100", applyValues, 100},
		{"values/500", applyValues, 500},
		{"values/1000", applyValues, 1000},
	} {
		for _, mode := range []string{"insert", "update"} {
			b.Run(m.name+"/"+mode, func(b *testing.B) {
				table := schema + ".bench"
				s := newSink(b, dsn, table, revenue, Options{})
				s.method = m.method
				if m.perStmt > 0 {
					s.perStmt = m.perStmt
				}
				if err := s.Recover(ctx, 0, nil); err != nil { // forget the previous run's marker
					b.Fatal(err)
				}
				var id int64
				commitRows := func(rows []changelog.Row) {
					id++
					if err := s.Write(ctx, rows); err != nil {
						b.Fatal(err)
					}
					p, err := s.Prepare(ctx, id)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Commit(ctx, id, p); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					exec(b, dsn, "TRUNCATE "+table)
					if mode == "update" {
						commitRows(first)
					}
					b.StartTimer()
					commitRows(second)
				}
				b.StopTimer()
				check(b, dsn, "SELECT count(*), min(version) FROM "+table, "100000 | 2\n")
				b.ReportMetric(float64(b.N*len(second))/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkLedgerApply applies batches of 1024 new events (one Apply, one
// transaction each; 100 stores, one-minute windows, a decimal sum and a
// count) to a ledger and reports events/s; "replay" applies the same
// batches again, every event a duplicate.
//
//	go test -run '^$' -bench BenchmarkLedgerApply -benchtime 50x ./sink/postgres
func BenchmarkLedgerApply(b *testing.B) {
	dsn, schema := testSchema(b)
	amount, _ := row.ParseDecimal([]byte("12.34"))
	run := 0 // ids are new in every run of a sub-benchmark
	events := func(n int) []LedgerEvent {
		evs := make([]LedgerEvent, 1024)
		for i := range evs {
			seq := int64(n*len(evs) + i)
			w := seq / 5000 * 60000
			evs[i] = LedgerEvent{
				EventID: fmt.Sprintf("r%d-e%09d", run, seq), PayloadHash: seq, EventTime: w + seq%60000,
				WindowStart: w, WindowEnd: w + 60000,
				Key:    []row.Value{row.Str(fmt.Sprintf("store-%03d", seq%100))},
				Deltas: []row.Value{row.Dec(amount), row.Null},
			}
		}
		return evs
	}
	for _, mode := range []string{"new", "replay"} {
		b.Run(mode, func(b *testing.B) {
			cfg := revenueLedger(schema)
			cfg.Table += "_" + mode
			cfg.AggregateTable += "_" + mode
			l := newLedger(b, dsn, cfg)
			run++
			batches := make([][]LedgerEvent, b.N)
			for i := range batches {
				batches[i] = events(i)
				if mode == "replay" {
					apply(b, l, batches[i]...)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := apply(b, l, batches[i]...)
				if mode == "new" && res.Applied != len(batches[i]) || mode == "replay" && res.Duplicates != len(batches[i]) {
					b.Fatalf("batch %d: %+v", i, res)
				}
			}
			b.ReportMetric(float64(b.N*1024)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
