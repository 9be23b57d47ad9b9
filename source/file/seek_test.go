package file

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

// TestSeekResumes: a source that seeks to the position another reached
// after k records delivers exactly the rest, for every k, with replay
// (stragglers, redeliveries, conflicts, partitions) and ordinals.
func TestSeekResumes(t *testing.T) {
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf(`{"id":"e%d","inv":"i%d","ts":"2026-09-01T10:%02d:%02dZ","amount":%d}`, i, i/7, i/60, i%60, i))
	}
	lines[17] = `{"id":` // a broken line
	dir := writeFiles(t, map[string]string{"a.jsonl": strings.Join(lines[:150], "\n"), "b.jsonl": strings.Join(lines[150:], "\n")})
	cfg := func() Config {
		return Config{
			Spec: spec.Source{Type: "file", Path: dir, Format: "jsonl", Ordinal: &spec.Ordinal{Field: "n", Per: "inv"},
				Replay: &spec.Replay{Seed: 5, Delay: spec.Duration(2e9), StragglerFraction: 0.2, MaxDelay: spec.Duration(60e9),
					RedeliverFraction: 0.1, ConflictFraction: 0.05, ConflictField: "amount", Partitions: 3, PartitionBy: "inv"}},
			Fields:         testFields(t, "id:string", "inv:string", "ts:timestamp", "amount:int", "n:int"),
			EventTimeField: "ts",
		}
	}
	open := func() *Source {
		s, err := New(cfg())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	all := drain(t, open(), 7, dir)
	if len(all) < 300 {
		t.Fatalf("%d records", len(all))
	}
	for _, k := range []int{0, 1, 6, 7, 100, 151, len(all) - 1, len(all)} {
		b := open()
		head := drainN(t, b, k, dir)
		pos := b.Position()
		c := open()
		if err := c.Seek(context.Background(), pos); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		rest := drain(t, c, 13, dir)
		if !slices.Equal(append(head, rest...), all) {
			t.Fatalf("k=%d: head+rest differs from one pass", k)
		}
	}
	// A position beyond the input: the input changed.
	b := open()
	drainN(t, b, len(all), dir)
	short := writeFiles(t, map[string]string{"a.jsonl": strings.Join(lines[:10], "\n")})
	c2 := cfg()
	c2.Spec.Path = short
	s, err := New(c2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Seek(context.Background(), b.Position()); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("seek past the end: %v", err)
	}
}

// drainN reads exactly n records (in batches of at most 5).
func drainN(t *testing.T, s *Source, n int, dir string) []rec {
	t.Helper()
	var out []rec
	for len(out) < n {
		var b sourceBatch
		st, err := s.Next(context.Background(), &b.Batch, min(5, n-len(out)))
		for j := range b.Meta {
			out = append(out, rec{Row: render(s.schema, &b.Rows[j]), Meta: renderMeta(&b.Meta[j], dir)})
		}
		if err != nil || st == source.End {
			break
		}
	}
	return out
}

type sourceBatch struct{ source.Batch }

// resumeFiles writes a directory of three files of one format, with the
// things that make positions hard: blank lines, broken records, CRLF and
// CR-only line breaks, a quoted CSV field over two lines, a CSV quote
// that does not close (resynchronised), a BOM; and returns the
// directory and the number of records.
func resumeFiles(t *testing.T, csv bool) string {
	files := map[string]string{}
	for f := range 3 {
		var b strings.Builder
		nl := []string{"\n", "\r\n", "\r"}[f]
		if f == 1 {
			b.WriteString("\xEF\xBB\xBF")
		}
		if csv {
			b.WriteString("id,shop,inv,ts,at,amount" + nl)
		}
		for i := range 40 {
			n := f*40 + i
			ts := fmt.Sprintf("2026-09-01T10:%02d:%02dZ", n/60, n%60)
			at := fmt.Sprintf("2026-09-01T10:%02d:%02dZ", (n+5)/60, (n+5)%60)
			shop := fmt.Sprintf("s%d", n%4)
			inv := fmt.Sprintf("i%d", n/3)
			switch {
			case csv && i == 7:
				fmt.Fprintf(&b, "e%d,\"%s\",\"%s\nline\",%s,%s,%d%s", n, shop, inv, ts, at, n, nl)
			case csv && i == 20:
				fmt.Fprintf(&b, "e%d,\"%s,%s,%s,%s,%d%s", n, shop, inv, ts, at, n, nl) // unterminated quote
			case csv:
				fmt.Fprintf(&b, "e%d,%s,%s,%s,%s,%d%s", n, shop, inv, ts, at, n, nl)
			case i == 11:
				b.WriteString(`{"id":` + nl) // broken
			default:
				fmt.Fprintf(&b, `{"id":"e%d","shop":"%s","inv":"%s","ts":"%s","at":"%s","amount":%d}%s`, n, shop, inv, ts, at, n, nl)
			}
			if i == 25 {
				b.WriteString(nl + nl) // blank lines
			}
		}
		ext := "jsonl"
		if csv {
			ext = "csv"
		}
		files[fmt.Sprintf("%d.%s", f, ext)] = b.String()
	}
	return writeFiles(t, files)
}

