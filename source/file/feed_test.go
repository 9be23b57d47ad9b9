package file

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// feedEqualsNext reads two sources that open makes (with replay), both
// Seeked to pos first unless it is nil: one with Next, and one by Claim
// in order — four goroutines decoding the claimed batches, claims
// running up to five batches ahead — and Deliver, fed the decoded
// batches in claim order as it asks for them, for random batch and
// claim sizes from seed. It fails unless every batch holds the same
// deliveries (rows, metas, raw bytes, EventJSON) with the same status,
// and the partitions are the same; the positions after every batch
// cannot be compared byte for byte (a fed replay's names the claimed
// batch and the records it took of it), so after some batches both
// positions are read on by fresh sources (Next) and must give the same
// rest. It returns the deliveries and the positions after some
// batches, taken from the fed source.
func feedEqualsNext(t *testing.T, open func() *Source, dir string, seed uint64, pos []byte) (n int, fedPos [][]byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 17))
	ref, fed := open(), open()
	ctx := context.Background()
	if pos != nil {
		for _, s := range []*Source{ref, fed} {
			if err := s.Seek(ctx, pos); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !fed.Splits() {
		t.Fatal("the source does not split")
	}
	type claimed struct {
		b    *source.Batch
		st   source.Status
		done chan struct{}
	}
	work := make(chan *claimed, 16)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				fed.Decode(c.b)
				close(c.done)
			}
		}()
	}
	defer func() {
		close(work)
		wg.Wait()
	}()
	var queue []*claimed
	ended := false
	claim := func() {
		c := &claimed{b: &source.Batch{}, done: make(chan struct{})}
		st, err := fed.Claim(ctx, c.b, 1+rng.IntN(200))
		if err != nil {
			t.Fatal(err)
		}
		c.st = st
		ended = st == source.End
		queue = append(queue, c)
		work <- c
	}
	rest := func(s *Source, p []byte) []rec {
		c := open()
		if err := c.Seek(ctx, p); err != nil {
			t.Fatal(err)
		}
		return drain(t, c, 500, dir)
	}
	for batch := 0; ; batch++ {
		max := 1 + rng.IntN(300)
		var rb, fb source.Batch
		rst, err := ref.Next(ctx, &rb, max)
		if err != nil {
			t.Fatal(err)
		}
		var fst source.Status
		for {
			st, hungry := fed.Deliver(&fb, max-fb.Len())
			if !hungry {
				fst = st
				break
			}
			for lag := rng.IntN(6); !ended && len(queue) <= lag; {
				claim()
			}
			if len(queue) == 0 {
				t.Fatalf("seed %d: Deliver asks for input after the input's end", seed)
			}
			c := queue[0]
			queue = queue[1:]
			<-c.done
			fed.Finish(c.b)
			fed.Feed(c.b, c.st == source.End)
		}
		if fst != rst {
			t.Fatalf("seed %d, batch %d: Deliver %v, Next %v", seed, batch, fst, rst)
		}
		diff(t, renderBatch(fed, &fb, dir), renderBatch(ref, &rb, dir))
		for j := range fb.Meta {
			if g, w := string(fed.EventJSON(nil, &fb.Meta[j])), string(ref.EventJSON(nil, &rb.Meta[j])); g != w {
				t.Fatalf("EventJSON %s, want %s", g, w)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		if !slices.Equal(fed.Partitions(), ref.Partitions()) {
			t.Fatalf("seed %d: partitions %q, Next %q", seed, fed.Partitions(), ref.Partitions())
		}
		n += fb.Len()
		if batch%5 == 2 || rst == source.End {
			fp := fed.Position()
			diff(t, rest(fed, fp), rest(ref, ref.Position()))
			if t.Failed() {
				t.Fatalf("seed %d, batch %d: the rest after the fed source's position differs", seed, batch)
			}
			fedPos = append(fedPos, fp)
		}
		if rst == source.End {
			return n, fedPos
		}
	}
}

// TestFeedDeliverEqualsNext: a replay read by Claim, decoded on four
// goroutines and fed to Deliver in claim order (source.Reorderer) gives
// Next's deliveries — delays, stragglers, redeliveries, conflicting
// copies (CSV records encoded again with their own file's header, its
// columns in another order than the file read ahead), records that do
// not decode held at the horizon, an ordinal per value restarting in
// each file — batch by batch, over several JSONL or CSV files with an
// empty one, for random batch and claim sizes; from the start, from
// the fed source's own positions (version 3: the claimed batch and the
// records taken of it), read on by Next and by Deliver alike, and from
// Next's positions.
func TestFeedDeliverEqualsNext(t *testing.T) {
	jsonl := map[string]string{"d-empty.jsonl": ""}
	csvs := map[string]string{"d-empty.csv": "inv,store,ts,q\n"}
	for f := range 4 {
		var j, c strings.Builder
		cols := []string{"inv,store,ts,q", "q,ts,store,inv", "store,inv,q,ts", "inv,store,ts,q"}[f]
		c.WriteString(cols + "\n")
		for i := range 400 {
			inv := fmt.Sprintf("inv-%d", (i/3+f)%40)
			store := fmt.Sprintf("s%d", (i*7+f)%5)
			ts := fmt.Sprintf("2026-09-01T%02d:%02d:%02dZ", 10+f, (i/7)%60, (i*13)%60)
			q := fmt.Sprint(i % 9)
			switch {
			case i%31 == 7:
				ts = "not a time"
			case i%29 == 11:
				q = "x"
			}
			if i%43 == 13 {
				fmt.Fprintf(&j, `{"inv":"%s","store":`+"\n", inv) // broken
				c.WriteString(inv + `,"never closes` + "\n")
				continue
			}
			fmt.Fprintf(&j, `{"inv":"%s","store":"%s","ts":"%s","q":%q}`+"\n", inv, store, ts, q)
			v := map[string]string{"inv": inv, "store": store, "ts": ts, "q": q}
			var parts []string
			for _, col := range strings.Split(cols, ",") {
				parts = append(parts, v[col])
			}
			c.WriteString(strings.Join(parts, ",") + "\n")
		}
		jsonl[fmt.Sprintf("d-%d.jsonl", f)] = j.String()
		csvs[fmt.Sprintf("d-%d.csv", f)] = c.String()
	}
	replay := &spec.Replay{Seed: 5, Delay: spec.Duration(20e9), StragglerFraction: 0.1, MaxDelay: spec.Duration(600e9),
		RedeliverFraction: 0.05, ConflictFraction: 0.05, ConflictField: "store", Partitions: 3, PartitionBy: "inv"}
	for _, tc := range []struct {
		ext   string
		files map[string]string
	}{{"jsonl", jsonl}, {"csv", csvs}} {
		dir := writeFiles(t, tc.files)
		open := func() *Source {
			s, err := New(Config{Spec: spec.Source{Path: dir + "/*." + tc.ext, Replay: replay, Ordinal: &spec.Ordinal{Field: "n", Per: "inv"}},
				Fields: testFields(t, "inv:string", "store:string", "ts:timestamp", "q:string", "n:int"), EventTimeField: "ts"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		want := drain(t, open(), 1000, dir)
		redelivered := 0
		for _, r := range want {
			if strings.Contains(r.Meta, "redelivery") {
				redelivered++
			}
		}
		if len(want) < 4*380 || redelivered < 80 {
			t.Fatalf("%s: %d deliveries, %d redelivered", tc.ext, len(want), redelivered)
		}
		for seed := range uint64(3) {
			n, fedPos := feedEqualsNext(t, open, dir, seed, nil)
			if n != len(want) {
				t.Fatalf("%s seed %d: %d deliveries, a one-pass read %d", tc.ext, seed, n, len(want))
			}
			if seed == 0 {
				// From the fed source's positions, fed again.
				for _, p := range fedPos[:min(3, len(fedPos))] {
					feedEqualsNext(t, open, dir, seed+10, p)
				}
			}
		}
		// From Next's positions.
		s := open()
		var b source.Batch
		if _, err := s.Next(context.Background(), &b, 700); err != nil || b.Len() != 700 {
			t.Fatalf("%d records, %v", b.Len(), err)
		}
		feedEqualsNext(t, open, dir, 20, s.Position())
	}
}
