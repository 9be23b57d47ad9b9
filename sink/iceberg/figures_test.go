package iceberg

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/sink"
	"github.com/tidemark/tidemark/sink/parquet"
)

var figures = flag.Bool("figures", false, "measure the Parquet and Iceberg sinks' figures (docs/connectors/iceberg.md, \"Figures\")")

// lakeSink is what the figures drive: rows in, a two-phase commit per
// checkpoint.
type lakeSink interface {
	sink.Results
	sink.Committer
}

// discard takes rows and commits nothing.
type discard struct{ n int }

func (d *discard) Write(_ context.Context, rows []changelog.Row) error { d.n += len(rows); return nil }
func (d *discard) Flush(context.Context) error                         { return nil }
func (d *discard) Close(context.Context) error                         { return nil }
func (d *discard) Prepare(context.Context, int64) ([]byte, error)      { return nil, nil }
func (d *discard) Commit(context.Context, int64, []byte) error         { return nil }
func (d *discard) Recover(context.Context, int64, []byte) error        { return nil }

// retailRow is a row of the Online Retail job's shape: an hour window,
// a country, a decimal revenue and a line count, version and is_final.
func retailRow(r *rand.Rand, i int, countries []string) changelog.Row {
	start := int64(1_291_190_400_000) + int64(i/40)*3_600_000
	cents := r.Int64N(10_000_000) - 1_000_000
	d := row.DecimalFromInt(cents)
	d, _ = d.Div(row.DecimalFromInt(100))
	op := changelog.Insert
	if i%3 != 0 {
		op = changelog.UpdateAfter
	}
	return changelog.Row{Op: op, WindowStart: start, WindowEnd: start + 3_600_000,
		Key: []row.Value{row.Str(countries[i%len(countries)])}, Values: []row.Value{row.Dec(d), row.Int(int64(1 + i%500))},
		Version: uint64(1 + i%3), IsFinal: i%3 == 2, WatermarkAt: start, UpdatedAt: start + 60_000}
}

var retailDesc = changelog.Desc{Stage: "revenue_hourly", Timezone: "Europe/London", EmitMode: "final",
	Key:    []changelog.Column{{Name: "Country", Kind: row.KindString}},
	Values: []changelog.Column{{Name: "net_revenue", Kind: row.KindDecimal}, {Name: "lines", Kind: row.KindInt}}}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFigures writes rows through each sink for a few seconds, a
// checkpoint (Prepare, then Commit) every second of wall time as the
// engine takes them at checkpoint.interval 1s, and prints rows/s, rows
// per CPU-second, bytes per row on disk, the commit latency (Prepare +
// Commit) p50/p99 and the files per checkpoint. Run with
//
//	go test ./sink/iceberg -run TestFigures -figures -v
func TestFigures(t *testing.T) {
	if !*figures {
		t.Skip("run with -figures")
	}
	countries := []string{"United Kingdom", "France", "Germany", "EIRE", "Spain", "Netherlands", "Belgium", "Switzerland", "Portugal", "Australia",
		"Norway", "Italy", "Channel Islands", "Finland", "Cyprus", "Sweden", "Austria", "Denmark", "Japan", "Poland", "USA", "Israel", "Unspecified",
		"Singapore", "Iceland", "Canada", "Greece", "Malta", "United Arab Emirates", "European Community", "RSA", "Lebanon", "Lithuania",
		"Brazil", "Czech Republic", "Bahrain", "Saudi Arabia", "Hong Kong"}
	ctx := context.Background()
	type result struct {
		name                     string
		rows                     int
		wall, cpu                time.Duration
		bytes                    int64
		lat                      []time.Duration
		files, checkpoints, snap int
	}
	var results []result
	for _, c := range []struct {
		name, codec, kind, mode string
	}{
		{"none (the rows' generation alone)", "", "none", "final"},
		{"parquet zstd", "zstd", "parquet", "final"},
		{"parquet snappy", "snappy", "parquet", "final"},
		{"iceberg zstd, final (appends)", "zstd", "iceberg", "final"},
		{"iceberg zstd, update (equality deletes)", "zstd", "iceberg", "update"},
	} {
		dir := t.TempDir()
		d := retailDesc
		d.EmitMode = c.mode
		var s lakeSink
		var err error
		switch c.kind {
		case "none":
			s = &discard{}
		case "parquet":
			s, err = parquet.NewResults(d, parquet.Options{Dir: dir, Compression: c.codec, ExactlyOnce: true})
		default:
			s, err = NewResults(ctx, d, Options{Warehouse: dir, Table: "revenue", Compression: c.codec, ExactlyOnce: true, Pipeline: "p", Sink: "revenue"})
		}
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.Recover(ctx, 0, nil))
		r := rand.New(rand.NewPCG(1, 2))
		batch := make([]changelog.Row, 1024)
		res := result{name: c.name}
		cpu0, start := cpuTime(), time.Now()
		last := start
		id := int64(1)
		for i := 0; time.Since(start) < 5*time.Second; i += len(batch) {
			for j := range batch {
				batch[j] = retailRow(r, i+j, countries)
			}
			must(t, s.Write(ctx, batch))
			res.rows += len(batch)
			if time.Since(last) >= time.Second {
				t0 := time.Now()
				p, err := s.Prepare(ctx, id)
				must(t, err)
				must(t, s.Commit(ctx, id, p))
				res.lat = append(res.lat, time.Since(t0))
				id++
				last = time.Now()
			}
		}
		t0 := time.Now()
		p, err := s.Prepare(ctx, id)
		must(t, err)
		must(t, s.Commit(ctx, id, p))
		res.lat = append(res.lat, time.Since(t0))
		res.wall, res.cpu = time.Since(start), cpuTime()-cpu0
		must(t, s.Close(ctx))
		res.checkpoints = int(id)
		filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
			if err == nil && !de.IsDir() {
				info, _ := de.Info()
				res.bytes += info.Size()
				if strings.HasSuffix(p, ".parquet") {
					res.files++
				}
			}
			return nil
		})
		results = append(results, res)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| sink | rows | rows/s | rows/s/core | bytes/row (on disk, metadata included) | commit p50 | commit p99 | files/checkpoint |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		slices.Sort(r.lat)
		p := func(q float64) time.Duration { return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))] }
		if r.rows == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.1f | %v | %v | %.1f |\n", r.name, r.rows, float64(r.rows)/r.wall.Seconds(), float64(r.rows)/r.cpu.Seconds(),
			float64(r.bytes)/float64(r.rows), p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond), float64(r.files)/float64(r.checkpoints))
	}
	t.Log("\n" + b.String())
}
