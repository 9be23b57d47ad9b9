package scaletest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// The kinds of fault of a pause schedule (pauseKind).
var pauseKinds = []string{"steady", "rebalance", "commit", "expiry"}

// pauseKind is seed's kind: each lane of TestBrokerPauses (seeds l, l+4,
// l+8, …) runs every kind in turn.
func pauseKind(seed uint64) string {
	return pauseKinds[(seed+seed/4)%uint64(len(pauseKinds))]
}

// pauses runs a group of instances of j through a seeded schedule of
// broker pauses and waits until the group ends. Two instances start;
// after a seeded fraction of est (the time one instance takes):
//
//   - steady: the broker is stopped (SIGSTOP) for 2–15 s while both run;
//   - rebalance: a third instance starts and the broker is stopped 0–150
//     ms later, while the group is joining and syncing;
//   - commit: the broker is stopped when instance a reaches the
//     "prepared" point of its seeded commit (TIDEMARK_FAULT note: its
//     checkpoints written, its transaction about to end), so the
//     transaction's end meets a stopped broker;
//   - expiry: one instance is stopped (SIGSTOP) for 2–6 s — longer than
//     its session timeout and transaction timeout, so the group expires
//     it and moves its partitions while it is frozen — and continues as a
//     member the group no longer knows; then the broker is stopped too.
//
// Every pause outlasts the session timeout: when the broker runs again
// its group sessions expire (UNKNOWN_MEMBER_ID for every member that
// heartbeats next). Afterwards, with a seeded coin, one instance stops
// with SIGTERM (scale-in). Every instance must end with exit 0.
func pauses(t *testing.T, b *broker, j *job, seed uint64, est time.Duration) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x9a05e))
	kind := pauseKind(seed)
	var procs []*proc
	var log []string
	t0 := time.Now()
	at := func() time.Duration { return time.Since(t0).Round(10 * time.Millisecond) }
	startOne := func(env ...string) *proc {
		id := string(rune('a' + len(procs)))
		p := startRun(t, j.yaml, id, env...)
		procs = append(procs, p)
		log = append(log, fmt.Sprintf("start %s at %v", id, at()))
		return p
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
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	pauseFor := func(lo, hi float64) time.Duration {
		return time.Duration((lo + r.Float64()*(hi-lo)) * float64(time.Second)).Round(10 * time.Millisecond)
	}
	brokerPause := func(d time.Duration) {
		log = append(log, fmt.Sprintf("broker stopped %v at %v", d, at()))
		b.pause(d)
	}
	var env []string
	commitN := 2 + r.IntN(5)
	if kind == "commit" {
		env = append(env, fmt.Sprintf("TIDEMARK_FAULT=prepared:%d:note", commitN))
	}
	a := startOne(env...)
	startOne()
	before := time.Duration((0.05 + r.Float64()*0.35) * float64(est))
	d := pauseFor(2, 15)
	switch kind {
	case "steady":
		time.Sleep(before)
		brokerPause(d)
	case "rebalance":
		time.Sleep(before)
		startOne()
		time.Sleep(time.Duration(r.IntN(150)) * time.Millisecond)
		brokerPause(d)
	case "commit":
		note := fmt.Sprintf("tidemark fault: prepared %d", commitN)
		deadline := time.Now().Add(est + 30*time.Second)
		for a.running() && !strings.Contains(a.stderr.String(), note) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !strings.Contains(a.stderr.String(), note) {
			log = append(log, fmt.Sprintf("a never reached commit %d", commitN))
			break
		}
		log = append(log, fmt.Sprintf("a at commit %d", commitN))
		brokerPause(d)
	case "expiry":
		time.Sleep(before)
		rs := running()
		if len(rs) == 0 {
			break
		}
		victim := rs[r.IntN(len(rs))]
		fd := pauseFor(2, 6)
		log = append(log, fmt.Sprintf("%s stopped %v at %v", victim.id, fd, at()))
		victim.freeze(fd)
		time.Sleep(time.Duration(r.IntN(500)) * time.Millisecond)
		brokerPause(pauseFor(2, 4))
	}
	if r.IntN(2) == 0 {
		time.Sleep(time.Duration(r.Float64() * 0.3 * float64(est)))
		if rs := running(); len(rs) > 1 {
			p := rs[r.IntN(len(rs))]
			p.term()
			log = append(log, fmt.Sprintf("stop %s at %v", p.id, at()))
		}
	}
	for _, p := range procs {
		if !p.wait(120 * time.Second) {
			t.Fatalf("%s: instance %s still running 120 s after the schedule; schedule %s\nits log:\n%s", j.name, p.id, strings.Join(log, ", "), p.stderr)
		}
	}
	log = append(log, fmt.Sprintf("group done at %v", at()))
	var ids []string
	for _, p := range procs {
		ids = append(ids, "tidemark-"+j.name+"-"+p.id)
	}
	b.openTransactions(t, ids, append(j.topics(), j.name+"-repartition")...)
	for _, p := range procs {
		if !p.ok() {
			t.Errorf("%s: instance %s: %v (schedule %s)\n%s", j.name, p.id, p.err, strings.Join(log, ", "), firstLines(p.stderr.String(), 60))
		}
	}
	return kind + ": " + strings.Join(log, ", ")
}