// TestSeekByOffset: a source stopped after k records and resumed with
// Seek delivers exactly the records (rows, positions, raw bytes,
// partitions, arrival times, errors) an uninterrupted one delivers after
// its first k, for JSONL and CSV, with and without partition_field,
// arrival_time_field, ordinal and replay, for k mid-file, at file
// boundaries, at the start and at the end. The resumed source does not
// read what lies before the position: the files before it are
// overwritten with garbage before it resumes.
func TestSeekByOffset(t *testing.T) {
	configs := []struct {
		name string
		sp   spec.Source
	}{
		{"plain", spec.Source{}},
		{"partitions and arrival times", spec.Source{PartitionField: "shop", ArrivalTimeField: "at"}},
		{"ordinal", spec.Source{Ordinal: &spec.Ordinal{Field: "n", Per: "inv"}}},
		{"ordinal without per, partitions", spec.Source{Ordinal: &spec.Ordinal{Field: "n"}, PartitionField: "shop"}},
		{"replay", spec.Source{Ordinal: &spec.Ordinal{Field: "n", Per: "inv"}, Replay: &spec.Replay{Seed: 9, Delay: spec.Duration(3e9),
			StragglerFraction: 0.2, MaxDelay: spec.Duration(50e9), RedeliverFraction: 0.15, ConflictFraction: 0.1,
			ConflictField: "amount", Partitions: 3, PartitionBy: "shop"}}},
		{"replay without partition_by", spec.Source{Replay: &spec.Replay{Seed: 2, Delay: spec.Duration(10e9), RedeliverFraction: 0.3, Partitions: 2}}},
	}
	for _, format := range []string{"jsonl", "csv"} {
		for _, c := range configs {
			t.Run(format+" "+c.name, func(t *testing.T) {
				dir := resumeFiles(t, format == "csv")
				open := func(dir string) *Source {
					sp := c.sp
					sp.Type, sp.Path, sp.Format = "file", dir, format
					fields := []string{"id:string", "shop:string", "inv:string", "ts:timestamp", "at:timestamp", "amount:int"}
					if sp.Ordinal != nil {
						fields = append(fields, "n:int")
					}
					s, err := New(Config{Spec: sp, Fields: testFields(t, fields...), EventTimeField: "ts"})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					return s
				}
				whole := open(dir)
				all := drain(t, whole, 7, dir)
				parts := whole.Partitions()
				// The first record of each file, and the record before it.
				ks := []int{0, 1, 5, len(all) - 1, len(all)}
				for i := 1; i < len(all); i++ {
					if fileOf(all[i].Meta) != fileOf(all[i-1].Meta) {
						ks = append(ks, i-1, i, i+1)
					}
				}
				ks = append(ks, len(all)/2, len(all)/3)
				for _, k := range ks {
					if k > len(all) {
						continue
					}
					// Copy the files, so that those before the position can
					// be spoilt.
					copyDir := t.TempDir()
					copyFiles(t, dir, copyDir)
					a := open(copyDir)
					head := drainN(t, a, k, copyDir)
					pos := a.Position()
					if k > 0 {
						spoilBefore(t, copyDir, head[len(head)-1])
					}
					b := open(copyDir)
					if err := b.Seek(context.Background(), pos); err != nil {
						t.Fatalf("k=%d: %v", k, err)
					}
					rest := drain(t, b, 5, copyDir)
					if len(head) != k {
						t.Fatalf("k=%d: read %d records", k, len(head))
					}
					got := append(slices.Clone(head), rest...)
					if !slices.Equal(got, all) {
						for i := range max(len(got), len(all)) {
							if i >= len(got) || i >= len(all) || got[i] != all[i] {
								t.Fatalf("k=%d: record %d of %d/%d differs\n got %v\nwant %v", k, i, len(got), len(all), at(got, i), at(all, i))
							}
						}
					}
					if p := b.Partitions(); !slices.Equal(p, parts) {
						t.Fatalf("k=%d: partitions %q, want %q", k, p, parts)
					}
				}
			})
		}
	}
}

