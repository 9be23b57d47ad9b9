package disk

import (
	"fmt"

	"github.com/tidemark/tidemark/state"
)

// Shard is a store holding the key groups [Lo, Hi) of a task.
type Shard struct {
	Store  *Store
	Lo, Hi int
}

// Set is a task's stores when its key groups came from several: a task
// restored at another parallelism keeps one store per old task whose key
// groups it took (docs/state.md, "Restore"), each opened from that task's
// files. Set routes every key to the store of its key group. The shards
// are disjoint and sorted by key group.
type Set struct{ shards []Shard }

var _ state.Store = (*Set)(nil)

// NewSet returns the set of shards (sorted by Lo, disjoint).
func NewSet(shards []Shard) *Set { return &Set{shards: shards} }

// Shards returns the set's shards.
func (s *Set) Shards() []Shard { return s.shards }

// shardOf returns the index of the shard holding key group kg, or −1.
func (s *Set) shardOf(kg int) int {
	for i, sh := range s.shards {
		if kg >= sh.Lo && kg < sh.Hi {
			return i
		}
	}
	return -1
}

// setBatch is a batch per shard.
type setBatch struct {
	s   *Set
	bs  []state.Batch
	bad error
}

func (b *setBatch) of(key []byte) state.Batch {
	kg, _ := state.KeyGroupOf(key)
	i := b.s.shardOf(kg)
	if i < 0 {
		if b.bad == nil {
			b.bad = fmt.Errorf("a key of key group %d, which none of the task's stores holds", kg)
		}
		return nil
	}
	return b.bs[i]
}

func (b *setBatch) Set(key, value []byte) {
	if x := b.of(key); x != nil {
		x.Set(key, value)
	}
}

func (b *setBatch) Delete(key []byte) {
	if x := b.of(key); x != nil {
		x.Delete(key)
	}
}

// DeleteRange splits the range at the shards' bounds.
func (b *setBatch) DeleteRange(start, end []byte) {
	for i, sh := range b.s.shards {
		lo, hi := state.GroupSpan(sh.Lo, sh.Hi)
		a, z := start, end
		if string(a) < string(lo) {
			a = lo
		}
		if string(z) > string(hi) {
			z = hi
		}
		if string(a) < string(z) {
			b.bs[i].DeleteRange(a, z)
		}
	}
}

func (b *setBatch) Len() int {
	n := 0
	for _, x := range b.bs {
		n += x.Len()
	}
	return n
}

func (b *setBatch) Count() int {
	n := 0
	for _, x := range b.bs {
		n += x.Count()
	}
	return n
}

// NewBatch returns a batch over every shard.
func (s *Set) NewBatch() state.Batch {
	b := &setBatch{s: s}
	for _, sh := range s.shards {
		b.bs = append(b.bs, sh.Store.NewBatch())
	}
	return b
}

// Commit commits each shard's part (atomic per shard; a failure stops
// the run, whose restore discards every shard's writes since the
// checkpoint).
func (s *Set) Commit(sb state.Batch) error {
	b, ok := sb.(*setBatch)
	if !ok || b.s != s {
		return fmt.Errorf("state stores: commit of a batch of another store (%T)", sb)
	}
	if err := b.bad; err != nil {
		b.bad = nil
		return fmt.Errorf("state stores: %w", err)
	}
	for i, x := range b.bs {
		if err := s.shards[i].Store.Commit(x); err != nil {
			return err
		}
	}
	return nil
}

// Lookup splits the sorted keys into the runs of each shard.
func (s *Set) Lookup(keys [][]byte, found func(i int, value []byte)) error {
	for k := 0; k < len(keys); {
		kg, _ := state.KeyGroupOf(keys[k])
		si := s.shardOf(kg)
		end := k + 1
		for end < len(keys) {
			g, _ := state.KeyGroupOf(keys[end])
			if s.shardOf(g) != si {
				break
			}
			end++
		}
		if si >= 0 {
			base := k
			if err := s.shards[si].Store.Lookup(keys[k:end], func(i int, v []byte) { found(base+i, v) }); err != nil {
				return err
			}
		}
		k = end
	}
	return nil
}

// Scan scans each shard's part of [lo, hi) in key order.
func (s *Set) Scan(lo, hi []byte, fn func(key, value []byte) bool) error {
	stop := false
	for _, sh := range s.shards {
		slo, shi := state.GroupSpan(sh.Lo, sh.Hi)
		a, z := lo, hi
		if string(a) < string(slo) {
			a = slo
		}
		if z == nil || string(z) > string(shi) {
			z = shi
		}
		if string(a) >= string(z) {
			continue
		}
		if err := sh.Store.Scan(a, z, func(k, v []byte) bool {
			if !fn(k, v) {
				stop = true
				return false
			}
			return true
		}); err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	return nil
}
