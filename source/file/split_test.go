package file

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// TestClaimDecodeEqualsNext: JSONL files read by Claim in order and
// decoded by four goroutines at once (each batch by whichever is free)
// give the same records as Next — rows, metas, decode errors, raw bytes,
// EventJSON — with the same batch cuts, errors and positions after each
// batch, over several files with blank lines, CRLF and CR-only line
// breaks, a byte order mark, lines that do not decode, an over-long line
// and a last line without a line break; for random batch sizes (run
// with -race).
func TestClaimDecodeEqualsNext(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 300
	files := map[string]string{}
	for f := range 3 {
		var b strings.Builder
		if f == 1 {
			b.WriteString("\xEF\xBB\xBF")
		}
		br := []string{"\n", "\r\n", "\r"}[f]
		for i := range 700 {
			switch {
			case i%97 == 5:
				b.WriteString("   " + br) // blank
			case i%89 == 7:
				fmt.Fprintf(&b, `{"id":"e%d","store":`+br, i) // broken
			case i%151 == 9:
				fmt.Fprintf(&b, `{"id":"e%d","store":"%s","ts":"2026-09-01T10:00:00Z"}`+br, i, strings.Repeat("x", 400)) // too long
			case i%61 == 3:
				fmt.Fprintf(&b, `{"id":"e%d","store":"s%d","ts":"not a time"}`+br, i, i%5)
			default:
				fmt.Fprintf(&b, `{"id":"e%d-%d","store":"store-%d","pad":"%s","ts":"2026-09-01T10:%02d:%02dZ"}`+br, f, i, i%7, strings.Repeat("p", i%31), i/60%60, i%60)
			}
		}
		if f == 2 {
			b.WriteString(`{"id":"last","store":"s","ts":"2026-09-01T11:00:00Z"}`) // no line break
		}
		files[fmt.Sprintf("part-%d.jsonl", f)] = b.String()
	}
	dir := writeFiles(t, files)
	open := func() *Source {
		s, err := New(Config{Spec: spec.Source{Path: dir + "/*.jsonl"}, Fields: testFields(t, "id:string", "store:string", "pad:string", "ts:timestamp"), EventTimeField: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	for seed := range uint64(4) {
		n, bad := claimDecodeEqualsNext(t, open, dir, seed)
		// 3 files × (700 lines − 8 blank) + the last line.
		if n != 3*(700-8)+1 {
			t.Fatalf("seed %d: %d records", seed, n)
		}
		if bad != 3*(8+5+11) { // broken, too long, bad times (one of the 12 is too long)
			t.Fatalf("seed %d: %d records with errors", seed, bad)
		}
	}
}

// TestSplits: a JSONL or CSV source splits its reads: partition_field,
// arrival_time_field and ordinal are Finish's, a replay is fed
// (Reorderer).
func TestSplits(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": `{"id":"1","store":"s","ts":"2026-09-01T10:00:00Z","at":"2026-09-01T10:00:00Z"}` + "\n", "a.csv": "id,store,ts,at,n\n1,s,2026-09-01T10:00:00Z,2026-09-01T10:00:00Z,1\n"})
	for _, tc := range []struct {
		sp    spec.Source
		split bool
	}{
		{spec.Source{Path: dir + "/a.jsonl"}, true},
		{spec.Source{Path: dir + "/a.csv"}, true},
		{spec.Source{Path: dir + "/a.csv", PartitionField: "store"}, true},
		{spec.Source{Path: dir + "/a.csv", Ordinal: &spec.Ordinal{Field: "n", Per: "store"}}, true},
		{spec.Source{Path: dir + "/a.csv", Replay: &spec.Replay{Seed: 1, Partitions: 2}}, true},
		{spec.Source{Path: dir + "/a.jsonl", PartitionField: "store"}, true},
		{spec.Source{Path: dir + "/a.jsonl", ArrivalTimeField: "at"}, true},
		{spec.Source{Path: dir + "/a.jsonl", Ordinal: &spec.Ordinal{Field: "n"}}, true},
		{spec.Source{Path: dir + "/a.jsonl", Replay: &spec.Replay{Seed: 1, Partitions: 2}}, true},
	} {
		s, err := New(Config{Spec: tc.sp, Fields: testFields(t, "id:string", "store:string", "ts:timestamp", "at:timestamp", "n:int"), EventTimeField: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		if s.Splits() != tc.split {
			t.Errorf("%+v: Splits %v, want %v", tc.sp, s.Splits(), tc.split)
		}
		if !tc.split {
			if _, err := s.Claim(context.Background(), &source.Batch{}, 10); err == nil {
				t.Errorf("%+v: Claim without splitting", tc.sp)
			}
		}
		s.Close()
	}
}

// claimDecodeEqualsNext reads two sources that open makes, one with Next
// and one by Claim in order with four goroutines decoding each batch
// (whichever is free) and Finish completing each, in claim order, a
// random number of claims behind (0 to 5, as the engine's router
// finishes a batch while the next ones are claimed and decoded), for
// random batch sizes from seed, and fails unless they give the same
// records — rows, metas, decode errors, raw bytes, EventJSON — with the
// same batch cuts and errors, and after each batch's Finish the same
// partitions and position (FinishedPosition of the ClaimPosition taken
// right after its claim). It returns the records and those with errors.
func claimDecodeEqualsNext(t *testing.T, open func() *Source, dir string, seed uint64) (n, bad int) {
	t.Helper()
	return claimDecodeEqualsNextFrom(t, open, dir, seed, nil)
}

// claimDecodeEqualsNextFrom is claimDecodeEqualsNext with both sources
// Seeked to pos first (nil: from the start).
func claimDecodeEqualsNextFrom(t *testing.T, open func() *Source, dir string, seed uint64, pos []byte) (n, bad int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	ref, split := open(), open()
	if pos != nil {
		for _, s := range []*Source{ref, split} {
			if err := s.Seek(context.Background(), pos); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !split.Splits() {
		t.Fatal("the source does not split")
	}
	type claimed struct {
		b        *source.Batch
		want     []rec
		wj       []string
		wantPos  []byte
		wantPart []string
		claimPos []byte
		done     chan struct{}
	}
	work := make(chan *claimed, 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				split.Decode(c.b)
				close(c.done)
			}
		}()
	}
	var batches, queue []*claimed
	finish := func() {
		c := queue[0]
		queue = queue[1:]
		<-c.done
		split.Finish(c.b)
		if got := split.Partitions(); !slices.Equal(got, c.wantPart) {
			t.Fatalf("seed %d: partitions %q after a finished batch, Next %q", seed, got, c.wantPart)
		}
		if !slices.Equal(split.FinishedPosition(c.claimPos), c.wantPos) {
			t.Fatalf("seed %d: positions differ after a finished batch", seed)
		}
	}
	ctx := context.Background()
	for {
		max := 1 + rng.IntN(300)
		var rb source.Batch
		rst, rerr := ref.Next(ctx, &rb, max)
		c := &claimed{b: &source.Batch{}, want: renderBatch(ref, &rb, dir), done: make(chan struct{}),
			wantPos: ref.Position(), wantPart: slices.Clone(ref.Partitions())}
		for j := range rb.Meta {
			c.wj = append(c.wj, string(ref.EventJSON(nil, &rb.Meta[j])))
		}
		sst, serr := split.Claim(ctx, c.b, max)
		if rst != sst || rerr != serr && !errors.Is(serr, rerr) {
			t.Fatalf("seed %d: Claim %v %v, Next %v %v", seed, sst, serr, rst, rerr)
		}
		c.claimPos = split.ClaimPosition()
		if c.b.Len() != rb.Len() {
			t.Fatalf("seed %d: claimed %d, Next %d", seed, c.b.Len(), rb.Len())
		}
		batches = append(batches, c)
		queue = append(queue, c)
		work <- c
		for lag := rng.IntN(6); len(queue) > lag; {
			finish()
		}
		if rerr == nil && rst == source.End {
			break
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
	}
	for len(queue) > 0 {
		finish()
	}
	close(work)
	wg.Wait()
	for _, c := range batches {
		diff(t, renderBatch(split, c.b, dir), c.want)
		for j := range c.b.Meta {
			if got := string(split.EventJSON(nil, &c.b.Meta[j])); got != c.wj[j] {
				t.Fatalf("EventJSON %s, want %s", got, c.wj[j])
			}
			if c.b.Meta[j].Err != nil {
				bad++
			}
		}
		n += c.b.Len()
	}
	if t.Failed() {
		t.FailNow()
	}
	return n, bad
}

// TestClaimDecodeCSVEqualsNext: CSV files read by Claim and decoded on
// four goroutines give what Next gives (claimDecodeEqualsNext), over
// files with different column orders, LF, CRLF and CR-only line breaks,
// a byte order mark, quoted fields with separators, doubled quotes and
// line breaks, a lone "\r" inside LF lines and at the end of one, an unterminated quote that
// is resynchronised, bare quotes, short records, bad numbers and times,
// invalid UTF-8, an over-long line, an empty file and a last line
// without a line break; for random batch sizes.
func TestClaimDecodeCSVEqualsNext(t *testing.T) {
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 300
	files := map[string]string{"part-3.csv": ""}
	for f := range 3 {
		var b strings.Builder
		br := []string{"\n", "\r\n", "\r"}[f]
		if f == 1 {
			b.WriteString("\xEF\xBB\xBF")
		}
		cols := []string{"id,store,n,ts", "ts,id,n,store", "store,ts,id,n"}[f]
		b.WriteString(cols + br)
		line := func(id, store, n, ts string) {
			v := map[string]string{"id": id, "store": store, "n": n, "ts": ts}
			var parts []string
			for _, c := range strings.Split(cols, ",") {
				parts = append(parts, v[c])
			}
			b.WriteString(strings.Join(parts, ",") + br)
		}
		for i := range 600 {
			ts := fmt.Sprintf("2026-09-01T10:%02d:%02dZ", i/60%60, i%60)
			id := fmt.Sprintf("e%d-%d", f, i)
			switch {
			case i%97 == 5:
				b.WriteString(br) // empty
			case i%89 == 7:
				line(id, `"a, ""quoted"" store"`, "1", ts)
			case i%83 == 11:
				line(id, `"two`+br+`lines, one field"`, "2", ts)
			case i%211 == 13:
				line(id, `"never closes`, "3", ts) // quarantined; the lines after it are read again
			case i%73 == 17:
				line(id, `ba"re`, "4", ts)
			case i%67 == 19:
				b.WriteString(id + ",only two" + br)
			case i%61 == 3:
				line(id, "s", "x9", "not a time")
			case i%59 == 23:
				line(id, "bad\xff", "5", ts)
			case i%151 == 29:
				line(id, strings.Repeat("x", 400), "6", ts) // too long
			case i%53 == 31 && f == 0:
				line(id, "lone\rcr", "7", ts)
			case i%47 == 37 && f == 0:
				line(id, `"quoted lone`+"\r"+`cr"`, "8", ts)
			case i%43 == 41 && f == 0:
				b.WriteString(id + `,"q",9,` + ts + "\r\r" + br) // the line's last byte is a "\r"
			default:
				line(id, fmt.Sprintf("store-%d", i%7), fmt.Sprint(i), ts)
			}
		}
		if f == 2 {
			b.WriteString(`last,2026-09-01T11:00:00Z,"x",9`) // no line break
		}
		files[fmt.Sprintf("part-%d.csv", f)] = b.String()
	}
	dir := writeFiles(t, files)
	open := func() *Source {
		s, err := New(Config{Spec: spec.Source{Path: dir + "/*.csv"}, Fields: testFields(t, "id:string", "store:string", "n:int", "ts:timestamp"), EventTimeField: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ref := drain(t, open(), 1000, dir)
	for seed := range uint64(4) {
		n, bad := claimDecodeEqualsNext(t, open, dir, seed)
		if n != len(ref) || n < 3*560 {
			t.Fatalf("seed %d: %d records, a one-pass read %d", seed, n, len(ref))
		}
		if bad < 3*20 {
			t.Fatalf("seed %d: only %d records with errors", seed, bad)
		}
	}
}

// TestClaimDecodeFinishEqualsNext: JSONL and CSV files whose metas and
// ordinals depend on decoded fields — partition_field (with null
// values, and records that do not decode or have no event time, which
// never create a partition), arrival_time_field (null in places: the
// previous record's), an ordinal per value restarting in each file (a
// broken line counted with the previous record's value) — read by Claim
// in order, decoded on four goroutines and finished in claim order
// behind the claims, give what Next gives (claimDecodeEqualsNext: rows,
// metas, partitions and positions after every batch), over several
// files, an empty one among them, for random batch sizes.
func TestClaimDecodeFinishEqualsNext(t *testing.T) {
	jsonl := map[string]string{"d-empty.jsonl": ""}
	csvs := map[string]string{"d-empty.csv": "inv,store,ts,at,n\n"}
	for f := range 4 {
		var j, c strings.Builder
		c.WriteString("inv,store,ts,at,n\n")
		for i := range 500 {
			inv := fmt.Sprintf("inv-%d", (i/3+f)%40) // repeats within and across files
			store := fmt.Sprintf(`"s%d"`, (i*7+f)%5)
			cstore := fmt.Sprintf("s%d", (i*7+f)%5)
			ts := fmt.Sprintf(`"2026-09-01T10:%02d:%02dZ"`, (i/60+f)%60, i%60)
			at := fmt.Sprintf(`"2026-09-01T10:%02d:%02dZ"`, (i/50+f)%60, (i+13)%60)
			switch {
			case i%41 == 3:
				store, cstore = "null", ""
			case i%37 == 5:
				at = "null"
			case i%31 == 7:
				ts = `"not a time"`
			case i%29 == 11:
				ts = "null"
			}
			if i%43 == 13 {
				fmt.Fprintf(&j, `{"inv":"%s","store":`+"\n", inv) // broken
				c.WriteString(inv + `,"never closes` + "\n" + inv + ",only,three\n")
				continue
			}
			fmt.Fprintf(&j, `{"inv":"%s","store":%s,"ts":%s,"at":%s}`+"\n", inv, store, ts, at)
			if at == "null" {
				at = ""
			}
			if ts == "null" {
				ts = ""
			}
			fmt.Fprintf(&c, "%s,%s,%s,%s,\n", inv, cstore, strings.Trim(ts, `"`), strings.Trim(at, `"`))
		}
		jsonl[fmt.Sprintf("d-%d.jsonl", f)] = j.String()
		csvs[fmt.Sprintf("d-%d.csv", f)] = c.String()
	}
	for _, tc := range []struct {
		ext   string
		files map[string]string
	}{{"jsonl", jsonl}, {"csv", csvs}} {
		dir := writeFiles(t, tc.files)
		for _, sp := range []spec.Source{
			{Path: dir + "/*." + tc.ext, PartitionField: "store", ArrivalTimeField: "at", Ordinal: &spec.Ordinal{Field: "n", Per: "inv"}},
			{Path: dir + "/*." + tc.ext, Ordinal: &spec.Ordinal{Field: "n"}},
			{Path: dir + "/*." + tc.ext, PartitionField: "inv"},
		} {
			open := func() *Source {
				s, err := New(Config{Spec: sp, Fields: testFields(t, "inv:string", "store:string", "ts:timestamp", "at:timestamp", "n:int"), EventTimeField: "ts"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			ref := open()
			want := drain(t, ref, 1000, dir)
			parts := len(ref.Partitions())
			for seed := range uint64(3) {
				n, bad := claimDecodeEqualsNext(t, open, dir, seed)
				if n != len(want) || n < 4*480 {
					t.Fatalf("%s %+v seed %d: %d records, a one-pass read %d", tc.ext, sp, seed, n, len(want))
				}
				if bad < 4*20 {
					t.Fatalf("%s seed %d: only %d records with errors", tc.ext, seed, bad)
				}
			}
			// From positions mid-way (a checkpoint's), in the second
			// and third files.
			for _, at := range []int{700, 1100} {
				s := open()
				var b source.Batch
				if _, err := s.Next(context.Background(), &b, at); err != nil || b.Len() != at {
					t.Fatalf("%d records, %v", b.Len(), err)
				}
				n, _ := claimDecodeEqualsNextFrom(t, open, dir, uint64(at), s.Position())
				if n != len(want)-at {
					t.Fatalf("%s %+v from %d: %d records, want %d", tc.ext, sp, at, n, len(want)-at)
				}
			}
			switch {
			case sp.PartitionField == "store" && parts != 6: // s0 … s4 and "" (null)
				t.Fatalf("%s: %d partitions", tc.ext, parts)
			case sp.PartitionField == "inv" && parts != 40:
				t.Fatalf("%s: %d partitions by inv", tc.ext, parts)
			}
		}
	}
}
