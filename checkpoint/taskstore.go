package checkpoint

import "context"

// TaskStore keeps the checkpoints of a pipeline that runs as a group of
// instances sharing a Kafka consumer group (docs/scale-out.md): for every
// task — a partition of an input topic or of the pipeline's repartition
// topic — its manifests and segments, as named objects, where every
// instance of the group can read them, so that the instance a partition
// moves to restores its state.
//
// A task is written by one instance at a time, its partition's owner; a
// former owner that has not noticed yet (paused, partitioned from the
// broker) may still write for a while, so object names carry the
// writer's group generation and are never reused: an object, once
// written, never changes. Which objects are current is decided outside
// the store — by the checkpoint id committed with the partition's offset
// in the Kafka transaction — so the store needs no transactions across
// objects.
//
// Implementations: DirTaskStore (a directory, local for one machine or
// shared by every instance), PGTaskStore (PostgreSQL tables). An object
// store (S3) fits the same interface. Methods are safe for concurrent
// use.
type TaskStore interface {
	// Put stores data as object name of task, durably and atomically:
	// once it returns the object survives a crash, and a crash during the
	// call leaves either no object or the whole one. Writing a name that
	// exists is an error wrapping os.ErrExist.
	Put(ctx context.Context, task, name string, data []byte) error
	// Get returns n bytes of object name of task from byte offset off
	// (n < 0: to the end). Errors wrap os.ErrNotExist for a missing
	// object and io.ErrUnexpectedEOF for one shorter than off+n.
	Get(ctx context.Context, task, name string, off, n int64) ([]byte, error)
	// List returns the names of task's objects, sorted.
	List(ctx context.Context, task string) ([]string, error)
	// Delete removes objects of task; a missing one is not an error.
	Delete(ctx context.Context, task string, names ...string) error
	// Close releases the store's connections.
	Close() error
}
