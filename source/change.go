package source

// A change stream's records (a database table's changes: source/pgcdc,
// or a Debezium topic read by format debezium_json) carry the metadata
// fields of package record (record.FieldOp, record.FieldLSN, …); the
// interfaces below are the runner's side of such a source.

// Transactional is implemented by sources whose input comes in upstream
// transactions that a checkpoint must not split (a database's change
// stream): the runner takes a checkpoint only after a batch that ends at
// a transaction boundary, so that a sink commit never holds part of an
// upstream transaction.
type Transactional interface {
	// AtBoundary reports whether the records Next delivered so far end
	// at a transaction boundary: Position then names a point between
	// transactions. Safe for concurrent use.
	AtBoundary() bool
}

// Acknowledger is implemented by sources that may release input once a
// checkpoint holding it has completed — a replication slot confirms the
// position, so the server may recycle the WAL before it.
type Acknowledger interface {
	// Acknowledge tells the source that the checkpoint whose Position was
	// pos completed: its manifest is written and every sink committed.
	// Called from the runner's writer, concurrently with Next.
	Acknowledge(pos []byte)
}