// TestBrokerPauses runs groups through broker pauses (pauses): 4 lanes in
// parallel, each with its own broker and input (Online Retail in even
// lanes, Nexmark bids in odd ones) and its own single-instance reference
// run, 5 seeds each (lane l runs seeds l, l+4, l+8, …; 50 each with
// -long: 200 seeds). A lane's time is mostly its broker's pauses, so the
// lanes share the machine's cores well. Each seed's committed outputs are
// checked as TestScaleOut's (checkRun): final rows equal the reference's
// and the batch recomputation's, money conserved exactly, versions only
// increase, nothing quarantined or late that should not be.
func TestBrokerPauses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs brokers and dozens of tidemark processes")
	}
	pgtest.DSN(t)
	const lanes = 4
	perLane := 5
	if *long {
		perLane = 50
	}
	only := os.Getenv("SCALETEST_SEED") // a development aid: one seed
	for lane := range lanes {
		t.Run(fmt.Sprintf("lane%d", lane), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			b := startBroker(t)
			var in *input
			if lane%2 == 0 {
				in = retailInput(t, b, dir, 8)
			} else {
				in = nexmarkInput(t, b, dir, 12000)
			}
			f := in.account(t)
			pdsn, pg := pgtest.Schema(t)
			refJob := newJob(t, b, in, dir, in.name+"_ref", false, pdsn, pg, "")
			start := time.Now()
			p := startRun(t, refJob.yaml, "")
			if !p.wait(120*time.Second) || !p.ok() {
				t.Fatalf("reference run: %v\n%s", p.err, p.stderr)
			}
			est := time.Since(start)
			ref := readOutputs(t, b, refJob)
			checkRun(t, refJob, f, ref, nil)
			if t.Failed() {
				return
			}
			for s := range perLane {
				seed := lane + lanes*s
				if only != "" && only != fmt.Sprint(seed) {
					continue
				}
				kind := pauseKind(uint64(seed))
				store := "dir"
				if seed/4%2 == 1 {
					store = "postgres"
				}
				t.Run(fmt.Sprintf("seed%d-%s-%s-%s", seed, in.name, kind, store), func(t *testing.T) {
					pdsn, pg := pgtest.Schema(t)
					st := ""
					if store == "postgres" {
						st = pgStore(t, pdsn, pg)
					}
					j := newJob(t, b, in, dir, fmt.Sprintf("%s_p%d", in.name, seed), true, pdsn, pg, st)
					log := pauses(t, b, j, uint64(seed), est)
					o := readOutputs(t, b, j)
					checkRun(t, j, f, o, ref)
					t.Logf("%s: %s; %d late", j.name, log, len(o.late))
				})
			}
		})
	}
}
