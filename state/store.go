package state

import "encoding/binary"

// Backend names a pipeline's keyed-state backend (state.backend;
// docs/state.md): BackendMemory keeps every key group's state in the Go
// heap, as the operators' own structures; BackendDisk keeps what grows
// with the data in a Store on local disk, under a bounded hot tier in
// memory.
const (
	BackendMemory = "memory"
	BackendDisk   = "disk"
)

// Store is a task's keyed state on disk (state.backend: disk): an ordered
// key-value store whose keys start with KeyPrefix — the key group, then
// the node — so that a key group's state is one contiguous span of keys
// and a node's state within it another. The core reaches it only through
// this interface, and only in batches: an operator keeps a hot tier of
// recently used keys in memory, writes its changes with one Commit per
// flush (at a checkpoint, or when its tier is full) and reads the keys its
// tier misses with one Lookup per batch of records, so the per-record path
// does no store operation. The implementation (package state/disk, on
// pebble) does the IO; the runner opens it and hands it to the task.
//
// Errors name the store (its directory) and the operation that failed; a
// task that gets one must stop: what it wrote since the last checkpoint is
// discarded by the restore from that checkpoint. Not safe for concurrent
// use: one task's goroutine uses its store.
type Store interface {
	// NewBatch returns an empty batch of writes for Commit.
	NewBatch() Batch
	// Commit applies the batch's writes atomically and resets it for
	// reuse. Nothing is synced: durability is the checkpoint's
	// (docs/state.md, "Durability").
	Commit(b Batch) error
	// Lookup finds each of keys (ascending, no repeats) and calls
	// found(i, value) for those present, in key order; value is valid only
	// during the call. One pass of one iterator over the store.
	Lookup(keys [][]byte, found func(i int, value []byte)) error
	// Scan calls fn for every key in [lo, hi) in key order (key and value
	// valid only during the call) until fn returns false.
	Scan(lo, hi []byte, fn func(key, value []byte) bool) error
}

// Batch is a group of writes to a Store, applied by Store.Commit. The
// bytes are copied: the caller may reuse its buffers at once.
type Batch interface {
	// Set writes value under key.
	Set(key, value []byte)
	// Delete removes key.
	Delete(key []byte)
	// DeleteRange removes every key in [start, end): how expiry (a TTL, a
	// closed window) forgets a key group's expired span at once rather
	// than key by key.
	DeleteRange(start, end []byte)
	// Len returns the batch's size in bytes (its keys, values and
	// per-write overhead).
	Len() int
	// Count returns the number of writes in the batch.
	Count() int
}

// PrefixLen is the length of KeyPrefix: 2 bytes of key group, 2 of node.
const PrefixLen = 4

// KeyPrefix appends the prefix of every key of node's state in key group
// kg: the key group, then the node, each big-endian in 2 bytes, so that
// keys sort by key group first (a key group is one span: a restore at
// another parallelism takes whole spans) and by node within it. kg <
// 32768 (spec.MaxKeyGroups); node < 65536.
func KeyPrefix(dst []byte, kg, node int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(kg))
	return binary.BigEndian.AppendUint16(dst, uint16(node))
}

// GroupSpan returns the span [lo, hi) of the keys of key groups [from,
// to) (to ≤ 65535).
func GroupSpan(from, to int) (lo, hi []byte) {
	return binary.BigEndian.AppendUint16(nil, uint16(from)), binary.BigEndian.AppendUint16(nil, uint16(to))
}

// KeyGroupOf returns the key group of a key written under KeyPrefix, and
// false for a key shorter than 2 bytes.
func KeyGroupOf(key []byte) (int, bool) {
	if len(key) < 2 {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(key)), true
}
