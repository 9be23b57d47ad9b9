package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// storeUnderTest opens a fresh, empty store and returns it with a function
// that opens another handle on the same storage (another instance of the
// group). The test closes every handle.
type storeUnderTest func(t *testing.T) (TaskStore, func() TaskStore)

// testTaskStore is the conformance suite every TaskStore passes: the
// contract of the interface's doc comments, checked on exact values.
func testTaskStore(t *testing.T, open storeUnderTest) {
	ctx := context.Background()
	t.Run("PutGetListDelete", func(t *testing.T) {
		s, _ := open(t)
		mustPut(t, s, "orders/0", "seg-2", []byte("second"))
		mustPut(t, s, "orders/0", "seg-1", []byte("first"))
		mustPut(t, s, "orders/0", "chk-1", []byte("manifest 1"))
		mustPut(t, s, "orders/1", "seg-1", []byte("other task"))
		checkList(t, s, "orders/0", "chk-1", "seg-1", "seg-2")
		checkList(t, s, "orders/1", "seg-1")
		checkList(t, s, "never-written")
		checkGet(t, s, "orders/0", "seg-1", 0, -1, "first")
		checkGet(t, s, "orders/0", "seg-2", 0, 6, "second")
		checkGet(t, s, "orders/1", "seg-1", 0, -1, "other task")
		if err := s.Delete(ctx, "orders/0", "seg-1", "no-such-object"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		checkList(t, s, "orders/0", "chk-1", "seg-2")
		checkList(t, s, "orders/1", "seg-1")
		if _, err := s.Get(ctx, "orders/0", "seg-1", 0, -1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Get of a deleted object: %v, want os.ErrNotExist", err)
		}
		for _, names := range [][]string{{"seg-1"}, nil, {"seg-1", "seg-1"}} {
			if err := s.Delete(ctx, "orders/0", names...); err != nil {
				t.Errorf("Delete(%q) again: %v", names, err)
			}
		}
		if err := s.Delete(ctx, "never-written", "x"); err != nil {
			t.Errorf("Delete in a task never written: %v", err)
		}
		// A deleted name can be written again (the engine never does; the
		// store does not forbid it).
		mustPut(t, s, "orders/0", "seg-1", []byte("again"))
		checkGet(t, s, "orders/0", "seg-1", 0, -1, "again")
		if err := s.Delete(ctx, "orders/0", "chk-1", "seg-1", "seg-2"); err != nil {
			t.Fatal(err)
		}
		checkList(t, s, "orders/0")
	})

	t.Run("Ranges", func(t *testing.T) {
		s, _ := open(t)
		data := pattern(1000, 1)
		mustPut(t, s, "t", "o", data)
		mustPut(t, s, "t", "empty", nil)
		for _, r := range [][2]int64{{0, -1}, {0, 1000}, {0, 0}, {1000, 0}, {1000, -1}, {10, -1}, {999, 1}, {999, -1}, {1, 998}, {500, 250}} {
			want := data[r[0]:]
			if r[1] >= 0 {
				want = data[r[0] : r[0]+r[1]]
			}
			checkGet(t, s, "t", "o", r[0], r[1], string(want))
		}
		checkGet(t, s, "t", "empty", 0, -1, "")
		checkGet(t, s, "t", "empty", 0, 0, "")
		for _, r := range [][2]int64{{995, 10}, {0, 1001}, {1001, -1}, {1001, 0}, {0, 1 << 40}, {1 << 40, 1}, {1 << 40, -1}, {1 << 62, 1 << 62}} {
			b, err := s.Get(ctx, "t", "o", r[0], r[1])
			if !errors.Is(err, io.ErrUnexpectedEOF) || b != nil {
				t.Errorf("Get(%d, %d) of 1000 bytes = %d bytes, %v; want io.ErrUnexpectedEOF", r[0], r[1], len(b), err)
			}
		}
		if _, err := s.Get(ctx, "t", "empty", 0, 1); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Get(0, 1) of an empty object: %v, want io.ErrUnexpectedEOF", err)
		}
		for _, r := range [][2]int64{{0, -1}, {5, 5}, {1 << 40, 1}} {
			if _, err := s.Get(ctx, "t", "missing", r[0], r[1]); !errors.Is(err, os.ErrNotExist) || errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Get(%d, %d) of a missing object: %v, want os.ErrNotExist", r[0], r[1], err)
			}
		}
		if _, err := s.Get(ctx, "other", "o", 0, -1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Get of the name in another task: %v, want os.ErrNotExist", err)
		}
		_, err := s.Get(ctx, "t", "o", -1, 2)
		if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "negative offset -1") {
			t.Errorf("Get(-1, 2): %v, want a negative-offset error", err)
		}
	})

	t.Run("PutExisting", func(t *testing.T) {
		s, other := open(t)
		mustPut(t, s, "t", "seg-7", []byte("generation 3"))
		for _, data := range [][]byte{[]byte("generation 4"), []byte("generation 3"), nil} {
			if err := s.Put(ctx, "t", "seg-7", data); !errors.Is(err, os.ErrExist) {
				t.Errorf("second Put of seg-7 (%q): %v, want os.ErrExist", data, err)
			} else if !strings.Contains(err.Error(), `"seg-7"`) || !strings.Contains(err.Error(), `"t"`) {
				t.Errorf("the error does not name the object and task: %v", err)
			}
		}
		s2 := other()
		if err := s2.Put(ctx, "t", "seg-7", []byte("from another instance")); !errors.Is(err, os.ErrExist) {
			t.Errorf("Put of seg-7 from another instance: %v, want os.ErrExist", err)
		}
		checkGet(t, s, "t", "seg-7", 0, -1, "generation 3")
		checkGet(t, s2, "t", "seg-7", 0, -1, "generation 3")
		checkList(t, s2, "t", "seg-7")
	})

	t.Run("Names", func(t *testing.T) {
		s, _ := open(t)
		names := []string{"a", "A", "b", "B", "..", ".", ".hidden", ".tmp-123", "%41", "%", "with/slash", "back\\slash",
			"a b", "Zürich", "주문-3", "x:y", "seg-00000000000000000001.tmseg", strings.Repeat("n", 80), "~", "-"}
		tasks := []string{"stage/orders/3", ".", "T"}
		for _, task := range tasks {
			for _, n := range names {
				mustPut(t, s, task, n, []byte(task+"|"+n))
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		for _, task := range tasks {
			checkList(t, s, task, want...)
			for _, n := range names {
				checkGet(t, s, task, n, 0, -1, task+"|"+n)
			}
		}
		for _, bad := range [][2]string{{"", "x"}, {"t", ""}} {
			if err := s.Put(ctx, bad[0], bad[1], []byte("x")); err == nil || !strings.Contains(err.Error(), "empty") {
				t.Errorf("Put(%q, %q): %v, want an empty-name error", bad[0], bad[1], err)
			}
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		s, other := open(t)
		handles := []TaskStore{s, other()}
		const workers, each, contested = 8, 25, 10
		var mu sync.Mutex
		won := map[string][]int{}
		var wg sync.WaitGroup
		errs := make(chan error, workers*(each+contested))
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := handles[w%len(handles)]
				for i := range each {
					name := fmt.Sprintf("w%d-%02d", w, i)
					if err := h.Put(ctx, "t", name, pattern(3000+w*100+i, uint64(w*1000+i))); err != nil {
						errs <- err
					}
					if i < contested {
						name := fmt.Sprintf("shared-%d", i)
						err := h.Put(ctx, "t", name, fmt.Appendf(nil, "worker %d", w))
						switch {
						case err == nil:
							mu.Lock()
							won[name] = append(won[name], w)
							mu.Unlock()
						case !errors.Is(err, os.ErrExist):
							errs <- err
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var want []string
		for w := range workers {
			for i := range each {
				name := fmt.Sprintf("w%d-%02d", w, i)
				want = append(want, name)
				checkGet(t, s, "t", name, 0, -1, string(pattern(3000+w*100+i, uint64(w*1000+i))))
			}
		}
		for i := range contested {
			name := fmt.Sprintf("shared-%d", i)
			want = append(want, name)
			if len(won[name]) != 1 {
				t.Errorf("%s: Put succeeded for workers %v, want exactly one", name, won[name])
				continue
			}
			checkGet(t, handles[1], "t", name, 0, -1, fmt.Sprintf("worker %d", won[name][0]))
		}
		slices.Sort(want)
		checkList(t, s, "t", want...)
	})

	t.Run("Large", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short")
		}
		s, other := open(t)
		const size = 40 << 20
		data := pattern(size, 42)
		mustPut(t, s, "big", "seg-1", data)
		s2 := other()
		got, err := s2.Get(ctx, "big", "seg-1", 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get of %d bytes: %d bytes (equal %v), %v", size, len(got), bytes.Equal(got, data), err)
		}
		rng := rand.New(rand.NewPCG(7, 7))
		ranges := [][2]int64{{0, 1}, {size - 1, 1}, {size - 4096, -1}, {1995, 4}, {1996, 2000}, {8 << 20, 1 << 20}, {size / 2, 0}}
		for range 20 {
			off := rng.Int64N(size)
			ranges = append(ranges, [2]int64{off, rng.Int64N(min(size-off, 1<<20) + 1)})
		}
		for _, r := range ranges {
			want := data[r[0]:]
			if r[1] >= 0 {
				want = data[r[0] : r[0]+r[1]]
			}
			got, err := s2.Get(ctx, "big", "seg-1", r[0], r[1])
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("Get(%d, %d): %d bytes, equal %v, %v", r[0], r[1], len(got), bytes.Equal(got, want), err)
			}
		}
		if _, err := s2.Get(ctx, "big", "seg-1", size-10, 11); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Get past the end of %d bytes: %v", size, err)
		}
	})

	t.Run("Canceled", func(t *testing.T) {
		s, _ := open(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(cctx, "t", "o", []byte("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Put with a canceled context: %v", err)
		}
		checkList(t, s, "t")
		if _, err := s.Get(cctx, "t", "o", 0, -1); !errors.Is(err, context.Canceled) {
			t.Errorf("Get with a canceled context: %v", err)
		}
	})
}

// pattern returns n pseudo-random bytes of seed.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func mustPut(t *testing.T, s TaskStore, task, name string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), task, name, data); err != nil {
		t.Fatalf("Put(%q, %q): %v", task, name, err)
	}
}

func checkGet(t *testing.T, s TaskStore, task, name string, off, n int64, want string) {
	t.Helper()
	got, err := s.Get(context.Background(), task, name, off, n)
	if err != nil {
		t.Errorf("Get(%q, %q, %d, %d): %v", task, name, off, n, err)
		return
	}
	if string(got) != want {
		t.Errorf("Get(%q, %q, %d, %d) = %d bytes %.40q, want %d bytes %.40q", task, name, off, n, len(got), got, len(want), want)
	}
}

func checkList(t *testing.T, s TaskStore, task string, want ...string) {
	t.Helper()
	got, err := s.List(context.Background(), task)
	if err != nil {
		t.Errorf("List(%q): %v", task, err)
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(%q) = %q, want %q", task, got, want)
	}
}
