package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
)

// BenchmarkFlush writes and flushes 100k upserts (1000 stores × 100
// one-minute windows, Seoul time) into a fresh table: rows/s by rows per
// upsert statement. batch=1 is the baseline of one prepared single-row
// statement per row; the sink uses defaultBatch.
func BenchmarkFlush(b *testing.B) {
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
				Version:     1,
				WatermarkAt: int64(w) * 60000,
				UpdatedAt:   int64(w) * 60000,
			})
		}
	}
	for _, batch := range []int{1, 10, 50, 100, 200} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := New(ctx, filepath.Join(dir, fmt.Sprintf("bench-%d.db", i)), "revenue", revenue)
				if err != nil {
					b.Fatal(err)
				}
				if batch > s.batch {
					s.upserts = append(s.upserts, make([]*sql.Stmt, batch-s.batch)...)
				}
				s.batch = batch
				b.StartTimer()
				if err := s.Write(ctx, rows); err != nil {
					b.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
