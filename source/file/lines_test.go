package file

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/source"
	"github.com/tidemark/tidemark/spec"
)

func TestLongLines(t *testing.T) {
	big := strings.Repeat("x", 300<<10) // longer than the read buffer
	data := `{"s":"a"}` + "\n" + `{"s":"` + big + `"}` + "\n" + `{"s":"b"}` + "\n"
	dir := writeFiles(t, map[string]string{"a.jsonl": data})
	open := func() *Source {
		s, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl"}, Fields: testFields(t, "s:string")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("within the limit", func(t *testing.T) {
		s := open()
		defer s.Close()
		got := drain(t, s, 10, dir)
		if len(got) != 3 || got[1].Row != `s="`+big+`"` || got[2].Meta != fmt.Sprintf(`p=0/ at=none a.jsonl:3@%d raw="{\"s\":\"b\"}"`, 10+len(big)+9) {
			t.Fatalf("unexpected records: %.200v", got)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		defer func(n int) { maxLineBytes = n }(maxLineBytes)
		maxLineBytes = 100 << 10
		s := open()
		defer s.Close()
		got := drain(t, s, 10, dir)
		raw := `{\"s\":\"` + big[:TruncatedRawBytes-6]
		want := []rec{
			{`s="a"`, `p=0/ at=none a.jsonl:1@0 raw="{\"s\":\"a\"}"`},
			{`s=null`, fmt.Sprintf(`p=0/ at=none a.jsonl:2@10 raw="%s" err=decode line of about %d bytes is longer than the limit of %d bytes`, raw, len(big)+9, 100<<10)},
			{`s="b"`, fmt.Sprintf(`p=0/ at=none a.jsonl:3@%d raw="{\"s\":\"b\"}"`, 10+len(big)+9)},
		}
		diff(t, got, want)
	})

	t.Run("short line over the limit", func(t *testing.T) {
		defer func(n int) { maxLineBytes = n }(maxLineBytes)
		maxLineBytes = 5
		s := open()
		defer s.Close()
		got := drain(t, s, 10, dir)
		if len(got) != 3 || !strings.Contains(got[0].Meta, `raw="{\"s\":\"a\"}" err=decode line of about 10 bytes`) {
			t.Fatalf("unexpected first record: %v", got[0])
		}
	})
}

// TestBigBatch checks that strings and raw bytes of every record of a
// batch stay intact while the source's buffers grow during the batch.
func TestBigBatch(t *testing.T) {
	const n = 20000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"event-%d","pad":"%s"}`+"\n", i, strings.Repeat("p", i%40))
	}
	dir := writeFiles(t, map[string]string{"a.jsonl": b.String()})
	f := testFields(t, "id:string", "pad:string")
	s, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl"}, Fields: f})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var batch source.Batch
	for round := range 2 {
		batch.Reset()
		if _, err := s.Next(context.Background(), &batch, n/2); err != nil {
			t.Fatal(err)
		}
		for i := range batch.Meta {
			k := round*n/2 + i
			r := &batch.Rows[i]
			if r.S[0] != fmt.Sprintf("event-%d", k) || r.S[1] != strings.Repeat("p", k%40) && !(k%40 == 0 && r.IsNull(1)) {
				t.Fatalf("record %d: row %q %q", k, r.S[0], r.S[1])
			}
			if want := fmt.Sprintf(`{"id":"event-%d","pad":"%s"}`, k, strings.Repeat("p", k%40)); string(batch.Meta[i].Raw) != want {
				t.Fatalf("record %d: raw %q", k, batch.Meta[i].Raw)
			}
		}
	}
}

func TestCloseStopsNext(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.jsonl": "{}\n{}\n"})
	s, err := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl"}, Fields: testFields(t, "s:string")})
	if err != nil {
		t.Fatal(err)
	}
	var b source.Batch
	if _, err := s.Next(context.Background(), &b, 1); err != nil || b.Len() != 1 {
		t.Fatalf("Next: %v, %d records", err, b.Len())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Next(context.Background(), &b, 1); err != ErrClosed {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2, _ := New(Config{Spec: spec.Source{Path: dir + "/a.jsonl"}, Fields: testFields(t, "s:string")})
	defer s2.Close()
	if _, err := s2.Next(ctx, &b, 1); err != context.Canceled {
		t.Fatalf("Next with a cancelled context: %v", err)
	}
}
