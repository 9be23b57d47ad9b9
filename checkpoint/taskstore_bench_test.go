package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/internal/pgtest"
)

// BenchmarkTaskStore measures what a checkpoint store takes, for the
// capacity model of docs/scale-out.md: Put of 1 MiB and 32 MiB objects
// (a segment), Get of the whole object, and ranged Gets of 64 KiB
// sections at seeded offsets (a restore reads the sections of its key
// groups). MB/s is bytes written or read per second; ns/op is one call.
// Put objects are deleted every 8 puts with the timer stopped, so the
// table or directory stays small.
//
//	go test -run '^$' -bench TaskStore -benchtime 20x -count 5 ./checkpoint
func BenchmarkTaskStore(b *testing.B) {
	for _, st := range []struct {
		name string
		open func(b *testing.B) TaskStore
	}{
		{"dir", func(b *testing.B) TaskStore {
			s, err := OpenDirTaskStore(filepath.Join(b.TempDir(), "ck"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) TaskStore {
			base, schema := pgtest.Schema(b)
			s, err := OpenPGTaskStore(context.Background(), withParams(base, "search_path", schema), "bench")
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	} {
		for _, size := range []int{1 << 20, 32 << 20} {
			data := pattern(size, 1)
			label := fmt.Sprintf("%s/%dMiB", st.name, size>>20)
			b.Run(label+"/put", func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				ctx := context.Background()
				b.SetBytes(int64(size))
				var names []string
				for i := 0; b.Loop(); i++ {
					name := fmt.Sprintf("seg-%d", i)
					if err := s.Put(ctx, "t", name, data); err != nil {
						b.Fatal(err)
					}
					if names = append(names, name); len(names) == 8 {
						b.StopTimer()
						if err := s.Delete(ctx, "t", names...); err != nil {
							b.Fatal(err)
						}
						names = names[:0]
						b.StartTimer()
					}
				}
			})
			b.Run(label+"/get", func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				ctx := context.Background()
				if err := s.Put(ctx, "t", "seg", data); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for b.Loop() {
					if got, err := s.Get(ctx, "t", "seg", 0, -1); err != nil || len(got) != size {
						b.Fatal(len(got), err)
					}
				}
			})
			b.Run(label+"/get-64KiB", func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				ctx := context.Background()
				if err := s.Put(ctx, "t", "seg", data); err != nil {
					b.Fatal(err)
				}
				const n = 64 << 10
				rng := rand.New(rand.NewPCG(1, 1))
				b.SetBytes(n)
				for b.Loop() {
					off := rng.Int64N(int64(size - n))
					if got, err := s.Get(ctx, "t", "seg", off, n); err != nil || len(got) != n {
						b.Fatal(len(got), err)
					}
				}
			})
		}
	}
}
