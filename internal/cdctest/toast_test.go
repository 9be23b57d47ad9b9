package cdctest

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/engine"
)

// toastYAML sums the lengths of a large text column per group.
const toastYAML = `name: {{NAME}}
source:
  type: postgres_cdc
  dsn: {{DSN}}
  table: {{SCHEMA}}.docs
  publication: {{PUB}}
  poll_timeout: 100ms
  status_interval: 200ms
  schema: {grp: string, body: string, n: int, at: timestamp}
event_time: {field: at}
fields: {chars: len(body)}
key: [grp]
window: {type: tumbling, size: 1h}
allowed_lateness: 24h
aggregates: {chars: sum(chars), docs: count(), n: sum(n)}
emit: {mode: update, early_every: 100ms}
sinks:
  - {type: postgres, dsn: {{DSN}}, table: {{SCHEMA}}.sizes}
checkpoint: {dir: {{DIR}}/ck, interval: 200ms}
`

// TestToastNeverAPlaceholder: updates that leave a large (TOASTed) text
// unchanged carry no value for it; the engine takes it from the key's
// previous row, so the lengths summed per group always equal those of
// the table's text (never 0 or a placeholder's), with no record
// quarantined.
func TestToastNeverAPlaceholder(t *testing.T) {
	f := newFixture(t, `CREATE TABLE docs (id int PRIMARY KEY, grp text NOT NULL, body text NOT NULL, n int NOT NULL, at timestamptz NOT NULL)`,
		`ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL`)
	f.publish("docs")
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)
	// Bodies of 3 to 12 kB stored out of line.
	for i := range 10 {
		f.exec(fmt.Sprintf(`INSERT INTO docs SELECT %d, 'g%d', string_agg(md5(j::text || '%d'), ''), 0, '%s' FROM generate_series(1, %d) j`, i, i%3, i, at, 100+30*i))
	}
	r := f.start(toastYAML, engine.Options{Parallelism: 2})
	f.waitStreaming(r)
	for k := range 60 {
		f.exec(fmt.Sprintf(`UPDATE docs SET n = n + 1 WHERE id = %d`, k%10))
		if k%7 == 0 {
			f.exec(fmt.Sprintf(`UPDATE docs SET grp = 'g%d' WHERE id = %d`, k%4, k%10)) // a group change: the body moves with it
		}
	}
	f.exec(fmt.Sprintf(`UPDATE docs SET body = body || 'tail', n = n + 1 WHERE id = 3`))
	want := fmt.Sprintf(`SELECT grp, sum(length(body)), count(*), sum(n) FROM "%s".docs GROUP BY grp`, f.schema)
	got := fmt.Sprintf(`SELECT grp, chars, docs, n FROM "%s".sizes`, f.schema)
	f.waitFor(r, 60*time.Second, "sizes to equal the table's", func() bool {
		return len(f.query(`SELECT 1 FROM pg_tables WHERE schemaname = '`+f.schema+`' AND tablename = 'sizes'`)) == 1 &&
			len(f.query(`(`+want+`) EXCEPT ALL (`+got+`)`))+len(f.query(`(`+got+`) EXCEPT ALL (`+want+`)`)) == 0
	})
	sum, err := r.stop()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Quarantined != 0 {
		t.Fatalf("%d records quarantined (%s)", sum.Quarantined, sum.FirstViolation)
	}
	t.Logf("%v", f.query(got))
}
