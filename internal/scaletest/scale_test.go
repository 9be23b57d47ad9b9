package scaletest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// chaos runs a group of instances of j through a seeded schedule and
// waits until the group ends (stop_at_end: every instance exits 0 once
// the whole group read its input and committed everything). The
// schedule, each step at a seeded instant (a fraction of est, the time
// one instance takes):
//
//  1. one instance runs;
//  2. two more start (1 → 3);
//  3. one of the three is killed with SIGKILL;
//  4. one starts: the killed one again (its static membership and
//     transactional id: it takes its partitions back and fences its own
//     open transaction) or a new one (the group waits for the killed
//     member's session to expire and its transaction to time out);
//  5. all but one stop with SIGTERM (→ 1): each commits and leaves.
//
// A step the group has finished before is skipped. It returns what
// happened, for the log.
func chaos(t *testing.T, b *broker, j *job, seed uint64, est time.Duration, env ...string) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5ca1e))
	var procs []*proc
	var log []string
	next := 0
	startOne := func(id string) {
		if id == "" {
			id = string(rune('a' + next))
			next++
		}
		pid := id
		if os.Getenv("SCALETEST_NOSTATIC") != "" {
			pid = ""
		}
		procs = append(procs, startRun(t, j.yaml, pid, env...))
		procs[len(procs)-1].id = id
		log = append(log, "start "+id)
	}
	running := func() []*proc {
		var out []*proc
		for _, p := range procs {
			if p.running() {
				out = append(out, p)
			}
		}
		return out
	}
	t0 := time.Now()
	// sleep waits a seeded fraction of est, and reports whether the group
	// is still running.
	sleep := func(lo, hi float64) bool {
		d := time.Duration((lo + r.Float64()*(hi-lo)) * float64(est))
		time.Sleep(d)
		if len(running()) == 0 {
			log = append(log, fmt.Sprintf("group done at %v", time.Since(t0).Round(10*time.Millisecond)))
			return false
		}
		return true
	}
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	startOne("")
	steps := func() {
		if !sleep(0.05, 0.35) {
			return
		}
		startOne("")
		startOne("")
		if !sleep(0.1, 0.4) {
			return
		}
		rs := running()
		victim := rs[r.IntN(len(rs))]
		victim.kill()
		log = append(log, fmt.Sprintf("kill -9 %s at %v", victim.id, time.Since(t0).Round(10*time.Millisecond)))
		if !sleep(0, 0.3) {
			// The others may finish without it.
		}
		if r.IntN(2) == 0 {
			startOne(victim.id)
		} else {
			startOne("")
		}
		if !sleep(0.1, 0.5) {
			return
		}
		rs = running()
		keep := rs[r.IntN(len(rs))]
		for _, p := range rs {
			if p != keep {
				p.term()
				log = append(log, fmt.Sprintf("stop %s at %v", p.id, time.Since(t0).Round(10*time.Millisecond)))
			}
		}
	}
	steps()
	for _, p := range procs {
		if !p.wait(120 * time.Second) {
			t.Fatalf("%s: instance %s still running after 120 s; schedule %s\nits log:\n%s", j.name, p.id, strings.Join(log, ", "), p.stderr)
		}
	}
	if len(log) == 0 || !strings.HasPrefix(log[len(log)-1], "group done") {
		log = append(log, fmt.Sprintf("group done at %v", time.Since(t0).Round(10*time.Millisecond)))
	}
	ids := map[string]bool{}
	for _, p := range procs {
		ids["tidemark-"+j.name+"-"+p.id] = true
	}
	b.openTransactions(t, slices.Sorted(maps.Keys(ids)), append(j.topics(), j.name+"-repartition")...)
	for _, p := range procs {
		if !p.ok() {
			t.Errorf("%s: instance %s: %v (schedule %s)\n%s", j.name, p.id, p.err, strings.Join(log, ", "), p.stderr)
		}
	}
	return strings.Join(log, ", ")
}

// pgStore returns a checkpoint.store URL of dsn's database whose first
// schema is schema.
func pgStore(t *testing.T, dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("TIDEMARK_TEST_POSTGRES %q: %v", dsn, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestScaleOut is the harness of docs/scale-out.md: for each seed, a
// group of `tidemark run` processes over one of two inputs — the Online
// Retail lines and Nexmark bids, each perturbed and loaded into a topic
// of 6 or 4 partitions — is started, killed, restarted and scaled 1 → 3
// → 1 (chaos), keeping its checkpoints in a shared directory or in
// PostgreSQL (every other seed), and its committed outputs are checked
// (checkRun) against the model of the input and against one instance's
// run with direct assignment over the same topic. 10 seeds; 100 with
// -long.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker and dozens of tidemark processes")
	}
	dir := t.TempDir()
	b := startBroker(t)
	pgtest.DSN(t) // skips or fails first when PostgreSQL is down
	inputs := []*input{retailInput(t, b, dir, 8), nexmarkInput(t, b, dir, 12000)}
	type base struct {
		f   fates
		ref *outputs
		est time.Duration
	}
	bases := map[string]*base{}
	for _, in := range inputs {
		bs := &base{f: in.account(t)}
		bases[in.name] = bs
		t.Logf("input %s: %d records: %d quarantined, %d duplicates, %d conflicts", in.name, bs.f.in, bs.f.quarantined, bs.f.duplicates, bs.f.conflicts)
		// The single-instance reference and one instance of a group run in
		// the test itself (not subtests), so that -run picks seeds alone.
		pdsn, pg := pgtest.Schema(t)
		ref := newJob(t, b, in, dir, in.name+"_ref", false, pdsn, pg, "")
		p := startRun(t, ref.yaml, "")
		if !p.wait(120*time.Second) || !p.ok() {
			t.Fatalf("reference run: %v\n%s", p.err, p.stderr)
		}
		bs.ref = readOutputs(t, b, ref)
		checkRun(t, ref, bs.f, bs.ref, nil)
		if len(bs.ref.late) == 0 {
			t.Errorf("the reference run of %s has no late record: the normal stage's lateness is not exercised", in.name)
		}
		pdsn, pg = pgtest.Schema(t)
		j := newJob(t, b, in, dir, in.name+"_solo", true, pdsn, pg, "")
		start := time.Now()
		p = startRun(t, j.yaml, "solo")
		if !p.wait(120*time.Second) || !p.ok() {
			t.Fatalf("one instance: %v\n%s", p.err, p.stderr)
		}
		bs.est = time.Since(start)
		checkRun(t, j, bs.f, readOutputs(t, b, j), bs.ref)
		t.Logf("input %s: one instance of a group took %v", in.name, bs.est)
	}
	if t.Failed() {
		return
	}
	seeds := 10
	if *long {
		seeds = 100
	}
	for seed := range seeds {
		in := inputs[seed%len(inputs)]
		bs := bases[in.name]
		store := "dir"
		if seed/2%2 == 1 {
			store = "postgres"
		}
		t.Run(fmt.Sprintf("seed%d-%s-%s", seed, in.name, store), func(t *testing.T) {
			pdsn, pg := pgtest.Schema(t)
			st := ""
			if store == "postgres" {
				st = pgStore(t, pdsn, pg)
			}
			j := newJob(t, b, in, filepath.Join(dir), fmt.Sprintf("%s_s%d", in.name, seed), true, pdsn, pg, st)
			log := chaos(t, b, j, uint64(seed), bs.est)
			o := readOutputs(t, b, j)
			checkRun(t, j, bs.f, o, bs.ref)
			t.Logf("%s: %s; %d late", j.name, log, len(o.late))
		})
	}
}
