package crashtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// The event ledger scenario of the second article: a payment e100 of
// 25,000 and a refund e101 of −5,000 in one store and minute, then e101
// delivered again. The aggregate must be 20,000 whatever happens to the
// stream's own dedup state. Payments of 1 in store-8 (f0…f599) come
// between them, so that the run spans several checkpoints.
var ledgerEvents = func() string {
	var b strings.Builder
	filler := func(from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, `{"event_id":"f%d","event_type":"PAYMENT","store_id":"store-8","amount":1,"paid_at":"2026-09-01T10:00:%02d+09:00"}`+"\n", i, i%60)
		}
	}
	b.WriteString(`{"event_id":"e100","event_type":"PAYMENT","store_id":"store-7","amount":25000,"paid_at":"2026-09-01T10:00:10+09:00"}` + "\n")
	filler(0, 300)
	b.WriteString(e101)
	filler(300, 600)
	b.WriteString(e101)
	return b.String()
}()

const e101 = `{"event_id":"e101","event_type":"REFUND","store_id":"store-7","amount":5000,"paid_at":"2026-09-01T10:00:20+09:00"}` + "\n"

const ledgerYAML = `name: revenue-ledger
source: {type: file, path: {{DIR}}/events.jsonl, schema: {amount: decimal}}
event_time: {field: paid_at}
dedup: {key: event_id, ttl: 24h}
conflicts: {sink: {type: jsonl, path: {{DIR}}/conflicts.jsonl}}
fields: {delta: 'event_type == "REFUND" ? -amount : amount'}
key: [store_id]
window: {type: tumbling, size: 1m, timezone: Asia/Seoul}
aggregates: {net: sum(delta), events: count()}
sinks:
  - {type: postgres, dsn: "{{DSN}}", mode: ledger, table: {{PG}}.revenue_minute, ledger_table: {{PG}}.revenue_event_ledger}
checkpoint: {dir: {{DIR}}/ck, interval: 1ms, retain: 2}
`

// ledgerRun runs the ledger pipeline in dir once, one record per batch,
// with TIDEMARK_FAULT set to fault; it reports whether the run was killed.
func ledgerRun(t *testing.T, dir, fault string) (wasKilled bool, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, "run", "--batch-size", "1", filepath.Join(dir, "pipeline.yaml"))
	var out bytes.Buffer
	cmd.Stderr = &out
	cmd.Stdout = &out
	cmd.Env = append(os.Environ(), "TIDEMARK_FAULT="+fault)
	err := cmd.Run()
	if killed(err) {
		return true, out.String()
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return false, out.String()
}

func ledgerJob(t *testing.T) (dir, dsn, pg string) {
	t.Helper()
	dir = t.TempDir()
	dsn, pg = pgtest.Schema(t)
	y := strings.NewReplacer("{{DIR}}", dir, "{{DSN}}", dsn, "{{PG}}", pg).Replace(ledgerYAML)
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(ledgerEvents), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, dsn, pg
}

func checkLedger(t *testing.T, dsn, pg string) {
	t.Helper()
	pgtest.Check(t, dsn, `SELECT * FROM "`+pg+`".revenue_minute ORDER BY store_id`,
		"2026-09-01 10:00:00+09 | 2026-09-01 10:01:00+09 | store-7 | 20000 | 2\n"+
			"2026-09-01 10:00:00+09 | 2026-09-01 10:01:00+09 | store-8 | 600 | 600\n")
	pgtest.Check(t, dsn, `SELECT event_id, net FROM "`+pg+`".revenue_event_ledger WHERE event_id LIKE 'e%' ORDER BY event_id`, "e100 | 25000\ne101 | -5000\n")
}

// TestLedgerCrashBetweenLedgerAndCheckpoint: SIGKILL after the ledger
// committed events and before the checkpoint that covers them; the
// restart replays those events, the ledger finds their ids, and the
// aggregate stays 20,000. Then the stream's dedup state is lost outright
// (checkpoints deleted): still 20,000; and a redelivery of e101 with
// another payload goes to the conflict output and changes nothing.
func TestLedgerCrashBetweenLedgerAndCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
	}{
		// Killed once the ledger committed the events of checkpoint 1.
		{"before checkpoint 1", "applied:revenue-ledger: sinks[0]:1"},
		// Killed once the ledger committed the events of checkpoint 3
		// (checkpoint 2 written): the restart resumes from checkpoint 2.
		{"before checkpoint 3", "applied:revenue-ledger: sinks[0]:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, dsn, pg := ledgerJob(t)
			killed, out := ledgerRun(t, dir, tc.fault)
			if !killed {
				t.Fatalf("the fault point was not reached:\n%s", out)
			}
			// Which events the checkpoints cover depends on the wall-clock
			// interval; what the ledger holds at the kill does not matter:
			// the restart must meet at least one event it already holds,
			// and add exactly the others.
			inLedger, _ := strconv.Atoi(strings.TrimSpace(pgtest.Dump(t, dsn, `SELECT count(*) FROM "`+pg+`".revenue_event_ledger`)))
			if inLedger == 0 {
				t.Fatal("the ledger is empty at the kill")
			}
			_, out = ledgerRun(t, dir, "")
			m := regexp.MustCompile(`ledger revenue-ledger: sinks\[0\]: (\d+) applied, (\d+) already in the ledger, 0 conflicts`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no ledger line in the restart's summary:\n%s", out)
			}
			applied, dups := atoi(m[1]), atoi(m[2])
			if applied != 602-inLedger || dups < 1 {
				t.Errorf("restart: %d applied, %d already in the ledger; want %d applied (the ledger held %d of 602 ids) and at least 1 already there", applied, dups, 602-inLedger, inLedger)
			}
			t.Logf("the ledger held %d ids at the kill; the restart applied %d and met %d already there", inLedger, applied, dups)
			checkLedger(t, dsn, pg)

			// The stream forgets every id (no checkpoint): a full replay
			// changes nothing either.
			os.RemoveAll(filepath.Join(dir, "ck"))
			_, out = ledgerRun(t, dir, "")
			if !strings.Contains(out, "0 applied, 602 already in the ledger, 0 conflicts") {
				t.Errorf("replay without dedup state:\n%s", out)
			}
			checkLedger(t, dsn, pg)

			// e101 again with another amount, the stream not knowing e101:
			// a ledger conflict.
			os.RemoveAll(filepath.Join(dir, "ck"))
			os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Replace(e101, `"amount":5000`, `"amount":7000`, 1)), 0o644)
			_, out = ledgerRun(t, dir, "")
			if !strings.Contains(out, "0 applied, 0 already in the ledger, 1 conflicts") {
				t.Errorf("conflicting redelivery:\n%s", out)
			}
			checkLedger(t, dsn, pg)
			b, err := os.ReadFile(filepath.Join(dir, "conflicts.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "\n"); n != 1 || !strings.Contains(string(b), `"event_id":"e101"`) ||
				!strings.Contains(string(b), `"first_payload":null`) || !strings.Contains(string(b), `"amount":7000`) {
				t.Errorf("conflicts.jsonl: want one record for e101, the ledger's payload unknown, the new one of 7000; got\n%s", b)
			}
		})
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
