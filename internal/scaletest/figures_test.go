package scaletest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// TestScaleOutFigures measures the figures of docs/scale-out.md (with
// -figures), over the first 30 days of the Online Retail lines (6 input
// partitions, 4 repartition partitions, checkpoints every 300 ms in a
// shared directory, a PostgreSQL table and Kafka topics as outputs, each
// process at --parallelism 1), five runs of each, the configurations
// side by side in each round:
//
//   - throughput: input records / wall time of the run (from the start of
//     the processes until the last exits with stop_at_end: process start,
//     joining, reading, committing and the end detection included) of one
//     instance with direct assignment and exactly-once sinks (the Kafka
//     sinks transactional with the checkpoints), the same with the Kafka
//     sinks at delivery at_least_once, one instance of a group and two
//     instances of a group;
//   - failover: two instances a and b of a group; a second after b
//     committed its first checkpoints, b is killed with SIGKILL; the time
//     until a commits a checkpoint of each of b's partitions (the offset
//     metadata names a's manifest: a restored the task and committed its
//     output), the first and the last of them;
//   - restore: the bytes a read from the checkpoint store to restore tasks
//     and the time it took (its summary), as bytes per second.
//
// The medians are logged. The machine is shared with other work: the
// figures are this machine's under that load, for ratios.
func TestScaleOutFigures(t *testing.T) {
	if !*figures {
		t.Skip("measures the scale-out figures: run with -figures")
	}
	dir := t.TempDir()
	b := startBroker(t)
	pgtest.DSN(t)
	in := retailInput(t, b, dir, 30)
	records := len(in.lines)
	t.Logf("input: %d records on %d partitions", records, in.partitions)
	const runs = 5

	type config struct {
		name      string
		group     bool
		instances int
		alo       bool
	}
	configs := []config{
		{"one instance, direct assignment, exactly-once sinks", false, 1, false},
		{"one instance, direct assignment, at_least_once Kafka sinks", false, 1, true},
		{"a group of 1 instance", true, 1, false},
		{"a group of 2 instances", true, 2, false},
	}
	walls := make([][]time.Duration, len(configs))
	for r := range runs {
		for ci, c := range configs {
			pdsn, pg := pgtest.Schema(t)
			j := newJob(t, b, in, dir, fmt.Sprintf("fig%d_%d", ci, r), c.group, pdsn, pg, "")
			if c.alo {
				y, err := os.ReadFile(j.yaml)
				if err != nil {
					t.Fatal(err)
				}
				y = []byte(strings.ReplaceAll(string(y), "{type: kafka, ", "{type: kafka, delivery: at_least_once, "))
				if err := os.WriteFile(j.yaml, y, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			var ps []*proc
			for i := range c.instances {
				id := ""
				if c.group {
					id = string(rune('a' + i))
				}
				ps = append(ps, startRun(t, j.yaml, id))
			}
			var end time.Time
			for _, p := range ps {
				if !p.wait(300*time.Second) || !p.ok() {
					t.Fatalf("%s, run %d: %v\n%s", c.name, r, p.err, p.stderr)
				}
				if p.end.After(end) {
					end = p.end
				}
			}
			walls[ci] = append(walls[ci], end.Sub(start))
		}
	}
	med := make([]time.Duration, len(configs))
	for ci, c := range configs {
		med[ci] = median(walls[ci])
		t.Logf("%-62s median %7.2f s, %8.0f records/s (runs %v)", c.name, med[ci].Seconds(), float64(records)/med[ci].Seconds(), walls[ci])
	}
	t.Logf("throughput ratios (medians): 2 instances / 1 instance of a group %.2f; a group of 1 / direct exactly-once %.2f; direct at_least_once / direct exactly-once %.2f; a group of 1 / direct at_least_once %.2f",
		med[2].Seconds()/med[3].Seconds(), med[0].Seconds()/med[2].Seconds(), med[0].Seconds()/med[1].Seconds(), med[1].Seconds()/med[2].Seconds())

	// Failover and restore.
	var firsts, lasts []time.Duration
	var restoreBytes int64
	var restoreTime time.Duration
	restored := regexp.MustCompile(`restored tasks\s+(\d+)\s+\((\d+) bytes in ([^)]+)\)`)
	for r := range runs {
		pdsn, pg := pgtest.Schema(t)
		j := newJob(t, b, in, dir, fmt.Sprintf("fo_%d", r), true, pdsn, pg, "")
		a := startRunArgs(t, j.yaml, "a", []string{"--batch-size", "16"})
		bp := startRun(t, j.yaml, "b")
		var mine []string // b's partitions
		deadline := time.Now().Add(60 * time.Second)
		for len(mine) == 0 {
			if time.Now().After(deadline) || !a.running() {
				t.Fatalf("failover run %d: b committed no checkpoint\n%s\n%s", r, a.stderr, bp.stderr)
			}
			mine = committedBy(t, b, j.name, "b")
			time.Sleep(10 * time.Millisecond)
		}
		// b goes on for a second (its state grows), then is killed.
		time.Sleep(time.Second)
		if !bp.running() {
			t.Fatalf("failover run %d: b ended before it was killed\n%s", r, bp.stderr)
		}
		mine = committedBy(t, b, j.name, "b")
		killed := time.Now()
		bp.kill()
		left := map[string]bool{}
		for _, p := range mine {
			left[p] = true
		}
		var first time.Duration
		for len(left) > 0 {
			if time.Since(killed) > 60*time.Second {
				t.Fatalf("failover run %d: a took none of %v within 60 s\n%s", r, left, a.stderr)
			}
			for _, p := range committedBy(t, b, j.name, "a") {
				if left[p] {
					delete(left, p)
					if first == 0 {
						first = time.Since(killed)
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		last := time.Since(killed)
		firsts, lasts = append(firsts, first), append(lasts, last)
		if !a.wait(300*time.Second) || !a.ok() {
			t.Fatalf("failover run %d: a: %v\n%s", r, a.err, a.stderr)
		}
		m := restored.FindStringSubmatch(a.stdout.String())
		if m == nil {
			t.Fatalf("failover run %d: a's summary names no restored task:\n%s", r, a.stdout)
		}
		n, _ := strconv.ParseInt(m[2], 10, 64)
		d, err := time.ParseDuration(m[3])
		if err != nil {
			t.Fatalf("a's summary: %q: %v", m[0], err)
		}
		restoreBytes += n
		restoreTime += d
		t.Logf("failover run %d: b held %v; a committed the first %v and the last %v after the kill; a restored %s tasks, %d bytes in %v", r, mine, first.Round(time.Millisecond), last.Round(time.Millisecond), m[1], n, d)
	}
	t.Logf("failover (session_timeout %s, transaction_timeout 3s): kill -9 → the other instance committed the first of the partitions in %v, all of them in %v (medians of %d)", sessionTimeout, median(firsts).Round(time.Millisecond), median(lasts).Round(time.Millisecond), runs)
	if restoreTime > 0 {
		t.Logf("restore: %d bytes in %v over %d runs: %.1f MB/s", restoreBytes, restoreTime, runs, float64(restoreBytes)/restoreTime.Seconds()/1e6)
	}
}

// committedBy lists the partitions ("topic/p") of job name's group whose
// committed offset names a checkpoint written by instance id.
func committedBy(t *testing.T, b *broker, group, id string) []string {
	t.Helper()
	offs, err := b.adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return nil // rebalancing
	}
	var out []string
	offs.Each(func(o kadm.OffsetResponse) {
		// m-<id>-<generation>-<instance>.<process>.<attempt>[ done]
		parts := strings.SplitN(o.Metadata, "-", 4)
		if len(parts) == 4 && strings.HasPrefix(parts[3], id+".") {
			out = append(out, fmt.Sprintf("%s/%d", o.Topic, o.Partition))
		}
	})
	slices.Sort(out)
	return out
}

// median returns the median of ds (the lower middle for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)/2]
}
