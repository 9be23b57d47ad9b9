package cdctest

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/internal/pgtest"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/source/pgcdc"
)

var figures = flag.Bool("figures", false, "measure the figures of docs/connectors/postgres-cdc.md (snapshot and stream rates, latency)")

// cpu returns the process's user + system CPU time.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const wideDDL = `CREATE TABLE wide (id bigint PRIMARY KEY, store text NOT NULL, amount numeric(12,2) NOT NULL, created_at timestamptz NOT NULL, status text NOT NULL, payload text NOT NULL)`

// fillWide inserts n rows of about 600 bytes (the payload 520) with ids
// from first.
func (f *fixture) fillWide(first, n, perTxn int) {
	for done := 0; done < n; done += perTxn {
		f.exec(fmt.Sprintf(`INSERT INTO wide SELECT i, 'store-' || (i %% 64), (i %% 50000) / 100.0, '2026-09-01 10:00:00+00'::timestamptz + (i %% 3600) * interval '1 second', 'paid', repeat(md5(i::text), 16) || repeat('x', 8)
			FROM generate_series(%d, %d) i`, first+done, first+min(done+perTxn, n)-1))
	}
}

// drain reads the source until want records came, returning the elapsed
// time and CPU.
func drain(t *testing.T, s *pgcdc.Source, want int) (time.Duration, time.Duration) {
	var b source.Batch
	got := 0
	start, c0 := time.Now(), cpu()
	for got < want {
		b.Reset()
		if _, err := s.Next(context.Background(), &b, 1024); err != nil {
			t.Fatal(err)
		}
		got += b.Len()
		if time.Since(start) > 5*time.Minute {
			t.Fatalf("%d of %d records in 5 minutes", got, want)
		}
	}
	return time.Since(start), cpu() - c0
}

