package disk

import (
	"math"
	"runtime/debug"
)

// Budget is state.memory (run --memory) split among what the disk backend
// keeps in memory (docs/state.md, "Memory"). Without cgo pebble allocates
// its block cache and memtables on the Go heap, so all three parts count
// against the heap and against GOMEMLIMIT.
type Budget struct {
	// Total is state.memory in bytes.
	Total int64
	// Cache is the block cache shared by every store of the process, in
	// bytes (a quarter of Total).
	Cache int64
	// MemTable is the size of one memtable of one store in bytes: the
	// memtables take a quarter of Total, each store up to two at once.
	MemTable int64
	// Hot is each task's hot tier in bytes (half of Total, shared out
	// evenly among the tasks).
	Hot int64
}

// The budget's bounds: a memtable of at least 1 MiB (pebble flushes many
// small files below), a hot tier of at least 1 MiB per task.
const (
	minMemTable = 1 << 20
	minHot      = 1 << 20
)

// Split divides total bytes among the cache, the memtables of tasks
// stores and the tasks' hot tiers. A total too small for the minimums is
// raised to them (MinBudget).
func Split(total int64, tasks int) Budget {
	tasks = max(tasks, 1)
	total = max(total, MinBudget(tasks))
	return Budget{
		Total:    total,
		Cache:    total / 4,
		MemTable: max(total/4/int64(2*tasks), minMemTable),
		Hot:      max(total/2/int64(tasks), minHot),
	}
}

// MinBudget is the least state.memory for tasks tasks: room for each
// task's two minimal memtables and minimal hot tier, four times over.
func MinBudget(tasks int) int64 { return 4 * int64(max(tasks, 1)) * (2*minMemTable + minHot) }

// Overhead is the memory a run takes beside its state budget, in bytes:
// the rounds in flight and their packets, the sinks' buffers, the Go
// runtime. A run's peak RSS stays within Total + Overhead(Total)
// (docs/state.md, "Memory": 15 % of the budget and 64 MiB).
func Overhead(total int64) int64 { return total*15/100 + 64<<20 }

// MemoryLimit returns the Go memory limit (GOMEMLIMIT) a run with this
// budget should have: Total + Overhead, unless a lower limit is already
// set (GOMEMLIMIT in the environment, or debug.SetMemoryLimit), which is
// kept. The limit keeps the heap — pebble's cache and memtables among
// it — within the budget; it is a setting of the whole process, so the
// runner sets it (debug.SetMemoryLimit) only when its caller asks
// (engine.Options.SetMemoryLimit: the CLI does).
func (b Budget) MemoryLimit() int64 {
	want := b.Total + Overhead(b.Total)
	if cur := debug.SetMemoryLimit(-1); cur < want && cur != math.MaxInt64 {
		return cur
	}
	return want
}
