// Package task is the pure half of the engine (docs/parallelism.md): a
// Task holds the keyed state of a contiguous range of a pipeline's key
// groups — dedup ids, order_by versions, window state — and steps it
// forward through the records and watermarks the runner hands it. It
// starts no goroutine, does no IO and reads no clock (the etcd raft
// RawNode shape); package engine's runner owns the goroutines, the source,
// the sinks and the checkpoints, and runs one Task per goroutine.
//
// # The graph
//
// A plan becomes a graph of keyed nodes (Graph): the dedup step (keyed by
// event id), the order_by step (keyed by entity), and one node per
// windowed stage (keyed by its group key). Every node's state is split by
// key group, and every task holds every node's state for its own key
// groups. A record moves from node to node as an Item; a node hands the
// items for the next node to the task owning their key group, in a Packet
// per (round, node, destination task).
//
// # Steps, rounds and order
//
// The runner numbers its events — a record, a watermark advance, an early
// firing — with increasing steps, and hands them to the tasks in rounds
// (one source batch each). A watermark advance or an early firing is a
// Marker every task receives. Each node of each task processes its items
// and the markers in the order a single task would: by step, and within a
// step by the item's order key (its Tail): an item produced while an
// upstream node processed item x at position j comes at x's key + j; a row
// produced by a firing comes at (stage depth, EmitOrder, index). A node
// merges the packets of all senders by (step, tail) and lets a marker act
// after every item of its step. So for each key a task sees exactly the
// records and watermarks, in the order, that one task holding every key
// group would see, and emits the same rows: only the interleaving of
// different keys across tasks differs.
package task
