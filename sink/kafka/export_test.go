package kafka

// Test helpers for the external test package (engine_test.go), which
// imports the engine: the engine imports this package, so a test of both
// must live in package kafka_test.
var (
	Cluster          = cluster
	Consume          = consume
	CommittedRecords = committedRecords
	Must             = must
	Equal            = equal
)

// PreparedRows reports whether r has a prepared, non-empty transaction.
func PreparedRows(r *Results) bool { return r.p.prep != nil && !r.p.prep.empty }
