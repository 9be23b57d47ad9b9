package cdctest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/tidemark/tidemark/engine"
)

// idleYAML reads the idle table watched (1 s checkpoints); %s: more
// source keys.
const idleYAML = `name: {{NAME}}
source:
  type: postgres_cdc
  dsn: {{DSN}}
  table: {{SCHEMA}}.watched
  publication: {{PUB}}
  poll_timeout: 100ms
  status_interval: 200ms
  %s
  schema: {v: int, at: timestamp}
event_time: {field: at}
window: {type: tumbling, size: 1m}
aggregates: {n: count()}
sinks:
  - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.counts}
checkpoint: {dir: {{DIR}}/ck, interval: 1s}
`

// TestIdleSlotMoves: the watched table is idle while another table of
// the database (not in the publication) writes; the slot's
// confirmed_flush_lsn still follows the server: at every sample it has
// reached the WAL position of two checkpoint intervals before (plus
// 0.5 s for a loaded machine). With a heartbeat too.
func TestIdleSlotMoves(t *testing.T) {
	for _, c := range []struct{ name, keys string }{
		{"keepalives", ""},
		{"heartbeat", "heartbeat_interval: 300ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, `CREATE TABLE watched (id int PRIMARY KEY, v int, at timestamptz)`, `CREATE TABLE busy (id serial PRIMARY KEY, pad text)`)
			f.publish("watched")
			f.exec(`INSERT INTO watched VALUES (1, 1, now())`)
			r := f.start(fmt.Sprintf(idleYAML, c.keys), engine.Options{Parallelism: 1})
			f.waitStreaming(r)
			ctx, stop := context.WithCancel(context.Background())
			conn := f.newConn()
			done := make(chan error, 1)
			go func() {
				for ctx.Err() == nil {
					if _, err := conn.Exec(ctx, `INSERT INTO busy (pad) SELECT repeat('x', 200) FROM generate_series(1, 20)`); err != nil && ctx.Err() == nil {
						done <- err
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				done <- nil
			}()
			type sample struct {
				at  time.Time
				lsn uint64
			}
			var samples []sample
			lsn := func(q string) uint64 {
				v := f.query(q)
				if len(v) != 1 {
					t.Fatalf("%s: %v", q, v)
				}
				l, err := pglogrepl.ParseLSN(v[0])
				if err != nil {
					t.Fatal(err)
				}
				return uint64(l)
			}
			bound := 2*time.Second + 500*time.Millisecond
			start := time.Now()
			worst := time.Duration(0)
			checked := 0
			for time.Since(start) < 8*time.Second {
				now := time.Now()
				samples = append(samples, sample{now, lsn(`SELECT pg_current_wal_lsn()`)})
				conf := lsn(`SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '` + f.slot + `'`)
				// The oldest sample the slot has not reached.
				for _, s := range samples {
					if s.lsn > conf {
						if lag := now.Sub(s.at); lag > worst {
							worst = lag
						}
						break
					}
				}
				if now.Sub(start) > bound {
					checked++
					if worst > bound {
						t.Fatalf("confirmed_flush_lsn %s trails the server by %s (bound %s)", pglogrepl.LSN(conf), worst, bound)
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			first, last := samples[0].lsn, samples[len(samples)-1].lsn
			if last-first < 100_000 {
				t.Fatalf("the busy table wrote only %d bytes of WAL", last-first)
			}
			t.Logf("WAL grew %s bytes in %s; the slot trailed by at most %s over %d samples", strconv.FormatUint(last-first, 10), time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond), checked)
		})
	}
}