// TestFigures measures (with -figures): the initial snapshot's rows per
// second and per CPU-second of tidemark's process, for rows of about 600
// bytes (the source alone, and a pipeline counting them per store); the
// stream's changes likewise; and the latency from an upstream commit to
// the sink commit that shows it, at a 1 s checkpoint interval.
func TestFigures(t *testing.T) {
	if !*figures {
		t.Skip("with -figures")
	}
	const rows = 200_000
	sc := row.NewSchema()
	for _, fk := range []struct {
		n string
		k row.Kind
	}{{"id", row.KindInt}, {"store", row.KindString}, {"amount", row.KindDecimal}, {"created_at", row.KindTime}, {"status", row.KindString}, {"payload", row.KindString},
		{record.FieldOp, row.KindString}, {record.FieldKey, row.KindString}, {record.FieldLSN, row.KindInt}, {record.FieldUnchanged, row.KindString}} {
		sc.Add(fk.n, fk.k)
	}
	t.Run("snapshot", func(t *testing.T) {
		f := newFixture(t, wideDDL)
		f.publish("wide")
		f.fillWide(1, rows, 50_000)
		f.exec(`VACUUM ANALYZE wide`)
		avg := f.query(`SELECT avg(pg_column_size(w.*))::int FROM "` + f.schema + `".wide w`)[0]
		s, err := pgcdc.New(pgcdc.Config{DSN: f.dsn, Table: f.schema + ".wide", Publication: f.pub, Slot: f.slot, Fields: format.Fields{Schema: sc}})
		if err != nil {
			t.Fatal(err)
		}
		wall, c := drain(t, s, rows)
		s.Close()
		t.Logf("snapshot, source alone: %d rows of %s bytes in %s: %.0f rows/s, %.0f rows per CPU-second (CPU %s)", rows, avg, wall.Round(time.Millisecond), rows/wall.Seconds(), rows/c.Seconds(), c.Round(time.Millisecond))
		pgtest.DropSlot(t, f.dsn, f.slot)
		r := f.start(`name: {{NAME}}
source: {type: postgres_cdc, dsn: {{DSN}}, table: {{SCHEMA}}.wide, publication: {{PUB}}, schema: {amount: decimal, created_at: timestamp, payload: string}}
event_time: {field: created_at}
fields: {n: len(payload)}
key: [store]
window: {type: tumbling, size: 1h}
aggregates: {rows: count(), amount: sum(amount), bytes: sum(n)}
`, engine.Options{Parallelism: 1})
		c0, start := cpu(), time.Now()
		var live *engine.Live
		f.waitFor(r, 5*time.Minute, "the snapshot", func() bool {
			r.mu.Lock()
			live = r.live
			r.mu.Unlock()
			return live != nil && live.EventsRead >= rows
		})
		wall, c = time.Since(start), cpu()-c0
		t.Logf("snapshot, pipeline at 1 task: %d rows in about %s: %.0f rows/s, %.0f rows per CPU-second", rows, wall.Round(100*time.Millisecond), rows/wall.Seconds(), rows/c.Seconds())
		r.stop()
	})
	t.Run("stream", func(t *testing.T) {
		f := newFixture(t, wideDDL)
		f.publish("wide")
		s, err := pgcdc.New(pgcdc.Config{DSN: f.dsn, Table: f.schema + ".wide", Publication: f.pub, Slot: f.slot, Fields: format.Fields{Schema: sc}, Snapshot: pgcdc.SnapshotNever})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var b source.Batch
		if _, err := s.Next(context.Background(), &b, 10); err != nil { // the slot, created now
			t.Fatal(err)
		}
		f.fillWide(1, rows, 100) // transactions of 100 inserts
		f.exec(`UPDATE wide SET amount = amount + 1, status = 'shipped' WHERE id % 2 = 0`)
		want := rows + rows/2
		wall, c := drain(t, s, want)
		t.Logf("stream, source alone: %d changes (inserts in transactions of 100, then one update of %d rows) in %s: %.0f changes/s, %.0f per CPU-second", want, rows/2, wall.Round(time.Millisecond), float64(want)/wall.Seconds(), float64(want)/c.Seconds())
	})
	t.Run("latency", func(t *testing.T) {
		f := newFixture(t, `CREATE TABLE ev (id bigint PRIMARY KEY, k text NOT NULL, at timestamptz NOT NULL)`)
		f.publish("ev")
		f.exec(`INSERT INTO ev VALUES (0, 'start', '2026-09-01 10:00:00+00'), (1, 'sentinel', '2026-09-01 12:00:00+00')`)
		// Every later row falls in the window the sentinel fired: a late
		// record within the lateness, re-emitted at once.
		r := f.start(`name: {{NAME}}
source: {type: postgres_cdc, dsn: {{DSN}}, table: {{SCHEMA}}.ev, publication: {{PUB}}, poll_timeout: 100ms, schema: {at: timestamp}}
event_time: {field: at}
key: [k]
window: {type: tumbling, size: 1m}
allowed_lateness: 24h
aggregates: {n: count()}
emit: {mode: update}
sinks: [{type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.ev_n}]
checkpoint: {dir: {{DIR}}/ck, interval: 1s}
`, engine.Options{Parallelism: 1})
		f.waitStreaming(r)
		conn := f.newConn()
		poll := f.newConn()
		f.waitFor(r, 30*time.Second, "the result table", func() bool { return f.resultExists2("ev_n") })
		var lat []time.Duration
		rng := rand.New(rand.NewPCG(5, 5))
		for i := range 200 {
			k := fmt.Sprintf("k%d", i)
			if _, err := conn.Exec(context.Background(), fmt.Sprintf(`INSERT INTO ev VALUES (%d, '%s', '2026-09-01 10:00:30+00')`, i+2, k)); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			for {
				var n int
				if err := poll.QueryRow(context.Background(), `SELECT count(*) FROM ev_n WHERE k = $1`, k).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					break
				}
				if time.Since(t0) > 30*time.Second {
					t.Fatalf("%s not in the sink after 30 s", k)
				}
				time.Sleep(2 * time.Millisecond)
			}
			lat = append(lat, time.Since(t0))
			// The next commit at a uniform phase of the checkpoint interval.
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		}
		slices.Sort(lat)
		t.Logf("latency from an upstream commit to the sink commit showing it, 1 s checkpoints, %d samples: p50 %s, p99 %s, max %s",
			len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	})
}

// resultExists2 reports whether a table of the fixture's schema exists.
func (f *fixture) resultExists2(table string) bool {
	return len(f.query(`SELECT 1 FROM pg_tables WHERE schemaname = '`+f.schema+`' AND tablename = '`+table+`'`)) == 1
}