func at(recs []rec, i int) rec {
	if i < len(recs) {
		return recs[i]
	}
	return rec{}
}

// fileOf returns the file name in a rendered Meta.
func fileOf(meta string) string {
	f := strings.Fields(meta)[2]
	return f[:strings.IndexByte(f, ':')]
}

func copyFiles(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// spoilBefore overwrites every file that sorts before the file of the
// last record read (last) with garbage of the same size, after its first
// line (a CSV header, which New reads): a resumed source that read them
// again would deliver other records.
func spoilBefore(t *testing.T, dir string, last rec) {
	t.Helper()
	cur := fileOf(last.Meta)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() >= cur {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		first := strings.IndexAny(string(b), "\r\n") + 1
		for i := first; i < len(b); i++ {
			b[i] = '#'
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSeekRefusesChangedInput: a position names what it read, and Seek
// refuses an input that changed since, naming the file and the sizes,
// instead of reading other data from the offset.
func TestSeekRefusesChangedInput(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `{"id":"e%d","ts":"2026-09-01T10:00:%02dZ"}`+"\n", i, i%60)
	}
	data := b.String()
	open := func(path string) *Source {
		s, err := New(Config{Spec: spec.Source{Path: path, Format: "jsonl"}, Fields: testFields(t, "id:string", "ts:timestamp")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	positionAfter := func(path string, k int) []byte {
		s := open(path)
		drainN(t, s, k, filepath.Dir(path))
		return s.Position()
	}
	cut := lineAt(data, "\n", 61) // after 60 records
	t.Run("shorter", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data})
		pos := positionAfter(dir+"/a.jsonl", 60)
		os.WriteFile(dir+"/a.jsonl", []byte(data[:cut-10]), 0o644)
		err := open(dir+"/a.jsonl").Seek(context.Background(), pos)
		want := fmt.Sprintf("file source: %s/a.jsonl changed since the checkpoint: it holds %d bytes now; the checkpoint had read %d bytes of it (of %d then)", dir, cut-10, cut, len(data))
		if err == nil || err.Error() != want {
			t.Fatalf("Seek: %v\nwant %s", err, want)
		}
	})
	t.Run("other bytes", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data})
		pos := positionAfter(dir+"/a.jsonl", 60)
		os.WriteFile(dir+"/a.jsonl", []byte(strings.ReplaceAll(data, `"e5`, `"x5`)), 0o644)
		err := open(dir+"/a.jsonl").Seek(context.Background(), pos)
		want := fmt.Sprintf("file source: %s/a.jsonl changed since the checkpoint: the %d bytes before offset %d differ from those read (it holds %d bytes now, %d then)", dir, min(cut, 4096), cut, len(data), len(data))
		if err == nil || err.Error() != want {
			t.Fatalf("Seek: %v\nwant %s", err, want)
		}
	})
	t.Run("a file added before", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"b.jsonl": data})
		pos := positionAfter(dir, 60)
		os.WriteFile(dir+"/a.jsonl", []byte(data), 0o644)
		err := open(dir).Seek(context.Background(), pos)
		want := fmt.Sprintf("file source: the input changed since the checkpoint: file 1 of the input was %s/b.jsonl, it is now %s/a.jsonl", dir, dir)
		if err == nil || err.Error() != want {
			t.Fatalf("Seek: %v\nwant %s", err, want)
		}
	})
	t.Run("a file added after is read", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data})
		pos := positionAfter(dir, 60)
		os.WriteFile(dir+"/b.jsonl", []byte(data[:cut]), 0o644)
		s := open(dir)
		if err := s.Seek(context.Background(), pos); err != nil {
			t.Fatal(err)
		}
		if got := drain(t, s, 10, dir); len(got) != 100 || !strings.Contains(got[0].Meta, "a.jsonl:61@") || !strings.Contains(got[40].Meta, "b.jsonl:1@0") {
			t.Fatalf("%d records: %v … %v", len(got), got[0], got[len(got)-1])
		}
	})
	t.Run("a file that grew is read on", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data[:cut]})
		pos := positionAfter(dir+"/a.jsonl", 60)
		os.WriteFile(dir+"/a.jsonl", []byte(data), 0o644)
		s := open(dir + "/a.jsonl")
		if err := s.Seek(context.Background(), pos); err != nil {
			t.Fatal(err)
		}
		if got := drain(t, s, 10, dir); len(got) != 40 || !strings.Contains(got[0].Meta, "a.jsonl:61@") {
			t.Fatalf("%d records, first %v", len(got), got)
		}
	})
	t.Run("an old position is read by reading again", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data})
		want := drain(t, open(dir+"/a.jsonl"), 100, dir)[37:]
		s := open(dir + "/a.jsonl")
		if err := s.Seek(context.Background(), []byte{1, 37}); err != nil { // version 1, 37 records
			t.Fatal(err)
		}
		diff(t, drain(t, s, 10, dir), want)
	})
	t.Run("a position of another configuration", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"a.jsonl": data})
		pos := positionAfter(dir+"/a.jsonl", 60)
		s, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl", Replay: &spec.Replay{Seed: 1}}, Fields: testFields(t, "id:string", "ts:timestamp"), EventTimeField: "ts"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Seek(context.Background(), pos); err == nil || !strings.Contains(err.Error(), "replay") {
			t.Fatalf("Seek: %v", err)
		}
		if err := open(dir+"/a.jsonl").Seek(context.Background(), pos[:len(pos)-3]); err == nil {
			t.Fatal("a truncated position was accepted")
		}
		if err := open(dir+"/a.jsonl").Seek(context.Background(), []byte{4}); err == nil || !strings.Contains(err.Error(), "section version 4 is not supported") {
			t.Fatalf("Seek of version 4: %v", err)
		}
	})
}

// TestSeekNearTheEndOfABigFile: resuming near the end of a file of 2M
// lines opens it at the offset instead of reading 2M lines again; the
// rest equals an uninterrupted read. The time is printed, not asserted.
func TestSeekNearTheEndOfABigFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 2M-line file")
	}
	const lines = 2_000_000
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range lines {
		fmt.Fprintf(w, `{"id":"e%d","store":"s%d","ts":"2026-09-01T10:%02d:%02dZ"}`+"\n", i, i%50, i/60%60, i%60)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg := Config{Spec: spec.Source{Path: path, PartitionField: "store", Ordinal: &spec.Ordinal{Field: "n", Per: "store"}},
		Fields: testFields(t, "id:string", "store:string", "ts:timestamp", "n:int"), EventTimeField: "ts"}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var batch source.Batch
	for n := 0; n < lines-1000; {
		batch.Reset()
		if _, err := a.Next(context.Background(), &batch, min(1024, lines-1000-n)); err != nil {
			t.Fatal(err)
		}
		n += batch.Len()
	}
	pos := a.Position()
	want := drain(t, a, 100, "")
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Now()
	if err := b.Seek(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	got := drain(t, b, 100, "")
	t.Logf("Seek to record %d of %d: %v (position %d bytes)", lines-1000, lines, took, len(pos))
	if len(got) != 1000 || !strings.Contains(got[0].Row, fmt.Sprintf(`id="e%d"`, lines-1000)) {
		t.Fatalf("%d records after the seek, first %v", len(got), got[0])
	}
	diff(t, got, want)
}
